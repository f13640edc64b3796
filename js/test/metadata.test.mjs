// Extension metadata (PROTOCOL.md §18): subscribe with metadata; scripted, then against a Python
// server whose publisher factory reads the entries.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { scripted, recorder, tick } from "./support.mjs";
import { pythonPeer, skip } from "./servers.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [1, 5] };

test("§18.1: a subscribe with metadata waits for the hello, then goes out right after its subscribeMetadata", async () => {
  const { ws, conn } = scripted();
  conn.subscribe("plain", recorder(1));
  conn.subscribe("news", recorder(1), { metadata: { x: "1", "x-tenant": Uint8Array.of(0xff) } });
  await tick();
  assert.deepEqual(ws.sent.map((f) => f.type), ["clientHello", "subscribe"]); // the plain one is optimistic
  ws.feed(HELLO);
  await tick();
  const [metadata, subscribe] = ws.sent.slice(2);
  assert.equal(metadata.code, 0x94);
  assert.deepEqual([...metadata.payload], [2, 2, 1, 0x78, 1, 0x31, 8, ...new TextEncoder().encode("x-tenant"), 1, 0xff]);
  assert.deepEqual([subscribe.type, subscribe.publisher, subscribe.subscriber], ["subscribe", "news", 2]);
});

test("§18.1: without the extension the subscribe goes out without its metadata", async () => {
  const { ws, conn } = scripted();
  conn.subscribe("news", recorder(1), { metadata: { x: "1" } });
  await tick();
  ws.feed({ ...HELLO, extensions: [1] });
  await tick();
  assert.deepEqual(ws.sent.slice(1).map((f) => f.type), ["subscribe"]);
});

test("§18.1: keys are checked where the call is made", () => {
  const { conn } = scripted();
  for (const key of ["X", "", "rsio.trace", "a b", "k".repeat(65)]) {
    assert.throws(() => conn.subscribe("news", recorder(1), { metadata: { [key]: "v" } }), /§18\.1/, key);
  }
  assert.throws(() => conn.subscribe("news", recorder(1), { metadata: { k: 1 } }), TypeError);
});

const SCRIPT = `
import asyncio
import rstreams
from rstreams.net import serve, subscribe_metadata
def echo(params):
    entries = subscribe_metadata()
    return rstreams.from_iterable([f"{key}={value.decode()}".encode() for key, value in sorted(entries.items())])
async def main():
    server = await serve("tcp://127.0.0.1:0", {"echo": echo})
    print("serving on", server.url, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
`;

describe("against rstreams serve", { skip }, () => {
  const peer = pythonPeer({ source: SCRIPT });

  test("the Python publisher factory sees the entries of that subscribe", async () => {
    const got = [];
    const metadata = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-tenant": "acme" };
    for await (const item of peer.conn.stream("echo", { decode: "text", metadata })) got.push(item);
    assert.deepEqual(got, [`traceparent=${metadata.traceparent}`, "x-tenant=acme"]);
    const none = [];
    for await (const item of peer.conn.stream("echo", { decode: "text" })) none.push(item);
    assert.deepEqual(none, []);
  });
});
