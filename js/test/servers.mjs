// Real `rstreams serve` processes for the end-to-end tests. The interpreter comes from
// RSTREAMS_PYTHON (scripts/test.sh passes .venv-test's), else the repository's .venv-test;
// without either the end-to-end tests skip, saying why. The repository's src/ goes first on
// PYTHONPATH, so the server is the checkout's own code.
//
// Every process started here dies with what started it, whatever way that ends (a test that
// fails or times out does not wait for its processes): one started inside a test is killed
// once the test is over, one started in a hook (pythonPeer's) or outside any test once the
// file's tests are, and all that are left when the process exits, or is ended by SIGINT,
// SIGTERM or SIGHUP. Without that a timed-out test's child would hold the test run open, or
// outlive it.
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { after, afterEach, before, beforeEach } from "node:test";
import { fileURLToPath } from "node:url";
import { connect } from "../src/node.js";

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
const fromEnv = process.env.RSTREAMS_PYTHON;
if (fromEnv !== undefined && fromEnv !== "" && !existsSync(fromEnv)) {
  throw new Error(`RSTREAMS_PYTHON=${fromEnv} does not exist: set it to the python of a virtual environment `
    + "with rstreams installed (scripts/test.sh creates .venv-test), or unset it");
}
const fallback = `${REPO}.venv-test/bin/python`;
export const PYTHON = fromEnv || (existsSync(fallback) ? fallback : null);
export const skip = PYTHON === null
  ? "no Python to run rstreams serve: set RSTREAMS_PYTHON (scripts/test.sh does) or create .venv-test" : false;
export const FIXTURE = fileURLToPath(new URL("fixtures/publishers.py", import.meta.url));

const env = () => ({ ...process.env, PYTHONPATH: [`${REPO}src`, process.env.PYTHONPATH].filter(Boolean).join(":") });

const alive = new Set(); // every child started here that has not exited
const owners = [new Set()]; // the file's children, then those of each test running (innermost last)

/** `python ...args` with the checkout's rstreams, killed with what started it (see above). */
function start(args, stdio) {
  const child = spawn(PYTHON, args, { env: env(), stdio });
  const owner = owners.at(-1);
  alive.add(child);
  owner.add(child);
  child.once("exit", () => {
    alive.delete(child);
    owner.delete(child);
  });
  return child;
}

/** Whether `child` has exited (killed by a signal, its exitCode stays null). */
const exited = (child) => child.exitCode !== null || child.signalCode !== null;

/** Kill `children` (SIGKILL); resolves once all have exited. */
function killAll(children) {
  return Promise.all([...children].map((child) => {
    if (exited(child)) return null;
    const gone = new Promise((resolve) => child.once("exit", resolve));
    child.kill("SIGKILL");
    return gone;
  }));
}

/** The pids of the children started here that are running (for the tests of this file). */
export const running = () => [...alive].map((child) => child.pid);

beforeEach(() => { owners.push(new Set()); });
afterEach(() => killAll(owners.pop()));
after(() => killAll(alive));
process.on("exit", () => { for (const child of alive) child.kill("SIGKILL"); });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, function ended() {
    for (const child of alive) child.kill("SIGKILL");
    if (process.listenerCount(signal) > 1) return; // (node --test's own handler exits)
    process.off(signal, ended);
    process.kill(process.pid, signal); // ended as the signal ends a process
  });
}

/** Stop `child` with SIGTERM; resolves with its exit status once it has exited. */
function stop(child) {
  if (exited(child)) return Promise.resolve(child.exitCode);
  const gone = new Promise((resolve) => child.once("exit", resolve));
  child.kill("SIGTERM");
  return gone;
}

/**
 * Start `rstreams serve URL ...args`; resolves with {url, stop()} once it prints where it serves.
 * `input`: lines for its standard input (serve URL NAME reads them as the replay log).
 */
export function serve(url, args = [], input = null) {
  const child = start(["-m", "rstreams.cli", "serve", url, ...args], ["pipe", "pipe", "pipe"]);
  if (input !== null) child.stdin.end(input);
  let stderr = "";
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  return new Promise((resolve, reject) => {
    let stdout = "";
    const onData = (chunk) => {
      stdout += chunk;
      const found = / on ((?:tcp|tls|unix|ws|wss):\/\/\S+)/.exec(stdout);
      if (found === null) return;
      child.stdout.off("data", onData);
      resolve({
        url: found[1],
        stop: () => stop(child),
      });
    };
    child.stdout.on("data", onData);
    child.once("exit", (code) => reject(new Error(`rstreams serve ${url} exited with ${code} before serving: ${stderr}`)));
  });
}

/** Run `python -m rstreams.cli ...args`; resolves with {code, stdout, stderr}. */
export function cli(args) {
  return python(["-m", "rstreams.cli", ...args]);
}

/** Run `python ...args` with the checkout's rstreams; resolves with {code, stdout, stderr}. */
export function python(args) {
  const child = start(args, ["ignore", "pipe", "pipe"]);
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => { stdout += chunk; });
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, stdout, stderr })));
}

/**
 * Run `python ...args` with the checkout's rstreams, calling `online(line)` for each line it
 * prints; resolves with {code, lines, stderr} once it exits.
 */
export function pythonLines(args, online = () => {}) {
  const child = start(args, ["ignore", "pipe", "pipe"]);
  const lines = [];
  let partial = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    partial += chunk;
    const complete = partial.split("\n");
    partial = complete.pop();
    for (const line of complete) {
      lines.push(line);
      online(line);
    }
  });
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  return new Promise((resolve) => child.once("close", (code) => resolve({ code, lines, stderr })));
}

/**
 * Start a Python script (`source`, run with -c) that prints "serving on URL" once it
 * serves; resolves with {url, stop()}.
 */
export function pythonServer(source) {
  const child = start(["-c", source], ["ignore", "pipe", "inherit"]);
  return new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += chunk;
      const found = / on ((?:tcp|ws):\/\/\S+)/.exec(out);
      if (found) {
        resolve({
          url: found[1],
          stop: () => stop(child),
        });
      }
    });
    child.once("exit", (code) => reject(new Error(`the Python server exited with ${code} before serving`)));
  });
}

/**
 * For a describe block: before its tests, a Python server (the script `source`, which prints
 * "serving on URL", or `rstreams serve tcp://127.0.0.1:0 ...args`) and a JavaScript connection
 * to it, ready; after them, both closed. Returns {conn, server}, filled in by the hook.
 */
export function pythonPeer({ source = null, args = [] } = {}) {
  const peer = { conn: null, server: null };
  before(async () => {
    peer.server = source === null ? await serve("tcp://127.0.0.1:0", args) : await pythonServer(source);
    peer.conn = await connect(peer.server.url, { onerror: () => {} });
    await peer.conn.ready;
  });
  after(async () => {
    await peer.conn?.close("test done");
    await peer.server?.stop();
  });
  return peer;
}
