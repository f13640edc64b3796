// The refusals of a subscribe that breaks a limit (PROTOCOL.md §6.2, §11; codes 5 and 7, §19.2) send
// the same text in Python, JavaScript and Java, checked in the same order (initialDemand, then the
// name's length, then max_subscriptions): `rule 3.9: initialDemand D is above 2**63 - 1 (PROTOCOL.md
// §6.2)`, `refused: publisher name longer than max_name_length=N bytes (PROTOCOL.md §11)`, `refused: at most max_subscriptions=N
// subscriptions per connection (PROTOCOL.md §11)` (docs/security.md). Also against `rstreams serve`.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { RemoteStreamError } from "../src/rsio.js";
import { connect, listen } from "../src/node.js";
import { scripted, tick } from "./support.mjs";
import { pythonPeer, skip } from "./servers.mjs";

const silent = { subscribe(s) { s.onSubscribe({ request() {}, cancel() {} }); } };

test("§6.2, §11: this binding's refusals, in Python's and Java's order and words", async () => {
  const { ws } = scripted({ role: "server", limits: { maxNameLength: 8, maxSubscriptions: 1 }, publishers: { p: silent } });
  ws.feed({ type: "clientHello", version: 0, extensions: [6] },
    { type: "subscribe", publisher: "p", subscriber: 1, initial_demand: 1n },
    { type: "subscribe", publisher: "x".repeat(9), subscriber: 2, initial_demand: 2n ** 63n }, // both: demand first
    { type: "subscribe", publisher: "x".repeat(9), subscriber: 3, initial_demand: 1n }, // both: the name first
    { type: "subscribe", publisher: "p", subscriber: 4, initial_demand: 1n });
  await tick();
  assert.deepEqual(ws.of("onError").map((f) => [f.subscriber, f.error]), [
    [2, "rule 3.9: initialDemand 9223372036854775808 is above 2**63 - 1 (PROTOCOL.md §6.2)"],
    [3, "refused: publisher name longer than max_name_length=8 bytes (PROTOCOL.md §11)"],
    [4, "refused: at most max_subscriptions=1 subscriptions per connection (PROTOCOL.md §11)"],
  ]);
});

const LONG = "x".repeat(1025);
const NAME_TEXT = "refused: publisher name longer than max_name_length=1024 bytes (PROTOCOL.md §11)";

async function longNameRefused(conn) {
  await assert.rejects(conn.request(LONG), (error) => {
    assert.ok(error instanceof RemoteStreamError, String(error));
    assert.deepEqual([error.code, error.message], [7, NAME_TEXT]);
    return true;
  });
}

test("§11: a name above max_name_length, over a connection to this binding's server", async () => {
  const server = await listen("tcp://127.0.0.1:0", { publishers: {} });
  const conn = await connect(server.url, { limits: { maxNameLength: 2048 } });
  try {
    await longNameRefused(conn);
  } finally {
    await conn.close();
    await server.close();
  }
});

describe("§11 against rstreams serve", { skip }, () => {
  const peer = pythonPeer();
  test("Python's server refuses a name above max_name_length with the same text", async () => {
    await longNameRefused(peer.conn);
  });
});
