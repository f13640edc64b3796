// Robustness, with a seeded generator (reproducible; the seed is in each test's name): whatever
// bytes arrive, the decoder yields frames or a ProtocolError naming a section, nothing else,
// and always terminates; a Connection fed them, client or server (listen()'s), ends with a
// goodbye or stays open, and never throws out of its transport's callback; a server answers a
// conversation split at any byte as it answers it whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Connection, ProtocolError, fromIterable } from "../src/rsio.js";
import { AuthGate } from "../src/gate.js";
import { FrameDecoder, concat, encodeFrame } from "../src/rsio-wire.js";
import { FakeTransport, tick } from "./support.mjs";

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

// The accepting side (listen()'s Connections, role "server"), which fuzz/fuzz_polyglot.py drives
// from outside the process: here in-process, without a network, with and without the auth gate.
const CLIENT_HELLO = unhex("01 00 09 01 02 03 04 05 06 07 08 09"); // every extension this binding knows

/** A served Connection over a FakeTransport (its writes parsed as RS.io), with publishers, a handler and a channel. */
function served(withGate) {
  const ws = new FakeTransport();
  const gate = withGate ? new AuthGate({ authenticate: (c) => (c === "token" ? "p" : null), required: false,
    authorize: (principal, name) => name !== "secret" }) : null;
  const conn = new Connection(ws, {
    role: "server", gate, onerror: () => {}, keepalive: null,
    publishers: { x: fromIterable(["a", "b", "c"]), "n/{k}": (params) => fromIterable([params.k]), secret: fromIterable(["s"]) },
    handlers: { events: () => {} },
    channels: { upper: (input) => input },
    limits: { maxPartsInFlight: 4, maxReassemblyBytes: 4096, maxSubscriptions: 8 },
  });
  return { ws, conn };
}

test(`server: 3,000 random client streams in 5-byte reads end in a goodbye naming a section, or keep it open (seed ${SEED + 2})`, async () => {
  const rand = random(SEED + 2);
  let ended = 0;
  for (let n = 0; n < 3000; n++) {
    const { ws, conn } = served(n % 2 === 1);
    const bytes = Uint8Array.from([...CLIENT_HELLO, ...input(rand), ...input(rand), ...input(rand)]);
    for (let at = 0; at < bytes.length && conn.state !== "CLOSED"; at += 5) {
      ws.onbytes(bytes.slice(at, at + 5).buffer); // must never throw
      if (rand() < 0.2) await tick(); // served streams pull in later turns: let some run
    }
    await tick();
    if (conn.state === "CLOSED") {
      ended += 1;
      const why = conn.closeReason;
      assert.ok(why === null || why instanceof ProtocolError || why?.name === "ConnectionClosedError", String(why));
      const goodbye = ws.of("goodbye").at(-1);
      if (why instanceof ProtocolError) assert.match(goodbye.reason, /\(PROTOCOL\.md §\d+(\.\d+)?\)/);
    } else {
      const closed = conn.close();
      ws.close();
      assert.equal(await closed, null);
    }
  }
  assert.ok(ended > 500, `ended ${ended}`);
});

/** A client's conversation touching every extension the server serves, as one byte string. */
function conversation() {
  const ext = (code, payload) => ({ type: "extension", code, payload: Uint8Array.from(payload) });
  const frames = [
    { type: "clientHello", version: 0, extensions: [1, 4, 5, 6, 7, 8, 9] },
    ext(0x94, [1, 1, 1, 0x78, 1, 0x31]), // subscribeMetadata for subscriber 1: x = "1"
    { type: "subscribe", publisher: "x", subscriber: 1, initial_demand: 1n },
    { type: "request", subscriber: 1, demand: 5n },
    { type: "subscribe", publisher: "n/%C3%BC?z=1", subscriber: 2, initial_demand: 0n },
    { type: "request", subscriber: 2, demand: 0n }, // rule 3.9: onError for 2
    { type: "subscribe", publisher: "nope", subscriber: 3, initial_demand: 1n },
    ext(0x80, [1, 2, 3, 4, 5, 6, 7, 8]), // ping
    ext(0x9c, [6, ...new TextEncoder().encode("events"), 0x68, 0x69]), // message "hi"
    ext(0xa0, [4]), // the next subscribe opens a channel
    { type: "subscribe", publisher: "upper", subscriber: 4, initial_demand: 3n },
    ext(0xa4, [4]), // inputComplete (input elements would wait for the server's inputRequest)
    { type: "cancel", subscriber: 1 },
  ];
  return concat(frames.map((frame) => encodeFrame(frame)));
}

/**
 * What a fresh served Connection writes when fed `chunks`, one read each, all in one turn (as a
 * socket hands over what it has: what the server does in later turns, such as pulling from its
 * publishers, then sees the same input whatever the cuts), as frames.
 */
async function answers(chunks) {
  const { ws } = served(false);
  for (const chunk of chunks) ws.onbytes(chunk.slice().buffer);
  for (let i = 0; i < 5; i++) await tick();
  return ws.sent.map((frame) => JSON.stringify(frame, (key, value) =>
    (typeof value === "bigint" ? `${value}n` : value instanceof Uint8Array ? [...value] : value)));
}

test("server: a conversation split at every byte boundary is answered exactly as when read whole", async () => {
  const bytes = conversation();
  const whole = await answers([bytes]);
  assert.ok(whole.some((f) => f.includes('"onError"')) && whole.some((f) => f.includes('"onComplete"')), whole.join("\n"));
  assert.ok(!whole.some((f) => f.includes('"goodbye"')), whole.join("\n"));
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await answers([bytes.subarray(0, cut), bytes.subarray(cut)]), whole, `cut at ${cut}`);
  }
  assert.deepEqual(await answers([...bytes].map((byte) => Uint8Array.of(byte))), whole, "one byte at a time");
});
