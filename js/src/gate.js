// The accepting side of extension auth (PROTOCOL.md §15) for listen(): one AuthGate per
// accepted connection, between its Connection and its ServingTable.
//
// Theory of operation. The serverHello lists auth. A clientHello without it is refused with
// a goodbye when authentication is required (§15.2), else served unauthenticated. From a
// clientHello that lists auth until its authenticate is settled, every subscribe is held in
// order (requests add to its demand; a cancel marks it, and its acknowledging onComplete is
// sent in its turn once `authenticated` is, never if authentication fails, §15.3). The `authenticate(credentials)` hook (a token string or {user, password}; it may
// return a promise) gives a principal, or null to refuse: refused ends the connection with
// the goodbye `authentication failed (PROTOCOL.md §15.3)`; accepted sends `authenticated`
// first, then lets the held subscribes through. Each subscribe is then checked with its
// principal (its own subscribeCredentials', else the connection's, §15.4) and the
// `authorize(principal, name)` hook; refusals are an onError naming the publisher, never the
// credentials. Secrets are passed to the hook and kept nowhere.

import { EXTENSIONS, ProtocolError, decodeCredentials, decodeVarint } from "./rsio-wire.js";
import { ERROR_CODES } from "./rsio-codes.js";
import { NO_METADATA } from "./rsio-metadata.js";
import { refusalOf } from "./rsio-publish.js";

const AUTH = EXTENSIONS.auth;
const REFUSED = Symbol("refused credentials");

export class AuthGate {
  /**
   * `authenticate(credentials)` -> principal | null (or a promise of it); `authorize(principal,
   * name, metadata)` -> boolean, or throws an error with a numeric `code` (§19.2) to refuse with it.
   */
  constructor({ authenticate, authorize = () => true, required = true }) {
    if (typeof authenticate !== "function") throw new TypeError("authenticate must be a function (credentials) => principal | null");
    if (typeof authorize !== "function") throw new TypeError("authorize must be a function (principal, name) => boolean");
    this._authenticate = authenticate;
    this._authorize = authorize;
    this.required = required;
    this.principal = null;
    this.pending = false; // a clientHello listed auth and its authenticate is not settled yet
    this._settled = false;
    this._held = new Map(); // the client's ids -> held subscribe frames (Map keeps their order)
    this._heldMessages = []; // [name, deliver, drop] of messages received before authenticate settled (§20.4)
    this._perSubscription = new Map(); // id -> principal (or REFUSED) for its next subscribe
    this._conn = null;
  }

  attach(conn) {
    this._conn = conn;
  }

  /** The clientHello is in; `listed`: it lists auth. A goodbye reason, or null to go on. */
  hello(listed) {
    if (listed) {
      this.pending = true;
      return null;
    }
    this._settled = true;
    return this.required ? "authentication required: this server needs extension auth (id 2), which the "
      + "clientHello does not list (PROTOCOL.md §15.2)" : null;
  }

  subscribe(frame) {
    if (this.pending) {
      if (this._held.has(frame.subscriber)) {
        throw new ProtocolError(`subscribe reuses subscriber id ${frame.subscriber} before its subscription ended`, "§5.3");
      }
      this._held.set(frame.subscriber, { ...frame });
      return;
    }
    this._decide(frame);
  }

  /** A request for a held subscribe adds to its demand; true when it was one. */
  request(frame) {
    const held = this._held.get(frame.subscriber);
    if (held === undefined) return false;
    held.initial_demand += frame.demand; // checked (rule 3.9) when it is let through
    return true;
  }

  /** A cancel of a held subscribe: acknowledged (§5.4) in its turn, after `authenticated`
   * (§15.3); true when it was one. */
  cancel(frame) {
    const held = this._held.get(frame.subscriber);
    if (held === undefined) return false;
    held.cancelled = true;
    return true;
  }

  /** An auth message from the client (§15.1). */
  message(code, payload) {
    if (code === AUTH.types.authenticate) this._authenticated(payload);
    else if (code === AUTH.types.subscribeCredentials) this._subscribeCredentials(payload);
    else if (code === AUTH.types.authenticated) {
      throw new ProtocolError("authenticated (0x85) received by the server", "§15.5");
    } else throw new ProtocolError(`message type 0x${code.toString(16)} is reserved by extension auth (id 2)`, "§4.4"); // not reached: the connection refuses reserved types
  }

  _authenticated(payload) {
    if (!this.pending || this._settled) throw new ProtocolError("a second authenticate", "§15.5");
    this._settled = true;
    const credentials = decodeCredentials(payload);
    this._check(credentials, (principal) => {
      if (principal === REFUSED) {
        this._conn._quit("authentication failed (PROTOCOL.md §15.3)", undefined, ERROR_CODES.UNAUTHENTICATED);
        return;
      }
      this.principal = principal;
      this.pending = false;
      this._conn._sendExtension(AUTH.types.authenticated, new Uint8Array(0));
      const held = [...this._held.values()];
      this._held.clear();
      for (const frame of held) {
        if (frame.cancelled) this._conn._send({ type: "onComplete", subscriber: frame.subscriber });
        else this._decide(frame);
      }
      for (const [name, deliver, drop] of this._heldMessages.splice(0)) this.admit(name, deliver, drop);
    });
  }

  _subscribeCredentials(payload) {
    const id = decodeVarint(payload, 0);
    if (id === null) throw new ProtocolError("malformed subscribeCredentials (truncated)", "§15.5");
    const credentials = decodeCredentials(payload, id.next);
    const key = id.value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(id.value) : id.value;
    if (this._perSubscription.size >= this._conn._limits.maxSubscriptions) {
      this._conn._quit("more subscribeCredentials held than max_subscriptions (PROTOCOL.md §15.4)", undefined, ERROR_CODES.LIMIT_EXCEEDED);
      return;
    }
    this._perSubscription.set(key, undefined); // a subscribe before an asynchronous verdict is refused
    this._check(credentials, (principal) => { this._perSubscription.set(key, principal); });
  }

  /** Run the hook; `then(principal or REFUSED)` once settled, if the connection is still open. */
  _check(credentials, then) {
    let verdict;
    try {
      verdict = this._authenticate(credentials);
    } catch (error) {
      this._conn._report(error);
      verdict = null;
    }
    const settle = (principal) => {
      if (this._conn.state === "OPEN") then(principal == null ? REFUSED : principal);
    };
    if (typeof verdict?.then === "function") {
      verdict.then(settle, (error) => { this._conn._report(error); settle(null); });
    } else {
      settle(verdict);
    }
  }

  _decide(frame) {
    const { subscriber: id, publisher: name } = frame;
    let principal = this.principal;
    if (this._perSubscription.has(id)) {
      principal = this._perSubscription.get(id);
      this._perSubscription.delete(id);
    }
    const path = name.split("?", 1)[0]; // quoted as PATH is in §5.5, the same in every binding
    if (principal === REFUSED || principal === undefined || (principal === null && this.required)) {
      this._conn._send({ type: "onError", subscriber: id, errorCode: ERROR_CODES.UNAUTHENTICATED,
        error: `unauthenticated: subscribe to '${path}' needs valid credentials (PROTOCOL.md §15.4)` });
      return;
    }
    const refusal = this._refusal(principal, name, frame.metadata ?? NO_METADATA,
      `unauthorized: subscribe to '${path}' is not allowed for this principal (PROTOCOL.md §15.4)`);
    if (refusal !== null) {
      this._conn._send({ type: "onError", subscriber: id, error: refusal[0], errorCode: refusal[1] });
      return;
    }
    this._conn._serving.subscribe(frame);
  }

  /** null when `authorize` lets `principal` use `name`, else [text, code] (§15.4, §19.2). */
  _refusal(principal, name, metadata, text) {
    try {
      const allowed = this._authorize(principal, name, metadata);
      if (allowed === true) return null; // true alone allows, as rstreams' `authorize(...) is True`
      if (typeof allowed?.then === "function") { // a promise would be truthy: refused, and said why
        this._conn._report(new TypeError(`authorize returned a promise for '${name}': it must return true or false `
          + "at once (refused; authenticate may be async, authorize may not)"));
      }
      return [text, ERROR_CODES.UNAUTHORIZED];
    } catch (error) {
      const refusal = refusalOf(error, text, ERROR_CODES.UNAUTHORIZED);
      if (refusal[0] === text) this._conn._report(error);
      return refusal;
    }
  }

  /**
   * A message for handler `name` (§20.4): `deliver()` when the connection's principal may use
   * the name, else `drop(reason)`; held in order while authenticate is being checked (§15.3).
   */
  admit(name, deliver, drop) {
    if (this.pending) {
      this._heldMessages.push([name, deliver, drop]);
      return;
    }
    if (this.principal === null && this.required) {
      drop(`message to '${name}' dropped: unauthenticated (PROTOCOL.md §20.4)`);
      return;
    }
    const refusal = this._refusal(this.principal, name, NO_METADATA, "");
    if (refusal === null) deliver();
    else drop(`message to '${name}' dropped: unauthorized (PROTOCOL.md §20.4)`);
  }
}
