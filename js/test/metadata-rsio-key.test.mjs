// PROTOCOL.md §18.1: a received key starting with "rsio." is taken like any other key (a sender
// SHOULD NOT use them; the Python decoder takes the same payload).
import { test } from "node:test";
import assert from "node:assert/strict";
import { decodeMetadata } from "../src/rsio-metadata.js";

test("a received rsio. key is not an error", () => {
  const payload = Uint8Array.from([1, 1, 6, ...new TextEncoder().encode("rsio.x"), 1, 0x31]);
  const { subscriber, metadata } = decodeMetadata(payload, { maxMetadataBytes: 16384, maxMetadataEntries: 64 });
  assert.equal(subscriber, 1);
  assert.deepEqual([...metadata.get("rsio.x")], [0x31]);
});
