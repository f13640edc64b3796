// A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5): `+` is a plus, each part
// percent-decoded, and a subscribe, a channel open or a message whose name matches and gives a key
// twice is refused naming the key. What a subscribe gives for each name is in
// docs/protocol-vectors.json's `names` (name-paths.test.mjs); here: channels and messages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { splitQuery } from "../src/rsio-publish.js";
import { encodeMessage } from "../src/rsio-messages.js";
import { concat, encodeVarint } from "../src/rsio-wire.js";
import { scripted, tick } from "./support.mjs";

test("§5.5: a parameter named __proto__ is an own key of a plain object", () => {
  assert.equal(Object.getPrototypeOf(splitQuery("__proto__=x").params), Object.prototype);
  assert.deepEqual(Object.keys(splitQuery("__proto__=x").params), ["__proto__"]);
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
