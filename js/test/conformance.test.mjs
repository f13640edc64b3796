// The client conformance suite (python -m rstreams.conformance.clients, docs/conformance.md)
// judges this package's client through scripts/conformance-adapter.mjs, over TCP and WebSocket.
import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { python, skip } from "./servers.mjs";

const ADAPTER = fileURLToPath(new URL("../scripts/conformance-adapter.mjs", import.meta.url));

for (const transport of ["tcp", "ws"]) {
  test(`every client conformance case passes over ${transport}`, { skip, timeout: 120_000 }, async () => {
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
