// An IPv6 host is written in one pair of brackets wherever a URL's host is written again
// (PROTOCOL.md §1.1): a ws:// client's Host header, a server's URL; the socket is given the
// address without them (tests/net/test_url_hosts.py checks the same of rstreams).
import { test } from "node:test";
import assert from "node:assert/strict";
import net from "node:net";
import { connect, fromIterable, listen } from "../src/node.js";

const ipv6 = await new Promise((resolve) => {
  const probe = net.createServer();
  probe.once("error", () => resolve(false));
  probe.listen(0, "::1", () => probe.close(() => resolve(true)));
});
const skip = ipv6 ? false : "no IPv6 loopback (::1) here";

test("a ws:// client sends an IPv6 host in one pair of brackets (RFC 7230 section 5.4)", { skip }, async () => {
  const heads = [];
  const server = net.createServer((socket) => {
    let head = "";
    socket.on("data", (chunk) => {
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      heads.push(head);
      socket.end("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
  });
  await new Promise((resolve) => server.listen(0, "::1", resolve));
  const { port } = server.address();
  try {
    await assert.rejects(connect(`WS://[::1]:${port}/rsio`, { handshakeTimeout: 30 }));
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
  assert.ok(heads[0].toLowerCase().includes(`\r\nhost: [::1]:${port}\r\n`), heads[0]);
});

for (const scheme of ["tcp", "ws"]) {
  test(`a ${scheme}:// server on an IPv6 address writes its URL with one pair of brackets`, { skip }, async () => {
    const path = scheme === "ws" ? "/rsio" : "";
    const server = await listen(`${scheme.toUpperCase()}://[::1]:0${path}`, {
      publishers: { greeting: () => fromIterable(["hello"]) },
    });
    try {
      assert.match(server.url, new RegExp(`^${scheme}://\\[::1\\]:[0-9]+${path}$`));
      const client = await connect(server.url);
      assert.equal(await client.request("greeting", { decode: "text" }), "hello");
      await client.close();
    } finally {
      await server.close();
    }
  });
}
