// Types of the RS.io client (src/rsio.js, and src/node.js under Node, which adds tcp://,
// tls:// and unix:// to connect()). Reactive Streams in JavaScript: the same four interfaces
// as the specification, with camelCase names.

import type { Credentials, Limits } from "./rsio-wire.js";

export { ExtensionNotOfferedError, ProtocolError, UNBOUNDED } from "./rsio-wire.js";
export type { Credentials, Limits } from "./rsio-wire.js";

/** Demand: a positive integer Number, a BigInt up to 2**63 - 1, or Infinity (= unbounded). */
export type Demand = number | bigint;

export interface Subscription {
  /** Rule 3.9: n > 0; anything else cancels and signals onError(RangeError). */
  request(n: Demand): void;
  /** Idempotent (rule 3.7). */
  cancel(): void;
}

/** What a remote publisher's elements come as: bytes (a copy the subscriber may keep). */
export interface Subscriber<T = Uint8Array> {
  onSubscribe?(subscription: Subscription): void;
  onNext?(element: T): void;
  onError?(error: Error): void;
  onComplete?(): void;
  /** The media type the publisher announced (extension content-types, §17), before its first element. */
  onContentType?(mediaType: string, subscription: RemoteSubscription): void;
}

export interface Publisher<T> {
  subscribe(subscriber: Subscriber<T>): void;
  /** Offered to the peer: every element has exactly this many bytes, sent raw (§7); fixedSize() sets it. */
  readonly elementSize?: number;
  /** Offered to the peer: the elements' media type (§17); withContentType() sets it. */
  readonly contentType?: string;
}

/** What a publisher offered to the peer may emit: bytes, or a string sent as UTF-8. */
export type Element = Uint8Array | ArrayBufferView | ArrayBuffer | string;

/**
 * A publisher, or a factory called with the name's query (and "{field}" values), its path and
 * the connection; a factory's null or undefined means "no such publisher" (refused with onError).
 */
export type Offered =
  | Publisher<Element>
  | ((params: Record<string, string>, path: string, connection: Connection, metadata: SubscribeMetadata)
    => Publisher<Element> | null | undefined);

/** The metadata of one subscribe (extension metadata, §18): key -> bytes. */
export declare class SubscribeMetadata extends Map<string, Uint8Array> {
  /** The value of `key` as UTF-8 text, or undefined. */
  text(key: string): string | undefined;
  readonly traceparent: string | undefined;
}
/** The metadata of a subscribe that carried none. */
export declare const NO_METADATA: SubscribeMetadata;

/**
 * A channel factory (extension channels, §21): called with the opener's input (a Publisher
 * of bytes, subscribable once), the name's query and fields, its path, the connection and
 * the subscribe's metadata; returns the output Publisher (null or undefined: no such channel).
 */
export type ChannelFactory = (input: Publisher<Uint8Array>, params: Record<string, string>, path: string,
  connection: Connection, metadata: SubscribeMetadata) => Publisher<Element> | null | undefined;

/** The opener's input failed: the text of its inputError (§21.5). */
export declare class ChannelInputError extends Error {
  constructor(message: string);
}

/**
 * `publisher` offered with a media type (extension content-types, §17); for the built-in
 * types (§17.3) elements that are not bytes are encoded (JSON values, int64le and float64le
 * numbers, those two with elementSize 8).
 */
export declare function withContentType<T>(publisher: Publisher<T>, mediaType: string): Publisher<T> & { readonly contentType: string };

export interface Clock {
  now(): number;
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(timer: unknown): void;
}

/** What a Connection writes to and reads from; webSocketTransport() makes one of a WebSocket. */
export interface Transport {
  send(bytes: Uint8Array): void;
  close(): void;
  /** End now, without a lingering close: a close() unanswered for CLOSE_TIMEOUT_MS (close() if absent). */
  abort?(): void;
  readonly writable: boolean;
  waitWritable?(): void;
  /** Called by the Connection once its handlers are set: input held until then is delivered. */
  start?(): void;
  onbytes: ((data: ArrayBuffer | Uint8Array | string) => void) | null;
  /** `failure`: why a resumable session could not go on (§16.6); absent for a plain end. */
  onend: ((failure?: Error | null) => void) | null;
  ondrain: (() => void) | null;
  /** Bytes written and not yet taken by the peer: with it the Connection has input backpressure (§6.3). */
  readonly unsent?: number;
  /** How the transport ended, once it has ("the WebSocket closed with status 1009 ..."): added to the error of an end without goodbye (§9.3). */
  ending?: string;
  /** Stop and restart reading the peer (input backpressure, §6.3), where the transport can. */
  pauseReading?(): void;
  resumeReading?(): void;
}

/** Session resumption (PROTOCOL.md §16): times in ms, sizes in bytes. */
export interface ResumeOptions {
  attempts: number;
  backoff: number;
  maxBackoff: number;
  attemptTimeout: number;
  bufferBytes: number;
  stallTimeout: number | null;
  ackDelay: number;
}
export declare const RESUME_DEFAULTS: Readonly<ResumeOptions>;
/** How long close() waits for the answer to its goodbye (§9.1), and listen()'s close() in all: 5000 ms, as rstreams' CLOSE_TIMEOUT. */
export declare const CLOSE_TIMEOUT_MS: number;

/** Subscribe metadata (extension metadata, §18): keys of a-z 0-9 - _ . (1-64), values text (UTF-8) or bytes. */
export type Metadata = Record<string, string | Uint8Array> | Map<string, string | Uint8Array>;

export interface SubscribeOptions {
  /** Credentials for this subscription only (§15.4). */
  auth?: Credentials | null;
  /** Sent with the subscribe (§18); such a subscribe waits for the peer's hello. */
  metadata?: Metadata | null;
}

export interface ConnectOptions {
  /** Credentials for extension auth (PROTOCOL.md §15); offered only when given. */
  auth?: Credentials | null;
  /** Publishers the peer may subscribe to: names or "{field}" patterns. */
  publishers?: Record<string, Offered> | Map<string, Offered>;
  /** Resume the session on a new transport when one breaks (§16): true, or options. */
  resume?: boolean | Partial<ResumeOptions>;
  /** Seconds without input before a ping (§14); null: answer pings, send none. Default 15. */
  keepalive?: number | null;
  limits?: Partial<Limits>;
  onclose?: ((error: Error | null) => void) | null;
  /** Receives exceptions thrown by subscribers and publishers (default: console.error). */
  onerror?: ((error: unknown) => void) | null;
  /** A WebSocket class (browsers' and Node 22's global, or the `ws` package's). */
  WebSocket?: unknown;
  clock?: Clock;
  /** Which hello the Connection sends (§4.1): "client" (default); listen() makes "server" ones. */
  role?: "client" | "server";
  /** Seconds of silence (nothing read, nothing the peer took) before a goodbye (§14.2); listen(): default 60; connect(): default null (never), not with resume (its stallTimeout replaces a silent transport). */
  idleTimeout?: number | null;
  /** Seconds the peer may leave our replies unread (we stop reading it meanwhile, §6.3) before a goodbye; default 30, null: no limit. */
  unreadTimeout?: number | null;
  /** Seconds for the peer's hello before a goodbye (§4.1); connect(): the serverHello, default 10, null: never (a resume is bounded by attemptTimeout instead), and as many for opening the transport (TCP connect, TLS or WebSocket handshake). */
  handshakeTimeout?: number | null;
  /** Node only: options for tls.connect for tls:// (ca, cert, key, servername, ...), and for the `ws` package's WebSocket for ws:// and wss://. */
  tls?: Record<string, unknown>;
  /** Handlers of the peer's one-way messages (§20): names or "{field}" patterns. */
  handlers?: Record<string, MessageHandler> | Map<string, MessageHandler>;
  /** Message credit granted to the peer (§20.3). Default 16. */
  maxMessagesInFlight?: number;
  /** Channels the peer may open (§21): names or "{field}" patterns -> factories. */
  channels?: Record<string, ChannelFactory> | Map<string, ChannelFactory>;
  /** Extension ids not to offer (1, 4-9), to behave like a peer that predates them; [6]: no error codes (§19). */
  disabledExtensions?: Iterable<number>;
}

/** A one-way message from the peer (§20); its credit is held until the handler returns or its promise settles. */
export interface Message {
  readonly name: string;
  readonly path: string;
  readonly params: Record<string, string>;
  readonly payload: Uint8Array;
}
export type MessageHandler = (message: Message) => unknown;

/** send(name, payload, {wait: false}) while the peer has granted no message credit (§20.3). */
export declare class MessageCreditError extends Error {
  constructor(message: string);
}

/** "auto": by the type the publisher announces (§17.2: JSON, UTF-8 text, int64le as bigint, float64le; else bytes). */
export type Decode<T> = "bytes" | "text" | "json" | "auto" | ((bytes: Uint8Array) => T);

/** An explicit decode contradicts the type the publisher announced (§17.2). */
export declare class ContentTypeError extends Error {
  constructor(message: string);
}
/** The decoder of a built-in media type (§17.3), or null. */
export declare function decoderForType(mediaType: string): ((bytes: Uint8Array) => unknown) | null;
/** Whether two media types are the same (§17.1). */
export declare function sameMediaType(a: string, b: string): boolean;

export type SubscriptionState = "SUBSCRIBED" | "ACTIVE" | "CANCELLED" | "CLOSED";

export interface RemoteSubscription extends Subscription {
  readonly id: number;
  readonly name: string;
  readonly state: SubscriptionState;
  /** Demand granted and not yet used (§6.1). */
  readonly outstanding: bigint;
  readonly received: number;
  readonly elementSize: number;
  /** The media type the publisher announced (extension content-types, §17), or null. */
  readonly contentType: string | null;
}

export interface ServedStream {
  /** The peer's subscriber id (a BigInt when it does not fit a Number exactly). */
  readonly id: number | bigint;
  readonly elementSize: number;
  readonly name: string;
  /** The peer's outstanding demand. */
  readonly wanted: bigint;
  readonly sent: number;
}

export declare class Connection {
  constructor(transport: Transport, options?: ConnectOptions);
  /** §12: AWAITING_HELLO, OPEN, CLOSING, CLOSED. */
  readonly state: "AWAITING_HELLO" | "OPEN" | "CLOSING" | "CLOSED";
  /** Settles once the serverHello (and, with auth, `authenticated`) is in; rejects if the connection ends first. */
  readonly ready: Promise<Connection>;
  /** Why the connection ended: null for an orderly close. */
  readonly closed: Promise<Error | null>;
  readonly closeReason: Error | null;
  readonly extensions: ReadonlySet<number>;
  readonly authenticated: boolean;
  readonly bytesReceived: number;
  readonly elementsReceived: number;
  readonly pingsSent: number;
  readonly pongsReceived: number;
  readonly subscriptions: RemoteSubscription[];
  readonly served: ServedStream[];
  /** How often the session moved to a new transport (§16); 0 without resume. */
  readonly resumes: number;
  readonly writable: boolean;
  onclose: ((error: Error | null) => void) | null;
  onerror: ((error: unknown) => void) | null;
  /** `options.auth`: credentials for this subscription only (§15.4); needs `auth` on the connection. */
  subscribe(name: string, subscriber: Subscriber<Uint8Array>, options?: SubscribeOptions): RemoteSubscription;
  /** The remote publisher `name` as a Publisher (each subscribe is conn.subscribe(name, ...)). */
  publisher(name: string, options?: SubscribeOptions): Publisher<Uint8Array>;
  stream(name: string, options?: { window?: number; decode?: "bytes"; metadata?: Metadata | null }): AsyncIterable<Uint8Array>;
  stream(name: string, options: { window?: number; decode: "text"; metadata?: Metadata | null }): AsyncIterable<string>;
  stream<T = unknown>(name: string, options: {
    window?: number; decode: "json" | "auto" | ((bytes: Uint8Array) => T); metadata?: Metadata | null;
  }): AsyncIterable<T>;
  request(name: string, options?: { decode?: "bytes"; metadata?: Metadata | null }): Promise<Uint8Array>;
  request(name: string, options: { decode: "text"; metadata?: Metadata | null }): Promise<string>;
  request<T = unknown>(name: string, options: {
    decode: "json" | "auto" | ((bytes: Uint8Array) => T); metadata?: Metadata | null;
  }): Promise<T>;
  /** Goodbye (§9.1); resolves with `closed`'s value once the transport has closed. */
  close(reason?: string): Promise<Error | null>;
  /** A one-way message to the peer's handler `name` (§20); resolves once written. */
  send(name: string, payload?: string | Uint8Array | ArrayBuffer, options?: { wait?: boolean }): Promise<void>;
  /** Message credit the peer has granted and this endpoint has not used (§20.3). */
  readonly messageCredit: bigint;
  /**
   * Open a channel on the peer's channel `name` (extension channels, §21): `input` streams to
   * it, within the input demand the peer grants; the output is a Publisher (each subscribe
   * opens a channel) and an async iterable ({window, decode} as in stream()).
   */
  channel(name: string, input: ChannelInput, options?: ChannelOptions & { decode?: "bytes" }): Channel<Uint8Array>;
  channel(name: string, input: ChannelInput, options: ChannelOptions & { decode: "text" }): Channel<string>;
  channel<T = unknown>(name: string, input: ChannelInput, options: ChannelOptions & {
    decode: "json" | "auto" | ((bytes: Uint8Array) => T);
  }): Channel<T>;
}

/** A channel's input: a Publisher, an async iterable or an iterable of elements (bytes or strings). */
export type ChannelInput = Publisher<Element> | AsyncIterable<Element> | Iterable<Element>;

export interface ChannelOptions extends SubscribeOptions {
  /** As stream()'s: elements requested and not yet consumed when iterated. Default 16. */
  window?: number;
}

/** A channel's output: subscribe (as a Publisher of bytes) or iterate (decoded). */
export interface Channel<T> extends Publisher<Uint8Array>, AsyncIterable<T> {}

/** Input elements requested from a channel's input Publisher at a time (§21.4). */
export declare const INPUT_WINDOW: number;

/** The publisher ended a subscription with onError. */
export declare class RemoteStreamError extends Error {
  constructor(message: string, code?: number | bigint | null);
  /** The errorCode that came with the onError (PROTOCOL.md §19); null without one. */
  readonly code: number | bigint | null;
  /** The code's registry name ("UNKNOWN_PUBLISHER"); null without a code or for an unregistered one. */
  readonly codeName: ErrorCodeName | null;
}

/**
 * The connection ended before the stream; `reason` is the peer's goodbye reason, if it said
 * one, and `code` its goodbyeCode (§19), if it sent one.
 */
export declare class ConnectionClosedError extends Error {
  constructor(message: string, cause?: unknown, reason?: string | null, code?: number | bigint | null);
  readonly reason: string | null;
  readonly code: number | bigint | null;
  readonly codeName: ErrorCodeName | null;
}

/** The registry of error codes (PROTOCOL.md §19.2). */
export declare const ERROR_CODES: Readonly<{
  NORMAL: 0; APPLICATION: 1; UNKNOWN_PUBLISHER: 2; UNAUTHENTICATED: 3; UNAUTHORIZED: 4; INVALID_DEMAND: 5;
  PROTOCOL_VIOLATION: 6; LIMIT_EXCEEDED: 7; UNAVAILABLE: 8; INTERNAL: 9; CANCELLED: 10; TIMEOUT: 11;
}>;
export type ErrorCodeName = keyof typeof ERROR_CODES;
/** The registry name of a code, or null for one the registry does not list. */
export declare function codeName(code: number | bigint): ErrorCodeName | null;

export declare const SUBPROTOCOL: "rsio.v0";

/** Open a connection. Browsers: ws://, wss://. Node (the package's node entry): also tcp://, tls://, unix://. */
export declare function connect(url: string, options?: ConnectOptions): Promise<Connection>;
export declare function openWebSocket(url: string, WebSocket: unknown, options?: ConnectOptions): Promise<Connection>;
/**
 * An open WebSocket as a Transport; `socket` (Node's `ws` package): the TCP socket under it, reset
 * when the WebSocket is ended with output unsent (PROTOCOL.md §9.1).
 */
export declare function webSocketTransport(ws: unknown, clock?: Clock, socket?: unknown): Transport;
/** A Connection over the transport `open()` resolves with (called again to resume, §16). */
export declare function connectTransport(open: () => Promise<Transport>, options?: ConnectOptions): Promise<Connection>;
/** For writing a Transport: hold its events until the Connection calls `start()`. */
export declare function holdUntilStarted(transport: Transport): (kind: "onbytes" | "onend", value?: unknown) => void;
/** Node only (the node entry): a connected net.Socket or tls.TLSSocket as a Transport. */
export declare function socketTransport(socket: unknown, clock?: Clock): Transport;

export interface ListenOptions extends Omit<ConnectOptions, "auth" | "resume" | "role" | "WebSocket" | "tls"> {
  /** Seconds a connection may stay silent (nothing read, nothing taken) before a goodbye (§14.2); default 60, null: never. */
  idleTimeout?: number | null;
  /** Seconds for a clientHello, then (with authenticate) for its credentials to be settled, before a goodbye (§15.3); default 10, null: never. */
  handshakeTimeout?: number | null;
  /** Most connections open at once (§10; with resume, sessions); one beyond it is said goodbye at its clientHello, with code 8 (unavailable). Default 10 000, an integer >= 1. */
  maxConnections?: number;
  /** Called with each accepted connection (it may subscribe to the client's publishers). */
  onconnection?: (connection: Connection) => void;
  /** Offer extension auth (§15): the credentials' principal, or null to refuse; may be async. */
  authenticate?: (credentials: Credentials) => unknown | Promise<unknown>;
  /**
   * Whether the principal may subscribe to `name` with `metadata` (§15.4, §18), or send a
   * message to it (§20.4); default: always. Only `true` allows (synchronously: a promise is a
   * refusal, reported to onerror). Throwing an error with a numeric `code` refuses with that
   * code (§19.2) and the error's message.
   */
  authorize?: (principal: unknown, name: string, metadata: SubscribeMetadata) => boolean;
  /** Refuse clients that do not authenticate (§15.2); default true when `authenticate` is given. */
  authRequired?: boolean;
  /** Serve resumable sessions (§16): true, or options (ms and bytes). */
  resume?: boolean | Partial<ServerResumeOptions>;
  /**
   * ws:// only: the browser pages, besides the server's own origin, that may connect
   * (`SCHEME://HOST[:PORT]`, e.g. "https://app.example:8443"; "*": every page). A handshake
   * with any other Origin gets HTTP 403, reported to `onerror` (default: a line on console.error)
   * with the origin; one without Origin (non-browser clients) is accepted.
   */
  origins?: readonly string[];
}

/** listen()'s session resumption (PROTOCOL.md §16.7): ms and bytes. */
export interface ServerResumeOptions {
  /** How long a session whose transport broke waits for its resume. Default 30000. */
  sessionTimeout: number;
  /** Bound of the replay buffer; production pauses there. Default 4 MiB. */
  bufferBytes: number;
  /** Nothing read on a session's transport this long: it is dropped (no goodbye) and the session waits for its resume. Default 45000; null: never. */
  stallTimeout: number | null;
  /** Acknowledge this long after anything arrived, unless a quarter of the buffer came first. Default 20. */
  ackDelay: number;
}

export interface Server {
  /** Where it listens, with the real port. */
  readonly url: string;
  readonly connections: ReadonlySet<Connection>;
  /** With `resume`: the sessions that can be resumed now (`size`); else null. */
  readonly sessions: { readonly size: number } | null;
  /** Goodbye to every connection, then stop listening. */
  close(reason?: string): Promise<void>;
}

/** Node only (the node entry): accept connections on tcp://, unix:// or ws:// and serve publishers. */
export declare function listen(url: string, options?: ListenOptions): Promise<Server>;

/** `publisher`, whose elements all have `size` bytes, offered with that elementSize (§7). */
export declare function fixedSize<T extends Element>(publisher: Publisher<T>, size: number): Publisher<T>;
export declare function fromIterable<T>(iterable: Iterable<T>): Publisher<T>;
export declare function fromAsyncIterable<T>(iterable: AsyncIterable<T>): Publisher<T>;
