// A publisher name whose query has a part that is not percent-encoded UTF-8 (`%`, `%2`, `%zz`,
// escapes decoding to no UTF-8) is malformed, as RFC 3986 §2.1 has it (PROTOCOL.md §5.5). What a
// subscribe gives for each such name is in docs/protocol-vectors.json's `names`
// (name-paths.test.mjs); here: the factory of a name that matches is not called for one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ERROR_CODES, RemoteStreamError } from "../src/rsio.js";
import { connect, listen } from "../src/node.js";

test("§5.5: a subscribe to a malformed name is refused with code 1; its factory is not called", async () => {
  const called = [];
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { "echo/{id}": (params) => {
      called.push(params);
      return { subscribe(s) { s.onSubscribe({ request() { s.onNext("x"); s.onComplete(); }, cancel() {} }); } };
    } },
  });
  const conn = await connect(server.url);
  try {
    for (const name of ["echo/1?x=%zz", "echo/1?x=1&%=2", "echo/1?x=%FF", "echo/%zz"]) {
      await assert.rejects(conn.request(name), (error) => {
        assert.ok(error instanceof RemoteStreamError, String(error));
        assert.equal(error.code, ERROR_CODES.APPLICATION, name);
        return true;
      });
    }
    assert.deepEqual(called, []);
    assert.equal(await conn.request("echo/1?x=%41", { decode: "text" }), "x"); // the connection stays up
    assert.deepEqual(called, [{ x: "A", id: "1" }]);
  } finally {
    await conn.close();
    await server.close();
  }
});
