// listen()'s ws:// server answers at the HTTP handshake, before any WebSocket frame (PROTOCOL.md
// §1; handshake.js): 404 at a path it does not serve, 400 naming rsio.v0 and §1 to a handshake
// that does not offer it, 101 selecting rsio.v0 when it is offered, alone or among others. Raw
// HTTP over a socket; the same requests to `rstreams serve ws://` get the same answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { listen } from "../src/node.js";
import { serve, skip } from "./servers.mjs";

const MISSING = (offered) => `RS.io needs the WebSocket subprotocol rsio.v0 (PROTOCOL.md §1); the handshake offered ${offered}\n`;

/**
 * The answer to a raw upgrade at `path` of the server at `url`, one Sec-WebSocket-Protocol
 * header per offer, and `more` header lines: {status, headers (lower-case names), body (a
 * refusal's, to the end)}.
 */
function answer(url, path, offers, more = []) {
  const { hostname, port } = new URL(url);
  const lines = [`GET ${path} HTTP/1.1`, `Host: ${hostname}:${port}`, "Upgrade: websocket", "Connection: Upgrade",
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13",
    ...offers.map((offer) => `Sec-WebSocket-Protocol: ${offer}`), ...more];
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: hostname, port: Number(port) });
    const chunks = [];
    const parse = () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const end = text.indexOf("\r\n\r\n");
      const [status, ...fields] = text.slice(0, end).split("\r\n");
      const headers = Object.fromEntries(fields.map((field) => {
        const colon = field.indexOf(":");
        return [field.slice(0, colon).toLowerCase(), field.slice(colon + 1).trim()];
      }));
      return { status, headers, body: text.slice(end + 4) };
    };
    socket.on("data", (data) => {
      chunks.push(data);
      const text = Buffer.concat(chunks).toString("latin1");
      if (text.startsWith("HTTP/1.1 101 ") && text.includes("\r\n\r\n")) { // accepted: the headers are enough
        socket.destroy();
        resolve({ ...parse(), body: "" });
      }
    });
    socket.on("end", () => resolve(parse())); // a refusal: the server ends after its body
    socket.on("error", reject);
    socket.write(`${lines.join("\r\n")}\r\n\r\n`);
  });
}

/** The refusals and acceptances every server at /rsio gives, as [path, offers, check(answer)]. */
const CASES = [
  ["/rsio", [], (a) => assert.deepEqual([a.status, a.body], ["HTTP/1.1 400 Bad Request", MISSING("none")])],
  ["/rsio", ["chat, superchat"], (a) => assert.deepEqual([a.status, a.body],
    ["HTTP/1.1 400 Bad Request", MISSING("chat, superchat")])],
  ["/rsio", ["chat", "v2"], (a) => assert.deepEqual([a.status, a.body], ["HTTP/1.1 400 Bad Request", MISSING("chat, v2")])],
  ["/other", ["rsio.v0"], (a) => assert.deepEqual([a.status, a.body], ["HTTP/1.1 404 Not Found", "RS.io is served at /rsio\n"])],
  ["/rsio/more", [], (a) => assert.deepEqual([a.status, a.body], ["HTTP/1.1 404 Not Found", "RS.io is served at /rsio\n"])],
  ["/rsio", ["rsio.v0"], (a) => assert.equal(a.headers["sec-websocket-protocol"], "rsio.v0")],
  ["/rsio", ["chat, rsio.v0"], (a) => assert.equal(a.headers["sec-websocket-protocol"], "rsio.v0")],
  ["/rsio", ["chat", "rsio.v0"], (a) => assert.equal(a.headers["sec-websocket-protocol"], "rsio.v0")],
  ["/rsio?x=1", ["rsio.v0, chat"], (a) => assert.equal(a.headers["sec-websocket-protocol"], "rsio.v0")],
];

async function check(url) {
  for (const [path, offers, expect] of CASES) {
    const got = await answer(url, path, offers);
    if (!got.status.startsWith("HTTP/1.1 101 ")) {
      assert.equal(got.headers["content-type"], "text/plain; charset=utf-8", `${path} ${offers}`);
    }
    try {
      expect(got);
    } catch (error) {
      error.message = `${path} offering ${JSON.stringify(offers)}: ${error.message}`;
      throw error;
    }
  }
}

test("the handshake is refused over HTTP without rsio.v0 (400) or at another path (404), accepted with it", { timeout: 20000 },
  async () => {
    const server = await listen("ws://127.0.0.1:0/rsio", { publishers: {} });
    try {
      await check(server.url);
    } finally {
      await server.close();
    }
  });

test("a page refused for its origin gets 403 before the subprotocol is looked at; an allowed one, 400 without it",
  { timeout: 20000 }, async () => {
    const server = await listen("ws://127.0.0.1:0/rsio", { publishers: {}, onerror: () => {} });
    try {
      const { hostname, port } = new URL(server.url);
      const page = (origin) => answer(server.url, "/rsio", ["x"], [`Origin: ${origin}`]);
      assert.equal((await page("https://elsewhere.example")).status, "HTTP/1.1 403 Forbidden");
      const own = await page(`http://${hostname}:${port}`);
      assert.deepEqual([own.status, own.body], ["HTTP/1.1 400 Bad Request", MISSING("x")]);
    } finally {
      await server.close();
    }
  });

test("rstreams serve ws:// answers the same requests the same way", { skip, timeout: 60000 }, async () => {
  const server = await serve("ws://127.0.0.1:0/rsio");
  try {
    await check(server.url);
  } finally {
    await server.stop();
  }
});
