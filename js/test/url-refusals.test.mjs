// tests/net/url_refusals.json (PROTOCOL.md §1.1): parseUrl reads each accepted URL into the parts
// rstreams' parse_url gives and writes it back as it does; connect() and listen() refuse each
// refused URL in parse_url's words, byte for byte (Java's RsioUrl reads the same table).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { connect as browserConnect } from "../src/rsio.js";
import { connect, listen } from "../src/node.js";
import { parseUrl } from "../src/rsio-url.js";

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

test("parseUrl reads each accepted URL of the shared table into its parts and writes it back", () => {
  assert.ok(CASES.accepted.length > 0);
  for (const { url, scheme, host, port, path, written } of CASES.accepted) {
    const parsed = parseUrl(url);
    assert.deepEqual({ ...parsed }, { scheme, host, port, path, url: written }, url);
    assert.deepEqual(parseUrl(parsed.url), parsed, url);
  }
});

test("parseUrl refuses each refused URL of the shared table with its message", () => {
  for (const { url, message } of CASES.refused) assert.throws(() => parseUrl(url), refusedWith(message), url);
});
