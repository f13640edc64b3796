// Session resumption on the accepting side (PROTOCOL.md §16) for listen(): a session outlives
// its transport, and a client that lost its transport takes the session up on a new one.
//
// Theory of operation. With `resume`, every accepted transport gets a ServerSession, which
// its Connection takes for its transport; the Connection sends its serverHello at once, as
// on every transport (§4.1). The session holds the transport's input until the first byte
// says what the transport is: 0x89 (resume) makes it a resume attempt for another session,
// anything else a new session, which is only then announced to the listener (`onadmit`). A
// new session is UNDECIDED until the hellos are in: with resume active on both sides it
// becomes RESUMABLE, sends its token (16 random bytes) and registers it with the listener's
// Sessions; otherwise PASSTHROUGH, keeping no buffer. What the shared SessionStream does:
// the replay buffer of everything the Connection wrote (bounded by `bufferBytes`: at the
// bound the session is not writable, so publishers pause), acknowledgements both ways.
//
// A resume attempt reads `resume(token, position)` (its payload at most 256 bytes, §16.7);
// the Connection made for that transport is dropped unseen (`onabandon`) and the session the
// token names answers on the new transport, after the hello already sent there, with
// `resumed(received)` and its buffer from `position` on, then carries on there; an old
// transport still attached is closed first. An unknown token, a position outside the buffer,
// or bytes after the resume before the answer are refused with `resumeRefused` (the last two
// also end the session, §16.3). A transport that breaks under a RESUMABLE session that is
// open (no goodbye sent or received) detaches it: the session waits `sessionTimeout` ms for
// a resume, then ends as after an end without goodbye (§9.3). So does a transport from which
// nothing was read for `stallTimeout` ms (taken for dead, as rstreams servers do). The idle
// timeout (§14.2) of a resumable session drops the transport instead of saying goodbye
// (`dropLink`).

import { EXTENSIONS, ProtocolError, concat, decodeVarint, encodeFrame, encodeVarint } from "./rsio-wire.js";
import { ReplayBuffer, SessionStream, abortLink } from "./rsio-resume.js";
import { pythonG } from "./rsio-url.js";

const { resumeToken: TOKEN, resume: RESUME, resumed: RESUMED, resumeRefused: REFUSED, resumeAck: ACK } =
  EXTENSIONS.resume.types;
const MAX_RESUME_PAYLOAD = 256; // bytes of resume's payload read before any session is found (§16.7)
const TOKEN_BYTES = 16;
const MAX_TOKEN = 64;
const utf8 = new TextEncoder();
const RESUME_REASON_BYTES = 200; // resumeRefused's reason, cut between characters (§16.7 allows 256), as rstreams

const hex2 = (code) => code.toString(16).padStart(2, "0");

/** A ProtocolError's text without its "(PROTOCOL.md §N)". */
const bare = (error) => error.message.replace(/ \(PROTOCOL\.md §[0-9.]+\)$/, "");

/** Send resumeRefused(reason), at most RESUME_REASON_BYTES of it, and close `link`. */
function refuseResume(link, reason) {
  let bytes = utf8.encode(reason);
  if (bytes.length > RESUME_REASON_BYTES) {
    let end = RESUME_REASON_BYTES;
    while (end > 0 && (bytes[end] & 0xc0) === 0x80) end -= 1; // not inside a character
    bytes = bytes.subarray(0, end);
  }
  link.send(extension(REFUSED, bytes));
  link.close();
}

/** The defaults of rstreams.net.Resume on a server (PROTOCOL.md §16.7), in ms and bytes. */
export const SERVER_RESUME_DEFAULTS = Object.freeze({
  sessionTimeout: 30_000, // how long a broken session waits for its resume
  bufferBytes: 4 * 1024 * 1024,
  stallTimeout: 45_000, // nothing read this long: the transport is dropped, the session waits; null: never
  ackDelay: 20,
});

/** listen()'s `resume` (true, or an object of SERVER_RESUME_DEFAULTS' keys), checked. */
export function serverResumeOptions(resume) {
  const options = { ...SERVER_RESUME_DEFAULTS, ...(resume === true ? {} : resume) };
  for (const [key, value] of Object.entries(options)) {
    if (!(key in SERVER_RESUME_DEFAULTS)) {
      throw new TypeError(`listen()'s resume has no option ${JSON.stringify(key)}; it takes `
        + `${Object.keys(SERVER_RESUME_DEFAULTS).join(", ")}`);
    }
    const least = key === "ackDelay" ? 0 : 1;
    if (key === "stallTimeout" && value === null) continue;
    if (!Number.isFinite(value) || value < least) throw new RangeError(`resume.${key} must be a number >= ${least}, got ${value}`);
  }
  return options;
}

export const SYSTEM_CLOCK = Object.freeze({
  now: () => Date.now(),
  setTimeout(callback, ms) {
    const timer = setTimeout(callback, ms);
    timer.unref?.();
    return timer;
  },
  clearTimeout: (timer) => clearTimeout(timer),
});

const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function extension(code, payload) {
  return encodeFrame({ type: "extension", code, payload });
}

/** The resumable sessions of one listener, by token. */
export class Sessions {
  constructor(options, clock = SYSTEM_CLOCK) {
    this.options = options;
    this.clock = clock;
    this._byToken = new Map(); // hex of the token -> ServerSession
  }

  /** The session for a newly accepted transport. */
  session(link) {
    return new ServerSession(link, this);
  }

  /** How many sessions can be resumed now (attached or waiting). */
  get size() {
    return this._byToken.size;
  }

  _register(session) {
    const token = new Uint8Array(TOKEN_BYTES);
    crypto.getRandomValues(token);
    this._byToken.set(hex(token), session);
    return token;
  }

  _forget(session) {
    if (session.token !== null && this._byToken.get(hex(session.token)) === session) this._byToken.delete(hex(session.token));
  }

  /** A resume(token, at) read as the first message of `link`; `rest`: bytes that came after it. */
  _resume(link, token, at, rest) {
    const session = this._byToken.get(hex(token));
    const refuse = (reason) => {
      refuseResume(link, reason);
      return reason;
    };
    if (session === undefined) return refuse("unknown or expired session token (PROTOCOL.md §16.3)");
    if (rest.length > 0) {
      session._fail(refuse("bytes after resume, before resumed (PROTOCOL.md §16.3)"));
      return null;
    }
    let replay;
    try {
      replay = session._out.replayFrom(at);
    } catch (error) { // "position P is outside the replay buffer (A..B): ..." (§16.3)
      session._fail(refuse(error.message));
      return null;
    }
    session._reattach(link, replay);
    return null;
  }
}

/** One session on the accepting side; its Connection sees it as its transport. */
export class ServerSession extends SessionStream {
  constructor(link, sessions) {
    super(sessions.options, sessions.clock);
    this._sessions = sessions;
    this.token = null;
    this.resumes = 0;
    this._doorway = true; // the first input decides: a new session, or a resume of another
    this._first = new Uint8Array(0);
    this._waitTimer = null;
    this.onadmit = null; // the transport opens a new session: announce its Connection
    this.onabandon = null; // the transport resumed another session: drop this one's Connection unseen
    this._attach(link);
  }

  close() {
    this._closing = true;
    this._sessions._forget(this);
    const link = this._link;
    if (this.mode === "DETACHED" || link === null) this._finish(null);
    else link.close();
  }

  /** As close(), the transport attached aborted (listen()'s close() past CLOSE_TIMEOUT_MS). */
  abort() {
    if (this.mode === "CLOSED") return; // a resume of another session: that one has the link now
    this._closing = true;
    this._sessions._forget(this);
    const link = this._link;
    if (this.mode === "DETACHED" || link === null) this._finish(null);
    else abortLink(link);
  }

  /** The hellos are in: `active` says whether both listed resume; `isOpen()`: the Connection is OPEN. */
  settle(active, isOpen) {
    this._isOpen = isOpen;
    if (!active) {
      this.mode = "PASSTHROUGH";
      this._out = new ReplayBuffer();
      return;
    }
    this.mode = "RESUMABLE";
    this.token = this._sessions._register(this);
    this.send(extension(TOKEN, this.token)); // once, as soon as the clientHello is read (§16.1)
    this._watchStall();
  }

  /** A resume message inside the session (§16.2, §16.4); throws ProtocolError. */
  message(code, payload) {
    if (code !== ACK) {
      throw new ProtocolError(`message type 0x${code.toString(16)} is not allowed inside a session`, "§16.2");
    }
    this._acknowledged(payload);
  }

  /** The idle timeout (§14.2): true when the session takes it as a broken transport (§16.3). */
  dropLink() {
    if (this.mode === "DETACHED") return true;
    if (!this._resumable()) return false;
    this._detach();
    return true;
  }

  _resumable() {
    return this.mode === "RESUMABLE" && !this._closing && this._isOpen();
  }

  // -- transports --------------------------------------------------------------------------------
  _attach(link) {
    this._link = link;
    link.onbytes = (data) => this._input(link, data);
    link.onend = () => this._ended(link);
    link.ondrain = () => { if (link === this._link && !this._full) this.ondrain?.(); };
  }

  _input(link, data) {
    if (link !== this._link || this.mode === "CLOSED") return;
    if (this._doorway && this._closing) return; // said goodbye before its first byte: no session, no resume
    this._heard = this._clock.now();
    if (!this._doorway) {
      this._pass(data);
      return;
    }
    if (typeof data === "string") { // a text message: not RS.io, the Connection says so (§1)
      this._admit(data);
      return;
    }
    this._first = concat([this._first, new Uint8Array(data.buffer ?? data, data.byteOffset ?? 0, data.byteLength)]);
    if (this._first[0] !== RESUME) {
      const first = this._first;
      this._first = null;
      this._admit(first);
      return;
    }
    this._readResume(link);
  }

  _admit(data) {
    this._doorway = false;
    this.onadmit?.();
    this._pass(data);
  }

  /**
   * The first bytes are a resume (0x89): once it is complete, the session it names answers. A
   * malformed one is refused with rstreams' words, checked in its order (wire/_resume.py).
   */
  _readResume(link) {
    const bytes = this._first;
    let length;
    try {
      length = decodeVarint(bytes, 1);
    } catch (error) {
      return this._turnAway(link, `message 0x${hex2(RESUME)}: ${bare(error)} (PROTOCOL.md §16.2)`);
    }
    if (length === null) return undefined; // more to come
    if (length.value > BigInt(MAX_RESUME_PAYLOAD)) {
      return this._turnAway(link, `message 0x${hex2(RESUME)} announces a ${length.value}-byte payload; at most `
        + `${MAX_RESUME_PAYLOAD} in the resume exchange (PROTOCOL.md §16.7)`);
    }
    const end = length.next + Number(length.value);
    if (bytes.length < end) return undefined; // more to come
    const payload = bytes.subarray(length.next, end);
    const varint = (at, what) => {
      let got;
      try {
        got = decodeVarint(payload, at);
      } catch (error) {
        throw new Error(`${what}: ${bare(error)}`);
      }
      if (got === null) throw new Error(`${what}: the payload ends inside a varint`);
      return got;
    };
    let token;
    let at;
    try {
      const size = varint(0, "resume token length");
      if (size.value < 1n || size.value > BigInt(MAX_TOKEN)) {
        throw new Error(`resume token length ${size.value} is not 1 to ${MAX_TOKEN} bytes`);
      }
      if (size.next + Number(size.value) > payload.length) throw new Error(`resume token length ${size.value} runs past the payload`);
      const tokenEnd = size.next + Number(size.value);
      token = payload.slice(size.next, tokenEnd);
      const got = varint(tokenEnd, "resume position");
      if (got.next !== payload.length) throw new Error(`resume: ${payload.length - got.next} byte(s) after the position`);
      at = got.value;
    } catch (error) {
      return this._turnAway(link, `${error.message} (PROTOCOL.md §16.2)`);
    }
    this._abandon();
    this._sessions._resume(link, token, at, bytes.subarray(end));
    return undefined;
  }

  _turnAway(link, reason) {
    this._abandon();
    refuseResume(link, reason);
  }

  /** This transport is not a session of its own: its Connection goes, unseen. */
  _abandon() {
    this.mode = "CLOSED";
    this._link = null;
    this._first = null;
    this.onabandon?.();
  }

  _ended(link) {
    if (link !== this._link) return;
    if (this._doorway && this._first?.length) { // a resume cut short: §9.3's truncated message
      this._turnAway(link, `input ended inside resume (${this._first.length} bytes of an incomplete message) (PROTOCOL.md §9.3)`);
      return;
    }
    if (this._resumable()) this._detach();
    else this._finish(null);
  }

  _stalled() {
    this._detach();
  }

  _detach() {
    const old = this._link;
    this.mode = "DETACHED";
    this._link = null;
    this._clock.clearTimeout(this._ackTimer);
    this._ackTimer = null;
    this._clock.clearTimeout(this._stallTimer);
    this._stallTimer = null;
    old.onbytes = old.onend = old.ondrain = null;
    old.close();
    const wait = this._options.sessionTimeout;
    this._waitTimer = this._clock.setTimeout(() => {
      this._waitTimer = null;
      if (this.mode === "DETACHED") {
        this._finish(new Error(`the session was not resumed within ${pythonG(wait / 1000)} s (PROTOCOL.md §16.3)`));
      }
    }, wait);
  }

  /** A resume named this session: answer on `link` and carry on there (§16.3). */
  _reattach(link, replay) {
    if (this.mode !== "DETACHED") { // a stalled link still attached: it goes first
      const old = this._link;
      old.onbytes = old.onend = old.ondrain = null;
      old.close();
    }
    this._clock.clearTimeout(this._waitTimer);
    this._waitTimer = null;
    this.mode = "RESUMABLE";
    this.resumes += 1;
    this._attach(link);
    this._heard = this._clock.now();
    this._watchStall();
    link.send(concat([extension(RESUMED, encodeVarint(this.received)), ...replay]));
    if (!this._full) this.ondrain?.();
  }

  /** The session cannot go on (§16.3): it ends as after a transport ended without goodbye. */
  _fail(reason) {
    if (this._link !== null) {
      const old = this._link;
      old.onbytes = old.onend = old.ondrain = null;
      old.close();
    }
    this._finish(new Error(`the session failed: ${reason}`));
  }

  _finish(error) {
    if (this.mode === "CLOSED") return;
    this._sessions._forget(this);
    this._clock.clearTimeout(this._ackTimer);
    this._clock.clearTimeout(this._waitTimer);
    this._clock.clearTimeout(this._stallTimer);
    const onend = this.onend;
    this.onend = null;
    const answerable = error === null && this._link !== null;
    if (answerable) { // a plain end: the Connection may still answer on the transport (§9.3)
      this.mode = "PASSTHROUGH";
      this._out = new ReplayBuffer();
      onend?.(null);
    }
    this.mode = "CLOSED";
    this._out = new ReplayBuffer();
    if (!answerable) onend?.(error);
  }
}
