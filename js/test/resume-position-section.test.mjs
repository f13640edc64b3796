// PROTOCOL.md §16.2: a resumed/resumeAck payload with a truncated or non-minimal varint is a connection
// error citing §16.2 (docs/protocol-vectors.json invalid_payloads: resumeAck "80 00" -> 16.2; the Python
// and Java readers cite §16.2).
import { test } from "node:test";
import assert from "node:assert/strict";
import { ProtocolError } from "../src/rsio-wire.js";
import { position } from "../src/rsio-resume.js";

test("a non-minimal resumeAck position cites §16.2", () => {
  assert.throws(() => position(Uint8Array.of(0x80, 0x00), "resumeAck"),
    (error) => error instanceof ProtocolError && error.section === "§16.2");
});
