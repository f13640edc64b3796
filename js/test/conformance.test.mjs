// rstreams' conformance suites (docs/conformance.md) judge this package: the client suite
// (python -m rstreams.conformance.clients) through scripts/conformance-adapter.mjs, and the
// server suite (python -m rstreams.conformance URL) against listen() offering the conformance
// publishers (test/fixtures/conformance.mjs); over TCP and WebSocket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { listen } from "../src/node.js";
import { conformancePublishers } from "./fixtures/conformance.mjs";
import { python, skip } from "./servers.mjs";

const TOKEN = "tk-conformance";
const ADAPTER = fileURLToPath(new URL("../scripts/conformance-adapter.mjs", import.meta.url));

// The suites bound each of their cases themselves (the client suite by the own time of itself and
// the adapter: rstreams.conformance._own_time), so a loaded machine that serves a run late does not
// fail it there; this limit of wall time is only the last guard against a run that hangs as a
// whole, and so is generous: an idle run takes 5 to 15 s, a loaded machine many times that.
const SUITES_MS = 900_000;

/** The client suite over `transport`: every case passes. */
async function clientSuite(transport) {
  const run = await python(["-m", "rstreams.conformance.clients", "--transport", transport,
    "--client", `${process.execPath} ${ADAPTER} {url} {publisher} {script}`]);
  const result = /^(\d+) of (\d+) client cases passed$/m.exec(run.stdout);
  assert.ok(result !== null, run.stdout + run.stderr);
  assert.equal(result[1], result[2], run.stdout);
  assert.ok(Number(result[2]) >= 13, run.stdout);
  assert.equal(run.code, 0, run.stdout);
}

// The extension cases (ex.*) run against a server with a 1 s idle timeout, which ex.idle_timeout
// and ex.pings_keep_alive check; every other case against the default (60 s): a loaded driver may
// read nothing for a second (taking a 15 MiB element, lm.element_15mib), and a 1 s idle timeout
// rightly takes a peer that reads nothing for that long for a dead one (§14.2).
const PARTS = [["ex.*", { idleTimeout: 1 }, ["--idle-timeout", "1"]], ["[!e]*", {}, []]];

/** The server suite against listen(listenOn), each part against a server of its own: every case passes. */
async function serverSuite(listenOn) {
  const runs = [];
  for (const [pattern, idle, idleArgs] of PARTS) {
    const server = await listen(listenOn, {
      publishers: conformancePublishers(), ...idle, onerror: () => {}, resume: true,
      authRequired: false, authenticate: (credentials) => (credentials === TOKEN ? "driver" : null),
    });
    try {
      runs.push(await python(["-m", "rstreams.conformance", server.url, "-k", pattern, ...idleArgs, "--token", TOKEN, "-v"]));
    } finally {
      await server.close();
    }
  }
  let [passed, failed] = [0, 0];
  for (const run of runs) {
    const total = /^total\s+(\d+)\s+(\d+)\s+(\d+)$/m.exec(run.stdout);
    assert.ok(total !== null, run.stdout.slice(-3000) + run.stderr.slice(-2000));
    passed += Number(total[1]);
    failed += Number(total[2]);
  }
  const stdout = runs.map((run) => run.stdout).join("");
  assert.equal(failed, 0, stdout.split("\n").filter((line) => line.startsWith("FAIL")).join("\n"));
  assert.ok(passed >= 219, stdout.slice(-1500));
  // every extension case runs (resume, content types, metadata, error codes, messages, channels);
  // only auth *required* skips (the suite's probe has no token; test/gate.test.mjs covers it)
  const skipped = stdout.split("\n").filter((line) => line.startsWith("skip")).map((line) => line.split(/\s+/)[1]);
  assert.deepEqual(skipped, ["ex.auth_required"]);
  for (const area of ["rs", "lm", "ex.ch", "ex.ct", "ex.md", "ex.msg", "ex.codes", "ex.idle_timeout", "ex.pings_keep_alive"]) {
    assert.match(stdout, new RegExp(`^PASS\\s+${area.replace(".", "\\.")}([._\\s])`, "m"), `no ${area} case passed`);
  }
}

// The client suites run at once, and beside them the server suites one after the other: a client
// suite is mostly waiting on its cases' timers (a client's lingering close after its error
// goodbye, 2 s) in processes of its own, while the servers the server suite judges share this
// process's event loop, one suite at a time, as when each run went alone. One test, so that
// servers.mjs ends each process with it.
test("the client suite passes over tcp and ws, the server suite against listen() over tcp and ws", { skip, timeout: SUITES_MS }, async () => {
  const overTcp = serverSuite("tcp://127.0.0.1:0");
  const runs = {
    "the client suite over tcp": clientSuite("tcp"),
    "the client suite over ws": clientSuite("ws"),
    "the server suite against listen() over tcp": overTcp,
    "the server suite against listen() over ws": overTcp.catch(() => {}).then(() => serverSuite("ws://127.0.0.1:0/rsio")),
  };
  const settled = await Promise.allSettled(Object.values(runs));
  const failures = Object.keys(runs).flatMap((name, i) => (settled[i].status === "rejected" ? [`${name}: ${settled[i].reason}`] : []));
  assert.deepEqual(failures, []);
});

test("the adapter refuses a bad script with status 2, naming the step", async () => {
  const { spawnSync } = await import("node:child_process");
  const done = spawnSync(process.execPath, [ADAPTER, "tcp://127.0.0.1:1", "x", "r0 q"], { encoding: "utf8" });
  assert.equal(done.status, 2);
  assert.match(done.stderr, /bad script step "r0": use rN, wN, c, t or q/);
});
