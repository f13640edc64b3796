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

let child;
let url;
let stderr = "";

before(async () => {
  child = spawn(process.execPath, [SERVER], { stdio: ["pipe", "pipe", "pipe"] });
  child.stderr.on("data", (chunk) => { stderr += chunk; });
  url = await new Promise((resolve, reject) => {
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
      const found = /serving on (tcp:\/\/\S+)/.exec(stdout);
      if (found !== null) resolve(found[1]);
    });
    child.once("exit", (code) => reject(new Error(`blocks-server exited with ${code}: ${stderr}`)));
  });
});

after(async () => {
  if (child.exitCode !== null) return;
  const exited = new Promise((resolve) => child.once("exit", resolve));
  child.stdin.end();
  await exited;
});

test("a window of 256 elements of 64 KiB from the server: every element, no goodbye", { timeout: 120000 }, async () => {
  const conn = await connect(url);
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
  assert.equal(stderr, "");
});

test("300 requested at once of 64 KiB elements the server's publisher emits inside request(n)", { timeout: 120000 }, async () => {
  const conn = await connect(url);
  try {
    const count = await new Promise((resolve, reject) => {
      let got = 0;
      conn.subscribe(`blocks?n=300&size=${SIZE}`, {
        onSubscribe(s) { s.request(300); },
        onNext(element) { if (element.length === SIZE) got += 1; },
        onError: reject,
        onComplete: () => resolve(got),
      });
    });
    assert.equal(count, 300);
  } finally {
    await conn.close();
  }
});

test("an input of 64 KiB elements to the server's channel, which grants a window of 256", { timeout: 120000 }, async () => {
  const conn = await connect(url);
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
  assert.equal(stderr, "");
});
