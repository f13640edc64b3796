// The client end to end against real `rstreams serve` processes (test/servers.mjs), over TCP,
// WebSocket (the `ws` package under Node 20, a global WebSocket where Node has one) and a Unix
// socket: subscribe/request/cancel, packed and split elements, backpressure, remote errors.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ConnectionClosedError, RemoteStreamError, UNBOUNDED, connect } from "../src/node.js";
import { FIXTURE, serve, skip } from "./servers.mjs";

const text = new TextDecoder();

/** A Subscriber that requests `batch` at a time and collects everything; `done` settles at the end. */
function collector(batch = 10) {
  const c = { items: [], error: null, completed: false };
  c.done = new Promise((resolve) => {
    Object.assign(c, {
      onSubscribe(s) { c.subscription = s; s.request(batch); },
      onNext(bytes) {
        c.items.push(bytes);
        if (c.items.length % batch === 0) c.subscription.request(batch);
      },
      onError(error) { c.error = error; resolve(); },
      onComplete() { c.completed = true; resolve(); },
    });
  });
  return c;
}

async function all(conn, name, decode = "bytes") {
  const out = [];
  for await (const item of conn.stream(name, { decode })) out.push(item);
  return out;
}

const socketDir = skip ? null : mkdtempSync(join(tmpdir(), "rsio-"));
const transports = [["tcp", "tcp://127.0.0.1:0"], ["ws", "ws://127.0.0.1:0/rsio"], ["unix", `unix://${socketDir}/rsio.sock`]];

for (const [kind, listen] of transports) {
  describe(`over ${kind}`, { skip }, () => {
    let server;
    let conn;
    before(async () => {
      server = await serve(listen, ["--publishers", FIXTURE]);
      conn = await connect(server.url, { onerror: () => {} });
      await conn.ready;
    });
    after(async () => {
      await conn?.close("test done");
      await server?.stop();
    });

    test("subscribe with request(n) batches: every element in order, then onComplete", async () => {
      const c = collector(10);
      conn.subscribe("numbers?n=100", c);
      await c.done;
      assert.equal(c.error, null);
      assert.ok(c.completed);
      assert.deepEqual(c.items.map((b) => text.decode(b)), Array.from({ length: 100 }, (_, i) => String(i)));
    });

    test("the async iterator reads a stream to its end; request() takes one element", async () => {
      const got = [];
      for await (const item of conn.stream("numbers?n=1000", { window: 8, decode: "text" })) got.push(Number(item));
      assert.deepEqual(got, Array.from({ length: 1000 }, (_, i) => i));
      assert.equal(await conn.request("numbers?n=5", { decode: "text" }), "0");
    });

    test("a split element (onNextPart ... onNextLastPart) arrives joined", async () => {
      const c = collector(1);
      conn.subscribe("big", c);
      await c.done;
      assert.equal(c.items.length, 1);
      assert.equal(c.items[0].length, 200_000);
      assert.ok(c.items[0].every((b, i) => b === (i & 0xff)));
    });

    test("packed fixed-size elements (onNextPacked) arrive one by one, demand counted in elements", async () => {
      const c = collector(64);
      const sub = conn.subscribe("ints?n=1000", c);
      await c.done;
      assert.equal(c.error, null);
      assert.equal(sub.elementSize, 8);
      const values = c.items.map((b) => Number(new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true)));
      assert.deepEqual(values, Array.from({ length: 1000 }, (_, i) => i));
    });

    test("backpressure: the server's publisher never holds more demand than the iterator's window", async () => {
      const window = 4;
      let taken = 0;
      for await (const item of conn.stream("counted?n=100000", { window, decode: "text" })) {
        assert.equal(Number(item), taken);
        taken += 1;
        await new Promise((resolve) => setImmediate(resolve)); // a consumer slower than the network
        if (taken === 300) break; // leaving the loop cancels
      }
      const stats = JSON.parse(await conn.request("counted-stats", { decode: "text" }));
      assert.ok(stats.max_outstanding <= window, `publisher held ${stats.max_outstanding} > ${window}`);
      assert.ok(stats.requested <= taken + window, `requested ${stats.requested} for ${taken} taken`);
      assert.ok(stats.emitted >= taken && stats.emitted <= taken + window, `emitted ${stats.emitted}`);
      assert.equal(stats.cancelled, true);
    });

    test("unbounded demand: request(Infinity) means 2**63 - 1", async () => {
      const c = collector(1);
      c.onSubscribe = (s) => { c.subscription = s; s.request(Infinity); };
      c.onNext = (bytes) => c.items.push(bytes);
      const sub = conn.subscribe("numbers?n=500", c);
      assert.equal(sub.outstanding, UNBOUNDED);
      await c.done;
      assert.equal(c.items.length, 500);
    });

    test("a remote error and an unknown name are RemoteStreamErrors; the connection stays", async () => {
      await assert.rejects(all(conn, "fail"), (e) => e instanceof RemoteStreamError && /boom/.test(e.message));
      await assert.rejects(all(conn, "no/such/thing"),
        (e) => e instanceof RemoteStreamError && /no publisher named 'no\/such\/thing'/.test(e.message));
      assert.equal((await all(conn, "numbers?n=3")).length, 3);
    });

    test("cancel: acknowledged by onComplete, elements in flight dropped, then the id is reused", async () => {
      const c = collector(5);
      c.onNext = (bytes) => { c.items.push(bytes); if (c.items.length === 3) c.subscription.cancel(); };
      const first = conn.subscribe("numbers?n=1000000", c);
      const again = collector(5);
      await new Promise((resolve) => {
        const look = () => (first.state === "CLOSED" ? resolve() : setImmediate(look));
        look();
      });
      assert.equal(c.items.length, 3);
      assert.equal(c.completed, false);
      assert.equal(c.error, null);
      const second = conn.subscribe("numbers?n=7", again);
      assert.equal(second.id, first.id); // §5.3: the small id is free again
      await again.done;
      assert.equal(again.items.length, 7);
    });

    test("rule 3.9: request(0) cancels and signals onError locally", async () => {
      const c = collector(1);
      c.onSubscribe = (s) => { c.subscription = s; };
      conn.subscribe("numbers?n=10", c);
      c.subscription.request(0);
      await c.done;
      assert.ok(c.error instanceof RangeError, String(c.error));
      assert.equal(c.error.message, "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got 0");
    });
  });
}

test("close: goodbye both ways; open subscriptions end with ConnectionClosedError", { skip }, async () => {
  const server = await serve("tcp://127.0.0.1:0", ["--publishers", FIXTURE]);
  try {
    const conn = await connect(server.url);
    const c = collector(1);
    conn.subscribe("counted?n=1000000", c);
    await conn.request("numbers?n=1"); // the stream above is open by now
    assert.equal(await conn.close("bye"), null); // an orderly close
    await c.done;
    assert.ok(c.error instanceof ConnectionClosedError);
    assert.equal(conn.state, "CLOSED");
  } finally {
    await server.stop();
  }
});

test("a server that goes away ends the connection with ConnectionClosedError (§9.3)", { skip }, async () => {
  const server = await serve("tcp://127.0.0.1:0", ["--publishers", FIXTURE]);
  const conn = await connect(server.url);
  await conn.ready;
  await server.stop();
  const error = await conn.closed;
  assert.ok(error instanceof ConnectionClosedError, String(error));
});

test("connect refuses what it cannot open, naming it", async () => {
  await assert.rejects(connect("http://127.0.0.1:1/"), (e) => e instanceof TypeError && /unsupported URL scheme 'http'/.test(e.message));
  await assert.rejects(connect("tcp://127.0.0.1"), (e) => e instanceof TypeError && /has no port/.test(e.message));
  await assert.rejects(connect("tcp://127.0.0.1:1"), (e) => e instanceof ConnectionClosedError && /cannot connect/.test(e.message));
});
