// The JavaScript client's half of the interop matrix, shared by Node (driver.mjs) and Chromium
// (driver_browser.py): runCase(spec, rsio, emit, sha256) runs one case of a plan with the
// @rstreams/rsio module it is given and reports what its subscribers saw through emit(line).
//
// A case is one connection made with rsio.connect() (presenting the token, if any), on which the
// streams are subscribed one after the other, each following its script (rN request, wN wait for
// N elements in all, c cancel, t wait for the end). The lines are those of tests/interop/driver.py.
// The package has no int64 codec: with "codec": "int64" an element is read as a little-endian
// signed integer. sha256(bytes) resolves to the hex digest (node:crypto in Node, crypto.subtle in a
// browser); each stream's lines go out in the order its signals came, whatever the digests take.

const WAIT_MS = 20000;

const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function line(id, stream, event, fields = {}) {
  const out = id === null ? {} : { case: id };
  if (stream !== null) out.stream = stream;
  return { ...out, event, ...fields };
}

function recorder(id, stream, int64, rsio, emit, sha256) {
  const r = { count: 0, ended: false, subscription: null, wake: null, written: Promise.resolve() };
  const changed = () => { const wake = r.wake; r.wake = null; wake?.(); };
  // signals are reported in arrival order: each waits for the one before it (a digest may take a while)
  const report = (make) => { r.written = r.written.then(async () => emit(await make())); };
  Object.assign(r, {
    onSubscribe(subscription) { r.subscription = subscription; changed(); },
    onNext(bytes) {
      const data = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length).slice();
      report(async () => {
        const fields = { size: data.length, sha256: await sha256(data) };
        if (data.length <= 64) fields.hex = toHex(data);
        if (int64) fields.value = Number(new DataView(data.buffer, 0, 8).getBigInt64(0, true));
        return line(id, stream, "next", fields);
      });
      r.count += 1;
      changed();
    },
    onError(error) {
      if (error instanceof rsio.RemoteStreamError) report(() => line(id, stream, "error", { message: error.message }));
      else report(() => line(id, stream, "closed", { message: `${error.name}: ${error.message}` }));
      r.ended = true;
      changed();
    },
    onComplete() { report(() => line(id, stream, "complete")); r.ended = true; changed(); },
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

async function runStream(conn, id, index, stream, rsio, emit, sha256) {
  const r = recorder(id, index, stream.codec === "int64", rsio, emit, sha256);
  conn.subscribe(stream.name, r);
  try {
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
        await r.written;
        emit(line(id, index, "timeout", { step }));
        return false;
      }
    }
    return true;
  } finally {
    await r.written;
  }
}

/** Run one case of the plan; every line it reports goes to emit(), the last one {event: "done"}. */
export async function runCase(spec, rsio, emit, sha256) {
  const id = spec.id;
  let conn;
  try {
    conn = await rsio.connect(spec.url, { auth: spec.token ?? null, onerror: () => {} });
  } catch (error) {
    emit(line(id, null, "connect-failed", { message: `${error.name}: ${error.message}` }));
    emit(line(id, null, "done"));
    return;
  }
  emit(line(id, null, "connected"));
  try {
    for (const [index, stream] of spec.streams.entries()) {
      if (!(await runStream(conn, id, index, stream, rsio, emit, sha256))) break;
    }
  } finally {
    await conn.close().catch((error) => { if (!(error instanceof rsio.ConnectionClosedError)) throw error; });
  }
  emit(line(id, null, "done"));
}

/** The digest a browser offers (crypto.subtle: 127.0.0.1 is a secure context). */
export async function webSha256(bytes) {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}
