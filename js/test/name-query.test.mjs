// A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5): `+` is a plus, each part
// percent-decoded, and a subscribe whose name gives a key twice is refused naming the key.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ERROR_CODES, RemoteStreamError } from "../src/rsio.js";
import { splitQuery } from "../src/rsio-publish.js";
import { connect, listen } from "../src/node.js";

test("§5.5: '+' stays a plus, %2B and %20 are decoded, a key without '=' has an empty value", () => {
  assert.deepEqual(splitQuery("q=a+b").params, { q: "a+b" });
  assert.deepEqual(splitQuery("q=a%2Bb").params, { q: "a+b" });
  assert.deepEqual(splitQuery("q=a%20b").params, { q: "a b" });
  assert.deepEqual(splitQuery("q=&flag").params, { q: "", flag: "" });
  assert.deepEqual(splitQuery("&x=1&&y=2&").params, { x: "1", y: "2" }); // empty pairs are skipped
  assert.deepEqual(splitQuery("q=a=b&a%26b=c%3Dd").params, { q: "a=b", "a&b": "c=d" });
  assert.deepEqual(splitQuery("q=%zz").params, { q: "%zz" }); // a malformed escape is kept as written
  assert.equal(splitQuery("x=1&y").repeated, null);
  assert.equal(splitQuery("to=3&to=4").repeated, "to");
  assert.equal(splitQuery("to=3&t%6F=4").repeated, "to");
  assert.equal(Object.getPrototypeOf(splitQuery("__proto__=x").params), Object.prototype);
  assert.deepEqual(Object.keys(splitQuery("__proto__=x").params), ["__proto__"]);
});

test("§5.5: a factory gets '+' as a plus; a key given twice is that subscribe's error (code 1) naming the key", async () => {
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { echo: (params) => ({
      subscribe(subscriber) {
        subscriber.onSubscribe({
          request() { subscriber.onNext(JSON.stringify(params)); subscriber.onComplete(); },
          cancel() {},
        });
      },
    }) },
  });
  const conn = await connect(server.url);
  try {
    assert.equal(await conn.request("echo?q=1+1&s=%20&e=", { decode: "text" }), JSON.stringify({ q: "1+1", s: " ", e: "" }));
    for (const name of ["echo?to=3&to=4", "echo?to&to"]) {
      await assert.rejects(conn.request(name), (error) => {
        assert.ok(error instanceof RemoteStreamError, String(error));
        assert.equal(error.code, ERROR_CODES.APPLICATION);
        assert.match(error.message, /'to' more than once \(PROTOCOL\.md §5\.5\)/);
        return true;
      });
    }
    assert.equal(await conn.request("echo?to=3", { decode: "text" }), JSON.stringify({ to: "3" })); // still up
  } finally {
    await conn.close();
    await server.close();
  }
});
