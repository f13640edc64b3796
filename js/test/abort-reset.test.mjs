// A tls:// socket and a ws:// WebSocket ended with output unsent are reset, not closed, as a
// tcp:// socket is (PROTOCOL.md §9.1; close-timing.test.mjs has the tcp:// cases): a close
// would let the peer read what the kernel held and then an end of input, a stream cut anywhere
// that reads as one that ended. The peer (fixtures/unread_peer.py, in Python: a paused Node
// socket would read an end, close-timing.test.mjs says why) stops reading at once; the
// Connection's close() then cannot send its goodbye, and CLOSE_TIMEOUT_MS later (a ManualClock's
// time) it aborts. The peer then reads the TCP connection to its end: a reset, not an end.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { WebSocket } from "ws";
import { CLOSE_TIMEOUT_MS, connect, listen } from "../src/node.js";
import { encodeFrame } from "../src/rsio-wire.js";
import { PYTHON, REPO, skip } from "./servers.mjs";
import { ManualClock, tick } from "./support.mjs";

const PEER = fileURLToPath(new URL("fixtures/unread_peer.py", import.meta.url));
const QUIET = { keepalive: null, idleTimeout: null, handshakeTimeout: null, unreadTimeout: null, onerror: () => {} };
const ELEMENT = new Uint8Array(1 << 16).fill(7);
const hex = (...frames) => Buffer.concat(frames.map((f) => encodeFrame(f))).toString("hex");
const SUBSCRIBE = { type: "subscribe", publisher: "flood", subscriber: 1, initial_demand: 1n << 40n };

/** A publisher of ELEMENT for ever, as much as is requested. */
const flood = {
  subscribe(subscriber) {
    let demand = 0n;
    let emitting = false;
    let done = false;
    subscriber.onSubscribe({
      request(n) {
        demand += BigInt(n);
        if (emitting) return;
        emitting = true;
        while (demand > 0n && !done) {
          demand -= 1n;
          subscriber.onNext(ELEMENT);
        }
        emitting = false;
      },
      cancel() { done = true; },
    });
  },
};

/** The peer process: `next()` its next line; `finish()` has it read: [how its input ended, bytes]. */
function peer(t, args) {
  const child = spawn(PYTHON, [PEER, ...args], { stdio: ["pipe", "pipe", "inherit"] });
  t.after(() => child.kill());
  const queue = [];
  const waiting = [];
  let buffered = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk) => {
    buffered += chunk;
    for (let at = buffered.indexOf("\n"); at >= 0; at = buffered.indexOf("\n")) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      if (waiting.length) waiting.shift()(line);
      else queue.push(line);
    }
  });
  const next = () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiting.push(resolve)));
  const finish = async () => {
    child.stdin.end("read\n");
    const [how, read] = (await next()).split(" ");
    return [how, Number(read)];
  };
  return { next, finish };
}

/** Until `conn` holds output its transport could not send (the peer reads nothing): turns, bounded. */
async function backedUp(conn) {
  for (let i = 0; i < 20000 && !(conn._transport.unsent > 0); i++) await tick();
  assert.ok(conn._transport.unsent > 0, "the connection's output never backed up");
}

test("a tls:// connection aborted with output unsent resets the TCP connection under TLS", { skip, timeout: 60_000 }, async (t) => {
  const clock = new ManualClock();
  const opening = hex({ type: "serverHello", version: 0, extensions: [] }, SUBSCRIBE);
  const { next, finish } = peer(t, ["tls", REPO, opening]);
  const port = await next();
  const ca = readFileSync(await next());
  const conn = await connect(`tls://127.0.0.1:${port}`, { ...QUIET, clock, tls: { ca }, publishers: { flood } });
  assert.equal(await next(), "connected");
  await backedUp(conn);
  const closed = conn.close(); // its goodbye waits behind what is unsent, for CLOSE_TIMEOUT_MS
  clock.advance(CLOSE_TIMEOUT_MS);
  await closed;
  const [how, read] = await finish();
  assert.equal(how, "ECONNRESET", `the peer read ${read} bytes and an end`); // an end would read as all there was
});

test("connect() with the `ws` package: a ws:// connection aborted with output unsent resets its TCP connection",
  { skip, timeout: 60_000 }, async (t) => {
    const clock = new ManualClock();
    const opening = hex({ type: "serverHello", version: 0, extensions: [] }, SUBSCRIBE);
    const { next, finish } = peer(t, ["ws-server", "-", opening]);
    const port = await next();
    const conn = await connect(`ws://127.0.0.1:${port}/rsio`, { ...QUIET, clock, WebSocket, publishers: { flood } });
    assert.equal(await next(), "connected");
    await backedUp(conn);
    const closed = conn.close();
    clock.advance(CLOSE_TIMEOUT_MS);
    await closed;
    const [how, read] = await finish();
    assert.equal(how, "ECONNRESET", `the peer read ${read} bytes and an end`);
  });

test("connect() with the `ws` package: a wss:// connection aborted with output unsent resets the TCP connection under TLS",
  { skip: skip || (globalThis.WebSocket !== undefined && "Node's global WebSocket opens wss:// here"), timeout: 60_000 },
  async (t) => {
    const clock = new ManualClock();
    const opening = hex({ type: "serverHello", version: 0, extensions: [] }, SUBSCRIBE);
    const { next, finish } = peer(t, ["wss-server", REPO, opening]);
    const port = await next();
    const ca = readFileSync(await next());
    const conn = await connect(`wss://127.0.0.1:${port}/rsio`, { ...QUIET, clock, tls: { ca }, publishers: { flood } });
    assert.equal(await next(), "connected");
    await backedUp(conn);
    const closed = conn.close();
    clock.advance(CLOSE_TIMEOUT_MS);
    await closed;
    const [how, read] = await finish();
    assert.equal(how, "ECONNRESET", `the peer read ${read} bytes and an end`);
  });

test("listen(): a ws:// connection aborted with output unsent resets the peer's TCP connection", { skip, timeout: 60_000 }, async (t) => {
  const clock = new ManualClock();
  const local = await listen("ws://127.0.0.1:0/rsio", { ...QUIET, clock, publishers: { flood } });
  try {
    const opening = hex({ type: "clientHello", version: 0, extensions: [] }, SUBSCRIBE);
    const { next, finish } = peer(t, ["ws", new URL(local.url).port, opening]);
    assert.equal(await next(), "connected");
    for (let i = 0; i < 20000 && local.connections.size === 0; i++) await tick();
    const [conn] = local.connections;
    await backedUp(conn);
    const closed = local.close(); // goodbye to every connection; whatever is open 5 s later is aborted
    await tick();
    clock.advance(CLOSE_TIMEOUT_MS);
    await closed;
    const [how, read] = await finish();
    assert.equal(how, "ECONNRESET", `the peer read ${read} bytes and an end`);
  } finally {
    await local.close();
  }
});
