// listen()'s sessions (src/sessions.js, PROTOCOL.md §16) without a network: a server Connection
// over a ServerSession over scripted transports, on a manual clock. The replay buffer is bounded
// (production pauses at the bound and goes on when acknowledgements bring it under half), a
// broken transport detaches the session until a resume or the session timeout, and a resume
// answers after the hello with resumed(position) and the replay.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Connection } from "../src/rsio.js";
import { concat, encodeFrame, encodeVarint } from "../src/rsio-wire.js";
import { SERVER_RESUME_DEFAULTS, Sessions, serverResumeOptions } from "../src/sessions.js";
import { FakeTransport, ManualClock, tick } from "./support.mjs";

const ELEMENT = 100; // bytes of each element; onNext adds 1 + 1 + 2 bytes of header
const BOUND = 4096;

/** An endless Publisher of ELEMENT-byte elements that counts what it emitted. */
function endless() {
  const source = { emitted: 0 };
  source.subscribe = (subscriber) => {
    subscriber.onSubscribe({
      request(n) {
        for (let i = 0; i < n; i++) {
          source.emitted += 1;
          subscriber.onNext(new Uint8Array(ELEMENT));
        }
      },
      cancel() { source.cancelled = true; },
    });
  };
  return source;
}

/** A server session as listen() makes one, with a client that listed resume and subscribed without bound. */
async function session(options = {}, resume = {}) {
  const clock = new ManualClock();
  const sessions = new Sessions({ sessionTimeout: 1000, bufferBytes: BOUND, ackDelay: 20, ...resume }, clock);
  const link = new FakeTransport();
  const transport = sessions.session(link);
  const source = endless();
  let admitted = 0;
  transport.onadmit = () => { admitted += 1; };
  const conn = new Connection(transport, { role: "server", keepalive: null, clock, onerror: () => {},
    publishers: { endless: source }, ...options });
  link.feed({ type: "clientHello", version: 0, extensions: [3] },
    { type: "subscribe", publisher: "endless", subscriber: 1, initial_demand: (1n << 63n) - 1n });
  for (let i = 0; i < 20; i++) await tick();
  return { clock, sessions, link, transport, source, conn, admitted };
}

/** Bytes of the server's stream a link saw (its frames encoded again), for positions. */
const streamBytes = (link) => link.sent.reduce((sum, frame) => sum + encodeFrame(frame).length, 0);

test("§16.1, §16.4: the token goes out once; production pauses at the replay buffer's bound", async () => {
  const { link, source, admitted, sessions, conn } = await session();
  assert.equal(admitted, 1);
  assert.equal(link.of("extension", 0x88).length, 1); // resumeToken (§16.1)
  assert.equal(sessions.size, 1);
  assert.ok(source.emitted > 0);
  const bound = Math.ceil(BOUND / (ELEMENT + 4)) + 32; // the bound, plus at most one pull's batch
  assert.ok(source.emitted <= bound, `${source.emitted} elements produced with ${BOUND} bytes unacknowledged`);
  assert.equal(conn.writable, false);
  const before = source.emitted;
  for (let i = 0; i < 10; i++) await tick();
  assert.equal(source.emitted, before); // nothing more without an acknowledgement
  link.feed({ type: "extension", code: 0x8c, payload: encodeVarint(streamBytes(link)) }); // resumeAck of all
  for (let i = 0; i < 10; i++) await tick();
  assert.ok(source.emitted > before, "the acknowledgement let production go on");
});

test("§16.3: a broken transport detaches the session; a resume answers after the hello and replays the rest", async () => {
  const { clock, sessions, link, transport, source, conn } = await session();
  const sent = streamBytes(link);
  link.onend(); // the transport breaks without a goodbye
  assert.equal(transport.mode, "DETACHED");
  assert.equal(conn.state, "OPEN");
  const emitted = source.emitted;
  for (let i = 0; i < 10; i++) await tick();
  assert.equal(source.emitted, emitted); // detached: nothing is produced (the buffer is full anyway)
  // a new transport: its own Connection sends the hello, then the resume names our session
  const next = new FakeTransport();
  const fresh = sessions.session(next);
  let abandoned = false;
  fresh.onabandon = () => { abandoned = true; other._abandon(); }; // as listen() does
  const other = new Connection(fresh, { role: "server", keepalive: null, clock, onerror: () => {} });
  await tick();
  const token = link.of("extension", 0x88)[0].payload;
  const lost = link.sent.at(-1); // the client never got the last frame the server wrote
  const at = sent - encodeFrame(lost).length;
  next.feed(encodeFrame({ type: "extension", code: 0x89, payload: concat([encodeVarint(token.length), token, encodeVarint(at)]) }));
  await tick();
  assert.ok(abandoned);
  assert.equal(other.state, "CLOSED");
  assert.equal(next.sent[0].type, "serverHello");
  const resumed = next.sent[1];
  assert.deepEqual([resumed.type, resumed.code], ["extension", 0x8a]);
  assert.deepEqual(next.sent[2], lost); // the replay: from the client's position on
  assert.equal(transport.resumes, 1);
  assert.equal(transport.mode, "RESUMABLE");
  clock.advance(5000); // no session timeout any more
  assert.equal(conn.state, "OPEN");
});

test("§16.3: a session not resumed within sessionTimeout ends; an unknown token is refused", async () => {
  const { clock, sessions, link, conn, source } = await session();
  link.onend();
  clock.advance(999);
  assert.equal(conn.state, "OPEN");
  clock.advance(1);
  const error = await conn.closed;
  assert.match(error.message, /not resumed within 1 s \(PROTOCOL\.md §16\.3\)/);
  assert.ok(source.cancelled);
  assert.equal(sessions.size, 0);
  const next = new FakeTransport();
  const fresh = sessions.session(next);
  const unseen = new Connection(fresh, { role: "server", keepalive: null, clock, onerror: () => {} });
  fresh.onabandon = () => unseen._abandon();
  await tick();
  next.feed(encodeFrame({ type: "extension", code: 0x89, payload: concat([encodeVarint(2), Uint8Array.of(1, 2), encodeVarint(0)]) }));
  await tick();
  const refused = next.sent.at(-1);
  assert.equal(refused.code, 0x8b);
  assert.match(new TextDecoder().decode(refused.payload), /unknown or expired session token \(PROTOCOL\.md §16\.3\)/);
  assert.ok(next.closed);
});

test("§16.3, §14.2: the idle timeout of a resumable session drops the transport, without a goodbye", async () => {
  const { clock, link, transport, conn } = await session({ idleTimeout: 1 });
  link.feed({ type: "extension", code: 0x8c, payload: encodeVarint(streamBytes(link)) }); // nothing left unread
  clock.advance(1000);
  assert.equal(transport.mode, "DETACHED");
  assert.ok(link.closed);
  assert.equal(link.of("goodbye").length, 0);
  assert.equal(conn.state, "OPEN"); // waiting for the resume
  clock.advance(999); // detached: the session timeout decides, not a goodbye
  assert.equal(conn.state, "OPEN");
  clock.advance(1);
  const error = await conn.closed;
  assert.match(error.message, /not resumed within 1 s/);
});

test("§16.3: a transport nothing was read from for stallTimeout is dropped without a goodbye; the session waits", async () => {
  const { clock, link, transport, conn, sessions } = await session({}, { stallTimeout: 500 });
  clock.advance(400);
  link.feed({ type: "extension", code: 0x8c, payload: encodeVarint(streamBytes(link)) }); // input at 0.4 s
  clock.advance(499);
  assert.equal(transport.mode, "RESUMABLE");
  assert.ok(!link.closed);
  clock.advance(1); // 0.5 s after the last input; our own output does not count
  assert.equal(transport.mode, "DETACHED");
  assert.ok(link.closed);
  assert.equal(link.of("goodbye").length, 0);
  assert.equal(conn.state, "OPEN");
  assert.equal(sessions.size, 1); // a resume may still take it up
  clock.advance(1000);
  const error = await conn.closed;
  assert.match(error.message, /not resumed within 1 s/);
  assert.equal(SERVER_RESUME_DEFAULTS.stallTimeout, 45_000); // as rstreams' Resume.stall_timeout
  assert.equal(serverResumeOptions({ stallTimeout: null }).stallTimeout, null);
  assert.throws(() => serverResumeOptions({ stallTimeout: 0 }), /resume\.stallTimeout/);
});

/** A transport of `sessions` not yet decided, its Connection dropped unseen if it turns out a resume. */
async function doorway(sessions, clock) {
  const link = new FakeTransport();
  const transport = sessions.session(link);
  const unseen = new Connection(transport, { role: "server", keepalive: null, clock, onerror: () => {} });
  transport.onabandon = () => unseen._abandon();
  await tick();
  return link;
}

const resumeOf = (token, position, extra = []) => concat([
  encodeFrame({ type: "extension", code: 0x89, payload: concat([encodeVarint(token.length), token, encodeVarint(position)]) }),
  Uint8Array.from(extra)]);
const refusedWith = (link) => new TextDecoder().decode(link.of("extension", 0x8b).at(-1)?.payload ?? new Uint8Array(0));

test("§16.3, §9.3: resumeRefused in rstreams' words: a position outside the buffer, bytes after resume, input ending inside it", async () => {
  for (const [what, expected] of [
    ["outside", /^position 1000000000 is outside the replay buffer \(\d+\.\.\d+\): the two sides disagree on what was received \(PROTOCOL\.md §16\.3\)$/],
    ["after", /^bytes after resume, before resumed \(PROTOCOL\.md §16\.3\)$/],
  ]) {
    const { clock, sessions, link, conn } = await session();
    const token = link.of("extension", 0x88)[0].payload;
    link.onend(); // broken: the session waits for its resume
    const next = await doorway(sessions, clock);
    next.feed(what === "outside" ? resumeOf(token, 1_000_000_000) : resumeOf(token, 0, [0x05]));
    await tick();
    assert.match(refusedWith(next), expected, what);
    assert.ok(next.closed);
    await conn.closed; // the session cannot go on (§16.3)
    assert.equal(sessions.size, 0);
  }
  const clock = new ManualClock();
  const cut = await doorway(new Sessions(serverResumeOptions(true), clock), clock);
  cut.feed(Uint8Array.of(0x89, 0x05, 0x01));
  cut.onend();
  await tick();
  assert.equal(refusedWith(cut), "input ended inside resume (3 bytes of an incomplete message) (PROTOCOL.md §9.3)");
  assert.ok(cut.closed);
});
