// Compiled by `npm run typecheck` (tsc --noEmit), never run: the declarations accept what the
// README and docs/web.md show, and reject misuse (each @ts-expect-error must be an error).
import {
  ConnectionClosedError, ERROR_CODES, RESUME_DEFAULTS, RemoteStreamError, UNBOUNDED, codeName, connect, listen, fixedSize,
  fromAsyncIterable, fromIterable, withContentType, type Connection, type Publisher, type Subscription,
} from "@rstreams/rsio";
import { decodeAll, encodeFrame, type Frame } from "@rstreams/rsio/wire";

async function* readings(): AsyncGenerator<string> {
  yield JSON.stringify({ sensor: "a", value: 1 });
}

export async function usage(): Promise<void> {
  const conn: Connection = await connect("ws://127.0.0.1:8765/rsio", {
    auth: { user: "ann", password: "pw" },
    keepalive: null,
    resume: { attempts: 3, stallTimeout: null },
    publishers: {
      "events/{kind}": (params, path) => fromIterable([`${path}: ${params.kind}`]),
      readings: fromAsyncIterable(readings()),
    },
  });
  await conn.ready;
  let subscription: Subscription | undefined;
  const sub = conn.subscribe("results", {
    onSubscribe(s) { subscription = s; s.request(16); },
    onNext(bytes) { const n: number = bytes.length; subscription?.request(n > 0 ? 1 : 1n); },
    onError(error) { if (error instanceof RemoteStreamError) console.log(error.message); },
  });
  const outstanding: bigint = sub.outstanding;
  conn.subscribe("vault", {}, { auth: "per-subscription token" });
  sub.request(UNBOUNDED);
  sub.request(Infinity);
  for await (const row of conn.stream<{ sensor: string }>("results", { window: 32, decode: "json" })) {
    console.log(row.sensor, outstanding);
  }
  for await (const line of conn.stream("lines", { decode: "text" })) console.log(line.toUpperCase());
  const answer: string = await conn.request("out?latest", { decode: "text" });
  const reason = await conn.close("bye");
  if (reason instanceof ConnectionClosedError) console.log(reason.reason, answer);
  const frame: Frame = { type: "request", subscriber: 1, demand: 5n };
  decodeAll(encodeFrame(frame));
  const typed: Publisher<number> = fromIterable([1, 2, 3]);
  typed.subscribe({ onNext(n) { console.log(n.toFixed(1)); } });

  for await (const upper of conn.channel("upper", ["a", new Uint8Array([98])], { decode: "text" })) console.log(upper.length);
  conn.channel("upper", readings()).subscribe({ onNext(bytes) { console.log(bytes.length); } });
  // @ts-expect-error a channel's input is a Publisher or an iterable, not a number
  conn.channel("upper", 5);
  const resumes: number = conn.resumes;
  console.log(resumes, RESUME_DEFAULTS.bufferBytes);
  // @ts-expect-error resume options are numbers
  await connect("tcp://127.0.0.1:1", { resume: { attempts: "3" } });
  const server = await listen("tcp://127.0.0.1:0", {
    publishers: { "echo/{x}": (params, _path, connection) => fromIterable([params.x, String(connection.state)]) },
    onconnection: (connection) => { connection.subscribe("status", {}); },
  });
  console.log(server.url, server.connections.size);
  await server.close();
  const guarded = await listen("ws://127.0.0.1:0/rsio", {
    authenticate: async (credentials) => (typeof credentials === "string" ? credentials : credentials.user),
    authorize: (principal, name) => name.startsWith(`users/${String(principal)}/`),
    authRequired: false,
    origins: ["https://app.example:8443"],
  });
  await guarded.close();
  // @ts-expect-error origins is a list, even of one ("*": every page)
  await listen("ws://127.0.0.1:0/rsio", { origins: "*" });
  // @ts-expect-error the accepting side checks credentials, it presents none
  await listen("tcp://127.0.0.1:0", { auth: "t" });
  // @ts-expect-error publisher names are strings
  conn.subscribe(7, {});
  // @ts-expect-error auth is a token or {user, password}
  await connect("tcp://127.0.0.1:1", { auth: ["ann", "pw"] });
  // @ts-expect-error demand is a request's count, not text
  sub.request("5");
  // @ts-expect-error a publisher offered to the peer is a Publisher or a factory
  await connect("tcp://127.0.0.1:1", { publishers: { bad: 42 } });
}

/** The extensions' options and calls (docs/web.md): metadata, content types, codes, messages, channels. */
export async function extensions(): Promise<void> {
  const conn = await connect("wss://example.test/rsio", {
    tls: { ca: "PEM" }, unreadTimeout: 30, handshakeTimeout: null, disabledExtensions: [6], maxMessagesInFlight: 4,
    handlers: { "events/{kind}": (message) => console.log(message.params.kind, message.payload.length) },
    channels: { upper: (input, params, path, connection, metadata) => (metadata.traceparent ? input : null) },
  });
  conn.subscribe("typed", {
    onContentType(mediaType, subscription) { console.log(mediaType, subscription.contentType); },
    onError(error) {
      if (error instanceof RemoteStreamError && error.code === ERROR_CODES.UNKNOWN_PUBLISHER) console.log(error.codeName);
    },
  }, { metadata: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", "x-tenant": "acme" } });
  const auto: unknown = await conn.request("typed", { decode: "auto" });
  await conn.send("events/click", "hi", { wait: false });
  const credit: bigint = conn.messageCredit;
  console.log(auto, credit, codeName(7));
  const server = await listen("ws://127.0.0.1:0/rsio", {
    publishers: {
      ints: fixedSize(fromIterable([new Uint8Array(8)]), 8),
      rows: withContentType(fromIterable([JSON.stringify({ a: 1 })]), "application/json"),
    },
    idleTimeout: 60, maxConnections: 100, resume: { sessionTimeout: 30_000, stallTimeout: null },
    authenticate: () => "anyone",
    // @ts-expect-error authorize answers at once (true allows); only authenticate may be async
    authorize: async () => true,
  });
  console.log(server.sessions?.size);
  // @ts-expect-error maxConnections is a number
  await listen("tcp://127.0.0.1:0", { maxConnections: "10" });
}
