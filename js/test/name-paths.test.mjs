// A publisher name's path is compared segment by segment, each percent-decoded, as RFC 3986 has it
// (PROTOCOL.md §5.5): `a%20b` is the offered `a b` (or `a%20b`), `%2F` is a `/` inside one segment
// (`f/a%2Fb` gives the field "a/b"; `f/a/b` has one segment more), and a segment that is not
// percent-encoded UTF-8 makes a name that matches malformed: refused with code 1 naming the segment
// as written. The same names and answers from this binding's server and from Python's
// (tests/net/test_name_paths.py, java NamePathsTest).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { ERROR_CODES, RemoteStreamError } from "../src/rsio.js";
import { Offer } from "../src/rsio-publish.js";
import { connect, listen } from "../src/node.js";
import { pythonPeer, skip } from "./servers.mjs";

const just = (text) => ({
  subscribe(s) {
    let done = false;
    s.onSubscribe({ request() { if (!done) { done = true; s.onNext(text); s.onComplete(); } }, cancel() { done = true; } });
  },
});

/** The offer of these tests, the same as js/test/fixtures/name_paths.py. */
const offer = () => ({
  "a b": just("exact a b"),
  "x%2Fy": just("exact x%2Fy"),
  "100%25": just("exact 100%25"),
  "f/{x}": (params) => just(`x=${params.x}`),
});

const FOUND = [
  ["a%20b", "exact a b"], ["a b", "exact a b"], ["%61%20%62", "exact a b"], ["x%2Fy", "exact x%2Fy"],
  ["x%2fy", "exact x%2Fy"], ["100%25", "exact 100%25"], ["f/a%2Fb", "x=a/b"], ["f/a%20b", "x=a b"],
  ["f/%25", "x=%"], ["f/k%C3%BCche", "x=küche"],
];
const UNKNOWN = ["x/y", "f/a/b", "f/", "a%2520b", "nope/%zz", "a%zz"];
const MALFORMED = [["f/%zz", "%zz"], ["f/%FF", "%FF"], ["f/a%2", "a%2"], ["100%", "100%"], ["f/%zz?y=%zz", "%zz"]];
const segment = (part) => `has the path segment '${part}', which is not percent-encoded UTF-8`;

test("§5.5: segments are compared decoded; a malformed segment is the name's fault", () => {
  const names = new Offer(offer());
  for (const [name] of FOUND) assert.notEqual(names.find(name), null, name);
  assert.deepEqual(names.find("f/a%2Fb?n=1").params, { n: "1", x: "a/b" });
  assert.equal(names.find("f/a%2Fb").path, "f/a%2Fb"); // the path as written
  for (const name of UNKNOWN) assert.equal(names.find(name), null, name);
  for (const [name, part] of MALFORMED) assert.equal(names.find(name).fault, segment(part), name);
  for (const name of ["100%", "a/%zz", "{x}/%E9"]) {
    assert.throws(() => new Offer({ [name]: just("x") }),
      (error) => error instanceof TypeError && /cannot be offered: its path segment .* \(write '%' as %25, PROTOCOL\.md §5\.5\)/.test(error.message));
  }
});

async function cases(conn) {
  for (const [name, answer] of FOUND) assert.equal(await conn.request(name, { decode: "text" }), answer, name);
  for (const name of UNKNOWN) {
    await assert.rejects(conn.request(name), (error) => {
      assert.equal(error.code, ERROR_CODES.UNKNOWN_PUBLISHER, `${name}: ${error}`);
      return true;
    });
  }
  for (const [name, part] of MALFORMED) {
    await assert.rejects(conn.request(name), (error) => {
      assert.ok(error instanceof RemoteStreamError, String(error));
      assert.equal(error.code, ERROR_CODES.APPLICATION);
      assert.equal(error.message, `publisher name '${name}' ${segment(part)} (PROTOCOL.md §5.5)`);
      return true;
    });
  }
}

test("§5.5: this binding's server matches decoded segments and refuses a malformed one with code 1", async () => {
  const server = await listen("tcp://127.0.0.1:0", { publishers: offer() });
  const conn = await connect(server.url);
  try {
    await cases(conn);
  } finally {
    await conn.close();
    await server.close();
  }
});

describe("§5.5 against rstreams serve", { skip }, () => {
  const fixture = fileURLToPath(new URL("fixtures/name_paths.py", import.meta.url));
  const peer = pythonPeer({ args: ["--publishers", fixture] });
  test("Python's server matches the same names with the same answers, codes and texts", async () => {
    await cases(peer.conn);
  });
});
