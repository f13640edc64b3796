// Extension content-types (PROTOCOL.md §17): the announced type is kept, decode "auto" uses it,
// and an explicit decode it contradicts fails the subscription; scripted, then against rstreams serve.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ContentTypeError, ProtocolError, decoderForType, sameMediaType } from "../src/rsio.js";
import { concat, encodeVarint } from "../src/rsio-wire.js";
import { scripted, tick } from "./support.mjs";
import { FIXTURE, pythonPeer, skip } from "./servers.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [1, 4] };
const contentType = (subscriber, type) => ({ type: "extension", code: 0x90,
  payload: concat([encodeVarint(subscriber), new TextEncoder().encode(type)]) });
const el = (text) => ({ type: "onNext", subscriber: 1, element: new TextEncoder().encode(text) });

test("§17.2: decode 'auto' follows the announced type; the subscription keeps it", async () => {
  const { ws, conn } = scripted();
  const iterator = conn.stream("rows", { decode: "auto" })[Symbol.asyncIterator]();
  await tick();
  ws.feed(HELLO, contentType(1, "application/json"), { type: "onSubscribe", subscriber: 1, element_size: 0 },
    el('{"a":[1,"\\u00e9"]}'), { type: "onComplete", subscriber: 1 });
  assert.deepEqual((await iterator.next()).value, { a: [1, "é"] });
  assert.equal(iterator.subscription.contentType, "application/json");
  assert.equal((await iterator.next()).done, true);
});

test("§17.2: an explicit decode the announcement contradicts fails with ContentTypeError and cancels", async () => {
  const { ws, conn } = scripted();
  const iterator = conn.stream("rows", { decode: "text" })[Symbol.asyncIterator]();
  await tick();
  ws.feed(HELLO, contentType(1, "application/vnd.rsio.int64le"), { type: "onSubscribe", subscriber: 1, element_size: 8 });
  await assert.rejects(iterator.next(), (error) => error instanceof ContentTypeError
    && /announced application\/vnd.rsio.int64le; decode "text" expects text\/plain; charset=utf-8 or application\/json/
      .test(error.message));
  await tick();
  assert.ok(ws.sent.some((f) => f.type === "cancel" && f.subscriber === 1));
});

for (const [what, frames] of [
  ["a contentType followed by an onNext", [contentType(1, "application/json"), el("x")]],
  ["a contentType for another subscriber's onSubscribe", [contentType(2, "application/json"),
    { type: "onSubscribe", subscriber: 1, element_size: 0 }]],
  ["a media type that is not type/subtype", [contentType(1, "json")]],
  ["a media type with a byte outside 0x20-0x7e", [contentType(1, "text/pl\u00e4in")]],
]) {
  test(`§17.1: ${what} is a connection error citing §17.1`, async () => {
    const { ws, conn } = scripted();
    conn.stream("rows")[Symbol.asyncIterator]();
    await tick();
    ws.feed(HELLO, ...frames);
    const error = await conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === "§17.1", String(error));
  });
}

test("§17.3: the built-in decoders, byte for byte; §17.1: sameness of media types", () => {
  assert.equal(decoderForType("application/vnd.rsio.int64le")(Uint8Array.of(0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)), -2n);
  assert.equal(decoderForType("application/vnd.rsio.float64le")(Uint8Array.of(0, 0, 0, 0, 0, 0, 0xf8, 0x3f)), 1.5);
  assert.equal(decoderForType("Text/Plain ; Charset=UTF-8")(Uint8Array.of(0x68, 0xc3, 0xa9)), "hé");
  assert.equal(decoderForType("image/png"), null);
  assert.ok(sameMediaType("text/plain; charset=utf-8", "TEXT/PLAIN;charset = UTF-8"));
});

describe("against rstreams serve", { skip }, () => {
  const peer = pythonPeer({ args: ["--publishers", FIXTURE] });

  test("an INT64 publisher announces application/vnd.rsio.int64le: 'auto' gives bigints, 'json' refuses", async () => {
    assert.ok(peer.conn.extensions.has(4));
    const got = [];
    for await (const n of peer.conn.stream("ints?n=5", { decode: "auto" })) got.push(n);
    assert.deepEqual(got, [0n, 1n, 2n, 3n, 4n]);
    await assert.rejects(peer.conn.request("ints?n=5", { decode: "json" }), ContentTypeError);
    const raw = await peer.conn.request("ints?n=5"); // "bytes" (the default) takes the bytes whatever is announced
    assert.deepEqual([...raw], [0, 0, 0, 0, 0, 0, 0, 0]);
  });
});
