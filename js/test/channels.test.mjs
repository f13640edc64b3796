// Extension channels (PROTOCOL.md §21): conn.channel(name, input) opens a subscription whose
// input streams to the peer within the input demand it grants; against a scripted peer, then
// against a real rstreams server with channel factories.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ExtensionNotOfferedError, ProtocolError, RemoteStreamError, fromIterable } from "../src/rsio.js";
import { concat, encodeVarint } from "../src/rsio-wire.js";
import { scripted, recorder, tick } from "./support.mjs";
import { pythonPeer, skip } from "./servers.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [1, 8] };
const ext = (code, ...parts) => ({ type: "extension", code, payload: concat(parts) });
const inputRequest = (sid, n) => ext(0xa1, encodeVarint(sid), encodeVarint(n));
const inputCancel = (sid) => ext(0xa2, encodeVarint(sid));
const text = new TextDecoder();

/** A Publisher of "0", "1", ... (`limit` of them, then complete) that records what it is asked. */
function counting(limit = Infinity) {
  const source = { requested: 0, emitted: 0, cancelled: false, subscriptions: 0 };
  let resolveCancelled;
  source.whenCancelled = new Promise((resolve) => { resolveCancelled = resolve; });
  source.subscribe = (subscriber) => {
    source.subscriptions += 1;
    let done = false;
    subscriber.onSubscribe({
      request(n) {
        source.requested += Number(n);
        for (let i = 0; i < Number(n) && !done && source.emitted < limit; i++) subscriber.onNext(String(source.emitted++));
        if (!done && source.emitted === limit) {
          done = true;
          subscriber.onComplete();
        }
      },
      cancel() {
        done = true;
        source.cancelled = true;
        resolveCancelled();
      },
    });
  };
  return source;
}

/** The channel messages sent, as [code, subscriber, rest as text]. */
const channelFrames = (ws) => ws.sent.filter((f) => f.type === "extension" && f.code >= 0xa0 && f.code <= 0xa7)
  .map((f) => [f.code, f.payload[0], text.decode(f.payload.subarray(1))]);

test("§21.3: the mark goes right before its subscribe, after the peer's hello; input only within the demand granted", async () => {
  const { ws, conn } = scripted();
  const input = counting(5);
  const out = recorder(4);
  conn.channel("upper", input).subscribe(out);
  await tick();
  assert.deepEqual(ws.sent.map((f) => f.type), ["clientHello"]); // never optimistic (§21.1)
  assert.ok(ws.sent[0].extensions.includes(8));
  ws.feed(HELLO);
  await tick();
  const kinds = ws.sent.slice(1).map((f) => (f.type === "extension" ? f.code : f.type));
  assert.deepEqual(kinds, [0xa0, "subscribe"]);
  assert.equal(ws.sent[2].subscriber, 1);
  assert.equal(ws.sent[2].publisher, "upper");
  assert.equal(input.subscriptions, 1);
  assert.equal(input.requested, 0); // nothing before the first inputRequest
  ws.feed(inputRequest(1, 2));
  await tick();
  assert.equal(input.requested, 2);
  assert.deepEqual(channelFrames(ws), [[0xa0, 1, ""], [0xa3, 1, "0"], [0xa3, 1, "1"]]);
  ws.feed(inputRequest(1, 10));
  await tick();
  assert.deepEqual(channelFrames(ws).slice(3), [[0xa3, 1, "2"], [0xa3, 1, "3"], [0xa3, 1, "4"], [0xa4, 1, ""]]);
  ws.feed({ type: "onSubscribe", subscriber: 1, element_size: 0 }, { type: "onNext", subscriber: 1, element: new TextEncoder().encode("X") });
  await tick();
  assert.deepEqual(out.items, ["X"]); // the output is an ordinary subscription
});

test("§21.4: an unbounded grant still draws the input INPUT_WINDOW elements at a time", async () => {
  const { ws, conn } = scripted();
  const input = counting(200);
  conn.channel("sink", input).subscribe(recorder(1));
  ws.feed(HELLO);
  await tick();
  ws.feed(inputRequest(1, (1n << 63n) - 1n));
  for (let i = 0; i < 10 && !channelFrames(ws).some(([code]) => code === 0xa4); i++) await tick();
  assert.equal(channelFrames(ws).filter(([code]) => code === 0xa3).length, 200);
  assert.equal(channelFrames(ws).at(-1)[0], 0xa4);
});

test("§21.4: a grant while the transport takes no writes waits for its drain", async () => {
  const { ws, conn } = scripted();
  const input = counting();
  conn.channel("sink", input).subscribe(recorder(1));
  ws.feed(HELLO);
  await tick();
  ws.writable = false;
  ws.feed(inputRequest(1, 3));
  await tick();
  assert.equal(input.requested, 0); // the grant is a permission, not a reason to fill buffers (§6.3)
  assert.equal(ws.waitingForDrain, 1);
  ws.drain();
  await tick();
  assert.equal(input.requested, 3);
  assert.equal(channelFrames(ws).filter(([code]) => code === 0xa3).length, 3);
});

test("§21.5: inputCancel cancels the input Publisher and the output goes on; the output's end cancels the input", async () => {
  const { ws, conn } = scripted();
  const first = counting();
  const out = recorder(2);
  conn.channel("a", first).subscribe(out);
  ws.feed(HELLO);
  await tick();
  ws.feed(inputRequest(1, 1), inputCancel(1), inputRequest(1, 5)); // a grant after the cancel is dropped
  await tick();
  assert.ok(first.cancelled);
  assert.equal(first.requested, 1);
  assert.equal(out.error, null);
  assert.equal(conn.subscriptions.length, 1);

  const second = counting();
  const out2 = recorder(1);
  conn.channel("b", second).subscribe(out2);
  await tick();
  ws.feed(inputRequest(2, 1));
  await tick();
  out2.subscription.cancel(); // the output's cancel cancels the input (§21.5), no input message
  await tick();
  assert.ok(second.cancelled);
  assert.deepEqual(ws.of("cancel").map((f) => f.subscriber), [2]);

  const third = counting();
  conn.channel("c", third).subscribe(recorder(1));
  await tick();
  const sid = ws.of("subscribe").at(-1).subscriber;
  ws.feed({ type: "onError", subscriber: sid, error: "gone" }); // the output ended: the input too
  await tick();
  assert.ok(third.cancelled);
  const before = channelFrames(ws).length;
  ws.feed(inputRequest(sid, 3)); // for an id with no channel: dropped quietly
  await tick();
  assert.equal(channelFrames(ws).length, before);
  assert.equal(conn.state, "OPEN");
});

test("§21.5: the input's error reaches the peer as inputError; a too-large element fails the input (§21.2)", async () => {
  const { ws, conn } = scripted({ limits: { maxStringLength: 64 } });
  const failing = {
    subscribe(subscriber) {
      subscriber.onSubscribe({ request() { subscriber.onError(new TypeError("bad input")); }, cancel() {} });
    },
  };
  conn.channel("a", failing).subscribe(recorder(1));
  const big = counting();
  big.subscribe = ((inner) => (subscriber) => inner({ ...subscriber,
    onSubscribe: (s) => subscriber.onSubscribe.call(subscriber, s),
    onNext: () => subscriber.onNext.call(subscriber, "x".repeat(60)) }))(big.subscribe);
  conn.channel("b", big).subscribe(recorder(1));
  ws.feed(HELLO);
  await tick();
  ws.feed(inputRequest(1, 1), inputRequest(2, 1));
  await tick();
  const frames = channelFrames(ws).filter(([code]) => code === 0xa5);
  assert.deepEqual(frames[0], [0xa5, 1, "TypeError: bad input"]);
  assert.match(frames[1][2], /60 bytes: inputNext holds at most max_string_length - 10 = 54 \(PROTOCOL\.md §21\.2\)/);
  assert.ok(big.cancelled);
});

test("§21.1: a peer without the extension: the output fails, saying so, and the input is never subscribed", async () => {
  const { ws, conn } = scripted();
  const input = counting();
  const out = recorder(1);
  conn.channel("upper", input).subscribe(out);
  ws.feed({ ...HELLO, extensions: [1] });
  await tick();
  assert.ok(out.error instanceof ExtensionNotOfferedError && out.error.extension === "channels", String(out.error));
  assert.match(String(out.error), /does not offer extension channels \(id 8\) \(PROTOCOL\.md §21\.1\)/);
  assert.equal(input.subscriptions, 0);
  assert.equal(ws.of("subscribe").length, 0);
});

test("§21.3: a peer's mark qualifies only the subscribe right after it; this client offers no channels", async () => {
  const { ws } = scripted({ publishers: { plain: fromIterable(["p"]) } });
  ws.feed(HELLO, ext(0xa0, encodeVarint(3)), { type: "subscribe", publisher: "plain", subscriber: 3, initial_demand: 1n });
  await tick();
  assert.deepEqual(ws.of("onError").map((f) => [f.subscriber, f.error]), [[3, "no channel named 'plain' (PROTOCOL.md §21.3)"]]);
  ws.feed({ type: "subscribe", publisher: "plain", subscriber: 3, initial_demand: 1n }); // the mark is used up
  await tick();
  assert.equal(ws.of("onNext").length, 1);
});

test("rule 3.9: a served channel's input asked for 0 elements fails its Subscriber with the rule's text", async () => {
  let error = null;
  const { ws } = scripted({ channels: { sink: (input) => {
    input.subscribe({ onSubscribe(s) { s.request(0); }, onError(e) { error = e; } });
    return fromIterable([]);
  } } });
  ws.feed(HELLO, ext(0xa0, encodeVarint(3)), { type: "subscribe", publisher: "sink", subscriber: 3, initial_demand: 1n });
  await tick();
  assert.ok(error instanceof RangeError, String(error));
  assert.equal(error.message, "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got 0");
});

for (const [what, frames, section] of [
  ["a mark followed by a subscribe for another id", [ext(0xa0, encodeVarint(4)),
    { type: "subscribe", publisher: "x", subscriber: 5, initial_demand: 1n }], "§21.3"],
  ["two marks before one subscribe", [ext(0xa0, encodeVarint(4)), ext(0xa0, encodeVarint(4))], "§21.3"],
  ["an inputRequest of 0", [inputRequest(1, 0)], "§21.2"],
  ["an inputCancel with bytes after its subscriber", [ext(0xa2, encodeVarint(1), Uint8Array.of(0))], "§21.2"],
  ["a reserved type of extension channels", [ext(0xa6)], "§4.4"],
]) {
  test(`${what} is a connection error citing ${section}`, async () => {
    const { ws, conn } = scripted();
    ws.feed(HELLO, ...frames);
    const error = await conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === section, String(error));
  });
}

// upper: the echo transform; hold?tag=T: takes one input element and keeps the output open
// (what it saw is published as "seen?tag=T"); watch: the output fails with the input's error
const SCRIPT = `
import asyncio
import rstreams
from rstreams.net import serve
seen = {}
class Hold:
    def __init__(self, tag):
        self.tag = tag
    def on_subscribe(self, subscription):
        subscription.request(1)
    def on_next(self, item):
        seen.setdefault(self.tag, []).append(b"next:" + bytes(item))
    def on_error(self, error):
        seen.setdefault(self.tag, []).append(f"error:{type(error).__name__}".encode())
    def on_complete(self):
        seen.setdefault(self.tag, []).append(b"complete")
class Never:
    def subscribe(self, subscriber):
        class S:
            def request(self, n): pass
            def cancel(self): pass
        subscriber.on_subscribe(S())
def hold(requests, params):
    requests.subscribe(Hold(params["tag"]))
    return Never()
async def main():
    server = await serve("tcp://127.0.0.1:0",
                         {"seen": lambda params: rstreams.from_iterable(list(seen.get(params["tag"], [])))},
                         channels={"upper": lambda requests, params: rstreams.from_publisher(requests).map(bytes.upper),
                                   "hold": hold,
                                   "watch": lambda requests, params: rstreams.from_publisher(requests)})
    print("serving on", server.url, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
`;

describe("against an rstreams server with channels", { skip }, () => {
  const peer = pythonPeer({ source: SCRIPT });

  /** What the server's hold?tag=T input Subscriber has seen, once it has seen `count` signals. */
  async function seen(tag, count) {
    let items = [];
    for (let round = 0; round < 200 && items.length < count; round++) {
      items = [];
      for await (const item of peer.conn.stream(`seen?tag=${tag}`, { decode: "text" })) items.push(item);
      if (items.length < count) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return items;
  }

  test("an echo-transform channel round trip: upper", async () => {
    assert.ok(peer.conn.extensions.has(8));
    const results = [];
    for await (const item of peer.conn.channel("upper", ["a", "bc", new Uint8Array([100])], { decode: "text" })) results.push(item);
    assert.deepEqual(results, ["A", "BC", "D"]);
    const many = [];
    const input = Array.from({ length: 300 }, (_, i) => `n${i}`);
    for await (const item of peer.conn.channel("upper", input, { decode: "text", window: 8 })) many.push(item);
    assert.deepEqual(many, input.map((s) => s.toUpperCase()));
    const large = [];
    for await (const item of peer.conn.channel("upper", ["q".repeat(300_000), "r"], { decode: "text" })) large.push(item);
    assert.deepEqual(large, ["Q".repeat(300_000), "R"]); // the input element went in parts (§21.6)
  });

  test("input demand is respected: the server grants 1, the input is asked for 1 and nothing more is sent", async () => {
    const input = counting();
    const out = recorder(1);
    peer.conn.channel("hold?tag=demand", input).subscribe(out);
    assert.deepEqual(await seen("demand", 1), ["next:0"]);
    await peer.conn.request("seen?tag=demand"); // a round trip after it: anything more would have gone out by now
    assert.equal(input.requested, 1);
    assert.equal(input.emitted, 1);
    assert.equal(peer.conn.state, "OPEN"); // the server saw no inputNext beyond its demand (§21.4)
    assert.deepEqual(await seen("demand", 1), ["next:0"]);
    out.subscription.cancel();
  });

  test("cancelling the output cancels the input at both ends", async () => {
    const input = counting();
    const out = recorder(1);
    peer.conn.channel("hold?tag=cancel", input).subscribe(out);
    await seen("cancel", 1);
    out.subscription.cancel();
    await input.whenCancelled;
    assert.deepEqual(await seen("cancel", 2), ["next:0", "error:ResourceClosedError"]); // §21.5 at the server
  });

  test("an input error reaches the server, whose output fails with it", async () => {
    async function* failing() {
      yield "a";
      throw new TypeError("boom");
    }
    const got = [];
    await assert.rejects(async () => {
      for await (const item of peer.conn.channel("watch", failing(), { decode: "text" })) got.push(item);
    }, (error) => error instanceof RemoteStreamError && /ChannelInputError: TypeError: boom/.test(error.message));
    assert.deepEqual(got, ["a"]);
  });
});

describe("serving channels (listen()'s side)", () => {
  /** A server Connection serving channel "in", whose input Subscriber requests `demand` and records what it gets. */
  function served(demand, limits = {}) {
    const seen = { items: [], error: null, completed: false };
    const { ws, conn } = scripted({
      role: "server", limits,
      channels: {
        in: (input) => {
          input.subscribe({
            onSubscribe: (s) => s.request(demand),
            onNext: (bytes) => seen.items.push(text.decode(bytes)),
            onError: (error) => { seen.error = error; },
            onComplete: () => { seen.completed = true; },
          });
          return { subscribe(s) { s.onSubscribe({ request() {}, cancel() {} }); } };
        },
      },
    });
    ws.feed({ type: "clientHello", version: 0, extensions: [1, 8, 9] }, ext(0xa0, encodeVarint(1)),
      { type: "subscribe", publisher: "in", subscriber: 1, initial_demand: 1n });
    return { ws, conn, seen };
  }
  test("§21.3: a plain subscribe to a name offered only as a channel is refused saying it is one", async () => {
    const { ws } = served(1);
    await tick();
    ws.feed({ type: "subscribe", publisher: "in", subscriber: 2, initial_demand: 1n },
      { type: "subscribe", publisher: "out", subscriber: 3, initial_demand: 1n });
    await tick();
    assert.deepEqual(ws.of("onError").map((f) => [f.subscriber, f.error]), [
      [2, "no publisher named 'in' ('in' is a channel: open it as one, PROTOCOL.md §21.3)"],
      [3, "no publisher named 'out'"],
    ]);
  });

  const part = (sid, data) => ext(0xa6, encodeVarint(sid), new TextEncoder().encode(data));
  const next = (sid, data) => ext(0xa3, encodeVarint(sid), new TextEncoder().encode(data));

  test("§21.6: parts then inputNext are one element, taking one demand; §21.4: the grant is what the Subscriber asked", async () => {
    const { ws, seen } = served(2);
    await tick();
    assert.deepEqual(channelFrames(ws).filter(([code]) => code === 0xa1).map(([, sid, rest]) => [sid, rest.charCodeAt(0)]), [[1, 2]]);
    ws.feed(part(1, "ab"), part(1, "cd"), next(1, "e"), next(1, "f"));
    assert.deepEqual(seen.items, ["abcde", "f"]);
  });

  for (const [what, frames, section] of [
    ["a first part beyond the input demand", [next(1, "a"), part(1, "b")], "§21.4"],
    ["inputComplete inside a split element", [part(1, "a"), ext(0xa4, encodeVarint(1))], "§21.6"],
  ]) {
    test(`§21.6: ${what} is a connection error citing ${section}`, async () => {
      const { ws, conn } = served(1);
      await tick();
      ws.feed(...frames);
      const error = await conn.closed;
      assert.ok(error instanceof ProtocolError && error.section === section, String(error));
    });
  }

  test("§21.6, §11: a joined element above max_element_size ends that input only (inputCancel); the connection goes on", async () => {
    const { ws, conn, seen } = served(5, { maxElementSize: 4 });
    await tick();
    ws.feed(part(1, "abc"), part(1, "de"), next(1, "late"));
    await tick();
    assert.match(String(seen.error), /split input element for subscriber 1 grows past max_element_size=4 \(PROTOCOL\.md §11\)/);
    assert.deepEqual(seen.items, []);
    assert.ok(channelFrames(ws).some(([code, sid]) => code === 0xa2 && sid === 1));
    assert.equal(conn.state, "OPEN");
  });

  test("§21.6: an opener splits an input element above the split threshold when the peer lists id 9", async () => {
    const { ws, conn } = scripted({ limits: { splitThreshold: 4 } });
    conn.channel("up", ["abcdefghij", "k"]).subscribe(recorder(1));
    ws.feed({ ...HELLO, extensions: [1, 8, 9] });
    await tick();
    ws.feed(inputRequest(1, 5));
    await tick();
    assert.deepEqual(channelFrames(ws).slice(1), [[0xa6, 1, "abcd"], [0xa6, 1, "efgh"], [0xa3, 1, "ij"], [0xa3, 1, "k"],
      [0xa4, 1, ""]]);
  });

  test("§21.6: after a split input element the opener asks its input for one element at a time, each once writable", async () => {
    const { ws, conn } = scripted({ limits: { splitThreshold: 4 } });
    let subscriber = null;
    const requests = [];
    const input = { subscribe(s) { subscriber = s; s.onSubscribe({ request: (n) => requests.push(Number(n)), cancel() {} }); } };
    conn.channel("up", input).subscribe(recorder(1));
    ws.feed({ ...HELLO, extensions: [1, 8, 9] });
    await tick();
    ws.feed(inputRequest(1, 200));
    await tick();
    assert.deepEqual(requests, [64]); // a window of small elements would be welcome
    for (let i = 0; i < 64; i++) subscriber.onNext("0123456789"); // each split in three
    await tick();
    assert.deepEqual(requests, [64, 1]); // not a window of large ones piling up in the write buffer
    ws.writable = false;
    subscriber.onNext("0123456789");
    await tick();
    assert.deepEqual(requests, [64, 1]); // the next one waits for the transport to take writes
    assert.ok(ws.waitingForDrain >= 1);
    ws.drain();
    await tick();
    assert.deepEqual(requests, [64, 1, 1]);
    subscriber.onNext("abc");
    await tick();
    assert.deepEqual(requests, [64, 1, 1, 64]); // a small element: the window again
    assert.equal(channelFrames(ws).filter(([code]) => code === 0xa6).length, 65 * 2);
    assert.equal(channelFrames(ws).filter(([code]) => code === 0xa3).length, 66);
  });
});
