// The JavaScript side of JsonInteropTest (PROTOCOL.md §17.3, application/json), with @rstreams/rsio's Node entry:
//
//   node json_peer.mjs read URL    reads "json" at URL decoded by its announced type and prints the
//                                  values as one line of JSON (then exits 0)
//   node json_peer.mjs serve URL   serves VALUES as "values" with withContentType(..., "application/json"),
//                                  prints "serving on URL" and runs until killed
import { connect, fromIterable, listen, withContentType } from "../../../../../js/src/node.js";

const VALUES = [{ a: [1, "\u00e9", null, true], b: { c: 1.5 } }, "\u{1f600} </", -7, []];

const [mode, url] = process.argv.slice(2);
if (mode === "read") {
  const conn = await connect(url);
  const values = [];
  for await (const value of conn.stream("json", { decode: "auto" })) values.push(value);
  await conn.close();
  process.stdout.write(`${JSON.stringify(values)}\n`);
} else {
  const server = await listen(url, {
    publishers: { values: () => withContentType(fromIterable(VALUES), "application/json") },
  });
  process.stdout.write(`serving on ${server.url}\n`);
  process.on("SIGTERM", () => server.close().then(() => process.exit(0)));
}
