// Extension messages (PROTOCOL.md §20): send() bounded by the peer's credit, handlers for the
// peer's messages; against a scripted peer, then against a real `rstreams serve`.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ExtensionNotOfferedError, MessageCreditError, ProtocolError } from "../src/rsio.js";
import { encodeMessage } from "../src/rsio-messages.js";
import { encodeVarint } from "../src/rsio-wire.js";
import { scripted, tick } from "./support.mjs";
import { pythonPeer, skip } from "./servers.mjs";

const HELLO = { type: "serverHello", version: 0, extensions: [1, 7] };
const credit = (n) => ({ type: "extension", code: 0x9d, payload: encodeVarint(n) });
const message = (name, body) => ({ type: "extension", code: 0x9c, payload: encodeMessage(name, new TextEncoder().encode(body)) });
const text = new TextDecoder();

const sentMessages = (ws) => ws.sent.filter((f) => f.type === "extension" && f.code === 0x9c)
  .map((f) => { const name = text.decode(f.payload.subarray(1, 1 + f.payload[0])); return [name, text.decode(f.payload.subarray(1 + f.payload[0]))]; });

test("§20.3: send waits for the peer's credit, takes one per message, in order; nothing before the hello", async () => {
  const { ws, conn } = scripted();
  const first = conn.send("events/click", "a"); // before the hello: waits
  await tick();
  assert.deepEqual(sentMessages(ws), []);
  ws.feed(HELLO);
  await tick();
  assert.deepEqual(ws.sent.filter((f) => f.code === 0x9d).map((f) => [...f.payload]), [[16]]); // our grant (§20.3)
  assert.deepEqual(sentMessages(ws), []); // no credit from the peer yet
  const second = conn.send("events/click", new TextEncoder().encode("b"));
  ws.feed(credit(1));
  await first;
  await tick();
  assert.deepEqual(sentMessages(ws), [["events/click", "a"]]);
  assert.equal(conn.messageCredit, 0n);
  await assert.rejects(conn.send("x", "c", { wait: false }), MessageCreditError);
  ws.feed(credit(5));
  await second;
  await tick();
  assert.deepEqual(sentMessages(ws), [["events/click", "a"], ["events/click", "b"]]);
  assert.equal(conn.messageCredit, 4n);
});

test("§20.1: a peer without the extension: send rejects, saying so; a closed connection rejects too", async () => {
  const { ws, conn } = scripted();
  const waiting = conn.send("x", "early");
  ws.feed({ ...HELLO, extensions: [1] });
  await assert.rejects(waiting, (e) => e instanceof ExtensionNotOfferedError && e.extension === "messages"
    && e.section === "§20.1" && e.message === "the peer does not offer extension messages (id 7) (PROTOCOL.md §20.1)");
  await assert.rejects(conn.send("x", "late"), (e) => e instanceof ExtensionNotOfferedError && /§20\.1/.test(e.message));
  const other = scripted();
  other.ws.feed(HELLO);
  const pending = other.conn.send("x", "never granted");
  other.conn.close("bye");
  await assert.rejects(pending, /closed/);
});

test("§20.3, §20.4: handlers receive the peer's messages; credit comes back when they finish, dropped ones too", async () => {
  const seen = [];
  let release;
  const { ws } = scripted({
    maxMessagesInFlight: 2,
    handlers: {
      "events/{kind}": (m) => { seen.push([m.params.kind, m.params.user, text.decode(m.payload)]); },
      slow: () => new Promise((resolve) => { release = resolve; }),
    },
  });
  ws.feed(HELLO);
  await tick();
  ws.feed(message("events/click?user=ann", "hi"), message("slow", ""));
  await tick();
  assert.deepEqual(seen, [["click", "ann", "hi"]]);
  assert.deepEqual(ws.sent.filter((f) => f.code === 0x9d).map((f) => [...f.payload]), [[2], [1]]); // one back
  ws.feed(message("nobody", "x")); // dropped (§20.4): its credit comes back too
  await tick();
  assert.deepEqual(ws.sent.filter((f) => f.code === 0x9d).map((f) => [...f.payload]), [[2], [1], [1]]);
  release();
  await tick();
  assert.deepEqual(ws.sent.filter((f) => f.code === 0x9d).map((f) => [...f.payload]), [[2], [1], [1], [1]]);
});

for (const [what, frames, section] of [
  ["a message beyond the granted credit", [message("a", "1"), message("a", "2")], "§20.3"],
  ["a messageCredit of 0", [credit(0)], "§20.2"],
  ["a message whose name is not UTF-8", [{ type: "extension", code: 0x9c, payload: Uint8Array.of(2, 0xff, 0xfe) }], "§20.2"],
  ["a reserved type of extension messages", [{ type: "extension", code: 0x9e, payload: new Uint8Array(0) }], "§4.4"],
]) {
  test(`${what} is a connection error citing ${section}`, async () => {
    const { ws, conn } = scripted({ maxMessagesInFlight: 1, handlers: { a: () => new Promise(() => {}) } });
    ws.feed(HELLO, ...frames);
    const error = await conn.closed;
    assert.ok(error instanceof ProtocolError && error.section === section, String(error));
  });
}

// a server whose handler answers each message by publishing what it got on "inbox"
const SCRIPT = `
import asyncio, sys
import rstreams
from rstreams.net import serve
got = []
async def main():
    def on_event(message):
        got.append(message.params["kind"].encode() + b"=" + bytes(message.payload))
    server = await serve("tcp://127.0.0.1:0", {"inbox": lambda params: rstreams.from_iterable(list(got))},
                         handlers={"events/{kind}": on_event})
    print("serving on", server.url, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
`;

describe("against rstreams serve", { skip }, () => {
  const peer = pythonPeer({ source: SCRIPT });

  test("send() reaches the Python handler, within the credit it grants (16)", async () => {
    const server = peer.conn;
    assert.ok(server.extensions.has(7));
    for (let i = 0; i < 40; i++) await server.send("events/click", `n${i}`); // more than one grant's worth
    let inbox = [];
    for (let round = 0; round < 100 && inbox.length < 40; round++) {
      inbox = [];
      for await (const item of server.stream("inbox", { decode: "text" })) inbox.push(item);
      if (inbox.length < 40) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.deepEqual(inbox, Array.from({ length: 40 }, (_, i) => `click=n${i}`));
  });
});
