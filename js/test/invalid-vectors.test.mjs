// The 'invalid' byte strings of docs/protocol-vectors.json (PROTOCOL.md §13): this binding's decoder
// refuses each, whole and fed byte by byte, with a ProtocolError citing the vector's section.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { FrameDecoder, ProtocolError, decodeAll } from "../src/rsio-wire.js";

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
