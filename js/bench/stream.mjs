// Elements per second from a Python `rstreams serve` into this package's client, beside rstreams'
// Python client reading the same publisher from the same server in the same run (alternating
// rounds, fresh connection each; medians). Run from js/ with the checkout's interpreter:
//
//   RSTREAMS_PYTHON=../.venv-test/bin/python node bench/stream.mjs [rounds]
//
// Scenarios: small elements (numbers, a few bytes) with a window of 256; 8-byte INT64 elements
// sent packed, with unbounded demand; 64 KiB elements (split into parts, §8) with a window of 16.
// Then the other direction: the Python client reading small elements from this package's
// listen() beside the same from the Python server (same publisher shape, same window).
import { loadavg } from "node:os";
import { connect, fromIterable, listen } from "../src/node.js";
import { FIXTURE, PYTHON, python, serve } from "../test/servers.mjs";

const rounds = Number(process.argv[2] ?? 3);
const SCENARIOS = [
  { label: "small elements, window 256", name: "numbers?n=300000", count: 300_000, window: 256 },
  { label: "packed INT64, demand 2**63-1", name: "ints?n=3000000", count: 3_000_000, window: null },
  { label: "64 KiB elements, window 16", name: "blobs?n=3000&size=65536", count: 3000, window: 16, bytes: 65536 },
];

/** The JS client: a Subscriber that keeps `window` requested (half refilled at a time), or unbounded. */
async function jsRate(url, { name, count, window }) {
  const conn = await connect(url);
  await conn.ready;
  const start = performance.now();
  let got = 0;
  await new Promise((resolve, reject) => {
    conn.subscribe(name, {
      onSubscribe(s) { this.s = s; s.request(window ?? Infinity); },
      onNext() { got += 1; if (window !== null && got % (window / 2) === 0) this.s.request(window / 2); },
      onError: reject,
      onComplete: resolve,
    });
  });
  const seconds = (performance.now() - start) / 1000;
  await conn.close();
  if (got !== count) throw new Error(`${name}: ${got} elements, expected ${count}`);
  return count / seconds;
}

const PY = `
import asyncio, sys, time
import rstreams
from rstreams.api import Subscriber
url, name, count, window = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
async def main():
    async with await rstreams.connect(url) as conn:
        done = asyncio.get_running_loop().create_future()
        class Sink:
            got = 0
            def on_subscribe(self, s):
                self.s = s
                s.request(window or 2**63 - 1)
            def on_next(self, item):
                self.got += 1
                if window and self.got % (window // 2) == 0:
                    self.s.request(window // 2)
            def on_error(self, e):
                done.set_exception(e)
            def on_complete(self):
                done.set_result(self.got)
        start = time.perf_counter()
        conn.publisher(name).subscribe(Sink())
        got = await done
        seconds = time.perf_counter() - start
        assert got == count, (got, count)
        print(count / seconds)
asyncio.run(main())
`;

async function pyRate(url, { name, count, window }) {
  const run = await python(["-c", PY, url, name, String(count), String(window ?? 0)]);
  if (run.code !== 0) throw new Error(run.stderr);
  return Number(run.stdout.trim());
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const fmt = (rate) => (rate >= 1e6 ? `${(rate / 1e6).toFixed(2)} M` : `${(rate / 1e3).toFixed(0)} k`);

if (PYTHON === null) throw new Error("set RSTREAMS_PYTHON to a python with rstreams installed");
const server = await serve("tcp://127.0.0.1:0", ["--publishers", FIXTURE]);
const load = [loadavg()[0]];
console.log(`node ${process.version}, ${rounds} rounds, server ${server.url}`);
console.log("| scenario | JS client el/s | Python client el/s | JS / Python |");
console.log("|---|---|---|---|");
try {
  for (const scenario of SCENARIOS) {
    const js = [];
    const py = [];
    for (let i = 0; i < rounds; i++) {
      js.push(await jsRate(server.url, scenario));
      py.push(await pyRate(server.url, scenario));
    }
    const ratios = js.map((rate, i) => rate / py[i]);
    const extra = scenario.bytes ? ` (${((median(js) * scenario.bytes) / 1e9).toFixed(2)} GB/s)` : "";
    console.log(`| ${scenario.label} | ${fmt(median(js))}${extra} | ${fmt(median(py))} | ${median(ratios).toFixed(2)}× |`);
    load.push(loadavg()[0]);
  }
} finally {
  await server.stop();
}
const small = SCENARIOS[0];
const jsServer = await listen("tcp://127.0.0.1:0", {
  publishers: { numbers: (p) => fromIterable((function* numbers() { for (let i = 0; i < Number(p.n); i++) yield String(i); })()) },
});
const pyServer = await serve("tcp://127.0.0.1:0", ["--publishers", FIXTURE]);
try {
  const fromJs = [];
  const fromPy = [];
  for (let i = 0; i < rounds; i++) {
    fromJs.push(await pyRate(jsServer.url, small));
    fromPy.push(await pyRate(pyServer.url, small));
  }
  const ratios = fromJs.map((rate, i) => rate / fromPy[i]);
  console.log("\n| Python client reading | from listen() (JS) el/s | from rstreams serve el/s | JS / Python |");
  console.log("|---|---|---|---|");
  console.log(`| ${small.label} | ${fmt(median(fromJs))} | ${fmt(median(fromPy))} | ${median(ratios).toFixed(2)}× |`);
  load.push(loadavg()[0]);
} finally {
  await jsServer.close();
  await pyServer.stop();
}
console.log(`load average (1 min) during the run: ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}`);
