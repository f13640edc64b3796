// Publisher names as docs/protocol-vectors.json's `names` has them (PROTOCOL.md §5.5): a path is
// compared segment by segment, each percent-decoded (`%2F` a `/` inside its segment), the query split
// on `&` and the first `=` and decoded, exact names before patterns; a name that matches and is
// malformed is refused with code 1 naming the fault, one that matches nothing with code 2 and
// `no publisher named 'PATH'`. This binding's names, its server and Python's `rstreams serve`
// answer every case as the vectors say (so do tests/net/test_name_paths.py and java NamePathsTest).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RemoteStreamError } from "../src/rsio.js";
import { Offer, unknownMessage } from "../src/rsio-publish.js";
import { connect, listen } from "../src/node.js";
import { pythonPeer, skip } from "./servers.mjs";

const NAMES = JSON.parse(readFileSync(new URL("../../docs/protocol-vectors.json", import.meta.url), "utf8")).names;

const just = (text) => ({
  subscribe(s) {
    let done = false;
    s.onSubscribe({ request() { if (!done) { done = true; s.onNext(text); s.onComplete(); } }, cancel() { done = true; } });
  },
});

/** The vectors' offer: each name answers `{"offer": NAME, "params": PARAMS}`, as js/test/fixtures/name_paths.py's. */
const offer = () => Object.fromEntries(NAMES.offered.map((entry) => [entry, (params) => just(JSON.stringify({ offer: entry, params }))]));

test("§5.5: every case of the vectors, as this binding's names match it", () => {
  const entries = offer();
  const names = new Offer(entries);
  for (const c of NAMES.cases) {
    const found = names.find(c.name);
    if (c.outcome === "unknown") {
      assert.equal(found, null, c.name);
      assert.equal(unknownMessage(c.name), c.error, c.name);
    } else if (c.outcome === "malformed") {
      assert.equal(`publisher name '${c.name}' ${found.fault} (PROTOCOL.md §5.5)`, c.error, c.name);
    } else {
      assert.equal(found.target, entries[c.offer], c.name);
      assert.deepEqual(found.params, c.params, c.name);
      assert.equal(found.fault, null, c.name);
      assert.equal(found.path, c.name.split("?")[0], c.name); // the path as written
    }
  }
  for (const name of NAMES.not_offerable) {
    assert.throws(() => new Offer({ [name]: just("x") }),
      (error) => error instanceof TypeError && /cannot be offered: its path segment .* \(write '%' as %25, PROTOCOL\.md §5\.5\)/.test(error.message));
  }
});

async function cases(conn) {
  for (const c of NAMES.cases) {
    if (c.outcome === "found") {
      assert.deepEqual(JSON.parse(await conn.request(c.name, { decode: "text" })), { offer: c.offer, params: c.params }, c.name);
      continue;
    }
    await assert.rejects(conn.request(c.name), (error) => {
      assert.ok(error instanceof RemoteStreamError, `${c.name}: ${error}`);
      assert.deepEqual([error.code, error.message], [c.code, c.error], c.name);
      return true;
    });
  }
}

test("§5.5: this binding's server answers every case of the vectors", async () => {
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
  test("Python's server answers every case of the vectors with the same offers, codes and texts", async () => {
    await cases(peer.conn);
  });
});
