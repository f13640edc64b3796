// The client's extensions and its publishing side against real `rstreams serve` processes:
// auth accepted and refused (§15), keepalive pings answered (§14), and a JavaScript publisher
// that the Python server subscribes to (a sink log's upload), read back by the Python client.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConnectionClosedError, RemoteStreamError, connect } from "../src/node.js";
import { FIXTURE, REPO, cli, python, serve, skip } from "./servers.mjs";

const TOKEN = "tk-0123456789";

test("auth: the right token is accepted over tcp and ws; a wrong one, user/password or none are refused", { skip }, async () => {
  for (const listen of ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/rsio"]) {
    const server = await serve(listen, ["--token", TOKEN]);
    try {
      const conn = await connect(server.url, { auth: TOKEN });
      const got = [];
      for await (const n of conn.stream("counter?from=1&to=6", { window: 2, decode: "text" })) got.push(n);
      assert.deepEqual(got, ["1", "2", "3", "4", "5"]);
      assert.equal(await conn.ready, conn);
      assert.ok(conn.authenticated);
      // credentials for one subscription (§15.4): checked instead of the connection's
      const vault = (auth) => new Promise((resolve) => {
        const items = [];
        conn.subscribe("counter?to=3", { onSubscribe(s) { s.request(5); }, onNext(b) { items.push(b); },
          onComplete() { resolve(items.length); }, onError(e) { resolve(e); } }, { auth });
      });
      assert.equal(await vault(TOKEN), 3);
      const refused = await vault("not the token");
      assert.ok(refused instanceof RemoteStreamError
        && refused.message === "unauthenticated: subscribe to 'counter' needs valid credentials (PROTOCOL.md §15.4)",
        String(refused));
      assert.equal(await conn.close(), null);

      for (const auth of ["wrong", { user: "ann", password: TOKEN }]) {
        const refused = await connect(server.url, { auth });
        await assert.rejects(refused.ready, (e) => e instanceof ConnectionClosedError
          && e.reason === "authentication failed (PROTOCOL.md §15.3)" && !e.message.includes(TOKEN));
        assert.equal(refused.authenticated, false);
      }

      const anonymous = await connect(server.url);
      const error = await anonymous.closed;
      assert.ok(error instanceof ConnectionClosedError && /^authentication required: .*\(PROTOCOL\.md §15\.2\)$/.test(error.reason),
        String(error));
    } finally {
      await server.stop();
    }
  }
});

test("keepalive: the client's pings are answered by the server's pongs", { skip }, async () => {
  const server = await serve("tcp://127.0.0.1:0");
  try {
    const conn = await connect(server.url, { keepalive: 0.05 });
    await conn.ready;
    assert.ok(conn.extensions.has(1));
    while (conn.pongsReceived < 2) await new Promise((resolve) => setTimeout(resolve, 20));
    assert.ok(conn.pingsSent >= 2);
    assert.equal(conn.state, "OPEN");
    await conn.close();
  } finally {
    await server.stop();
  }
});

/** A Publisher of `rows` after a header, recording the demand the remote subscriber gave it. */
function upload(header, rows) {
  const record = { requested: 0, emitted: 0, maxOutstanding: 0, completed: false };
  const elements = [JSON.stringify(header), ...rows];
  const publisher = {
    subscribe(subscriber) {
      let emitting = false;
      subscriber.onSubscribe({
        request(n) {
          record.requested += n;
          record.maxOutstanding = Math.max(record.maxOutstanding, record.requested - record.emitted);
          if (emitting) return;
          emitting = true;
          while (record.emitted < record.requested && record.emitted < elements.length) {
            subscriber.onNext(elements[record.emitted++]);
          }
          if (record.emitted === elements.length && !record.completed) {
            record.completed = true;
            subscriber.onComplete();
          }
          emitting = false;
        },
        cancel() {},
      });
    },
  };
  return { publisher, record };
}

test("a JavaScript publisher, subscribed to by the Python server within its demand, read back by the Python client", { skip }, async () => {
  const server = await serve("tcp://127.0.0.1:0", ["nums", "--sink", "out"], "a\nb\n");
  try {
    const rows = Array.from({ length: 5000 }, (_, i) => `row ${i}`);
    const { publisher, record } = upload({ log: "out", token: "js-1" }, rows);
    const conn = await connect(server.url, { publishers: { "rstreams/upload": publisher } });
    const staged = JSON.parse(await conn.request("out?staged=js-1", { decode: "text" }));
    assert.deepEqual(staged, { count: rows.length });
    assert.ok(record.completed);
    // the server asks for 1,024 elements and renews half of it as it stages: never more
    assert.ok(record.maxOutstanding <= 1024, `the publisher held ${record.maxOutstanding} demand`);
    assert.ok(record.requested < rows.length + 1 + 1024, `requested ${record.requested}`);
    const published = JSON.parse(await conn.request("out?publish=0&writer=js&tokens=js-1", { decode: "text" }));
    assert.deepEqual(published, { published: true, count: rows.length });
    await conn.close();

    const read = await cli(["subscribe", server.url, `out?from=0&to=${rows.length}`, "--demand", "64"]);
    assert.equal(read.code, 0, read.stderr);
    assert.deepEqual(read.stdout.trimEnd().split("\n"), rows);
  } finally {
    await server.stop();
  }
});

/**
 * A TCP proxy to `target` that breaks each link (both sockets, without a goodbye) once
 * `every` bytes of the server's stream went through it, `times` times in all.
 */
async function cuttingProxy(target, every, times) {
  const { default: net } = await import("node:net");
  const proxy = { cuts: 0, links: 0 };
  const server = net.createServer((client) => {
    proxy.links += 1;
    const upstream = net.connect(target);
    let down = 0;
    const cut = () => { client.destroy(); upstream.destroy(); };
    client.on("data", (data) => upstream.write(data));
    upstream.on("data", (data) => {
      if (proxy.cuts >= times || down + data.length < every) {
        down += data.length;
        client.write(data);
        return;
      }
      proxy.cuts += 1;
      client.write(data.subarray(0, every - down), cut); // breaks inside a message, most likely
    });
    for (const socket of [client, upstream]) {
      socket.on("error", cut);
      socket.on("close", cut);
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `tcp://127.0.0.1:${server.address().port}`;
  proxy.close = () => new Promise((resolve) => { server.close(resolve); });
  return proxy;
}

for (const listenOn of ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/rsio"]) {
  const kind = listenOn.split(":")[0];
  test(`resume over ${kind}: a stream crosses links broken mid-message, every element once and in order`, { skip }, async () => {
    const server = await serve(listenOn, ["--resume", "--publishers", FIXTURE]);
    const { hostname, port, pathname } = new URL(server.url);
    const proxy = await cuttingProxy({ host: hostname, port: Number(port) }, 20_000, 4);
    try {
      const url = kind === "ws" ? proxy.url.replace("tcp://", "ws://") + pathname : proxy.url;
      const conn = await connect(url, { resume: { backoff: 10 }, onerror: () => {} });
      await conn.ready;
      assert.ok(conn.extensions.has(3));
      const got = [];
      for await (const n of conn.stream("numbers?n=20000", { window: 256, decode: "text" })) got.push(Number(n));
      assert.deepEqual(got, Array.from({ length: 20_000 }, (_, i) => i));
      assert.equal(proxy.cuts, 4);
      assert.equal(conn.resumes, 4);
      assert.equal(proxy.links, 5);
      assert.equal(await conn.close(), null);
    } finally {
      await proxy.close();
      await server.stop();
    }
  });
}

test("TLS: tls:// and wss:// with a CA made for the test, and a certificate it does not trust refused", { skip }, async () => {
  const { mkdtempSync, readFileSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const dir = mkdtempSync(`${tmpdir()}/rsio-tls-`);
  const made = await python(["-c", [
    "import sys; sys.path.insert(0, sys.argv[2] + 'tests')",
    "from pathlib import Path; from testkit.tls import TestCA",
    "ca = TestCA.make(Path(sys.argv[1]), 'js test CA'); s = ca.issue('server', san=('127.0.0.1', 'localhost'))",
    "print(ca.cert, s.cert, s.key)"].join("\n"), dir, REPO]);
  assert.equal(made.code, 0, made.stderr);
  const [caFile, cert, key] = made.stdout.trim().split(" ");
  const ca = readFileSync(caFile);
  for (const listen of ["tls://127.0.0.1:0", "wss://127.0.0.1:0/rsio"]) {
    const server = await serve(listen, ["--publishers", FIXTURE, "--tls-cert", cert, "--tls-key", key]);
    try {
      const conn = await connect(server.url, { tls: { ca } });
      assert.deepEqual(await all(conn, "numbers?n=3"), ["0", "1", "2"]);
      await conn.close();
      // without the CA: refused by the TLS handshake (the WebSocket's error event says no more)
      await assert.rejects(connect(server.url), (e) => e instanceof ConnectionClosedError
        && (listen.startsWith("wss") || /certificate/.test(e.message)), listen);
    } finally {
      await server.stop();
    }
  }
});

async function all(conn, name) {
  const out = [];
  for await (const item of conn.stream(name, { decode: "text" })) out.push(item);
  return out;
}
