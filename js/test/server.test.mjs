// listen(): this package accepting connections. The Python client (`rstreams subscribe`)
// consumes a JavaScript publisher over TCP and WebSocket with its demand respected; a
// JavaScript client and server subscribe to each other on one connection; a client that
// breaks the protocol gets a goodbye naming the section.
import { test } from "node:test";
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import net from "node:net";
import { ConnectionClosedError, connect, fromIterable, listen, socketTransport } from "../src/node.js";
import { cli, skip } from "./servers.mjs";
import { ManualClock } from "./support.mjs";

/** A Publisher of "0", "1", ... up to n that records the demand it was given. */
function recorded(n) {
  const record = { requested: 0, emitted: 0, maxOutstanding: 0, cancelled: false };
  const publisher = {
    subscribe(subscriber) {
      let emitting = false;
      subscriber.onSubscribe({
        request(k) {
          record.requested += k;
          record.maxOutstanding = Math.max(record.maxOutstanding, record.requested - record.emitted);
          if (emitting) return;
          emitting = true;
          while (record.emitted < record.requested && record.emitted < n && !record.cancelled) {
            subscriber.onNext(String(record.emitted++));
          }
          if (record.emitted === n) subscriber.onComplete();
          emitting = false;
        },
        cancel() { record.cancelled = true; },
      });
    },
  };
  return { publisher, record };
}

for (const listenOn of ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/rsio"]) {
  test(`the Python client reads a JavaScript publisher over ${listenOn.split(":")[0]} within its --demand window`, { skip }, async () => {
    const made = [];
    const server = await listen(listenOn, {
      publishers: { "numbers/{kind}": (params) => { const r = recorded(Number(params.n)); made.push(r.record); return r.publisher; } },
    });
    try {
      const read = await cli(["subscribe", server.url, "numbers/plain?n=200", "--demand", "4"]);
      assert.equal(read.code, 0, read.stderr);
      assert.deepEqual(read.stdout.trimEnd().split("\n"), Array.from({ length: 200 }, (_, i) => String(i)));
      assert.ok(made[0].maxOutstanding <= 4, `the publisher held ${made[0].maxOutstanding} demand`);
      const some = await cli(["subscribe", server.url, "numbers/plain?n=1000000", "--demand", "8", "--count", "10"]);
      assert.equal(some.code, 0, some.stderr);
      assert.equal(some.stdout.trimEnd().split("\n").length, 10);
      assert.ok(made[1].cancelled && made[1].emitted <= 10 + 8, JSON.stringify(made[1]));
      const unknown = await cli(["subscribe", server.url, "nothing/here"]);
      assert.equal(unknown.code, 1);
      assert.match(unknown.stdout + unknown.stderr, /no publisher named 'nothing\/here'/);
    } finally {
      await server.close();
    }
  });
}

test("a JavaScript client and server subscribe to each other on one connection", async () => {
  const fromClients = [];
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { greeting: () => fromIterable(["hello from the server"]) },
    onconnection(conn) {
      conn.subscribe("status", { onSubscribe(s) { s.request(10); }, onNext(b) { fromClients.push(new TextDecoder().decode(b)); } });
    },
  });
  try {
    const client = await connect(server.url, { publishers: { status: fromIterable(["ok", "still ok"]) } });
    assert.equal(await client.request("greeting", { decode: "text" }), "hello from the server");
    while (fromClients.length < 2) await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(fromClients, ["ok", "still ok"]);
    assert.equal(server.connections.size, 1);
    await client.close();
  } finally {
    await server.close();
  }
});

test("a client that breaks the protocol gets a goodbye naming the section; close() says goodbye to the rest", async () => {
  const server = await listen("tcp://127.0.0.1:0");
  try {
    const { port } = new URL(server.url);
    const answer = await new Promise((resolve) => {
      const socket = net.connect({ host: "127.0.0.1", port: Number(port) }, () => socket.write(Uint8Array.of(0x01, 0x00, 0x00, 0x0e)));
      const chunks = [];
      socket.on("data", (data) => chunks.push(data));
      socket.on("close", () => resolve(Buffer.concat(chunks)));
    });
    assert.equal(answer[0], 0x02); // serverHello first
    assert.match(answer.toString("utf8"), /unknown message type 0x0e \(PROTOCOL\.md §3\)$/);
    const client = await connect(server.url);
    await client.ready;
    await server.close();
    const error = await client.closed;
    assert.ok(error instanceof ConnectionClosedError && error.reason === "server closing", String(error));
  } finally {
    await server.close();
  }
});

test("a socket's transport discards input after close() and destroys the socket past 4 MiB (LINGER_BYTES)", () => {
  // Before, the server read and dropped all a flooding peer could send for the whole linger
  // (2 s): about 150 MB on loopback (tests/conformance/test_hostile_polyglot.py found it).
  const socket = new EventEmitter();
  Object.assign(socket, {
    destroyed: false, writable: true, writableLength: 0, writableNeedDrain: false, ended: false,
    write() { return true; },
    end() { this.ended = true; },
    destroy() { this.destroyed = true; },
  });
  const transport = socketTransport(socket);
  const received = [];
  transport.onbytes = (data) => received.push(data.length);
  transport.start();
  socket.emit("data", new Uint8Array(10));
  transport.close();
  assert.ok(socket.ended && !socket.destroyed);
  for (let k = 0; k < 4; k++) socket.emit("data", new Uint8Array(1 << 20)); // 4 MiB: still lingering
  assert.ok(!socket.destroyed);
  socket.emit("data", new Uint8Array(1));
  assert.ok(socket.destroyed, "the socket outlived 4 MiB of discarded input");
  assert.deepEqual(received, [10]); // nothing read after close() reached the connection
});

test("listen() refuses what it cannot offer, naming it", async () => {
  await assert.rejects(listen("tcp://127.0.0.1:0", { auth: "t" }), (e) => e instanceof TypeError && /options\.authenticate/.test(e.message));
  await assert.rejects(listen("tcp://127.0.0.1:0", { authorize: () => true }), (e) => e instanceof TypeError && /authorize needs authenticate/.test(e.message));
  await assert.rejects(listen("http://127.0.0.1:0"), (e) => e instanceof TypeError && /unsupported URL scheme 'http'/.test(e.message));
  await assert.rejects(listen("tls://127.0.0.1:0"), (e) => e instanceof TypeError && /tcp, unix and ws/.test(e.message));
});

test("listen() says goodbye to a connection whose clientHello has not come within 10 s (handshakeTimeout's default)", async () => {
  const clock = new ManualClock();
  const server = await listen("tcp://127.0.0.1:0", { clock, keepalive: null });
  try {
    const { port } = new URL(server.url);
    const chunks = [];
    let closed = false;
    const socket = net.connect({ host: "127.0.0.1", port: Number(port) });
    socket.on("data", (data) => chunks.push(data));
    const whenClosed = new Promise((resolve) => socket.on("close", resolve));
    whenClosed.then(() => { closed = true; });
    while (chunks.length === 0) await new Promise((resolve) => setImmediate(resolve)); // the serverHello: accepted
    clock.advance(9999);
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(chunks.length, 1);
    assert.equal(closed, false);
    clock.advance(1);
    await whenClosed;
    assert.match(Buffer.concat(chunks).toString("utf8"), /handshake timeout \(no clientHello within 10 s\)$/);
  } finally {
    await server.close();
  }
});

test("a WebSocket path the server does not serve: the client's error gives the server's HTTP answer", async () => {
  const server = await listen("ws://127.0.0.1:0/rsio", { publishers: { n: fromIterable(["1"]) } });
  try {
    const wrong = server.url.replace("/rsio", "/other");
    await assert.rejects(connect(wrong), (e) => e instanceof ConnectionClosedError
      && e.message === `cannot open a WebSocket to ${wrong}: Unexpected server response: 404`);
  } finally {
    await server.close();
  }
});
