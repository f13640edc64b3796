// Extension auth (PROTOCOL.md §15) from the client's side, against a scripted server.
import { test } from "node:test";
import assert from "node:assert/strict";
import { inspect } from "node:util";
import { Connection, ConnectionClosedError, ProtocolError } from "../src/rsio.js";
import { FakeTransport, recorder, tick } from "./support.mjs";

const SECRET = "s3cret-ZZZ";
const hello = (...extensions) => ({ type: "serverHello", version: 0, extensions });
const authenticated = (payload = new Uint8Array(0)) => ({ type: "extension", code: 0x85, payload });

function open(options = {}) {
  const ws = new FakeTransport();
  const conn = new Connection(ws, { onerror: () => {}, ...options });
  return { ws, conn };
}

test("with auth the hello offers id 2; authenticate follows the server's hello, ready settles on authenticated", async () => {
  const { ws, conn } = open({ auth: SECRET });
  const r = recorder(1);
  conn.subscribe("news", r); // optimistic (§4.3): the server holds it until authenticate is settled
  await tick();
  assert.deepEqual(ws.sent.map((f) => f.type), ["clientHello", "subscribe"]);
  assert.deepEqual(ws.sent[0].extensions, [1, 2, 4, 5, 6, 7, 8, 9]);
  ws.feed(hello(1, 2));
  await tick();
  const [authenticate] = ws.of("extension", 0x84);
  assert.deepEqual([...authenticate.payload], [1, SECRET.length, ...new TextEncoder().encode(SECRET)]);
  assert.equal(conn.authenticated, false);
  ws.feed(authenticated());
  assert.equal(await conn.ready, conn);
  assert.equal(conn.authenticated, true);
  assert.deepEqual([...conn.extensions].sort(), [1, 2]);
});

test("user and password travel as credentials kind 2", async () => {
  const { ws } = open({ auth: { user: "ann", password: "pw" } });
  ws.feed(hello(2));
  await tick();
  assert.deepEqual([...ws.of("extension", 0x84)[0].payload], [2, 3, 97, 110, 110, 2, 112, 119]);
});

test("without auth the hello offers keepalive, content-types, metadata, error-codes, messages and channels only, and ready settles on the serverHello", async () => {
  const { ws, conn } = open();
  ws.feed(hello(1, 2));
  assert.equal(await conn.ready, conn);
  await tick();
  assert.deepEqual(ws.sent[0].extensions, [1, 4, 5, 6, 7, 8, 9]);
  assert.equal(ws.of("extension", 0x84).length, 0);
});

test("§15.2: a server that does not offer auth gets a goodbye, no credentials", async () => {
  const { ws, conn } = open({ auth: SECRET });
  const r = recorder(1);
  conn.subscribe("news", r);
  ws.feed(hello(1));
  await assert.rejects(conn.ready, (e) => e instanceof ConnectionClosedError && /§15\.2/.test(e.message));
  await tick();
  assert.equal(ws.of("extension", 0x84).length, 0);
  assert.match(ws.sent.at(-1).reason, /does not offer extension auth \(id 2\) \(PROTOCOL\.md §15\.2\)/);
  assert.ok(r.error instanceof ConnectionClosedError);
  assert.ok(ws.closed);
});

test("§15.3: refused credentials end with the server's goodbye; ready rejects with its reason", async () => {
  const { ws, conn } = open({ auth: SECRET });
  const r = recorder(1);
  conn.subscribe("news", r);
  ws.feed(hello(1, 2), { type: "goodbye", reason: "authentication failed (PROTOCOL.md §15.3)" });
  await assert.rejects(conn.ready, (e) => e instanceof ConnectionClosedError
    && e.reason === "authentication failed (PROTOCOL.md §15.3)");
  assert.equal(r.error.reason, "authentication failed (PROTOCOL.md §15.3)");
});

for (const [what, frames] of [
  ["authenticated twice", [hello(2), authenticated(), authenticated()]],
  ["authenticated with a payload", [hello(2), authenticated(Uint8Array.of(0))]],
  ["authenticate sent to the client", [hello(2), { type: "extension", code: 0x84, payload: Uint8Array.of(1, 1, 0x74) }]],
  ["subscribeCredentials sent to the client", [hello(2), { type: "extension", code: 0x86, payload: Uint8Array.of(1, 1, 1, 0x74) }]],
]) {
  test(`§15.5: ${what} is a connection error`, async () => {
    const { ws, conn } = open({ auth: SECRET });
    ws.feed(...frames);
    const error = await conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === "§15.5", String(error));
    await tick();
    assert.match(ws.sent.at(-1).reason, /\(PROTOCOL\.md §15\.5\)$/);
  });
}

test("§4.4: authenticated to a client that did not offer auth", async () => {
  const { ws, conn } = open();
  ws.feed(hello(1, 2), authenticated());
  const error = await conn.closed;
  assert.ok(error instanceof ProtocolError && error.section === "§4.4");
  assert.match(error.message, /extension auth \(id 2\), which is not active/);
});

test("the secret shows nowhere: not in the connection's properties, inspection or errors", async () => {
  const { ws, conn } = open({ auth: SECRET });
  ws.feed(hello(1));
  const error = await conn.closed;
  for (const text of [inspect(conn, { depth: 5, showHidden: true }), JSON.stringify(Object.keys(conn)),
    String(error), error.stack]) {
    assert.ok(!text.includes(SECRET), text.slice(0, 200));
  }
  assert.throws(() => open({ auth: 42 }), (e) => e instanceof TypeError && /token string or \{user, password\}/.test(e.message));
});

test("§15.4: a subscribe with its own credentials waits for the serverHello, then subscribeCredentials precedes it", async () => {
  const { ws, conn } = open({ auth: SECRET });
  const plain = recorder(1);
  const own = recorder(2);
  conn.subscribe("news", plain);
  const sub = conn.subscribe("vault", own, { auth: { user: "ann", password: "pw" } });
  sub.request(3); // adds to the initialDemand of the held subscribe
  await tick();
  assert.deepEqual(ws.sent.map((f) => f.type), ["clientHello", "subscribe"]); // only the optimistic one
  ws.feed(hello(2));
  await tick();
  assert.deepEqual(ws.sent.slice(2).map((f) => f.code ?? f.type), [0x84, 0x86, "subscribe"]);
  assert.deepEqual([...ws.sent[3].payload], [2, 2, 3, 97, 110, 110, 2, 112, 119]); // id 2, kind 2, "ann", "pw"
  assert.deepEqual(ws.sent[4], { type: "subscribe", publisher: "vault", subscriber: 2, initial_demand: 5n });
  const again = conn.subscribe("vault", recorder(1), { auth: "other" }); // once open: at once
  await tick();
  assert.deepEqual(ws.sent.slice(5).map((f) => f.code ?? f.type), [0x86, "subscribe"]);
  assert.equal(again.id, 3);
});

test("§15.4: a held subscribe cancelled before the hello is never sent; without connection auth it is refused", async () => {
  const { ws, conn } = open({ auth: SECRET });
  const sub = conn.subscribe("vault", recorder(1), { auth: "t" });
  sub.cancel();
  ws.feed(hello(2));
  await tick();
  assert.equal(ws.sent.filter((f) => f.type === "subscribe").length, 0);
  assert.equal(sub.state, "CLOSED");
  const plain = open();
  assert.throws(() => plain.conn.subscribe("vault", recorder(1), { auth: "t" }),
    (e) => e instanceof TypeError && /connect\(url, \{auth\}\)/.test(e.message));
});
