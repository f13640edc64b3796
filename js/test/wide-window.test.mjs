// 64 KiB elements (the split threshold: the largest written whole) with a window of 256, to and
// from listen() in a process of its own over TCP (test/fixtures/blocks-server.mjs). 256 such
// elements are 16 MiB, MAX_UNSENT: a server that asked its publisher for the whole window
// before the first element told their size, and wrote it in one turn, would say goodbye to a
// client that reads ("peer not reading"), as the Java server once did.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { connect, fromIterable } from "../src/node.js";

const SERVER = fileURLToPath(new URL("fixtures/blocks-server.mjs", import.meta.url));
const SIZE = 64 * 1024;
const COUNT = 600; // more than two windows

/** Start blocks-server.mjs with `args`: {url, stderr(), stop()}. */
async function start(args = []) {
  const child = spawn(process.execPath, [SERVER, ...args], { stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  const url = await new Promise((resolve, reject) => {
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const found = /serving on (tcp:\/\/\S+)/.exec(stdout);
      if (found !== null) resolve(found[1]);
    });
    child.once("exit", (code) => reject(new Error(`blocks-server exited with ${code}: ${stderr}`)));
  });
  return {
    url,
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
