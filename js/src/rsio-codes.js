// Extension error-codes (id 6, PROTOCOL.md §19): a number from a small registry beside the
// text of onError and goodbye.
//
// Theory of operation. Both messages are qualifiers: errorCode(subscriber, code) says something
// about the onError for that subscriber that comes right after it, goodbyeCode(code) about the
// goodbye right after it; nothing else may come between (§19.1). A Qualifiers object sits in
// front of a connection's frame handlers: take() keeps the qualifier a message carries and
// check() applies it to the next frame, or fails with the §19.1 violation. Sending is the
// reverse: qualify() gives the qualifier to write just before an onError or goodbye.

import { CODES, EXTENSIONS, ProtocolError, concat, decodeVarint, encodeVarint } from "./rsio-wire.js";

const { errorCode: ERROR_CODE, goodbyeCode: GOODBYE_CODE } = EXTENSIONS.errorCodes.types;

/** The registry of §19.2 (codes 1024 and above are for private use). */
export const ERROR_CODES = Object.freeze({
  NORMAL: 0,
  APPLICATION: 1,
  UNKNOWN_PUBLISHER: 2,
  UNAUTHENTICATED: 3,
  UNAUTHORIZED: 4,
  INVALID_DEMAND: 5,
  PROTOCOL_VIOLATION: 6,
  LIMIT_EXCEEDED: 7,
  UNAVAILABLE: 8,
  INTERNAL: 9,
  CANCELLED: 10,
  TIMEOUT: 11,
});

const NAMES = new Map(Object.entries(ERROR_CODES).map(([name, code]) => [code, name]));

/** The registry name of `code` ("UNKNOWN_PUBLISHER"), or null for a code it does not list. */
export function codeName(code) {
  return NAMES.get(code) ?? null;
}

function malformed(what) {
  return new ProtocolError(`malformed ${what} payload`, "§19.1");
}

/** The varints of a qualifier's payload, which they must fill exactly; malformed ones in rstreams' words. */
function varints(payload, count, what) {
  const values = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    let decoded;
    try {
      decoded = decodeVarint(payload, at);
    } catch {
      throw malformed(`${what} (bad varint)`); // non-minimal or over-long
    }
    if (decoded === null) throw malformed(`${what} (truncated)`);
    values.push(decoded.value);
    at = decoded.next;
  }
  if (at !== payload.length) throw malformed(`${what} (${payload.length - at} trailing bytes)`);
  return values;
}

/**
 * The connection error of a qualifier (§17.1, §18.1, §19.1: `name`, type byte `code`, for
 * `subscriber`, none for a goodbyeCode) followed by `frame` where `target` (a frame type) must
 * come, or by its target for another id, cited in `section`; a second one of its type says so.
 */
export function notQualified(name, code, subscriber, frame, target, section) {
  const next = frame.type === "extension" ? frame.code : CODES[frame.type];
  if (next === code) return new ProtocolError(`two ${name} (0x${hex2(code)}) messages before one ${target}`, section);
  const whose = subscriber === undefined ? "" : ` for subscriber ${subscriber}`;
  const other = frame.type === target ? ` for subscriber ${frame.subscriber}` : "";
  const its = subscriber === undefined ? `a ${target}` : `its ${target}`;
  return new ProtocolError(`${name} (0x${hex2(code)})${whose} followed by message type 0x${hex2(next)}${other}, not by ${its}`,
    section);
}

const hex2 = (n) => n.toString(16).padStart(2, "0");

/** A code as a Number when it fits (every registered one does), else the BigInt. */
function number(value) {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : value;
}

/** The qualifiers of one connection: received (take, check) and sent (qualify). */
export class Qualifiers {
  constructor() {
    this._pending = null; // {subscriber, code} of an errorCode, or {code} of a goodbyeCode
  }

  /** A qualifier arrived (`code` its type): keep it for the next message. */
  take(type, payload) {
    if (type === ERROR_CODE) {
      const [subscriber, code] = varints(payload, 2, "errorCode");
      this._pending = { subscriber: number(subscriber), code: number(code) };
    } else {
      const [code] = varints(payload, 1, "goodbyeCode");
      this._pending = { code: number(code) };
    }
  }

  /** The code that qualifies `frame` (null: none); throws if a kept qualifier is not for it. */
  check(frame) {
    const pending = this._pending;
    if (pending === null) return null;
    this._pending = null;
    if (pending.subscriber === undefined) {
      if (frame.type === "goodbye") return pending.code;
      throw notQualified("goodbyeCode", GOODBYE_CODE, undefined, frame, "goodbye", "§19.1");
    }
    if (frame.type === "onError" && BigInt(frame.subscriber) === BigInt(pending.subscriber)) return pending.code;
    throw notQualified("errorCode", ERROR_CODE, pending.subscriber, frame, "onError", "§19.1");
  }

  /** Whether `frame` is a qualifier (an extension message of error-codes that is not reserved). */
  static is(frame) {
    return frame.type === "extension" && (frame.code === ERROR_CODE || frame.code === GOODBYE_CODE);
  }

  /** The qualifier to write right before `frame` (an onError or goodbye with an `errorCode`). */
  static qualify(frame, code) {
    if (frame.type === "onError") {
      return { type: "extension", code: ERROR_CODE, payload: concat([encodeVarint(frame.subscriber), encodeVarint(code)]) };
    }
    return { type: "extension", code: GOODBYE_CODE, payload: encodeVarint(code) };
  }
}
