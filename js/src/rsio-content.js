// Extension content-types (id 4, PROTOCOL.md §17): the media type a publisher states for its
// elements, in a contentType qualifier right before its onSubscribe.
//
// Theory of operation. Like the error codes' qualifiers (rsio-codes.js), a ContentTypes object
// keeps a received contentType (take) and checks that the next message is the onSubscribe it
// qualifies (check), or fails with the §17.1 violation. The announced type is kept on the
// subscription; decoderForType() gives the decoder of a built-in type (§17.3), if any.

import { notQualified } from "./rsio-codes.js";
import { EXTENSIONS, ProtocolError, concat, decodeVarint, encodeVarint } from "./rsio-wire.js";
import { pythonRepr } from "./rsio-url.js";

const CONTENT_TYPE = EXTENSIONS.contentTypes.types.contentType;
const textDecoder = new TextDecoder();

/** An explicit decode contradicts the announced type (§17.2); the subscription is cancelled. */
export class ContentTypeError extends Error {
  constructor(message) {
    super(message);
    this.name = "ContentTypeError";
  }
}

/** A media type's normal form: lower case, no spaces around ";" and "=" (§17.1). */
export function normalMediaType(text) {
  return text.toLowerCase().replace(/\s*([;=])\s*/g, "$1").trim();
}

/** Whether two media types are the same (§17.1). */
export function sameMediaType(a, b) {
  return normalMediaType(a) === normalMediaType(b);
}

/** The decoder of a built-in type (§17.3), or null (the elements stay bytes). */
export function decoderForType(mediaType) {
  switch (normalMediaType(mediaType)) {
    case "text/plain;charset=utf-8":
      return (bytes) => textDecoder.decode(bytes);
    case "application/json":
      return (bytes) => JSON.parse(textDecoder.decode(bytes));
    case "application/vnd.rsio.int64le":
      return (bytes) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getBigInt64(0, true);
    case "application/vnd.rsio.float64le":
      return (bytes) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getFloat64(0, true);
    default:
      return null;
  }
}

/** Why `mediaType` cannot be announced (§17.1: 1-255 printable US-ASCII bytes, type/subtype), or null. */
export function mediaTypeProblem(mediaType) {
  if (typeof mediaType !== "string" || mediaType.length < 1 || mediaType.length > 255 || /[^\x20-\x7e]/.test(mediaType)) {
    return `a media type is 1-255 printable US-ASCII characters (PROTOCOL.md §17.1), got ${JSON.stringify(mediaType)}`;
  }
  if (!/^[^\s/;]+\/[^\s/;]+/.test(mediaType)) {
    return `a media type has the form type/subtype (PROTOCOL.md §17.1), got ${JSON.stringify(mediaType)}`;
  }
  return null;
}

/** The contentType qualifier announcing `mediaType` for subscriber `id` (§17.1); checked by mediaTypeProblem. */
export function contentTypeFrame(id, mediaType) {
  const raw = new Uint8Array(mediaType.length);
  for (let i = 0; i < mediaType.length; i++) raw[i] = mediaType.charCodeAt(i);
  return { type: "extension", code: CONTENT_TYPE, payload: concat([encodeVarint(id), raw]) };
}

/** {subscriber, mediaType} of a contentType payload; ProtocolError (§17.1) if malformed. */
export function decodeContentType(payload) {
  let id;
  try {
    id = decodeVarint(payload, 0);
  } catch {
    id = null;
  }
  const malformed = (what) => new ProtocolError(`malformed contentType payload (${what})`, "§17.1");
  if (id === null) throw malformed("subscriber id");
  const raw = payload.subarray(id.next);
  if (raw.some((byte) => byte > 0x7f)) throw malformed("not US-ASCII");
  // then as rstreams checks a media type (wire/_content.py's check_media_type), in its words
  if (raw.length < 1 || raw.length > 255) throw malformed(`a media type is 1..255 bytes, got ${raw.length}`);
  if (raw.some((byte) => byte < 0x20 || byte > 0x7e)) throw malformed("a media type is printable US-ASCII");
  const mediaType = textDecoder.decode(raw);
  const essence = mediaType.split(";", 1)[0].trim();
  const slash = essence.indexOf("/");
  const [kind, sub] = slash < 0 ? [essence, ""] : [essence.slice(0, slash), essence.slice(slash + 1)];
  if (slash < 0 || !kind || !sub || !/^[-!#$%&'*+.^_`|~0-9a-zA-Z]+$/.test(kind + sub)) {
    throw malformed(`a media type starts with type/subtype, got ${pythonRepr(essence)}`);
  }
  return { subscriber: id.value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id.value) : id.value, mediaType };
}

/** The contentType qualifiers received on one connection. */
export class ContentTypes {
  constructor() {
    this._pending = null;
  }

  /** Whether `frame` is a contentType. */
  static is(frame) {
    return frame.type === "extension" && frame.code === CONTENT_TYPE;
  }

  take(payload) {
    this._pending = decodeContentType(payload);
  }

  /** The media type announced for `frame` (an onSubscribe), or null; throws if a kept one is not for it. */
  check(frame) {
    const pending = this._pending;
    if (pending === null) return null;
    this._pending = null;
    if (frame.type === "onSubscribe" && BigInt(frame.subscriber) === BigInt(pending.subscriber)) return pending.mediaType;
    throw notQualified("contentType", CONTENT_TYPE, pending.subscriber, frame, "onSubscribe", "§17.1");
  }
}
