// The README's example, as written there, against the `rstreams serve` its text names.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { pathToFileURL } from "node:url";
import { REPO, serve, skip } from "./servers.mjs";

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const README_URL = "tcp://127.0.0.1:9000";

describe("js/README.md's example", { skip }, () => {
  let server;
  let dir;
  before(async () => {
    const command = /`rstreams serve tcp:\/\/127\.0\.0\.1:9000((?: [^`\s]+)*)`/.exec(README);
    assert.ok(command, "js/README.md no longer says which rstreams serve its example reads");
    server = await serve("tcp://127.0.0.1:0", command[1].trim().split(" ").filter(Boolean));
    dir = mkdtempSync(join(tmpdir(), "rsio-readme-"));
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("runs against that server: the sensor's five readings, the channel's answers", async () => {
    const block = /```js\n(.*?)```/s.exec(README);
    assert.ok(block, "js/README.md has no ```js block");
    assert.ok(block[1].includes(README_URL), `the example no longer connects to ${README_URL}`);
    const node = pathToFileURL(join(REPO, "js", "src", "node.js")).href;
    const script = join(dir, "example.mjs");
    writeFileSync(script, block[1].replaceAll('"@rstreams/rsio"', JSON.stringify(node)).replaceAll(README_URL, server.url));
    const child = spawn(process.execPath, [script], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => { stdout += chunk; });
    child.stderr.on("data", (chunk) => { stderr += chunk; });
    const code = await new Promise((resolve) => child.once("close", resolve));
    assert.equal(code, 0, stderr);
    assert.equal(stderr, "");
    const lines = stdout.split("\n");
    assert.equal(lines.filter((line) => line.startsWith("{ sensor: '7', seq: ")).length, 5, stdout);
    assert.deepEqual(lines.filter((line) => line === "A" || line === "B"), ["A", "B"], stdout);
  });
});

describe("js/README.md's units of the time options", () => {
  it("names every time option of resume among the milliseconds, and the defaults are milliseconds", async () => {
    const { RESUME_DEFAULTS } = await import("../src/rsio.js");
    const { SERVER_RESUME_DEFAULTS } = await import("../src/sessions.js");
    const sentence = /`resume`'s times \(([^)]*)\) are milliseconds/.exec(README.replace(/\s+/g, " "));
    assert.ok(sentence, "js/README.md no longer says which options are milliseconds");
    const times = new Set([...Object.keys(RESUME_DEFAULTS), ...Object.keys(SERVER_RESUME_DEFAULTS)]
      .filter((key) => key !== "attempts" && key !== "bufferBytes"));
    for (const key of times) assert.ok(sentence[1].includes(`\`${key}\``), `${key} is not named there`);
    assert.equal(RESUME_DEFAULTS.stallTimeout, 45_000); // 45 s (§16.7), in ms
    assert.equal(SERVER_RESUME_DEFAULTS.sessionTimeout, 30_000); // 30 s, in ms
  });
});

describe("js/README.md's listen() example", () => {
  it("runs as written: a ws:// server of the ticks, which a Node client reads", async () => {
    const block = [...README.matchAll(/```js\n(.*?)```/gs)].map((m) => m[1]).find((code) => code.includes("listen("));
    assert.ok(block, "js/README.md lost its listen() example");
    assert.ok(block.includes("ws://127.0.0.1:9000/rsio"), "its server no longer listens on ws://127.0.0.1:9000/rsio");
    const { connect, listen, fromIterable } = await import("../src/node.js");
    const run = new Function("listen", "fromIterable",
      `return (async () => { ${block.replace("ws://127.0.0.1:9000/rsio", "ws://127.0.0.1:0/rsio")}; return server; })();`);
    const server = await run(listen, fromIterable);
    try {
      assert.match(server.url, /^ws:\/\/127\.0\.0\.1:\d+\/rsio$/);
      const conn = await connect(server.url);
      const ticks = [];
      for await (const tick of conn.stream("ticks", { decode: "text" })) ticks.push(tick);
      await conn.close();
      assert.deepEqual(ticks, ["1", "2"]);
    } finally {
      await server.close();
    }
  });
});

describe("docs/web.md's resume defaults", () => {
  const WEB = readFileSync(new URL("../../docs/web.md", import.meta.url), "utf8").replace(/\s+/g, " ");
  const seconds = (ms) => `${ms / 1000} s`;
  const mib = (bytes) => `${bytes / 2 ** 20} MiB`;

  it("states the client's RESUME_DEFAULTS", async () => {
    const { RESUME_DEFAULTS: d } = await import("../src/rsio.js");
    for (const said of [
      `Attempts are bounded (${d.attempts}, backoff from ${d.backoff} ms doubling to ${seconds(d.maxBackoff)})`,
      `\`stallTimeout\` (${seconds(d.stallTimeout)})`,
      `bounded by \`bufferBytes\` (${mib(d.bufferBytes)})`,
      `else ${d.ackDelay} ms after anything arrived`,
    ]) assert.ok(WEB.includes(said), `docs/web.md no longer says: ${said}`);
  });

  it("states listen()'s SERVER_RESUME_DEFAULTS", async () => {
    const { SERVER_RESUME_DEFAULTS: d } = await import("../src/sessions.js");
    const said = `${seconds(d.sessionTimeout)}, ${mib(d.bufferBytes)}, ${seconds(d.stallTimeout)}, ${d.ackDelay} ms by default`;
    assert.ok(WEB.includes(said), `docs/web.md no longer says: ${said}`);
  });
});

describe("js/README.md's install from a checkout", () => {
  it("npm pack makes a package whose entry points load by name in a project of one's own", async () => {
    const { execFileSync } = await import("node:child_process");
    const { mkdirSync, symlinkSync } = await import("node:fs");
    const command = /```sh\n(cd js && npm pack)\s+# -> (\S+)\n/.exec(README);
    assert.ok(command, "js/README.md no longer packs the package with npm pack");
    const dir = mkdtempSync(join(tmpdir(), "rsio-pack-"));
    try {
      const npm = process.platform === "win32" ? "npm.cmd" : "npm";
      execFileSync(npm, ["pack", "--silent", "--pack-destination", dir], { cwd: join(REPO, "js") });
      const home = join(dir, "project", "node_modules", "@rstreams", "rsio");
      mkdirSync(home, { recursive: true });
      execFileSync("tar", ["-xzf", join(dir, command[2]), "-C", home, "--strip-components=1"]);
      symlinkSync(join(REPO, "js", "node_modules", "ws"), join(dir, "project", "node_modules", "ws")); // its one dependency, not fetched again
      const script = join(dir, "project", "example.mjs");
      writeFileSync(script, [
        'import { connect, listen, fromIterable } from "@rstreams/rsio";',
        'import { encodeFrame } from "@rstreams/rsio/wire";',
        "console.log([connect, listen, fromIterable, encodeFrame].map((f) => typeof f).join(' '));",
        "const server = await listen('ws://127.0.0.1:0/rsio', { publishers: { ticks: () => fromIterable(['1']) } });",
        "const conn = await connect(server.url);",
        "for await (const tick of conn.stream('ticks', { decode: 'text' })) console.log(tick);",
        "await conn.close(); await server.close();",
      ].join("\n"));
      const out = execFileSync(process.execPath, [script], { cwd: join(dir, "project"), encoding: "utf8", timeout: 30_000 });
      assert.deepEqual(out.trim().split("\n"), ["function function function function", "1"]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("docs/web.md's connect() options", () => {
  it("names every key of DEFAULT_LIMITS among the limits", async () => {
    const { DEFAULT_LIMITS } = await import("../src/rsio-wire.js");
    const WEB = readFileSync(new URL("../../docs/web.md", import.meta.url), "utf8").replace(/\s+/g, " ");
    const list = /`limits` \(([^)]*)\)/.exec(WEB);
    assert.ok(list, "docs/web.md no longer lists the limits connect() takes");
    const named = [...list[1].matchAll(/`(max\w+|split\w+)`/g)].map((m) => m[1]);
    assert.deepEqual(named.toSorted(), Object.keys(DEFAULT_LIMITS).toSorted());
  });
});

describe("the documents name every option the types declare", () => {
  it("each key of ConnectOptions, ListenOptions and ResumeOptions is in docs/web.md or js/README.md", () => {
    const types = readFileSync(new URL("../types/rsio.d.ts", import.meta.url), "utf8");
    const docs = readFileSync(new URL("../../docs/web.md", import.meta.url), "utf8") + README;
    const missing = [];
    for (const name of ["ConnectOptions", "ListenOptions", "ResumeOptions"]) {
      const body = new RegExp(`export interface ${name}\\b[^{]*\\{(.*?)\\n\\}`, "s").exec(types);
      assert.ok(body, `types/rsio.d.ts has no ${name}`);
      for (const [, key] of body[1].matchAll(/^\s+(\w+)\??:/gm)) {
        if (key === "role") continue; // listen()'s own: it makes the server side's connections
        if (!new RegExp(`[\`{ ,]${key}[\`}:,]`).test(docs)) missing.push(`${name}.${key}`);
      }
    }
    assert.deepEqual(missing, []);
  });
});
