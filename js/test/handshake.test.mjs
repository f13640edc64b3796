// A client's handshake timeout (PROTOCOL.md §4.1): a server that accepts the transport but never
// sends its serverHello is said goodbye and the connection ends, instead of waiting for good.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { Connection, ConnectionClosedError, connect, connectTransport } from "../src/node.js";
import { FakeTransport, ManualClock, tick } from "./support.mjs";

const serverHello = { type: "serverHello", version: 0, extensions: [] };

function client(options) {
  const clock = new ManualClock();
  const ws = new FakeTransport();
  const conn = new Connection(ws, { clock, onerror: () => {}, keepalive: null, ...options });
  return { clock, ws, conn };
}

test("handshakeTimeout: no serverHello within it is a goodbye, and the connection ends naming the option", async () => {
  const { clock, ws, conn } = client({ handshakeTimeout: 1 });
  clock.advance(999);
  await tick();
  assert.equal(conn.state, "AWAITING_HELLO");
  clock.advance(1);
  const error = await conn.closed;
  assert.equal(conn.state, "CLOSED");
  assert.equal(ws.of("goodbye").at(-1).reason, "handshake timeout (no serverHello within 1 s)");
  assert.ok(error instanceof ConnectionClosedError, String(error));
  assert.match(error.message, /^handshake timeout \(no serverHello within 1 s\).*handshakeTimeout/);
  assert.ok(ws.closed);
});

test("the serverHello stops the client's handshake timer", async () => {
  const { clock, ws, conn } = client({ handshakeTimeout: 1 });
  ws.feed(serverHello);
  clock.advance(60_000);
  await tick();
  assert.equal(conn.state, "OPEN");
  assert.deepEqual(ws.of("goodbye"), []);
});

test("connectTransport awaits the serverHello 10 s by default; null: for good; a bad value is refused first", async () => {
  const clock = new ManualClock();
  const conn = await connectTransport(async () => new FakeTransport(), { clock, keepalive: null, onerror: () => {} });
  clock.advance(9_999);
  await tick();
  assert.equal(conn.state, "AWAITING_HELLO");
  clock.advance(1);
  assert.match((await conn.closed).message, /no serverHello within 10 s/);
  const patient = await connectTransport(async () => new FakeTransport(),
    { clock, keepalive: null, onerror: () => {}, handshakeTimeout: null });
  clock.advance(3_600_000);
  await tick();
  assert.equal(patient.state, "AWAITING_HELLO");
  let opened = false;
  for (const bad of [0, -1, Number.NaN]) {
    await assert.rejects(connectTransport(async () => { opened = true; return new FakeTransport(); },
      { handshakeTimeout: bad }), (e) => e instanceof RangeError && /handshakeTimeout/.test(e.message));
  }
  assert.equal(opened, false);
});

test("a silent TCP listener does not hang connect()", async () => {
  const sockets = [];
  const listener = net.createServer((socket) => { sockets.push(socket); socket.resume(); });
  await new Promise((resolve) => listener.listen(0, "127.0.0.1", resolve));
  try {
    const conn = await connect(`tcp://127.0.0.1:${listener.address().port}`, { handshakeTimeout: 0.2, onerror: () => {} });
    const error = await conn.closed;
    assert.ok(error instanceof ConnectionClosedError, String(error));
    assert.match(error.message, /no serverHello within 0\.2 s.*handshakeTimeout/);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => listener.close(resolve));
  }
});
