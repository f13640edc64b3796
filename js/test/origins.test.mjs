// listen()'s ws:// server and browser pages (cross-site WebSocket hijacking, docs/security.md):
// a handshake with an Origin header is accepted from the server's own origin or one of
// `origins` ("*": every page), refused with HTTP 403 naming the option otherwise; one without
// Origin (Node, Python, Java clients) is accepted. Each refusal is reported to onerror (default:
// one line on console.error). A malformed origin is refused by listen().
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { WebSocket } from "ws";
import { connect, fromIterable, listen } from "../src/node.js";

const OTHER = "https://elsewhere.example";

/** Serve "words" on ws://127.0.0.1:0/rsio with `options` (refusals unreported unless they say), run `body(server)`, close. */
async function serving(options, body) {
  const server = await listen("ws://127.0.0.1:0/rsio", {
    publishers: { words: () => fromIterable(["a", "b"]) }, onerror: () => {}, ...options,
  });
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

/** The `ws` package's WebSocket sending `origin` as a browser page at that origin does. */
const from = (origin) => class extends WebSocket {
  constructor(url, protocols) {
    super(url, protocols, { origin });
  }
};

/** Subscribe to "words" as a page at `origin` (undefined: no Origin header), the elements read. */
async function words(url, origin) {
  const conn = await connect(url, origin === undefined ? {} : { WebSocket: from(origin) });
  try {
    const out = [];
    for await (const word of conn.stream("words", { decode: "text" })) out.push(word);
    return out;
  } finally {
    await conn.close();
  }
}

/** The server's answer to a bare handshake with `origin`: {status, body} (101: accepted). */
function handshake(url, origin) {
  const { hostname, port, pathname } = new URL(url);
  return new Promise((resolve, reject) => {
    const request = http.get({
      hostname, port, path: pathname,
      headers: {
        Connection: "Upgrade", Upgrade: "websocket", "Sec-WebSocket-Version": "13",
        "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": "rsio.v0", Origin: origin,
      },
    });
    request.on("upgrade", (response, socket) => {
      socket.destroy();
      resolve({ status: response.statusCode, body: "" });
    });
    request.on("response", (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => { body += chunk; });
      response.on("end", () => resolve({ status: response.statusCode, body }));
    });
    request.on("error", reject);
  });
}

test("a page from another origin gets HTTP 403 naming `origins`; the server keeps serving", { timeout: 20000 }, async () => {
  await serving({}, async (server) => {
    const refused = await handshake(server.url, OTHER);
    assert.equal(refused.status, 403);
    assert.match(refused.body, /a page at origin https:\/\/elsewhere\.example may not connect to this RS\.io server/);
    assert.match(refused.body, /listen with \{origins: \["https:\/\/elsewhere\.example"\]\}/);
    await assert.rejects(words(server.url, OTHER), /cannot open a WebSocket.*403/);
    assert.deepEqual(await words(server.url, undefined), ["a", "b"]);
  });
});

test("each refusal is reported to onerror, naming the origin and `origins`; an accepted page is not", { timeout: 20000 }, async () => {
  const reported = [];
  await serving({ onerror: (error) => reported.push(error) }, async (server) => {
    const { port } = new URL(server.url);
    assert.equal((await handshake(server.url, OTHER)).status, 403);
    assert.deepEqual(await words(server.url, `http://localhost:${port}`), ["a", "b"]);
  });
  assert.equal(reported.length, 1, String(reported));
  assert.ok(reported[0] instanceof Error);
  assert.equal(reported[0].message, "refused a WebSocket handshake from a page at origin https://elsewhere.example"
    + ' (HTTP 403); to allow it, listen with {origins: ["https://elsewhere.example"]}');
});

test("without onerror a refusal is one line on console.error", { timeout: 20000 }, async (t) => {
  const lines = [];
  t.mock.method(console, "error", (...args) => lines.push(args.join(" ")));
  await serving({ onerror: undefined }, async (server) => {
    assert.equal((await handshake(server.url, OTHER)).status, 403);
  });
  t.mock.restoreAll();
  assert.deepEqual(lines, ["rsio: refused a WebSocket handshake from a page at origin https://elsewhere.example"
    + ' (HTTP 403); to allow it, listen with {origins: ["https://elsewhere.example"]}']);
});

test("a page from the server's own origin is accepted, by every loopback name of a loopback host", { timeout: 20000 }, async () => {
  await serving({}, async (server) => {
    const { port } = new URL(server.url);
    for (const own of [`http://127.0.0.1:${port}`, `http://localhost:${port}`, `http://[::1]:${port}`]) {
      assert.deepEqual(await words(server.url, own), ["a", "b"], own);
    }
    assert.equal((await handshake(server.url, `http://127.0.0.1:${Number(port) + 1}`)).status, 403, "another port");
    assert.equal((await handshake(server.url, `https://127.0.0.1:${port}`)).status, 403, "another scheme");
  });
});

test("a client sending no Origin is accepted", { timeout: 20000 }, async () => {
  await serving({}, async (server) => {
    assert.deepEqual(await words(server.url, undefined), ["a", "b"]);
  });
});

test("origins allows those pages (compared as browsers send them), and no others", { timeout: 20000 }, async () => {
  await serving({ origins: ["HTTPS://App.Example:443", "http://dev.example:5173"] }, async (server) => {
    assert.deepEqual(await words(server.url, "https://app.example"), ["a", "b"]);
    assert.deepEqual(await words(server.url, "http://dev.example:5173"), ["a", "b"]);
    assert.equal((await handshake(server.url, OTHER)).status, 403);
    assert.equal((await handshake(server.url, "http://dev.example:5174")).status, 403);
  });
});

test('origins ["*"] accepts every page', { timeout: 20000 }, async () => {
  await serving({ origins: ["*"] }, async (server) => {
    assert.deepEqual(await words(server.url, OTHER), ["a", "b"]);
    assert.deepEqual(await words(server.url, "null"), ["a", "b"]); // a sandboxed or file:// page
  });
});

test("a malformed origins is refused by listen(), naming the option and what an origin is", async () => {
  for (const bad of ["https://app.example/path", "https://app.example?q", "ftp://app.example", "app.example",
    "https://user@app.example", "https://app.example#top", " https://app.example", "https://"]) {
    await assert.rejects(listen("ws://127.0.0.1:0/rsio", { origins: [bad] }),
      (error) => error instanceof RangeError && error.message.startsWith("origins: origin ")
        && error.message.includes("SCHEME://HOST[:PORT]"), bad);
  }
  await assert.rejects(listen("ws://127.0.0.1:0/rsio", { origins: "https://app.example" }),
    (error) => error instanceof TypeError && /origins must be a list of origins/.test(error.message));
  await assert.rejects(listen("tcp://127.0.0.1:0", { origins: [42] }),
    (error) => error instanceof TypeError && /origins: an origin is a string/.test(error.message));
});
