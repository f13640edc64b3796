// The JavaScript client's driver for the interop matrix: node tests/interop/driver.mjs PLAN.json
//
// The same plan and output lines as tests/interop/driver.py (see there): each case is one
// connection made with @rstreams/rsio's connect() (presenting the token, if any), on which the
// streams are subscribed one after the other, each following its script (rN request, wN wait
// for N elements in all, c cancel, t wait for the end). The package has no int64 codec: with
// "codec": "int64" the driver reads each 8-byte element as a little-endian signed integer.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { ConnectionClosedError, RemoteStreamError, connect } from "../../js/src/node.js";

const WAIT_MS = 20000;

const emit = (id, stream, event, fields = {}) => {
  const line = id === null ? {} : { case: id };
  if (stream !== null) line.stream = stream;
  process.stdout.write(`${JSON.stringify({ ...line, event, ...fields })}\n`);
};

function recorder(id, stream, int64) {
  const r = { count: 0, ended: false, subscription: null, wake: null };
  const changed = () => { const wake = r.wake; r.wake = null; wake?.(); };
  Object.assign(r, {
    onSubscribe(subscription) { r.subscription = subscription; changed(); },
    onNext(bytes) {
      const data = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
      const fields = { size: data.length, sha256: createHash("sha256").update(data).digest("hex") };
      if (data.length <= 64) fields.hex = data.toString("hex");
      if (int64) fields.value = Number(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0, true));
      emit(id, stream, "next", fields);
      r.count += 1;
      changed();
    },
    onError(error) {
      if (error instanceof RemoteStreamError) emit(id, stream, "error", { message: error.message });
      else emit(id, stream, "closed", { message: `${error.name}: ${error.message}` });
      r.ended = true;
      changed();
    },
    onComplete() { emit(id, stream, "complete"); r.ended = true; changed(); },
    /** Resolves true once `done()` holds, false after WAIT_MS. */
    async until(done) {
      const deadline = Date.now() + WAIT_MS;
      while (!done()) {
        const left = deadline - Date.now();
        if (left <= 0) return false;
        let timer;
        await new Promise((resolve) => { r.wake = resolve; timer = setTimeout(resolve, left); });
        clearTimeout(timer);
      }
      return true;
    },
  });
  return r;
}

async function runStream(conn, id, index, stream) {
  const r = recorder(id, index, stream.codec === "int64");
  conn.subscribe(stream.name, r);
  for (const step of stream.script.trim().split(/\s+/)) {
    const [kind, count] = [step[0], Number(step.slice(1) || 0)];
    let ok = true;
    if (kind === "r" || kind === "c") {
      ok = await r.until(() => r.subscription !== null);
      if (ok && kind === "r") r.subscription.request(count);
      else if (ok) r.subscription.cancel();
    } else if (kind === "w") ok = await r.until(() => r.ended || r.count >= count);
    else if (kind === "t") ok = await r.until(() => r.ended);
    else throw new RangeError(`bad script step ${step}`);
    if (!ok) {
      emit(id, index, "timeout", { step });
      return false;
    }
  }
  return true;
}

async function runCase(spec) {
  const id = spec.id;
  let conn;
  try {
    conn = await connect(spec.url, { auth: spec.token ?? null, onerror: () => {} });
  } catch (error) {
    emit(id, null, "connect-failed", { message: `${error.name}: ${error.message}` });
    emit(id, null, "done");
    return;
  }
  emit(id, null, "connected");
  try {
    for (const [index, stream] of spec.streams.entries()) {
      if (!(await runStream(conn, id, index, stream))) break;
    }
  } finally {
    await conn.close().catch((error) => { if (!(error instanceof ConnectionClosedError)) throw error; });
  }
  emit(id, null, "done");
}

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
for (const spec of plan.cases) await runCase(spec);
emit(null, null, "exit");
