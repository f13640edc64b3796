// A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5): `+` is a plus, each part
// percent-decoded, and a subscribe, a channel open or a message whose name matches and gives a key
// twice is refused naming the key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ERROR_CODES, RemoteStreamError } from "../src/rsio.js";
import { splitQuery } from "../src/rsio-publish.js";
import { connect, listen } from "../src/node.js";
import { encodeMessage } from "../src/rsio-messages.js";
import { concat, encodeVarint } from "../src/rsio-wire.js";
import { scripted, tick } from "./support.mjs";

test("§5.5: '+' stays a plus, %2B and %20 are decoded, a key without '=' has an empty value", () => {
  assert.deepEqual(splitQuery("q=a+b").params, { q: "a+b" });
  assert.deepEqual(splitQuery("q=a%2Bb").params, { q: "a+b" });
  assert.deepEqual(splitQuery("q=a%20b").params, { q: "a b" });
  assert.deepEqual(splitQuery("q=&flag").params, { q: "", flag: "" });
  assert.deepEqual(splitQuery("&x=1&&y=2&").params, { x: "1", y: "2" }); // empty pairs are skipped
  assert.deepEqual(splitQuery("q=a=b&a%26b=c%3Dd").params, { q: "a=b", "a&b": "c=d" });
  assert.equal(splitQuery("x=1&y").fault, null);
  assert.equal(splitQuery("to=3&to=4").fault, "gives the parameter 'to' more than once");
  assert.equal(splitQuery("to=3&t%6F=4").fault, "gives the parameter 'to' more than once");
  assert.equal(Object.getPrototypeOf(splitQuery("__proto__=x").params), Object.prototype);
  assert.deepEqual(Object.keys(splitQuery("__proto__=x").params), ["__proto__"]);
});

test("§5.5: a factory gets '+' as a plus; a key given twice is that subscribe's error (code 1) naming the key", async () => {
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { echo: (params) => ({
      subscribe(subscriber) {
        subscriber.onSubscribe({
          request() { subscriber.onNext(JSON.stringify(params)); subscriber.onComplete(); },
          cancel() {},
        });
      },
    }) },
  });
  const conn = await connect(server.url);
  try {
    assert.equal(await conn.request("echo?q=1+1&s=%20&e=", { decode: "text" }), JSON.stringify({ q: "1+1", s: " ", e: "" }));
    for (const name of ["echo?to=3&to=4", "echo?to&to"]) {
      await assert.rejects(conn.request(name), (error) => {
        assert.ok(error instanceof RemoteStreamError, String(error));
        assert.equal(error.code, ERROR_CODES.APPLICATION);
        assert.match(error.message, /'to' more than once \(PROTOCOL\.md §5\.5\)/);
        return true;
      });
    }
    assert.equal(await conn.request("echo?to=3", { decode: "text" }), JSON.stringify({ to: "3" })); // still up
  } finally {
    await conn.close();
    await server.close();
  }
});

test("§5.5, §21.3: a channel name giving a key twice is refused (code 1) naming the key; an unknown one stays unknown", async () => {
  const channelMark = (sid) => ({ type: "extension", code: 0xa0, payload: concat([encodeVarint(sid)]) });
  const { ws } = scripted({ channels: { "up/{x}": () => ({ subscribe(s) { s.onSubscribe({ request() { s.onComplete(); }, cancel() {} }); } }) } });
  ws.feed({ type: "serverHello", version: 0, extensions: [1, 8] });
  ws.feed(channelMark(3), { type: "subscribe", publisher: "up/a?to=3&to=4", subscriber: 3, initial_demand: 1n });
  ws.feed(channelMark(5), { type: "subscribe", publisher: "nope?to=3&to=4", subscriber: 5, initial_demand: 1n });
  await tick();
  assert.deepEqual(ws.of("onError").map((f) => [f.subscriber, f.error]), [
    [3, "channel name 'up/a?to=3&to=4' gives the parameter 'to' more than once (PROTOCOL.md §5.5)"],
    [5, "no channel named 'nope' (PROTOCOL.md §21.3)"],
  ]);
});

test("§5.5, §20.4: a message name giving a key twice is dropped, reported naming the key, its credit given back", async () => {
  const seen = [];
  const reported = [];
  const { ws } = scripted({
    maxMessagesInFlight: 1,
    onerror: (error) => reported.push(error.message),
    handlers: { "ev/{kind}": (m) => { seen.push(m.params); } },
  });
  ws.feed({ type: "serverHello", version: 0, extensions: [1, 7] });
  await tick();
  ws.feed({ type: "extension", code: 0x9c, payload: encodeMessage("ev/a?to=1&to=2", new Uint8Array(0)) });
  await tick();
  assert.deepEqual(seen, []);
  assert.deepEqual(reported, ["message to 'ev/a?to=1&to=2' dropped: its name gives the parameter 'to' more than once (PROTOCOL.md §5.5)"]);
  assert.deepEqual(ws.sent.filter((f) => f.code === 0x9d).map((f) => [...f.payload]), [[1], [1]]); // its credit back
});
