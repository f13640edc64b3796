// Extension metadata (PROTOCOL.md §18): subscribe with metadata; scripted, then against a Python
// server whose publisher factory reads the entries.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { Connection } from "../src/rsio.js";
import { connect } from "../src/node.js";
import { FakeTransport, recorder, tick } from "./support.mjs";
import { PYTHON, REPO, skip } from "./servers.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [1, 5] };

function open() {
  const ws = new FakeTransport();
  return { ws, conn: new Connection(ws, { onerror: () => {}, keepalive: null }) };
}

test("§18.1: a subscribe with metadata waits for the hello, then goes out right after its subscribeMetadata", async () => {
  const { ws, conn } = open();
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
  const { ws, conn } = open();
  conn.subscribe("news", recorder(1), { metadata: { x: "1" } });
  await tick();
  ws.feed({ ...HELLO, extensions: [1] });
  await tick();
  assert.deepEqual(ws.sent.slice(1).map((f) => f.type), ["subscribe"]);
});

test("§18.1: keys are checked where the call is made", () => {
  const { conn } = open();
  for (const key of ["X", "", "rsio.trace", "a b", "k".repeat(65)]) {
    assert.throws(() => conn.subscribe("news", recorder(1), { metadata: { [key]: "v" } }), /§18\.1/, key);
  }
  assert.throws(() => conn.subscribe("news", recorder(1), { metadata: { k: 1 } }), TypeError);
});

describe("against rstreams serve", { skip }, () => {
  let child;
  let conn;
  before(async () => {
    const { spawn } = await import("node:child_process");
    const script = `
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
    child = spawn(PYTHON, ["-c", script], { env: { ...process.env, PYTHONPATH: `${REPO}src` }, stdio: ["ignore", "pipe", "inherit"] });
    const url = await new Promise((resolve, reject) => {
      let out = "";
      child.stdout.on("data", (chunk) => {
        out += chunk;
        const found = / on (tcp:\/\/\S+)/.exec(out);
        if (found) resolve(found[1]);
      });
      child.on("exit", (code) => reject(new Error(`the server exited with ${code}`)));
    });
    conn = await connect(url, { onerror: () => {} });
  });
  after(async () => {
    await conn?.close("test done");
    child?.kill();
  });

  test("the Python publisher factory sees the entries of that subscribe", async () => {
    const got = [];
    const metadata = { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-tenant": "acme" };
    for await (const item of conn.stream("echo", { decode: "text", metadata })) got.push(item);
    assert.deepEqual(got, [`traceparent=${metadata.traceparent}`, "x-tenant=acme"]);
    const none = [];
    for await (const item of conn.stream("echo", { decode: "text" })) none.push(item);
    assert.deepEqual(none, []);
  });
});
