// This package's adapter for the RS.io client conformance suite (docs/conformance.md,
// "Testing a client"):
//
//   python -m rstreams.conformance.clients \
//       --client "node js/scripts/conformance-adapter.mjs {url} {publisher} {script}"
//
// It connects with @rstreams/rsio, subscribes to PUBLISHER, runs SCRIPT's steps (rN request,
// wN wait for N elements, c cancel, t wait for the end, q goodbye and exit) and prints what
// its subscriber sees, one JSON object per line; status 2 when it cannot run the script.
import { RemoteStreamError, connect } from "../src/node.js";

const emit = (event, fields = {}) => process.stdout.write(`${JSON.stringify({ event, ...fields })}\n`);
const hex = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("hex");

/** "r3 w3 c q" as [["r", 3], ["w", 3], ["c", 0], ["q", 0]]; throws naming a bad step. */
export function parseScript(script) {
  return script.split(/\s+/).filter(Boolean).map((step) => {
    const [kind, count] = [step[0], step.slice(1)];
    if ("rw".includes(kind) && /^[1-9]\d*$/.test(count)) return [kind, Number(count)];
    if ("ctq".includes(kind) && count === "") return [kind, 0];
    throw new RangeError(`bad script step ${JSON.stringify(step)}: use rN, wN, c, t or q`);
  });
}

/** The subscriber: prints every signal and lets the script wait for a count or the end. */
function recorder() {
  const r = { count: 0, ended: false, subscription: null, wake: null };
  const changed = () => { const wake = r.wake; r.wake = null; wake?.(); };
  Object.assign(r, {
    onSubscribe(subscription) { r.subscription = subscription; },
    onNext(bytes) { r.count += 1; emit("next", { hex: hex(bytes) }); changed(); },
    onError(error) {
      if (error instanceof RemoteStreamError) emit("error", { message: error.message });
      else emit("closed", { message: `${error.name}: ${error.message}` });
      r.ended = true;
      changed();
    },
    onComplete() { emit("complete"); r.ended = true; changed(); },
    async until(count) {
      while (!r.ended && (count === null || r.count < count)) await new Promise((resolve) => { r.wake = resolve; });
    },
  });
  return r;
}

async function run(url, publisher, steps) {
  let conn;
  try {
    conn = await connect(url, { onerror: () => {} });
  } catch (error) {
    emit("closed", { message: `connect failed: ${error.name}: ${error.message}` });
    return;
  }
  const r = recorder();
  conn.subscribe(publisher, r);
  for (const [kind, count] of steps) {
    if (kind === "r") r.subscription.request(count);
    else if (kind === "w") await r.until(count);
    else if (kind === "c") r.subscription.cancel();
    else if (kind === "t") await r.until(null);
    else if (kind === "q") break;
  }
  await conn.close();
}

const args = process.argv.slice(2);
if (args.length !== 3) {
  process.stderr.write("usage: node conformance-adapter.mjs URL PUBLISHER SCRIPT\n");
  process.exit(2);
}
let steps;
try {
  steps = parseScript(args[2]);
} catch (error) {
  process.stderr.write(`conformance-adapter: ${error.message}\n`);
  process.exit(2);
}
await run(args[0], args[1], steps);
emit("exit");
