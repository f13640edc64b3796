// Extension error-codes (PROTOCOL.md §19) switched off with `disabledExtensions: [6]`, on
// connect() and on listen(), against real Python processes: the hello does not list it, no
// errorCode or goodbyeCode goes out either way (the bytes are read off a proxy in between),
// and the Python peer sees the extension inactive: refusals and goodbyes without codes. The
// same run with the default (offered) is the control.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { RemoteStreamError, connect, fromIterable, listen } from "../src/node.js";
import { EXTENSIONS, decodeAll } from "../src/rsio-wire.js";
import { pythonLines, pythonServer, skip } from "./servers.mjs";

const { id: ERROR_CODES_ID, types: { errorCode: ERROR_CODE, goodbyeCode: GOODBYE_CODE } } = EXTENSIONS.errorCodes;

/** A TCP proxy to `target` that keeps what went each way: `up` (client to server) and `down`. */
async function recordingProxy(target) {
  const proxy = { up: [], down: [] };
  const server = net.createServer({ allowHalfOpen: true }, (client) => {
    const upstream = net.connect({ ...target, allowHalfOpen: true });
    client.on("data", (data) => { proxy.up.push(data); upstream.write(data); });
    upstream.on("data", (data) => { proxy.down.push(data); client.write(data); });
    client.on("end", () => upstream.end());
    upstream.on("end", () => client.end());
    for (const [socket, other] of [[client, upstream], [upstream, client]]) {
      socket.on("error", () => other.destroy());
      socket.on("close", () => other.destroy());
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `tcp://127.0.0.1:${server.address().port}`;
  proxy.close = () => new Promise((resolve) => { server.close(resolve); });
  return proxy;
}

/** The hello's extensions and the error-codes messages (0x98, 0x99) among the bytes one way. */
function seen(chunks) {
  const frames = decodeAll(Buffer.concat(chunks));
  const codes = frames.filter((f) => f.type === "extension" && (f.code === ERROR_CODE || f.code === GOODBYE_CODE));
  return { hello: frames[0].extensions, codes: codes.map((f) => f.code), goodbye: frames.some((f) => f.type === "goodbye") };
}

const target = (url) => {
  const { hostname, port } = new URL(url);
  return { host: hostname, port: Number(port) };
};

// a server that tells its clients which extensions their connection has active
const SERVER = `
import asyncio
import rstreams
from rstreams.net import serve
conns = []
def active(params):
    return rstreams.from_iterable([",".join(str(i) for i in sorted(conns[-1].extensions)).encode()])
async def main():
    server = await serve("tcp://127.0.0.1:0", {"active": active}, on_connection=conns.append)
    print("serving on", server.url, flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
`;

test("connect({disabledExtensions: [6]}) to rstreams serve: no code goes out or comes in; the server has it inactive", { skip }, async () => {
  const server = await pythonServer(SERVER);
  try {
    for (const [disabledExtensions, on] of [[[6], false], [undefined, true]]) {
      const proxy = await recordingProxy(target(server.url));
      try {
        const conn = await connect(proxy.url, { disabledExtensions, onerror: () => {} });
        const active = [];
        for await (const ids of conn.stream("active", { decode: "text" })) active.push(ids);
        assert.equal(conn.extensions.has(ERROR_CODES_ID), on);
        assert.equal(active[0].split(",").includes(String(ERROR_CODES_ID)), on, `the server's active set: ${active[0]}`);
        const refused = await new Promise((resolve) => {
          conn.subscribe("nothing/here", { onSubscribe(s) { s.request(1); }, onError: resolve, onComplete: () => resolve(null) });
        });
        assert.ok(refused instanceof RemoteStreamError, String(refused));
        assert.equal(refused.code, on ? 2 : null); // unknown publisher (§19.2)
        assert.equal(await conn.close("done"), null);
        const up = seen(proxy.up);
        const down = seen(proxy.down);
        assert.equal(up.hello.includes(ERROR_CODES_ID), on);
        assert.ok(up.goodbye && down.goodbye);
        assert.deepEqual(up.codes, on ? [GOODBYE_CODE] : []);
        if (on) assert.ok(down.codes.includes(ERROR_CODE), String(down.codes));
        else assert.deepEqual(down.codes, []);
      } finally {
        await proxy.close();
      }
    }
  } finally {
    await server.stop();
  }
});

// a client that is refused, says what is active, then waits on a stream until the server closes
const CLIENT = `
import asyncio, json, sys
from rstreams.net import RemoteStreamError, connect
def emit(**fields):
    print(json.dumps(fields), flush=True)
async def main(url):
    conn = await connect(url)
    try:
        await conn.publisher("nothing/here").collect()
    except RemoteStreamError as error:
        emit(refused=error.code)
    emit(extensions=sorted(conn.extensions))
    try:
        await conn.publisher("forever").collect()
    except Exception as error:
        emit(ended=type(error).__name__, code=getattr(error, "code", None))
    await conn.aclose()
asyncio.run(main(sys.argv[1]))
`;

test("listen({disabledExtensions: [6]}): the Python client has it inactive; its refusal and the server's goodbye carry no code", { skip }, async () => {
  for (const [disabledExtensions, on] of [[[6], false], [undefined, true]]) {
    let subscribed;
    const open = new Promise((resolve) => { subscribed = resolve; });
    const server = await listen("tcp://127.0.0.1:0", {
      disabledExtensions,
      onerror: () => {},
      publishers: {
        forever: () => ({ subscribe(s) { s.onSubscribe({ request() {}, cancel() {} }); subscribed(); } }),
        unused: fromIterable([]),
      },
    });
    const proxy = await recordingProxy(target(server.url));
    try {
      const run = pythonLines(["-c", CLIENT, proxy.url]);
      await open;
      await server.close();
      const { code, lines, stderr } = await run;
      assert.equal(code, 0, stderr);
      const [refused, active, ended] = lines.map((line) => JSON.parse(line));
      assert.deepEqual(refused, { refused: on ? 2 : null });
      assert.equal(active.extensions.includes(ERROR_CODES_ID), on, String(active.extensions));
      assert.equal(ended.code, on ? 0 : null, JSON.stringify(ended)); // the goodbye's code: normal (§19.2)
      const down = seen(proxy.down);
      assert.equal(down.hello.includes(ERROR_CODES_ID), on);
      assert.ok(down.goodbye);
      assert.deepEqual(down.codes, on ? [ERROR_CODE, GOODBYE_CODE] : []);
    } finally {
      await proxy.close();
      await server.close();
    }
  }
});
