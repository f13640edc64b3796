// Extension channels (id 8, PROTOCOL.md §21): a subscription that also carries an input
// stream from this endpoint (the opener) to the publisher, keyed by the same subscriber id.
//
// Theory of operation. Opening a channel is an ordinary subscribe (the output, §5–§9)
// preceded by a channel mark (0xa0) for its id; the Connection sends the mark right before
// the subscribe, and only once the peer's hello shows the extension active (§21.1). The input
// is a Reactive Streams Publisher; an Input relays it: it subscribes to it after the
// subscribe went out and requests from it exactly the input demand the peer granted with
// inputRequest (§21.4), at most INPUT_WINDOW elements at a time and per turn of the event
// loop, and only while the transport takes writes. So nothing is ever sent beyond the
// peer's demand. Its onComplete/onError become inputComplete/inputError; the peer's
// inputCancel cancels it; and the end of the output (its terminal signal, our cancel, the
// connection's end) cancels it without a message (§21.5). Input messages for ids with no
// open input are dropped quietly.
//
// Serving (the `channels` option: names or "{field}" patterns -> factories (input, params,
// path, connection, metadata) returning the output Publisher): a subscribe marked by the
// peer's channel is looked up among the channels only (§21.3, rsio-publish.js). Its input is
// a ServedInput, an ordinary Publisher subscribable once: its Subscriber's requests become
// inputRequest (coalesced per turn), its cancel inputCancel; inputNext beyond the demand
// granted is a connection error (§21.4), so nothing is ever buffered; inputComplete and
// inputError (a ChannelInputError with the opener's text) end it. When the output ends first,
// its Subscriber gets onError (§21.5) and later input messages for the id are dropped.
//
// Split input elements (extension input-parts, id 9, §21.6): with the extension active an
// opener sends an input element larger than min(splitThreshold, maxStringLength - 10) as
// inputNextPart messages of that size and a last inputNext; a served input joins them (the
// first part takes the demand; partial inputs count against maxPartsInFlight and
// maxReassemblyBytes together with the connection's split output elements, §11) and hands
// its Subscriber one element. One joined above maxElementSize ends that input only. After
// an element it had to split, an opener asks its input Publisher for one element at a time
// (each once the transport takes writes) until a small one comes again, so a run of large
// elements does not pile up in the write buffer.

import {
  EXTENSIONS, ExtensionNotOfferedError, ProtocolError, UNBOUNDED, concat, decodeVarint, encodeVarint,
} from "./rsio-wire.js";
import { invalidDemand } from "./rsio-subscribe.js";

const CHANNELS = EXTENSIONS.channels;
const { channel: CHANNEL, inputRequest: INPUT_REQUEST, inputCancel: INPUT_CANCEL, inputNext: INPUT_NEXT,
  inputComplete: INPUT_COMPLETE, inputError: INPUT_ERROR } = CHANNELS.types;
const INPUT_PARTS = EXTENSIONS.inputParts; // split input elements (§21.6)
const INPUT_NEXT_PART = INPUT_PARTS.types.inputNextPart;

/** Input elements requested from an input Publisher at a time (as rstreams, §21.4). */
export const INPUT_WINDOW = 64;

const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

const nextTurn = typeof setImmediate === "function" ? setImmediate : (callback) => setTimeout(callback, 0);

/** "the peer does not offer extension channels" (§21.1). */
export function notActive() {
  return new ExtensionNotOfferedError("channels", "§21.1");
}

/** {subscriber, rest} of an input message's payload; ProtocolError (§21.2) if malformed. */
function readSubscriber(payload, what) {
  let id;
  try {
    id = decodeVarint(payload, 0);
  } catch {
    id = null;
  }
  if (id === null) throw new ProtocolError(`malformed ${what}: its subscriber is not a minimal varint`, "§21.2");
  const subscriber = id.value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id.value) : id.value;
  return { subscriber, rest: payload.subarray(id.next) };
}

/** The demand of an inputRequest after its subscriber; ProtocolError (§21.2) if malformed. */
function readDemand(rest) {
  let demand;
  try {
    demand = decodeVarint(rest, 0);
  } catch {
    demand = null;
  }
  if (demand === null || demand.next !== rest.length || demand.value === 0n || demand.value > UNBOUNDED) {
    throw new ProtocolError("malformed inputRequest: its demand must be one varint, 1 to 2**63 - 1", "§21.2");
  }
  return demand.value;
}

function toBytes(element) {
  if (element instanceof Uint8Array) return element;
  if (typeof element === "string") return utf8.encode(element);
  if (ArrayBuffer.isView(element)) return new Uint8Array(element.buffer, element.byteOffset, element.byteLength);
  if (element instanceof ArrayBuffer) return new Uint8Array(element);
  return null;
}

/** The opener's input failed: inputError's text (§21.5). */
export class ChannelInputError extends Error {
  constructor(message) {
    super(message);
    this.name = "ChannelInputError";
  }
}

const NOTHING = Object.freeze({ request() {}, cancel() {} });

/** The input of a channel this endpoint serves, keyed by the opener's id: a Publisher, subscribable once. */
class ServedInput {
  constructor(channels, id) {
    this._channels = channels;
    this._conn = channels._conn;
    this.id = id;
    this.granted = 0n; // input demand sent with inputRequest and not used by inputNext (§21.4)
    this.received = 0;
    this._asked = 0n; // requested by the Subscriber, not yet sent
    this._askQueued = false;
    this._subscriber = null;
    this._used = false;
    this.ended = false;
    this._end = null; // the opener's inputComplete/inputError before the Subscriber came: () => signal
    this._partial = null; // a split input element being received: {chunks, size} (§21.6)
  }

  subscribe(subscriber) {
    if (subscriber === null || typeof subscriber !== "object") {
      throw new TypeError(`rule 1.9: subscribe needs a subscriber object, got ${subscriber}`);
    }
    if (this._used) {
      this._call(subscriber, "onSubscribe", NOTHING);
      this._call(subscriber, "onError", new Error("a channel's input can be subscribed to once (PROTOCOL.md §21.3)"));
      return;
    }
    this._used = true;
    this._subscriber = subscriber;
    this._call(subscriber, "onSubscribe", { request: (n) => this._request(n), cancel: () => this._cancel() });
    const end = this._end;
    this._end = null;
    end?.();
  }

  _call(subscriber, method, value) {
    try {
      subscriber[method]?.(value);
    } catch (error) {
      this._conn._report(error);
    }
  }

  _request(n) {
    if (this.ended) return;
    const valid = (typeof n === "bigint" && n > 0n) || (typeof n === "number" && n > 0 && (Number.isInteger(n) || n === Infinity));
    if (!valid) {
      this._cancel();
      this._call(this._subscriber, "onError", invalidDemand(n));
      return;
    }
    const more = typeof n === "bigint" ? n : n === Infinity || n > Number.MAX_SAFE_INTEGER ? UNBOUNDED : BigInt(n);
    const sum = this._asked + more;
    this._asked = sum > UNBOUNDED ? UNBOUNDED : sum;
    if (this._askQueued) return;
    this._askQueued = true;
    queueMicrotask(() => { // the requests of one turn go out as one inputRequest
      this._askQueued = false;
      const asked = this._asked;
      this._asked = 0n;
      if (this.ended || asked === 0n) return;
      const granted = this.granted + asked;
      this.granted = granted > UNBOUNDED ? UNBOUNDED : granted;
      this._channels._send(INPUT_REQUEST, this.id, encodeVarint(asked));
    });
  }

  _cancel() {
    if (this.ended) return;
    this._finish();
    this._channels._send(INPUT_CANCEL, this.id);
  }

  _finish() {
    this.ended = true;
    this._discard();
    this._channels._forgetServed(this);
  }

  _take(what) {
    if (this.granted === 0n) {
      throw new ProtocolError(`${what} for subscriber ${this.id} beyond the input demand of 0`, "§21.4");
    }
    if (this.granted !== UNBOUNDED) this.granted -= 1n;
  }

  /** inputNext from the opener: a whole element, or the end of a split one (§21.6). */
  next(bytes) {
    if (this.ended) return; // crossed our inputCancel (§21.5)
    let element = bytes;
    if (this._partial === null) this._take("inputNext");
    else {
      const { chunks } = this._partial;
      if (!this._grow(bytes)) return;
      chunks.push(bytes);
      this._discard();
      element = concat(chunks);
    }
    this.received += 1;
    this._call(this._subscriber, "onNext", element);
  }

  /** inputNextPart from the opener (§21.6): the first one takes the demand. */
  part(bytes) {
    if (this.ended) return; // crossed our inputCancel, or this input is over (§21.5)
    if (this._partial === null) {
      this._take("inputNextPart");
      const limits = this._conn._limits;
      if (this._conn._parts.size + this._channels.partials >= limits.maxPartsInFlight) {
        throw new ProtocolError(`more than max_parts_in_flight=${limits.maxPartsInFlight} split elements at once`, "§11");
      }
      this._partial = { chunks: [], size: 0 };
      this._channels.partials += 1;
    }
    if (!this._grow(bytes)) return;
    this._partial.chunks.push(bytes);
  }

  /**
   * Count `bytes` more of the split element; false once it would grow past maxElementSize (the
   * input ends). Checked in rstreams' order: the element's size, then the connection's bytes.
   */
  _grow(bytes) {
    const limits = this._conn._limits;
    if (this._partial.size + bytes.length > limits.maxElementSize) {
      const error = new RangeError(`split input element for subscriber ${this.id} grows past max_element_size=`
        + `${limits.maxElementSize} (PROTOCOL.md §11)`);
      this._cancel();
      this._call(this._subscriber, "onError", error);
      return false;
    }
    if (this._conn._partBytes + bytes.length > limits.maxReassemblyBytes) {
      throw new ProtocolError(`split elements in flight exceed max_reassembly_bytes=${limits.maxReassemblyBytes}`, "§11");
    }
    this._partial.size += bytes.length;
    this._conn._partBytes += bytes.length;
    return true;
  }

  /** Drop a partly received element, and its bytes from the connection's count. */
  _discard() {
    if (this._partial === null) return;
    this._conn._partBytes -= this._partial.size;
    this._partial = null;
    this._channels.partials -= 1;
  }

  /** inputComplete (`error` null) or inputError from the opener. */
  terminal(error) {
    if (this.ended) return;
    if (error === null && this._partial !== null) {
      throw new ProtocolError(`inputComplete for subscriber ${this.id} with an unfinished split input element`, "§21.6");
    }
    this._finish();
    const signal = () => (error === null ? this._call(this._subscriber, "onComplete")
      : this._call(this._subscriber, "onError", new ChannelInputError(error)));
    if (this._subscriber === null) this._end = signal;
    else signal();
  }

  /** The channel's subscription ended (terminal signal sent, cancel acknowledged, connection over): §21.5. */
  outputEnded() {
    if (this.ended) return;
    this._finish();
    const error = new Error("the channel's subscription ended before its input (PROTOCOL.md §21.5)");
    if (this._subscriber === null) this._end = () => this._call(this._subscriber, "onError", error);
    else this._call(this._subscriber, "onError", error);
  }
}

/** The Subscriber of one channel's input Publisher: relays it within the peer's input demand. */
class Input {
  constructor(channels, id, source) {
    this._channels = channels;
    this._conn = channels._conn;
    this.id = id;
    this._source = source;
    this.granted = 0n; // input demand the peer granted and we have not used (§21.4)
    this.outstanding = 0; // requested from the input Publisher, not yet received
    this.sent = 0; // inputNext messages sent
    this._upstream = null;
    this.done = false; // ended: terminal sent, cancelled by the peer, or the output ended
    this._waiting = false;
    this._turn = 0; // elements requested since the last wait: at most INPUT_WINDOW per turn
    this._window = INPUT_WINDOW; // 1 after a split element (§21.6)
  }

  /** Subscribe to the input Publisher (its signals must follow the channel's subscribe). */
  start() {
    if (this.done) return;
    try {
      this._source.subscribe(this);
    } catch (error) {
      this._conn._report(error);
      this._terminate(INPUT_ERROR, `${error?.name ?? "Error"}: ${error?.message ?? error}`);
    }
  }

  /** inputRequest(n) from the peer. */
  grant(n) {
    const sum = this.granted + n;
    this.granted = sum > UNBOUNDED ? UNBOUNDED : sum;
    this._pull();
  }

  /** The peer cancelled the input, or the output ended: cancel the input Publisher. */
  end() {
    if (this.done) return;
    this.done = true;
    this._channels._forget(this);
    const upstream = this._upstream;
    this._upstream = null;
    try {
      upstream?.cancel();
    } catch (error) {
      this._conn._report(error);
    }
  }

  _pull() {
    const upstream = this._upstream;
    if (upstream === null || this.done) return;
    const window = this.granted < BigInt(this._window) ? Number(this.granted) : this._window;
    const want = window - this.outstanding;
    if (want <= 0) return;
    if (!this._conn.writable) {
      if (this._conn.state === "OPEN") this._wait(() => this._conn._waitWritable());
      return;
    }
    if (this._turn >= INPUT_WINDOW) { // a window per turn: the turn's write goes out first
      this._wait(null);
      return;
    }
    this._turn += want;
    this.outstanding += want;
    try {
      upstream.request(want);
    } catch (error) {
      this._conn._report(error);
      this.end();
    }
  }

  _wait(ask) {
    if (this._waiting) return;
    this._waiting = true;
    if (ask === null) nextTurn(() => this.writable());
    else ask();
  }

  /** The transport takes writes again, or a new turn began. */
  writable() {
    this._waiting = false;
    this._turn = 0;
    this._pull();
  }

  _terminate(code, text = "") {
    if (this.done) return;
    this.done = true;
    this._upstream = null;
    this._channels._forget(this);
    this._channels._send(code, this.id, utf8.encode(text));
  }

  // -- Subscriber (the input Publisher calls these) -----------------------------------------
  onSubscribe(subscription) {
    if (this.done || this._upstream !== null) {
      subscription.cancel(); // rule 2.5
      return;
    }
    this._upstream = subscription;
    this._pull();
  }

  onNext(element) {
    if (this.done) return;
    const bytes = toBytes(element);
    const limits = this._conn._limits;
    const limit = this._conn.extensions.has(INPUT_PARTS.id) ? limits.maxElementSize : limits.maxStringLength - 10;
    if (bytes === null || bytes.length > limit || this.granted === 0n) {
      const upstream = this._upstream;
      const what = bytes === null ? `an input element of type ${typeof element}: inputNext holds bytes or a string`
        : this.granted === 0n ? "an input element beyond the demand requested from the input Publisher (rule 1.1)"
          : this._conn.extensions.has(INPUT_PARTS.id)
            ? `an input element of ${bytes.length} bytes is above max_element_size ${limit}`
            : `an input element of ${bytes.length} bytes: inputNext holds at most max_string_length - 10 = ${limit}`;
      this._terminate(INPUT_ERROR, `${what} (PROTOCOL.md §21.2)`);
      try {
        upstream?.cancel();
      } catch (error) {
        this._conn._report(error);
      }
      return;
    }
    if (this.granted !== UNBOUNDED) this.granted -= 1n;
    this.outstanding -= 1;
    this.sent += 1;
    const part = Math.min(limits.splitThreshold, limits.maxStringLength - 10);
    let at = 0;
    for (; bytes.length - at > part; at += part) { // split: parts, then the rest in inputNext (§21.6)
      this._channels._send(INPUT_NEXT_PART, this.id, bytes.subarray(at, at + part));
    }
    this._channels._send(INPUT_NEXT, this.id, at === 0 ? bytes : bytes.subarray(at));
    this._window = at === 0 ? INPUT_WINDOW : 1; // large elements one at a time, not a window in the write buffer
    if (this.outstanding <= INPUT_WINDOW / 2) this._pull();
  }

  onError(error) {
    this._terminate(INPUT_ERROR, `${error?.name ?? "Error"}: ${error?.message ?? error}`);
  }

  onComplete() {
    this._terminate(INPUT_COMPLETE);
  }
}

/** One connection's channels: the inputs of the channels it opened, and the peer's marks. */
export class Channels {
  constructor(conn) {
    this._conn = conn;
    this.inputs = new Map(); // our subscriber ids -> Input
    this.served = new Map(); // the peer's subscriber ids -> ServedInput of the channels we serve
    this.partials = 0; // served inputs with a split element partly received (§21.6)
    this._mark = null; // the id of the peer's channel mark waiting for its subscribe (§21.3)
  }

  /** The input of the peer's channel `id`, which this endpoint serves (§21.3). */
  serve(id) {
    const input = new ServedInput(this, id);
    this.served.set(id, input);
    return input;
  }

  _forgetServed(input) {
    if (this.served.get(input.id) === input) this.served.delete(input.id);
  }

  /** Send the mark for `sub` (right before its subscribe); null, or the error refusing it (§21.1). */
  open(sub, source) {
    if (!this._conn.extensions.has(CHANNELS.id)) return notActive();
    const input = new Input(this, sub.id, source);
    this.inputs.set(sub.id, input);
    sub._input = input;
    this._send(CHANNEL, sub.id);
    queueMicrotask(() => input.start()); // after the subscribe, which is queued next
    return null;
  }

  /** The output of channel `id` ended (terminal signal, our cancel, the connection): end its input. */
  outputEnded(input) {
    input?.end();
  }

  _forget(input) {
    if (this.inputs.get(input.id) === input) this.inputs.delete(input.id);
  }

  _send(code, id, rest = null) {
    this._conn._sendExtension(code, rest === null ? encodeVarint(id) : concat([encodeVarint(id), rest]));
  }

  /** The transport takes writes again. */
  writable() {
    for (const input of this.inputs.values()) if (input._waiting) input.writable();
  }

  /** A message of the extension from the peer (the connection routes them here). */
  received(code, payload) {
    const what = `0x${code.toString(16)}`;
    const { subscriber, rest } = readSubscriber(payload, what);
    if (code === INPUT_NEXT_PART) {
      this.served.get(subscriber)?.part(rest.slice()); // no channel: dropped quietly (§21.5)
      return;
    }
    if (code === CHANNEL) {
      if (rest.length !== 0) throw new ProtocolError(`malformed ${what}: bytes after its subscriber`, "§21.2");
      if (this._mark !== null) throw new ProtocolError("two 0xa0 messages before one Subscribe", "§21.3");
      this._mark = subscriber;
      return;
    }
    if (code === INPUT_REQUEST) {
      const demand = readDemand(rest);
      this.inputs.get(subscriber)?.grant(demand);
      return;
    }
    if (code === INPUT_CANCEL) {
      if (rest.length !== 0) throw new ProtocolError(`malformed ${what}: bytes after its subscriber`, "§21.2");
      this.inputs.get(subscriber)?.end();
      return;
    }
    // inputNext, inputComplete, inputError: for a channel this endpoint serves
    if ((code === INPUT_COMPLETE) && rest.length !== 0) {
      throw new ProtocolError(`malformed ${what}: bytes after its subscriber`, "§21.2");
    }
    let text = null;
    if (code === INPUT_ERROR) {
      try {
        text = strictUtf8.decode(rest);
      } catch {
        throw new ProtocolError("malformed inputError: its text is not UTF-8", "§21.2");
      }
    }
    const input = this.served.get(subscriber);
    if (input === undefined) return; // no channel has this id (any more): dropped quietly (§21.5)
    if (code === INPUT_NEXT) input.next(rest.slice());
    else input.terminal(code === INPUT_COMPLETE ? null : text);
  }

  /**
   * The peer's subscribe `frame`: true when a channel mark qualifies it (then it is looked up
   * among the channels this endpoint serves). The mark is used up by it whatever happens (§21.3).
   */
  marked(frame) {
    if (this._mark === null) return false;
    const mark = this._mark;
    this._mark = null;
    if (mark !== frame.subscriber) {
      throw new ProtocolError(`0xa0 for subscriber ${mark} followed by a Subscribe for subscriber ${frame.subscriber}`,
        "§21.3");
    }
    return true;
  }

  /** The connection ended: every input is cancelled. */
  close() {
    for (const input of [...this.inputs.values()]) input.end();
    for (const input of [...this.served.values()]) input.outputEnded();
    this._mark = null;
  }
}
