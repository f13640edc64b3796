// Extension metadata (id 5, PROTOCOL.md §18): key/value entries qualifying a subscribe.
//
// Theory of operation. Sending: checkMetadata() checks a caller's entries where the call is
// made and encodeMetadata() gives the subscribeMetadata payload the Connection writes right
// before its subscribe. Receiving: like the other qualifiers (rsio-codes.js), a
// MetadataQualifier keeps a received subscribeMetadata (take, which enforces the §11 limits
// max_metadata_bytes and max_metadata_entries) and hands it to the subscribe that comes next
// (check), or fails with the §18.1 violation. The entries reach whatever decides about that
// subscribe (the authorize hook, the publisher or channel factory) as a SubscribeMetadata.

import { notQualified } from "./rsio-codes.js";
import { EXTENSIONS, ProtocolError, concat, decodeVarint, encodeVarint } from "./rsio-wire.js";
import { pythonRepr } from "./rsio-url.js";

const KEY = /^[a-z0-9._-]{1,64}$/; // §18.1
const utf8 = new TextEncoder();
const textDecoder = new TextDecoder();
const SUBSCRIBE_METADATA = EXTENSIONS.metadata.types.subscribeMetadata;

/** The entries of one subscribe (§18.1): key -> Uint8Array, in the order sent. */
export class SubscribeMetadata extends Map {
  /** The value of `key` as UTF-8 text, or undefined. */
  text(key) {
    const value = this.get(key);
    return value === undefined ? undefined : textDecoder.decode(value);
  }

  /** The W3C traceparent entry as text, or undefined. */
  get traceparent() {
    return this.text("traceparent");
  }
}

/** The metadata of a subscribe that carried none. */
export const NO_METADATA = Object.freeze(new SubscribeMetadata());

/** [key, bytes] pairs of subscribe metadata ({key: string | Uint8Array}), or a TypeError naming the rule. */
export function checkMetadata(metadata) {
  const entries = metadata instanceof Map ? [...metadata] : Object.entries(metadata);
  return entries.map(([key, value]) => {
    if (!KEY.test(key) || key.startsWith("rsio.")) {
      throw new TypeError(`metadata key ${JSON.stringify(key)}: keys are 1-64 of a-z 0-9 - _ . and do not `
        + "start with rsio. (PROTOCOL.md §18.1)");
    }
    if (typeof value === "string") return [key, utf8.encode(value)];
    if (value instanceof Uint8Array) return [key, value];
    throw new TypeError(`metadata value of ${JSON.stringify(key)} is a string or Uint8Array, got ${typeof value}`);
  });
}

/** subscribeMetadata's payload for subscriber `id` (§18.1); `entries` were checked by checkMetadata. */
export function encodeMetadata(id, entries) {
  const parts = [encodeVarint(id), encodeVarint(entries.length)];
  for (const [key, value] of entries) {
    const raw = utf8.encode(key);
    parts.push(encodeVarint(raw.length), raw, encodeVarint(value.length), value);
  }
  return concat(parts);
}

function malformed(what) {
  return new ProtocolError(`malformed subscribeMetadata payload (${what})`, "§18.1");
}

function varint(payload, at) {
  let decoded;
  try {
    decoded = decodeVarint(payload, at);
  } catch {
    throw malformed("bad varint");
  }
  if (decoded === null) throw malformed("truncated");
  return decoded;
}

/** {subscriber, metadata} of a subscribeMetadata payload; ProtocolError citing §18.1, or §11 above a limit. */
export function decodeMetadata(payload, { maxMetadataBytes, maxMetadataEntries }) {
  if (payload.length > maxMetadataBytes) {
    throw new ProtocolError(`subscribeMetadata of ${payload.length} bytes exceeds max_metadata_bytes=${maxMetadataBytes}`,
      "§11");
  }
  const id = varint(payload, 0);
  const count = varint(payload, id.next);
  if (count.value > BigInt(maxMetadataEntries)) {
    throw new ProtocolError(`subscribeMetadata with ${count.value} entries exceeds max_metadata_entries=`
      + `${maxMetadataEntries}`, "§11");
  }
  const metadata = new SubscribeMetadata();
  let at = count.next;
  for (let i = 0n; i < count.value; i++) {
    const keyLength = varint(payload, at);
    const keyEnd = keyLength.next + Number(keyLength.value);
    if (keyEnd > payload.length) throw malformed("a key runs past the payload");
    const raw = payload.subarray(keyLength.next, keyEnd);
    if (raw.some((byte) => byte > 0x7f)) throw malformed("a key is not ASCII");
    const key = textDecoder.decode(raw);
    if (!KEY.test(key)) throw malformed("a metadata key is 1..64 of a-z 0-9 - _ .");
    if (metadata.has(key)) throw malformed(`key ${pythonRepr(key)} twice`);
    const valueLength = varint(payload, keyEnd);
    const valueEnd = valueLength.next + Number(valueLength.value);
    if (valueEnd > payload.length) throw malformed("a value runs past the payload");
    metadata.set(key, payload.slice(valueLength.next, valueEnd));
    at = valueEnd;
  }
  if (at !== payload.length) throw malformed(`${payload.length - at} trailing bytes`);
  const subscriber = id.value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id.value) : id.value;
  return { subscriber, metadata };
}

/** The subscribeMetadata qualifiers received on one connection. */
export class MetadataQualifier {
  constructor(limits) {
    this._limits = limits;
    this._pending = null;
  }

  /** A subscribeMetadata arrived: keep it for the subscribe it qualifies. */
  take(payload) {
    this._pending = decodeMetadata(payload, this._limits);
  }

  /** Throws if a subscribeMetadata is kept and `frame`, the message right after it, is not its subscribe. */
  follows(frame) {
    const pending = this._pending;
    if (pending === null || (frame.type === "subscribe" && BigInt(pending.subscriber) === BigInt(frame.subscriber))) return;
    this._pending = null;
    throw notQualified("subscribeMetadata", SUBSCRIBE_METADATA, pending.subscriber, frame, "subscribe", "§18.1");
  }

  /** The metadata of subscribe `frame` (NO_METADATA without any), which `follows` let through. */
  check() {
    const pending = this._pending;
    if (pending === null) return NO_METADATA;
    this._pending = null;
    return pending.metadata;
  }
}
