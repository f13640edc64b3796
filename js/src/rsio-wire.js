// RS.io wire codec for JavaScript (PROTOCOL.md §2, §3): bytes in, frames out; frames in, bytes out.
//
// Sans-I/O like the Python core: no WebSocket, no timers. A frame is a plain object whose
// `type` is the message name of PROTOCOL.md §3 and whose fields are the same snake_case
// names as docs/protocol-vectors.json ({type: "request", subscriber: 1, demand: 5n}). Extension
// messages (0x80-0xff, §4.4) are framed generically: {type: "extension", code, payload}.
//
// Integers: counts, lengths and sizes are Numbers (anything above 2**53 - 1 is a limit
// error long before); subscriber ids, element ids and extension ids are Numbers, or BigInts
// when they do not fit a Number exactly (ids may be any varint, §2.1); `demand` is always a
// BigInt so that 2**63 - 1 (unbounded) is exact.
//
// FrameDecoder is incremental: feed() takes any slice of the byte stream (WebSocket message
// boundaries mean nothing, §1) and returns the complete frames. Once a length prefix has been
// read the decoder knows how many bytes the frame needs and does not re-parse or copy until
// they are all there, so a 16 MiB element arriving in 64 messages is copied once.

export const UNBOUNDED = (1n << 63n) - 1n;
export const VERSION = 0;

export const CODES = Object.freeze({
  clientHello: 0x01, serverHello: 0x02, goodbye: 0x03, subscribe: 0x04, request: 0x05,
  cancel: 0x06, onSubscribe: 0x07, onNext: 0x08, onNextPacked: 0x09, onNextPart: 0x0a,
  onNextLastPart: 0x0b, onComplete: 0x0c, onError: 0x0d,
});

export const DEFAULT_LIMITS = Object.freeze({
  maxElementSize: 16 * 1024 * 1024,   // §11, as rstreams.wire.ConnectionConfig
  maxStringLength: 64 * 1024,
  maxExtensions: 64,
  maxPartsInFlight: 64,
  maxReassemblyBytes: 64 * 1024 * 1024,
  maxNameLength: 1024,                // §11: a longer name in the peer's subscribe is refused
  maxSubscriptions: 1024,             // §11: open subscriptions the peer may make on us
  splitThreshold: 64 * 1024,          // §8: elements we send above this go out in parts
  maxMetadataBytes: 16 * 1024,        // §11, §18.1: a larger subscribeMetadata is a connection error
  maxMetadataEntries: 64,             // §11, §18.1: so is one with more entries
});

/** The registered extensions (§4.4): id, name, the message types each defines, and the types
 * it owns without defining them (`reserved`: receiving one is a connection error, §4.4). */
export const EXTENSIONS = Object.freeze({
  keepalive: Object.freeze({ id: 1, section: "§14", types: Object.freeze({ ping: 0x80, pong: 0x81 }),
    reserved: Object.freeze([]) }),
  auth: Object.freeze({ id: 2, section: "§15", types: Object.freeze({
    authenticate: 0x84, authenticated: 0x85, subscribeCredentials: 0x86 }), reserved: Object.freeze([0x87]) }),
  resume: Object.freeze({ id: 3, section: "§16", types: Object.freeze({
    resumeToken: 0x88, resume: 0x89, resumed: 0x8a, resumeRefused: 0x8b, resumeAck: 0x8c }),
    reserved: Object.freeze([0x8d, 0x8e, 0x8f]) }),
  contentTypes: Object.freeze({ id: 4, section: "§17", types: Object.freeze({ contentType: 0x90 }),
    reserved: Object.freeze([0x91, 0x92, 0x93]) }),
  metadata: Object.freeze({ id: 5, section: "§18", types: Object.freeze({ subscribeMetadata: 0x94 }),
    reserved: Object.freeze([0x95, 0x96, 0x97]) }),
  errorCodes: Object.freeze({ id: 6, section: "§19", types: Object.freeze({ errorCode: 0x98, goodbyeCode: 0x99 }),
    reserved: Object.freeze([0x9a, 0x9b]) }),
  messages: Object.freeze({ id: 7, section: "§20", types: Object.freeze({ message: 0x9c, messageCredit: 0x9d }),
    reserved: Object.freeze([0x9e, 0x9f]) }),
  channels: Object.freeze({ id: 8, section: "§21", types: Object.freeze({
    channel: 0xa0, inputRequest: 0xa1, inputCancel: 0xa2, inputNext: 0xa3, inputComplete: 0xa4, inputError: 0xa5 }),
    reserved: Object.freeze([0xa7]) }),
  inputParts: Object.freeze({ id: 9, section: "§21.6", types: Object.freeze({ inputNextPart: 0xa6 }),
    reserved: Object.freeze([]) }),
});

/** The extension that owns an extension message type (0x80-0xff), or undefined (§4.4). */
export function extensionOf(code) {
  for (const [name, extension] of Object.entries(EXTENSIONS)) {
    if (Object.values(extension.types).includes(code) || extension.reserved.includes(code)) {
      return { name, ...extension };
    }
  }
  return undefined;
}

/** The peer broke the protocol; `section` is the PROTOCOL.md section the goodbye names. */
export class ProtocolError extends Error {
  constructor(message, section) {
    super(`${message} (PROTOCOL.md ${section})`);
    this.name = "ProtocolError";
    this.section = section;
  }
}

/**
 * A call that needs an extension the peer's hello does not list (send() needs messages, §20.1;
 * channel() needs channels, §21.1): nothing was sent, the connection goes on. `extension` is
 * the extension's name, `section` the PROTOCOL.md section (as rstreams' LocalProtocolError).
 */
export class ExtensionNotOfferedError extends Error {
  constructor(extension, section) {
    const { id } = EXTENSIONS[extension];
    super(`the peer does not offer extension ${extension} (id ${id}) (PROTOCOL.md ${section})`);
    this.name = "ExtensionNotOfferedError";
    this.extension = extension;
    this.section = section;
  }
}

// -- varints (§2.1) ------------------------------------------------------------------------

/** Encode a non-negative integer (Number or BigInt, below 2**64) as a minimal varint. */
export function encodeVarint(value) {
  let n = BigInt(value);
  if (n < 0n || n >= 1n << 64n) throw new RangeError(`a varint holds 0 ... 2**64 - 1, got ${value}`);
  const out = [];
  while (n >= 0x80n) {
    out.push(Number(n & 0x7fn) | 0x80);
    n >>= 7n;
  }
  out.push(Number(n));
  return Uint8Array.from(out);
}

/** Decode the varint at `offset`: {value, next} (value a BigInt), or null if the bytes end first. */
export function decodeVarint(bytes, offset) {
  let value = 0n;
  let shift = 0n;
  for (let i = 0; i < 10; i++) {
    if (offset + i >= bytes.length) return null;
    const byte = bytes[offset + i];
    if (i === 9 && byte > 0x01) throw new ProtocolError(OVER_LONG, "§2.1");
    value |= BigInt(byte & 0x7f) << shift;
    if (byte < 0x80) {
      if (byte === 0 && i > 0) throw new ProtocolError("non-minimal varint encoding (trailing 0x00 byte)", "§2.1");
      return { value, next: offset + i + 1 };
    }
    shift += 7n;
  }
  throw new ProtocolError(OVER_LONG, "§2.1");
}

const OVER_LONG = "over-long varint: more than 10 bytes or a value above 2**64-1";

// -- encoding ---------------------------------------------------------------------------------

const utf8 = new TextEncoder();

/**
 * The payload of authenticate (§15.1): `credentials` is a token string (kind 1) or
 * {user, password} (kind 2). Throws TypeError for anything else; the message never shows
 * the secret.
 */
export function encodeCredentials(credentials) {
  if (typeof credentials === "string") {
    return concat([Uint8Array.of(1), ...bytesField(utf8.encode(credentials))]);
  }
  if (credentials !== null && typeof credentials === "object"
      && typeof credentials.user === "string" && typeof credentials.password === "string") {
    return concat([Uint8Array.of(2), ...bytesField(utf8.encode(credentials.user)),
      ...bytesField(utf8.encode(credentials.password))]);
  }
  throw new TypeError("auth takes a token string or {user, password} with two strings (PROTOCOL.md §15.1)");
}
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/**
 * Credentials from an authenticate payload (§15.1), which they must fill exactly: a token
 * string, or {user, password}. Throws ProtocolError citing §15.5; the message shows no byte.
 */
export function decodeCredentials(payload, offset = 0) {
  const malformed = (what) => new ProtocolError(`malformed credentials (${what})`, "§15.5");
  const r = new Reader(payload, offset + 1, { ...DEFAULT_LIMITS });
  let credentials;
  try {
    if (offset >= payload.length) throw malformed("empty");
    const kind = payload[offset];
    if (kind === 1) credentials = r.string("token");
    else if (kind === 2) credentials = { user: r.string("user"), password: r.string("password") };
    else throw malformed(`unknown kind ${kind}`);
  } catch (error) {
    if (error === NEED_MORE) throw malformed("truncated");
    if (error instanceof ProtocolError && error.section !== "§15.5") throw malformed("bad field");
    throw error;
  }
  if (r.at !== payload.length) throw malformed(`${payload.length - r.at} trailing bytes`);
  return credentials;
}

function bytesField(data) {
  return [encodeVarint(data.length), data];
}

const ENCODERS = {
  clientHello: (f) => [Uint8Array.of(f.version ?? VERSION), ...extensions(f.extensions ?? [])],
  serverHello: (f) => [Uint8Array.of(f.version ?? VERSION), ...extensions(f.extensions ?? [])],
  goodbye: (f) => bytesField(utf8.encode(f.reason ?? "")),
  subscribe: (f) => [...bytesField(utf8.encode(f.publisher)), encodeVarint(f.subscriber),
    encodeVarint(f.initial_demand)],
  request: (f) => [encodeVarint(f.subscriber), encodeVarint(f.demand)],
  cancel: (f) => [encodeVarint(f.subscriber)],
  onSubscribe: (f) => [encodeVarint(f.subscriber), encodeVarint(f.element_size)],
  onNext: (f, elementSize) => [encodeVarint(f.subscriber),
    ...(elementSize ? [fixed(f.element, elementSize)] : bytesField(f.element))],
  onNextPacked: (f, elementSize) => [encodeVarint(f.subscriber), encodeVarint(f.count),
    fixed(f.elements, f.count * elementSize)],
  onNextPart: (f) => [encodeVarint(f.subscriber), encodeVarint(f.element_id), ...bytesField(f.data)],
  onNextLastPart: (f) => [encodeVarint(f.subscriber), encodeVarint(f.element_id), ...bytesField(f.data)],
  onComplete: (f) => [encodeVarint(f.subscriber)],
  onError: (f) => [encodeVarint(f.subscriber), ...bytesField(utf8.encode(f.error))],
  extension: (f) => bytesField(f.payload),
};

function extensions(ids) {
  return [encodeVarint(ids.length), ...ids.map(encodeVarint)];
}

function fixed(data, size) {
  if (data.length !== size) throw new RangeError(`expected ${size} raw bytes, got ${data.length}`);
  return data;
}

/** Encode one frame; `elementSize` is the subscription's, for onNext and onNextPacked (§7). */
export function encodeFrame(frame, elementSize = 0) {
  const encoder = ENCODERS[frame.type];
  if (encoder === undefined) throw new TypeError(`unknown frame type ${JSON.stringify(frame.type)}`);
  const code = frame.type === "extension" ? extensionCode(frame.code) : CODES[frame.type];
  return concat([Uint8Array.of(code), ...encoder(frame, elementSize)]);
}

function extensionCode(code) {
  if (!Number.isInteger(code) || code < 0x80 || code > 0xff) {
    throw new RangeError(`an extension message type is 0x80 ... 0xff, got ${code}`);
  }
  return code;
}

export function concat(chunks) {
  if (chunks.length === 1) return chunks[0];
  let size = 0;
  for (const chunk of chunks) size += chunk.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const chunk of chunks) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

// -- decoding ---------------------------------------------------------------------------------

const NEED_MORE = Symbol("need more");

class Reader {
  constructor(bytes, offset, limits) {
    this.bytes = bytes;
    this.at = offset;
    this.limits = limits;
    this.need = 0; // when NEED_MORE is thrown: the total length known to be needed (0 = unknown)
  }

  bigint() {
    const got = decodeVarint(this.bytes, this.at);
    if (got === null) throw NEED_MORE;
    this.at = got.next;
    return got.value;
  }

  /** A varint of at most `limit`; above it a ProtocolError (§11) with the text `tooLarge(value)`. */
  number(limit, tooLarge) {
    const value = this.bigint();
    if (value > BigInt(limit)) throw new ProtocolError(tooLarge(value), "§11");
    return Number(value);
  }

  /** An id (§2.1: any varint): a Number when it is one exactly, else a BigInt, so one value has one form. */
  id() {
    return small(this.bigint());
  }

  raw(length) {
    const end = this.at + length;
    if (end > this.bytes.length) {
      this.need = end;
      throw NEED_MORE;
    }
    const data = this.bytes.subarray(this.at, end);
    this.at = end;
    return data;
  }

  /** A length-prefixed field (`what` it is, for the error) of at most maxStringLength bytes. */
  stringBytes(what) {
    const limit = this.limits.maxStringLength;
    return this.raw(this.number(limit, (length) => `${what} of ${length} bytes exceeds max_string_length=${limit}`));
  }

  /** A length-prefixed field of subscriber `subscriber`'s (`what` it is) of at most maxElementSize bytes. */
  elementBytes(what, subscriber) {
    return this.raw(this.number(this.limits.maxElementSize, (length) => tooLarge(what, length, subscriber, this.limits)));
  }

  string(what) {
    const data = this.stringBytes(what);
    try {
      return strictUtf8.decode(data);
    } catch {
      throw new ProtocolError(`${what} is not valid UTF-8`, "§2.2");
    }
  }
}

/**
 * The text of a size above maxElementSize (§11), in rstreams' words, the limit named as §11 and
 * rstreams name it (max_element_size), as every limit is in a goodbye: the same text in every binding.
 */
function tooLarge(what, size, subscriber, limits) {
  return `${what} of ${size} bytes for subscriber ${subscriber} exceeds max_element_size=${limits.maxElementSize}`;
}

function hello(type, r) {
  const version = r.raw(1)[0];
  if (version !== VERSION) {
    // judged by its version first (§4.2): the goodbye names the version, whatever follows it (that
    // version's layout, not a list this endpoint could limit). The hello ends at its version byte;
    // the connection closes on it before it asks for another frame.
    return { type, version, extensions: [] };
  }
  const limit = r.limits.maxExtensions;
  const count = r.number(limit, (n) => `hello lists ${n} extensions, more than max_extensions=${limit}`);
  const ids = [];
  for (let i = 0; i < count; i++) ids.push(small(r.bigint()));
  return { type, version, extensions: ids };
}

function small(value) {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

const DECODERS = {
  [CODES.clientHello]: (r) => hello("clientHello", r),
  [CODES.serverHello]: (r) => hello("serverHello", r),
  [CODES.goodbye]: (r) => ({ type: "goodbye", reason: r.string("goodbye reason") }),
  [CODES.subscribe]: (r) => ({ type: "subscribe", publisher: r.string("subscribe publisher name"), subscriber: r.id(),
    initial_demand: r.bigint() }),
  [CODES.request]: (r) => ({ type: "request", subscriber: r.id(), demand: r.bigint() }),
  [CODES.cancel]: (r) => ({ type: "cancel", subscriber: r.id() }),
  [CODES.onSubscribe]: (r) => {
    const subscriber = r.id();
    const size = r.number(r.limits.maxElementSize, (n) => tooLarge("onSubscribe elementSize", n, subscriber, r.limits));
    return { type: "onSubscribe", subscriber, element_size: size };
  },
  [CODES.onNext]: (r, sizeOf) => {
    const subscriber = r.id();
    const size = sizeOf(subscriber);
    return { type: "onNext", subscriber, element: size ? r.raw(size) : r.elementBytes("onNext element", subscriber) };
  },
  [CODES.onNextPacked]: (r, sizeOf) => {
    const subscriber = r.id();
    const count = r.bigint();
    const size = sizeOf(subscriber);
    if (!size) throw new ProtocolError(`onNextPacked for subscriber ${subscriber}, which has no onSubscribe with an elementSize above 0`, "§7");
    if (count === 0n) throw new ProtocolError(`onNextPacked for subscriber ${subscriber} with count 0`, "§7");
    const total = count * BigInt(size);
    if (total > BigInt(r.limits.maxElementSize)) {
      throw new ProtocolError(tooLarge("onNextPacked payload", total, subscriber, r.limits), "§11");
    }
    return { type: "onNextPacked", subscriber, count: Number(count), elements: r.raw(Number(total)) };
  },
  [CODES.onNextPart]: (r) => part("onNextPart", r),
  [CODES.onNextLastPart]: (r) => part("onNextLastPart", r),
  [CODES.onComplete]: (r) => ({ type: "onComplete", subscriber: r.id() }),
  [CODES.onError]: (r) => ({ type: "onError", subscriber: r.id(), error: r.string("onError error") }),
};

function part(type, r) {
  const subscriber = r.id();
  const elementId = r.id();
  return { type, subscriber, element_id: elementId, data: r.elementBytes("onNextPart data", subscriber) };
}

/** Every extension message has one wire form, whatever the extension (§4.4): type, length, payload. */
function decodeExtension(r) {
  if (extensionOf(r.bytes[0]) === undefined) { // refused at its type byte, as rstreams does
    throw new ProtocolError(`message type 0x${r.bytes[0].toString(16)} belongs to no extension this endpoint knows`, "§4.4");
  }
  return { type: "extension", code: r.bytes[0], payload: r.stringBytes(`extension message 0x${r.bytes[0].toString(16)} payload`) };
}

/**
 * Incremental decoder: push() bytes, then call next() until it returns null. next() asks
 * `elementSizeOf(subscriber)` for a subscription's elementSize (§7) when it parses onNext or
 * onNextPacked, so the caller handles each frame (an onSubscribe sets the size) before asking
 * for the next one.
 */
export class FrameDecoder {
  constructor(elementSizeOf = () => 0, limits = {}) {
    this.elementSizeOf = elementSizeOf;
    this.limits = { ...DEFAULT_LIMITS, ...limits };
    this.chunks = [];
    this.size = 0;
    this.need = 1; // bytes the next frame needs at least
  }

  /** Add bytes (a Uint8Array or ArrayBuffer) to the input. */
  push(data) {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data);
    if (bytes.length === 0) return;
    this.chunks.push(bytes);
    this.size += bytes.length;
  }

  /** The next complete frame, or null until more bytes arrive; throws ProtocolError. */
  next() {
    if (this.size < this.need) return null;
    const bytes = this.chunks.length === 1 ? this.chunks[0] : concat(this.chunks);
    const decode = bytes[0] >= 0x80 ? decodeExtension : DECODERS[bytes[0]];
    if (decode === undefined) {
      throw new ProtocolError(`unknown message type 0x${bytes[0].toString(16).padStart(2, "0")}`, "§3");
    }
    const reader = new Reader(bytes, 1, this.limits);
    let frame;
    try {
      frame = decode(reader, this.elementSizeOf);
    } catch (error) {
      if (error !== NEED_MORE) throw error;
      this.chunks = [bytes];
      this.need = Math.max(reader.need, bytes.length + 1);
      return null;
    }
    const rest = bytes.subarray(reader.at);
    this.chunks = rest.length ? [rest] : [];
    this.size = rest.length;
    this.need = 1;
    return frame;
  }

  /** Bytes held that do not yet make a frame (non-zero at end of input: a truncated frame, §9.3). */
  get pending() {
    return this.size;
  }

  /** Hand over the bytes held that do not yet make a frame, and forget them. */
  takeRest() {
    const rest = concat(this.chunks);
    this.chunks = [];
    this.size = 0;
    this.need = 1;
    return rest;
  }
}

/** Decode every complete frame of `bytes` (tests, tools); throws if bytes are left over. */
export function decodeAll(bytes, elementSize = 0) {
  const decoder = new FrameDecoder(() => elementSize);
  decoder.push(bytes);
  const frames = [];
  for (let frame = decoder.next(); frame !== null; frame = decoder.next()) frames.push(frame);
  if (decoder.pending) throw new ProtocolError(`input ends inside a message (${decoder.pending} bytes)`, "§9.3");
  return frames;
}
