// The processes servers.mjs starts die with what started them: a test that times out or fails,
// a describe's hooks, the file, the process ended by a signal (fixtures/outlived.mjs has the
// tests, run here as scripts). Before, a timed-out test's process held its file open until the
// process ended by itself, and outlived a run that was stopped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { PYTHON, skip } from "./servers.mjs";

const OUTLIVED = fileURLToPath(new URL("fixtures/outlived.mjs", import.meta.url));
const BOUND_MS = 60_000; // for a loaded machine; each wait ends as soon as what it waits for is done

/** Whether process `pid` is gone (or a zombie: dead, not yet reaped). */
function gone(pid) {
  try {
    return /^State:\s+Z/m.test(readFileSync(`/proc/${pid}/status`, "utf8"));
  } catch {
    return true;
  }
}

/** Until every pid is gone, in turns of 20 ms, at most BOUND_MS: the pids still running. */
async function reaped(pids) {
  for (let waited = 0; waited < BOUND_MS && pids.some((pid) => !gone(pid)); waited += 20) {
    await new Promise((resolve) => { setTimeout(resolve, 20); });
  }
  return pids.filter((pid) => !gone(pid));
}

/** Run outlived.mjs MODE; `onLine(line, child)` for each line it prints. Resolves with its pids and how it ended. */
function outlived(t, mode, onLine = () => {}) {
  // (without the test runner's NODE_TEST_CONTEXT: it reports as a file of its own, in TAP)
  const { NODE_TEST_CONTEXT, ...env } = process.env;
  const child = spawn(process.execPath, [OUTLIVED, mode], { env: { ...env, RSTREAMS_PYTHON: PYTHON },
    stdio: ["ignore", "pipe", "inherit"] });
  const pids = [];
  t.after(() => {
    child.kill("SIGKILL");
    for (const pid of pids) if (!gone(pid)) process.kill(pid, "SIGKILL"); // (only if the test failed)
  });
  let partial = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    const lines = (partial + chunk).split("\n");
    partial = lines.pop();
    for (const line of lines) {
      if (line.startsWith("pid ")) pids.push(Number(line.slice(4)));
      onLine(line, child);
    }
  });
  return new Promise((resolve) => {
    const bound = setTimeout(() => resolve({ pids, how: "still running" }), BOUND_MS);
    child.once("exit", (code, signal) => {
      clearTimeout(bound);
      resolve({ pids, how: signal ?? code });
    });
  });
}

test("a test's process dies when the test times out, a hook's when its suite is over; then the file ends", { skip, timeout: 3 * BOUND_MS },
  async (t) => {
    const { pids, how } = await outlived(t, "timeout");
    assert.equal(how, 1); // its tests failed; it did not wait for its processes
    assert.equal(pids.length, 2, `pids ${pids}`); // the second printed alone: the first was gone by then
    assert.deepEqual(await reaped(pids), []);
  });

test("a process ended by SIGTERM kills the processes it started first", { skip, timeout: 3 * BOUND_MS }, async (t) => {
  const { pids, how } = await outlived(t, "hang", (line, child) => { if (line === "waiting") child.kill("SIGTERM"); });
  assert.equal(how, "SIGTERM");
  assert.equal(pids.length, 1, `pids ${pids}`);
  assert.deepEqual(await reaped(pids), []);
});
