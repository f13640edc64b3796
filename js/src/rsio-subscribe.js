// RS.io for JavaScript, the subscribing side: one Subscription per remote subscription this
// endpoint makes (Reactive Streams rules 3.x, PROTOCOL.md §5, §6), and the async iterator of
// Connection.stream(), whose demand follows what its loop takes.
//
// A Subscription keeps its outstanding demand as a BigInt saturating at 2**63 - 1 (§6.1);
// until its subscribe is sent, requests add to the subscribe's initialDemand. The Connection
// decides what arrives (state, demand, parts) and calls _deliver and _finish.

import { ContentTypeError, decoderForType, sameMediaType } from "./rsio-content.js";
import { UNBOUNDED } from "./rsio-wire.js";

/** The error a request(n) with an n that is not > 0 signals: rstreams' text (errors.py). */
export function invalidDemand(n) {
  return new RangeError(`rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got ${n}`);
}

function toDemand(n) {
  if (typeof n === "bigint") return n;
  if (typeof n === "number" && Number.isInteger(n)) return BigInt(n);
  if (n === Infinity) return UNBOUNDED;
  return null;
}

export class Subscription {
  constructor(conn, id, name, subscriber) {
    this._conn = conn;
    this.id = id;
    this.name = name;
    this._subscriber = subscriber;
    this.state = "SUBSCRIBED"; // §5.2: SUBSCRIBED, ACTIVE, CANCELLED, CLOSED
    this.elementSize = 0;
    this.contentType = null; // the media type the publisher announced (§17), if it did
    this.outstanding = 0n; // demand granted and not yet used (§6.1)
    this.received = 0; // elements delivered
    this._sent = false; // the subscribe frame went out (before: requests add to initialDemand)
    this._input = null; // a channel's input (rsio-channels.js), ended with this subscription (§21.5)
  }

  /** Reactive Streams rule 3.9: n > 0; Number, BigInt or Infinity (= unbounded). */
  request(n) {
    if (this.state === "CLOSED" || this.state === "CANCELLED") return; // rule 3.6
    const demand = toDemand(n);
    if (demand === null || demand <= 0n) {
      this.cancel();
      this._finish((s) => s.onError?.(invalidDemand(n)));
      return;
    }
    const before = this.outstanding;
    this.outstanding = before + demand >= UNBOUNDED ? UNBOUNDED : before + demand;
    if (this._sent && before !== UNBOUNDED) {
      this._conn._send({ type: "request", subscriber: this.id, demand: demand >= UNBOUNDED ? UNBOUNDED : demand });
    }
  }

  /** Rule 3.5/3.7: idempotent. Elements still in flight are dropped quietly (§5.4). */
  cancel() {
    if (this.state !== "SUBSCRIBED" && this.state !== "ACTIVE") return;
    this.state = "CANCELLED";
    this._input?.end(); // cancelling a channel's output cancels its input (§21.5)
    this._conn._dropParts(this.id);
    if (this._sent) this._conn._send({ type: "cancel", subscriber: this.id });
  }

  _finish(signal) {
    const subscriber = this._subscriber;
    if (subscriber === null) return;
    this._subscriber = null;
    try {
      signal(subscriber);
    } catch (error) {
      this._conn._report(error);
    }
  }

  /** Hand one element to the subscriber; `taken`: its demand was already counted (split, §8). */
  _deliver(element, taken = false) {
    if (!taken && this.outstanding !== UNBOUNDED) this.outstanding -= 1n;
    this.received += 1;
    this._conn.elementsReceived += 1;
    try {
      this._subscriber?.onNext?.(element);
    } catch (error) { // rule 2.13: a throwing subscriber is cancelled
      this._conn._report(error);
      this.cancel();
      this._finish((s) => s.onError?.(error));
    }
  }
}

// -- the async iterator -----------------------------------------------------------------------

const textDecoder = new TextDecoder();
// decode -> the announced types it reads (§17.3): a JSON text is UTF-8 text too
const EXPECTED = { json: ["application/json"], text: ["text/plain; charset=utf-8", "application/json"] };

export function decoderFor(decode) {
  if (typeof decode === "function") return decode;
  if (decode === "bytes") return (bytes) => bytes;
  if (decode === "text") return (bytes) => textDecoder.decode(bytes);
  if (decode === "json") return (bytes) => JSON.parse(textDecoder.decode(bytes));
  throw new TypeError(`decode must be "bytes", "text", "json", "auto" or a function, got ${decode}`);
}

/** Subscriber and async iterator: buffers what arrives, requests as the loop consumes. */
export class DemandIterator {
  constructor(window, convert, decode = null) {
    this.window = window;
    this.convert = convert;
    this.decode = decode; // "auto": by the announced type (§17.2)
    this.buffer = [];
    this.done = false;
    this.error = null;
    this.waiter = null;
    this.subscription = null;
  }

  onSubscribe(subscription) {
    subscription.request(this.window);
  }

  onNext(bytes) {
    this.buffer.push(bytes);
    this._wake();
  }

  /** The publisher announced its elements' type (§17.2): decode by it, or refuse a contradiction. */
  onContentType(mediaType, subscription) {
    if (this.decode === "auto") {
      this.convert = decoderForType(mediaType) ?? ((bytes) => bytes);
      return;
    }
    const expected = EXPECTED[this.decode];
    if (expected === undefined || expected.some((type) => sameMediaType(mediaType, type))) return;
    if (sameMediaType(mediaType, "application/octet-stream")) return; // no more than bytes: as if unannounced
    this.error = new ContentTypeError(`'${subscription.name}' announced ${mediaType}; decode "${this.decode}" `
      + `expects ${expected.join(" or ")} (PROTOCOL.md §17.2)`);
    this.done = true;
    subscription.cancel();
    this._wake();
  }

  onError(error) {
    this.error = error;
    this.done = true;
    this._wake();
  }

  onComplete() {
    this.done = true;
    this._wake();
  }

  _wake() {
    const waiter = this.waiter;
    this.waiter = null;
    waiter?.();
  }

  async next() {
    while (this.buffer.length === 0) {
      if (this.done) {
        if (this.error !== null) {
          const error = this.error;
          this.error = null;
          throw error;
        }
        return { done: true, value: undefined };
      }
      await new Promise((resolve) => { this.waiter = resolve; });
    }
    const bytes = this.buffer.shift();
    this._refill();
    return { done: false, value: this.convert(bytes) };
  }

  _refill() {
    const sub = this.subscription;
    if (sub === null || this.done) return;
    const held = sub.outstanding + BigInt(this.buffer.length);
    const window = BigInt(this.window);
    if (held * 2n <= window) sub.request(window - held);
  }

  async return() {
    this.done = true;
    this.subscription?.cancel();
    this.buffer = [];
    return { done: true, value: undefined };
  }
}
