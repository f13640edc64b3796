// Test helpers: a scripted transport (and a Connection over one), a manual clock, a recording
// Subscriber.
import { Connection } from "../src/rsio.js";
import { FrameDecoder, encodeFrame } from "../src/rsio-wire.js";

/**
 * A Connection's transport without a network: records the frames the endpoint sends (decoded
 * with `elementSize` for onNext), lets a test feed the peer's frames, and lets it say whether
 * the transport takes writes (`writable`; `drain()` says it does again).
 */
export class FakeTransport {
  constructor() {
    this.sent = [];
    this.closed = false;
    this.writable = true;
    this.waitingForDrain = 0;
    this.onbytes = null;
    this.onend = null;
    this.ondrain = null;
    this.elementSizes = new Map(); // from the onSubscribe frames sent: how to read their onNext
    this._decoder = new FrameDecoder((id) => this.elementSizes.get(id) ?? 0);
  }

  send(data) {
    this._decoder.push(data);
    for (let frame = this._decoder.next(); frame !== null; frame = this._decoder.next()) {
      if (frame.type === "onSubscribe") this.elementSizes.set(frame.subscriber, frame.element_size);
      this.sent.push(frame);
    }
    if (this._decoder.pending) throw new Error(`a send ended inside a frame (${this._decoder.pending} bytes)`);
  }

  close() {
    if (this.closed) return;
    this.closed = true;
    queueMicrotask(() => this.onend?.());
  }

  waitWritable() {
    this.waitingForDrain += 1;
  }

  drain() {
    this.writable = true;
    this.ondrain?.();
  }

  /** The peer's frames (objects, or raw bytes as a Uint8Array), each as one chunk of input. */
  feed(...frames) {
    for (const frame of frames) {
      const bytes = frame instanceof Uint8Array ? frame : encodeFrame(frame, frame.elementSize ?? 0);
      this.onbytes(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
    }
  }

  /** Sent frames of one type. */
  of(type, code) {
    return this.sent.filter((f) => f.type === type && (code === undefined || f.code === code));
  }
}

/**
 * A client Connection over a FakeTransport, for scripting the peer: `ws.feed(...)` its frames,
 * `ws.sent` what the Connection wrote. No pings, errors of subscribers kept quiet; `options`
 * as Connection takes them.
 */
export function scripted(options = {}) {
  const ws = new FakeTransport();
  const conn = new Connection(ws, { onerror: () => {}, keepalive: null, ...options });
  return { ws, conn };
}

/** A clock whose time moves only when the test says: `advance(ms)` runs the timers that fall due. */
export class ManualClock {
  constructor() {
    this.time = 0;
    this.timers = new Map();
    this.nextId = 1;
  }

  now() {
    return this.time;
  }

  setTimeout(callback, ms) {
    const id = this.nextId++;
    this.timers.set(id, { at: this.time + Math.max(0, ms), callback });
    return id;
  }

  clearTimeout(id) {
    this.timers.delete(id);
  }

  advance(ms) {
    const end = this.time + ms;
    for (;;) {
      let due = null;
      for (const [id, timer] of this.timers) {
        if (timer.at <= end && (due === null || timer.at < due[1].at)) due = [id, timer];
      }
      if (due === null) break;
      this.timers.delete(due[0]);
      this.time = due[1].at;
      due[1].callback();
    }
    this.time = end;
  }
}

/** A Subscriber that requests `initial` in onSubscribe and records what arrives (as text). */
export function recorder(initial = 0) {
  const r = { items: [], error: null, completed: false, subscription: null };
  r.onSubscribe = (s) => { r.subscription = s; if (initial) s.request(initial); };
  r.onNext = (bytes) => r.items.push(new TextDecoder().decode(bytes));
  r.onError = (e) => { r.error = e; };
  r.onComplete = () => { r.completed = true; };
  return r;
}

/** Let queued microtasks (the endpoint's flush) and one macrotask turn run. */
export const tick = () => new Promise((resolve) => setImmediate(resolve));
