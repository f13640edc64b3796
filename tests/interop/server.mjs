// The JavaScript side of the interop matrix as the publisher: node tests/interop/server.mjs TOKEN URL...
//
// @rstreams/rsio's listen() accepts connections on each URL (tcp:// or ws://), requires TOKEN (§15)
// and serves the names the Python and Java servers of the matrix offer, written here from
// docs/conformance.md: counter?from=A&to=B (little-endian int64, offered with elementSize 8 so
// that it travels packed), conformance/large?size=S&n=N, conformance/error?after=K,
// conformance/infinite?tag=T and conformance/stats?tag=T. Its ws:// server accepts every page's
// origin (the browser driver's). It prints "serving on URL" for each
// once it listens and runs until killed.
import { fixedSize, listen } from "../../js/src/node.js";

const ERROR_TEXT = "conformance/error: the publisher failed on purpose";

/** Element `index` of `size` bytes: the low min(size, 8) bytes of index big-endian, then 0..250 cycling. */
function elementBytes(index, size) {
  const out = new Uint8Array(size);
  const head = Math.min(size, 8);
  let rest = BigInt(index);
  for (let k = head - 1; k >= 0; k--) { out[k] = Number(rest & 0xffn); rest >>= 8n; }
  for (let k = 8; k < size; k++) out[k] = (k - 8) % 251;
  return out;
}

/** Elements make(0), make(1), ... (count < 0: endless), failing after `failAfter` if >= 0; counts into `stats`. */
function indexed(make, { count = -1, failAfter = -1, stats = null } = {}) {
  return {
    subscribe(subscriber) {
      if (stats) stats.subscribed += 1;
      let demand = 0n;
      let index = 0;
      let done = false;
      let emitting = false;
      subscriber.onSubscribe({
        request(n) {
          if (done) return;
          demand += BigInt(n);
          if (stats) stats.requested += Number(n);
          if (emitting) return; // the loop below serves it (rule 3.3)
          emitting = true;
          while (!done) {
            if (index === count) { done = true; subscriber.onComplete(); break; }
            if (index === failAfter) { done = true; subscriber.onError(new Error(ERROR_TEXT)); break; }
            if (demand === 0n) break;
            demand -= 1n;
            if (stats) stats.pulled += 1;
            subscriber.onNext(make(index++));
          }
          emitting = false;
        },
        cancel() {
          if (!done && stats) stats.cancelled += 1;
          done = true;
        },
      });
    },
  };
}

const tagged = new Map();
const statsOf = (tag) => {
  if (!tagged.has(tag)) tagged.set(tag, { subscribed: 0, requested: 0, pulled: 0, cancelled: 0 });
  return tagged.get(tag);
};
const int = (params, key, fallback) => (params[key] === undefined ? fallback : Number.parseInt(params[key], 10));

const publishers = {
  counter: (params) => {
    const from = int(params, "from", 0);
    const to = int(params, "to", from + 10);
    const int64 = (i) => {
      const out = new Uint8Array(8);
      new DataView(out.buffer).setBigInt64(0, BigInt(from + i), true);
      return out;
    };
    return fixedSize(indexed(int64, { count: Math.max(0, to - from) }), 8);
  },
  "conformance/large": (params) => {
    const size = int(params, "size", 1 << 20);
    return indexed((i) => elementBytes(i, size), { count: int(params, "n", 1) });
  },
  "conformance/error": (params) => indexed((i) => elementBytes(i, 8), { failAfter: int(params, "after", 0) }),
  "conformance/infinite": (params) => {
    const size = int(params, "size", 8);
    return indexed((i) => elementBytes(i, size), { stats: statsOf(params.tag ?? "") });
  },
  "conformance/stats": (params) => {
    const json = JSON.stringify(statsOf(params.tag ?? ""));
    return indexed(() => new TextEncoder().encode(json), { count: 1 });
  },
};

const [token, ...urls] = process.argv.slice(2);
const servers = [];
for (const url of urls) {
  const server = await listen(url, {
    publishers,
    authenticate: (credentials) => (credentials === token ? "matrix" : null),
    onerror: (error) => process.stderr.write(`${error?.stack ?? error}\n`),
    origins: ["*"], // the browser driver's page comes from its own file server, on a port of its own
  });
  servers.push(server);
  process.stdout.write(`serving on ${server.url}\n`);
}
process.on("SIGTERM", () => Promise.all(servers.map((s) => s.close())).then(() => process.exit(0)));
