// Types of the RS.io codec (src/rsio-wire.js): PROTOCOL.md §2, §3. Sans-I/O.

/** 2**63 - 1: demand that means "unbounded" (Reactive Streams 3.17, PROTOCOL.md §6.1). */
export declare const UNBOUNDED: bigint;
/** The protocol version this codec speaks (§4.2). */
export declare const VERSION: 0;

export declare const CODES: Readonly<{
  clientHello: 0x01; serverHello: 0x02; goodbye: 0x03; subscribe: 0x04; request: 0x05;
  cancel: 0x06; onSubscribe: 0x07; onNext: 0x08; onNextPacked: 0x09; onNextPart: 0x0a;
  onNextLastPart: 0x0b; onComplete: 0x0c; onError: 0x0d;
}>;

/** What this endpoint accepts from its peer (§11); every field has the rstreams default. */
export interface Limits {
  maxElementSize: number;
  maxStringLength: number;
  maxExtensions: number;
  maxPartsInFlight: number;
  maxReassemblyBytes: number;
  maxNameLength: number;
  maxSubscriptions: number;
  splitThreshold: number;
  maxMetadataBytes: number;
  maxMetadataEntries: number;
}
export declare const DEFAULT_LIMITS: Readonly<Limits>;

export interface Extension {
  readonly id: number;
  readonly section: string;
  readonly types: Readonly<Record<string, number>>;
  readonly reserved: readonly number[];
}
/** The registered extensions (§4.4). */
export declare const EXTENSIONS: Readonly<{
  keepalive: Extension; auth: Extension; resume: Extension; contentTypes: Extension; metadata: Extension;
  errorCodes: Extension; messages: Extension; channels: Extension;
}>;
/** The extension owning an extension message type (0x80-0xff), or undefined. */
export declare function extensionOf(code: number): (Extension & { readonly name: string }) | undefined;

/** The peer broke the protocol; `section` is the PROTOCOL.md section (e.g. "§6.3"). */
export declare class ProtocolError extends Error {
  constructor(message: string, section: string);
  readonly section: string;
}

/** A call needs an extension the peer's hello does not list (send(): messages, §20.1; channel(): channels, §21.1). */
export declare class ExtensionNotOfferedError extends Error {
  constructor(extension: "messages" | "channels", section: string);
  readonly extension: string;
  readonly section: string;
}

/** A token, or a user and a password (§15.1). */
export type Credentials = string | { user: string; password: string };

/** An id: any varint (§2.1), a Number when it is one exactly, else a BigInt. */
export type Id = number | bigint;

export type Frame =
  | { type: "clientHello" | "serverHello"; version: number; extensions: Id[] }
  | { type: "goodbye"; reason: string }
  | { type: "subscribe"; publisher: string; subscriber: Id; initial_demand: bigint }
  | { type: "request"; subscriber: Id; demand: bigint }
  | { type: "cancel" | "onComplete"; subscriber: Id }
  | { type: "onSubscribe"; subscriber: Id; element_size: number }
  | { type: "onNext"; subscriber: Id; element: Uint8Array }
  | { type: "onNextPacked"; subscriber: Id; count: number; elements: Uint8Array }
  | { type: "onNextPart" | "onNextLastPart"; subscriber: Id; element_id: Id; data: Uint8Array }
  | { type: "onError"; subscriber: Id; error: string }
  | { type: "extension"; code: number; payload: Uint8Array };

export declare function encodeVarint(value: number | bigint): Uint8Array;
export declare function decodeVarint(bytes: Uint8Array, offset: number): { value: bigint; next: number } | null;
/** One frame's bytes; `elementSize` is the subscription's, for onNext and onNextPacked (§7). */
export declare function encodeFrame(frame: Frame, elementSize?: number): Uint8Array;
/** authenticate's payload (§15.1). */
export declare function encodeCredentials(credentials: Credentials): Uint8Array;
/** Credentials filling `payload` from `offset` exactly (§15.1); ProtocolError citing §15.5 otherwise. */
export declare function decodeCredentials(payload: Uint8Array, offset?: number): Credentials;
export declare function concat(chunks: Uint8Array[]): Uint8Array;

/** Incremental decoder: push() bytes, then next() until it returns null. */
export declare class FrameDecoder {
  constructor(elementSizeOf?: (subscriber: Id) => number, limits?: Partial<Limits>);
  push(data: Uint8Array | ArrayBuffer): void;
  next(): Frame | null;
  readonly pending: number;
  /** Hand over the bytes held that do not yet make a frame, and forget them. */
  takeRest(): Uint8Array;
}
/** Every frame of `bytes`; throws ProtocolError if bytes are left over. */
export declare function decodeAll(bytes: Uint8Array, elementSize?: number): Frame[];
