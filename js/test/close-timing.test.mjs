// How long closing takes, as rstreams' (PROTOCOL.md §9.1): a Connection's close() waits at most
// CLOSE_TIMEOUT_MS (5 s) for the answer to its goodbye, then aborts the transport; a socket
// lingers at most 2 s after its end (LINGER_SECONDS); listen()'s close() closes every connection
// at once and aborts whatever is still open 5 s after the call. Time is a ManualClock's: the
// sockets are real, the waits are not.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import net from "node:net";
import { CLOSE_TIMEOUT_MS, connect, listen, socketTransport } from "../src/node.js";
import { FrameDecoder, encodeFrame } from "../src/rsio-wire.js";
import { PYTHON, skip } from "./servers.mjs";
import { ManualClock, scripted, tick } from "./support.mjs";

const QUIET = { keepalive: null, idleTimeout: null, handshakeTimeout: null, unreadTimeout: null, onerror: () => {} };
const HELLO = encodeFrame({ type: "clientHello", version: 0, extensions: [] });
const GOODBYE = encodeFrame({ type: "goodbye", reason: "" });
const LINGER_SECONDS_MS = 2000; // a socket's linger after its end (node.js's LINGER_MS)

/** Turns of the event loop: enough for a socket destroyed now to have said so. */
async function turns(n = 5) {
  for (let i = 0; i < n; i++) await tick();
}

/** A raw client of `url` that says hello; it never ends its side. `answer`: it answers a goodbye. */
function rawPeer(url, answer) {
  const { port } = new URL(url);
  const peer = { frames: [], ended: false, closed: false, socket: null };
  const decoder = new FrameDecoder();
  const socket = net.connect({ host: "127.0.0.1", port: Number(port), allowHalfOpen: true }, () => socket.write(HELLO));
  peer.socket = socket;
  let sawGoodbye;
  peer.goodbye = new Promise((resolve) => { sawGoodbye = resolve; });
  socket.on("data", (data) => {
    decoder.push(data);
    for (let f = decoder.next(); f !== null; f = decoder.next()) {
      peer.frames.push(f);
      if (f.type === "goodbye") {
        if (answer) socket.write(GOODBYE);
        sawGoodbye();
      }
    }
  });
  peer.end = new Promise((resolve) => socket.on("end", () => { peer.ended = true; resolve(); }));
  peer.close = new Promise((resolve) => socket.on("close", () => { peer.closed = true; resolve(); }));
  socket.on("error", () => {});
  return peer;
}

/** A listen() on a ManualClock whose connections are announced to `opened` once their hello is in. */
async function server(clock, count) {
  const ready = [];
  let all;
  const opened = new Promise((resolve) => { all = resolve; });
  const local = await listen("tcp://127.0.0.1:0", { ...QUIET, clock, onconnection(conn) {
    ready.push(conn.ready);
    if (ready.length === count) all(Promise.all(ready));
  } });
  return { local, opened };
}

test("CLOSE_TIMEOUT_MS is rstreams' CLOSE_TIMEOUT, 5 s", () => {
  assert.equal(CLOSE_TIMEOUT_MS, 5000);
});

test("a Connection's close(): the answer is awaited 5 s, then the transport is aborted", async () => {
  const clock = new ManualClock();
  const { ws, conn } = scripted({ clock });
  let aborted = false;
  ws.abort = () => { aborted = true; ws.close(); };
  ws.feed({ type: "serverHello", version: 0, extensions: [1] });
  await tick();
  let done = false;
  conn.close("bye").then(() => { done = true; });
  await tick();
  assert.equal(ws.sent.at(-1).type, "goodbye");
  clock.advance(CLOSE_TIMEOUT_MS - 1);
  await turns();
  assert.deepEqual([aborted, ws.closed, done], [false, false, false]);
  clock.advance(1);
  await turns();
  assert.deepEqual([aborted, done, conn.state], [true, true, "CLOSED"]);
});

test("listen()'s close(): peers that never answer are cut off 5 s after the call, all at once", { timeout: 60_000 }, async () => {
  const clock = new ManualClock();
  const { local, opened } = await server(clock, 2);
  const peers = [rawPeer(local.url, false), rawPeer(local.url, false)];
  await opened; // both hellos are in: each goodbye waits for its answer
  let done = false;
  const closing = local.close().then(() => { done = true; });
  await Promise.all(peers.map((p) => p.goodbye));
  clock.advance(CLOSE_TIMEOUT_MS - 1);
  await turns();
  assert.equal(done, false);
  assert.deepEqual([...local.connections].map((c) => c.state), ["CLOSING", "CLOSING"]);
  clock.advance(1); // one deadline for both, not one after the other
  await closing;
  await Promise.all(peers.map((p) => p.end)); // the aborted sockets' end
  for (const p of peers) p.socket.destroy();
  assert.deepEqual(peers.map((p) => p.frames.map((f) => f.type)), [["serverHello", "goodbye"], ["serverHello", "goodbye"]]);
});

test("listen()'s close(): a peer that answers but never ends its side is lingered for 2 s, then closed", { timeout: 60_000 }, async () => {
  const clock = new ManualClock();
  const { local, opened } = await server(clock, 1);
  const peer = rawPeer(local.url, true);
  await opened;
  let done = false;
  const closing = local.close().then(() => { done = true; });
  await peer.end; // the server read the answer and ended its side: the linger starts
  assert.equal(local.connections.size, 0); // the conversation is over
  clock.advance(1999);
  await turns();
  assert.deepEqual([done, peer.closed], [false, false]);
  clock.advance(1);
  await closing; // the server destroyed the socket; the peer, having read its end, is not told more
  peer.socket.destroy();
});

test("connect()'s close() over tcp: a server that never answers has the socket aborted after 5 s", { timeout: 60_000 }, async () => {
  const clock = new ManualClock();
  let accepted;
  let serverSide = null;
  const socketEnded = new Promise((resolve) => { accepted = resolve; });
  const silent = net.createServer({ allowHalfOpen: true }, (socket) => {
    serverSide = socket;
    socket.write(encodeFrame({ type: "serverHello", version: 0, extensions: [] }));
    socket.on("error", () => {});
    socket.on("end", accepted);
    socket.resume(); // reads (and drops) the client's hello and goodbye, so that its end is seen
  });
  await new Promise((resolve) => silent.listen(0, "127.0.0.1", resolve));
  try {
    const conn = await connect(`tcp://127.0.0.1:${silent.address().port}`, { ...QUIET, clock });
    await conn.ready;
    let done = false;
    const closing = conn.close("bye").then(() => { done = true; });
    clock.advance(CLOSE_TIMEOUT_MS - 1);
    await turns();
    assert.equal(done, false);
    clock.advance(1);
    await closing;
    await socketEnded; // the client's socket is gone
  } finally {
    serverSide?.destroy();
    await new Promise((resolve) => { silent.close(resolve); });
  }
});

// A plain socket peer, in Python (as rstreams' own clients read): it connects, reads nothing until
// it is sent a line, then reads to the end and prints how its input ended and the bytes it read.
// (A paused Node socket would not do: libuv clears a reset that comes while it is not reading, and
// the socket then reads an end.)
const PEER = `
import socket, sys
sock = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
print("connected", flush=True)
sys.stdin.readline()
read = 0
try:
    while data := sock.recv(65536):
        read += len(data)
    print("end", read, flush=True)
except ConnectionResetError:
    print("ECONNRESET", read, flush=True)
`;

/** Lines from a child's output, one per call of the returned function. */
function lines(stream) {
  const queue = [];
  const waiting = [];
  let buffered = "";
  stream.setEncoding("utf8");
  stream.on("data", (chunk) => {
    buffered += chunk;
    for (let at = buffered.indexOf("\n"); at >= 0; at = buffered.indexOf("\n")) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      if (waiting.length) waiting.shift()(line);
      else queue.push(line);
    }
  });
  return () => (queue.length ? Promise.resolve(queue.shift()) : new Promise((resolve) => waiting.push(resolve)));
}

/**
 * A socketTransport over an accepted loopback socket whose peer (PEER) does not read, the kernel's
 * buffers full and output left queued in the socket. `finish()` has the peer read: its `[how, bytes]`.
 */
async function unreadPeer(t, clock) {
  const server = net.createServer({ allowHalfOpen: true });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const accepted = new Promise((resolve) => server.once("connection", resolve));
  const child = spawn(PYTHON, ["-c", PEER, String(server.address().port)], { stdio: ["pipe", "pipe", "inherit"] });
  t.after(() => child.kill()); // (once it has printed its end it has exited already)
  const next = lines(child.stdout);
  assert.equal(await next(), "connected");
  const socket = await accepted;
  server.close();
  const transport = socketTransport(socket, clock);
  const chunk = new Uint8Array(1 << 20).fill(7);
  let written = 0;
  for (let i = 0; i < 512 && socket.writableLength === 0; i++) { // the kernel's buffers take a few MB
    transport.send(chunk);
    written += chunk.length;
    await turns(2);
  }
  assert.ok(socket.writableLength > 0, `the kernel took all ${written} bytes`);
  const taken = written - socket.writableLength; // what the kernel holds for the peer
  const finish = async () => {
    child.stdin.end("read\n");
    const [how, read] = (await next()).split(" ");
    return [how, Number(read), taken];
  };
  return { socket, transport, finish };
}

test("a socket whose linger ends with output unsent resets the peer: its input is cut, not ended", { skip }, async (t) => {
  const clock = new ManualClock();
  const { socket, transport, finish } = await unreadPeer(t, clock);
  transport.close(); // end() after what is queued: the peer reads none of it
  clock.advance(LINGER_SECONDS_MS);
  await turns();
  assert.ok(socket.destroyed);
  const [how, read, taken] = await finish();
  assert.equal(how, "ECONNRESET", `the peer read ${read} bytes and an end`); // an end would read as all there was
  assert.ok(read < taken, `${read} of ${taken} bytes`); // (a reset drops what the kernel held too)
});

test("a socket aborted with output unsent resets the peer too", { skip }, async (t) => {
  const clock = new ManualClock();
  const { socket, transport, finish } = await unreadPeer(t, clock);
  transport.abort();
  await turns();
  assert.ok(socket.destroyed);
  const [how, read] = await finish();
  assert.equal(how, "ECONNRESET", `the peer read ${read} bytes and an end`);
});

test("a socket whose output was all taken ends the peer's input as ever after its linger", async () => {
  const clock = new ManualClock();
  const server = net.createServer({ allowHalfOpen: true });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const accepted = new Promise((resolve) => server.once("connection", resolve));
  const peer = net.connect({ host: "127.0.0.1", port: server.address().port, allowHalfOpen: true });
  const socket = await accepted;
  server.close();
  const transport = socketTransport(socket, clock);
  let read = 0;
  peer.on("data", (data) => { read += data.length; });
  const ended = new Promise((resolve) => { peer.once("end", () => resolve("end")); peer.once("error", (e) => resolve(e.code)); });
  transport.send(Uint8Array.of(1, 2, 3));
  transport.close();
  const how = await ended; // the peer never closes its side: the linger runs out
  clock.advance(LINGER_SECONDS_MS);
  await turns();
  peer.destroy();
  assert.deepEqual([read, how], [3, "end"]);
  assert.ok(socket.destroyed);
});
