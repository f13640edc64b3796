// A publisher name whose query has a part that is not percent-encoded UTF-8 (`%`, `%2`, `%zz`,
// escapes decoding to no UTF-8) is malformed, as RFC 3986 §2.1 has it (PROTOCOL.md §5.5): a
// subscribe whose name matches is refused (code 1) naming the part as written, an unknown name
// stays unknown (code 2); the same text from this binding's server and from Python's.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { ERROR_CODES, RemoteStreamError } from "../src/rsio.js";
import { splitQuery } from "../src/rsio-publish.js";
import { connect, listen } from "../src/node.js";
import { pythonPeer, skip } from "./servers.mjs";

const notUtf8 = (part) => `has the query part '${part}', which is not percent-encoded UTF-8`;

test("§5.5: the first part that is not percent-encoded UTF-8 is the name's fault, a malformed part stays as written", () => {
  for (const [query, part] of [
    ["q=%", "%"], ["q=%2", "%2"], ["q=%zz", "%zz"], ["q=a%2", "a%2"], ["q=%FF", "%FF"], ["q=%C3", "%C3"],
    ["q=%C3x%A9", "%C3x%A9"], ["q=%C0%80", "%C0%80"], ["q=%ED%A0%80", "%ED%A0%80"], ["q=%F4%90%80%80", "%F4%90%80%80"],
    ["%zz=1", "%zz"], ["%=1&q=%zz", "%"], ["q=%zz&q=1", "%zz"],
  ]) {
    assert.equal(splitQuery(query).fault, notUtf8(part), query);
  }
  assert.deepEqual(splitQuery("q=%zz").params, { q: "%zz" });
  assert.equal(splitQuery("to=1&to=%zz").fault, "gives the parameter 'to' more than once");
  for (const [query, value] of [["q=%C3%A9", "é"], ["q=%e2%82%ac", "€"], ["q=%F0%9F%98%80", "\u{1f600}"], ["q=100%25", "100%"], ["q=é", "é"]]) {
    assert.deepEqual(splitQuery(query), { params: { q: value }, fault: null }, query);
  }
});

async function refusals(conn, known, unknown) {
  for (const [query, part] of [["x=%zz", "%zz"], ["x=1&%=2", "%"], ["x=%FF", "%FF"]]) {
    const name = `${known}?${query}`;
    await assert.rejects(conn.request(name), (error) => {
      assert.ok(error instanceof RemoteStreamError, String(error));
      assert.equal(error.code, ERROR_CODES.APPLICATION);
      assert.equal(error.message, `publisher name '${name}' ${notUtf8(part)} (PROTOCOL.md §5.5)`);
      return true;
    });
  }
  await assert.rejects(conn.request(`${unknown}?x=%zz`), (error) => {
    assert.equal(error.code, ERROR_CODES.UNKNOWN_PUBLISHER, String(error));
    return true;
  });
}

test("§5.5: a subscribe to a malformed name is refused with code 1 naming the part; its factory is not called", async () => {
  const called = [];
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { "echo/{id}": (params) => {
      called.push(params);
      return { subscribe(s) { s.onSubscribe({ request() { s.onNext("x"); s.onComplete(); }, cancel() {} }); } };
    } },
  });
  const conn = await connect(server.url);
  try {
    await refusals(conn, "echo/1", "nope");
    assert.deepEqual(called, []);
    assert.equal(await conn.request("echo/1?x=%41", { decode: "text" }), "x"); // the connection stays up
  } finally {
    await conn.close();
    await server.close();
  }
});

describe("§5.5 against rstreams serve", { skip }, () => {
  const peer = pythonPeer();
  test("Python's server refuses a malformed name with the same code and text", async () => {
    await refusals(peer.conn, "counter", "nope");
  });
});
