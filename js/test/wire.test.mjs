// The JavaScript codec against PROTOCOL.md §13's vectors (docs/protocol-vectors.json) and §2's rules.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  EXTENSIONS, FrameDecoder, ProtocolError, UNBOUNDED, decodeAll, decodeVarint, encodeCredentials, encodeFrame,
  encodeVarint, extensionOf,
} from "../src/rsio-wire.js";

const VECTORS_PATH = new URL("../../docs/protocol-vectors.json", import.meta.url);
// JSON numbers past 2**53 lose precision in JSON.parse: read every long integer as a BigInt.
const text = readFileSync(VECTORS_PATH, "utf8").replace(/(?<=[:\[,]\s*)(\d{16,})(?=\s*[,\]}])/g, '"$1n"');
const VECTORS = JSON.parse(text, (key, value) =>
  typeof value === "string" && /^\d+n$/.test(value) ? BigInt(value.slice(0, -1)) : value).vectors;

const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(" ");
const unhex = (h) => Uint8Array.from(h.replace(/\s+/g, "").match(/../g) ?? [], (b) => parseInt(b, 16));

/** The vector's fields as the JS codec spells them: bytes as Uint8Array, demands as BigInt. */
function jsFrame(vector) {
  if (vector.code >= 0x80) return { type: "extension", code: vector.code, payload: unhex(vector.fields.payload.hex) };
  const frame = { type: vector.type };
  for (const [key, value] of Object.entries(vector.fields)) {
    if (value !== null && typeof value === "object" && "hex" in value) frame[key] = unhex(value.hex);
    else if (key === "demand" || key === "initial_demand") frame[key] = BigInt(value);
    else frame[key] = value;
  }
  return frame;
}

test("the vectors file was read with exact 64-bit integers", () => {
  assert.ok(VECTORS.length >= 19);
  assert.ok(VECTORS.some((v) => v.fields.initial_demand === UNBOUNDED));
});

for (const vector of VECTORS) {
  const label = `${vector.type} ${vector.note || JSON.stringify(vector.fields, (k, v) => typeof v === "bigint" ? `${v}` : v)}`;
  test(`encode: ${label}`, () => {
    assert.equal(hex(encodeFrame(jsFrame(vector), vector.element_size)), vector.hex);
  });
  test(`decode whole, byte by byte, and with trailing bytes: ${label}`, () => {
    const bytes = unhex(vector.hex);
    assert.deepEqual(decodeAll(bytes, vector.element_size), [jsFrame(vector)]);
    const decoder = new FrameDecoder(() => vector.element_size);
    const frames = [];
    for (const byte of bytes) {
      decoder.push(Uint8Array.of(byte));
      for (let f = decoder.next(); f !== null; f = decoder.next()) frames.push(f);
    }
    assert.deepEqual(frames, [jsFrame(vector)]);
    const trailing = new FrameDecoder(() => vector.element_size);
    trailing.push(new Uint8Array([...bytes, 0x0c]));
    assert.deepEqual(trailing.next(), jsFrame(vector));
    assert.equal(trailing.next(), null);
    assert.equal(trailing.pending, 1);
  });
}

test("varints: §2.1's examples, minimal and at most 10 bytes", () => {
  const cases = [[0, "00"], [1, "01"], [127, "7f"], [128, "80 01"], [300, "ac 02"],
    [UNBOUNDED, "ff ff ff ff ff ff ff ff 7f"], [(1n << 64n) - 1n, "ff ff ff ff ff ff ff ff ff 01"]];
  for (const [value, encoded] of cases) {
    assert.equal(hex(encodeVarint(value)), encoded);
    assert.deepEqual(decodeVarint(unhex(encoded), 0), { value: BigInt(value), next: unhex(encoded).length });
  }
  assert.throws(() => encodeVarint(1n << 64n), RangeError);
  assert.throws(() => encodeVarint(-1), RangeError);
  assert.equal(decodeVarint(unhex("80 80"), 0), null);
  for (const bad of ["80 00", "ff ff ff ff ff ff ff ff ff 02", "ff ff ff ff ff ff ff ff ff ff 01"]) {
    assert.throws(() => decodeVarint(unhex(bad), 0), (e) => e instanceof ProtocolError && e.section === "§2.1");
  }
});

test("framing errors name their section", () => {
  const cases = [
    ["00", "§3"], ["0e", "§3"], ["7f", "§3"], // reserved type bytes
    ["80 ff ff 7f", "§11"], // an extension message's length above max_string_length
    ["03 02 c3 28", "§2.2"], // invalid UTF-8 in a goodbye
    ["08 01 ff ff ff 7f", "§11"], // a length far above max_element_size
    ["09 01 01 00", "§7"], // onNextPacked on a subscription whose elementSize is 0
  ];
  for (const [bytes, section] of cases) {
    assert.throws(() => decodeAll(unhex(bytes)), (e) => e instanceof ProtocolError && e.section === section, bytes);
  }
  assert.throws(() => decodeAll(unhex("09 01 00"), 8), (e) => e.section === "§7"); // count 0
  assert.throws(() => decodeAll(unhex("08 01 05 68")), (e) => e.section === "§9.3"); // truncated
});

test("a length above a limit names what it measures and the limit, as §11 and rstreams name it", () => {
  // a peer reads which limit it broke, in the words of every binding (tests/conformance/test_hostile_polyglot.py)
  const cases = [
    ["04 86 80 80 80 80 20", "subscribe publisher name of 1099511627782 bytes exceeds max_string_length=65536"],
    ["08 01 80 80 80 80 08", "onNext element of 2147483648 bytes for subscriber 1 exceeds max_element_size=16777216"],
    ["01 00 80 80 80 80 10", "hello lists 4294967296 extensions, more than max_extensions=64"],
    ["80 ff ff 7f", "extension message 0x80 payload of 2097151 bytes exceeds max_string_length=65536"],
    ["07 01 80 80 80 10", "onSubscribe elementSize of 33554432 bytes for subscriber 1 exceeds max_element_size=16777216"],
    ["0a 01 07 80 80 80 10", "onNextPart data of 33554432 bytes for subscriber 1 exceeds max_element_size=16777216"],
    ["0b 01 07 80 80 80 10", "onNextPart data of 33554432 bytes for subscriber 1 exceeds max_element_size=16777216"],
  ];
  for (const [bytes, message] of cases) {
    assert.throws(() => decodeAll(unhex(bytes)), (e) => e instanceof ProtocolError && e.section === "§11"
      && e.message === `${message} (PROTOCOL.md §11)`, bytes);
  }
  const decoder = new FrameDecoder(() => 8, { maxElementSize: 64 });
  decoder.push(unhex("09 01 09"));
  assert.throws(() => decoder.next(), (e) => e.message
    === "onNextPacked payload of 72 bytes for subscriber 1 exceeds max_element_size=64 (PROTOCOL.md §11)");
});

test("a large element split across many chunks is parsed once it is complete", () => {
  const element = new Uint8Array(300_000).map((_, i) => i & 0xff);
  const bytes = encodeFrame({ type: "onNext", subscriber: 3, element });
  const decoder = new FrameDecoder();
  let frames = 0;
  for (let at = 0; at < bytes.length; at += 4096) {
    decoder.push(bytes.subarray(at, at + 4096));
    for (let f = decoder.next(); f !== null; f = decoder.next()) {
      frames++;
      assert.deepEqual(f.element, element);
    }
  }
  assert.equal(frames, 1);
});

test("credentials (§15.1): the authenticate vectors' payloads, token and user/password", () => {
  const payloads = VECTORS.filter((v) => v.type === "authenticate").map((v) => v.fields.payload.hex);
  assert.deepEqual(payloads, [hex(encodeCredentials("token")).replaceAll(" ", ""),
    hex(encodeCredentials({ user: "ann", password: "pw" })).replaceAll(" ", "")]);
  for (const bad of [null, 7, { user: "ann" }, ["ann", "pw"], { user: "ann", password: 1 }]) {
    assert.throws(() => encodeCredentials(bad), (e) => e instanceof TypeError && /§15\.1/.test(e.message));
  }
  assert.throws(() => encodeCredentials({ user: "hunter2", password: null }), (e) => !/hunter2/.test(e.message));
});

test("every extension message type of the vectors has its owner (§4.4); other types have none", () => {
  for (const vector of VECTORS.filter((v) => v.code >= 0x80)) {
    const owner = extensionOf(vector.code);
    assert.ok(owner !== undefined, vector.type);
    assert.equal(EXTENSIONS[owner.name].id, owner.id);
  }
  assert.equal(extensionOf(0x87).name, "auth"); // reserved, but owned
  assert.equal(extensionOf(0x8f).name, "resume");
  assert.equal(extensionOf(0x82), undefined);
  assert.equal(extensionOf(0x90).name, "contentTypes");
  assert.equal(extensionOf(0x9e).name, "messages");
  assert.equal(extensionOf(0xa8), undefined);
});
