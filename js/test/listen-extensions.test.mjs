// listen() with extensions 3-9 (PROTOCOL.md §16-§21): the Python client (test/fixtures/client.py,
// in a subprocess) and the JavaScript client against one JavaScript server offering content
// types, metadata, error codes, messages and channels; a client that predates them keeps the
// behaviour it had; resumption across transport breaks made by a proxy.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { fileURLToPath } from "node:url";
import {
  ChannelInputError, ERROR_CODES, RemoteStreamError, connect, fromIterable, listen, withContentType,
} from "../src/node.js";
import { pythonLines, skip } from "./servers.mjs";
import { tick } from "./support.mjs";

const CLIENT = fileURLToPath(new URL("fixtures/client.py", import.meta.url));
const text = (bytes) => new TextDecoder().decode(bytes);

/** `input` with `fn` applied to each element. */
function mapped(input, fn) {
  return {
    subscribe(subscriber) {
      input.subscribe({
        onSubscribe: (s) => subscriber.onSubscribe(s),
        onNext: (element) => subscriber.onNext(fn(element)),
        onError: (error) => subscriber.onError(error),
        onComplete: () => subscriber.onComplete(),
      });
    },
  };
}

/** The server every test here talks to; `seen` records what its hooks were given. */
async function extensionServer(url = "tcp://127.0.0.1:0", extra = {}) {
  const seen = { inbox: [], authorized: [], inputs: [] };
  const server = await listen(url, {
    onerror: () => {},
    publishers: {
      ints: withContentType(fromIterable([1n, 2, -3n]), "application/vnd.rsio.int64le"),
      rows: withContentType(fromIterable([{ a: 1 }, { b: "é" }]), "application/json"),
      echo: (params, path, conn, metadata) => fromIterable([...metadata].map(([key, value]) => `${key}=${text(value)}`)),
      secret: fromIterable(["the secret"]),
      busy: () => { throw new RemoteStreamError("try again later", ERROR_CODES.UNAVAILABLE); },
      broken: () => { throw new Error("a bug in the factory"); },
      inbox: () => fromIterable([...seen.inbox]),
      "count": (params) => fromIterable(Array.from({ length: Number(params.n) }, (_, i) => String(i))),
    },
    channels: {
      upper: (input, params, path, conn, metadata) => {
        seen.inputs.push(metadata.text("x-tenant") ?? null);
        return mapped(input, (bytes) => text(bytes).toUpperCase());
      },
    },
    handlers: { "events/{kind}": (message) => { seen.inbox.push(`${message.params.kind}=${text(message.payload)}`); } },
    authenticate: () => "anyone",
    authRequired: false,
    authorize(principal, name, metadata) {
      seen.authorized.push([name, metadata.text("x-tenant") ?? null]);
      return name !== "secret" || metadata.text("x-tenant") === "root";
    },
    ...extra,
  });
  return { server, seen };
}

const byName = (results) => results.map((r) => [r.name, r.items ?? r.error]);

const SCENARIOS = ["content", "metadata", "codes", "messages", "channel", "old"];

describe("the Python client against listen()", { skip }, () => {
  let server;
  let seen;
  // One Python process runs the scenarios in turn, each on a connection of its own. Each one's
  // result lines, and the authorize calls the server made meanwhile (a scenario's results, and
  // the next one's first line, come back after the server's calls for it)
  const scenarios = {};
  before(async () => {
    ({ server, seen } = await extensionServer());
    let current = null;
    const run = await pythonLines([CLIENT, SCENARIOS.join(","), server.url], (line) => {
      const parsed = JSON.parse(line);
      if (parsed.scenario === undefined) current.results.push(parsed);
      else {
        if (current !== null) current.authorized = seen.authorized.slice(current.authorizedFrom);
        current = { results: [], authorizedFrom: seen.authorized.length };
        scenarios[parsed.scenario] = current;
      }
    });
    assert.equal(run.code, 0, run.stderr);
    current.authorized = seen.authorized.slice(current.authorizedFrom);
  });
  after(async () => { await server?.close(); });

  /** The JSON lines the Python client printed for `scenario`. */
  const pythonClient = (scenario) => scenarios[scenario].results;

  test("§17: content types announced per publisher: the Python client decodes without a codec", () => {
    const results = pythonClient("content");
    assert.deepEqual(byName(results), [["ints", [1, 2, -3]], ["rows", [{ a: 1 }, { b: "é" }]]]);
  });

  test("§18: metadata reaches authorize and the publisher factory", () => {
    const results = pythonClient("metadata");
    assert.deepEqual(results[0], { name: "echo", items: [
      "traceparent=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-tenant=acme"] });
    assert.deepEqual(results[1].error, { type: "Unauthorized", code: 4,
      message: "unauthorized: subscribe to 'secret' is not allowed for this principal (PROTOCOL.md §15.4)" });
    assert.deepEqual(results[2], { name: "secret", items: ["the secret"] });
    assert.deepEqual(scenarios.metadata.authorized, [["echo", "acme"], ["secret", "acme"], ["secret", "root"]]);
  });

  test("§19: refusals are typed errors: unknown 2, a coded factory error its code, a failing factory 9, authorize 4", () => {
    const results = pythonClient("codes");
    assert.deepEqual(results.map((r) => [r.name, r.error.type, r.error.code]), [
      ["nothing/here", "UnknownPublisher", 2], ["busy", "Unavailable", 8], ["broken", "InternalError", 9],
      ["secret", "Unauthorized", 4]]);
    assert.equal(results[1].error.message, "try again later");
    assert.equal(results[2].error.message, "publisher 'broken' could not be created: its factory failed (PROTOCOL.md §19.2)");
  });

  test("§20: messages reach the handlers, within the credit the server grants", () => {
    const [result] = pythonClient("messages");
    assert.deepEqual(result.inbox, ["click=click", "key=key", "click=click"]);
  });

  test("§21: a channel: the input streams to the factory's Publisher, the output comes back; §21.6: a split input element", () => {
    const [result, large] = pythonClient("channel");
    assert.deepEqual(result.items, ["A", "BC", "DEF"]);
    assert.deepEqual(large, { sizes: [150_000, 1], upper: [true, true] });
  });

  test("a Python client without extensions 4-9 gets what it got before: bytes, no codes, no metadata", () => {
    const results = pythonClient("old");
    const [ints, rows, echo, secretAcme, secretRoot, unknown, busy] = results;
    assert.deepEqual(ints.items, ["\u0001\u0000\u0000\u0000\u0000\u0000\u0000\u0000",
      "\u0002\u0000\u0000\u0000\u0000\u0000\u0000\u0000", "fdffffffffffffff"]); // bytes (UTF-8 or hex)
    assert.deepEqual(rows.items, ['{"a":1}', '{"b":"\\u00e9"}']);
    assert.deepEqual(echo.items, []); // the metadata never left the client (§18.1)
    for (const refused of [secretAcme, secretRoot]) assert.deepEqual([refused.error.type, refused.error.code], ["RemoteStreamError", null]);
    assert.deepEqual([unknown.error.type, unknown.error.code], ["RemoteStreamError", null]);
    assert.deepEqual([busy.error.type, busy.error.code], ["RemoteStreamError", null]);
    assert.match(busy.error.message, /try again later/);
  });
});

describe("the JavaScript client against listen()", () => {
  let server;
  let seen;
  let conn;
  before(async () => {
    ({ server, seen } = await extensionServer("ws://127.0.0.1:0/rsio"));
    conn = await connect(server.url, { onerror: () => {} });
    await conn.ready;
  });
  after(async () => {
    await conn?.close();
    await server?.close();
  });

  test("the server's hello lists extensions 1, 2, 4-9 (and 3 with resume)", () => {
    assert.deepEqual([...conn.extensions].sort(), [1, 4, 5, 6, 7, 8, 9]); // the client offers no auth
  });

  test("§17: decode 'auto' follows the announced types; fixed-size types are packed with elementSize 8", async () => {
    const ints = [];
    for await (const n of conn.stream("ints", { decode: "auto" })) ints.push(n);
    assert.deepEqual(ints, [1n, 2n, -3n]);
    assert.deepEqual(await conn.request("rows", { decode: "auto" }), { a: 1 });
  });

  test("§18, §19: metadata reaches the factory and authorize; refusals carry their codes", async () => {
    const echoed = [];
    for await (const item of conn.stream("echo", { decode: "text", metadata: { "x-tenant": "acme" } })) echoed.push(item);
    assert.deepEqual(echoed, ["x-tenant=acme"]);
    assert.equal(await conn.request("secret", { decode: "text", metadata: { "x-tenant": "root" } }), "the secret");
    for (const [name, code] of [["secret", 4], ["busy", 8], ["broken", 9], ["nope", 2]]) {
      await assert.rejects(conn.request(name), (error) => error instanceof RemoteStreamError && error.code === code, name);
    }
  });

  test("§20, §21: send() reaches a handler; a channel round trip with metadata", async () => {
    seen.inbox.length = 0;
    await conn.send("events/js", "hello");
    while (seen.inbox.length === 0) await tick();
    assert.deepEqual(seen.inbox, ["js=hello"]);
    const out = [];
    for await (const item of conn.channel("upper", ["x", "yz"], { decode: "text", metadata: { "x-tenant": "t1" } })) out.push(item);
    assert.deepEqual(out, ["X", "YZ"]);
    assert.equal(seen.inputs.at(-1), "t1");
    const large = [];
    for await (const item of conn.channel("upper", ["z".repeat(200_000), "w"], { decode: "text" })) large.push(item);
    assert.deepEqual(large, ["Z".repeat(200_000), "W"]); // in parts both ways (§21.6, §8)
    await assert.rejects(async () => { for await (const item of conn.channel("nope", [])) assert.fail(item); },
      /no channel named 'nope' \(PROTOCOL\.md §21\.3\)/);
  });

  test("a JavaScript client without extensions 4-9 is served as before", async () => {
    const old = await connect(server.url, { onerror: () => {}, disabledExtensions: [4, 5, 6, 7, 8, 9] });
    try {
      await old.ready;
      assert.deepEqual([...old.extensions].sort(), [1]);
      assert.deepEqual([...(await old.request("ints"))], [1, 0, 0, 0, 0, 0, 0, 0]);
      await assert.rejects(old.request("busy"), (error) => error.code === null && error.message === "try again later");
      await assert.rejects(old.send("events/x", "y"), /§20\.1/);
    } finally {
      await old.close();
    }
  });
});

test("§21.5: a served channel's input ends with its output; the input's error reaches the factory's Publisher", async () => {
  const inputs = [];
  const server = await listen("tcp://127.0.0.1:0", {
    onerror: () => {},
    channels: {
      first: (input) => ({ // answers once the first input element is in, then completes
        subscribe(subscriber) {
          const record = { items: [], error: null };
          inputs.push(record);
          let out;
          subscriber.onSubscribe({ request() {}, cancel() {} });
          input.subscribe({
            onSubscribe(s) { out = s; s.request(1); },
            onNext(bytes) { record.items.push(text(bytes)); subscriber.onNext(bytes); subscriber.onComplete(); },
            onError(error) { record.error = error; },
          });
          void out;
        },
      }),
      fails: (input) => ({
        subscribe(subscriber) {
          const record = { items: [], error: null };
          inputs.push(record);
          subscriber.onSubscribe({ request() {}, cancel() {} });
          input.subscribe({
            onSubscribe(s) { s.request(10); },
            onNext(bytes) { record.items.push(text(bytes)); },
            onError(error) { record.error = error; subscriber.onError(error); },
          });
        },
      }),
    },
  });
  try {
    const client = await connect(server.url, { onerror: () => {} });
    const out = [];
    for await (const item of client.channel("first", ["a", "b", "c"], { decode: "text" })) out.push(item);
    assert.deepEqual(out, ["a"]);
    assert.deepEqual(inputs[0].items, ["a"]);
    assert.match(String(inputs[0].error), /the channel's subscription ended before its input \(PROTOCOL\.md §21\.5\)/);
    const failing = { subscribe(s) { s.onSubscribe({ request() { s.onNext("x"); s.onError(new TypeError("no more")); }, cancel() {} }); } };
    await assert.rejects(async () => { for await (const item of client.channel("fails", failing)) void item; },
      (error) => error instanceof RemoteStreamError && /TypeError: no more/.test(error.message));
    assert.ok(inputs[1].error instanceof ChannelInputError, String(inputs[1].error));
    assert.deepEqual(inputs[1].items, ["x"]);
    await client.close();
  } finally {
    await server.close();
  }
});

/** A TCP proxy to `target` whose cut() breaks every transport through it (both ends see a reset). */
async function breakableProxy(target) {
  const { hostname, port } = new URL(target);
  const live = new Set();
  const proxy = net.createServer((client) => {
    const upstream = net.connect({ host: hostname, port: Number(port) });
    const pair = [client, upstream];
    live.add(pair);
    client.pipe(upstream);
    upstream.pipe(client);
    const kill = () => { client.destroy(); upstream.destroy(); live.delete(pair); };
    for (const socket of pair) {
      socket.on("error", kill);
      socket.on("close", kill);
    }
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const cut = () => {
    for (const pair of [...live]) for (const socket of pair) socket.destroy();
  };
  return {
    url: `tcp://127.0.0.1:${proxy.address().port}`,
    cut,
    /** Stop accepting, and break what is still open. */
    close() {
      const closed = new Promise((resolve) => { proxy.close(() => resolve()); });
      cut();
      return closed;
    },
  };
}

for (const who of ["Python", "JavaScript"]) {
  test(`§16: a ${who} client's session survives transport breaks; every element arrives once, in order`,
    { skip: who === "Python" ? skip : false, timeout: 60_000 }, async () => {
      const connections = [];
      const { server } = await extensionServer("tcp://127.0.0.1:0", { resume: { bufferBytes: 64 * 1024 }, onconnection: (c) => connections.push(c) });
      const proxy = await breakableProxy(server.url);
      try {
        let got;
        if (who === "Python") {
          const run = await pythonLines([CLIENT, "resume", proxy.url, "count?n=400"], (line) => {
            const { progress } = JSON.parse(line);
            if (progress === 100 || progress === 250) proxy.cut();
          });
          assert.equal(run.code, 0, run.stderr);
          got = JSON.parse(run.lines.at(-1)).items.map(String);
        } else {
          const client = await connect(proxy.url, { onerror: () => {}, resume: { backoff: 20 } });
          got = [];
          for await (const item of client.stream("count?n=400", { decode: "text", window: 8 })) {
            got.push(item);
            if (got.length === 100 || got.length === 250) proxy.cut();
            if (got.length % 50 === 0) await new Promise((resolve) => setTimeout(resolve, 20));
          }
          assert.equal(client.resumes, 2);
          await client.close();
        }
        assert.deepEqual(got, Array.from({ length: 400 }, (_, i) => String(i)));
        assert.equal(connections.length, 1); // the resumed transports made no connection of their own
        assert.equal(connections[0].resumes, 2);
      } finally {
        await proxy.close();
        await server.close();
      }
    });
}

test("§16.3: a broken session not resumed within sessionTimeout ends, its publishers cancelled", async () => {
  let cancelled = false;
  const server = await listen("tcp://127.0.0.1:0", {
    onerror: () => {},
    resume: { sessionTimeout: 100 },
    publishers: { never: { subscribe(s) { s.onSubscribe({ request() {}, cancel() { cancelled = true; } }); } } },
  });
  const proxy = await breakableProxy(server.url);
  try {
    const client = await connect(proxy.url, { onerror: () => {}, resume: { attempts: 1, backoff: 0 } });
    client.subscribe("never", { onSubscribe(s) { s.request(1); }, onError() {} });
    await client.ready;
    while (server.connections.size === 0 || [...server.connections][0].served.length === 0) await tick();
    const [served] = server.connections;
    await proxy.close(); // the transport breaks, and no resume can get through any more
    const error = await served.closed;
    assert.match(String(error?.message), /the session was not resumed within 0\.1 s \(PROTOCOL\.md §16\.3\)/);
    assert.ok(cancelled);
    assert.equal(server.sessions.size, 0);
    await client.closed;
  } finally {
    await server.close();
  }
});
