// rsio.js end to end against a real Python RS.io server over ws:// (tests/web/test_js_client.py
// starts it and passes RSIO_URL and RSIO_BAD_URL; without them these tests skip).
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ConnectionClosedError, ProtocolError, RemoteStreamError, UNBOUNDED, connect,
} from "../../../src/rstreams/web/static/rsio.js";

const URL_ = process.env.RSIO_URL;
const BAD_URL = process.env.RSIO_BAD_URL;
const IDLE_URL = process.env.RSIO_IDLE_URL; // idle timeout 1 s, and the server never pings
const skip = URL_ === undefined ? "RSIO_URL is not set: run through tests/web/test_js_client.py" : false;
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

async function withConnection(body) {
  const conn = await connect(URL_);
  try {
    await body(conn);
  } finally {
    await conn.close("test done");
  }
}

test("subscribe with request(n) batches: every element in order, then onComplete", { skip }, () =>
  withConnection(async (conn) => {
    const c = collector(10);
    conn.subscribe("numbers?n=100", c);
    await c.done;
    assert.equal(c.error, null);
    assert.ok(c.completed);
    assert.deepEqual(c.items.map((b) => text.decode(b)), Array.from({ length: 100 }, (_, i) => String(i)));
  }));

test("the async iterator reads a stream to its end", { skip }, () =>
  withConnection(async (conn) => {
    const got = [];
    for await (const item of conn.stream("numbers?n=1000", { window: 8, decode: "text" })) got.push(Number(item));
    assert.deepEqual(got, Array.from({ length: 1000 }, (_, i) => i));
  }));

test("a split element (onNextPart ... onNextLastPart) arrives joined", { skip }, () =>
  withConnection(async (conn) => {
    const c = collector(1);
    conn.subscribe("big", c);
    await c.done;
    assert.equal(c.items.length, 1);
    const big = c.items[0];
    assert.equal(big.length, 200_000);
    assert.ok(big.every((b, i) => b === (i & 0xff)));
  }));

test("packed fixed-size elements (onNextPacked) arrive one by one, demand counted in elements", { skip }, () =>
  withConnection(async (conn) => {
    const c = collector(64);
    const sub = conn.subscribe("ints?n=1000", c);
    await c.done;
    assert.equal(c.error, null);
    assert.equal(sub.elementSize, 8);
    const values = c.items.map((b) => Number(new DataView(b.buffer, b.byteOffset, 8).getBigInt64(0, true)));
    assert.deepEqual(values, Array.from({ length: 1000 }, (_, i) => i));
  }));

test("backpressure: the server's publisher never holds more demand than the page's window", { skip }, () =>
  withConnection(async (conn) => {
    const window = 4;
    let taken = 0;
    for await (const item of conn.stream("counted?n=100000", { window, decode: "text" })) {
      assert.equal(Number(item), taken);
      taken += 1;
      await new Promise((resolve) => setImmediate(resolve)); // a consumer slower than the network
      if (taken === 300) break; // leaving the loop cancels
    }
    const [statsBytes] = await all(conn, "counted-stats");
    const stats = JSON.parse(text.decode(statsBytes));
    assert.ok(stats.max_outstanding <= window, `publisher held ${stats.max_outstanding} > ${window}`);
    assert.ok(stats.requested <= taken + window, `requested ${stats.requested} for ${taken} taken`);
    assert.ok(stats.emitted >= taken && stats.emitted <= taken + window, `emitted ${stats.emitted}`);
  }));

async function all(conn, name) {
  const out = [];
  for await (const item of conn.stream(name)) out.push(item);
  return out;
}

test("unbounded demand: request(Infinity) and request(2n ** 63n - 1n) mean Long.MAX_VALUE", { skip }, () =>
  withConnection(async (conn) => {
    const c = collector(1);
    c.onSubscribe = (s) => { c.subscription = s; s.request(Infinity); };
    c.onNext = (bytes) => c.items.push(bytes);
    const sub = conn.subscribe("numbers?n=500", c);
    assert.equal(sub.outstanding, UNBOUNDED);
    sub.request(UNBOUNDED); // saturates, sends nothing more
    await c.done;
    assert.equal(c.items.length, 500);
    assert.equal(sub.outstanding, UNBOUNDED);
  }));

test("onError from the publisher and for an unknown name is a RemoteStreamError; the connection stays", { skip }, () =>
  withConnection(async (conn) => {
    await assert.rejects(all(conn, "fail"), (e) => e instanceof RemoteStreamError && /boom/.test(e.message));
    await assert.rejects(all(conn, "no/such/thing"), (e) => e instanceof RemoteStreamError && /no\/such\/thing/.test(e.message));
    assert.equal((await all(conn, "numbers?n=3")).length, 3);
  }));

test("cancel: acknowledged by onComplete, then the id is reused", { skip }, () =>
  withConnection(async (conn) => {
    const c = collector(5);
    let cancelled = null;
    c.onNext = (bytes) => { c.items.push(bytes); if (c.items.length === 3) c.subscription.cancel(); };
    const first = conn.subscribe("numbers?n=1000000", c);
    cancelled = first;
    await waitFor(() => first.state === "CLOSED"); // the acknowledging onComplete arrived
    assert.equal(c.items.length, 3); // elements in flight after cancel were dropped quietly
    assert.equal(c.completed, false);
    assert.equal(c.error, null);
    const again = collector(5);
    const second = conn.subscribe("numbers?n=7", again);
    assert.equal(second.id, cancelled.id); // §5.3: the small id is free again
    await again.done;
    assert.equal(again.items.length, 7);
  }));

test("rule 3.9: request(0) cancels and signals onError", { skip }, () =>
  withConnection(async (conn) => {
    const c = collector(1);
    c.onSubscribe = (s) => { c.subscription = s; };
    const sub = conn.subscribe("numbers?n=10", c);
    sub.request(0);
    await c.done;
    assert.ok(c.error instanceof RangeError && /rule 3\.9/.test(c.error.message));
    await waitFor(() => sub.state === "CLOSED");
  }));

test("close: goodbye both ways; open subscriptions end with ConnectionClosedError", { skip }, async () => {
  const conn = await connect(URL_);
  const c = collector(1);
  conn.subscribe("counted?n=1000000", c);
  await waitFor(() => c.items.length > 0);
  const reason = await conn.close("bye");
  assert.equal(reason, null); // an orderly close
  assert.ok(c.error instanceof ConnectionClosedError);
  assert.equal(conn.state, "CLOSED");
});

for (const [section, what] of [["§5.2", "an onNext for an id nobody subscribed"], ["§4.4", "an extension message"]]) {
  test(`a server sending ${what} gets a goodbye naming ${section}; subscribers see the ProtocolError`, { skip }, async () => {
    const conn = await connect(`${BAD_URL}${section.slice(1)}`, { onerror: () => {} });
    const c = collector(1);
    conn.subscribe("anything", c);
    const error = await conn.closed;
    assert.ok(error instanceof ProtocolError);
    assert.equal(error.section, section);
    await c.done;
    assert.equal(c.error, error);
  });
}

test("keepalive: a waiting client pings and outlives the server's idle timeout; one that never pings does not", { skip }, async () => {
  const pinging = await connect(IDLE_URL, { keepalive: 0.25 });
  const silent = await connect(IDLE_URL, { keepalive: null });
  const waiting = collector(1);
  pinging.subscribe("counted?n=0", { onSubscribe() {}, onError: (e) => { waiting.error = e; } }); // no demand: silence
  const silentError = await silent.closed; // the server's idle goodbye after 1 s
  assert.ok(silentError instanceof ConnectionClosedError && /idle timeout/.test(silentError.message), String(silentError));
  await new Promise((resolve) => setTimeout(resolve, 1500)); // well past the idle timeout
  assert.equal(pinging.state, "OPEN");
  assert.ok(pinging.extensions.has(1) && pinging.pingsSent >= 2 && pinging.pongsReceived >= 2,
    `pings ${pinging.pingsSent}, pongs ${pinging.pongsReceived}`);
  assert.equal(waiting.error, null);
  assert.equal(await pinging.close(), null);
});

async function waitFor(condition, ms = 5000) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${ms} ms: ${condition}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
