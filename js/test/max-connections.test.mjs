// listen()'s connection limit (as rstreams servers' max_connections, PROTOCOL.md §10): a
// connection beyond it is refused at its clientHello, with error code 8 (unavailable) when the
// hello offers error-codes, and nothing it sent after the hello is served; and close(), which
// says goodbye `server closing` with code 0 (normal) to every connection, refused ones too.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { ConnectionClosedError, ERROR_CODES, connect, fromIterable, listen } from "../src/node.js";
import { EXTENSIONS, FrameDecoder, concat, encodeFrame } from "../src/rsio-wire.js";
import { python, skip } from "./servers.mjs";

const REFUSAL = "too many connections: this server accepts at most 1 (maxConnections)";
const { goodbyeCode: GOODBYE_CODE } = EXTENSIONS.errorCodes.types;
const hello = (...extensions) => encodeFrame({ type: "clientHello", version: 0, extensions });

/** A server of one connection whose publisher "count" counts its subscribes in `made`. */
async function server(made, options = {}) {
  return listen("tcp://127.0.0.1:0", {
    maxConnections: 1,
    publishers: { count: () => { made.count += 1; return fromIterable(["0", "1", "2"]); } },
    ...options,
  });
}

/** Frames as words, for the assertions: "serverHello goodbyeCode(8) goodbye(reason)". */
function describe(frames) {
  return frames.map((f) => {
    if (f.type === "extension" && f.code === GOODBYE_CODE) return `goodbyeCode(${f.payload[0]})`;
    if (f.type === "goodbye") return `goodbye(${f.reason})`;
    return f.type;
  }).join(" ");
}

/** A raw peer: writes `bytes` in one write once connected, `answer(frames, socket)` on each read. */
function rawPeer(url, bytes, answer = () => {}) {
  const { port } = new URL(url);
  const decoder = new FrameDecoder();
  const frames = [];
  const socket = net.connect({ host: "127.0.0.1", port: Number(port) }, () => { if (bytes) socket.write(bytes); });
  socket.on("data", (data) => {
    decoder.push(data);
    for (let f = decoder.next(); f !== null; f = decoder.next()) frames.push(f);
    answer(frames, socket);
  });
  socket.on("error", () => {});
  const ended = new Promise((resolve) => socket.on("close", () => resolve(frames)));
  return { socket, frames, ended };
}

async function holder(url) {
  const conn = await connect(url);
  await conn.ready;
  return conn;
}

test("a connection beyond maxConnections is refused at its hello with code 8; nothing after the hello is served",
  { timeout: 30_000 }, async () => {
    const made = { count: 0 };
    const announced = [];
    const local = await server(made, { onconnection: (conn) => announced.push(conn) });
    const held = await holder(local.url);
    try {
      const together = concat([hello(EXTENSIONS.keepalive.id, EXTENSIONS.errorCodes.id),
        encodeFrame({ type: "subscribe", publisher: "count", subscriber: 1, initial_demand: 5 }),
        encodeFrame({ type: "request", subscriber: 1, demand: 3 })]);
      const frames = await rawPeer(local.url, together).ended;
      assert.equal(describe(frames), `serverHello goodbyeCode(8) goodbye(${REFUSAL})`);
      assert.equal(made.count, 0, "the refused connection's subscribe reached the publisher");
      assert.equal(announced.length, 1, "the refused connection was passed to onconnection");
      assert.equal(local.connections.size, 1);
      assert.equal(held.state, "OPEN");
      // without error-codes the goodbye comes alone; bytes after the hello are not read either
      const plain = await rawPeer(local.url, concat([hello(EXTENSIONS.keepalive.id), new Uint8Array(64).fill(0x7f)])).ended;
      assert.equal(describe(plain), `serverHello goodbye(${REFUSAL})`);
    } finally {
      await held.close();
      await local.close();
    }
  });

test("a client beyond the limit fails with code 8; a freed place is taken again", { timeout: 30_000 }, async () => {
  const made = { count: 0 };
  const local = await server(made);
  try {
    const first = await holder(local.url);
    const second = await connect(local.url, { onerror: () => {} });
    const error = await second.closed;
    assert.ok(error instanceof ConnectionClosedError, String(error));
    assert.equal(error.code, ERROR_CODES.UNAVAILABLE);
    assert.equal(error.reason, REFUSAL);
    const [admitted] = local.connections;
    await first.close();
    await admitted.closed; // the server's end of it is over: its place is free
    const third = await holder(local.url);
    assert.equal(new TextDecoder().decode(await third.request("count")), "0");
    await third.close();
    assert.equal(made.count, 1);
  } finally {
    await local.close();
  }
});

test("with resume a session counts, and a connection beyond the limit gets code 8 and no resumeToken",
  { timeout: 30_000 }, async () => {
    let admit;
    const admitted = new Promise((resolve) => { admit = resolve; });
    const local = await server({ count: 0 }, { resume: true, onconnection: (conn) => admit(conn) });
    const held = await connect(local.url, { resume: true });
    try {
      await (await admitted).ready; // counted once its first byte showed a new session
      const frames = await rawPeer(local.url, hello(EXTENSIONS.resume.id, EXTENSIONS.errorCodes.id)).ended;
      assert.equal(describe(frames), `serverHello goodbyeCode(8) goodbye(${REFUSAL})`);
      assert.equal(held.state, "OPEN");
    } finally {
      await held.close();
      await local.close();
    }
  });

test("maxConnections that is not an integer >= 1 is refused naming the option", async () => {
  for (const bad of [0, -1, 1.5, "3", Number.NaN, null]) {
    await assert.rejects(listen("tcp://127.0.0.1:0", { maxConnections: bad }),
      (e) => e instanceof RangeError && /^maxConnections must be an integer >= 1, got /.test(e.message), String(bad));
  }
});

test("close() says goodbye 'server closing' with code 0, to a refused connection too; before a hello, without a code",
  { timeout: 30_000 }, async () => {
    const local = await server({ count: 0 }, { handshakeTimeout: null });
    const answer = (frames, socket) => { // the answer to the goodbye (§9.1)
      if (frames.at(-1)?.type === "goodbye") socket.end(encodeFrame({ type: "goodbye", reason: "" }));
    };
    const admitted = rawPeer(local.url, hello(EXTENSIONS.errorCodes.id), answer);
    await new Promise((resolve) => admitted.socket.once("data", resolve)); // its serverHello: accepted
    await [...local.connections][0].ready; // its hello is in: the goodbye carries its code
    const refused = rawPeer(local.url, null); // no hello yet: its refusal waits for it
    await new Promise((resolve) => refused.socket.once("data", resolve));
    assert.equal(local.connections.size, 1);
    await local.close();
    assert.equal(describe(await admitted.ended), "serverHello goodbyeCode(0) goodbye(server closing)");
    assert.equal(describe(await refused.ended), "serverHello goodbye(server closing)");
  });

test("with resume, close() says goodbye 'server closing' to a transport whose first byte has not come, as without",
  { timeout: 30_000 }, async () => {
    for (const resume of [true, false]) {
      const announced = [];
      const local = await server({ count: 0 }, { resume, handshakeTimeout: null, onconnection: (c) => announced.push(c) });
      const silent = rawPeer(local.url, null); // sends nothing: neither a new session nor a resume yet (§16.3)
      await new Promise((resolve) => silent.socket.once("data", resolve)); // its serverHello: accepted
      await local.close(); // no handshake timeout would end it otherwise
      assert.equal(describe(await silent.ended), "serverHello goodbye(server closing)", `resume: ${resume}`);
      assert.equal(announced.length, resume ? 0 : 1); // with resume, announced at a first byte that never came
    }
  });

const PYTHON_CLIENT = `
import asyncio, sys
import rstreams
async def main(url):
    try:
        conn = await rstreams.connect(url, keepalive=None)
        try:
            await conn.request('count')
            print('served', None, flush=True)
        finally:
            await conn.aclose()
    except Exception as error:
        print(type(error).__name__, getattr(error, 'code', None), str(error), flush=True)
asyncio.run(main(sys.argv[1]))
`;

test("a Python client beyond the limit reads code 8", { skip, timeout: 60_000 }, async () => {
  const made = { count: 0 };
  const local = await server(made);
  const held = await holder(local.url);
  try {
    const run = await python(["-c", PYTHON_CLIENT, local.url]);
    assert.equal(run.code, 0, run.stderr);
    const line = run.stdout.trim();
    assert.ok(line.includes(" 8 ") && line.includes(REFUSAL), line + run.stderr);
    assert.equal(made.count, 0);
  } finally {
    await held.close();
    await local.close();
  }
});
