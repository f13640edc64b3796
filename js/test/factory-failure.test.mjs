// A factory that throws (PROTOCOL.md §19.2, code 9): the subscribe (or channel open) is refused with
// `publisher 'PATH' could not be created: its factory failed (PROTOCOL.md §19.2)`, PATH the name's
// path as written up to its first `?` (§5.5), the error's message and name kept on the serving side;
// an error with a code is refused with its own message and code. This binding's server, Python's
// `rstreams serve` and its channels send the same bytes (so do tests/net/test_factory_failure.py and
// java FactoryFailureTest).
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { ERROR_CODES, RemoteStreamError, fromIterable } from "../src/rsio.js";
import { failedMessage } from "../src/rsio-publish.js";
import { connect, listen } from "../src/node.js";
import { pythonPeer, skip } from "./servers.mjs";

const SECRET = "token=hunter2";
const broken = () => { throw new Error(`secret detail: ${SECRET}`); };
const failed = (path, kind = "publisher") => `${kind} '${path}' could not be created: its factory failed (PROTOCOL.md §19.2)`;

/** [name, code, text] of each case: what a side offering js/test/fixtures/factory_failure.py's names answers. */
const CASES = [
  ["broken", 9, failed("broken")],
  ["broken/a%20b?x=1", 9, failed("broken/a%20b")],
  ["broken/é?x=%C3%A9", 9, failed("broken/é")],
  ["busy", 8, "try again later"],
];

async function refusals(conn) {
  for (const [name, code, text] of CASES) {
    await assert.rejects(conn.request(name), (error) => {
      assert.ok(error instanceof RemoteStreamError, `${name}: ${error}`);
      assert.deepEqual([error.code, error.message], [code, text], name);
      assert.ok(!error.message.includes(SECRET), name);
      return true;
    });
  }
}

async function channelRefusal(conn) {
  await assert.rejects(async () => {
    for await (const item of conn.channel("broken?x=1", fromIterable(["a"]))) assert.fail(`got ${item}`);
  }, (error) => {
    assert.ok(error instanceof RemoteStreamError, String(error));
    assert.deepEqual([error.code, error.message], [9, failed("broken", "channel")]);
    return true;
  });
}

test("§19.2: the text names the path as written, nothing of the error", () => {
  assert.equal(failedMessage("broken/a%20b?x=1&y=%zz"), failed("broken/a%20b"));
  assert.equal(failedMessage("up?x", "channel"), failed("up", "channel"));
});

test("§19.2: this binding's server refuses a throwing factory with code 9 and the one text", async () => {
  const reported = [];
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: {
      broken,
      "broken/{id}": broken,
      busy: () => { throw new RemoteStreamError("try again later", ERROR_CODES.UNAVAILABLE); },
    },
    channels: { broken },
    onerror: (error) => reported.push(error),
  });
  const conn = await connect(server.url);
  try {
    await refusals(conn);
    await channelRefusal(conn);
    assert.equal(reported.filter((error) => error.message.includes(SECRET)).length, 4); // the server's onerror has them
  } finally {
    await conn.close();
    await server.close();
  }
});

describe("§19.2 against rstreams serve", { skip }, () => {
  const fixture = fileURLToPath(new URL("fixtures/factory_failure.py", import.meta.url));
  const peer = pythonPeer({ args: ["--publishers", fixture] });
  test("Python's server refuses the same names with the same codes and texts", async () => {
    await refusals(peer.conn);
  });
});

describe("§19.2 against an rstreams server with channels", { skip }, () => {
  const fixture = fileURLToPath(new URL("fixtures/factory_failure.py", import.meta.url));
  const peer = pythonPeer({ source: `import runpy; runpy.run_path(${JSON.stringify(fixture)}, run_name="__main__")` });
  test("Python's channel factory that raises is refused with the channel's text", async () => {
    await channelRefusal(peer.conn);
  });
});

test("§19.2: a publisher whose subscribe() throws is refused with code 9 and no error text, as in Python and Java", async () => {
  const reported = [];
  const throwing = (error) => ({ subscribe() { throw error; } });
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: {
      "it's": throwing(new Error(`secret detail: ${SECRET}`)),
      busy: throwing(new RemoteStreamError("try again later", ERROR_CODES.UNAVAILABLE)),
    },
    onerror: (error) => reported.push(error),
  });
  const conn = await connect(server.url);
  try {
    for (const [name, code, text] of [
      ["it's?q=1", 9, "publisher 'it's' could not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)"],
      ["busy", 8, "try again later"],
    ]) {
      await assert.rejects(conn.request(name), (error) => {
        assert.ok(error instanceof RemoteStreamError, `${name}: ${error}`);
        assert.deepEqual([error.code, error.message], [code, text], name);
        return true;
      });
    }
    assert.equal(reported.filter((error) => error.message.includes(SECRET)).length, 1); // the server's onerror has it
  } finally {
    await conn.close();
    await server.close();
  }
});
