// Session resumption for JavaScript clients (PROTOCOL.md §16): a session outlives its transport.
//
// Theory of operation. A ResumableSession stands between a Connection and its transports and
// looks like one transport that does not break. Each direction of the session is one byte
// stream counted from 0 (the first byte of its hello). The session keeps every byte the
// Connection wrote that the server has not acknowledged (`resumeAck`, §16.4) in a replay
// buffer, and counts the server's bytes it passed to the Connection (`received`). When the
// transport breaks (it ends without a goodbye, or nothing is read for `stallTimeout`) while
// the session is open and the server's `resumeToken` is in, the session opens a new transport
// with `reopen()`, sends `resume(token, received)` as its first bytes, reads the server's
// hello and `resumed(position)` (or `resumeRefused`), writes its buffer from `position` on,
// and hands the rest of the input to the Connection, whose parser goes on where it stopped,
// inside a message if that is where the old transport broke. Attempts are bounded, with
// exponential backoff; when they are used up, or the server refuses, the Connection ends
// as after a transport ended without a goodbye (§9.3), with the reason.
//
// The buffer is bounded (`bufferBytes`): at the bound the session says it is not writable,
// so the Connection's publishers stop producing, and it drains when acknowledgements bring it
// under half (§16.4). The session acknowledges the server's stream once a quarter of the
// bound has arrived, else `ackDelay` ms after anything arrived, but never for bytes that
// were only the server's own acknowledgements. Timers go through the Connection's clock.

import { ProtocolError, concat, decodeVarint, encodeFrame, encodeVarint, EXTENSIONS } from "./rsio-wire.js";

const { resumeToken: TOKEN, resume: RESUME, resumed: RESUMED, resumeRefused: REFUSED, resumeAck: ACK } =
  EXTENSIONS.resume.types;
const MAX_TOKEN = 64; // bytes (§16.2)

/** The defaults of rstreams.net.Resume (PROTOCOL.md §16.7), in ms and bytes. */
export const RESUME_DEFAULTS = Object.freeze({
  attempts: 8,
  backoff: 50, // ms before the second attempt, doubling
  maxBackoff: 2000,
  attemptTimeout: 5000,
  bufferBytes: 4 * 1024 * 1024,
  stallTimeout: 45_000, // null: never take a silent transport for broken
  ackDelay: 20,
});

/** `resume` as connect() takes it (true, or an object of RESUME_DEFAULTS' keys), checked. */
export function resumeOptions(resume) {
  const options = { ...RESUME_DEFAULTS, ...(resume === true ? {} : resume) };
  for (const key of Object.keys(options)) {
    if (!(key in RESUME_DEFAULTS)) throw new TypeError(`resume has no option ${JSON.stringify(key)}; it takes ${Object.keys(RESUME_DEFAULTS).join(", ")}`);
    const value = options[key];
    const ok = key === "stallTimeout" && value === null ? true
      : Number.isFinite(value) && value >= (key === "attempts" || key === "bufferBytes" ? 1 : 0);
    if (!ok) throw new RangeError(`resume.${key} must be a number >= ${key === "attempts" || key === "bufferBytes" ? 1 : 0}, got ${value}`);
  }
  return options;
}

/** End a session's transport now: abort() where it has one, else close(). */
export function abortLink(link) {
  if (typeof link.abort === "function") link.abort();
  else link.close();
}

const SERVER_HELLO = 0x02;
const GOODBYE = 0x03;
const MAX_RESUME_PAYLOAD = 256; // bytes of a resume-exchange message read outside the session (§16.7)
const hex2 = (code) => code.toString(16).padStart(2, "0");

/** A ProtocolError's text without its "(PROTOCOL.md §N)". */
const bare = (error) => error.message.replace(/ \(PROTOCOL\.md §[0-9.]+\)$/, "");

/** The varint at `at`, or null if the bytes end first; a malformed one is a ProtocolError naming `what` (§16.2). */
function varintOf(bytes, at, what) {
  try {
    return decodeVarint(bytes, at);
  } catch (error) {
    throw new ProtocolError(`${what}: ${bare(error)}`, "§16.2");
  }
}

/** The one varint position of a resumed or resumeAck (`what`) payload (§16.2), refused in rstreams' words. */
export function position(payload, what) {
  const got = varintOf(payload, 0, what);
  if (got === null) throw new ProtocolError(`${what}: the payload ends inside a varint`, "§16.2");
  if (got.next !== payload.length) {
    throw new ProtocolError(`${what}: ${payload.length - got.next} byte(s) after the position`, "§16.2");
  }
  return got.value;
}

/** Where the version-0 serverHello at the start of `buf` ends, or null until it is whole (§16.3). */
function helloEnd(buf) {
  if (buf.length === 0) return null;
  if (buf[0] !== SERVER_HELLO) {
    throw new ProtocolError(`expected a hello of type 0x${hex2(SERVER_HELLO)}, got type 0x${hex2(buf[0])}`, "§16.3");
  }
  if (buf.length < 2) return null;
  if (buf[1] !== 0) throw new ProtocolError(`a hello with version ${buf[1]} on a version-0 session`, "§16.3");
  const count = varintOf(buf, 2, "serverHello");
  if (count === null) return null;
  if (count.value > BigInt(MAX_RESUME_PAYLOAD)) throw new ProtocolError(`serverHello lists ${count.value} extensions`, "§16.3");
  let at = count.next;
  for (let i = 0n; i < count.value; i++) {
    const id = varintOf(buf, at, "serverHello");
    if (id === null) return null;
    at = id.next;
  }
  return at;
}

/**
 * The client's reading of a new transport after its resume (§16.3), as rstreams reads it: the
 * server's hello, then resumed or resumeRefused (a goodbye in their place, such as a server at its
 * connection limit says, is read as a refusal). `feed(bytes)` returns null until the answer is
 * whole, then {position, rest} or {refused, rest}, `rest` the bytes after it (the start of the
 * server's replay). Anything else throws a ProtocolError in rstreams' words (§16.2, §16.3, §16.7):
 * the server broke the protocol, and the session fails (§16.6).
 */
export class ResumeAnswer {
  constructor() {
    this._buf = new Uint8Array(0);
    this._helloSeen = false;
  }

  feed(data) {
    const bytes = data instanceof Uint8Array ? data : new Uint8Array(data); // (an ArrayBuffer from a WebSocket)
    let buf = (this._buf = this._buf.length === 0 ? bytes : concat([this._buf, bytes]));
    if (!this._helloSeen) {
      const end = helloEnd(buf);
      if (end === null) return null;
      buf = this._buf = buf.subarray(end);
      this._helloSeen = true;
    }
    if (buf.length > 0 && buf[0] === GOODBYE) return this._goodbye(buf);
    if (buf.length === 0) return null;
    const size = varintOf(buf, 1, `message 0x${hex2(buf[0])}`);
    if (size === null) return null;
    if (size.value > BigInt(MAX_RESUME_PAYLOAD)) {
      throw new ProtocolError(`message 0x${hex2(buf[0])} announces a ${size.value}-byte payload; at most `
        + `${MAX_RESUME_PAYLOAD} in the resume exchange`, "§16.7");
    }
    const end = size.next + Number(size.value);
    if (buf.length < end) return null;
    const payload = buf.subarray(size.next, end);
    const rest = buf.slice(end);
    this._buf = new Uint8Array(0);
    if (buf[0] === RESUMED) return { position: position(payload, "resumed"), rest };
    if (buf[0] === REFUSED) return { refused: new TextDecoder().decode(payload), rest };
    throw new ProtocolError(`expected resumed or resumeRefused, got type 0x${hex2(buf[0])}`, "§16.3");
  }

  /** A goodbye instead of the answer: its reason (only shown, so at most 256 bytes of it are awaited). */
  _goodbye(buf) {
    const size = varintOf(buf, 1, "goodbye");
    if (size === null) return null;
    const end = size.next + Math.min(Number(size.value), MAX_RESUME_PAYLOAD);
    if (buf.length < end) return null;
    return { refused: new TextDecoder().decode(buf.subarray(size.next, end)), rest: new Uint8Array(0) };
  }
}

/** The bytes an endpoint sent that the peer has not acknowledged, with their positions (§16.4). */
export class ReplayBuffer {
  constructor() {
    this.chunks = [];
    this.start = 0n; // position of the first byte held
    this.end = 0n; // position after the last byte written
  }

  get held() {
    return Number(this.end - this.start);
  }

  append(bytes) {
    this.chunks.push(bytes);
    this.end += BigInt(bytes.length);
  }

  acknowledge(at) {
    if (at > this.end) {
      throw new ProtocolError(`acknowledged position ${at} is beyond the ${this.end} bytes sent`, "§16.4");
    }
    let drop = Number(at - this.start);
    if (drop <= 0) return;
    this.start = at;
    while (drop > 0) {
      const first = this.chunks[0];
      if (first.length <= drop) {
        this.chunks.shift();
        drop -= first.length;
      } else {
        this.chunks[0] = first.subarray(drop);
        drop = 0;
      }
    }
  }

  replayFrom(at) {
    if (at < this.start || at > this.end) {
      throw new ProtocolError(`position ${at} is outside the replay buffer (${this.start}..${this.end}): `
        + "the two sides disagree on what was received", "§16.3");
    }
    this.acknowledge(at);
    return [...this.chunks];
  }
}

/**
 * What both ends of a resumable session share (§16.3, §16.4): the replay buffer of what this
 * endpoint wrote, the count of what it read, acknowledgements both ways, the bound. A session
 * looks like one transport to its Connection (`resumable` tells the Connection it is one);
 * `_link` is the transport under it now, null while detached.
 */
export class SessionStream {
  constructor(options, clock) {
    this._options = options; // bufferBytes, ackDelay
    this._clock = clock;
    this._out = new ReplayBuffer();
    this.received = 0n; // bytes of the peer's stream passed to the Connection
    this._acked = 0n; // the position our last resumeAck carried
    this._ackOnly = 0; // bytes since then that were the peer's own acks
    this._ackTimer = null;
    this._stallTimer = null;
    this._heard = clock.now(); // when the attached transport last gave input
    this._full = false;
    this._closing = false;
    this._isOpen = () => true;
    this._link = null;
    this.mode = "UNDECIDED"; // UNDECIDED, RESUMABLE, PASSTHROUGH, DETACHED, CLOSED (§16.5)
    this.resumable = true;
    this.onbytes = null;
    this.onend = null;
    this.ondrain = null;
  }

  // -- the transport a Connection sees -----------------------------------------------------------
  send(bytes) {
    if (this.mode === "CLOSED") return;
    if (this.mode !== "PASSTHROUGH") {
      this._out.append(bytes);
      this._checkFull();
    }
    if (this.mode !== "DETACHED") this._link.send(bytes);
  }

  /** The Connection is ready for input: let the first transport's events through. */
  start() {
    this._link?.start?.();
  }

  get writable() {
    return this.mode !== "DETACHED" && !this._full && this._link !== null && this._link.writable !== false;
  }

  waitWritable() {
    if (this.mode !== "DETACHED" && !this._full) this._link?.waitWritable?.();
  }

  /** The peer's resumeAck (§16.4). */
  _acknowledged(payload) {
    this._ackOnly += 1 + encodeVarint(payload.length).length + payload.length;
    this._out.acknowledge(position(payload, "resumeAck"));
    this._checkFull();
  }

  /** Input of the attached transport, for the Connection. */
  _pass(data) {
    if (typeof data === "string") {
      this.onbytes?.(data); // the Connection refuses it (§1)
      return;
    }
    this.received += BigInt(data.byteLength);
    this.onbytes?.(data);
    this._afterRead();
  }

  _afterRead() {
    if (this.mode !== "RESUMABLE") return;
    const unacknowledged = Number(this.received - this._acked) - this._ackOnly;
    if (unacknowledged >= this._options.bufferBytes / 4) this._sendAck();
    else if (unacknowledged > 0 && this._ackTimer === null) {
      this._ackTimer = this._clock.setTimeout(() => {
        this._ackTimer = null;
        if (Number(this.received - this._acked) - this._ackOnly > 0) this._sendAck();
      }, this._options.ackDelay);
    }
  }

  _sendAck() {
    this._clock.clearTimeout(this._ackTimer);
    this._ackTimer = null;
    if (this.mode !== "RESUMABLE" || !this._isOpen()) return;
    this._acked = this.received;
    this._ackOnly = 0;
    this.send(encodeFrame({ type: "extension", code: ACK, payload: encodeVarint(this.received) }));
  }

  /** Nothing read on the attached transport for stallTimeout ms: it is taken for broken (`_stalled()`). */
  _watchStall() {
    const timeout = this._options.stallTimeout;
    if (timeout == null || this.mode !== "RESUMABLE") return;
    this._clock.clearTimeout(this._stallTimer);
    this._stallTimer = this._clock.setTimeout(() => {
      this._stallTimer = null;
      if (this.mode !== "RESUMABLE") return;
      if (this._clock.now() - this._heard < timeout) this._watchStall();
      else if (this._resumable()) this._stalled();
    }, this._heard + timeout - this._clock.now());
  }

  _checkFull() {
    const held = this._out.held;
    const bound = this._options.bufferBytes;
    if (!this._full && held >= bound) {
      this._full = true;
    } else if (this._full && held <= bound / 2) {
      this._full = false;
      this.ondrain?.();
    }
  }
}

/** Why a session failed on the server's answer to its resume, in rstreams' words (§16.6). */
export const notResumed = (error) => new ProtocolError(`the session could not be resumed: ${bare(error)}`, error.section);

export class ResumableSession extends SessionStream {
  /** `link`: the first transport; `reopen()`: a promise of a new one to the same server. */
  constructor(link, reopen, options, clock) {
    super(options, clock);
    this._reopen = reopen;
    this.token = null;
    this.resumes = 0;
    this._attach(link);
  }

  close() {
    this._closing = true;
    this._link?.close();
    if (this.mode === "DETACHED") this._finish(null);
  }

  /** As close(), the transport attached aborted (Connection's close() unanswered, §9.1). */
  abort() {
    this._closing = true;
    if (this._link !== null) abortLink(this._link);
    if (this.mode === "DETACHED") this._finish(null);
  }

  // -- what the Connection tells the session -----------------------------------------------------
  /** The hellos are in: `active` says whether both listed resume; `isOpen()`: the Connection is OPEN. */
  settle(active, isOpen) {
    this._isOpen = isOpen;
    if (active) {
      this.mode = "RESUMABLE";
      this._watchStall();
    } else {
      this.mode = "PASSTHROUGH";
      this._out = new ReplayBuffer();
    }
  }

  /** A resume message inside the session (§16.2, §16.4); throws ProtocolError. */
  message(code, payload) {
    if (code === ACK) {
      this._acknowledged(payload);
    } else if (code === TOKEN && this.token === null) {
      if (payload.length < 1 || payload.length > MAX_TOKEN) {
        throw new ProtocolError(`resumeToken of ${payload.length} bytes; a token is 1 to ${MAX_TOKEN} bytes`, "§16.2");
      }
      this.token = payload.slice();
    } else {
      throw new ProtocolError(`message type 0x${code.toString(16)} is not allowed inside a session`, "§16.2");
    }
  }

  // -- transports --------------------------------------------------------------------------------
  _attach(link) {
    this._link = link;
    link.onbytes = (data) => this._input(link, data);
    link.onend = () => this._ended(link);
    link.ondrain = () => { if (!this._full) this.ondrain?.(); };
  }

  _input(link, data) {
    if (link !== this._link || this.mode === "CLOSED") return;
    this._heard = this._clock.now();
    this._pass(data);
  }

  _resumable() {
    return this.mode === "RESUMABLE" && !this._closing && this.token !== null && this._isOpen();
  }

  _ended(link) {
    if (link !== this._link) return;
    if (this._resumable()) this._broken();
    else this._finish();
  }

  _stalled() {
    this._broken();
  }

  _broken() {
    const old = this._link;
    this.mode = "DETACHED";
    this._clock.clearTimeout(this._stallTimer);
    this._stallTimer = null;
    old.onbytes = old.onend = old.ondrain = null;
    old.close();
    this._recover();
  }

  async _recover() {
    const { attempts, backoff, maxBackoff } = this._options;
    let wait = backoff;
    for (let attempt = 1; attempt <= attempts; attempt++) {
      if (attempt > 1) {
        await new Promise((resolve) => this._clock.setTimeout(resolve, wait));
        wait = Math.min(wait * 2, maxBackoff);
      }
      if (this.mode !== "DETACHED") return; // closed meanwhile
      let outcome;
      try {
        outcome = await this._attempt();
      } catch (error) {
        // a malformed or unexpected answer: the server broke the protocol, and would again (§16.2)
        if (error instanceof ProtocolError) return this._finish(notResumed(error));
        continue; // could not connect, or the new transport failed (or timed out): next attempt
      }
      if (this.mode !== "DETACHED") {
        outcome.link.close();
        return;
      }
      if (outcome.refused !== undefined) {
        outcome.link.close();
        return this._finish(new Error(`the server refused to resume the session: ${outcome.refused}`));
      }
      let replay;
      try {
        replay = this._out.replayFrom(outcome.position);
      } catch (error) {
        outcome.link.close();
        return this._finish(notResumed(error));
      }
      this.mode = "RESUMABLE";
      this.resumes += 1;
      this._attach(outcome.link);
      if (replay.length) outcome.link.send(concat(replay));
      this._heard = this._clock.now();
      this._watchStall();
      for (const data of outcome.rest) {
        if (data === null) this._ended(outcome.link);
        else if (data.byteLength) this._input(outcome.link, data);
      }
      if (!this._full) this.ondrain?.();
      return;
    }
    this._finish(new Error(`could not resume the session in ${attempts} attempt(s)`));
  }

  /** One attempt: a new transport, resume(token, received), then the server's hello and answer. */
  _attempt() {
    return new Promise((resolve, reject) => {
      let link = null;
      const timer = this._clock.setTimeout(() => {
        link?.close();
        reject(new Error("no answer to resume in time"));
      }, this._options.attemptTimeout);
      const settle = (callback, value) => {
        this._clock.clearTimeout(timer);
        if (link !== null) link.onbytes = link.onend = null;
        callback(value);
      };
      this._reopen().then((opened) => {
        link = opened;
        const answer = new ResumeAnswer();
        link.onend = () => settle(reject, new Error("the transport ended during the resume exchange"));
        link.onbytes = (data) => {
          let got;
          try {
            if (typeof data === "string") throw new Error("a text WebSocket message during the resume exchange (PROTOCOL.md §1)");
            got = answer.feed(data);
          } catch (error) {
            link.close();
            return settle(reject, error);
          }
          if (got === null) return undefined;
          if (got.refused !== undefined) return settle(resolve, { link, refused: got.refused });
          const rest = [got.rest];
          settle(resolve, { link, position: got.position, rest });
          link.onbytes = (late) => rest.push(late); // until the session attaches the link
          link.onend = () => rest.push(null);
          return undefined;
        };
        link.start?.();
        const token = this.token;
        link.send(encodeFrame({ type: "extension", code: RESUME,
          payload: concat([encodeVarint(token.length), token, encodeVarint(this.received)]) }));
      }, (error) => settle(reject, error));
    });
  }

  _finish(error = null) {
    if (this.mode === "CLOSED") return;
    this._clock.clearTimeout(this._ackTimer);
    this._clock.clearTimeout(this._stallTimer);
    this._out = new ReplayBuffer();
    const onend = this.onend;
    this.onend = null;
    if (error === null && this.mode !== "DETACHED") { // a plain end: the Connection may still answer on the transport (§9.3)
      this.mode = "PASSTHROUGH";
      onend?.(null);
      this.mode = "CLOSED";
      return;
    }
    this.mode = "CLOSED";
    onend?.(error);
  }
}
