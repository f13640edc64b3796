// 64 KiB elements (the split threshold: the largest written whole) with a window of 256, to and
// from listen() in a process of its own over TCP (test/fixtures/blocks-server.mjs). 256 such
// elements are 16 MiB, MAX_UNSENT: a server that asked its publisher for the whole window
// before the first element told their size, and wrote it in one turn, would say goodbye to a
// client that reads ("peer not reading"), as the Java server once did.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { connect as tcpConnect } from "node:net";
import { once } from "node:events";
import { connect, fromIterable } from "../src/node.js";
import { concat, encodeFrame } from "../src/rsio-wire.js";

const SERVER = fileURLToPath(new URL("fixtures/blocks-server.mjs", import.meta.url));
const SIZE = 64 * 1024;
const COUNT = 600; // more than two windows

/** Start blocks-server.mjs with `args`: {url, stderr(), stop()}. */
async function start(args = []) {
  const child = spawn(process.execPath, [SERVER, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  child.stdout.on("data", (chunk) => { stdout += chunk; });
  /** The first match of `pattern` in what the server printed, once it has printed it. */
  const printed = (pattern) => new Promise((resolve, reject) => {
    const look = () => {
      const found = pattern.exec(stdout);
      if (found === null) return false;
      child.stdout.off("data", look);
      child.off("exit", exited);
      resolve(found);
      return true;
    };
    const exited = (code) => reject(new Error(`blocks-server exited with ${code}: ${stderr}`));
    if (look()) return;
    child.stdout.on("data", look);
    child.once("exit", exited);
  });
  const url = (await printed(/serving on (tcp:\/\/\S+)/))[1];
  return {
    url,
    printed,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.stdin.end();
      await exited;
    },
  };
}

/** Subscribe to `name` at `url` requesting `count` at once: how many elements of `size` bytes came. */
async function takeAtOnce(url, name, count, size) {
  const conn = await connect(url);
  try {
    return await new Promise((resolve, reject) => {
      let got = 0;
      conn.subscribe(name, {
        onSubscribe(s) { s.request(count); },
        onNext(element) { if (element.length === size) got += 1; },
        onError: reject,
        onComplete: () => resolve(got),
      });
    });
  } finally {
    await conn.close();
  }
}

let server;
before(async () => { server = await start(); });
after(async () => { await server?.stop(); });

test("a window of 256 elements of 64 KiB from the server: every element, no goodbye", { timeout: 120000 }, async () => {
  const conn = await connect(server.url);
  try {
    let count = 0;
    for await (const element of conn.stream(`blocks?n=${COUNT}&size=${SIZE}`, { window: 256 })) {
      assert.equal(element.length, SIZE);
      count += 1;
    }
    assert.equal(count, COUNT);
  } finally {
    await conn.close();
  }
  assert.equal(server.stderr(), "");
});

test("300 requested at once of 64 KiB elements the server's publisher emits inside request(n)", { timeout: 120000 }, async () => {
  assert.equal(await takeAtOnce(server.url, `blocks?n=300&size=${SIZE}`, 300, SIZE), 300);
});

test("an input of 64 KiB elements to the server's channel, which grants a window of 256", { timeout: 120000 }, async () => {
  const conn = await connect(server.url);
  try {
    function* blocks() {
      for (let i = 0; i < COUNT; i += 1) yield new Uint8Array(SIZE);
    }
    const answers = [];
    for await (const answer of conn.channel("sink", fromIterable(blocks()), { window: 256, decode: "text" })) {
      answers.push(answer);
    }
    assert.deepEqual(answers, [`${COUNT} ${COUNT * SIZE}`]);
  } finally {
    await conn.close();
  }
  assert.equal(server.stderr(), "");
});

test("a server whose splitThreshold is 1 MiB asks for fewer elements that large at a time", { timeout: 120000 }, async () => {
  // 32 elements of 1 MiB written whole in one turn would be twice MAX_UNSENT
  const large = await start([String(1 << 20)]);
  try {
    assert.equal(await takeAtOnce(large.url, `blocks?n=64&size=${1 << 20}`, 64, 1 << 20), 64);
    assert.equal(large.stderr(), "");
  } finally {
    await large.stop();
  }
});

// Elements that grow: 1000 of 8 bytes, then 1 MiB ones (written whole with splitThreshold 1
// MiB). A pull sized by the small ones (32) is answered with large ones inside request(n): 24
// MiB in one turn, which passed MAX_UNSENT and said goodbye to a client that was reading.
const MIB = 1 << 20;

test("elements that grow from 8 bytes to 1 MiB, read with a window of 256: every one, no goodbye", { timeout: 120000 }, async () => {
  const large = await start([String(MIB)]);
  try {
    const conn = await connect(large.url);
    let count = 0;
    let bytes = 0;
    try {
      for await (const element of conn.stream(`grow?n=1000&m=300&size=${MIB}`, { window: 256 })) {
        count += 1;
        bytes += element.length;
      }
    } finally {
      await conn.close();
    }
    assert.deepEqual([count, bytes], [1300, 1000 * 8 + 300 * MIB]);
    assert.equal(large.stderr(), "");
  } finally {
    await large.stop();
  }
});

test("elements that grow to 1 MiB, to a peer that never reads: idle timeout, the unsent bytes bounded", { timeout: 60000 }, async () => {
  const large = await start([String(MIB), "1"]); // idleTimeout 1 s
  const { hostname, port } = new URL(large.url);
  const socket = tcpConnect(Number(port), hostname);
  socket.pause(); // never reads
  try {
    await once(socket, "connect");
    socket.write(concat([Uint8Array.of(0x01, 0x00, 0x00), // clientHello, no extensions
      encodeFrame({ type: "subscribe", publisher: `grow?n=100&m=300&size=${MIB}`, subscriber: 1, initial_demand: 256n })]));
    const [, peak, reason] = await large.printed(/closed (\d+) (.*)/);
    assert.match(reason, /idle timeout/);
    // the transport's high-water mark, one turn's PULL_BYTES and one element: far below MAX_UNSENT
    assert.ok(Number(peak) < 4 * MIB, `${peak} bytes unsent at once`);
  } finally {
    socket.destroy();
    await large.stop();
  }
});
