// WebSocket messages (PROTOCOL.md §1), as rstreams handles them: what we send goes out in binary
// messages of at most 256 KiB (a turn's writes split, so a peer refusing messages above 1 MiB
// reads them); a text message is refused with close status 1003 and no goodbye (1007 if it is not
// UTF-8); a message above 1 MiB with 1009 and no goodbye (the `ws` package's maxPayload, listen()'s
// and Node 20's connect()'s); the reasons of 1002, 1007 and 1009 say what was wrong, citing §1. A client whose server refuses or breaks the WebSocket ends its streams with an
// error naming how, never hangs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import net from "node:net";
import { WebSocket, WebSocketServer } from "ws";
import { ConnectionClosedError, ProtocolError, connect, fromIterable, listen } from "../src/node.js";
import { webSocketTransport } from "../src/rsio.js";
import { FrameDecoder, encodeFrame } from "../src/rsio-wire.js";
import { cli, skip } from "./servers.mjs";
import { ManualClock } from "./support.mjs";

const HELLO = encodeFrame({ type: "clientHello", version: 0, extensions: [] });
const SERVER_HELLO = encodeFrame({ type: "serverHello", version: 0, extensions: [] });

/** Serve `publishers` on ws://127.0.0.1:0/rsio, run `body(server)`, close. */
async function serving(publishers, body) {
  const server = await listen("ws://127.0.0.1:0/rsio", { publishers, onerror: () => {} });
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

/** A raw `ws` client of `url`: every binary message it reads, and how the WebSocket closed. */
async function raw(url) {
  const ws = new WebSocket(url, "rsio.v0");
  const messages = [];
  ws.on("message", (data, binary) => messages.push(binary ? new Uint8Array(data) : String(data)));
  const closed = new Promise((resolve) => ws.on("close", (code, reason) => resolve({ code, reason: String(reason) })));
  await new Promise((resolve, reject) => { ws.once("open", resolve); ws.once("error", reject); });
  return { ws, messages, closed };
}

const bytesOf = (messages) => Buffer.concat(messages.filter((m) => typeof m !== "string"));
const GOODBYE = 0x03;

test("listen(): a text message is refused with close status 1003 and no goodbye; the server serves others on", async () => {
  await serving({ words: () => fromIterable(["a"]) }, async (server) => {
    const peer = await raw(server.url);
    peer.ws.send(HELLO);
    peer.ws.send("hello");
    assert.deepEqual(await peer.closed, { code: 1003, reason: "RS.io uses binary messages" });
    const read = bytesOf(peer.messages);
    assert.deepEqual([...read.subarray(0, 1)], [0x02], "the serverHello went out first");
    assert.ok(!read.includes(GOODBYE, SERVER_HELLO.length), "no goodbye after the serverHello");
    const conn = await connect(server.url);
    assert.equal(await conn.request("words", { decode: "text" }), "a");
    await conn.close();
  });
});

/**
 * What a raw WebSocket peer of `url` reads once it has sent the upgrade, the hello and then
 * `frames` (bytes of its own making): whether a goodbye came, and the server's close frame.
 */
async function rawEnding(url, frames) {
  const socket = net.connect(Number(new URL(url.replace("ws:", "http:")).port), "127.0.0.1");
  socket.write(`GET /rsio HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
    + `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n`
    + "Sec-WebSocket-Protocol: rsio.v0\r\n\r\n");
  socket.write(Buffer.concat([Uint8Array.of(0x82, 0x80 | HELLO.length, 0, 0, 0, 0), HELLO, frames])); // mask 0
  const chunks = [];
  socket.on("data", (data) => chunks.push(data));
  await new Promise((resolve) => { socket.on("close", resolve); socket.on("error", resolve); });
  const read = Buffer.concat(chunks);
  const rsio = [];
  let close = null;
  for (let at = read.indexOf("\r\n\r\n") + 4; at + 2 <= read.length && close === null;) { // unmasked, small
    const [opcode, size] = [read[at] & 0x0f, read[at + 1] & 0x7f];
    const payload = read.subarray(at + 2, at + 2 + size);
    if (opcode === 0x2) rsio.push(payload);
    if (opcode === 0x8) close = { code: payload.readUInt16BE(0), reason: payload.subarray(2).toString("utf8") };
    at += 2 + size;
  }
  return { goodbye: Buffer.concat(rsio).includes(GOODBYE, SERVER_HELLO.length), close };
}

/** A client's frame (masked with 0) of `opcode` carrying `payload`, below 126 bytes. */
const clientFrame = (opcode, payload) => Buffer.concat([Uint8Array.of(0x80 | opcode, 0x80 | payload.length, 0, 0, 0, 0),
  payload]);

test("listen(): what the peer's WebSocket library must refuse is closed without a goodbye, the reason citing §1", async () => {
  const notUtf8 = "a text WebSocket message, or a close reason, that is not UTF-8 (PROTOCOL.md §1)";
  await serving({ words: () => fromIterable(["a"]) }, async (server) => {
    // a text message that is not UTF-8: 1007 (PROTOCOL.md §1 lets it be 1003 as any text message)
    assert.deepEqual(await rawEnding(server.url, clientFrame(0x1, Uint8Array.of(0x61, 0xff))),
      { goodbye: false, close: { code: 1007, reason: notUtf8 } });
    // a close whose reason is not UTF-8 (RFC 6455 §8.1)
    assert.deepEqual(await rawEnding(server.url, clientFrame(0x8, Uint8Array.of(0x03, 0xe8, 0xc3))),
      { goodbye: false, close: { code: 1007, reason: notUtf8 } });
    // an unmasked frame from a client (RFC 6455 §5.1)
    assert.deepEqual(await rawEnding(server.url, Uint8Array.of(0x82, 0x01, 0x00)),
      { goodbye: false, close: { code: 1002, reason: "bytes that are not a valid WebSocket frame (PROTOCOL.md §1)" } });
    // the peer's own close is answered with its status and reason, not one of those
    assert.deepEqual(await rawEnding(server.url, clientFrame(0x8, Uint8Array.of(0x03, 0xef))),
      { goodbye: false, close: { code: 1007, reason: "" } });
    const conn = await connect(server.url);
    assert.equal(await conn.request("words", { decode: "text" }), "a");
    await conn.close();
  });
});

test("listen(): a message above 1 MiB is refused with close status 1009 and no goodbye", async () => {
  await serving({}, async (server) => {
    const peer = await raw(server.url);
    peer.ws.send(HELLO);
    peer.ws.send(new Uint8Array(1024 * 1024 + 1));
    assert.deepEqual(await peer.closed, { code: 1009, reason: "a WebSocket message above 1 MiB (PROTOCOL.md §1)" });
    assert.ok(!bytesOf(peer.messages).includes(GOODBYE, SERVER_HELLO.length), "no goodbye");
  });
});

test("listen(): a message of exactly 1 MiB is read, and frames spanning messages are joined", async () => {
  await serving({}, async (server) => {
    const peer = await raw(server.url);
    // requests for an id with no subscription (ignored, §5.4), then a goodbye: 1 MiB and the rest
    const request = encodeFrame({ type: "request", subscriber: 9, demand: 1n });
    const stream = Buffer.concat([HELLO, ...Array(400_000).fill(request), encodeFrame({ type: "goodbye", reason: "bye" })]);
    peer.ws.send(stream.subarray(0, 1024 * 1024)); // ends inside a request
    peer.ws.send(stream.subarray(1024 * 1024));
    const closed = await peer.closed;
    assert.notEqual(closed.code, 1009);
    assert.ok(bytesOf(peer.messages).includes(GOODBYE, SERVER_HELLO.length), "the goodbye was answered");
  });
});

test("listen(): a turn's output goes out in messages of at most 256 KiB, every byte in order", async () => {
  const elements = Array.from({ length: 60 }, (_, i) => new Uint8Array(60_000).fill(i));
  await serving({ big: () => fromIterable(elements) }, async (server) => {
    const peer = await raw(server.url);
    peer.ws.send(HELLO);
    peer.ws.send(encodeFrame({ type: "subscribe", publisher: "big", subscriber: 1, initial_demand: 100n }));
    const received = [];
    const decoder = new FrameDecoder(() => 0);
    let done = false;
    let seen = 0;
    while (!done) {
      await new Promise((resolve) => setImmediate(resolve));
      while (seen < peer.messages.length) decoder.push(peer.messages[seen++]);
      for (let frame = decoder.next(); frame !== null; frame = decoder.next()) {
        if (frame.type === "onNext") received.push(frame.element[0]);
        if (frame.type === "onComplete") done = true;
      }
    }
    assert.deepEqual(received, elements.map((_, i) => i));
    const largest = Math.max(...peer.messages.map((m) => m.length));
    assert.ok(largest <= 256 * 1024, `a message of ${largest} bytes`);
    assert.ok(peer.messages.length > 10, "several messages");
    peer.ws.close();
  });
});

/** A bare `ws` server at 127.0.0.1 that answers each connection with `answer(socket)`. */
async function rawServer(answer) {
  const wss = new WebSocketServer({ port: 0, host: "127.0.0.1", handleProtocols: () => "rsio.v0" });
  await new Promise((resolve) => wss.once("listening", resolve));
  wss.on("connection", answer);
  return { url: `ws://127.0.0.1:${wss.address().port}/rsio`, close: () => new Promise((r) => wss.close(r)) };
}

test("connect(): a server's text message ends the stream with ProtocolError §1; the client closes with 1003, no goodbye", async () => {
  let client;
  const server = await rawServer((socket) => {
    const read = [];
    socket.on("message", (data) => read.push(new Uint8Array(data)));
    client = new Promise((resolve) => socket.on("close", (code) => resolve({ code, read: Buffer.concat(read) })));
    socket.send(SERVER_HELLO);
    socket.send("not RS.io");
  });
  try {
    const conn = await connect(server.url, { keepalive: null });
    const stream = conn.stream("anything");
    await assert.rejects(async () => { for await (const _ of stream); }, (error) =>
      (error instanceof ProtocolError && error.section === "§1") || error.cause instanceof ProtocolError);
    const { code, read } = await client;
    assert.equal(code, 1003);
    assert.ok(!read.includes(GOODBYE, HELLO.length), "no goodbye from the client");
    assert.ok((await conn.closed) instanceof ProtocolError);
  } finally {
    await server.close();
  }
});

test("connect() over the `ws` package: a server's text message that is not UTF-8 is closed with 1007 and §1's reason",
  { skip: globalThis.WebSocket !== undefined && "connect() takes the runtime's own WebSocket here" }, async () => {
    let client;
    const server = await rawServer((socket) => {
      client = new Promise((resolve) => socket.on("close", (code, reason) => resolve({ code, reason: String(reason) })));
      socket.send(SERVER_HELLO);
      socket.send(Uint8Array.of(0xff), { binary: false });
    });
    try {
      const conn = await connect(server.url, { keepalive: null });
      const why = await conn.closed;
      assert.ok(why instanceof ConnectionClosedError, why);
      assert.match(why.message, /without a goodbye \(PROTOCOL\.md §9\.3\): the WebSocket closed .*invalid UTF-8/);
      assert.deepEqual(await client,
        { code: 1007, reason: "a text WebSocket message, or a close reason, that is not UTF-8 (PROTOCOL.md §1)" });
    } finally {
      await server.close();
    }
  });

test("connect(): a server's message above 1 MiB ends the stream with a ConnectionClosedError naming the close", async () => {
  const server = await rawServer((socket) => {
    socket.send(SERVER_HELLO);
    socket.send(new Uint8Array(2 * 1024 * 1024));
  });
  try {
    const conn = await connect(server.url, { keepalive: null });
    await assert.rejects(async () => { for await (const _ of conn.stream("anything")); },
      (error) => error instanceof ConnectionClosedError);
    const why = await conn.closed;
    assert.ok(why instanceof ConnectionClosedError);
    assert.match(why.message, /without a goodbye \(PROTOCOL\.md §9\.3\): the WebSocket closed with status \d+ \(Max payload/);
  } finally {
    await server.close();
  }
});

test("connect(): a server that goes away mid-stream ends the loop with a ConnectionClosedError, and request() too", async () => {
  const sockets = [];
  const server = await rawServer((socket) => {
    sockets.push(socket);
    socket.send(SERVER_HELLO);
    socket.once("message", () => { // the hello and the optimistic subscribe
      // onSubscribe, one element, then the server goes away without a goodbye
      socket.send(Buffer.concat([
        encodeFrame({ type: "onSubscribe", subscriber: 1, element_size: 0 }),
        encodeFrame({ type: "onNext", subscriber: 1, element: new Uint8Array([7]) }),
      ]));
      setImmediate(() => socket.terminate());
    });
  });
  try {
    const conn = await connect(server.url, { keepalive: null });
    const got = [];
    await assert.rejects(async () => { for await (const x of conn.stream("s", { window: 4 })) got.push(x[0]); },
      (error) => error instanceof ConnectionClosedError && /without a goodbye/.test(error.message));
    assert.deepEqual(got, [7]);
    const again = await connect(server.url, { keepalive: null });
    await assert.rejects(again.request("t").then(() => again.request("t")), ConnectionClosedError);
  } finally {
    for (const socket of sockets) socket.terminate();
    await server.close();
  }
});

test("webSocketTransport: one send above 256 KiB goes out as messages of at most 256 KiB", () => {
  const sent = [];
  const ws = { readyState: 1, bufferedAmount: 0, send: (bytes) => sent.push(bytes.byteLength) };
  const transport = webSocketTransport(ws);
  transport.send(new Uint8Array(600 * 1024));
  transport.send(new Uint8Array(256 * 1024));
  assert.deepEqual(sent, [256 * 1024, 256 * 1024, 88 * 1024, 256 * 1024]);
});

test("the Python client reads 60 kB elements from listen()'s ws:// with a window of 100 (no message above its 1 MiB)",
  { skip }, async () => {
    const elements = Array.from({ length: 100 }, (_, i) => `${String(i).padStart(3, "0")}${"x".repeat(60_000)}`);
    await serving({ big: () => fromIterable(elements) }, async (server) => {
      const read = await cli(["subscribe", server.url, "big", "--demand", "100"]);
      assert.equal(read.code, 0, read.stderr);
      assert.deepEqual(read.stdout.trimEnd().split("\n").map((line) => line.slice(0, 3)), elements.map((e) => e.slice(0, 3)));
    });
  });

/** A WebSocket of the `ws` package's shape, without a network: what was called on it; `emit("ping")`. */
function fakeWs() {
  const listeners = [];
  const handlers = new Map();
  const ws = {
    readyState: 1, bufferedAmount: 0, calls: [],
    on(kind, handler) { handlers.set(kind, handler); },
    emit(kind, ...args) { handlers.get(kind)?.(...args); },
    send() {},
    pause() { ws.calls.push("pause"); },
    resume() { ws.calls.push("resume"); },
    close(code) { ws.calls.push(`close${code === undefined ? "" : ` ${code}`}`); ws.readyState = 2; },
    terminate() { ws.calls.push("terminate"); ws.readyState = 3; for (const listener of listeners) listener(); },
    addEventListener(kind, listener) { if (kind === "close") listeners.push(listener); },
  };
  return ws;
}

test("webSocketTransport: after close() the peer's input is discarded, and the WebSocket ends 2 s later (§10's linger)", () => {
  const clock = new ManualClock();
  const ws = fakeWs();
  const transport = webSocketTransport(ws, clock);
  const read = [];
  transport.onbytes = (data) => read.push(data.byteLength);
  transport.start();
  ws.onmessage({ data: new ArrayBuffer(3) });
  transport.close();
  ws.onmessage({ data: new ArrayBuffer(5) }); // discarded
  clock.advance(1999);
  assert.deepEqual(ws.calls, ["close"]);
  clock.advance(1);
  assert.deepEqual(ws.calls, ["close", "terminate"]);
  assert.deepEqual(read, [3]);
});

test("webSocketTransport: past 4 MiB discarded after close() the WebSocket ends at once (LINGER_BYTES)", () => {
  const clock = new ManualClock();
  const ws = fakeWs();
  const transport = webSocketTransport(ws, clock);
  transport.start();
  transport.close();
  for (let k = 0; k < 4; k++) ws.onmessage({ data: new ArrayBuffer(1 << 20) }); // 4 MiB: still lingering
  assert.deepEqual(ws.calls, ["close"]);
  ws.onmessage({ data: new ArrayBuffer(1) });
  assert.deepEqual(ws.calls, ["close", "terminate"]);
  assert.equal(clock.timers.size, 0, "the linger's timer went with the WebSocket");
});

test("listen(): after an error goodbye a ws:// peer that never answers the close is cut off after the 2 s linger", async () => {
  const clock = new ManualClock();
  const server = await listen("ws://127.0.0.1:0/rsio", { clock, onerror: () => {} });
  let socket;
  try {
    // a raw WebSocket client (the `ws` one would answer the close frame): the upgrade, then one
    // masked binary message, the hello and a reserved type byte (goodbye §3); it never closes
    socket = net.connect(Number(new URL(server.url.replace("ws:", "http:")).port), "127.0.0.1");
    socket.write(`GET /rsio HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n`
      + `Sec-WebSocket-Key: ${randomBytes(16).toString("base64")}\r\nSec-WebSocket-Version: 13\r\n`
      + "Sec-WebSocket-Protocol: rsio.v0\r\n\r\n");
    const payload = Buffer.concat([HELLO, Uint8Array.of(0x0e)]);
    socket.write(Buffer.concat([Uint8Array.of(0x82, 0x80 | payload.length, 0, 0, 0, 0), payload])); // mask 0
    let read = Buffer.alloc(0);
    let closed = false;
    socket.on("data", (data) => { read = Buffer.concat([read, data]); });
    const whenClosed = new Promise((resolve) => socket.on("close", resolve)).then(() => { closed = true; });
    while (!read.includes(Uint8Array.of(0x88))) await new Promise((r) => setImmediate(r)); // the close frame
    assert.match(read.toString("utf8"), /unknown message type 0x0e \(PROTOCOL\.md §3\)/);
    clock.advance(1999);
    for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
    assert.equal(closed, false);
    clock.advance(1);
    await whenClosed;
  } finally {
    socket?.destroy();
    await server.close();
  }
});

test("webSocketTransport: a peer that pings and never reads is cut off once the pongs unsent pass MAX_UNSENT (16 MiB)", () => {
  const ws = fakeWs();
  const transport = webSocketTransport(ws, new ManualClock());
  let ending = null;
  transport.onend = () => { ending = transport.ending; };
  transport.start();
  ws.bufferedAmount = 16 * 1024 * 1024;
  ws.emit("ping");
  assert.deepEqual(ws.calls, []);
  ws.bufferedAmount += 1;
  ws.emit("ping");
  assert.deepEqual(ws.calls, ["terminate"]);
  ws.onclose({ code: 1006 });
  assert.equal(ending, "the WebSocket closed with status 1006 (more than 16777216 bytes unsent to a peer that pings "
    + "and does not read (MAX_UNSENT))");
});

test("webSocketTransport: past 256 KiB of pongs unsent the peer is not read until they drain below a quarter (§6.3)", () => {
  const clock = new ManualClock();
  const ws = fakeWs();
  const transport = webSocketTransport(ws, clock);
  transport.start();
  const pong = 125 + 2 + 4; // a ping's largest payload, as a client frames it
  let pings = 0;
  while (!ws.calls.includes("pause") && pings < 10_000) {
    ws.bufferedAmount += pong; // the `ws` package's pong, never read
    ws.emit("ping", new Uint8Array(125));
    pings += 1;
  }
  assert.equal(pings, Math.floor((256 * 1024) / pong) + 1);
  transport.pauseReading();
  transport.resumeReading(); // the Connection's backlog is gone; the pongs' is not
  ws.bufferedAmount = 64 * 1024 + 1;
  clock.advance(1000);
  assert.deepEqual(ws.calls, ["pause", "pause"]);
  ws.bufferedAmount = 64 * 1024;
  clock.advance(10);
  assert.deepEqual(ws.calls, ["pause", "pause", "resume"]);
});

test("webSocketTransport: elements unsent do not count as pongs: a ping then does not stop reading", () => {
  const ws = fakeWs();
  const transport = webSocketTransport(ws, new ManualClock());
  transport.start();
  transport.send(new Uint8Array(200 * 1024));
  transport.send(new Uint8Array(200 * 1024));
  ws.bufferedAmount = 400 * 1024 + 8;
  ws.emit("ping", new Uint8Array(8));
  assert.deepEqual(ws.calls, []);
});
