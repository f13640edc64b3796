// Robustness, with a seeded generator (reproducible; the seed is in each test's name): whatever
// bytes arrive, the decoder yields frames or a ProtocolError naming a section, nothing else,
// and always terminates; a Connection fed them ends with a goodbye or stays open, and never
// throws out of its transport's callback.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Connection, ProtocolError } from "../src/rsio.js";
import { FrameDecoder } from "../src/rsio-wire.js";
import { FakeTransport } from "./support.mjs";

/** mulberry32: a small, fast, seeded PRNG. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const vectors = JSON.parse(readFileSync(new URL("../../docs/protocol-vectors.json", import.meta.url), "utf8")).vectors;
const unhex = (h) => Uint8Array.from(h.replace(/\s+/g, "").match(/../g) ?? [], (b) => parseInt(b, 16));
const VALID = vectors.map((v) => unhex(v.hex));

/** Inputs: random bytes, valid frames with bytes flipped, cut or joined, and type bytes likely to parse. */
function input(rand) {
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const kind = rand();
  if (kind < 0.3) return Uint8Array.from({ length: Math.floor(rand() * 40) }, () => Math.floor(rand() * 256));
  const frames = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => pick(VALID));
  const bytes = Uint8Array.from(frames.flatMap((f) => [...f]));
  const flips = Math.floor(rand() * 4);
  for (let i = 0; i < flips && bytes.length; i++) bytes[Math.floor(rand() * bytes.length)] = Math.floor(rand() * 256);
  return kind < 0.8 ? bytes : bytes.subarray(0, Math.floor(rand() * bytes.length));
}

const SEED = 20261125;

test(`decoder: 20,000 inputs, whole and in random chunks: frames or a ProtocolError, and an end (seed ${SEED})`, () => {
  const rand = random(SEED);
  let errors = 0;
  let frames = 0;
  for (let n = 0; n < 20_000; n++) {
    const bytes = input(rand);
    const decoder = new FrameDecoder(() => (rand() < 0.5 ? 0 : 8));
    try {
      for (let at = 0; at < bytes.length;) {
        const size = 1 + Math.floor(rand() * 8);
        decoder.push(bytes.subarray(at, at + size));
        at += size;
        for (let guard = 0, frame = decoder.next(); frame !== null; frame = decoder.next()) {
          frames += 1;
          assert.ok(++guard <= bytes.length, "more frames than bytes: a loop");
          assert.equal(typeof frame.type, "string");
        }
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw new Error(`input ${Buffer.from(bytes).toString("hex")}: ${error}`);
      assert.match(error.section, /^§\d+(\.\d+)?$/);
      errors += 1;
    }
  }
  assert.ok(errors > 1000 && frames > 1000, `errors ${errors}, frames ${frames}`); // both paths exercised
});

test(`connection: 3,000 random server streams end in a goodbye naming a section, or keep it open (seed ${SEED + 1})`, async () => {
  const rand = random(SEED + 1);
  const hello = unhex("02 00 02 01 02");
  let ended = 0;
  for (let n = 0; n < 3000; n++) {
    const ws = new FakeTransport();
    const conn = new Connection(ws, { onerror: () => {}, keepalive: null, publishers: {} });
    conn.subscribe("x", { onSubscribe(s) { s.request(3); } });
    const bytes = Uint8Array.from([...hello, ...input(rand), ...input(rand)]);
    for (let at = 0; at < bytes.length && conn.state !== "CLOSED"; at += 5) {
      const chunk = bytes.slice(at, at + 5);
      ws.onbytes(chunk.buffer); // must never throw
    }
    if (conn.state === "CLOSED") {
      ended += 1;
      assert.ok(conn.closeReason instanceof ProtocolError || conn.closeReason?.name === "ConnectionClosedError",
        String(conn.closeReason));
    }
    if (conn.state !== "CLOSED") { // our goodbye, then the transport ends: an orderly close
      const closed = conn.close();
      ws.close();
      assert.equal(await closed, null);
    }
  }
  assert.ok(ended > 500, `ended ${ended}`);
});
