// The accepting side of extension auth (PROTOCOL.md §15; src/gate.js), against a scripted
// client, and a JavaScript client authenticating to listen().
import { test } from "node:test";
import assert from "node:assert/strict";
import { AuthGate } from "../src/gate.js";
import { Connection, ConnectionClosedError, ProtocolError, connect, fromIterable, listen } from "../src/node.js";
import { encodeCredentials, encodeVarint, concat } from "../src/rsio-wire.js";
import { FakeTransport, ManualClock, tick } from "./support.mjs";

const hello = (...extensions) => ({ type: "clientHello", version: 0, extensions });
const authenticate = (credentials) => ({ type: "extension", code: 0x84, payload: encodeCredentials(credentials) });
const subscribe = (publisher, subscriber, demand = 1) => ({ type: "subscribe", publisher, subscriber, initial_demand: BigInt(demand) });

function server(options = {}) {
  const seen = [];
  const gate = new AuthGate({
    authenticate: (c) => (c === "good" || c?.password === "pw" ? `user:${c.user ?? "token"}` : null),
    authorize: (principal, name) => { seen.push([principal, name]); return !name.startsWith("secret"); },
    ...options,
  });
  const ws = new FakeTransport();
  const conn = new Connection(ws, { role: "server", gate, onerror: () => {}, keepalive: null,
    publishers: { news: fromIterable(["a"]), secret: fromIterable(["s"]) } });
  return { ws, conn, seen };
}

test("§15.2: the serverHello lists auth; a clientHello without it is refused when auth is required", async () => {
  const { ws, conn } = server();
  ws.feed(hello(1));
  await conn.closed;
  assert.deepEqual(ws.sent[0], { type: "serverHello", version: 0, extensions: [1, 2, 4, 5, 6, 7, 8, 9] });
  assert.match(ws.sent.at(-1).reason, /^authentication required: .*\(PROTOCOL\.md §15\.2\)$/);
});

test("§10, §19.2: with error-codes active, 'authentication required' carries code 3 (unauthenticated)", async () => {
  const { ws, conn } = server();
  ws.feed(hello(1, 6));
  await conn.closed;
  const [qualifier, goodbye] = ws.sent.slice(-2);
  assert.match(goodbye.reason, /^authentication required: /);
  assert.deepEqual([qualifier.code, [...qualifier.payload]], [0x99, [3]]);
});

test("§15.4, §19.2: subscribeCredentials beyond max_subscriptions: goodbye with code 7 (limit exceeded)", async () => {
  const ws = new FakeTransport();
  const conn = new Connection(ws, { role: "server", gate: new AuthGate({ authenticate: () => "p" }), onerror: () => {},
    keepalive: null, limits: { maxSubscriptions: 1 }, publishers: { news: fromIterable(["a"]) } });
  const credentials = (id) => ({ type: "extension", code: 0x86, payload: concat([encodeVarint(id), encodeCredentials("t")]) });
  ws.feed(hello(2, 6), credentials(1), credentials(2));
  await conn.closed;
  const [qualifier, goodbye] = ws.sent.slice(-2);
  assert.match(goodbye.reason, /^more subscribeCredentials held than max_subscriptions \(PROTOCOL\.md §15\.4\)$/);
  assert.deepEqual([qualifier.code, [...qualifier.payload]], [0x99, [7]]);
});

/** A server Connection with handshakeTimeout 1 s on a manual clock; `verdict(credentials)` decides. */
function timed(verdict) {
  const clock = new ManualClock();
  const ws = new FakeTransport();
  const conn = new Connection(ws, { role: "server", gate: new AuthGate({ authenticate: verdict }), handshakeTimeout: 1,
    clock, onerror: () => {}, keepalive: null, publishers: { news: fromIterable(["a"]) } });
  return { clock, ws, conn };
}

test("handshakeTimeout: no clientHello within it is a goodbye with code 11 (timeout)", async () => {
  const { clock, ws, conn } = timed(() => "p");
  clock.advance(999);
  await tick();
  assert.equal(conn.state, "AWAITING_HELLO");
  clock.advance(1);
  await tick();
  assert.equal(conn.state, "CLOSED");
  assert.equal(ws.sent.at(-1).reason, "handshake timeout (no clientHello within 1 s)");
  assert.ok(ws.closed);
});

test("§15.3: an authenticate not settled within handshakeTimeout of the hello is a goodbye with code 11", async () => {
  const { clock, ws, conn } = timed(() => new Promise(() => {})); // a check that never ends
  clock.advance(600);
  ws.feed(hello(1, 2, 6), subscribe("news", 1)); // counted again from the hello
  clock.advance(900);
  ws.feed(authenticate("good"));
  await tick();
  assert.equal(conn.state, "OPEN");
  clock.advance(100);
  await tick();
  assert.equal(conn.state, "CLOSED");
  const [qualifier, goodbye] = ws.sent.slice(-2);
  assert.deepEqual([qualifier.code, [...qualifier.payload]], [0x99, [11]]);
  assert.equal(goodbye.reason, "authentication timeout (not settled within 1 s of the hello) (PROTOCOL.md §15.3)");
  assert.equal(ws.of("onSubscribe").length, 0);
  const error = await conn.closed;
  assert.match(error.message, /authentication timeout/);
});

test("§15.3: credentials settled in time: the handshake timeout has no more say", async () => {
  const { clock, ws, conn } = timed((c) => (c === "good" ? "p" : null));
  ws.feed(hello(1, 2), authenticate("good"), subscribe("news", 1));
  await tick();
  clock.advance(5000);
  await tick();
  assert.equal(conn.state, "OPEN");
  assert.deepEqual(ws.sent.slice(1).map((f) => f.code ?? f.type), [0x85, "onSubscribe", "onNext", "onComplete"]);
  assert.throws(() => new Connection(new FakeTransport(), { role: "server", handshakeTimeout: 0 }),
    (e) => e instanceof RangeError && /handshakeTimeout/.test(e.message));
});

test("§15.3: subscribes are held until authenticate; authenticated goes first; the principal reaches authorize", async () => {
  const { ws, seen } = server();
  ws.feed(hello(1, 2), subscribe("news", 1), { type: "request", subscriber: 1, demand: 1n }, subscribe("news", 2));
  ws.feed({ type: "cancel", subscriber: 2 }); // a held subscribe cancelled: acknowledged in its turn, never served
  await tick();
  assert.deepEqual(ws.sent.slice(1), []); // nothing before authenticated, not even the acknowledgement
  ws.feed(authenticate({ user: "ann", password: "pw" }));
  await tick();
  assert.deepEqual(ws.sent.slice(1).map((f) => [f.code ?? f.type, f.subscriber]),
    [[0x85, undefined], ["onSubscribe", 1], ["onNext", 1], ["onComplete", 1], ["onComplete", 2]]);
  assert.deepEqual(seen, [["user:ann", "news"]]);
});

test("§15.3: refused credentials end the connection with a goodbye; §15.4: authorize and per-subscription credentials", async () => {
  const refused = server();
  refused.ws.feed(hello(2), subscribe("news", 1), authenticate("bad"));
  await refused.conn.closed;
  assert.equal(refused.ws.sent.at(-1).reason, "authentication failed (PROTOCOL.md §15.3)");
  assert.equal(refused.ws.of("onSubscribe").length, 0);

  const { ws } = server();
  const own = (id, credentials) => ({ type: "extension", code: 0x86, payload: concat([encodeVarint(id), encodeCredentials(credentials)]) });
  // a quote, a control character and a query: the path as written, quoted as §5.5 does
  ws.feed(hello(2), authenticate("good"), subscribe("secret/x", 1), own(2, "bad"), subscribe("news", 2),
    own(3, "good"), subscribe("news", 3), subscribe("secret/it's\x01%20?k=x'y", 4),
    own(5, "bad"), subscribe("it's\x01?k=x'y", 5));
  await tick();
  const errors = ws.of("onError").map((f) => [f.subscriber, f.error]);
  assert.deepEqual(errors, [
    [1, "unauthorized: subscribe to 'secret/x' is not allowed for this principal (PROTOCOL.md §15.4)"],
    [2, "unauthenticated: subscribe to 'news' needs valid credentials (PROTOCOL.md §15.4)"],
    [4, "unauthorized: subscribe to 'secret/it's\x01%20' is not allowed for this principal (PROTOCOL.md §15.4)"],
    [5, "unauthenticated: subscribe to 'it's\x01' needs valid credentials (PROTOCOL.md §15.4)"],
  ]);
  assert.equal(ws.of("onSubscribe")[0].subscriber, 3);
});

test("§15.4: only true from authorize allows, as rstreams' `is True`: a promise or a truthy value refuses", async () => {
  const reported = [];
  const gate = new AuthGate({ authenticate: () => "p", authorize: (principal, name) => ({ yes: true, async: Promise.resolve(true), one: 1 })[name] });
  const ws = new FakeTransport();
  new Connection(ws, { role: "server", gate, onerror: (e) => reported.push(e.message), keepalive: null,
    publishers: { yes: fromIterable(["a"]), async: fromIterable(["b"]), one: fromIterable(["c"]) } });
  ws.feed(hello(2), authenticate("t"), subscribe("yes", 1), subscribe("async", 2), subscribe("one", 3));
  await tick();
  assert.deepEqual(ws.of("onSubscribe").map((f) => f.subscriber), [1]);
  assert.deepEqual(ws.of("onError").map((f) => [f.subscriber, f.error]), [
    [2, "unauthorized: subscribe to 'async' is not allowed for this principal (PROTOCOL.md §15.4)"],
    [3, "unauthorized: subscribe to 'one' is not allowed for this principal (PROTOCOL.md §15.4)"],
  ]);
  assert.deepEqual(reported, ["authorize returned a promise for 'async': it must return true or false at once "
    + "(refused; authenticate may be async, authorize may not)"]);
});

for (const [what, frames, section] of [
  ["a second authenticate", [hello(2), authenticate("good"), authenticate("good")], "§15.5"],
  ["malformed credentials", [hello(2), { type: "extension", code: 0x84, payload: Uint8Array.of(1, 9, 0x61) }], "§15.5"],
  ["authenticated from the client", [hello(2), { type: "extension", code: 0x85, payload: new Uint8Array(0) }], "§15.5"],
  ["authenticate without auth in the clientHello", [hello(1), authenticate("good")], "§4.4"],
]) {
  test(`${what} is a connection error citing ${section}`, async () => {
    const { ws, conn } = server({ required: false });
    ws.feed(...frames);
    const error = await conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === section, String(error));
  });
}

test("an authenticate hook may answer with a promise; without auth required, no credentials mean no principal", async () => {
  const { ws } = server({ authenticate: async (c) => (c === "good" ? "p" : null), required: false });
  ws.feed(hello(2), subscribe("news", 1), authenticate("good"));
  for (let i = 0; i < 5; i++) await tick();
  assert.deepEqual(ws.sent.slice(1).map((f) => f.code ?? f.type), [0x85, "onSubscribe", "onNext", "onComplete"]);
  const open = server({ required: false });
  open.ws.feed(hello(1), subscribe("news", 1));
  await tick();
  assert.deepEqual(open.seen, [[null, "news"]]);
});

test("a JavaScript client authenticates to listen(): the token accepted, another refused", async () => {
  const srv = await listen("tcp://127.0.0.1:0", {
    publishers: { news: () => fromIterable(["fresh"]) },
    authenticate: (c) => (c === "tk" ? "reader" : null),
  });
  try {
    const conn = await connect(srv.url, { auth: "tk" });
    assert.equal(await conn.request("news", { decode: "text" }), "fresh");
    assert.ok(conn.authenticated);
    await conn.close();
    const other = await connect(srv.url, { auth: "nope" });
    await assert.rejects(other.ready, (e) => e instanceof ConnectionClosedError && e.reason === "authentication failed (PROTOCOL.md §15.3)");
  } finally {
    await srv.close();
  }
});
