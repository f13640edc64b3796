// The package as shipped: the TypeScript declarations declare exactly what the modules export.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import ts from "typescript";

const typesPath = (file) => new URL(`../types/${file}`, import.meta.url).pathname;
// only the exports' names are read here (tsc checks the types): no default library to load
const program = ts.createProgram([typesPath("rsio.d.ts")], { noLib: true, noEmit: true, types: [] });
const checker = program.getTypeChecker();

/** The value names (not types) a declaration file exports, re-exports included. */
function declaredValues(file) {
  const path = typesPath(file);
  const module = checker.getSymbolAtLocation(program.getSourceFile(path));
  return checker.getExportsOfModule(module)
    .filter((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return (target.flags & ts.SymbolFlags.Value) !== 0;
    })
    .map((symbol) => symbol.name).sort();
}

const runtime = async (file) => Object.keys(await import(`../src/${file}`)).sort();

test("types/rsio-wire.d.ts declares exactly what src/rsio-wire.js exports", async () => {
  assert.deepEqual(declaredValues("rsio-wire.d.ts"), await runtime("rsio-wire.js"));
});

test("types/rsio.d.ts declares exactly what src/node.js exports; src/rsio.js all but the Node-only ones", async () => {
  const declared = declaredValues("rsio.d.ts");
  assert.deepEqual(declared, await runtime("node.js"));
  const nodeOnly = ["listen", "socketTransport"];
  assert.deepEqual(declared.filter((name) => !nodeOnly.includes(name)), await runtime("rsio.js"));
});

test("package.json: an ES module whose exports and types point at files that exist", () => {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  assert.equal(pkg.type, "module");
  const targets = [pkg.types, ...Object.values(pkg.exports).flatMap((entry) =>
    typeof entry === "string" ? [entry] : Object.values(entry))];
  for (const target of targets) assert.doesNotThrow(() => readFileSync(new URL(`../${target}`, import.meta.url)), target);
  assert.match(pkg.engines.node, />=20/);
});
