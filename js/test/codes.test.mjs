// Extension error-codes (PROTOCOL.md §19): the code beside onError and goodbye, received and
// sent; against a scripted peer, then against a real `rstreams serve`.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ConnectionClosedError, ERROR_CODES, ProtocolError, RemoteStreamError, codeName } from "../src/rsio.js";
import { connect, listen } from "../src/node.js";
import { concat, encodeVarint } from "../src/rsio-wire.js";
import { scripted, recorder, tick } from "./support.mjs";
import { FIXTURE, pythonPeer, skip } from "./servers.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [1, 6] };
const errorCode = (subscriber, code) => ({ type: "extension", code: 0x98, payload: concat([encodeVarint(subscriber), encodeVarint(code)]) });
const goodbyeCode = (code) => ({ type: "extension", code: 0x99, payload: encodeVarint(code) });

async function subscribed(hello = HELLO) {
  const { ws, conn } = scripted();
  const r = recorder(1);
  conn.subscribe("x", r);
  await tick();
  ws.feed(hello, { type: "onSubscribe", subscriber: 1, element_size: 0 });
  return { ws, conn, r };
}

test("§19.1: the clientHello lists content-types (4), metadata (5), error-codes (6), messages (7), channels (8) and input-parts (9); an errorCode gives the onError its code", async () => {
  const { ws, r } = await subscribed();
  assert.deepEqual(ws.sent[0].extensions, [1, 4, 5, 6, 7, 8, 9]);
  ws.feed(errorCode(1, 2), { type: "onError", subscriber: 1, error: "no publisher named 'x'" });
  await tick();
  assert.ok(r.error instanceof RemoteStreamError);
  assert.equal(r.error.message, "no publisher named 'x'");
  assert.equal(r.error.code, ERROR_CODES.UNKNOWN_PUBLISHER);
  assert.equal(r.error.codeName, "UNKNOWN_PUBLISHER");
});

test("§19.1: an onError without a qualifier has no code; an unregistered code keeps its number", async () => {
  const plain = await subscribed();
  plain.ws.feed({ type: "onError", subscriber: 1, error: "boom" });
  await tick();
  assert.equal(plain.r.error.code, null);
  assert.equal(plain.r.error.codeName, null);
  const privateCode = await subscribed();
  privateCode.ws.feed(errorCode(1, 4242), { type: "onError", subscriber: 1, error: "ours" });
  await tick();
  assert.equal(privateCode.r.error.code, 4242);
  assert.equal(privateCode.r.error.codeName, null);
  assert.equal(codeName(11), "TIMEOUT");
});

test("§19.1: a goodbyeCode gives the goodbye its code, and the streams it ended carry it", async () => {
  const { ws, conn, r } = await subscribed();
  ws.feed(goodbyeCode(ERROR_CODES.UNAVAILABLE), { type: "goodbye", reason: "shutting down" });
  const error = await conn.closed;
  assert.ok(error instanceof ConnectionClosedError);
  assert.equal(error.code, 8);
  assert.equal(error.codeName, "UNAVAILABLE");
  assert.equal(r.error, error);
});

for (const [what, frames] of [
  ["a malformed errorCode (trailing byte)", [{ type: "extension", code: 0x98, payload: Uint8Array.of(1, 2, 0) }]],
  ["an errorCode followed by onComplete", [errorCode(1, 2), { type: "onComplete", subscriber: 1 }]],
  ["an errorCode for another subscriber's onError", [errorCode(2, 2), { type: "onError", subscriber: 1, error: "x" }]],
  ["two goodbyeCodes in a row", [goodbyeCode(0), goodbyeCode(0)]],
  ["a goodbyeCode followed by onNext", [goodbyeCode(0), { type: "onNext", subscriber: 1, element: Uint8Array.of(1) }]],
]) {
  test(`§19.1: ${what} is a connection error citing §19.1`, async () => {
    const { ws, conn } = await subscribed();
    ws.feed(...frames);
    const error = await conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === "§19.1", String(error));
    const [qualifier, goodbye] = ws.sent.slice(-2);
    assert.equal(goodbye.type, "goodbye");
    assert.deepEqual([qualifier.code, [...qualifier.payload]], [0x99, [ERROR_CODES.PROTOCOL_VIOLATION]]);
  });
}

test("§19.1: qualifiers only while the extension is active; a reserved type is refused (§4.4)", async () => {
  const without = await subscribed({ ...HELLO, extensions: [1] });
  without.ws.feed(errorCode(1, 2));
  const error = await without.conn.closed;
  assert.ok(error instanceof ProtocolError && error.section === "§4.4", String(error));
  assert.equal(without.ws.sent.at(-1).type, "goodbye");
  assert.ok(!without.ws.sent.some((f) => f.type === "extension" && f.code === 0x99)); // not active: no code
  const reserved = await subscribed();
  reserved.ws.feed({ type: "extension", code: 0x9a, payload: new Uint8Array(0) });
  const refused = await reserved.conn.closed;
  assert.ok(refused instanceof ProtocolError && refused.section === "§4.4", String(refused));
});

test("§19.2: close() sends goodbyeCode 0 (normal) right before its goodbye", async () => {
  const { ws, conn } = await subscribed();
  conn.close("bye");
  await tick();
  const [qualifier, goodbye] = ws.sent.slice(-2);
  assert.deepEqual([qualifier.code, [...qualifier.payload]], [0x99, [0]]);
  assert.deepEqual(goodbye, { type: "goodbye", reason: "bye" });
  ws.feed(goodbyeCode(0), { type: "goodbye", reason: "" }); // the answer's qualifier is still read (§19.1)
  assert.equal(await conn.closed, null);
});

describe("against rstreams serve", { skip }, () => {
  const peer = pythonPeer({ args: ["--publishers", FIXTURE] });

  test("an unknown publisher is code 2, a failing one code 1, as the server's registry says (§19.2)", async () => {
    assert.ok(peer.conn.extensions.has(6));
    await assert.rejects(peer.conn.request("no/such/publisher"), (error) => error instanceof RemoteStreamError
      && error.code === ERROR_CODES.UNKNOWN_PUBLISHER && error.codeName === "UNKNOWN_PUBLISHER");
    await assert.rejects(peer.conn.request("fail"), (error) => error instanceof RemoteStreamError
      && error.code === ERROR_CODES.APPLICATION && /boom/.test(error.message));
  });
});

test("listen() qualifies its refusals: unknown publisher 2, rule 3.9 5, a failing publisher 1", async () => {
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { never: { subscribe() {} }, fail: { subscribe(s) { s.onSubscribe({ request() {}, cancel() {} }); s.onError(new Error("broken")); } } },
    onerror: () => {},
  });
  try {
    const client = await connect(server.url, { onerror: () => {} });
    await assert.rejects(client.request("nope"), (error) => error.code === 2);
    await assert.rejects(client.request("fail"), (error) => error.code === 1 && error.message === "Error: broken");
    const r = recorder(0);
    const sub = client.subscribe("never", r);
    await tick();
    sub._conn._send({ type: "request", subscriber: sub.id, demand: 0n }); // what a broken client would send
    await new Promise((resolve) => { const poll = () => (r.error ? resolve() : setTimeout(poll, 5)); poll(); });
    assert.equal(r.error.code, ERROR_CODES.INVALID_DEMAND);
    await client.close();
  } finally {
    await server.close();
  }
});
