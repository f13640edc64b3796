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
// fail it there; these limits of wall time are only the last guard against a run that hangs as a
// whole, and so are generous: an idle run takes 5 to 15 s, a loaded machine many times that.
const CLIENT_SUITE_MS = 600_000;
const SERVER_SUITE_MS = 900_000;

for (const transport of ["tcp", "ws"]) {
  test(`every client conformance case passes over ${transport}`, { skip, timeout: CLIENT_SUITE_MS }, async () => {
    const run = await python(["-m", "rstreams.conformance.clients", "--transport", transport,
      "--client", `${process.execPath} ${ADAPTER} {url} {publisher} {script}`]);
    const result = /^(\d+) of (\d+) client cases passed$/m.exec(run.stdout);
    assert.ok(result !== null, run.stdout + run.stderr);
    assert.equal(result[1], result[2], run.stdout);
    assert.ok(Number(result[2]) >= 13, run.stdout);
    assert.equal(run.code, 0, run.stdout);
  });
}

test("the adapter refuses a bad script with status 2, naming the step", async () => {
  const { spawnSync } = await import("node:child_process");
  const done = spawnSync(process.execPath, [ADAPTER, "tcp://127.0.0.1:1", "x", "r0 q"], { encoding: "utf8" });
  assert.equal(done.status, 2);
  assert.match(done.stderr, /bad script step "r0": use rN, wN, c, t or q/);
});

// The extension cases (ex.*) run against a server with a 1 s idle timeout, which ex.idle_timeout
// and ex.pings_keep_alive check; every other case against the default (60 s): a loaded driver may
// read nothing for a second (taking a 15 MiB element, lm.element_15mib), and a 1 s idle timeout
// rightly takes a peer that reads nothing for that long for a dead one (§14.2).
const SUITES = [["ex.*", { idleTimeout: 1 }, ["--idle-timeout", "1"]], ["[!e]*", {}, []]];

for (const listenOn of ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/rsio"]) {
  test(`the server suite passes against listen() over ${listenOn.split(":")[0]}`, { skip, timeout: SERVER_SUITE_MS }, async () => {
    let [passed, failed, stdout] = [0, 0, ""];
    for (const [pattern, idle, idleArgs] of SUITES) {
      const server = await listen(listenOn, {
        publishers: conformancePublishers(), ...idle, onerror: () => {}, resume: true,
        authRequired: false, authenticate: (credentials) => (credentials === TOKEN ? "driver" : null),
      });
      try {
        const run = await python(["-m", "rstreams.conformance", server.url, "-k", pattern, ...idleArgs, "--token", TOKEN, "-v"]);
        const total = /^total\s+(\d+)\s+(\d+)\s+(\d+)$/m.exec(run.stdout);
        assert.ok(total !== null, run.stdout.slice(-3000) + run.stderr.slice(-2000));
        passed += Number(total[1]);
        failed += Number(total[2]);
        stdout += run.stdout;
      } finally {
        await server.close();
      }
    }
    assert.equal(failed, 0, stdout.split("\n").filter((line) => line.startsWith("FAIL")).join("\n"));
    assert.ok(passed >= 219, stdout.slice(-1500));
    // every extension case runs (resume, content types, metadata, error codes, messages, channels);
    // only auth *required* skips (the suite's probe has no token; test/gate.test.mjs covers it)
    const skipped = stdout.split("\n").filter((line) => line.startsWith("skip")).map((line) => line.split(/\s+/)[1]);
    assert.deepEqual(skipped, ["ex.auth_required"]);
    for (const area of ["rs", "lm", "ex.ch", "ex.ct", "ex.md", "ex.msg", "ex.codes", "ex.idle_timeout", "ex.pings_keep_alive"]) {
      assert.match(stdout, new RegExp(`^PASS\\s+${area.replace(".", "\\.")}([._\\s])`, "m"), `no ${area} case passed`);
    }
  });
}
