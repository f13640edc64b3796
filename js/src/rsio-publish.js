// RS.io publishing for JavaScript: the peer subscribes to publishers this endpoint offers
// (PROTOCOL.md §1: either endpoint may publish), with the demand rules of §5 and §6.
//
// Theory of operation. A connection made with `publishers` holds an Offer (names and
// "{field}" patterns -> Publishers or factories (params, path, connection)) and a
// ServingTable keyed by the *peer's* subscriber ids (§5.1). A subscribe is answered with
// onSubscribe and the local Publisher is subscribed with a ServedStream as its Subscriber;
// refusals (unknown name, limits, rule 3.9) are an onError without onSubscribe (§5.2).
// Demand is never passed through whole: the peer's outstanding demand (`wanted`, a BigInt
// saturating at 2**63 - 1) is drawn from the local Publisher at most PULL elements (and about
// PULL_BYTES, by the last element's size) at a time, and only while the transport takes
// writes (`conn.writable`; when it is full, the table waits for the transport's drain). So a
// peer that requests 2**63 - 1 and stops reading stalls production instead of filling memory,
// as in the Python server. A cancel is acknowledged with onComplete (§5.4); request and cancel
// for ids not open are ignored (they may have crossed our terminal signal). Elements larger
// than `splitThreshold` go out as onNextPart ... onNextLastPart (§8).
//
// Elements are bytes: a Uint8Array (or any ArrayBuffer view, or an ArrayBuffer), or a string
// sent as UTF-8. Anything else ends that subscription with onError naming the type.

import { ProtocolError, UNBOUNDED, concat } from "./rsio-wire.js";
import { ERROR_CODES } from "./rsio-codes.js";
import { mediaTypeProblem, normalMediaType } from "./rsio-content.js";
import { NO_METADATA } from "./rsio-metadata.js";
import { invalidDemand } from "./rsio-subscribe.js";

const { APPLICATION, INTERNAL, INVALID_DEMAND, LIMIT_EXCEEDED, UNKNOWN_PUBLISHER } = ERROR_CODES;

/**
 * `publisher` with fixed-size elements: every element it emits has exactly `size` bytes, and
 * they travel raw, without a length (onSubscribe's elementSize, PROTOCOL.md §7).
 */
export function fixedSize(publisher, size) {
  if (!isPublisher(publisher)) throw new TypeError(`fixedSize needs a Publisher, got ${describe(publisher)}`);
  if (!Number.isInteger(size) || size < 1) throw new RangeError(`fixedSize needs a size >= 1 in bytes, got ${size}`);
  return { subscribe: (subscriber) => publisher.subscribe(subscriber), elementSize: size,
    contentType: publisher.contentType };
}

/** Element encoders of the built-in types (§17.3) for elements that are not bytes already. */
const ENCODERS = {
  "application/json": (value) => utf8.encode(asciiJson(value)),
  "application/vnd.rsio.int64le": (value) => {
    const out = new Uint8Array(8);
    new DataView(out.buffer).setBigInt64(0, BigInt(value), true);
    return out;
  },
  "application/vnd.rsio.float64le": (value) => {
    const out = new Uint8Array(8);
    new DataView(out.buffer).setFloat64(0, Number(value), true);
    return out;
  },
};

/** An element withContentType could not encode: the serving side fails its subscription, naming it. */
class Unencodable {
  constructor(what) {
    this.what = what;
  }
}

/** Compact JSON with non-ASCII characters as \uXXXX, as rstreams writes it (§17.3). */
function asciiJson(value) {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`${describe(value)} has no JSON form`);
  return text.replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

/**
 * `publisher` offered with the media type `mediaType` (extension content-types, PROTOCOL.md
 * §17): a peer that offers the extension is told the type in each answer to its subscribe.
 * For the built-in types (§17.3) elements that are not bytes are encoded: any JSON value for
 * application/json (compact, non-ASCII escaped), a bigint or integer Number for
 * application/vnd.rsio.int64le and a Number for application/vnd.rsio.float64le (both 8 bytes,
 * little-endian, offered with elementSize 8); strings are sent as UTF-8 whatever the type.
 */
export function withContentType(publisher, mediaType) {
  if (!isPublisher(publisher)) throw new TypeError(`withContentType needs a Publisher, got ${describe(publisher)}`);
  const problem = mediaTypeProblem(mediaType);
  if (problem !== null) throw new TypeError(problem);
  const normal = normalMediaType(mediaType);
  const encode = ENCODERS[normal];
  const fixed = normal === "application/vnd.rsio.int64le" || normal === "application/vnd.rsio.float64le";
  const subscribe = encode === undefined ? (subscriber) => publisher.subscribe(subscriber)
    : (subscriber) => publisher.subscribe(encoding(subscriber, encode, normal !== "application/json"));
  return { subscribe, contentType: mediaType, elementSize: fixed ? 8 : publisher.elementSize };
}

/** `subscriber` seeing its elements through `encode` (bytes pass as they are; strings too unless `strings`). */
function encoding(subscriber, encode, strings) {
  return {
    onSubscribe: (subscription) => subscriber.onSubscribe(subscription),
    onNext(element) {
      if (element instanceof Uint8Array || (strings && typeof element === "string")) {
        subscriber.onNext(element);
        return;
      }
      let bytes;
      try {
        bytes = encode(element);
      } catch (error) {
        bytes = new Unencodable(`${describe(element)} (${error?.message ?? error})`);
      }
      subscriber.onNext(bytes);
    },
    onError: (error) => subscriber.onError(error),
    onComplete: () => subscriber.onComplete(),
  };
}

/** Elements requested from a local Publisher at a time while the peer's demand lasts. */
const PULL = 32;
/**
 * Bytes of elements requested at a time, at most: PULL of the default splitThreshold (64 KiB).
 * A publisher may emit a whole request in one turn, all written at once; with a larger
 * splitThreshold, PULL elements written whole could pass MAX_UNSENT (16 MiB) by themselves.
 */
const PULL_BYTES = PULL * 64 * 1024;

/**
 * Run `callback` in a later turn of the event loop, after pending I/O: pulling again in a
 * microtask would starve the loop (a socket that takes every write would never let the
 * peer's cancel be read).
 */
const nextTurn = typeof setImmediate === "function" ? setImmediate
  : typeof MessageChannel === "function" ? (() => {
    const channel = new MessageChannel();
    const queue = [];
    channel.port1.onmessage = () => queue.shift()?.();
    return (callback) => { queue.push(callback); channel.port2.postMessage(null); };
  })()
  : (callback) => setTimeout(callback, 0);

const utf8 = new TextEncoder();

/**
 * Publisher names: exact names first, then `{field}` patterns, one segment per field (§5.5). A path
 * is compared segment by segment, each percent-decoded (RFC 3986): the requested `a%20b` and the
 * offered `a b` (or `a%20b`) are the same name, and `%2F` is a `/` inside one segment, so
 * `files/a%2Fb` matches `files/{name}` with `name` "a/b".
 */
export class Offer {
  /** `what`: "publishers" (Publishers or factories), "channels" or "handlers" (functions only). */
  constructor(publishers = {}, what = "publishers") {
    const entries = publishers instanceof Map ? [...publishers] : Object.entries(publishers);
    this.exact = new Map();
    this.patterns = [];
    for (const [name, target] of entries) {
      if (what === "publishers" && typeof target !== "function" && !isPublisher(target)) {
        throw new TypeError(`publishers[${JSON.stringify(name)}] must be a Publisher ({subscribe}) or a `
          + `function (params, path, connection, metadata) returning one, got ${describe(target)}`);
      }
      if (what !== "publishers" && typeof target !== "function") {
        throw new TypeError(`${what}[${JSON.stringify(name)}] must be a function, got ${describe(target)}`);
      }
      if (name.includes("{")) {
        this.patterns.push({ segments: name.split("/").map((s) => isField(s) ? s : offeredSegment(name, s)), target });
      } else {
        this.exact.set(pathKey(name, name.split("/").map((s) => offeredSegment(name, s))), target);
      }
    }
  }

  get size() {
    return this.exact.size + this.patterns.length;
  }

  /**
   * {target, params, path, fault} for a subscribe's publisher string, or null when nothing
   * matches; `path`: as written; `fault`: what makes the name malformed, or null: the first path
   * segment that is not percent-encoded UTF-8 (it is matched as written), else splitQuery's.
   */
  find(name) {
    const question = name.indexOf("?");
    const path = question < 0 ? name : name.slice(0, question);
    const query = question < 0 ? { params: {}, fault: null } : splitQuery(name.slice(question + 1));
    const { params } = query;
    let fault = query.fault;
    let segments = path.split("/");
    if (path.includes("%")) {
      const decoded = segments.map(decodePart);
      const bad = decoded.indexOf(null);
      if (bad >= 0) fault = `has the path segment '${segments[bad]}', which is not percent-encoded UTF-8`;
      segments = decoded.map((segment, i) => segment ?? segments[i]);
    }
    const exact = this.exact.get(pathKey(path, segments));
    if (exact !== undefined) return { target: exact, params, path, fault };
    for (const pattern of this.patterns) {
      const fields = match(pattern.segments, segments);
      if (fields !== null) return { target: pattern.target, params: { ...params, ...fields }, path, fault };
    }
    return null;
  }
}

/**
 * A name's query read as RFC 3986 says (PROTOCOL.md §5.5): pairs split on `&` (empty ones skipped),
 * each on its first `=` (none: the value is empty), each part percent-decoded; `+` stays a plus (a space is %20).
 * `params`: a repeated key keeps its last value, a malformed part stays as written; `fault`: what makes
 * the name malformed, or null: the first part, left to right (a key, then its value), that is not
 * percent-encoded UTF-8, or the first key given twice, worded to follow "publisher name 'NAME' ".
 */
export function splitQuery(query) {
  const entries = [];
  const seen = new Set();
  let fault = null;
  for (const pair of query.split("&")) {
    if (pair === "") continue; // "a?x=1&": no empty key
    const equals = pair.indexOf("=");
    const rawKey = equals < 0 ? pair : pair.slice(0, equals);
    let key = decodePart(rawKey);
    if (key === null) {
      fault ??= notUtf8(rawKey);
      key = rawKey;
    } else if (seen.has(key)) {
      fault ??= `gives the parameter '${key}' more than once`;
    }
    seen.add(key);
    const rawValue = equals < 0 ? "" : pair.slice(equals + 1);
    const value = decodePart(rawValue);
    if (value === null) fault ??= notUtf8(rawValue);
    entries.push([key, value ?? rawValue]);
  }
  return { params: Object.fromEntries(entries), fault };
}

/**
 * What a subscribe for `name` that nothing is offered under is refused with (PROTOCOL.md §5.5,
 * §21.3), the same text in every binding: `PATH` is the name's path as written (up to its first
 * `?`, not decoded, not escaped). `kind`: "publisher", "channel" (a channel open) or "channel-only"
 * (a plain subscribe to a name offered only as a channel).
 */
export function unknownMessage(name, kind = "publisher") {
  const question = name.indexOf("?");
  const path = question < 0 ? name : name.slice(0, question);
  if (kind === "channel") return `no channel named '${path}' (PROTOCOL.md §21.3)`;
  if (kind === "channel-only") return `no publisher named '${path}' ('${path}' is a channel: open it as one, PROTOCOL.md §21.3)`;
  return `no publisher named '${path}'`;
}

/**
 * What a subscribe for `name` (a channel open: `kind` "channel") is refused with, code 9 (PROTOCOL.md
 * §19.2), when its factory threw or returned something that is not a Publisher (neither null nor
 * an object with a subscribe method): `publisher 'PATH' could not be created: its factory failed
 * (PROTOCOL.md §19.2)`, `PATH` as in unknownMessage, the same text in every binding. Not the error's
 * message nor its name: an exception's text can hold what the peer must not see (docs/security.md);
 * the connection's `onerror` gets the error.
 */
export function failedMessage(name, kind = "publisher") {
  const question = name.indexOf("?");
  const path = question < 0 ? name : name.slice(0, question);
  return `${kind} '${path}' could not be created: its factory failed (PROTOCOL.md §19.2)`;
}

/**
 * What a subscribe for `name` is refused with, code 9 (PROTOCOL.md §19.2), when its publisher's
 * subscribe() threw (rule 1.9: it must return normally): `publisher 'PATH' could not be subscribed
 * to: its subscribe failed (PROTOCOL.md §19.2)`, `PATH` as in unknownMessage, the same text in every
 * binding; as for failedMessage, not the error's message nor its name (the connection's `onerror`
 * gets the error). An error with a numeric `code` is sent with its own message and code.
 */
export function subscribeFailedMessage(name) {
  const question = name.indexOf("?");
  const path = question < 0 ? name : name.slice(0, question);
  return `publisher '${path}' could not be subscribed to: its subscribe failed (PROTOCOL.md §19.2)`;
}

const notUtf8 = (part) => `has the query part '${part}', which is not percent-encoded UTF-8`;

/** One query part percent-decoded; null when it is not percent-encoded UTF-8 (RFC 3986 §2.1). */
function decodePart(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}

const isField = (segment) => segment.startsWith("{") && segment.endsWith("}");

/** An offered name's segment percent-decoded; one that is not percent-encoded UTF-8 could never be asked for. */
function offeredSegment(name, segment) {
  const decoded = decodePart(segment);
  if (decoded === null) {
    throw new TypeError(`the name ${JSON.stringify(name)} cannot be offered: its path segment '${segment}' is not `
      + "percent-encoded UTF-8 (write '%' as %25, PROTOCOL.md §5.5)");
  }
  return decoded;
}

/**
 * The exact-match key of a path whose decoded segments are `segments`: the path itself when it
 * has no escape, else the segments with `%` and `/` re-escaped, so equal segments give equal keys.
 */
function pathKey(path, segments) {
  if (!path.includes("%")) return path;
  return segments.map((s) => s.replaceAll("%", "%25").replaceAll("/", "%2F")).join("/");
}

/** The fields of a pattern (its literal segments decoded) matched by a name's decoded `segments`, or null. */
function match(pattern, segments) {
  if (pattern.length !== segments.length) return null;
  const fields = {};
  for (let i = 0; i < pattern.length; i++) {
    const want = pattern[i];
    if (isField(want)) {
      if (segments[i] === "") return null;
      fields[want.slice(1, -1)] = segments[i];
    } else if (want !== segments[i]) {
      return null;
    }
  }
  return fields;
}

function isPublisher(value) {
  return value !== null && typeof value === "object" && typeof value.subscribe === "function";
}

function describe(value) {
  if (value === null) return "null";
  if (typeof value === "object") return value.constructor?.name ?? "an object";
  return typeof value;
}

function toBytes(element) {
  if (element instanceof Uint8Array) return element;
  if (typeof element === "string") return utf8.encode(element);
  if (ArrayBuffer.isView(element)) return new Uint8Array(element.buffer, element.byteOffset, element.byteLength);
  if (element instanceof ArrayBuffer) return new Uint8Array(element);
  return null;
}

/** The Subscriber given to a local Publisher for one subscription of the peer. */
class ServedStream {
  constructor(table, id, name, wanted, elementSize) {
    this._table = table;
    this.id = id;
    this.name = name;
    this.elementSize = elementSize; // > 0: every element has exactly this many bytes (§7)
    this.wanted = wanted; // the peer's outstanding demand (§6.1), a BigInt
    this.asked = 0; // requested from the local Publisher and not yet received
    this.sent = 0; // elements sent to the peer
    this.lastSize = elementSize || -1; // bytes of the last element; -1 before the first
    this.upstream = null;
    this.done = false;
    this.input = null; // a channel's input (rsio-channels.js ServedInput), ended with this stream (§21.5)
    this.metadata = null; // the subscribe's metadata (§18)
    this.contentType = null; // the media type announced (§17)
    this.queue = []; // elements waiting behind a split element: {bytes, at}
    this.pack = []; // fixed-size elements of this turn, sent as one onNextPacked
    this.terminal = null; // onComplete/onError waiting for the queue
  }

  onSubscribe(subscription) {
    if (this.upstream !== null || this.done) { // rule 2.5: one subscription only
      subscription?.cancel?.();
      return;
    }
    this.upstream = subscription;
    this._table.pull(this);
  }

  onNext(element) {
    if (this.done) return;
    if (this.asked === 0) {
      this._table.fail(this, `publisher '${this.name}' broke rule 1.1: onNext without demand`);
      return;
    }
    const bytes = toBytes(element);
    if (bytes === null) {
      this._table.fail(this, element instanceof Unencodable
        ? `publisher '${this.name}' emitted an element its content type cannot encode: ${element.what}`
        : `publisher '${this.name}' emitted ${describe(element)}; elements are bytes (Uint8Array, ArrayBuffer) or strings`);
      return;
    }
    if (this.elementSize && bytes.length !== this.elementSize) {
      this._table.fail(this, `publisher '${this.name}' emitted ${bytes.length} bytes; its elementSize is `
        + `${this.elementSize} (PROTOCOL.md §7)`);
      return;
    }
    this.asked -= 1;
    if (this.wanted !== UNBOUNDED) this.wanted -= 1n;
    this.sent += 1;
    this.lastSize = bytes.length;
    this._table.sendElement(this, bytes);
    if (this.asked === 0) this._table.schedulePull(this);
  }

  onError(error) {
    if (this.done) return;
    // §19.2: the publisher's own failure is code 1, or the code of a relayed RemoteStreamError
    const code = Number.isInteger(error?.code) && error.code >= 0 ? error.code : APPLICATION;
    this._table.finish(this, { type: "onError", subscriber: this.id, error: failureText(error), errorCode: code });
  }

  onComplete() {
    if (this.done) return;
    this._table.finish(this, { type: "onComplete", subscriber: this.id });
  }
}

/**
 * The onError text of a publisher's own failure (PROTOCOL.md §10): the error's name, a colon and
 * its message, `TypeError: boom`, as Python's and Java's servers send theirs (a value that is not
 * an Error: `Error: ` and the value).
 */
function failureText(error) {
  return `${error?.name ?? "Error"}: ${error?.message ?? error}`;
}

/** A refusal's text and code for an error thrown by a factory or hook: its own when it carries a code (§19.2). */
export function refusalOf(error, fallback, code) {
  if (Number.isInteger(error?.code) && error.code >= 0) return [String(error.message ?? error), error.code];
  return [fallback, code];
}

/** The peer's subscriptions on this endpoint's publishers; `conn` sends, reports and knows writability. */
export class ServingTable {
  /** `offer`: the publishers; `channels`: the channel factories (§21), each (input, params, path, connection, metadata). */
  constructor(conn, offer, channels, limits) {
    this._conn = conn;
    this._offer = offer;
    this._channels = channels;
    this._limits = limits;
    this.streams = new Map(); // the peer's ids -> ServedStream
    this._pending = new Set();
    this._pullQueued = false;
    this._splitting = new Set(); // streams with a split element (or elements queued behind one)
    this._packing = new Set(); // fixed-size streams with elements waiting to be packed
    this._packQueued = false;
    this._partsQueued = false;
  }

  /**
   * The peer's subscribe `frame` (with `metadata`, §18, and `channel`, §21.3, set by the
   * connection): refused with onError, or served.
   */
  subscribe(frame) {
    const { subscriber: id, publisher: name, initial_demand: initial } = frame;
    if (this.streams.has(id)) {
      throw new ProtocolError(`subscribe reuses subscriber id ${id} before its subscription ended`, "§5.3");
    }
    if (initial > UNBOUNDED) {
      return this._refuse(id, `rule 3.9: initialDemand ${initial} is above 2**63 - 1 (PROTOCOL.md §6.2)`, INVALID_DEMAND);
    }
    if (utf8.encode(name).length > this._limits.maxNameLength) {
      return this._refuse(id, `refused: publisher name longer than max_name_length=${this._limits.maxNameLength} bytes `
        + "(PROTOCOL.md §11)", LIMIT_EXCEEDED);
    }
    if (this.streams.size >= this._limits.maxSubscriptions) {
      return this._refuse(id, `refused: at most max_subscriptions=${this._limits.maxSubscriptions} subscriptions per connection `
        + "(PROTOCOL.md §11)", LIMIT_EXCEEDED);
    }
    const metadata = frame.metadata ?? NO_METADATA;
    const channel = frame.channel === true;
    const found = (channel ? this._channels : this._offer).find(name);
    if (found?.fault != null) { // a malformed name: refused, not half understood (§5.5)
      return this._refuse(id, `${channel ? "channel" : "publisher"} name '${name}' ${found.fault} (PROTOCOL.md §5.5)`,
        APPLICATION);
    }
    if (found === null) { // a plain subscribe to a name offered only as a channel says so (§21.3)
      const kind = channel ? "channel" : this._channels?.find(name) != null ? "channel-only" : "publisher";
      return this._refuse(id, unknownMessage(name, kind), UNKNOWN_PUBLISHER);
    }
    const input = channel ? this._conn._channels.serve(id) : null; // the opener's input (§21.3)
    let publisher = found.target;
    if (typeof publisher === "function") {
      try {
        publisher = channel ? publisher(input, found.params, found.path, this._conn, metadata)
          : publisher(found.params, found.path, this._conn, metadata);
      } catch (error) {
        input?.outputEnded();
        const [text, code] = refusalOf(error, failedMessage(name, channel ? "channel" : "publisher"), INTERNAL);
        if (code === INTERNAL) this._conn._report(error);
        return this._refuse(id, text, code);
      }
      if (publisher == null) { // the factory's "none"
        input?.outputEnded();
        return this._refuse(id, unknownMessage(name, channel ? "channel" : "publisher"), UNKNOWN_PUBLISHER);
      }
      if (!isPublisher(publisher)) { // refused as a factory that threw (§19.2); onerror says what it was
        input?.outputEnded();
        this._conn._report(new TypeError(`the factory for '${name}' returned ${describe(publisher)}, not a Publisher`));
        return this._refuse(id, failedMessage(name, channel ? "channel" : "publisher"), INTERNAL);
      }
    }
    const size = publisher.elementSize ?? 0;
    if (!Number.isInteger(size) || size < 0 || size > this._limits.maxElementSize) {
      input?.outputEnded();
      return this._refuse(id, `publisher '${name}' has elementSize ${size}; it is 0 (any size) or a byte count `
        + `up to ${this._limits.maxElementSize} (PROTOCOL.md §7)`, INTERNAL);
    }
    const contentType = publisher.contentType ?? null;
    const problem = contentType === null ? null : mediaTypeProblem(contentType);
    if (problem !== null) {
      input?.outputEnded();
      return this._refuse(id, `publisher '${name}': ${problem}`, INTERNAL);
    }
    const stream = new ServedStream(this, id, name, initial, size);
    stream.input = input;
    stream.metadata = metadata;
    stream.contentType = contentType;
    this.streams.set(id, stream);
    this._conn._send({ type: "onSubscribe", subscriber: id, element_size: size, contentType });
    try {
      publisher.subscribe(stream);
    } catch (error) { // rule 1.9 broken by the local publisher: a serving-side failure, as a factory's (§19.2)
      this._conn._report(error);
      const [text, code] = refusalOf(error, subscribeFailedMessage(name), INTERNAL);
      this.fail(stream, text, code); // this subscription only, not the error's text
    }
    return undefined;
  }

  request(frame) {
    const stream = this.streams.get(frame.subscriber);
    if (stream === undefined || stream.done) return; // §5.4: may have crossed our terminal signal
    if (frame.demand === 0n || frame.demand > UNBOUNDED) {
      const what = frame.demand === 0n ? "0" : `${frame.demand} (a negative 64-bit number)`; // rstreams' words
      this.fail(stream, `rule 3.9: request(${what}) is illegal (PROTOCOL.md §6.2)`, INVALID_DEMAND);
      return;
    }
    const sum = stream.wanted + frame.demand;
    stream.wanted = sum >= UNBOUNDED ? UNBOUNDED : sum;
    this.pull(stream);
  }

  cancel(frame) {
    const stream = this.streams.get(frame.subscriber);
    if (stream === undefined || (stream.done && stream.terminal === null)) return;
    this._stop(stream);
    this._conn._send({ type: "onComplete", subscriber: stream.id }); // the acknowledgement (§5.4)
  }

  /** Ask the local Publisher for more, within the peer's demand and while the transport takes writes. */
  pull(stream) {
    if (stream.done || stream.upstream === null) return;
    if (stream.queue.length > 0) return; // a split element is going out: no more until it is (memory)
    // before the first element tells their size, they may be as large as the largest written whole
    const size = stream.lastSize >= 0 ? stream.lastSize : this._limits.splitThreshold;
    const pull = Math.max(1, Math.min(PULL, Math.floor(PULL_BYTES / Math.max(1, size))));
    const target = stream.wanted < BigInt(pull) ? Number(stream.wanted) : pull;
    if (stream.asked >= target) return;
    if (!this._conn.writable) {
      this._conn._waitWritable();
      return;
    }
    const n = target - stream.asked;
    stream.asked += n;
    try {
      stream.upstream.request(n);
    } catch (error) { // rule 3.16 broken by the local publisher
      this._conn._report(error);
      this.fail(stream, `publisher '${stream.name}' failed: ${error?.message ?? error}`);
    }
  }

  /** Pull again in the next turn of the event loop (rule 3.3: no unbounded recursion; I/O first). */
  schedulePull(stream) {
    this._pending.add(stream);
    if (this._pullQueued) return;
    this._pullQueued = true;
    nextTurn(() => {
      this._pullQueued = false;
      const streams = [...this._pending];
      this._pending.clear();
      for (const s of streams) this.pull(s);
    });
  }

  /** The transport drained: every stream may pull again, and split elements go on. */
  pullAll() {
    for (const stream of this.streams.values()) this.pull(stream);
    this._scheduleParts();
  }

  /**
   * Send one element: at once when it is small and nothing of its stream waits; otherwise
   * queued behind its stream's split element, whose parts go out one per stream per turn of
   * the event loop, round-robin (§8), so one large element never stalls the other streams.
   */
  sendElement(stream, bytes) {
    if (stream.queue.length === 0 && bytes.length <= this._limits.splitThreshold && this._roomForElement()) {
      if (stream.elementSize) this._pack(stream, bytes);
      else this._conn._send({ type: "onNext", subscriber: stream.id, element: bytes });
      return;
    }
    stream.queue.push({ bytes, at: 0 });
    this._splitting.add(stream);
    this._scheduleParts();
  }

  /**
   * Whether an element may be written now: while the transport takes writes and what this turn
   * queued for it is under PULL_BYTES. Otherwise it waits in its stream's queue, sent by
   * _sendParts as the transport drains. A pull sized by small elements may be answered with
   * large ones (sizes may grow from one element to the next, and a publisher may emit a whole
   * pull in one turn); waiting here keeps the unsent bytes near the transport's high-water
   * mark, so MAX_UNSENT only ever catches a peer that does not read, never one turn's burst.
   */
  _roomForElement() {
    return this._conn.writable && this._conn._outBytes < PULL_BYTES;
  }

  /**
   * Fixed-size elements produced in one turn go out together as onNextPacked (§7), at most
   * splitThreshold bytes a frame; a stream's other signals flush its pack first.
   */
  _pack(stream, bytes) {
    stream.pack.push(bytes);
    if ((stream.pack.length + 1) * stream.elementSize > this._limits.splitThreshold) {
      this._flushPack(stream);
      return;
    }
    this._packing.add(stream);
    if (this._packQueued) return;
    this._packQueued = true;
    queueMicrotask(() => {
      this._packQueued = false;
      const streams = [...this._packing];
      this._packing.clear();
      for (const s of streams) this._flushPack(s);
    });
  }

  _flushPack(stream) {
    const pack = stream.pack;
    if (pack.length === 0) return;
    stream.pack = [];
    const { id, elementSize } = stream;
    if (pack.length === 1) this._conn._send({ type: "onNext", subscriber: id, element: pack[0] }, elementSize);
    else this._conn._send({ type: "onNextPacked", subscriber: id, count: pack.length, elements: concat(pack) }, elementSize);
  }

  _scheduleParts() {
    if (this._partsQueued || this._splitting.size === 0) return;
    this._partsQueued = true;
    nextTurn(() => {
      this._partsQueued = false;
      this._sendParts();
    });
  }

  /** One round: the next part (or queued small element) of every stream with a split element. */
  _sendParts() {
    if (!this._conn.writable) {
      if (this._conn.state === "OPEN") this._conn._waitWritable(); // pullAll() comes back here
      return;
    }
    const threshold = this._limits.splitThreshold;
    for (const stream of [...this._splitting]) {
      const head = stream.queue[0];
      if (head === undefined) { // everything sent: the terminal signal may follow now
        this._splitting.delete(stream);
        if (stream.terminal !== null) {
          this._forget(stream);
          this._conn._send(stream.terminal);
          stream.terminal = null;
        }
        continue;
      }
      if (head.bytes.length <= threshold && head.at === 0) { // whole elements: as many as there is room for
        for (let next = head; next !== undefined && next.bytes.length <= threshold; next = stream.queue[0]) {
          this._conn._send({ type: "onNext", subscriber: stream.id, element: next.bytes }, stream.elementSize);
          stream.queue.shift();
          if (!this._roomForElement()) break;
        }
        if (stream.queue.length === 0 && !stream.done) this.schedulePull(stream);
        continue;
      }
      const end = Math.min(head.at + threshold, head.bytes.length);
      const last = end === head.bytes.length;
      // one split element at a time per subscription, so element id 0 is free again (§8)
      this._conn._send({ type: last ? "onNextLastPart" : "onNextPart", subscriber: stream.id, element_id: 0,
        data: head.bytes.subarray(head.at, end) });
      head.at = end;
      if (last) stream.queue.shift();
      if (stream.queue.length === 0 && !stream.done) this.schedulePull(stream);
    }
    this._scheduleParts();
  }

  /** End one subscription with onError `message`, cancelling its local Publisher. */
  fail(stream, message, code = INTERNAL) {
    if (stream.done) return;
    this._flushPack(stream); // what it emitted within demand goes first
    this._stop(stream);
    this._conn._send({ type: "onError", subscriber: stream.id, error: message, errorCode: code });
  }

  /** The local publisher's terminal signal, sent after the stream's queued elements. */
  finish(stream, frame) {
    stream.done = true;
    this._flushPack(stream);
    if (stream.queue.length === 0) {
      this._forget(stream);
      this._conn._send(frame);
    } else {
      stream.terminal = frame; // _sendParts sends it after the last part; a cancel still drops them
    }
  }

  /** The connection ended: cancel every local Publisher. */
  closeAll() {
    const streams = [...this.streams.values()];
    this.streams.clear();
    for (const stream of streams) this._stop(stream);
  }

  _stop(stream) {
    stream.done = true;
    stream.pack = [];
    this._packing.delete(stream);
    stream.queue = [];
    stream.terminal = null;
    this._splitting.delete(stream);
    this._forget(stream);
    try {
      stream.upstream?.cancel();
    } catch (error) {
      this._conn._report(error);
    }
  }

  /** The stream's subscription is over: a channel's input ends with it (§21.5). */
  _forget(stream) {
    this.streams.delete(stream.id);
    const input = stream.input;
    stream.input = null;
    input?.outputEnded();
  }

  _refuse(id, message, code) {
    this._conn._send({ type: "onError", subscriber: id, error: message, errorCode: code });
  }
}

// -- Publishers from iterables ----------------------------------------------------------------

function checkSubscriber(subscriber) {
  if (subscriber === null || typeof subscriber !== "object") {
    throw new TypeError(`rule 1.9: subscribe needs a subscriber object, got ${subscriber}`);
  }
}

function addDemand(outstanding, n) {
  if (typeof n === "bigint") n = n >= BigInt(Number.MAX_SAFE_INTEGER) ? Infinity : Number(n);
  return Math.min(outstanding + n, Number.MAX_SAFE_INTEGER); // beyond 2**53: unbounded in practice
}

function validDemand(n) {
  return (typeof n === "bigint" && n > 0n) || (typeof n === "number" && n > 0 && (Number.isInteger(n) || n === Infinity));
}

/**
 * A Publisher of `iterable`'s values (a fresh iterator per subscriber; a generator object can
 * be subscribed once), emitted only as requested, re-entrant requests served by one loop
 * (rule 3.3). It looks one value ahead, so that it completes as soon as the last value is
 * out, without waiting for demand it does not need.
 */
export function fromIterable(iterable) {
  if (iterable === null || typeof iterable?.[Symbol.iterator] !== "function") {
    throw new TypeError(`fromIterable needs an iterable, got ${describe(iterable)}`);
  }
  return {
    subscribe(subscriber) {
      checkSubscriber(subscriber);
      let iterator = null;
      let ahead = null; // the next step, read before it is requested
      let outstanding = 0;
      let emitting = false;
      let done = false;
      const step = () => {
        const next = ahead ?? iterator.next();
        ahead = null;
        return next;
      };
      subscriber.onSubscribe?.({
        request(n) {
          if (done) return;
          if (!validDemand(n)) {
            done = true;
            iterator?.return?.();
            subscriber.onError?.(invalidDemand(n));
            return;
          }
          outstanding = addDemand(outstanding, n);
          if (emitting) return; // served by the loop below
          emitting = true;
          try {
            iterator ??= iterable[Symbol.iterator]();
            while (!done) {
              const next = step();
              if (next.done) {
                done = true;
                subscriber.onComplete?.();
                break;
              }
              if (outstanding === 0) {
                ahead = next;
                break;
              }
              outstanding -= 1;
              subscriber.onNext?.(next.value);
              if (outstanding === 0 && !done) ahead = iterator.next();
            }
          } catch (error) {
            if (!done) {
              done = true;
              subscriber.onError?.(error);
            }
          } finally {
            emitting = false;
          }
        },
        cancel() {
          if (done) return;
          done = true;
          iterator?.return?.();
        },
      });
    },
  };
}

/** A Publisher of an async iterable's values; `next()` is called only while there is demand. */
export function fromAsyncIterable(iterable) {
  if (iterable === null || typeof iterable?.[Symbol.asyncIterator] !== "function") {
    throw new TypeError(`fromAsyncIterable needs an async iterable, got ${describe(iterable)}`);
  }
  return {
    subscribe(subscriber) {
      checkSubscriber(subscriber);
      const iterator = iterable[Symbol.asyncIterator]();
      let outstanding = 0;
      let running = false;
      let done = false;
      const run = async () => {
        running = true;
        try {
          while (outstanding > 0 && !done) {
            const step = await iterator.next();
            if (done) break;
            if (step.done) {
              done = true;
              subscriber.onComplete?.();
              break;
            }
            outstanding -= 1;
            subscriber.onNext?.(step.value);
          }
        } catch (error) {
          if (!done) {
            done = true;
            subscriber.onError?.(error);
          }
        } finally {
          running = false;
        }
      };
      subscriber.onSubscribe?.({
        request(n) {
          if (done) return;
          if (!validDemand(n)) {
            done = true;
            iterator.return?.();
            subscriber.onError?.(invalidDemand(n));
            return;
          }
          outstanding = addDemand(outstanding, n);
          if (!running) run();
        },
        cancel() {
          if (done) return;
          done = true;
          iterator.return?.();
        },
      });
    },
  };
}
