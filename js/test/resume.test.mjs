// Session resumption (PROTOCOL.md §16) from the client's side, against scripted transports on a
// manual clock: the token, acknowledgements, a broken transport replaced mid-message with
// both streams continuing at the agreed positions, refusals, attempts, protocol errors.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConnectionClosedError, ProtocolError, connectTransport } from "../src/rsio.js";
import { concat, encodeFrame, encodeVarint } from "../src/rsio-wire.js";
import { FakeTransport, ManualClock, recorder, tick } from "./support.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [1, 3] };
const TOKEN = Uint8Array.from({ length: 16 }, (_, i) => i);
const ext = (code, payload) => ({ type: "extension", code, payload });
const token = ext(0x88, TOKEN);
const at = (code, position) => ext(code, encodeVarint(position));
const el = (text) => ({ type: "onNext", subscriber: 1, element: new TextEncoder().encode(text) });
const bytes = (...frames) => concat(frames.map((f) => encodeFrame(f)));

/** A client over scripted transports: `links[0]` first, then one per attempt (null: refused). */
async function session(options = {}) {
  const clock = new ManualClock();
  const links = [new FakeTransport()];
  const opened = [];
  const open = () => {
    const link = links.shift() ?? null;
    if (link === null) return Promise.reject(new Error("connection refused"));
    opened.push(link);
    return Promise.resolve(link);
  };
  const conn = await connectTransport(open, { resume: { attempts: 3, ...options }, keepalive: null, clock, onerror: () => {} });
  return { conn, clock, links, opened, first: opened[0] };
}

test("the hello offers resume; the token is kept; received bytes are acknowledged after ackDelay", async () => {
  const { conn, clock, first } = await session();
  const r = recorder(5);
  conn.subscribe("ticks", r);
  await tick();
  assert.deepEqual(first.sent[0].extensions, [1, 3, 4, 5, 6, 7, 8, 9]);
  first.feed(HELLO, token, { type: "onSubscribe", subscriber: 1, element_size: 0 }, el("a"));
  assert.deepEqual([...conn.extensions], [1, 3]);
  clock.advance(19);
  await tick();
  assert.equal(first.of("extension", 0x8c).length, 0);
  clock.advance(1);
  await tick();
  const [ack] = first.of("extension", 0x8c);
  const received = bytes(HELLO, token, { type: "onSubscribe", subscriber: 1, element_size: 0 }, el("a")).length;
  assert.deepEqual([...ack.payload], [...encodeVarint(received)]);
  first.feed(at(0x8c, 3)); // the server's own ack calls for none
  clock.advance(1000);
  await tick();
  assert.equal(first.of("extension", 0x8c).length, 1);
});

test("a broken transport is replaced: resume(token, position), the server's replay joins mid-message, ours follows its position", async () => {
  const { conn, clock, links, opened, first } = await session();
  const second = new FakeTransport();
  links.push(second);
  const r = recorder(3);
  const sub = conn.subscribe("ticks", r);
  await tick();
  const stream = bytes(HELLO, token, { type: "onSubscribe", subscriber: 1, element_size: 0 }, el("one"), el("two"));
  const cut = stream.length - 3; // inside "two"
  first.feed(stream.subarray(0, cut));
  assert.deepEqual(r.items, ["one"]);
  sub.request(2); // written to the first transport: the server saw it (it acknowledges below)
  await tick();
  assert.deepEqual(first.sent.map((f) => f.type), ["clientHello", "subscribe", "request"]);
  first.close(); // the transport breaks without a goodbye
  await tick();
  assert.equal(conn.state, "OPEN");
  assert.equal(opened.length, 2);
  const [resume] = second.sent;
  assert.equal(resume.code, 0x89);
  assert.deepEqual([...resume.payload], [16, ...TOKEN, ...encodeVarint(cut)]);
  // the server's hello and resumed(what it has of our stream: up to the request), then the rest of its stream
  const seen = bytes(first.sent[0], first.sent[1]).length;
  second.feed(concat([bytes({ type: "serverHello", version: 0, extensions: [1, 3] }, at(0x8a, seen)),
    stream.subarray(cut), bytes(el("three"))]));
  await tick();
  assert.deepEqual(r.items, ["one", "two", "three"]);
  assert.equal(conn.resumes, 1);
  assert.deepEqual(second.sent.slice(1).map((f) => f.type), ["request"]); // our stream from the server's position
  assert.equal(second.sent[1].demand, 2n);
  clock.advance(100);
  await tick();
  assert.deepEqual([...second.of("extension", 0x8c).at(-1).payload], [...encodeVarint(stream.length + bytes(el("three")).length)]);
});

async function broken(links, feedFirst = true) {
  const s = await session();
  s.links.push(...links);
  const r = recorder(1);
  s.conn.subscribe("ticks", r);
  if (feedFirst) s.first.feed(HELLO, token);
  s.first.close();
  return { ...s, r };
}

test("resumeRefused ends every subscription with the server's reason", async () => {
  const second = new FakeTransport();
  const { conn, r } = await broken([second]);
  await tick();
  second.feed({ type: "serverHello", version: 0, extensions: [] }, ext(0x8b, new TextEncoder().encode("unknown or expired session token")));
  const error = await conn.closed;
  assert.ok(error instanceof ConnectionClosedError);
  assert.equal(error.message, "the server refused to resume the session: unknown or expired session token");
  assert.equal(r.error, error);
});

test("attempts are bounded, with backoff; then the session fails naming them", async () => {
  const { conn, clock, opened, r } = await broken([null, null, null]);
  await tick();
  assert.equal(opened.length, 1); // the first attempt failed at once
  clock.advance(49);
  await tick();
  assert.equal(opened.length, 1);
  clock.advance(1000);
  await tick();
  clock.advance(1000);
  await tick();
  const error = await conn.closed;
  assert.match(error.message, /could not resume the session in 3 attempt\(s\)/);
  assert.ok(r.error instanceof ConnectionClosedError);
});

test("without the token yet a broken transport ends the connection (§9.3)", async () => {
  const s = await session();
  s.first.feed(HELLO);
  s.first.close();
  const error = await s.conn.closed;
  assert.ok(error instanceof ConnectionClosedError && /§9\.3/.test(error.message), String(error));
  assert.equal(s.opened.length, 1);
});

test("a server without resume: no buffer is kept, and a break ends the connection", async () => {
  const s = await session();
  s.first.feed({ type: "serverHello", version: 0, extensions: [1] });
  assert.deepEqual([...s.conn.extensions], [1]);
  s.first.close();
  assert.ok((await s.conn.closed) instanceof ConnectionClosedError);
  assert.equal(s.opened.length, 1);
});

for (const [what, hello] of [["without the token yet", [HELLO]], ["from a server without resume", [{ ...HELLO, extensions: [1] }]]]) {
  test(`input that stops inside a message ${what} is answered with the §9.3 goodbye on the same transport`, async () => {
    const s = await session();
    s.first.feed(...hello);
    const next = bytes(el("cut"));
    s.first.feed(next.subarray(0, next.length - 2));
    s.first.onend(); // the peer's input ends; our side of the transport still takes writes
    const error = await s.conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === "§9.3", String(error));
    await tick();
    const [goodbye] = s.first.of("goodbye");
    assert.match(goodbye?.reason ?? "", /^input ended inside a frame \(\d+ bytes of an incomplete frame\) \(PROTOCOL\.md §9\.3\)$/);
    assert.ok(s.first.closed);
    assert.equal(s.opened.length, 1);
  });
}

test("after our goodbye a closing transport is not resumed", async () => {
  const s = await session();
  s.first.feed(HELLO, token);
  const closed = s.conn.close("bye");
  s.first.feed({ type: "goodbye", reason: "" });
  assert.equal(await closed, null);
  assert.equal(s.opened.length, 1);
});

for (const [what, frames, section] of [
  ["a second resumeToken", [HELLO, token, token], "§16.2"],
  ["a token of 65 bytes", [HELLO, ext(0x88, new Uint8Array(65))], "§16.2"],
  ["an acknowledgement beyond what was sent", [HELLO, token, at(0x8c, 10_000)], "§16.4"],
  ["resumed inside the session", [HELLO, token, at(0x8a, 0)], "§16.2"],
  ["a reserved type of resume", [HELLO, token, ext(0x8d, new Uint8Array(0))], "§4.4"],
  ["a resumeAck with trailing bytes", [HELLO, token, ext(0x8c, Uint8Array.of(0, 0))], "§16.2"],
  ["a resume message when resume is not active", [{ ...HELLO, extensions: [1] }, token], "§4.4"],
]) {
  test(`${what} is a connection error citing ${section}`, async () => {
    const s = await session();
    s.first.feed(...frames);
    const error = await s.conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === section, String(error));
    await tick();
    assert.match(s.first.sent.at(-1).reason, new RegExp(`\\(PROTOCOL\\.md ${section}\\)$`));
  });
}

test("a resumed position outside our buffer ends the session (§16.3)", async () => {
  const second = new FakeTransport();
  const { conn } = await broken([second]);
  await tick();
  second.feed({ type: "serverHello", version: 0, extensions: [] }, at(0x8a, 99_999));
  const error = await conn.closed;
  assert.ok(error instanceof ProtocolError && error.section === "§16.3", String(error));
  assert.match(error.message, /^the session could not be resumed: position 99999 is outside the replay buffer \(0\.\.\d+\): /);
});

test("a malformed answer to resume fails the session at once, in rstreams' words, without another attempt (§16.2, §16.6)", async () => {
  const second = new FakeTransport();
  const { conn, clock, opened, r } = await broken([second, new FakeTransport()]);
  await tick();
  second.feed(concat([bytes(HELLO), Uint8Array.of(0x8a, 0x02, 0x00, 0x00)])); // resumed, a byte after its position
  const error = await conn.closed;
  assert.ok(error instanceof ProtocolError && error.section === "§16.2", String(error));
  assert.equal(error.message, "the session could not be resumed: resumed: 1 byte(s) after the position (PROTOCOL.md §16.2)");
  assert.equal(r.error, error);
  assert.equal(second.closed, true);
  assert.equal(second.sent.length, 1, "nothing but the resume: no goodbye");
  clock.advance(10_000);
  await tick();
  assert.equal(opened.length, 2, "no other attempt"); // the first transport and the one answered
});

test("resume options are checked, naming the option", async () => {
  await assert.rejects(connectTransport(() => Promise.resolve(new FakeTransport()), { resume: { attempt: 3 } }),
    (e) => e instanceof TypeError && /resume has no option "attempt"/.test(e.message));
  await assert.rejects(connectTransport(() => Promise.resolve(new FakeTransport()), { resume: { bufferBytes: 0 } }),
    (e) => e instanceof RangeError && /resume\.bufferBytes must be a number >= 1, got 0/.test(e.message));
});
