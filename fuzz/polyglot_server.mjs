// The JavaScript server under fuzz/fuzz_polyglot.py: node fuzz/polyglot_server.mjs [URL [--resume]]
//
// @rstreams/rsio's listen() with the names fuzz/fuzz_net.py's inputs use (numbers: the bytes 0, 1,
// 2; big: one 100 000-byte element, split into parts; packed: 8-byte elements sent packed), a
// message handler (log) and a channel (echo, upper-casing its input), the limits and timeouts of
// fuzz_net's server; it subscribes to each client's `up` (so it receives elements too). It prints
// "serving on URL" once it listens, writes every error reported to its onerror to stderr (the
// driver counts them as failures) but for the messages it drops (§20.4), and runs until killed.
// With --resume it keeps sessions (§16) for 0.5 s after their transport breaks, buffering 64 KiB.
import { fixedSize, fromIterable, listen } from "../js/src/node.js";

const upper = (input) => ({
  subscribe(subscriber) {
    input.subscribe({
      onSubscribe: (s) => subscriber.onSubscribe(s),
      onNext: (element) => subscriber.onNext(new TextEncoder().encode(new TextDecoder().decode(element).toUpperCase())),
      onError: (error) => subscriber.onError(error),
      onComplete: () => subscriber.onComplete(),
    });
  },
});

/** Takes the client's elements one at a time, forever. */
function drain() {
  let subscription = null;
  return {
    onSubscribe(s) { subscription = s; s.request(4); },
    onNext() { subscription.request(1); },
    onError() {},
    onComplete() {},
  };
}

let messages = 0;
const server = await listen(process.argv[2] ?? "tcp://127.0.0.1:0", {
  publishers: {
    numbers: () => fromIterable([new Uint8Array([0]), new Uint8Array([1]), new Uint8Array([2])]),
    big: () => fromIterable([new Uint8Array(100_000)]),
    packed: () => fixedSize(fromIterable(Array.from({ length: 100 }, (_, i) => new Uint8Array(8).fill(i))), 8),
    messages: () => fromIterable([String(messages)]),
  },
  handlers: { log: () => { messages += 1; } },
  channels: { echo: (input) => upper(input) },
  onconnection: (conn) => conn.publisher("up").subscribe(drain()),
  limits: {
    maxElementSize: 256 * 1024, maxReassemblyBytes: 512 * 1024, maxPartsInFlight: 8, maxSubscriptions: 64,
    maxStringLength: 64 * 1024,
  },
  handshakeTimeout: 5,
  unreadTimeout: 1,
  resume: process.argv[3] === "--resume" ? { sessionTimeout: 500, bufferBytes: 64 * 1024 } : undefined,
  onerror: (error) => {
    if (/^message to '.*' dropped/.test(error?.message)) return; // §20.4: reported, by design
    process.stderr.write(`reported: ${error?.stack ?? error}\n`);
  },
});
process.stdout.write(`serving on ${server.url}\n`);
process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
