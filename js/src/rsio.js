// RS.io for JavaScript: subscribe to the publishers of an RS.io endpoint and offer publishers
// to it, with Reactive Streams demand. This module runs in browsers (over WebSocket) and in
// Node; the package's Node entry (node.js) adds TCP, TLS and Unix sockets and a WebSocket for
// Node 20. No framework, no build step.
//
//   import { connect } from "./rsio.js";
//   const conn = await connect("ws://127.0.0.1:8765/rsio", { auth: "token", publishers: {...} });
//   conn.subscribe("results", {
//     onSubscribe(s) { this.s = s; s.request(16); },
//     onNext(bytes) { ...; this.s.request(1); },
//     onError(error) {}, onComplete() {},
//   });
//   for await (const row of conn.stream("results", { window: 32, decode: "json" })) { ... }
//
// Theory of operation. A Connection drives one transport: anything with send(bytes), close()
// and `writable`, which calls onbytes/onend/ondrain (webSocketTransport() makes one of a
// WebSocket). The byte stream is RS.io exactly as over TCP: frames are concatenated with no
// relation to the transport's own framing (PROTOCOL.md §1), and frames queued in one turn of
// the event loop go out in one send. Each subscription this endpoint makes follows the state
// table of §5.2 (SUBSCRIBED -> ACTIVE -> CLOSED, or CANCELLED until the publisher's
// acknowledging onComplete, §5.4) and keeps its outstanding demand as a BigInt saturating at
// 2**63 - 1 (§6.1; rsio-subscribe.js). Subscriptions the peer makes on `publishers` are
// served by rsio-publish.js; resumption (§16) is rsio-resume.js. Whatever the peer does wrong (§10) ends the connection with a goodbye
// naming the rule and its PROTOCOL.md section, and every subscriber gets onError.
//
// Extensions (§4.4): keepalive (id 1, §14) always: pings answered with pongs, and a ping after
// `keepalive` seconds without input, so a server's idle timeout (§14.2) never closes a client
// that is only waiting for data. auth (id 2, §15) when `auth` is given: authenticate is sent
// as soon as the serverHello lists it, and `ready` settles with the server's verdict. Timers
// go through `clock` ({now, setTimeout, clearTimeout}), so tests drive time themselves.

import {
  DEFAULT_LIMITS, EXTENSIONS, FrameDecoder, ProtocolError, UNBOUNDED, VERSION, concat, encodeCredentials,
  encodeFrame, encodeVarint, extensionOf,
} from "./rsio-wire.js";
import { Offer, ServingTable, fromAsyncIterable, fromIterable } from "./rsio-publish.js";
import { Channels } from "./rsio-channels.js";
import { RESUME_DEFAULTS, ResumableSession, resumeOptions } from "./rsio-resume.js";
import { DemandIterator, Subscription, decoderFor } from "./rsio-subscribe.js";
import { ERROR_CODES, Qualifiers, codeName } from "./rsio-codes.js";
import { Messages } from "./rsio-messages.js";
import { ContentTypes, contentTypeFrame } from "./rsio-content.js";
import { parseUrl, pythonG } from "./rsio-url.js";
import { MetadataQualifier, checkMetadata, encodeMetadata } from "./rsio-metadata.js";

export { ExtensionNotOfferedError, ProtocolError, UNBOUNDED } from "./rsio-wire.js";
export { fixedSize, fromAsyncIterable, fromIterable } from "./rsio-publish.js";
export { RESUME_DEFAULTS } from "./rsio-resume.js";
export { ERROR_CODES, codeName } from "./rsio-codes.js";
export { MessageCreditError } from "./rsio-messages.js";
export { INPUT_WINDOW } from "./rsio-channels.js";
export { ContentTypeError, decoderForType, sameMediaType } from "./rsio-content.js";
export { NO_METADATA, SubscribeMetadata } from "./rsio-metadata.js";
export { ChannelInputError } from "./rsio-channels.js";
export { withContentType } from "./rsio-publish.js";

export const SUBPROTOCOL = "rsio.v0";

/**
 * The publisher ended a subscription with onError; `message` is the publisher's text, `code`
 * the number of its errorCode (§19: ERROR_CODES.UNKNOWN_PUBLISHER, ...; null without one) and
 * `codeName` that number's registry name ("UNKNOWN_PUBLISHER"; null for an unregistered code).
 */
export class RemoteStreamError extends Error {
  constructor(message, code = null) {
    super(message);
    this.name = "RemoteStreamError";
    this.code = code;
    this.codeName = code === null ? null : codeName(code);
  }
}

/**
 * The connection ended (goodbye, close, or a protocol error in `cause`) before the stream did.
 * `reason` is the peer's goodbye reason when it said goodbye, else null; `code` the number of
 * its goodbyeCode (§19), null without one.
 */
export class ConnectionClosedError extends Error {
  constructor(message, cause, reason = null, code = null) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = "ConnectionClosedError";
    this.reason = reason;
    this.code = code;
    this.codeName = code === null ? null : codeName(code);
  }
}

// how long close() waits for the answer to our goodbye (§9.1) before it aborts the transport,
// as rstreams' CLOSE_TIMEOUT (5 s); node.js's listen() closes all its connections at once
export const CLOSE_TIMEOUT_MS = 5000;
const DEFAULT_KEEPALIVE_S = 15; // as rstreams: ping after 15 s without receiving anything (§14.1)
const HIGH_WATER = 1024 * 1024; // bytes a WebSocket may buffer before publishing pauses (§6.3)
// the most bytes in one WebSocket message we send (§1: at most 256 KiB SHOULD, 1 MiB MUST): what
// a turn queued goes out as several, as rstreams' MAX_MESSAGE
const MAX_WS_MESSAGE = 256 * 1024;
const DRAIN_POLL_MS = 10; // a browser WebSocket has no drain event: look again this often
// Input backpressure (§6.3), as rstreams' net/_intake.py: see Connection._checkBacklog.
const REPLY_MARK = 256 * 1024; // unsent reply bytes past which the peer is no longer read (rstreams' low_water)
const MARK_SPACING = 4 * 1024; // writes closer than this share one ledger mark (ReplyLedger)
const MAX_UNSENT = 16 * 1024 * 1024; // unsent bytes past which the peer is said goodbye at once
const DEFAULT_HANDSHAKE_TIMEOUT_S = 10; // as rstreams' handshake_timeout: for the peer's hello
const DEFAULT_UNREAD_TIMEOUT_S = 30; // as rstreams' unread_timeout: replies left unread this long: goodbye
const { keepalive: KEEPALIVE, auth: AUTH, resume: RESUME, errorCodes: ERROR_CODES_EXTENSION, messages: MESSAGES,
  contentTypes: CONTENT_TYPES, metadata: METADATA, channels: CHANNELS, inputParts: INPUT_PARTS } = EXTENSIONS;
const DEFAULT_MESSAGES_IN_FLIGHT = 16; // as rstreams' max_messages_in_flight (§20.3)

/** Which hello each endpoint sends (§4.1); the rest of the protocol is symmetric (§1). */
const ROLES = Object.freeze({
  client: Object.freeze({ self: "client", peer: "server", hello: "clientHello", peerHello: "serverHello" }),
  server: Object.freeze({ self: "server", peer: "client", hello: "serverHello", peerHello: "clientHello" }),
});

const SYSTEM_CLOCK = Object.freeze({
  now: () => Date.now(),
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, ms);
    timer?.unref?.(); // Node: a timer alone does not keep the process running
    return timer;
  },
  clearTimeout: (timer) => clearTimeout(timer),
});

/** Open a connection over a WebSocket (ws://, wss://); resolves once it is open and our hello sent. */
export function connect(url, options = {}) {
  const scheme = String(url).split(":", 1)[0].toLowerCase();
  if (scheme !== "ws" && scheme !== "wss") {
    return Promise.reject(new TypeError(`this client opens ws:// and wss:// URLs, not ${scheme}://; `
      + "under Node the package's node entry also opens tcp://, tls:// and unix://"));
  }
  try {
    parseUrl(url); // PROTOCOL.md §1.1, as rstreams' parse_url reads it: a user or a fragment is refused
  } catch (error) {
    return Promise.reject(error);
  }
  const WS = options.WebSocket ?? globalThis.WebSocket;
  if (WS === undefined) {
    return Promise.reject(new TypeError("no WebSocket here: pass options.WebSocket, or under Node 20 import the "
      + "package's node entry (it brings one)"));
  }
  return openWebSocket(url, WS, options);
}

/** connect() with a given WebSocket class (browsers', Node 22's, or the `ws` package's). */
export function openWebSocket(url, WS, options = {}) {
  return connectTransport(() => webSocket(url, WS, options), options);
}

/**
 * A Connection over the transport `open()` resolves with; with `options.resume`, `open()` is
 * called again for each attempt to resume the session (§16).
 */
export async function connectTransport(open, options = {}) {
  // the serverHello is awaited for handshakeTimeout seconds (null: for good); a resume is no
  // handshake: its attempts have their own bound (§16)
  const connectionOptions = options.handshakeTimeout === undefined
    ? { ...options, handshakeTimeout: DEFAULT_HANDSHAKE_TIMEOUT_S } : options;
  Connection._checkOptions(connectionOptions); // before opening anything
  const resume = options.resume ? resumeOptions(options.resume) : null;
  const first = await open();
  const transport = resume === null ? first
    : new ResumableSession(first, open, resume, options.clock ?? SYSTEM_CLOCK);
  return new Connection(transport, connectionOptions);
}

function webSocket(url, WS, { clock, tls, handshakeTimeout = DEFAULT_HANDSHAKE_TIMEOUT_S, _tcpUnder = (s) => s }) {
  let ws;
  try {
    ws = tls === undefined ? new WS(url, SUBPROTOCOL) : new WS(url, SUBPROTOCOL, tls); // tls: Node's `ws` only
  } catch (error) {
    return Promise.reject(error);
  }
  ws.binaryType = "arraybuffer";
  return new Promise((resolve, reject) => {
    // a server that accepts the socket and never answers the opening handshake: given up after
    // handshakeTimeout (then the serverHello has as long again), as Python's client gives up
    const opening = openingBound(clock, handshakeTimeout, () => {
      reject(new ConnectionClosedError(`cannot open a WebSocket to ${url}: no answer to the opening handshake `
        + `within ${pythonG(handshakeTimeout)} s (handshakeTimeout)`));
      if (typeof ws.terminate === "function") ws.terminate();
      else ws.close();
    });
    // the `ws` package shows the socket under the WebSocket in its upgrade (browsers do not);
    // under a wss:// one, node.js's connect() knows the TCP socket
    let socket = null;
    ws.on?.("upgrade", (response) => { socket = response.socket ? _tcpUnder(response.socket) : null; });
    ws.onopen = () => {
      opening.done();
      resolve(webSocketTransport(ws, clock, socket));
    };
    // the `ws` package says why ("Unexpected server response: 404": no RS.io at that path); browsers do not
    ws.onerror = (event) => {
      opening.done();
      reject(new ConnectionClosedError(`cannot open a WebSocket to ${url}${event?.message ? `: ${event.message}` : ""}`));
    };
    ws.onclose = (event) => {
      opening.done();
      reject(new ConnectionClosedError(`the WebSocket to ${url} closed during the handshake (code ${event.code})`));
    };
  });
}

/**
 * A transport's opening (a WebSocket's handshake) bounded by `seconds` (null: not bounded):
 * `expired()` runs when they pass first; `done()` once it has settled.
 */
function openingBound(clock, seconds, expired) {
  const timers = clock ?? SYSTEM_CLOCK;
  const timer = seconds === null ? null : timers.setTimeout(expired, seconds * 1000);
  return { done: () => { if (timer !== null) timers.clearTimeout(timer); } };
}

/**
 * Events of a transport held until its Connection is there: `deliver("onbytes", data)` and
 * `deliver("onend")` call the transport's handler once `transport.start()` was called, and
 * queue until then (a WebSocket can deliver the server's first bytes in the same turn as its
 * open event, before the Connection is made).
 */
export function holdUntilStarted(transport) {
  let started = false;
  const early = [];
  transport.start = () => {
    if (started) return;
    started = true;
    for (const [kind, value] of early.splice(0)) transport[kind]?.(value);
  };
  return (kind, value) => {
    if (started) transport[kind]?.(value);
    else early.push([kind, value]);
  };
}

// the lingering close of a WebSocket (§9.1, §10: it cannot half-close): after our close, how
// long the peer has to answer it, and how much of its input is discarded meanwhile, before the
// socket is ended (the `ws` package's terminate(); a browser's WebSocket keeps its own bounds),
// as node.js's sockets and rstreams' LINGER_SECONDS and LINGER_BYTES; the `ws` package itself
// would wait 30 s
const WS_LINGER_MS = 2000;
const WS_LINGER_BYTES = 4 * 1024 * 1024;

/**
 * An open WebSocket as a Connection's transport. `socket`: the TCP socket under it where there
 * is one to see (Node's `ws` package: the upgrade's), which is reset instead when the WebSocket
 * is ended with output unsent (§9.1), as node.js's sockets are.
 */
export function webSocketTransport(ws, clock = SYSTEM_CLOCK, socket = null) {
  let polling = null;
  let discarded = null; // bytes read after close(): null until then
  const written = new ReplyLedger(); // the bytes handed to the socket, the `ws` package's pongs as replies
  let paused = false; // by the Connection (pauseReading())
  let pongsWaiting = false; // reading stopped until the pongs unsent drain
  const sendMessage = (message) => {
    written.wrote(wsFrameBytes(message.byteLength), 0);
    ws.send(message);
  };
  const terminate = () => {
    if (typeof ws.terminate !== "function") return;
    if (socket !== null && ws.bufferedAmount > 0 && !socket.destroyed) {
      try {
        socket.resetAndDestroy(); // the WebSocket reads its socket's close as any other
      } catch {
        // not a TCP handle (a wss:// one not opened by node.js's connect(): TLS): ended below
      }
    }
    ws.terminate(); // (a socket reset is destroyed already; a TLS one over it is destroyed now)
  };
  const transport = {
    onbytes: null,
    onend: null,
    ondrain: null,
    send(bytes) {
      if (ws.readyState !== 1) return;
      if (bytes.byteLength <= MAX_WS_MESSAGE) {
        sendMessage(bytes);
        return;
      }
      for (let at = 0; at < bytes.byteLength; at += MAX_WS_MESSAGE) sendMessage(bytes.subarray(at, at + MAX_WS_MESSAGE));
    },
    close() {
      if (discarded !== null) return;
      discarded = 0;
      ws.close();
      if (typeof ws.terminate !== "function") return;
      const linger = clock.setTimeout(terminate, WS_LINGER_MS);
      ws.addEventListener?.("close", () => clock.clearTimeout(linger));
    },
    abort() {
      if (typeof ws.terminate === "function") terminate(); // the `ws` package's; a browser's has only close()
      else ws.close();
    },
    get writable() {
      return ws.bufferedAmount < HIGH_WATER;
    },
    get unsent() {
      return ws.bufferedAmount;
    },
    // the `ws` package's WebSocket (listen(), connect() under Node without a global one) can
    // stop reading; a browser's cannot, so there only unreadTimeout and MAX_UNSENT hold
    pauseReading() {
      paused = true;
      ws.pause?.();
    },
    resumeReading() {
      paused = false;
      if (ws.readyState === 1 && !pongsWaiting) ws.resume?.();
    },
    waitWritable() {
      if (polling !== null) return;
      const look = () => {
        if (ws.readyState !== 1) {
          polling = null;
        } else if (transport.writable) {
          polling = null;
          transport.ondrain?.();
        } else {
          polling = clock.setTimeout(look, DRAIN_POLL_MS);
        }
      };
      polling = clock.setTimeout(look, DRAIN_POLL_MS);
    },
  };
  const deliver = holdUntilStarted(transport);
  ws.binaryType = "arraybuffer";
  let failure = null; // what the WebSocket reported before it closed ("Max payload size exceeded")
  ws.onmessage = (event) => {
    if (discarded !== null) { // closing: discarded, up to WS_LINGER_BYTES
      if ((discarded += event.data?.byteLength ?? event.data?.length ?? 0) > WS_LINGER_BYTES) terminate();
      return;
    }
    if (typeof event.data === "string") refuseText(ws); // the Connection ends without a goodbye (§1)
    deliver("onbytes", event.data);
  };
  ws.onclose = (event) => {
    // how the WebSocket ended, for the error of an end without goodbye (§9.3): 1009 when the
    // `ws` package refused a message above its maxPayload (§1), 1006 when the link just broke
    transport.ending = `the WebSocket closed with status ${event?.code ?? "?"}${failure === null ? "" : ` (${failure})`}`;
    deliver("onend");
  };
  ws.onerror = (event) => { failure = event?.message || event?.error?.message || null; }; // a close event follows
  // the `ws` package answers the peer's WebSocket pings itself, whatever its socket holds: a
  // peer that pings and never reads would grow the pongs unsent without bound (§6.3). Pongs are
  // replies: past REPLY_MARK of them unsent the peer is not read until they drain below a
  // quarter of it, as the Connection does for its own; past MAX_UNSENT unsent the socket ends
  const drained = () => {
    if (ws.readyState !== 1) return;
    if (written.unsentReplies(ws.bufferedAmount) > REPLY_MARK / 4) {
      clock.setTimeout(drained, DRAIN_POLL_MS);
      return;
    }
    pongsWaiting = false;
    if (!paused) ws.resume();
  };
  ws.on?.("ping", (data) => {
    const pong = wsFrameBytes(data?.length ?? 0);
    written.wrote(pong, pong);
    if (ws.bufferedAmount > MAX_UNSENT) {
      failure = `more than ${MAX_UNSENT} bytes unsent to a peer that pings and does not read (MAX_UNSENT)`;
      terminate();
    } else if (!pongsWaiting && written.unsentReplies(ws.bufferedAmount) > REPLY_MARK) {
      pongsWaiting = true;
      ws.pause();
      clock.setTimeout(drained, DRAIN_POLL_MS);
    }
  });
  return transport;
}

/** The bytes of one WebSocket frame of `size` bytes of payload, as a client sends it (masked). */
function wsFrameBytes(size) {
  return size + (size < 126 ? 2 : size < 65536 ? 4 : 10) + 4;
}

/**
 * A text message is not RS.io bytes (§1): the WebSocket closes with status 1003 (unsupported
 * data) and no goodbye, as rstreams does. Browsers and Node's global WebSocket let a script
 * close only with 1000 or 3000-4999: there it closes with 1000.
 */
function refuseText(ws) {
  try {
    ws.close(1003, "RS.io uses binary messages");
  } catch {
    ws.close();
  }
}

export class Connection {
  #credentials; // authenticate's payload: a private field, so no log or inspection shows it (§15.5)

  /**
   * Made by connect(); `transport` as webSocketTransport() makes. `options`: {limits, keepalive
   * (seconds, null: never ping), auth (a token or {user, password}), publishers (names or
   * "{field}" patterns -> Publishers or factories (params, name) => Publisher), onclose,
   * onerror, clock}.
   */
  constructor(transport, options = {}) {
    this._transport = transport;
    this._role = ROLES[options.role ?? "client"];
    if (this._role === undefined) throw new TypeError(`role is "client" or "server", got ${options.role}`);
    if (this._role === ROLES.server && (options.auth != null || transport instanceof ResumableSession)) {
      throw new TypeError("an accepting endpoint presents no credentials and resumes no session of its own: "
        + "listen() offers auth with authenticate and resume with its own sessions");
    }
    this._limits = { ...DEFAULT_LIMITS, ...(options.limits ?? {}) };
    this._clock = options.clock ?? SYSTEM_CLOCK;
    this._subs = new Map(); // our ids -> Subscription
    this._held = []; // [Subscription, credentials] waiting for the serverHello (§15.4)
    this._parts = new Map(); // "sub:elementId" -> {sub, chunks, size}
    this._partBytes = 0;
    this._serving = new ServingTable(this, new Offer(options.publishers ?? {}),
      new Offer(options.channels ?? {}, "channels"), this._limits);
    this._out = [];
    this._flushQueued = false;
    this.state = "AWAITING_HELLO"; // §12: AWAITING_HELLO, OPEN, CLOSING, CLOSED
    this.closeReason = null; // why the connection ended (an Error), once it has
    this.bytesReceived = 0;
    this.elementsReceived = 0;
    this.extensions = new Set(); // active extension ids, once the serverHello is in (§4.4)
    this.authenticated = false;
    this.pingsSent = 0;
    this.pongsReceived = 0;
    this.#credentials = options.auth == null ? null : encodeCredentials(options.auth);
    this._session = transport.resumable === true ? transport : null; // a client's or listen()'s session (§16)
    this._gate = options.gate ?? null; // the accepting side of auth (node's listen(), §15)
    if (this._gate !== null && this._role !== ROLES.server) throw new TypeError("gate is for accepting endpoints");
    this._gate?.attach(this);
    this._refusal = null; // [reason, code]: said at the peer's hello (listen()'s maxConnections)
    const disabled = new Set(options.disabledExtensions ?? []); // to behave like a peer that predates them
    this._offered = [KEEPALIVE.id, ...(this.#credentials === null && this._gate === null ? [] : [AUTH.id]),
      ...(this._session === null ? [] : [RESUME.id]), CONTENT_TYPES.id, METADATA.id, ERROR_CODES_EXTENSION.id,
      MESSAGES.id, CHANNELS.id, INPUT_PARTS.id].filter((id) => !disabled.has(id) || id === AUTH.id || id === RESUME.id);
    this._offered.sort((a, b) => a - b);
    this._contentTypes = new ContentTypes(); // contentType qualifiers received (§17.1)
    this._qualifiers = new Qualifiers(); // error-codes received (§19.1)
    this._metadata = new MetadataQualifier(this._limits); // subscribeMetadata received (§18.1)
    this._channels = new Channels(this); // channels we open (§21)
    this._messages = new Messages(this, options.handlers, options.maxMessagesInFlight ?? DEFAULT_MESSAGES_IN_FLIGHT);
    this._keepaliveMs = options.keepalive === undefined ? DEFAULT_KEEPALIVE_S * 1000
      : options.keepalive === null ? null : options.keepalive * 1000;
    this._lastReceived = this._clock.now();
    this._pingTimer = null;
    this._closeTimer = null;
    // §14.2: listen()'s connections (default 60 s there), and a client's that asks for it, as
    // rstreams' connect(idle_timeout=...): a server that went away without closing (its pongs
    // stopped) then ends the client's streams instead of leaving them waiting; a resumable
    // client session replaces a silent transport after resume's stallTimeout instead
    if (options.idleTimeout != null && this._role !== ROLES.server && this._session !== null) {
      throw new TypeError("idleTimeout is for a client without resume: a resumable session replaces a silent "
        + "transport after resume.stallTimeout (PROTOCOL.md §14.2, §16.3)");
    }
    if (options.idleTimeout != null && !(options.idleTimeout > 0)) {
      throw new RangeError(`idleTimeout is a number of seconds > 0, got ${options.idleTimeout}`);
    }
    this._idleMs = options.idleTimeout == null ? null : options.idleTimeout * 1000;
    this._lastActive = this._clock.now(); // input read, or output the peer took (not our pings)
    this._wrote = false; // something other than a ping is in _out
    this._idleTimer = this._idleMs === null ? null : this._clock.setTimeout(() => this._idleCheck(), this._idleMs);
    // input backpressure (§6.3; _checkBacklog): on transports that tell their unsent bytes
    if (options.unreadTimeout != null && !(typeof options.unreadTimeout === "number" && options.unreadTimeout > 0)) {
      throw new RangeError(`unreadTimeout is a number of seconds > 0 (null: no limit), got ${options.unreadTimeout}`);
    }
    this._unreadS = options.unreadTimeout === undefined ? DEFAULT_UNREAD_TIMEOUT_S : options.unreadTimeout;
    this._ledger = new ReplyLedger();
    this._outReplies = 0; // reply bytes in _out
    this._outBytes = 0; // bytes in _out: handed to the transport at the end of this turn
    this._peakUnsent = 0; // the most bytes unsent at once, as _checkBacklog saw them (for tests)
    this._backedUp = false; // our replies back up: the peer is not read
    this._unreadTimer = null;
    this._repliesTimer = null;
    this._quitting = false;
    // the handshake timeout: the peer's hello within handshakeTimeout seconds of the transport;
    // on the accepting side, then (auth, §15.3) the authenticate settled within as many of the hello
    if (options.handshakeTimeout != null && !(options.handshakeTimeout > 0)) {
      throw new RangeError(`handshakeTimeout is a number of seconds > 0, got ${options.handshakeTimeout}`);
    }
    this._handshakeS = options.handshakeTimeout ?? null;
    this._handshakeTimer = this._handshakeS === null ? null
      : this._clock.setTimeout(() => this._handshakeExpired(), this._handshakeS * 1000);
    this.onclose = options.onclose ?? null;
    this.onerror = options.onerror ?? ((error) => console.error("rsio:", error));
    this._decoder = new FrameDecoder((id) => this._subs.get(id)?.elementSize ?? 0, this._limits);
    this.closed = new Promise((resolve) => { this._resolveClosed = resolve; });
    this.ready = new Promise((resolve, reject) => { this._ready = { resolve, reject }; });
    this.ready.catch(() => {}); // `ready` is there to be awaited, not a must
    transport.onbytes = (data) => this._receive(data);
    transport.onend = (error) => this._transportClosed(error);
    transport.ondrain = () => {
      this._serving.pullAll();
      this._channels.writable();
    };
    this._send({ type: this._role.hello, version: VERSION, extensions: this._offered });
    transport.start?.(); // input that arrived before this Connection existed
  }

  /**
   * Throw what `new Connection(transport, options)` would throw for `options` (a RangeError or
   * TypeError naming the option), without a transport: connect() checks before it opens one,
   * listen() before it accepts one (a throw in its accept would end the process).
   */
  static _checkOptions(options) {
    const nowhere = { send() {}, close() {}, writable: true, resumable: Boolean(options.resume) };
    new Connection(nowhere, { ...options, gate: null, onerror: () => {} })._abandon();
  }

  /**
   * Subscribe `subscriber` ({onSubscribe, onNext, onError, onComplete}) to the publisher `name`.
   * `options.auth`: credentials for this subscription only (§15.4), on a connection that
   * authenticates itself; such a subscribe waits for the serverHello (extension messages are
   * never optimistic, §4.4).
   */
  subscribe(name, subscriber, options = {}) {
    if (typeof name !== "string") {
      throw new TypeError(`publisher names are strings such as "sensors/temp?from=100", got ${typeof name}`);
    }
    if (subscriber === null || typeof subscriber !== "object") {
      throw new TypeError(`rule 1.9: subscribe needs a subscriber object, got ${subscriber}`);
    }
    let credentials = null;
    if (options.auth != null) {
      if (this.#credentials === null) {
        throw new TypeError("per-subscription credentials need a connection that authenticates itself: "
          + "connect(url, {auth}) (a client lists extension auth only when it presents credentials, PROTOCOL.md §15.2)");
      }
      credentials = encodeCredentials(options.auth);
    }
    const metadata = options.metadata == null ? null : checkMetadata(options.metadata);
    const input = options._input ?? null; // a channel's input Publisher (channel(), §21)
    let id = 1;
    while (this._subs.has(id)) id++; // §5.3: reuse small ids
    const sub = new Subscription(this, id, name, subscriber);
    try {
      subscriber.onSubscribe?.(sub);
    } catch (error) {
      this._report(error);
      sub.state = "CLOSED";
      return sub;
    }
    if (this.state === "CLOSING" || this.state === "CLOSED") {
      sub.state = "CLOSED";
      sub._finish((s) => s.onError?.(this._closedError()));
      return sub;
    }
    if (sub.state === "CANCELLED") { // cancelled inside onSubscribe: nothing to send
      sub.state = "CLOSED";
      return sub;
    }
    this._subs.set(id, sub);
    if (credentials === null && metadata === null && input === null) this._sendSubscribe(sub, null);
    else if (this.state === "OPEN") this._sendSubscribe(sub, credentials, metadata, input);
    else this._held.push([sub, credentials, metadata, input]); // until the serverHello (§15.4, §18.1, §21.1)
    return sub;
  }

  _sendSubscribe(sub, credentials, metadata = null, input = null) {
    if (input !== null) { // the channel mark, then the subscribe it qualifies (§21.3)
      const refused = this._channels.open(sub, input);
      if (refused !== null) {
        this._subs.delete(sub.id);
        sub.state = "CLOSED";
        sub._finish((s) => s.onError?.(refused));
        return;
      }
    }
    if (credentials !== null) {
      this._sendExtension(AUTH.types.subscribeCredentials, concat([encodeVarint(sub.id), credentials]));
    }
    if (metadata !== null && this.extensions.has(METADATA.id)) { // adjacent to its subscribe (§18.1)
      this._sendExtension(METADATA.types.subscribeMetadata, encodeMetadata(sub.id, metadata));
    }
    sub._sent = true;
    this._send({ type: "subscribe", publisher: sub.name, subscriber: sub.id, initial_demand: sub.outstanding });
  }

  /** The serverHello is in: send the subscribes that carry their own credentials (§15.4). */
  _releaseHeld() {
    const held = this._held;
    this._held = [];
    for (const [sub, credentials, metadata, input] of held) {
      if (sub.state === "CANCELLED") { // cancelled while held: it never existed for the server
        this._subs.delete(sub.id);
        sub.state = "CLOSED";
        sub._finish(() => {});
      } else if (sub.state !== "CLOSED") {
        this._sendSubscribe(sub, credentials, metadata, input);
      }
    }
  }

  /**
   * An async iterable of `name`'s elements whose demand follows consumption: at most `window`
   * elements are requested and not yet consumed; more are asked for (in batches of half the
   * window) as the loop takes them. Leaving the loop cancels. `decode`: "bytes" (Uint8Array),
   * "text", "json", or a function of the bytes.
   */
  stream(name, { window = 16, decode = "bytes", metadata = null } = {}) {
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`window must be an integer >= 1, got ${window}`);
    const conn = this;
    const convert = decode === "auto" ? (bytes) => bytes : decoderFor(decode);
    return {
      [Symbol.asyncIterator]() {
        const iterator = new DemandIterator(window, convert, decode);
        iterator.subscription = conn.subscribe(name, iterator, { metadata });
        return iterator;
      },
    };
  }

  /**
   * Request/response: subscribe with demand 1 and resolve with the one element (decoded as in
   * stream()); the subscription is cancelled after it. Rejects with RemoteStreamError if the
   * publisher fails, RangeError if it completes without an element.
   */
  async request(name, { decode = "bytes", metadata = null } = {}) {
    for await (const element of this.stream(name, { window: 1, decode, metadata })) return element;
    throw new RangeError(`publisher '${name}' completed without an element`);
  }

  /**
   * Open a channel on the peer's channel `name` (extension channels, §21): `input` (a Publisher,
   * an async iterable or an iterable of Uint8Array or string elements) streams to the peer's
   * channel, which answers with the output. Returns the output like publisher() and stream()
   * do: a Publisher (each subscribe opens a channel and subscribes to `input` once) that is
   * also an async iterable ({window, decode} as in stream()). The input is sent only within
   * the input demand the peer grants; the peer's inputCancel cancels it; the output's end or
   * cancel cancels it too; its onComplete/onError reach the peer. A peer without the
   * extension: the output fails with an error saying so (§21.1).
   */
  channel(name, input, { window = 16, decode = "bytes", metadata = null, auth = null } = {}) {
    if (typeof name !== "string") {
      throw new TypeError(`channel names are strings such as "upper?lang=en", got ${typeof name}`);
    }
    if (!Number.isInteger(window) || window < 1) throw new RangeError(`window must be an integer >= 1, got ${window}`);
    const source = inputPublisher(input);
    const options = { metadata, auth, _input: source };
    const conn = this;
    const convert = decode === "auto" ? (bytes) => bytes : decoderFor(decode);
    return {
      subscribe: (subscriber) => { this.subscribe(name, subscriber, options); },
      [Symbol.asyncIterator]() {
        const iterator = new DemandIterator(window, convert, decode);
        iterator.subscription = conn.subscribe(name, iterator, options);
        return iterator;
      },
    };
  }

  /**
   * Send a one-way message to the peer's handler `name` (extension messages, §20): `payload` a
   * string (sent as UTF-8), Uint8Array or ArrayBuffer. Resolves once it is written, which takes
   * one message credit; out of credit it waits for the peer to grant more, in line with other
   * sends, or with {wait: false} rejects at once with MessageCreditError. Rejects if the peer
   * does not offer the extension or the connection is closed. Nothing comes back about it.
   */
  send(name, payload, options = {}) {
    return this._messages.send(name, payload, options);
  }

  /** Message credit the peer has granted and we have not used (§20.3). */
  get messageCredit() {
    return this._messages.credit;
  }

  /**
   * Refuse the peer at its hello (listen() over maxConnections, PROTOCOL.md §10): goodbye `reason`
   * with `code` as soon as the hello is read, nothing after it handled. Called before any input.
   */
  _refuseAtHello(reason, code) {
    this._refusal = [reason, code];
  }

  /**
   * Say goodbye (§9.1); resolves when the transport has closed. Before the peer's hello there is
   * no answer to wait for (the peer may not speak RS.io): the transport is closed at once. A
   * peer that has not answered within CLOSE_TIMEOUT_MS (5 s) has its transport aborted.
   */
  close(reason = "") {
    if (this.state === "AWAITING_HELLO" || this.state === "OPEN") {
      const answered = this.state === "OPEN";
      this._send({ type: "goodbye", reason, errorCode: ERROR_CODES.NORMAL });
      this.state = "CLOSING";
      const closing = new ConnectionClosedError(`connection closed by this endpoint: ${reason || "goodbye"}`);
      this._failAll(closing);
      this._messages.close(closing);
      if (answered) {
        this._closeTimer = this._clock.setTimeout(() => this._abort(), CLOSE_TIMEOUT_MS);
      } else {
        this._flush();
        this._transport.close();
      }
    }
    return this.closed;
  }

  /**
   * The remote publisher `name` as a Publisher: each subscribe(subscriber) is
   * conn.subscribe(name, subscriber, options). For relaying, or for operators written against
   * the Publisher interface.
   */
  publisher(name, options = {}) {
    if (typeof name !== "string") {
      throw new TypeError(`publisher names are strings such as "sensors/temp?from=100", got ${typeof name}`);
    }
    return { subscribe: (subscriber) => { this.subscribe(name, subscriber, options); } };
  }

  /** Subscriptions this endpoint has open (each with name, state, outstanding, received). */
  get subscriptions() {
    return [...this._subs.values()];
  }

  /** The peer's subscriptions on this endpoint's publishers (id, name, wanted, sent). */
  get served() {
    return [...this._serving.streams.values()];
  }

  /** How often the session moved to a new transport (resume, §16); 0 without it. */
  get resumes() {
    return this._session?.resumes ?? 0;
  }

  /** Whether the transport takes more writes now (publishing pauses when it does not). */
  get writable() {
    return this._transport.writable !== false && this.state === "OPEN";
  }

  // -- sending ----------------------------------------------------------------------------------
  /** Queue `frame`; `elementSize`: a served stream's, for its onNext (§7). */
  _send(frame, elementSize = 0) {
    if (this.state === "CLOSED" || (this.state === "CLOSING" && frame.type !== "goodbye")) return;
    if (frame.errorCode != null && this.extensions.has(ERROR_CODES_EXTENSION.id)) { // adjacent (§19.1)
      this._outPush(encodeFrame(Qualifiers.qualify(frame, frame.errorCode)));
    } else if (frame.contentType != null && this.extensions.has(CONTENT_TYPES.id)) { // adjacent (§17.1)
      this._outPush(encodeFrame(contentTypeFrame(frame.subscriber, frame.contentType)));
    }
    const encoded = encodeFrame(frame, elementSize);
    this._outPush(encoded);
    if (ELEMENT_FRAMES.has(frame.type) || (frame.type === "extension" && ELEMENT_EXTENSIONS.has(frame.code))) {
      this._outReplies -= encoded.length; // _flush counts the rest of what it writes as replies
    }
    if (frame.type !== "extension" || frame.code !== KEEPALIVE.types.ping) this._wrote = true;
    if (!this._flushQueued) {
      this._flushQueued = true;
      queueMicrotask(() => this._flush());
    }
  }

  _outPush(bytes) {
    this._out.push(bytes);
    this._outBytes += bytes.length;
  }

  _sendExtension(code, payload) {
    this._send({ type: "extension", code, payload });
  }

  _flush() {
    this._flushQueued = false;
    if (this._out.length === 0) return;
    const data = concat(this._out);
    this._out = [];
    this._outBytes = 0;
    if (this._wrote && this._transport.writable !== false) this._lastActive = this._clock.now(); // §14.2
    this._wrote = false;
    this._transport.send(data);
    this._ledger.wrote(data.length, data.length + this._outReplies);
    this._outReplies = 0;
    this._checkBacklog();
  }

  // -- input backpressure (§6.3) ----------------------------------------------------------------
  // What we write in answer to the peer (refusals, errors, acknowledgements, pongs, goodbyes)
  // waits in the transport until the peer reads it; elements are bounded already (served
  // streams produce only while the transport is writable). Once the *replies* among the unsent
  // bytes pass REPLY_MARK, we stop reading the peer, so it cannot make us answer more; below a
  // quarter of the mark we read again. Counting replies, not all unsent bytes, keeps two
  // endpoints streaming to each other from both waiting for the other to read. Replies left
  // unread for unreadTimeout, or unsent bytes past MAX_UNSENT: goodbye. Only transports that
  // tell their `unsent` bytes take part (pauseReading()/resumeReading() where they can).

  /** After a write: stop reading the peer if the unsent replies pass the mark. */
  _checkBacklog() {
    const unsent = this._transport.unsent;
    if (unsent === undefined || this._backedUp || this._quitting) return;
    if (this.state !== "OPEN" && this.state !== "AWAITING_HELLO") return;
    if (unsent > this._peakUnsent) this._peakUnsent = unsent;
    if (unsent > MAX_UNSENT) {
      this._quit(`peer not reading: more than ${MAX_UNSENT} bytes unsent to it (MAX_UNSENT)`, undefined,
        ERROR_CODES.LIMIT_EXCEEDED);
      return;
    }
    if (!this._ledger.mayPassMark || this._ledger.unsentReplies(unsent) <= REPLY_MARK) return;
    this._backedUp = true;
    this._transport.pauseReading?.();
    if (this._unreadS !== null) {
      this._unreadTimer = this._clock.setTimeout(() => this._unreadExpired(), this._unreadS * 1000);
    }
    this._repliesTimer = this._clock.setTimeout(() => this._repliesCheck(), DRAIN_POLL_MS);
  }

  /** While backed up, every DRAIN_POLL_MS: read again once the unsent replies are below a quarter of the mark. */
  _repliesCheck() {
    this._repliesTimer = null;
    if (!this._backedUp) return;
    if (this._ledger.unsentReplies(this._transport.unsent) > REPLY_MARK / 4) {
      this._repliesTimer = this._clock.setTimeout(() => this._repliesCheck(), DRAIN_POLL_MS);
      return;
    }
    this._readAgain();
  }

  _readAgain() {
    if (!this._backedUp) return;
    this._backedUp = false;
    this._clock.clearTimeout(this._unreadTimer);
    this._clock.clearTimeout(this._repliesTimer);
    this._unreadTimer = null;
    this._repliesTimer = null;
    this._transport.resumeReading?.();
  }

  _unreadExpired() {
    this._unreadTimer = null;
    if (!this._backedUp) return;
    this._quit(`peer not reading: replies left unread for ${pythonG(this._unreadS)} s (unreadTimeout)`, undefined,
      ERROR_CODES.LIMIT_EXCEEDED);
  }

  /** §14.2: nothing read and nothing taken by the peer for idleTimeout: goodbye. */
  _idleCheck() {
    this._idleTimer = null;
    if (this.state !== "OPEN" && this.state !== "AWAITING_HELLO") return;
    const quiet = this._clock.now() - Math.max(this._lastActive, this._lastReceived);
    if (quiet < this._idleMs) {
      this._idleTimer = this._clock.setTimeout(() => this._idleCheck(), this._idleMs - quiet);
      return;
    }
    if (this._session?.dropLink?.()) { // a resumable session: the link goes, the session waits (§16.3)
      this._lastActive = this._clock.now();
      this._idleTimer = this._clock.setTimeout(() => this._idleCheck(), this._idleMs);
      return;
    }
    this._quit(`idle timeout: nothing received for ${pythonG(this._idleMs / 1000)} s (PROTOCOL.md §14.2)`, undefined,
      ERROR_CODES.TIMEOUT);
  }

  /** The handshake timeout: no peer's hello yet, or its authenticate not settled (§15.3): goodbye. */
  _handshakeExpired() {
    this._handshakeTimer = null;
    if (this.state === "AWAITING_HELLO") {
      const reason = `handshake timeout (no ${this._role.peerHello} within ${pythonG(this._handshakeS)} s)`;
      const error = this._role === ROLES.client
        ? new ConnectionClosedError(`${reason}: the server did not say hello (handshakeTimeout)`) : undefined;
      this._quit(reason, error, ERROR_CODES.TIMEOUT);
    } else if (this.state === "OPEN" && this._gate?.pending) {
      this._quit(`authentication timeout (not settled within ${pythonG(this._handshakeS)} s of the hello) (PROTOCOL.md §15.3)`,
        undefined, ERROR_CODES.TIMEOUT);
    }
  }

  _waitWritable() {
    this._transport.waitWritable?.();
  }

  // -- receiving --------------------------------------------------------------------------------
  _receive(data) {
    if (this.state === "CLOSED") return;
    if (typeof data === "string") { // no goodbye: the WebSocket closes with 1003 (webSocketTransport, §1)
      this._end(new ProtocolError("the peer sent a text WebSocket message; RS.io uses binary messages", "§1"));
      this._transport.close();
      return;
    }
    this.bytesReceived += data.byteLength;
    this._lastReceived = this._clock.now();
    this._decoder.push(data);
    try {
      for (let frame = this._decoder.next(); frame !== null && this.state !== "CLOSED"; frame = this._decoder.next()) {
        this._handle(frame);
      }
    } catch (error) {
      if (!(error instanceof ProtocolError)) throw error;
      this._violation(error);
    }
  }

  _handle(frame) {
    if (this.state === "AWAITING_HELLO") {
      if (frame.type === this._role.peerHello) {
        this._hello(frame);
        return;
      }
      if (frame.type !== "goodbye") {
        throw new ProtocolError(`the first message must be ${className(this._role.peerHello)}, got ${className(frame.type)}`,
          "§4.1");
      }
    }
    if (this.state === "CLOSING" && frame.type !== "goodbye" && !Qualifiers.is(frame)) return; // §9.1, §19.1
    frame.qualifier = this._qualifiers.check(frame); // the code of an errorCode/goodbyeCode just before
    frame.contentType = this._contentTypes.check(frame); // the type of a contentType just before
    this._metadata.follows(frame); // a subscribeMetadata just before: for this subscribe (§18.1)
    const handler = HANDLERS[frame.type];
    if (handler === undefined) throw new ProtocolError(`unexpected ${frame.type} from the ${this._role.peer}`, "§4.1");
    handler(this, frame);
  }

  _hello(frame) {
    if (frame.version !== VERSION) {
      throw new ProtocolError(`unsupported protocol version ${frame.version}; this endpoint speaks version 0`, "§4.2");
    }
    this.state = "OPEN";
    this._clock.clearTimeout(this._handshakeTimer);
    this._handshakeTimer = null;
    for (const id of frame.extensions) if (this._offered.includes(id)) this.extensions.add(id);
    if (this._refusal !== null) { // the goodbye carries its code if error-codes is now active (§19.1)
      this._session?.settle(false, () => false); // no session to resume: no resumeToken goes out
      this._quit(this._refusal[0], undefined, this._refusal[1]);
      return;
    }
    this._messages.hello(this.extensions.has(MESSAGES.id)); // not offered: never active (§20.1)
    this._session?.settle(this.extensions.has(RESUME.id), () => this.state === "OPEN");
    const refusal = this._gate?.hello(this.extensions.has(AUTH.id)) ?? null;
    if (refusal !== null) {
      this._quit(refusal, undefined, ERROR_CODES.UNAUTHENTICATED);
      return;
    }
    if (this._gate?.pending && this._handshakeS !== null) { // counted again from the hello (§15.3)
      this._handshakeTimer = this._clock.setTimeout(() => this._handshakeExpired(), this._handshakeS * 1000);
    }
    if (this.#credentials !== null) {
      if (!this.extensions.has(AUTH.id)) {
        this._quit("authentication not possible: the server does not offer extension auth (id 2) "
          + "(PROTOCOL.md §15.2)");
        return;
      }
      this._sendExtension(AUTH.types.authenticate, this.#credentials); // settled by `authenticated`
      this._releaseHeld();
    } else {
      this._releaseHeld(); // subscribes with metadata waited for the hello (§18.1)
      this._ready.resolve(this);
    }
    if (this.extensions.has(KEEPALIVE.id) && this._keepaliveMs !== null) this._armPing(this._keepaliveMs);
  }

  _anotherHello(frame) {
    throw new ProtocolError(`unexpected ${className(frame.type)}: the handshake is over or it is ours`, "§4.1");
  }

  _open(frame) {
    const sub = this._subs.get(frame.subscriber);
    if (sub === undefined || !sub._sent) {
      throw new ProtocolError(`${signalOf(frame.type)} for unknown subscriber id ${frame.subscriber}`, "§5.2");
    }
    return sub;
  }

  _element(sub, frame, count) {
    if (sub.state === "CANCELLED") return false; // in flight when we cancelled (§5.2)
    if (sub.state !== "ACTIVE") {
      throw new ProtocolError(`${signalOf(frame.type)} for subscriber ${sub.id} in state ${sub.state}`, "§5.2");
    }
    if (sub.outstanding !== UNBOUNDED && BigInt(count) > sub.outstanding) {
      throw new ProtocolError(
        `${count} element(s) for subscriber ${sub.id} exceed the outstanding demand of ${sub.outstanding}`, "§6.3");
    }
    return true;
  }

  _part(frame, last) {
    const sub = this._open(frame);
    const key = `${sub.id}:${frame.element_id}`;
    let partial = this._parts.get(key);
    if (partial === undefined) {
      if (!this._element(sub, frame, 1)) return;
      if (last) { // a complete element in one part
        this._checkSize(sub, frame.data.length);
        sub._deliver(frame.data.slice());
        return;
      }
      if (this._parts.size + this._channels.partials >= this._limits.maxPartsInFlight) { // with split inputs (§21.6)
        throw new ProtocolError(`more than max_parts_in_flight=${this._limits.maxPartsInFlight} split elements at once`, "§11");
      }
      if (sub.outstanding !== UNBOUNDED) sub.outstanding -= 1n; // the first part takes the demand (§8)
      partial = { sub: sub.id, chunks: [], size: 0 };
      this._parts.set(key, partial);
    }
    // checked in rstreams' order: the element's size (this subscription), then the connection's bytes
    if (partial.size + frame.data.length > this._limits.maxElementSize) {
      this._dropParts(sub.id);
      sub.cancel();
      sub._finish((s) => s.onError?.(new RangeError(
        `a split element of subscriber ${sub.id} is above max_element_size ${this._limits.maxElementSize} (PROTOCOL.md §8)`)));
      return;
    }
    if (this._partBytes + frame.data.length > this._limits.maxReassemblyBytes) {
      throw new ProtocolError(`split elements in flight exceed max_reassembly_bytes=${this._limits.maxReassemblyBytes}`, "§11");
    }
    partial.chunks.push(frame.data.slice());
    partial.size += frame.data.length;
    this._partBytes += frame.data.length;
    if (last) {
      this._parts.delete(key);
      this._partBytes -= partial.size;
      this._checkSize(sub, partial.size);
      sub._deliver(concat(partial.chunks), true);
    }
  }

  _checkSize(sub, size) {
    if (sub.elementSize && size !== sub.elementSize) {
      throw new ProtocolError(
        `joined element of ${size} bytes for subscriber ${sub.id}, whose elementSize is ${sub.elementSize}`, "§7");
    }
  }

  _dropParts(id) {
    for (const [key, partial] of this._parts) {
      if (partial.sub === id) {
        this._parts.delete(key);
        this._partBytes -= partial.size;
      }
    }
  }

  _terminal(frame) {
    const sub = this._open(frame);
    if (frame.type === "onComplete" && sub.state !== "CANCELLED") {
      const unfinished = [...this._parts.values()].filter((partial) => partial.sub === sub.id).length;
      if (unfinished > 0) {
        throw new ProtocolError(`onComplete for subscriber ${sub.id} with ${unfinished} unfinished split element(s)`, "§8");
      }
    }
    this._dropParts(sub.id);
    this._subs.delete(sub.id); // §5.3: the id is free again
    sub._input?.end(); // a channel's input ends with its output (§21.5)
    const cancelled = sub.state === "CANCELLED";
    sub.state = "CLOSED";
    if (cancelled) return sub._finish(() => {}); // the acknowledgement (§5.4)
    if (frame.type === "onComplete") sub._finish((s) => s.onComplete?.());
    else sub._finish((s) => s.onError?.(new RemoteStreamError(frame.error, frame.qualifier)));
  }

  // -- extensions (§4.4, §14, §15) --------------------------------------------------------------
  _extension(frame) {
    const code = `0x${frame.code.toString(16)}`;
    const owner = extensionOf(frame.code); // (one no extension owns is refused by the decoder)
    if (!this.extensions.has(owner.id)) {
      throw new ProtocolError(`message type ${code} belongs to extension ${extensionName(owner)}, `
        + "which is not active on this connection", "§4.4");
    }
    if (owner.reserved.includes(frame.code)) {
      throw new ProtocolError(`message type ${code} is reserved by extension ${extensionName(owner)}`, "§4.4");
    }
    if (owner.id === KEEPALIVE.id) this._keepalive(frame, code);
    else if (owner.id === AUTH.id && this._gate !== null) this._gate.message(frame.code, frame.payload);
    else if (owner.id === AUTH.id) this._auth(frame, code);
    else if (owner.id === ERROR_CODES_EXTENSION.id) this._qualifiers.take(frame.code, frame.payload);
    else if (owner.id === MESSAGES.id) this._messages.received(frame.code, frame.payload);
    else if (owner.id === CHANNELS.id || owner.id === INPUT_PARTS.id) this._channels.received(frame.code, frame.payload);
    else if (owner.id === CONTENT_TYPES.id) this._contentTypes.take(frame.payload);
    else if (owner.id === METADATA.id) this._metadata.take(frame.payload);
    else this._session.message(frame.code, frame.payload); // resume is active only with a session
  }

  _keepalive(frame, code) {
    if (frame.payload.length !== 8) {
      throw new ProtocolError(`keepalive ${frame.code === KEEPALIVE.types.ping ? "ping" : "pong"} payload must be 8 bytes, `
        + `got ${frame.payload.length}`, "§14.1");
    }
    if (frame.code === KEEPALIVE.types.ping) this._sendExtension(KEEPALIVE.types.pong, frame.payload.slice());
    else this.pongsReceived += 1;
  }

  _auth(frame, code) {
    const { authenticated } = AUTH.types;
    if (frame.code !== authenticated) {
      throw new ProtocolError(`message type ${code}, which only a client sends, received by the client`, "§15.5");
    }
    if (this.authenticated) throw new ProtocolError("a second authenticated (0x85)", "§15.5");
    if (frame.payload.length !== 0) {
      throw new ProtocolError(`authenticated (0x85) with a ${frame.payload.length}-byte payload; it is empty`, "§15.5");
    }
    this.authenticated = true;
    this._ready.resolve(this);
  }

  _armPing(ms) {
    this._pingTimer = this._clock.setTimeout(() => this._pingCheck(), ms);
  }

  /** Ping when nothing arrived for the keepalive interval; at most one ping per interval (§14.1). */
  _pingCheck() {
    if (this.state !== "OPEN") return;
    const wait = this._keepaliveMs - (this._clock.now() - this._lastReceived);
    if (wait > 0) {
      this._armPing(wait);
      return;
    }
    const payload = new Uint8Array(8);
    crypto.getRandomValues(payload);
    this._sendExtension(KEEPALIVE.types.ping, payload);
    this.pingsSent += 1;
    this._armPing(this._keepaliveMs);
  }

  // -- ending -----------------------------------------------------------------------------------
  _violation(error) {
    this._quit(error.message, error,
      error.section === "§11" ? ERROR_CODES.LIMIT_EXCEEDED : ERROR_CODES.PROTOCOL_VIOLATION);
  }

  /** Goodbye with `reason` (and `code`, §19), and end at once: every subscription fails with `error`. */
  _quit(reason, error = new ConnectionClosedError(reason), code = null) {
    if (this.state === "CLOSED") return;
    this._quitting = true;
    if (this.state !== "CLOSING") this._send({ type: "goodbye", reason, errorCode: code });
    this._flush();
    this._end(error);
    this._transport.close();
  }

  /** The transport ended; `failure`: why a session could not be resumed (§16.6). */
  _transportClosed(failure = null) {
    if (this.state === "CLOSED") return;
    if (failure !== null) {
      this._end(failure instanceof ProtocolError ? failure : new ConnectionClosedError(failure.message, failure));
      return;
    }
    if (this.state !== "CLOSING" && this._decoder.pending) { // a truncated message: say so if we still can
      this._violation(new ProtocolError(`input ended inside a frame (${this._decoder.pending} bytes of an incomplete frame)`, "§9.3"));
      return;
    }
    const how = this._transport.ending === undefined ? "" : `: ${this._transport.ending}`;
    this._end(this.state === "CLOSING" ? null
      : new ConnectionClosedError(`the connection ended without a goodbye (PROTOCOL.md §9.3)${how}`));
    this._transport.close(); // our side too (a half-open socket stays open otherwise)
  }

  _end(error) {
    this._clock.clearTimeout(this._closeTimer);
    this._clock.clearTimeout(this._pingTimer);
    this._clock.clearTimeout(this._idleTimer);
    this._clock.clearTimeout(this._handshakeTimer);
    this._readAgain(); // the lingering close reads what is left (and so hears the peer's close)
    this.state = "CLOSED";
    this.closeReason = error;
    this._failAll(error ?? this._closedError());
    this._messages.close(error ?? this._closedError());
    this._channels.close();
    this._serving.closeAll();
    this._ready.reject(error ?? this._closedError());
    this._resolveClosed(error);
    this.onclose?.(error);
  }

  /** End the transport now, without its lingering close (a transport without abort() is closed). */
  _abort() {
    const transport = this._transport;
    if (typeof transport.abort === "function") transport.abort();
    else transport.close();
  }

  /** listen(): this Connection's transport resumed another session (§16.3); it ends unseen, sending nothing more. */
  _abandon() {
    this._clock.clearTimeout(this._closeTimer);
    this._clock.clearTimeout(this._pingTimer);
    this._clock.clearTimeout(this._idleTimer);
    this._clock.clearTimeout(this._handshakeTimer);
    this._clock.clearTimeout(this._unreadTimer);
    this._clock.clearTimeout(this._repliesTimer);
    this._out = [];
    this._outBytes = 0;
    this._outReplies = 0;
    this.state = "CLOSED";
    this.closeReason = new ConnectionClosedError("the transport resumed another session (PROTOCOL.md §16.3)");
  }

  /** The error for something asked of a connection that is closing or closed, else null. */
  _closedFor() {
    return this.state === "CLOSING" || this.state === "CLOSED" ? this._closedError() : null;
  }

  _closedError() {
    return new ConnectionClosedError("the connection is closed", this.closeReason ?? undefined);
  }

  _failAll(error) {
    const subs = [...this._subs.values()];
    this._subs.clear();
    this._parts.clear();
    this._partBytes = 0;
    for (const sub of subs) {
      sub._input?.end(); // a channel's input ends with the connection (§21.5)
      const quiet = sub.state === "CANCELLED";
      sub.state = "CLOSED";
      sub._finish(quiet ? () => {} : (s) => s.onError?.(error));
    }
  }

  _report(error) {
    try {
      this.onerror?.(error);
    } catch {
      // an error handler that throws has nowhere left to report to
    }
  }
}


/** A frame type as rstreams' reasons name it, its class: "clientHello" -> "ClientHello", "extension" -> "ExtensionMessage". */
function className(type) {
  return type === "extension" ? "ExtensionMessage" : type[0].toUpperCase() + type.slice(1);
}

/** The signal a received frame is, as rstreams' reasons name it (§5.2): a part or a pack is an onNext. */
function signalOf(type) {
  return type.startsWith("onNext") ? "onNext" : type;
}

/** An extension as rstreams' reasons name it: "content-types (id 4)". */
function extensionName(extension) {
  return `${extension.name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} (id ${extension.id})`;
}
/** A channel's input as a Publisher: a Publisher as it is, an (async) iterable through fromIterable/fromAsyncIterable. */
function inputPublisher(input) {
  if (input !== null && typeof input === "object" && typeof input.subscribe === "function") return input;
  if (input != null && typeof input[Symbol.asyncIterator] === "function") return fromAsyncIterable(input);
  if (input != null && typeof input !== "string" && typeof input[Symbol.iterator] === "function") return fromIterable(input);
  throw new TypeError("a channel's input is a Publisher, an async iterable or an iterable of elements (PROTOCOL.md §21), "
    + `got ${input === null ? "null" : typeof input}`);
}

/** Frames that carry elements (bounded by demand and `writable`); everything else we write is a reply. */
const ELEMENT_FRAMES = new Set(["onNext", "onNextPacked", "onNextPart", "onNextLastPart"]);
const ELEMENT_EXTENSIONS = new Set([EXTENSIONS.channels.types.inputNext, EXTENSIONS.inputParts.types.inputNextPart]);

/**
 * Which of the unsent bytes are replies (input backpressure, §6.3). Every write is recorded
 * with its reply bytes; a transport sends in order, so the unsent bytes are the newest written
 * and the replies among them are read off the marks. Writes less than MARK_SPACING apart share
 * one mark (their replies count as unsent until the last of them is sent: on the safe side),
 * so the ledger stays small however small the writes.
 */
class ReplyLedger {
  constructor() {
    this.written = 0; // bytes handed to the transport, in all
    this.replies = 0; // of which replies
    this.sentReplies = 0; // replies among the bytes the transport has sent
    this._marks = []; // [written, replies] after writes with replies; from _head on
    this._head = 0;
    this._lastMark = 0; // where the last mark was added
  }

  wrote(nbytes, replies) {
    const written = this.written += nbytes;
    if (replies <= 0) return;
    this.replies += replies;
    const marks = this._marks;
    if (marks.length > this._head && written - this._lastMark < MARK_SPACING) {
      marks[marks.length - 1] = [written, this.replies]; // close behind the last mark: joins it
    } else {
      marks.push([written, this.replies]);
      this._lastMark = written;
    }
  }

  /** Whether the unsent replies could be past REPLY_MARK (all replies not known to be sent). */
  get mayPassMark() {
    return this.replies - this.sentReplies > REPLY_MARK;
  }

  /** Reply bytes among the `unsent` newest bytes written, never more than `unsent`. */
  unsentReplies(unsent) {
    const sent = this.written - unsent;
    const marks = this._marks;
    while (this._head < marks.length && marks[this._head][0] <= sent) this.sentReplies = marks[this._head++][1];
    if (this._head > 1024 && this._head * 2 > marks.length) {
      marks.splice(0, this._head);
      this._head = 0;
    }
    const replies = this.replies - this.sentReplies;
    return replies < unsent ? replies : unsent;
  }
}

const HANDLERS = {
  goodbye(conn, frame) {
    const closing = conn.state === "CLOSING";
    if (!closing) conn._send({ type: "goodbye", reason: "" }); // §9.1, §9.2
    conn._flush();
    conn._end(closing ? null : new ConnectionClosedError(
      `the ${conn._role.peer} said goodbye: ${frame.reason || "(no reason)"}`, undefined, frame.reason, frame.qualifier));
    conn._transport.close();
  },
  serverHello(conn, frame) {
    conn._anotherHello(frame);
  },
  clientHello(conn, frame) {
    conn._anotherHello(frame);
  },
  subscribe(conn, frame) {
    frame.channel = conn._channels.marked(frame); // a channel's subscribe (§21.3)
    frame.metadata = conn._metadata.check(); // its subscribeMetadata (§18.1)
    if (conn._gate !== null) conn._gate.subscribe(frame); // held or checked first (§15.3, §15.4)
    else conn._serving.subscribe(frame);
  },
  request(conn, frame) {
    if (!conn._gate?.request(frame)) conn._serving.request(frame);
  },
  cancel(conn, frame) {
    if (!conn._gate?.cancel(frame)) conn._serving.cancel(frame);
  },
  extension(conn, frame) {
    conn._extension(frame);
  },
  onSubscribe(conn, frame) {
    const sub = conn._open(frame);
    if (sub.state === "SUBSCRIBED") sub.state = "ACTIVE";
    else if (sub.state !== "CANCELLED") {
      throw new ProtocolError(`onSubscribe for subscriber ${sub.id} in state ${sub.state}`, "§5.2");
    }
    sub.elementSize = frame.element_size;
    if (frame.contentType !== null && sub.state === "ACTIVE") {
      sub.contentType = frame.contentType; // §17.2: the subscriber may decode by it
      try {
        sub._subscriber.onContentType?.(frame.contentType, sub);
      } catch (error) {
        conn._report(error);
      }
    }
  },
  onNext(conn, frame) {
    const sub = conn._open(frame);
    if (conn._element(sub, frame, 1)) sub._deliver(frame.element.slice());
  },
  onNextPacked(conn, frame) {
    const sub = conn._open(frame);
    if (!conn._element(sub, frame, frame.count)) return;
    const size = sub.elementSize;
    for (let i = 0; i < frame.count && sub.state === "ACTIVE"; i++) {
      sub._deliver(frame.elements.slice(i * size, (i + 1) * size));
    }
  },
  onNextPart(conn, frame) {
    conn._part(frame, false);
  },
  onNextLastPart(conn, frame) {
    conn._part(frame, true);
  },
  onComplete(conn, frame) {
    conn._terminal(frame);
  },
  onError(conn, frame) {
    conn._terminal(frame);
  },
};
