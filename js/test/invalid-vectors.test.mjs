// The 'invalid' byte strings of docs/protocol-vectors.json (PROTOCOL.md §13): this binding's decoder
// refuses each, whole and fed byte by byte, with a ProtocolError citing the vector's section; and its
// 'invalid_payloads', refused by this binding's exported payload decoders citing the same section.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { FrameDecoder, ProtocolError, decodeAll, decodeCredentials } from "../src/rsio-wire.js";
import { decodeMetadata } from "../src/rsio-metadata.js";
import { decodeCredit, decodeMessage } from "../src/rsio-messages.js";
import { decodeContentType } from "../src/rsio-content.js";

const INVALID = JSON.parse(readFileSync(new URL("../../docs/protocol-vectors.json", import.meta.url), "utf8")).invalid;
const unhex = (h) => Uint8Array.from(h.replace(/\s+/g, "").match(/../g) ?? [], (b) => parseInt(b, 16));

test("the invalid vectors were read", () => {
  assert.ok(INVALID.length >= 10);
});

for (const vector of INVALID) {
  test(`refused citing §${vector.section}: ${vector.note}`, () => {
    const bytes = unhex(vector.hex);
    const cites = (error) => error instanceof ProtocolError && error.section === `§${vector.section}`;
    assert.throws(() => decodeAll(bytes, vector.element_size), cites);
    const decoder = new FrameDecoder(() => vector.element_size);
    assert.throws(() => {
      for (const byte of bytes) {
        decoder.push(Uint8Array.of(byte));
        for (let f = decoder.next(); f !== null; f = decoder.next()) assert.fail(`a frame: ${f.type}`);
      }
    }, cites);
  });
}

// 'invalid_payloads': extension payloads this binding's exported payload decoders refuse, citing the
// same section as the vector (the error-codes and channels readers are not exported).

const PAYLOADS = JSON.parse(readFileSync(new URL("../../docs/protocol-vectors.json", import.meta.url), "utf8"))
  .invalid_payloads;
const DECODERS = {
  authenticate: (payload) => decodeCredentials(payload),
  contentType: decodeContentType,
  subscribeMetadata: (payload) => decodeMetadata(payload, { maxMetadataBytes: 16384, maxMetadataEntries: 64 }),
  message: decodeMessage,
  messageCredit: decodeCredit,
};

test("the invalid payloads were read", () => {
  assert.ok(PAYLOADS.filter((v) => v.type in DECODERS).length >= 15);
});

for (const vector of PAYLOADS.filter((v) => v.type in DECODERS)) {
  test(`payload refused citing §${vector.section}: ${vector.type} ${vector.note}`, () => {
    assert.throws(() => DECODERS[vector.type](unhex(vector.payload)),
      (error) => error instanceof ProtocolError && error.section === `§${vector.section}`);
  });
}
