// The JavaScript client's driver for the interop matrix in Node: node tests/interop/driver.mjs PLAN.json
//
// Runs each case of the plan with @rstreams/rsio's Node entry (TCP and WebSocket) through
// driver-core.mjs, which Chromium runs too (driver_browser.py), and prints its lines as JSON,
// then {"event": "exit"}. Its waits count own time (own-time.mjs over this process and the case's
// server); after giving up on a connection that never came it exits once its lines are written.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import * as rsio from "../../js/src/node.js";
import { runCase } from "./driver-core.mjs";
import { ownTime } from "./own-time.mjs";

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);
const sha256 = async (bytes) => createHash("sha256").update(bytes).digest("hex");

const plan = JSON.parse(readFileSync(process.argv[2], "utf8"));
let abandoned = false;
for (const spec of plan.cases) abandoned = !(await runCase(spec, rsio, emit, sha256, ownTime)) || abandoned;
if (abandoned) process.stdout.write(`${JSON.stringify({ event: "exit" })}\n`, () => process.exit(0));
else emit({ event: "exit" });
