// Hostile and careless peers of listen() and connect(): options checked before anything is
// opened or accepted (a throw at an accept would end the server's process); slow-loris peers
// (a clientHello sent byte by byte and never finished, an HTTP upgrade never finished) closed
// within handshakeTimeout; a peer sending one byte at a time served like any other.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { connect, fromIterable, listen } from "../src/node.js";
import { FrameDecoder, encodeFrame } from "../src/rsio-wire.js";
import { ManualClock } from "./support.mjs";

const HELLO = encodeFrame({ type: "clientHello", version: 0, extensions: [] });

for (const [option, value] of [["handshakeTimeout", -1], ["idleTimeout", 0], ["unreadTimeout", "30"],
  ["maxMessagesInFlight", 0]]) {
  test(`listen() refuses ${option}: ${JSON.stringify(value)} before it listens, naming it`, async () => {
    await assert.rejects(listen("tcp://127.0.0.1:0", { [option]: value }),
      (error) => (error instanceof RangeError || error instanceof TypeError) && error.message.length > 0);
  });
}

test("connect() refuses a bad option before it opens a transport: the server sees no connection", async () => {
  let accepted = 0;
  const server = net.createServer((socket) => { accepted += 1; socket.destroy(); });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const url = `tcp://127.0.0.1:${server.address().port}`;
    await assert.rejects(connect(url, { unreadTimeout: -1 }), /unreadTimeout is a number of seconds > 0/);
    await assert.rejects(connect(url, { maxMessagesInFlight: 1.5 }), /maxMessagesInFlight must be an integer >= 1/);
    await assert.rejects(connect(url, { idleTimeout: 5, resume: true }), /idleTimeout is for a client without resume/);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(accepted, 0);
  } finally {
    server.close();
  }
});

/** A raw TCP peer of `url`: what it reads, and a promise of its close. */
function rawPeer(url) {
  const { hostname, port } = new URL(url.replace(/^\w+:/, "http:"));
  const socket = net.connect({ host: hostname, port: Number(port) });
  const chunks = [];
  socket.on("data", (data) => chunks.push(data));
  socket.on("error", () => {});
  const closed = new Promise((resolve) => socket.on("close", resolve));
  return { socket, chunks, closed, read: () => Buffer.concat(chunks) };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

test("slow loris over tcp://: a clientHello begun and never finished gets the handshake timeout's goodbye", async () => {
  const clock = new ManualClock();
  const server = await listen("tcp://127.0.0.1:0", { clock, keepalive: null, handshakeTimeout: 3 });
  try {
    const peer = rawPeer(server.url);
    while (peer.chunks.length === 0) await turn(); // the serverHello
    const begun = HELLO.subarray(0, HELLO.length - 1); // all but its last byte, a second apart
    for (const byte of begun) {
      peer.socket.write(Uint8Array.of(byte));
      await turn();
      clock.advance(1000);
    }
    assert.equal(peer.chunks.length, 1, "nothing but the serverHello yet");
    clock.advance(3000 - 1000 * begun.length);
    await peer.closed;
    assert.match(peer.read().toString("utf8"), /handshake timeout \(no clientHello within 3 s\)$/);
    assert.equal(server.connections.size, 0);
  } finally {
    await server.close();
  }
});

// (its timeout is half of Node's default headersTimeout, which held such sockets before)
test("slow loris over ws://: a socket that never finishes its HTTP upgrade is closed after handshakeTimeout",
  { timeout: 30_000 }, async () => {
  const server = await listen("ws://127.0.0.1:0/rsio", { handshakeTimeout: 0.3, onerror: () => {} });
  try {
    const silent = rawPeer(server.url);
    const partial = rawPeer(server.url);
    partial.socket.write("GET /rsio HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n");
    await Promise.all([silent.closed, partial.closed]); // Node's default would hold them for 60 s
    assert.match(partial.read().toString("latin1"), /^(HTTP\/1\.1 408|$)/);
    // and the server still accepts a well-behaved client
    const conn = await connect(server.url);
    await conn.ready;
    await conn.close();
  } finally {
    await server.close();
  }
});

test("a client sending one byte per write is served as one sending whole frames", async () => {
  const server = await listen("tcp://127.0.0.1:0", { publishers: { words: fromIterable(["a", "bc"]) }, keepalive: null });
  try {
    const peer = rawPeer(server.url);
    const input = Buffer.concat([HELLO,
      encodeFrame({ type: "subscribe", publisher: "words", subscriber: 1, initial_demand: 5n }),
      encodeFrame({ type: "goodbye", reason: "done" })]);
    for (const byte of input) {
      peer.socket.write(Uint8Array.of(byte));
      await turn();
    }
    await peer.closed;
    const decoder = new FrameDecoder(() => 0);
    decoder.push(peer.read());
    const types = [];
    for (let frame = decoder.next(); frame !== null; frame = decoder.next()) {
      types.push(frame.type === "onNext" ? new TextDecoder().decode(frame.element) : frame.type);
    }
    assert.deepEqual(types, ["serverHello", "onSubscribe", "a", "bc", "onComplete", "goodbye"]);
  } finally {
    await server.close();
  }
});

test("connect() gives up on a server that accepts the socket and never answers its WebSocket or TLS handshake", async () => {
  const closed = [];
  const server = net.createServer((socket) => { // accepts, reads, never answers
    socket.on("data", () => {});
    closed.push(new Promise((resolve) => socket.on("close", resolve)));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  try {
    for (const [url, said] of [[`ws://127.0.0.1:${port}/rsio`, /no answer to the opening handshake within 10 s \(handshakeTimeout\)$/],
      [`tls://127.0.0.1:${port}`, /not connected within 10 s \(handshakeTimeout\)$/]]) {
      const clock = new ManualClock();
      const opening = connect(url, { clock });
      const outcome = opening.then(() => null, (error) => error);
      while (closed.length === 0) await turn(); // the server has the socket
      clock.advance(9999);
      await turn();
      clock.advance(1);
      const error = await outcome;
      assert.ok(error?.name === "ConnectionClosedError", String(error));
      assert.match(error.message, said);
      await closed.shift(); // and the socket is closed
    }
  } finally {
    server.close();
  }
});
