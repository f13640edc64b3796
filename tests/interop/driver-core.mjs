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
//
// Each wait (the connection, onSubscribe, a count, the end) is a hang guard of the case's "wait"
// seconds (WAIT_S unless the plan says) of own time, not of wall time: clock(pids) starts a wait's
// clock over the case's server ("pids" in the plan) and returns a function that gives the seconds
// it counts since (own-time.mjs in Node: wall time less what the threads waited for a CPU; the
// browser's is given by its driver). A loaded machine that serves the server late is not taken for
// one that hangs; a wait ends after HARD times its limit in wall time whatever the load.

export const WAIT_S = 20;
export const HARD = 30;
const LOOK_MS = 1000; // the longest wall time between two looks at the clock

/** The clock where no other is given: wall time. */
export const wallClock = () => {
  const start = performance.now();
  return () => (performance.now() - start) / 1000;
};

const toHex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

function line(id, stream, event, fields = {}) {
  const out = id === null ? {} : { case: id };
  if (stream !== null) out.stream = stream;
  return { ...out, event, ...fields };
}

/**
 * Resolves true once `done()` holds, false once `limit` seconds of `clock`'s time (or HARD times that
 * of wall time) passed; `park(resolve)` hands over the function that wakes it to look at `done()`
 * again. The clock is read only when a look's timer fires, never per wake.
 */
async function bounded(done, park, clock, limit) {
  if (done()) return true;
  const own = clock();
  const start = performance.now();
  let left = limit;
  while (!done()) {
    if (left <= 0) return false;
    let timer;
    let fired = false;
    await new Promise((resolve) => {
      park(resolve);
      timer = setTimeout(() => { fired = true; resolve(); }, Math.min(left * 1000, LOOK_MS));
    });
    clearTimeout(timer);
    if (fired) left = Math.min(limit - own(), HARD * limit - (performance.now() - start) / 1000);
  }
  return true;
}

/** `promise`'s value, or a TimeoutError once it took `limit` seconds of `clock`'s time (bounded). */
async function within(promise, clock, limit) {
  let settled = false;
  let wake = null;
  const watched = promise.finally(() => { settled = true; wake?.(); });
  watched.catch(() => {}); // (its error is raised below, when awaited)
  if (!(await bounded(() => settled, (resolve) => { wake = resolve; }, clock, limit))) {
    throw Object.assign(new Error(`not done within ${limit} s of own time`), { name: "TimeoutError" });
  }
  return watched;
}

function recorder(id, stream, int64, rsio, emit, sha256, clock, limit) {
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
    /** Resolves true once `done()` holds, false once the wait's bound is over. */
    until(done) {
      return bounded(done, (resolve) => { r.wake = resolve; }, clock, limit);
    },
  });
  return r;
}

async function runStream(conn, id, index, stream, rsio, emit, sha256, clock, limit) {
  const r = recorder(id, index, stream.codec === "int64", rsio, emit, sha256, clock, limit);
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

/**
 * Run one case of the plan; every line it reports goes to emit(), the last one {event: "done"}.
 * clock(pids) starts a wait's clock (above); the default is wall time. Resolves false when it gave
 * up on a connection that never came (its attempt is left pending: the caller may have to exit).
 */
export async function runCase(spec, rsio, emit, sha256, clock = wallClock) {
  const id = spec.id;
  const limit = spec.wait ?? WAIT_S;
  const caseClock = () => clock(spec.pids ?? []);
  let conn;
  try { // (the client's own handshake timer of wall time off: the bound is the one above)
    const connecting = rsio.connect(spec.url, { auth: spec.token ?? null, onerror: () => {}, handshakeTimeout: null });
    conn = await within(connecting, caseClock, limit);
  } catch (error) {
    emit(line(id, null, "connect-failed", { message: `${error.name}: ${error.message}` }));
    emit(line(id, null, "done"));
    return error.name !== "TimeoutError";
  }
  emit(line(id, null, "connected"));
  try {
    for (const [index, stream] of spec.streams.entries()) {
      if (!(await runStream(conn, id, index, stream, rsio, emit, sha256, caseClock, limit))) break;
    }
  } finally {
    await conn.close().catch((error) => { if (!(error instanceof rsio.ConnectionClosedError)) throw error; });
  }
  emit(line(id, null, "done"));
  return true;
}

/** The digest a browser offers (crypto.subtle: 127.0.0.1 is a secure context). */
export async function webSha256(bytes) {
  return toHex(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)));
}
