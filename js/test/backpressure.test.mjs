// Input backpressure (PROTOCOL.md §6.3): a peer that leaves our replies unread is no longer
// read, and past unreadTimeout (or MAX_UNSENT unsent bytes) is said goodbye; elements do not
// count, so two endpoints streaming to each other never both stop reading.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { connect, fromIterable, listen } from "../src/node.js";
import { encodeFrame } from "../src/rsio-wire.js";
import { FakeTransport, ManualClock } from "./support.mjs";
import { Connection } from "../src/rsio.js";

const HELLO = { type: "clientHello", version: 0, extensions: [] };

/** A FakeTransport that keeps what it sent as unsent until the test says the peer read it. */
class UnreadTransport extends FakeTransport {
  constructor() {
    super();
    this.unsent = 0;
    this.paused = false;
    this.pauses = 0;
  }

  send(data) {
    super.send(data);
    this.unsent += data.length;
  }

  pauseReading() {
    this.paused = true;
    this.pauses += 1;
  }

  resumeReading() {
    this.paused = false;
  }

  /** The peer read all but `left` bytes. */
  read(left = 0) {
    this.unsent = Math.min(this.unsent, left);
  }
}

function server(options = {}) {
  const ws = new UnreadTransport();
  const clock = new ManualClock();
  const conn = new Connection(ws, { role: "server", onerror: () => {}, keepalive: null, clock, ...options });
  return { ws, conn, clock };
}

/**
 * Feed subscribes for a name nobody offers (each refused with an onError), 100 a read (the
 * refusals of each are written before the next, as from a socket), until reading is paused.
 */
async function flood(ws, from = 1) {
  let fed = 0;
  for (let id = from; fed < 100_000 && !ws.paused; await Promise.resolve()) {
    for (const end = id + 100; id < end; id += 1, fed += 1) {
      ws.feed({ type: "subscribe", publisher: "no/such/name", subscriber: id, initial_demand: 1n });
    }
  }
  return fed;
}

const settled = () => new Promise((resolve) => setImmediate(resolve));

test("a peer flooding subscribes for unknown names without reading is no longer read, and after unreadTimeout gets the goodbye", async () => {
  const { ws, conn, clock } = server();
  ws.feed(HELLO);
  const fed = await flood(ws);
  await settled();
  assert.equal(ws.paused, true, `still read after ${fed} refused subscribes`);
  assert.ok(fed > 1000 && fed < 10_000, `paused after ${fed} subscribes (256 KiB of refusals is some thousands)`);
  assert.ok(ws.unsent < 512 * 1024, `${ws.unsent} bytes unsent`);
  clock.advance(29_999);
  assert.equal(conn.state, "OPEN");
  clock.advance(1);
  const goodbye = ws.of("goodbye").at(-1);
  assert.equal(goodbye.reason, "peer not reading: replies left unread for 30 s (unreadTimeout)");
  assert.equal(conn.state, "CLOSED");
  assert.equal(ws.closed, true);
});

test("reading resumes once the peer reads the replies below a quarter of the mark; then no goodbye", async () => {
  const { ws, conn, clock } = server({ unreadTimeout: 5 });
  ws.feed(HELLO);
  await flood(ws);
  await settled();
  assert.equal(ws.paused, true);
  ws.read(128 * 1024); // half the mark still unread: not yet
  clock.advance(100);
  assert.equal(ws.paused, true);
  ws.read(32 * 1024);
  clock.advance(10);
  assert.equal(ws.paused, false);
  clock.advance(10_000);
  assert.equal(conn.state, "OPEN");
  assert.equal(ws.of("goodbye").length, 0);
  await flood(ws, 50_000); // and it stops reading again the next time
  assert.equal(ws.paused, true);
  assert.equal(ws.pauses, 2);
  clock.advance(5000);
  assert.equal(ws.of("goodbye").at(-1).reason, "peer not reading: replies left unread for 5 s (unreadTimeout)");
});

test("pongs count as replies; unreadTimeout null never says goodbye; MAX_UNSENT does", async () => {
  const { ws, conn, clock } = server({ unreadTimeout: null });
  ws.feed({ ...HELLO, extensions: [1] });
  const ping = { type: "extension", code: 0x80, payload: new Uint8Array(8) };
  while (!ws.paused) {
    for (let i = 0; i < 100; i += 1) ws.feed(ping);
    await Promise.resolve();
  }
  await settled();
  assert.ok(ws.of("extension", 0x81).length > 1000);
  clock.advance(3_600_000);
  assert.equal(conn.state, "OPEN");
  assert.equal(ws.of("goodbye").length, 0);
  const fresh = server();
  fresh.ws.feed({ ...HELLO, extensions: [1] });
  fresh.ws.unsent = 16 * 1024 * 1024; // elements the peer left unread, say
  fresh.ws.feed(ping);
  await settled();
  assert.equal(fresh.ws.of("extension", 0x81).length, 1);
  assert.equal(fresh.ws.of("goodbye").at(-1).reason, "peer not reading: more than 16777216 bytes unsent to it (MAX_UNSENT)");
  assert.equal(fresh.conn.closeReason.message, "peer not reading: more than 16777216 bytes unsent to it (MAX_UNSENT)");
});

test("elements left unread do not stop reading (they are bounded by demand and writable)", async () => {
  const big = new Uint8Array(64 * 1024);
  const { ws, conn } = server({ publishers: { big: fromIterable(Array.from({ length: 64 }, () => big)) } });
  ws.feed(HELLO, { type: "subscribe", publisher: "big", subscriber: 1, initial_demand: 1000n });
  while (ws.of("onComplete").length === 0) await settled();
  assert.ok(ws.unsent > 4 * 1024 * 1024, `${ws.unsent} bytes unsent`);
  assert.equal(ws.paused, false);
  assert.equal(conn.state, "OPEN");
});

test("unreadTimeout is a number of seconds > 0 or null", () => {
  assert.throws(() => new Connection(new FakeTransport(), { unreadTimeout: 0 }), /unreadTimeout is a number of seconds > 0/);
  assert.throws(() => new Connection(new FakeTransport(), { unreadTimeout: "30" }), RangeError);
});

/** `count` subscribes for a name nobody offers, from subscriber id `from` on, as bytes. */
function subscribes(from, count) {
  const frames = [];
  for (let id = from; id < from + count; id += 1) {
    frames.push(encodeFrame({ type: "subscribe", publisher: "no/such/name", subscriber: id, initial_demand: 1n }));
  }
  return Buffer.concat(frames);
}

/**
 * Flood `server` through `write` (a never-reading client's) with unknown subscribes until one
 * of its connections stops reading (the kernel's buffers take some megabytes of refusals
 * first); that connection.
 */
async function floodUntilPaused(server, write) {
  write(Buffer.from(encodeFrame(HELLO)));
  for (let id = 1; ; id += 10_000) {
    const paused = [...server.connections].find((c) => c._backedUp);
    if (paused !== undefined) return paused;
    if (id < 2_000_000) write(subscribes(id, 10_000));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

test("over TCP: a flooding client that never reads is paused and said goodbye; another client keeps being served", { timeout: 60_000 }, async () => {
  const server = await listen("tcp://127.0.0.1:0", {
    unreadTimeout: 0.5, publishers: { counter: () => fromIterable(Array.from({ length: 1000 }, (_, i) => `${i}`)) },
  });
  try {
    const { port } = new URL(server.url);
    const socket = net.connect({ host: "127.0.0.1", port: Number(port) });
    await new Promise((resolve) => socket.once("connect", resolve));
    socket.pause(); // never reads
    const flooded = await floodUntilPaused(server, (bytes) => socket.write(bytes));
    const client = await connect(server.url);
    let count = 0;
    for await (const element of client.stream("counter", { decode: "text" })) count += element === `${count}` ? 1 : 0;
    assert.equal(count, 1000);
    await client.close();
    const error = await flooded.closed;
    assert.equal(error.message, "peer not reading: replies left unread for 0.5 s (unreadTimeout)");
    socket.destroy();
  } finally {
    await server.close();
  }
});

test("over WebSocket (ws): a flooding client that never reads is paused and said goodbye", { timeout: 60_000 }, async () => {
  const { WebSocket } = await import("ws");
  const server = await listen("ws://127.0.0.1:0/rsio", { unreadTimeout: 0.5 });
  try {
    const ws = new WebSocket(server.url, "rsio.v0");
    await new Promise((resolve) => ws.once("open", resolve));
    ws.pause(); // never reads
    const flooded = await floodUntilPaused(server, (bytes) => ws.send(bytes));
    const error = await flooded.closed;
    assert.equal(error.message, "peer not reading: replies left unread for 0.5 s (unreadTimeout)");
    ws.terminate();
  } finally {
    await server.close();
  }
});

test("two endpoints streaming to each other at full speed, neither waiting to read, both finish (no deadlock)", { timeout: 30_000 }, async () => {
  const big = new Uint8Array(64 * 1024).fill(7);
  const many = () => fromIterable(Array.from({ length: 256 }, () => big)); // 16 MiB each way
  const total = (conn) => new Promise((resolve, reject) => {
    let bytes = 0;
    conn.subscribe("flow", {
      onSubscribe: (s) => s.request(1_000_000),
      onNext: (b) => { bytes += b.byteLength; },
      onError: reject,
      onComplete: () => resolve(bytes),
    });
  });
  let fromClient;
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { flow: many }, onconnection: (conn) => { fromClient = total(conn); },
  });
  try {
    const client = await connect(server.url, { publishers: { flow: many } });
    const [toClient, toServer] = await Promise.all([total(client), (async () => {
      while (fromClient === undefined) await new Promise((resolve) => setImmediate(resolve));
      return fromClient;
    })()]);
    assert.equal(toClient, 256 * 64 * 1024);
    assert.equal(toServer, 256 * 64 * 1024);
    await client.close();
  } finally {
    await server.close();
  }
});
