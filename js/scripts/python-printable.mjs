// Writes the table of the characters Python's repr() prints as they are (str.isprintable(), from
// the Unicode data of Python's unicodedata) into src/rsio-url.js, between its "python-printable"
// markers, so that the binding quotes a refused URL exactly as the Python reference does, whatever
// Unicode version the JavaScript runtime knows. Run it with the reference's interpreter:
//
//   RSTREAMS_PYTHON=../.venv-test/bin/python node scripts/python-printable.mjs
//
// test/python-repr.test.mjs compares the quoting with that Python's for every code point.
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

// Alternating run lengths from code point 0: not printable, printable, not printable, ...
const SOURCE = `
import json, sys, unicodedata
runs, current, length = [], False, 0
for code in range(0x110000):
    printable = chr(code).isprintable()
    if printable != current:
        runs.append(length)
        current, length = printable, 0
    length += 1
runs.append(length)
json.dump({"unicode": unicodedata.unidata_version, "python": sys.version.split()[0], "runs": runs}, sys.stdout)
`;

/** {unicode, python, runs} of the interpreter `python`. */
export function printableRuns(python) {
  return JSON.parse(execFileSync(python, ["-c", SOURCE], { encoding: "utf8" }));
}

const BEGIN = "// BEGIN python-printable";
const END = "// END python-printable";

/** The generated lines of src/rsio-url.js for `table` ({unicode, python, runs}), markers included. */
export function region({ unicode, python, runs }) {
  const text = runs.map((n) => n.toString(36)).join(",");
  const lines = [];
  for (let at = 0; at < text.length;) {
    let end = Math.min(at + 100, text.length);
    if (end < text.length) end = text.lastIndexOf(",", end) + 1;
    lines.push(text.slice(at, end));
    at = end;
  }
  return [
    `${BEGIN} (written by scripts/python-printable.mjs from Python ${python}; do not edit)`,
    "// The lengths, in base 36, of the alternating runs of code points from 0 that Python's repr()",
    `// escapes and prints as they are (str.isprintable(), Unicode ${unicode}), first an escaped one.`,
    `export const PRINTABLE_UNICODE = "${unicode}";`,
    "const PRINTABLE_RUNS = \"\"",
    ...lines.map((line, i) => `  + "${line}"${i === lines.length - 1 ? ";" : ""}`),
    END,
  ].join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const python = process.env.RSTREAMS_PYTHON || fileURLToPath(new URL("../../.venv-test/bin/python", import.meta.url));
  const file = fileURLToPath(new URL("../src/rsio-url.js", import.meta.url));
  const source = readFileSync(file, "utf8");
  const begin = source.indexOf(BEGIN);
  const end = source.indexOf(END);
  if (begin < 0 || end < begin) throw new Error(`${file}: no ${BEGIN} ... ${END} region`);
  const table = printableRuns(python);
  writeFileSync(file, source.slice(0, begin) + region(table) + source.slice(end + END.length));
  console.log(`${file}: ${table.runs.length} runs, Unicode ${table.unicode} (Python ${table.python})`);
}
