// tests/net/url_refusals.json: a part an RS.io URL's scheme does not take (a user, a tcp/tls path,
// a query outside ws/wss, a fragment) is refused by connect() and listen() in rstreams' parse_url's
// words, byte for byte (Java's RsioUrl reads the same table); the parts each scheme takes pass.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect as browserConnect } from "../src/rsio.js";
import { connect, listen } from "../src/node.js";
import { refuseExtraParts } from "../src/rsio-url.js";

const CASES = JSON.parse(readFileSync(new URL("../../tests/net/url_refusals.json", import.meta.url), "utf8"));

const refusedWith = (message) => (error) => error instanceof TypeError && error.message === message;

test("connect() and listen() refuse each URL of the shared table with its message", async () => {
  assert.ok(CASES.refused.length > 0);
  for (const { url, message } of CASES.refused) {
    await assert.rejects(connect(url), refusedWith(message), url);
    await assert.rejects(listen(url), refusedWith(message), url);
  }
});

test("the WebSocket-only connect() refuses a ws:// or wss:// URL's user and fragment alike", async () => {
  const cases = CASES.refused.filter(({ url }) => url.startsWith("ws"));
  assert.ok(cases.length > 0);
  class NeverOpened { constructor() { throw new Error("a refused URL opens no WebSocket"); } }
  for (const { url, message } of cases) {
    await assert.rejects(browserConnect(url, { WebSocket: NeverOpened }), refusedWith(message), url);
  }
});

test("the URLs of the shared table that each scheme takes are not refused", () => {
  for (const { url } of CASES.accepted) assert.doesNotThrow(() => refuseExtraParts(url), url);
});
