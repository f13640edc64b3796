// Copies the browser modules of this package into the Python package's static files
// (src/rstreams/web/static/), which the live page and `rstreams serve --web` serve. The copies
// are byte-identical; test/static.test.mjs and tests/web/test_js_client.py fail when they are not.
//
//   npm run sync           copy
//   npm run sync -- --check   only compare (exit 1 naming the files that differ)
import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const BROWSER_MODULES = [
  "rsio.js", "rsio-wire.js", "rsio-subscribe.js", "rsio-publish.js", "rsio-resume.js", "rsio-codes.js",
  "rsio-messages.js", "rsio-content.js", "rsio-channels.js", "rsio-metadata.js",
];
const source = new URL("../src/", import.meta.url);
const target = new URL("../../src/rstreams/web/static/", import.meta.url);

/** The browser modules whose static copy differs from the source (missing counts as differing). */
export function stale() {
  return BROWSER_MODULES.filter((name) => {
    let copy;
    try {
      copy = readFileSync(new URL(name, target));
    } catch {
      return true;
    }
    return !copy.equals(readFileSync(new URL(name, source)));
  });
}

if (fileURLToPath(import.meta.url) === resolve(process.argv[1] ?? "")) {
  const check = process.argv.includes("--check");
  const differing = stale();
  if (check && differing.length) {
    console.error(`src/rstreams/web/static/ differs from js/src/ in ${differing.join(", ")}: run npm run sync in js/`);
    process.exit(1);
  }
  for (const name of check ? [] : differing) {
    writeFileSync(new URL(name, target), readFileSync(new URL(name, source)));
    console.log(`copied js/src/${name} -> src/rstreams/web/static/${name}`);
  }
}
