// rsio.js's Connection against a scripted server: a fake transport that records what the client
// sends and lets each test feed the server's bytes. Every rule of PROTOCOL.md §10 the client
// checks, without a network.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Connection, ConnectionClosedError, ProtocolError, RemoteStreamError, UNBOUNDED } from "../src/rsio.js";
import { FrameDecoder, encodeFrame } from "../src/rsio-wire.js";
import { FakeTransport, ManualClock, recorder, tick } from "./support.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [] };

function open(options = {}) {
  const ws = new FakeTransport();
  const conn = new Connection(ws, { onerror: () => {}, ...options });
  return { ws, conn };
}

const KEEPALIVE_HELLO = { ...HELLO, extensions: [1, 2] };
const ping = (payload) => ({ type: "extension", code: 0x80, payload });

const el = (subscriber, text) => ({ type: "onNext", subscriber, element: new TextEncoder().encode(text) });

async function violation(feed, section, initial = 2) {
  const { ws, conn } = open();
  const r = recorder(initial);
  conn.subscribe("x", r);
  await tick();
  feed(ws);
  const error = await conn.closed;
  assert.ok(error instanceof ProtocolError, String(error));
  assert.equal(error.section, section);
  const goodbye = ws.sent.at(-1);
  assert.equal(goodbye.type, "goodbye");
  assert.ok(goodbye.reason.endsWith(`(PROTOCOL.md ${section})`), goodbye.reason);
  assert.ok(ws.closed);
  assert.equal(r.error, error);
  return goodbye.reason;
}

test("hello and an optimistic subscribe go out in one message, initialDemand from onSubscribe", async () => {
  const { ws, conn } = open();
  conn.subscribe("ticks", recorder(5));
  await tick();
  assert.deepEqual(ws.sent, [
    { type: "clientHello", version: 0, extensions: [1, 4, 5, 6, 7, 8, 9] }, // keepalive (§14), content-types (§17), metadata (§18), error-codes (§19), messages (§20), channels (§21), input-parts (§21.6)
    { type: "subscribe", publisher: "ticks", subscriber: 1, initial_demand: 5n },
  ]);
});

test("elements within demand are delivered; request adds up; onComplete ends", async () => {
  const { ws, conn } = open();
  const r = recorder(1);
  const sub = conn.subscribe("x", r);
  await tick();
  ws.feed(HELLO, { type: "onSubscribe", subscriber: 1, element_size: 0 }, el(1, "a"));
  assert.equal(sub.outstanding, 0n);
  sub.request(2);
  sub.request(UNBOUNDED); // saturates
  assert.equal(sub.outstanding, UNBOUNDED);
  ws.feed(el(1, "b"), el(1, "c"), { type: "onComplete", subscriber: 1 });
  assert.deepEqual(r.items, ["a", "b", "c"]);
  assert.ok(r.completed);
  await tick();
  assert.deepEqual(ws.sent.slice(2).map((f) => f.demand), [2n, UNBOUNDED]);
});

test("split parts are joined; the first part takes the demand", async () => {
  const { ws, conn } = open();
  const r = recorder(1);
  const sub = conn.subscribe("x", r);
  const part = (type, text) => ({ type, subscriber: 1, element_id: 4, data: new TextEncoder().encode(text) });
  ws.feed(HELLO, { type: "onSubscribe", subscriber: 1, element_size: 0 }, part("onNextPart", "ab"));
  assert.equal(sub.outstanding, 0n);
  ws.feed(part("onNextPart", "cd"), part("onNextLastPart", "e"));
  assert.deepEqual(r.items, ["abcde"]);
  assert.equal(sub.outstanding, 0n);
});

test("after cancel, elements in flight are dropped and the acknowledging onComplete frees the id", async () => {
  const { ws, conn } = open();
  const r = recorder(3);
  const sub = conn.subscribe("x", r);
  ws.feed(HELLO, { type: "onSubscribe", subscriber: 1, element_size: 0 }, el(1, "a"));
  sub.cancel();
  ws.feed(el(1, "b"), el(1, "c"), { type: "onComplete", subscriber: 1 });
  assert.deepEqual(r.items, ["a"]);
  assert.equal(r.completed, false);
  assert.equal(sub.state, "CLOSED");
  assert.equal(conn.subscribe("y", recorder()).id, 1);
});

test("onError from the publisher is a RemoteStreamError with its text", async () => {
  const { ws, conn } = open();
  const r = recorder(1);
  conn.subscribe("x", r);
  ws.feed(HELLO, { type: "onError", subscriber: 1, error: "unknown publisher 'x'" });
  assert.ok(r.error instanceof RemoteStreamError);
  assert.equal(r.error.message, "unknown publisher 'x'");
});

test("the server's goodbye is answered; subscribers get ConnectionClosedError", async () => {
  const { ws, conn } = open();
  const r = recorder(1);
  conn.subscribe("x", r);
  ws.feed(HELLO, { type: "goodbye", reason: "server closing" });
  const error = await conn.closed;
  assert.ok(error instanceof ConnectionClosedError && /server closing/.test(error.message));
  assert.equal(ws.sent.at(-1).type, "goodbye");
  assert.equal(r.error, error);
});

test("simultaneous goodbyes: ours crossed theirs, no second goodbye, an orderly close", async () => {
  const { ws, conn } = open();
  ws.feed(HELLO);
  const closed = conn.close("bye");
  ws.feed({ type: "goodbye", reason: "bye too" });
  assert.equal(await closed, null);
  assert.deepEqual(ws.sent.filter((f) => f.type === "goodbye").map((f) => f.reason), ["bye"]);
});

test("bytes split anywhere across messages make the same frames", async () => {
  const { ws, conn } = open();
  const r = recorder(3);
  conn.subscribe("x", r);
  const stream = [HELLO, { type: "onSubscribe", subscriber: 1, element_size: 0 }, el(1, "one"), el(1, "two"),
    { type: "onComplete", subscriber: 1 }].map((f) => encodeFrame(f));
  const bytes = Uint8Array.from(stream.flatMap((b) => [...b]));
  for (let at = 0; at < bytes.length; at += 3) ws.feed(bytes.subarray(at, at + 3));
  assert.deepEqual(r.items, ["one", "two"]);
  assert.ok(r.completed);
});

test("§4.1: a first message other than serverHello", () =>
  violation((ws) => ws.feed({ type: "onSubscribe", subscriber: 1, element_size: 0 }), "§4.1"));
test("§4.1: a second serverHello", () => violation((ws) => ws.feed(HELLO, HELLO), "§4.1"));
test("§4.2: another version", () => violation((ws) => ws.feed({ ...HELLO, version: 1 }), "§4.2"));

// version 1 and 65 extension ids, one over maxExtensions=64 (§11): judged by its version (§4.2)
// whatever follows the version byte, fed whole or in pieces cut anywhere, at either side
const otherVersionHello = (code) => Uint8Array.of(code, 1, 65, ...Array.from({ length: 65 }, (_, i) => i + 1));

for (const role of ["client", "server"]) {
  test(`§4.2 before §11: a ${role} fed another version's hello with too many extensions names the version`, async () => {
    const data = otherVersionHello(role === "client" ? 0x02 : 0x01);
    const feeds = [[data], Array.from(data, (b) => Uint8Array.of(b))];
    for (let cut = 1; cut < data.length; cut++) feeds.push([data.subarray(0, cut), data.subarray(cut)]);
    for (const pieces of feeds) {
      const ws = new FakeTransport();
      const conn = new Connection(ws, { role, onerror: () => {} });
      for (const piece of pieces) ws.feed(piece);
      const error = await conn.closed;
      assert.ok(error instanceof ProtocolError, String(error));
      assert.equal(error.section, "§4.2", error.message);
      const goodbye = ws.sent.at(-1);
      assert.equal(goodbye.type, "goodbye");
      assert.ok(/version 1/.test(goodbye.reason) && goodbye.reason.endsWith("(PROTOCOL.md §4.2)"), goodbye.reason);
      assert.ok(ws.closed);
    }
  });
}

test("a version-0 hello still has its extension list limited (§11)", () => {
  const decoder = new FrameDecoder();
  decoder.push(Uint8Array.of(0x01, 0, 65, ...Array.from({ length: 65 }, (_, i) => i + 1)));
  assert.throws(() => decoder.next(), (e) => e instanceof ProtocolError && e.section === "§11");
});
test("§4.4: an extension message", () =>
  violation((ws) => ws.feed(HELLO, { type: "extension", code: 0x80, payload: new Uint8Array(8) }), "§4.4"));
test("§5.2: onNext before onSubscribe", () => violation((ws) => ws.feed(HELLO, el(1, "a")), "§5.2"));
test("§5.2: a second onSubscribe", () => violation((ws) => ws.feed(HELLO,
  { type: "onSubscribe", subscriber: 1, element_size: 0 }, { type: "onSubscribe", subscriber: 1, element_size: 0 }), "§5.2"));
test("§5.2: onComplete for an id never subscribed", () =>
  violation((ws) => ws.feed(HELLO, { type: "onComplete", subscriber: 7 }), "§5.2"));
test("§8: onComplete with an unfinished split element", () => violation((ws) => ws.feed(HELLO,
  { type: "onSubscribe", subscriber: 1, element_size: 0 },
  { type: "onNextPart", subscriber: 1, element_id: 0, data: Uint8Array.of(1) },
  { type: "onComplete", subscriber: 1 }), "§8"));
test("§6.3: elements beyond the outstanding demand", async () => {
  const reason = await violation((ws) => ws.feed(HELLO, { type: "onSubscribe", subscriber: 1, element_size: 0 },
    el(1, "a"), el(1, "b"), el(1, "c")), "§6.3");
  assert.match(reason, /^1 element\(s\) for subscriber 1 exceed the outstanding demand of 0 /);
});
test("§6.3: a packed frame whose count exceeds the demand", () => violation((ws) => ws.feed(HELLO,
  { type: "onSubscribe", subscriber: 1, element_size: 2 },
  { type: "onNextPacked", subscriber: 1, count: 3, elements: new Uint8Array(6), elementSize: 2 }), "§6.3"));
test("§7: a split element not matching elementSize", () => violation((ws) => ws.feed(HELLO,
  { type: "onSubscribe", subscriber: 1, element_size: 4 },
  { type: "onNextLastPart", subscriber: 1, element_id: 0, data: Uint8Array.of(1, 2) }), "§7"));
test("§3: a reserved type byte", () => violation((ws) => ws.feed(HELLO, Uint8Array.of(0x0e)), "§3"));
test("§11: more partial elements than max_parts_in_flight", () => violation((ws) => {
  ws.feed(HELLO, { type: "onSubscribe", subscriber: 1, element_size: 0 });
  for (let i = 0; i <= 64; i++) ws.feed({ type: "onNextPart", subscriber: 1, element_id: i, data: Uint8Array.of(i) });
}, "§11", 100));
test("§9.3: the input ends inside a message", async () => {
  const { ws, conn } = open();
  ws.feed(HELLO, Uint8Array.of(0x08, 0x01, 0x05, 0x61));
  ws.close();
  const error = await conn.closed;
  assert.ok(error instanceof ProtocolError && error.section === "§9.3");
});

test("a subscribe from the server for a name this client does not offer is refused with onError", async () => {
  const { ws, conn } = open();
  ws.feed(HELLO, { type: "subscribe", publisher: "rstreams/upload", subscriber: 3, initial_demand: 1n });
  await tick();
  const refusal = ws.sent.at(-1);
  assert.equal(refusal.type, "onError");
  assert.equal(refusal.subscriber, 3);
  assert.equal(refusal.error, "no publisher named 'rstreams/upload'");
  assert.equal(conn.state, "OPEN");
});

test("keepalive active: a ping is answered with a pong carrying its 8 bytes; pongs are counted", async () => {
  const { ws, conn } = open({ keepalive: null });
  ws.feed(KEEPALIVE_HELLO, ping(Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8)));
  ws.feed({ type: "extension", code: 0x81, payload: new Uint8Array(8) });
  await tick();
  assert.deepEqual([...conn.extensions], [1]); // 2 (auth) was not offered
  assert.deepEqual(ws.sent.at(-1), { type: "extension", code: 0x81, payload: Uint8Array.of(1, 2, 3, 4, 5, 6, 7, 8) });
  assert.equal(conn.pongsReceived, 1);
  assert.equal(conn.state, "OPEN");
});

test("keepalive active: the client pings after the interval without input, at most once per interval", async () => {
  const clock = new ManualClock();
  const { ws, conn } = open({ keepalive: 15, clock });
  ws.feed(KEEPALIVE_HELLO);
  clock.advance(14_999);
  await tick();
  assert.equal(ws.of("extension", 0x80).length, 0);
  clock.advance(1);
  await tick();
  assert.equal(ws.of("extension", 0x80).length, 1);
  assert.equal(ws.of("extension", 0x80)[0].payload.length, 8);
  clock.advance(10_000);
  ws.feed({ type: "extension", code: 0x81, payload: new Uint8Array(8) }); // input at 25 s
  clock.advance(14_999); // 39.999 s: 14.999 s after the last input
  await tick();
  assert.equal(conn.pingsSent, 1);
  clock.advance(1);
  await tick();
  assert.equal(conn.pingsSent, 2);
  const closed = conn.close();
  ws.feed({ type: "goodbye", reason: "" });
  assert.equal(await closed, null);
  assert.equal(clock.timers.size, 0); // no timer left behind
});

test("keepalive: null answers pings but never sends one", async () => {
  const clock = new ManualClock();
  const { ws, conn } = open({ keepalive: null, clock });
  ws.feed(KEEPALIVE_HELLO);
  clock.advance(3_600_000);
  await tick();
  assert.equal(conn.pingsSent, 0);
  assert.equal(ws.of("extension", 0x80).length, 0);
});

test("§14.1: a ping whose payload is not 8 bytes", () =>
  violation((ws) => ws.feed(KEEPALIVE_HELLO, ping(new Uint8Array(7))), "§14.1"));
test("§4.4: an extension type nobody owns, even with keepalive active", () =>
  violation((ws) => ws.feed(KEEPALIVE_HELLO, { type: "extension", code: 0xf0, payload: new Uint8Array(0) }), "§4.4"));


test("§14.2: an accepting endpoint's idle timeout: a goodbye after silence; input and output the peer takes count, its pings do not", async () => {
  const clock = new ManualClock();
  const ws = new FakeTransport();
  let emit = null;
  const conn = new Connection(ws, { role: "server", idleTimeout: 1, keepalive: 0.4, clock, onerror: () => {},
    publishers: { one: { subscribe(s) { emit = () => s.onNext("x"); s.onSubscribe({ request() {}, cancel() {} }); } } } });
  ws.feed({ type: "clientHello", version: 0, extensions: [1] });
  await tick();
  assert.equal(ws.sent[0].type, "serverHello");
  clock.advance(900);
  ws.feed({ type: "subscribe", publisher: "one", subscriber: 1, initial_demand: 1n }); // input at 0.9 s
  await tick();
  clock.advance(600);
  emit(); // at 1.5 s: output the peer takes
  await tick();
  clock.advance(999); // 2.499 s: our pings went out (1.3 s, 1.7 s, 2.1 s), and they are not activity
  await tick();
  assert.ok(conn.pingsSent >= 3, `${conn.pingsSent} pings`);
  assert.equal(conn.state, "OPEN");
  clock.advance(1);
  await tick();
  assert.equal(conn.state, "CLOSED");
  assert.equal(ws.sent.at(-1).reason, "idle timeout: nothing received for 1 s (PROTOCOL.md §14.2)");
});

test("§14.2: a client's idleTimeout (as rstreams' connect(idle_timeout)): a server that stops answering pings ends its streams", async () => {
  const clock = new ManualClock();
  const ws = new FakeTransport();
  const conn = new Connection(ws, { idleTimeout: 20, keepalive: 15, clock, onerror: () => {} });
  const r = recorder(1);
  conn.subscribe("x", r);
  ws.feed({ type: "serverHello", version: 0, extensions: [1] });
  await tick();
  clock.advance(15_000); // our ping; the server answers it: alive
  await tick();
  ws.feed({ type: "extension", code: 0x81, payload: ws.of("extension", 0x80).at(-1).payload });
  clock.advance(19_999); // then nothing comes back, whatever we send
  await tick();
  assert.equal(conn.state, "OPEN");
  clock.advance(1);
  await tick();
  assert.equal(ws.sent.at(-1).reason, "idle timeout: nothing received for 20 s (PROTOCOL.md §14.2)");
  assert.equal(r.error?.name, "ConnectionClosedError");
  assert.match(r.error.message, /idle timeout/);
});
