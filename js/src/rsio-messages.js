// Extension messages (id 7, PROTOCOL.md §20): one-way messages to named handlers, bounded by
// the message credit the receiver grants.
//
// Theory of operation. Each direction has its own credit (§20.3). As a receiver, a Messages
// object grants `window` messages once the peer's hello shows the extension is active; a
// message holds its credit until its handler returned (or its promise settled) or it was
// dropped (no handler: §20.4), and the credits freed in one turn go back in one messageCredit.
// A message beyond the credit granted is a connection error (§20.3). As a sender, send()
// takes one credit; out of credit it waits in line (first come, first served) or, with
// {wait: false}, fails at once with MessageCreditError. Nothing is ever queued beyond the
// credit on either side.

import {
  EXTENSIONS, ExtensionNotOfferedError, ProtocolError, UNBOUNDED, concat, decodeVarint, encodeVarint,
} from "./rsio-wire.js";
import { Offer } from "./rsio-publish.js";

const MESSAGES = EXTENSIONS.messages;
const { message: MESSAGE, messageCredit: MESSAGE_CREDIT } = MESSAGES.types;
const utf8 = new TextEncoder();
const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** send(name, payload, {wait: false}) while the peer has granted no credit (§20.3). */
export class MessageCreditError extends Error {
  constructor(message) {
    super(message);
    this.name = "MessageCreditError";
  }
}

function toBody(payload) {
  if (payload === undefined) return new Uint8Array(0);
  if (typeof payload === "string") return utf8.encode(payload);
  if (payload instanceof Uint8Array) return payload;
  if (payload instanceof ArrayBuffer) return new Uint8Array(payload);
  if (ArrayBuffer.isView(payload)) return new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength);
  throw new TypeError(`a message's payload is a string, Uint8Array or ArrayBuffer, got ${typeof payload}`);
}

/** A message's payload: name (string), then the body (§20.2). */
export function encodeMessage(name, body) {
  const raw = utf8.encode(name);
  return concat([encodeVarint(raw.length), raw, body]);
}

/** {name, body} of a message's payload; ProtocolError (§20.2) if malformed. */
export function decodeMessage(payload) {
  let length;
  try {
    length = decodeVarint(payload, 0);
  } catch {
    length = null;
  }
  if (length === null || length.next + Number(length.value) > payload.length) {
    throw new ProtocolError("malformed message: its name length is not a minimal varint within the payload", "§20.2");
  }
  const end = length.next + Number(length.value);
  let name;
  try {
    name = strictUtf8.decode(payload.subarray(length.next, end));
  } catch {
    throw new ProtocolError("malformed message: its name is not valid UTF-8", "§20.2");
  }
  return { name, body: payload.slice(end) };
}

/** The count of a messageCredit's payload; ProtocolError (§20.2) if malformed. */
export function decodeCredit(payload) {
  let count;
  try {
    count = decodeVarint(payload, 0);
  } catch {
    count = null;
  }
  if (count === null || count.next !== payload.length || count.value === 0n || count.value > UNBOUNDED) {
    throw new ProtocolError("malformed messageCredit: its count must be one varint, 1 to 2**63 - 1", "§20.2");
  }
  return count.value;
}

/** One connection's messages, both ways; `conn` sends, reports and knows its limits. */
export class Messages {
  constructor(conn, handlers, window) {
    if (!Number.isInteger(window) || window < 1) {
      throw new RangeError(`maxMessagesInFlight must be an integer >= 1, got ${window}`);
    }
    this._conn = conn;
    this._handlers = new Offer(handlers ?? {}, "handlers");
    this._window = window;
    this.active = null; // null until the peer's hello: then whether both hellos list id 7
    this.credit = 0n; // messages we may still send
    this._waiting = []; // [resolve, reject] of sends waiting for credit (or for the hello), in order
    this._granted = 0; // credit we granted and the peer has not used
    this._freed = 0; // credit to grant again at the end of this turn
    this._grantQueued = false;
  }

  /** The peer's hello arrived; `active`: both hellos list the extension. */
  hello(active) {
    this.active = active;
    if (!active) {
      this._failWaiting(new ExtensionNotOfferedError("messages", "§20.1"));
      return;
    }
    this._granted = this._window;
    this._conn._sendExtension(MESSAGE_CREDIT, encodeVarint(this._window));
  }

  /** Send `payload` to the peer's handler `name`; resolves once it is written (its credit taken). */
  send(name, payload, { wait = true } = {}) {
    if (typeof name !== "string") throw new TypeError(`a message's name is a string such as "events/click", got ${typeof name}`);
    const frame = encodeMessage(name, toBody(payload));
    if (frame.length > this._conn._limits.maxStringLength) {
      throw new RangeError(`a message of ${frame.length} bytes is above max_string_length `
        + `${this._conn._limits.maxStringLength} (PROTOCOL.md §20.2)`);
    }
    const closed = this._conn._closedFor();
    if (closed !== null) return Promise.reject(closed);
    if (this.active === false) {
      return Promise.reject(new ExtensionNotOfferedError("messages", "§20.1"));
    }
    if (this.active === true && this.credit > 0n && this._waiting.length === 0) {
      this._take(frame);
      return Promise.resolve();
    }
    if (!wait && this.active === true) {
      return Promise.reject(new MessageCreditError(`no message credit: the peer has granted none left for '${name}' `
        + "(PROTOCOL.md §20.3); send with {wait: true} to wait for it"));
    }
    return new Promise((resolve, reject) => {
      this._waiting.push([() => { this._take(frame); resolve(); }, reject]);
    });
  }

  _take(frame) {
    if (this.credit !== UNBOUNDED) this.credit -= 1n;
    this._conn._sendExtension(MESSAGE, frame);
  }

  /** A message or messageCredit from the peer (the connection routes them here). */
  received(code, payload) {
    if (code === MESSAGE_CREDIT) {
      const sum = this.credit + decodeCredit(payload);
      this.credit = sum > UNBOUNDED ? UNBOUNDED : sum;
      while (this.credit > 0n && this._waiting.length) this._waiting.shift()[0]();
      return;
    }
    const { name, body } = decodeMessage(payload);
    if (this._granted === 0) {
      throw new ProtocolError(`message beyond the granted message credit (${this._window} in flight at most)`, "§20.3");
    }
    this._granted -= 1;
    const gate = this._conn._gate; // listen() with authenticate: the principal's name check (§20.4)
    if (gate == null) this._handle(name, body);
    else gate.admit(name, () => this._handle(name, body), (reason) => { this._conn._report(new Error(reason)); this._free(); });
  }

  _handle(name, body) {
    const found = this._handlers.find(name);
    if (found === null) {
      this._conn._report(new Error(`message to '${name}' dropped: no such handler (PROTOCOL.md §20.4)`));
      this._free();
      return;
    }
    if (found.fault != null) { // a malformed name (§5.5): dropped, not half understood
      this._conn._report(new Error(`message to '${name}' dropped: its name ${found.fault} (PROTOCOL.md §5.5)`));
      this._free();
      return;
    }
    let result;
    try {
      result = found.target({ name, path: found.path, params: found.params, payload: body });
    } catch (error) {
      this._conn._report(error);
      this._free();
      return;
    }
    if (typeof result?.then === "function") {
      result.then(() => this._free(), (error) => { this._conn._report(error); this._free(); });
    } else {
      this._free();
    }
  }

  /** A message's handling is over: its credit goes back, with the others of this turn. */
  _free() {
    this._freed += 1;
    if (this._grantQueued) return;
    this._grantQueued = true;
    queueMicrotask(() => {
      this._grantQueued = false;
      const count = this._freed;
      this._freed = 0;
      if (count === 0 || this._conn.state !== "OPEN") return;
      this._granted += count;
      this._conn._sendExtension(MESSAGE_CREDIT, encodeVarint(count));
    });
  }

  /** The connection ended: every waiting send fails with `error`. */
  close(error) {
    this.credit = 0n;
    this._failWaiting(error);
  }

  _failWaiting(error) {
    const waiting = this._waiting;
    this._waiting = [];
    for (const [, reject] of waiting) reject(error);
  }
}
