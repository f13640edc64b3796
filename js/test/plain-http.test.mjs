// Plain HTTP at a WebSocket server (PROTOCOL.md §1): a GET that asks for no upgrade to WebSocket,
// as `curl http://host:port/rsio` or a browser's address bar sends, is answered 426 Upgrade
// Required with `Upgrade: websocket` and a plain-text body naming the path, rsio.v0 and §1; at
// another path, 404 as a handshake there is. So is a request that is not a GET asking for an upgrade
// to WebSocket: a POST, with or without the WebSocket headers, and a GET asking for another upgrade
// (`Upgrade: h2c`), answered by the `ws` package as 405 and 400 before. Python's server (rstreams
// serve) answers the same.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import net from "node:net";
import { listen } from "../src/node.js";
import { serve, skip } from "./servers.mjs";

const NOT_UPGRADED = "RS.io is served at /rsio over WebSocket with the subprotocol rsio.v0 (PROTOCOL.md §1); "
  + "this request is not a GET asking for an upgrade to WebSocket\n";

/** Each asks for no upgrade to WebSocket (Node's client sends `Connection: close` unless told). */
const NOT_ASKING = [
  {}, { Upgrade: "websocket" }, { Connection: "Upgrade" }, { Origin: "https://elsewhere.example" },
  { "Sec-WebSocket-Protocol": "chat" },
];

/** An HTTP client's GET of `path` at the server of `url`: {status, headers, body}. */
function get(url, path, headers = {}) {
  const { hostname, port } = new URL(url.replace(/^ws:/, "http:"));
  return new Promise((resolve, reject) => {
    const request = http.get({ hostname, port, path, headers, agent: false, timeout: 20_000 }, (response) => {
      let body = "";
      response.setEncoding("utf8");
      response.on("data", (chunk) => { body += chunk; });
      response.on("end", () => resolve({ status: response.statusCode, headers: response.headers, body }));
    });
    request.on("upgrade", () => reject(new Error(`${path} was upgraded`)));
    request.on("timeout", () => request.destroy(new Error("no answer")));
    request.on("error", reject);
  });
}

const WEBSOCKET_HEADERS = "Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
  + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: rsio.v0\r\n";

/** Requests at /rsio that are not a GET asking for an upgrade to WebSocket (the request line's end and headers). */
const NOT_A_WEBSOCKET_GET = {
  post: "POST /rsio HTTP/1.1\r\nContent-Length: 0\r\n",
  "post-upgrade": `POST /rsio HTTP/1.1\r\n${WEBSOCKET_HEADERS}`,
  h2c: "GET /rsio HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
};

/** The whole answer (the server closes after a refusal) to `request` sent raw to the server of `url`. */
function raw(url, request) {
  const { hostname, port } = new URL(url.replace(/^ws:/, "http:"));
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(`${request}Host: ${hostname}\r\n\r\n`));
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk) => { answer += chunk; });
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
    socket.setTimeout(20_000, () => socket.destroy(new Error("no answer")));
  });
}

async function check(url) {
  for (const [name, request] of Object.entries(NOT_A_WEBSOCKET_GET)) {
    const answer = await raw(url, request);
    assert.ok(answer.startsWith("HTTP/1.1 426 "), `${name}: ${answer}`);
    assert.match(answer.toLowerCase(), /\r\nupgrade: websocket\r\n/, name);
    assert.ok(answer.endsWith(`\r\n\r\n${NOT_UPGRADED}`), `${name}: ${answer}`);
  }
  for (const headers of NOT_ASKING) {
    for (const path of ["/rsio", "/rsio?x=1"]) {
      const { status, headers: got, body } = await get(url, path, headers);
      assert.equal(status, 426, JSON.stringify({ path, headers, body }));
      assert.equal(got.upgrade, "websocket");
      assert.equal(got["content-type"], "text/plain; charset=utf-8");
      assert.equal(body, NOT_UPGRADED);
    }
  }
  for (const path of ["/", "/other", "/rsio/more"]) {
    const { status, body } = await get(url, path);
    assert.deepEqual([status, body], [404, "RS.io is served at /rsio\n"], path);
  }
}

test("§1: listen()'s ws:// server answers a GET asking for no upgrade with 426 naming rsio.v0, another path with 404", async () => {
  const server = await listen("ws://127.0.0.1:0/rsio", { publishers: {}, onerror: () => {} });
  try {
    await check(server.url);
  } finally {
    await server.close();
  }
});

describe("§1 against rstreams serve", { skip }, () => {
  test("Python's ws:// server answers plain HTTP the same", async () => {
    const server = await serve("ws://127.0.0.1:0/rsio");
    try {
      await check(server.url);
    } finally {
      await server.stop();
    }
  });
});
