// PROTOCOL.md §1.1: a refused URL is quoted as Python's repr() quotes it, whatever Unicode version
// the runtime knows. Compared with the reference interpreter (RSTREAMS_PYTHON, run once) for every
// code point, lone surrogates included, and for strings mixing quotes, backslashes and escapes;
// and the table is the one scripts/python_printable.py writes (its --check, for Java's too).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { PRINTABLE_UNICODE, pythonRepr } from "../src/rsio-url.js";
import { PYTHON, skip } from "./servers.mjs";

// stdin: a JSON list of strings; stdout: Unicode's version, then repr(chr(c)) for every code
// point c, then the repr of each string, one a line (a repr holds no newline)
const SOURCE = `
import json, sys, unicodedata
strings = json.load(sys.stdin)
lines = [unicodedata.unidata_version, *(repr(chr(c)) for c in range(0x110000)), *map(repr, strings)]
sys.stdout.buffer.write("\\n".join(lines).encode("utf-8", "surrogatepass"))
`;

const STRINGS = [
  "", "'", '"', "'\"", "it's", 'say "hi"', "it's \"quoted\"", "back\\slash", "\\'", "tab\there\r\n",
  "a\u200bb", "\u00a0\u00ad\u0085", "caf\u00e9 \u{1f600} \u{e0001} \u{10ffff}", "\ud800x\udfff", "\ud83d\ude00\ud83d",
  "ws://h:1/\u0378?\u{1fae0}", "\u2028\u2029\u3000 \u061c",
];

/** Python's output for STRINGS, split into lines. */
function reference() {
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, ["-c", SOURCE], { encoding: "utf8", maxBuffer: 64 << 20, timeout: 60_000 },
      (error, stdout) => (error ? reject(error) : resolve(stdout.split("\n"))));
    child.stdin.end(JSON.stringify(STRINGS));
  });
}

test("pythonRepr quotes every code point, and mixed strings, as the reference Python's repr()", { skip }, async (t) => {
  const [unicode, ...reprs] = await reference();
  if (unicode !== PRINTABLE_UNICODE) {
    t.skip(`${PYTHON} has Unicode ${unicode}, the table Unicode ${PRINTABLE_UNICODE} (Python 3.11's)`);
    return;
  }
  assert.equal(reprs.length, 0x110000 + STRINGS.length);
  const differ = [];
  for (let c = 0; c < 0x110000; c++) {
    const ours = pythonRepr(String.fromCodePoint(c));
    if (ours !== reprs[c]) differ.push(`U+${c.toString(16).toUpperCase()}: ${ours} != ${reprs[c]}`);
  }
  STRINGS.forEach((text, i) => {
    const ours = pythonRepr(text);
    if (ours !== reprs[0x110000 + i]) differ.push(`${JSON.stringify(text)}: ${ours} != ${reprs[0x110000 + i]}`);
  });
  assert.deepEqual(differ.slice(0, 20), [], `${differ.length} differ`);
});

test("scripts/python_printable.py --check finds both bindings' tables up to date", { skip }, async (t) => {
  const script = fileURLToPath(new URL("../../scripts/python_printable.py", import.meta.url));
  const { status, output } = await new Promise((resolve) => {
    execFile(PYTHON, [script, "--check"], { encoding: "utf8", timeout: 60_000 },
      (error, stdout, stderr) => resolve({ status: error ? error.code : 0, output: stdout + stderr }));
  });
  const unicode = /Unicode (\S+)/.exec(output)?.[1];
  if (unicode !== PRINTABLE_UNICODE) {
    t.skip(`${PYTHON} has Unicode ${unicode}, the table Unicode ${PRINTABLE_UNICODE} (Python 3.11's)`);
    return;
  }
  assert.equal(status, 0, output);
  assert.match(output, /rsio-url\.js: up to date/);
  assert.match(output, /PythonRepr\.java: up to date/);
});
