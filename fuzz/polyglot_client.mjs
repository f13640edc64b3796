// The JavaScript client under fuzz/fuzz_polyglot_client.py: node fuzz/polyglot_client.mjs
//
// Reads one URL a line from stdin, once it has printed "ready". For each, @rstreams/rsio's connect() (no pings, serving `up`
// to the server, the small limits of fuzz_net's server) makes a request/response on `numbers`,
// streams `stream` and sends a message to `log`, all at once, then waits for all three and for
// the connection to end; it then prints one JSON line: each call's outcome ({ok} or the error's
// name and message), what the connection reported to its onerror, and why it ended. The driver
// judges the line; a call that never ends is a hang it sees as a missing line. Anything thrown
// out of the package (an uncaught exception, an unhandled rejection) ends the process: a crash.
import { createInterface } from "node:readline";
import { connect, fromIterable } from "../js/src/node.js";

const LIMITS = {
  maxElementSize: 256 * 1024, maxReassemblyBytes: 512 * 1024, maxPartsInFlight: 8, maxSubscriptions: 64,
  maxStringLength: 64 * 1024,
};

const describe = (error) => (error == null ? null : { name: error.name ?? typeof error, message: String(error.message ?? error) });

async function settle(call) {
  try {
    await call();
    return { ok: true };
  } catch (error) {
    return describe(error);
  }
}

async function converse(url) {
  const reported = [];
  let conn;
  try {
    conn = await connect(url, {
      keepalive: null,
      limits: LIMITS,
      publishers: { up: () => fromIterable([new TextEncoder().encode("up")]) },
      onerror: (error) => reported.push(describe(error)),
    });
  } catch (error) {
    return { connect: describe(error) };
  }
  const calls = await Promise.all([
    settle(() => conn.request("numbers")),
    settle(async () => { for await (const _ of conn.stream("stream", { window: 4 })) { /* drained */ } }),
    settle(() => conn.send("log", "message")),
  ]);
  await conn.closed;
  return { calls, reported, closed: describe(conn.closeReason) };
}

process.stdout.write("ready\n");
for await (const line of createInterface({ input: process.stdin })) {
  if (!line.trim()) continue;
  process.stdout.write(`${JSON.stringify(await converse(line.trim()))}\n`);
}
