// The extension payloads of docs/protocol-vectors.json (PROTOCOL.md §13), read and written by this
// binding's payload codecs: each decodes to the vector's payload_fields and encodes back to its bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { decodeCredentials, encodeCredentials } from "../src/rsio-wire.js";
import { decodeMetadata, encodeMetadata } from "../src/rsio-metadata.js";
import { decodeCredit, decodeMessage, encodeMessage } from "../src/rsio-messages.js";
import { contentTypeFrame, decodeContentType } from "../src/rsio-content.js";
import { position } from "../src/rsio-resume.js";

const VECTORS = JSON.parse(readFileSync(new URL("../../docs/protocol-vectors.json", import.meta.url), "utf8")).vectors;
const unhex = (h) => Uint8Array.from(h.replace(/\s+/g, "").match(/../g) ?? [], (b) => parseInt(b, 16));
const payloadOf = (vector) => unhex(vector.fields.payload.hex);
const credentialsOf = (fields) => (fields.kind === 1 ? fields.token : { user: fields.user, password: fields.password });

const CODECS = {
  authenticate(payload, fields) {
    assert.deepEqual(decodeCredentials(payload), credentialsOf(fields));
    assert.deepEqual(encodeCredentials(credentialsOf(fields)), payload);
  },
  subscribeCredentials(payload, fields) {
    assert.equal(payload[0], fields.subscriber); // a one-byte id in the vector
    assert.deepEqual(decodeCredentials(payload, 1), credentialsOf(fields));
    assert.deepEqual(encodeCredentials(credentialsOf(fields)), payload.subarray(1));
  },
  resumed(payload, fields) {
    assert.equal(position(payload, "resumed"), BigInt(fields.position));
  },
  resumeAck(payload, fields) {
    assert.equal(position(payload, "resumeAck"), BigInt(fields.position));
  },
  contentType(payload, fields) {
    assert.deepEqual(decodeContentType(payload), { subscriber: fields.subscriber, mediaType: fields.media_type });
    assert.deepEqual(contentTypeFrame(fields.subscriber, fields.media_type).payload, payload);
  },
  subscribeMetadata(payload, fields) {
    const { subscriber, metadata } = decodeMetadata(payload, { maxMetadataBytes: 16384, maxMetadataEntries: 64 });
    assert.equal(subscriber, fields.subscriber);
    const entries = Object.entries(fields.entries).map(([key, value]) => [key, unhex(value.hex)]);
    assert.deepEqual([...metadata.entries()], entries);
    assert.deepEqual(encodeMetadata(fields.subscriber, entries), payload);
  },
  message(payload, fields) {
    assert.deepEqual(decodeMessage(payload), { name: fields.name, body: unhex(fields.body.hex) });
    assert.deepEqual(encodeMessage(fields.name, unhex(fields.body.hex)), payload);
  },
  messageCredit(payload, fields) {
    assert.equal(decodeCredit(payload), BigInt(fields.count));
  },
};

test("every extension vector has payload_fields", () => {
  const extension = VECTORS.filter((v) => v.code >= 0x80);
  assert.ok(extension.length >= 20);
  for (const vector of extension) assert.equal(typeof vector.payload_fields, "object", vector.type);
  for (const type of Object.keys(CODECS)) assert.ok(VECTORS.some((v) => v.type === type), type);
});

for (const vector of VECTORS.filter((v) => v.type in CODECS)) {
  test(`payload: ${vector.type} ${vector.note}`, () => {
    CODECS[vector.type](payloadOf(vector), vector.payload_fields);
  });
}
