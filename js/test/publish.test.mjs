// Serving publishers to the peer (PROTOCOL.md §5, §6, §8) against a scripted peer: answers,
// refusals, demand drawn only within the peer's demand and the transport's room, cancel.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Connection, ProtocolError, UNBOUNDED, fixedSize, fromAsyncIterable, fromIterable } from "../src/rsio.js";
import { FakeTransport, tick } from "./support.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [] };
const text = new TextDecoder();
const subscribe = (publisher, subscriber, demand) =>
  ({ type: "subscribe", publisher, subscriber, initial_demand: BigInt(demand) });
const request = (subscriber, demand) => ({ type: "request", subscriber, demand: BigInt(demand) });

/** A Publisher that records every request and emits 0, 1, 2, ... up to `n` as asked. */
function counting(n = Infinity) {
  const log = { requests: [], emitted: 0, cancelled: false, subscribers: 0 };
  const publisher = {
    subscribe(subscriber) {
      log.subscribers += 1;
      let outstanding = 0;
      let emitting = false;
      subscriber.onSubscribe({
        request(k) {
          log.requests.push(k);
          outstanding += k;
          if (emitting) return;
          emitting = true;
          while (outstanding > 0 && !log.cancelled) {
            if (log.emitted >= n) { subscriber.onComplete(); break; }
            outstanding -= 1;
            subscriber.onNext(String(log.emitted++));
          }
          emitting = false;
        },
        cancel() { log.cancelled = true; },
      });
    },
  };
  return { publisher, log };
}

function open(publishers) {
  const ws = new FakeTransport();
  const errors = [];
  const conn = new Connection(ws, { publishers, onerror: (e) => errors.push(e) });
  ws.feed(HELLO);
  return { ws, conn, errors };
}

const elements = (ws, id) => ws.sent.filter((f) => f.type === "onNext" && f.subscriber === id).map((f) => text.decode(f.element));

test("a subscribe is answered with onSubscribe; elements follow the peer's demand exactly", async () => {
  const { publisher, log } = counting(10);
  const { ws } = open({ numbers: publisher });
  ws.feed(subscribe("numbers", 1, 3));
  await tick();
  assert.deepEqual(ws.sent.slice(1, 2), [{ type: "onSubscribe", subscriber: 1, element_size: 0 }]);
  assert.deepEqual(elements(ws, 1), ["0", "1", "2"]);
  assert.equal(log.emitted, 3); // never more than the peer asked for
  ws.feed(request(1, 2));
  await tick();
  assert.deepEqual(elements(ws, 1), ["0", "1", "2", "3", "4"]);
  ws.feed(request(1, 100));
  await tick();
  assert.equal(elements(ws, 1).length, 10);
  assert.deepEqual(ws.sent.at(-1), { type: "onComplete", subscriber: 1 });
});

test("unbounded demand is drawn from the publisher in bounded pulls, not passed through", async () => {
  const { publisher, log } = counting(1000);
  const { ws } = open({ numbers: publisher });
  ws.feed(subscribe("numbers", 1, UNBOUNDED));
  for (let i = 0; i < 100 && elements(ws, 1).length < 1000; i++) await tick();
  assert.equal(elements(ws, 1).length, 1000);
  assert.ok(Math.max(...log.requests) <= 32, `largest request ${Math.max(...log.requests)}`);
});

test("a transport that takes no more writes stops production until it drains", async () => {
  const { publisher, log } = counting();
  const { ws, conn } = open({ numbers: publisher });
  ws.feed(subscribe("numbers", 1, UNBOUNDED));
  await tick();
  ws.writable = false; // the socket's buffer is full
  await tick();
  const stalled = log.emitted;
  for (let i = 0; i < 20; i++) await tick();
  assert.equal(log.emitted, stalled, "no element produced while the transport is full");
  assert.ok(ws.waitingForDrain >= 1);
  assert.ok(conn.served[0].wanted === UNBOUNDED);
  ws.drain();
  await tick();
  assert.ok(log.emitted > stalled);
  conn.close();
});

test("cancel: the local publisher is cancelled and the cancel acknowledged with onComplete (§5.4)", async () => {
  const { publisher, log } = counting();
  const { ws, conn } = open({ numbers: publisher });
  ws.feed(subscribe("numbers", 4, 2), { type: "cancel", subscriber: 4 });
  await tick();
  assert.ok(log.cancelled);
  assert.deepEqual(ws.sent.at(-1), { type: "onComplete", subscriber: 4 });
  assert.equal(conn.served.length, 0);
  ws.feed({ type: "cancel", subscriber: 4 }, request(4, 1)); // crossed: ignored
  await tick();
  assert.equal(ws.of("onComplete").length, 1);
  ws.feed(subscribe("numbers", 4, 1)); // the id is free again
  await tick();
  assert.equal(log.subscribers, 2);
});

test("refusals: an unknown name; rule 3.9 (request 0); the connection goes on", async () => {
  const { publisher, log } = counting();
  const { ws, conn } = open({ numbers: publisher });
  ws.feed(subscribe("nope", 1, 1), subscribe("numbers", 2, 0), request(2, 0));
  await tick();
  const errors = ws.of("onError");
  assert.deepEqual(errors.map((f) => f.subscriber), [1, 2]);
  assert.equal(errors[0].error, "no publisher named 'nope'");
  assert.match(errors[1].error, /^rule 3\.9: request\(0\) is illegal \(PROTOCOL\.md §6\.2\)$/);
  assert.ok(log.cancelled);
  assert.equal(conn.state, "OPEN");
});

test("§5.3: a subscribe for an id that is still open ends the connection", async () => {
  const { publisher } = counting();
  const { ws, conn } = open({ numbers: publisher });
  ws.feed(subscribe("numbers", 1, 0), subscribe("numbers", 1, 0));
  const error = await conn.closed;
  assert.ok(error instanceof ProtocolError && error.section === "§5.3");
  assert.match(ws.sent.at(-1).reason, /^subscribe reuses subscriber id 1 before its subscription ended /);
});

test("patterns and query parameters reach the factory; its errors refuse that subscribe only", async () => {
  const seen = [];
  const { ws, errors } = open({
    "sensors/{id}": (params, path) => { seen.push([params, path]); return fromIterable([`sensor ${params.id}`]); },
    broken: () => { throw new Error("no such device"); },
    odd: () => 42,
  });
  ws.feed(subscribe("sensors/k%C3%BCche?from=3&unit=C", 1, 5), subscribe("broken", 2, 1), subscribe("odd", 3, 1));
  await tick();
  assert.deepEqual(seen, [[{ from: "3", unit: "C", id: "küche" }, "sensors/k%C3%BCche"]]);
  assert.deepEqual(elements(ws, 1), ["sensor küche"]);
  const refusals = ws.of("onError").map((f) => [f.subscriber, f.error]);
  assert.deepEqual(refusals, [[2, "publisher 'broken' could not be created: its factory failed (PROTOCOL.md §19.2)"],
    [3, "publisher 'odd' could not be created: its factory failed (PROTOCOL.md §19.2)"]]);
  assert.deepEqual(ws.of("onSubscribe").map((f) => f.subscriber), [1]); // refusals, not streams
  // the thrown error went to onerror, and so did what the factory returned instead of a Publisher
  assert.equal(errors.length, 2);
  assert.match(String(errors[1]), /TypeError: the factory for 'odd' returned number, not a Publisher/);
});

test("elements: strings as UTF-8, bytes as they are, anything else ends the stream with onError", async () => {
  const { ws } = open({ mixed: () => fromIterable(["é", Uint8Array.of(1, 2), new Uint16Array([0x0201]), { x: 1 }, "never"]) });
  ws.feed(subscribe("mixed", 1, 10));
  await tick();
  const sent = ws.of("onNext").map((f) => [...f.element]);
  assert.deepEqual(sent, [[0xc3, 0xa9], [1, 2], [1, 2]]);
  assert.match(ws.sent.at(-1).error, /publisher 'mixed' emitted Object; elements are bytes/);
});

test("a publisher's onError text: `Name: message` for every error, and for a value that is not one", async () => {
  class DeviceError extends Error { constructor(message) { super(message); this.name = "DeviceError"; } }
  const failWith = (error) => ({ subscribe(s) { s.onSubscribe({ request() { s.onError(error); }, cancel() {} }); } });
  const { ws } = open({ type: failWith(new TypeError("bad")), own: failWith(new DeviceError("gone")),
    empty: failWith(new RangeError()), text: failWith("just text") });
  ws.feed(subscribe("type", 1, 1), subscribe("own", 2, 1), subscribe("empty", 3, 1), subscribe("text", 4, 1));
  await tick();
  assert.deepEqual(ws.of("onError").map((f) => f.error), ["TypeError: bad", "DeviceError: gone", "RangeError: ",
    "Error: just text"]);
});

/** Let turns of the event loop pass until `done()` (at most `turns` of them). */
async function until(done, turns = 200) {
  for (let i = 0; i < turns && !done(); i++) await tick();
  assert.ok(done(), `not within ${turns} turns`);
}

test("an element above splitThreshold goes out as parts that join to it (§8)", async () => {
  const big = Uint8Array.from({ length: 200_000 }, (_, i) => i & 0xff);
  const { ws } = open({ big: () => fromIterable([big, "after"]) });
  ws.feed(subscribe("big", 1, 2));
  await until(() => ws.of("onComplete").length === 1);
  const types = ws.sent.slice(2).map((f) => f.type);
  assert.deepEqual(types, ["onNextPart", "onNextPart", "onNextPart", "onNextLastPart", "onNext", "onComplete"]);
  const joined = Uint8Array.from(ws.sent.slice(2, 6).flatMap((f) => [...f.data]));
  assert.deepEqual(joined, big);
  assert.ok(ws.sent.slice(2, 6).every((f) => f.data.length <= 64 * 1024 && f.element_id === 0));
});

test("parts of different subscriptions go round-robin, and a small stream is not stalled by them (§8)", async () => {
  const big = new Uint8Array(1024 * 1024); // 16 parts
  const { ws } = open({ big: () => fromIterable([big]), small: () => fromIterable(["a", "b", "c"]) });
  ws.feed(subscribe("big", 1, 1), subscribe("big", 2, 1), subscribe("small", 3, 3));
  await until(() => ws.of("onComplete").length === 3);
  const order = ws.sent.filter((f) => f.type.startsWith("onNext")).map((f) => f.subscriber);
  const firstLast = ws.sent.findIndex((f) => f.type === "onNextLastPart");
  const smallDone = ws.sent.findIndex((f) => f.type === "onComplete" && f.subscriber === 3);
  assert.ok(smallDone < firstLast, "the small stream finished before either large element");
  const parts = order.filter((id) => id !== 3);
  assert.deepEqual(parts.slice(0, 6), [1, 2, 1, 2, 1, 2]);
  assert.equal(parts.length, 32);
});

test("a cancel in the middle of a split element drops its other parts and is acknowledged", async () => {
  const { ws } = open({ big: () => fromIterable([new Uint8Array(1024 * 1024)]) });
  ws.feed(subscribe("big", 1, 1));
  await until(() => ws.of("onNextPart").length >= 2);
  ws.feed({ type: "cancel", subscriber: 1 });
  await until(() => ws.of("onComplete").length === 1);
  const partsThen = ws.of("onNextPart").length;
  for (let i = 0; i < 10; i++) await tick();
  assert.equal(ws.of("onNextPart").length, partsThen);
  assert.equal(ws.of("onNextLastPart").length, 0);
});

test("a publisher's onError becomes the peer's onError; the connection's end cancels publishers", async () => {
  const { publisher, log } = counting();
  const failing = { subscribe(s) { s.onSubscribe({ request() { s.onError(new Error("disk gone")); }, cancel() {} }); } };
  const { ws } = open({ failing, numbers: publisher });
  ws.feed(subscribe("failing", 1, 1), subscribe("numbers", 2, 0));
  await tick();
  // the text is the error's name and message (PROTOCOL.md §10), as Python's and Java's servers send
  assert.deepEqual(ws.of("onError").map((f) => f.error), ["Error: disk gone"]);
  ws.feed({ type: "goodbye", reason: "" });
  await tick();
  assert.ok(log.cancelled);
});

test("fromIterable honours rule 3.9 and re-entrant requests; fromAsyncIterable pulls only on demand", async () => {
  const got = [];
  let sub;
  fromIterable([1, 2, 3]).subscribe({
    onSubscribe(s) { sub = s; s.request(1); },
    onNext(x) { got.push(x); sub.request(1); }, // re-entrant: served by the same loop
    onComplete() { got.push("done"); },
  });
  assert.deepEqual(got, [1, 2, 3, "done"]);
  let error = null;
  fromIterable([1]).subscribe({ onSubscribe(s) { s.request(0); }, onError(e) { error = e; } });
  assert.ok(error instanceof RangeError, String(error));
  assert.equal(error.message, "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got 0");
  error = null;
  fromAsyncIterable((async function* one() { yield 1; })()).subscribe({ onSubscribe(s) { s.request(-1); }, onError(e) { error = e; } });
  assert.equal(error?.message, "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got -1");
  let pulled = 0;
  async function* source() { for (let i = 0; i < 5; i++) { pulled++; yield i; } }
  const seen = [];
  let asub;
  fromAsyncIterable(source()).subscribe({ onSubscribe(s) { asub = s; s.request(2); }, onNext(x) { seen.push(x); } });
  for (let i = 0; i < 5; i++) await tick();
  assert.deepEqual(seen, [0, 1]);
  assert.ok(pulled <= 3, `pulled ${pulled}`); // a generator runs to its next yield at most
  asub.cancel();
});

test("fixedSize: onSubscribe carries the size, a turn's elements go out packed (§7), a wrong size ends the stream", async () => {
  const word = (i) => Uint8Array.of(0, 0, 0, i);
  const { ws } = open({
    words: () => fixedSize(fromIterable(Array.from({ length: 10 }, (_, i) => word(i))), 4),
    odd: () => fixedSize(fromIterable([word(1), Uint8Array.of(1, 2)]), 4),
  });
  ws.feed(subscribe("words", 1, 6));
  await tick();
  assert.deepEqual(ws.sent[1], { type: "onSubscribe", subscriber: 1, element_size: 4 });
  const [packed] = ws.of("onNextPacked");
  assert.equal(packed.count, 6);
  assert.deepEqual([...packed.elements].filter((_, i) => i % 4 === 3), [0, 1, 2, 3, 4, 5]);
  ws.feed(request(1, 10));
  await tick();
  assert.deepEqual(ws.sent.slice(-2).map((f) => [f.type, f.count]), [["onNextPacked", 4], ["onComplete", undefined]]);
  ws.feed(subscribe("odd", 2, 5));
  await tick();
  const forOdd = ws.sent.filter((f) => f.subscriber === 2).map((f) => f.type);
  assert.deepEqual(forOdd, ["onSubscribe", "onNext", "onError"]); // the good element first, then the error
  assert.match(ws.sent.at(-1).error, /emitted 2 bytes; its elementSize is 4 \(PROTOCOL\.md §7\)/);
  assert.throws(() => fixedSize(fromIterable([]), 0), RangeError);
});
