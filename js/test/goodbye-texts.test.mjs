// What this binding says goodbye with, byte for byte as rstreams (the reference) says it: the
// same peer bytes fed to a JavaScript Connection and to rstreams.wire's Connection (one Python
// process for every case) end both with the same goodbye reason. The cases: the 'invalid'
// vectors of docs/protocol-vectors.json (PROTOCOL.md §13) and the other framing and limit
// errors of §2, §3, §4, §7, §8 and §11; and the goodbyes naming a timeout (§4.1, §6.3, §14.2,
// §15.3), each timeout written as Python's format(x, "g") writes it (pythonG), against the
// f-strings of rstreams' own source; and the answers a server may give a resume, read as a resuming
// client reads them (§16.3, §16.6).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { AuthGate } from "../src/gate.js";
import { Connection } from "../src/rsio.js";
import { pythonG } from "../src/rsio-url.js";
import { encodeCredentials, encodeFrame, encodeVarint } from "../src/rsio-wire.js";
import { ResumeAnswer, notResumed } from "../src/rsio-resume.js";
import { Sessions, serverResumeOptions } from "../src/sessions.js";
import { FakeTransport, ManualClock, tick } from "./support.mjs";
import { PYTHON, REPO, skip } from "./servers.mjs";

const VECTORS = JSON.parse(readFileSync(new URL("../../docs/protocol-vectors.json", import.meta.url), "utf8"));
const hex = (bytes) => Buffer.from(bytes).toString("hex");
const sub = hex(encodeFrame({ type: "subscribe", publisher: "p", subscriber: 1, initial_demand: 1n }));

/** An extension message of type `code` whose payload is `payload` (hex), as hex. */
const message = (code, payload) => {
  const bytes = Buffer.from(payload.replace(/\s+/g, ""), "hex");
  return hex([code, ...encodeVarint(bytes.length), ...bytes]);
};
// The qualifiers of 'invalid_payloads' that a connection reads itself (§17.1, §18.1, §19.1): the side
// that receives one, what follows it, and its extension
const QUALIFIERS = {
  contentType: ["client", "", 4],
  errorCode: ["client", "", 6],
  goodbyeCode: ["server", "", 6],
  subscribeMetadata: ["server", sub, 5],
};

// [what, side (server-fresh: a server that has read nothing yet), elementSize (a client's subscriber 1
// answered with it, its subscriber 2 with 0), the peer's bytes after its hello, limits (and the
// extensions rstreams' side offers)]
const CASES = [
  ...VECTORS.invalid.map((v) => [v.note, v.element_size ? "client" : "server", v.element_size, v.hex.replace(/\s+/g, ""), {}]),
  ["a request's demand varint of 11 bytes", "server", 0, `${sub}0501${"ff".repeat(10)}01`],
  ["a subscribe name that is not UTF-8", "server", 0, "0401ff0101"],
  ["an onError text that is not UTF-8", "client", 0, "0d0101ff"],
  ["an onError text above max_string_length", "client", 0, "0d0181800400"],
  ["a subscribe name above max_string_length", "server", 0, "0481800400"],
  ["onSubscribe's elementSize above max_element_size", "client", 0, "070281808008"],
  ["onNextPart data above max_element_size", "client", 0, "0a010081808008"],
  ["onNextLastPart data above max_element_size", "client", 0, "0b010081808008"],
  ["onNextPacked beyond max_element_size", "client", 8, "090181808001"],
  ["onNextPacked for a stream of elementSize 0", "client", 0, "090101"],
  ["onNextPacked for a subscriber never subscribed", "client", 8, `090901${"00".repeat(8)}`],
  ["an extension message no extension owns", "server", 0, "fe00"],
  ["an extension message no extension owns, its length above max_string_length", "server", 0, "fe81800400"],
  ["an extension payload above max_string_length", "server", 0, "8081800400"],
  ["an extension message of an extension not active", "server", 0, "9000"],
  ["request(0)", "server", 0, `${sub}050100`],
  ["request(2**64 - 1)", "server", 0, `${sub}0501${"ff".repeat(9)}01`],
  ["a subscribe for an id still open", "server", 0, `${sub}${sub}`],
  ["a second hello", "server", 0, "010000"],
  ...VECTORS.invalid_payloads.filter((v) => QUALIFIERS[v.type] !== undefined).map((v) => [`${v.type}: ${v.note}`,
    QUALIFIERS[v.type][0], 0, message(v.code, v.payload) + QUALIFIERS[v.type][1], { extensions: [QUALIFIERS[v.type][2]] }]),
  ["contentType: a media type that is not US-ASCII", "client", 0, message(0x90, "01 61 2f e9"), { extensions: [4] }],
  ["contentType: a media type of 256 bytes", "client", 0, message(0x90, `01${"61".repeat(256)}`), { extensions: [4] }],
  ["contentType: type/subtype with a space", "client", 0, message(0x90, "01 61 20 2f 62"), { extensions: [4] }],
  ["subscribeMetadata: a key that is not ASCII", "server", 0, message(0x94, "01 01 01 e9 00") + sub, { extensions: [5] }],
  ["subscribeMetadata: a payload above max_metadata_bytes", "server", 0, message(0x94, `01${"00".repeat(16384)}`) + sub,
    { extensions: [5] }],
  ["errorCode: a non-minimal code", "client", 0, message(0x98, "01 80 00"), { extensions: [6] }],
  ["a 7-byte ping", "server-fresh", 0, `01000101 8007${"00".repeat(7)}`, { extensions: [1] }],
  ["a 9-byte pong", "server-fresh", 0, `01000101 8109${"00".repeat(9)}`, { extensions: [1] }],
  ["a one-part element of 3 bytes where elementSize is 8", "client", 8, "0b010003616263"],
  ["the client's hello sent to the client", "client", 0, "010000"],
  ["a hello of version 1", "server-fresh", 0, "010100"],
  ["a subscribe before the hello", "server-fresh", 0, "0401700101"],
  ["onNext from the client", "server", 0, "08010161"],
  ["onNext for a subscriber never subscribed", "client", 0, "08030161"],
  ["onComplete with an unfinished split element", "client", 0, "0a01000161" + "0c01"],
  ["split elements beyond max_parts_in_flight", "client", 0, "0a01000161" + "0a02000161", { max_parts_in_flight: 1 }],
  ["split elements beyond max_reassembly_bytes", "client", 0, `0a010008${"61".repeat(8)}0a020008${"62".repeat(8)}`,
    { max_element_size: 10, max_reassembly_bytes: 10 }],
  ["a second onSubscribe", "client", 0, "070100"],
  ["two elements beyond a demand of one", "client", 0, "080101610801016208010163"],
  ["onNextPacked beyond the demand", "client", 8, `0901020${"0".repeat(31)}`],
  ["input ending inside a request", "server", 0, `${sub}0501`, { eof: true }],
  // a qualifier not followed by the message it qualifies (§17.1, §18.1, §19.1)
  ["an errorCode followed by onComplete", "client", 0, "980201020c01", { extensions: [6] }],
  ["an errorCode followed by onNext", "client", 0, "9802010208010161", { extensions: [6] }],
  ["an errorCode followed by a goodbyeCode", "client", 0, "9802010299010b", { extensions: [6] }],
  ["two errorCodes before one onError", "client", 0, "98020102980201020d010178", { extensions: [6] }],
  ["an errorCode for another id than its onError's", "client", 0, "980202020d010178", { extensions: [6] }],
  ["a goodbyeCode followed by a request", "server", 0, `${sub}99010b050101`, { extensions: [6] }],
  ["two goodbyeCodes before one goodbye", "server", 0, "99010b99010b0300", { extensions: [6] }],
  ["a contentType followed by onError", "client", 0, "900401612f620d010178", { extensions: [4] }],
  ["two contentTypes before one onSubscribe", "client", 0, "900401612f62900401612f62", { extensions: [4] }],
  ["a contentType for another id than its onSubscribe's", "client", 0, "900402612f62070100", { extensions: [4] }],
  ["a subscribeMetadata followed by a request", "server", 0, `${sub}94020200050101`, { extensions: [5] }],
  ["two subscribeMetadata before one subscribe", "server", 0, `9402010094020100${sub}`, { extensions: [5] }],
  ["a subscribeMetadata for another id than its subscribe's", "server", 0, `94020200${sub}`, { extensions: [5] }],
];

// [what, the first bytes of a transport to a server with resume (PROTOCOL.md §16.3)]: a resume it
// refuses for its form, before any session is looked up
const RESUMES = [
  ["a resume payload above 256 bytes", "898102"],
  ["a non-minimal length varint", "898000"],
  ["an over-long length varint", `89${"ff".repeat(10)}01`],
  ["a token length of 0", "89020000"],
  ["a token length of 65", "89024100"],
  ["a token longer than the payload", "89030561aa"],
  ["a payload ending inside the token length", "890180"],
  ["a non-minimal token length", "8903800000"],
  ["a payload ending inside the position", "89030161" + "80"],
  ["a non-minimal position", "8904016180" + "00"],
  ["a byte after the position", "8904016100" + "00"],
];

// [what, the bytes a server answers a resume with (PROTOCOL.md §16.3)]: read by a resuming client,
// which resumes, is refused, or fails the session naming the fault (§16.2, §16.3, §16.7, §16.6)
const HELLO = "02000103";
const ANSWERS = [
  ["resumed", `${HELLO}8a0105`],
  ["resumeRefused", `${HELLO}8b03616263`],
  ["a goodbye in place of the answer", `${HELLO}0303616263`],
  ["a goodbye whose reason is above 256 bytes", `${HELLO}03ac02${"61".repeat(300)}`],
  ["a resumeRefused that is not UTF-8", `${HELLO}8b01ff`],
  ["a byte after the resumed position", `${HELLO}8a020500`],
  ["a non-minimal resumed position", `${HELLO}8a028000`],
  ["an over-long resumed position", `${HELLO}8a0b${"ff".repeat(10)}01`],
  ["an empty resumed", `${HELLO}8a00`],
  ["a resumed payload above 256 bytes", `${HELLO}8a8102`],
  ["a non-minimal payload length", `${HELLO}8a8000`],
  ["a resumeAck in place of the answer", `${HELLO}8c0100`],
  ["an onNext in place of the answer", `${HELLO}08010161`],
  ["a goodbye with a non-minimal length", `${HELLO}038000`],
  ["a clientHello in place of the serverHello", "010000"],
  ["a serverHello of version 1", "020100"],
  ["a serverHello listing 257 extensions", "02008102"],
  ["a serverHello with a non-minimal count", "02008000"],
  ["a serverHello with a non-minimal extension id", "0200018000"],
];

// Timeouts in seconds, each written as Python's :g writes it in a goodbye: as it is, rounded to 6
// digits, with an exponent below 1e-04 and from 1e+06
const TIMEOUTS = [60, 0.5, 1.1, 0.0001, 1e-5, 999999, 1e6, 1234567.5];
// Numbers for pythonG alone: ties rounded half to even from the exact value (2**-9 is 0.001953125),
// the ends of the range, and pseudo-random doubles of every exponent and short decimals
const NUMBERS = [0, -0, NaN, Infinity, -Infinity, 1, -1.5, 0.1 + 0.2, 2 ** -9, 1000005, 1234565, 999999.5, 9999995,
  0.00009999995, 0.000099999949, 123456, 1e21, 1e-7, 5e-324, 2.2250738585072014e-308, Number.MAX_VALUE, 2 ** 53 + 2];
{
  let state = 0x2545f4914f6cdd1dn; // xorshift64
  const view = new DataView(new ArrayBuffer(8));
  for (let i = 0; i < 2000; i++) {
    state ^= (state << 13n) & 0xffffffffffffffffn;
    state ^= state >> 7n;
    state ^= (state << 17n) & 0xffffffffffffffffn;
    view.setBigUint64(0, state);
    NUMBERS.push(i % 2 ? view.getFloat64(0) : Number(state % 10n ** BigInt(1 + (i % 12))) / 10 ** (i % 9));
  }
}
const asText = (x) => (Object.is(x, -0) ? "-0" : String(x)); // Python's float() reads it back exactly

/**
 * rstreams' goodbye reason and onError text for each case, its resumeRefused reason for each
 * resume, its goodbyes naming each timeout (the f-strings of rstreams.net's source, evaluated
 * with the timeout), and format(x, "g") of each number (one Python process).
 */
function run() {
  const source = `
import ast, inspect, json, sys, types
from rstreams.net import _auth, _closing, _keepalive, _pump
from rstreams.wire import ClientHello, Connection, ConnectionClosed, ConnectionConfig, FrameParser, OnError, OnSubscribe, ServerHello, Side, Subscribe, encode
from rstreams.wire._resume import Refused, Resumed, ResumeError, ResumeReplyParser, parse_resume_request
cases, resumes, timeouts, numbers, answers = json.load(sys.stdin)
out = []
for what, side, size, data, limits in cases:
    eof = limits.get("eof")
    limits = {k: frozenset(v) if k == "extensions" else v for k, v in limits.items() if k != "eof"}
    if side.startswith("server"):
        core = Connection(Side.SERVER, ConnectionConfig(**limits))
        if side == "server":
            core.receive_data(encode(ClientHello(extensions=tuple(limits.get("extensions", ())))))
    else:
        core = Connection(Side.CLIENT, ConnectionConfig(**limits))
        core.receive_data(encode(ServerHello(extensions=tuple(limits.get("extensions", ())))))
        core.send(Subscribe(publisher="p", subscriber=1, initial_demand=1))
        core.send(Subscribe(publisher="p", subscriber=2, initial_demand=1))
        core.receive_data(encode(OnSubscribe(subscriber=1, element_size=size)))
        core.receive_data(encode(OnSubscribe(subscriber=2, element_size=0)))
    core.data_to_send(); core.events_received()
    core.receive_data(bytes.fromhex(data))  # (spaces allowed)
    if eof:  # then the input ends
        core.receive_eof()
    closed = [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
    parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 16, max_extensions=64)
    errors = [f.error for f in parser.feed(b"".join(core.data_to_send())) if isinstance(f, OnError)]
    out.append([closed[0].reason if closed else None, errors[0] if errors else None])
refused = []
for what, data in resumes:
    try:
        refused.append(repr(parse_resume_request(bytearray.fromhex(data))))
    except ResumeError as error:
        refused.append(error.reason)
outcomes = []
for what, data in answers:  # as rstreams.net's client words each outcome (§16.6)
    try:
        outcome = ResumeReplyParser().feed(bytes.fromhex(data))
    except ResumeError as error:
        outcomes.append(f"the session could not be resumed: {error.reason}")
        continue
    if isinstance(outcome, Resumed):
        outcomes.append(f"resumed at {outcome.position}")
    elif isinstance(outcome, Refused):
        outcomes.append(f"the server refused to resume the session: {outcome.reason}")
    else:
        outcomes.append("(waits for more bytes)")
def text(module, start):
    """The one f-string of module's source that starts with start, compiled."""
    found = [node for node in ast.walk(ast.parse(inspect.getsource(module))) if isinstance(node, ast.JoinedStr)
             and isinstance(node.values[0], ast.Constant) and node.values[0].value.startswith(start)]
    assert len(found) == 1, (module.__name__, start, len(found))
    return compile(ast.Expression(found[0]), module.__name__, "eval")
TEXTS = {
    "handshake": text(_closing, "handshake timeout (no "),
    "idle": text(_keepalive, "idle timeout: "),
    "unread": text(_pump, "peer not reading: replies left unread"),
    "auth": text(_auth, "authentication timeout"),
}
goodbyes = []
for t in timeouts:
    names = types.SimpleNamespace(_handshake_timeout=t, _idle_timeout=t, _unread_timeout=t, _timeout=t)
    said = {kind: eval(code, {"self": names, "hello": "clientHello"}) for kind, code in TEXTS.items()}
    said["client handshake"] = eval(TEXTS["handshake"], {"self": names, "hello": "serverHello"})
    goodbyes.append(said)
json.dump([out, refused, goodbyes, [format(float(x), "g") for x in numbers], outcomes], sys.stdout)
`;
  return new Promise((resolve, reject) => {
    const child = execFile(PYTHON, ["-c", source], { env: { ...process.env, PYTHONPATH: `${REPO}src` }, timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(new Error(stderr || error.message)) : resolve(JSON.parse(stdout))));
    child.stdin.end(JSON.stringify([CASES.map(([what, side, size, data, limits = {}]) => [what, side, size, data, limits]), RESUMES,
      TIMEOUTS, NUMBERS.map(asText), ANSWERS]));
  });
}

/** This binding's goodbye reason for a case. */
async function ours([, side, size, data, limits = {}]) {
  const ws = new FakeTransport();
  const never = { subscribe(s) { s.onSubscribe({ request() {}, cancel() {} }); } };
  const conn = new Connection(ws, { role: side.startsWith("server") ? "server" : "client", publishers: { p: never },
    limits: Object.fromEntries(Object.entries(limits).filter(([k]) => k !== "extensions" && k !== "eof").map(([k, v]) => [k.replace(/_(.)/g, (_, c) => c.toUpperCase()), v])), onerror: () => {}, keepalive: null, idleTimeout: null, handshakeTimeout: null });
  const extensions = limits.extensions ?? [];
  if (side === "server") ws.feed({ type: "clientHello", version: 0, extensions });
  else if (side === "client") {
    ws.feed({ type: "serverHello", version: 0, extensions });
    for (let i = 0; i < 2; i++) conn.subscribe("p", { onSubscribe(s) { s.request(1); }, onNext() {}, onError() {}, onComplete() {} });
    await tick();
    ws.feed({ type: "onSubscribe", subscriber: 1, element_size: size }, { type: "onSubscribe", subscriber: 2, element_size: 0 });
  }
  await tick();
  ws.feed(Uint8Array.from(Buffer.from(data.replace(/\s+/g, ""), "hex")));
  await tick();
  if (limits.eof) { // then the input ends
    ws.onend?.();
    await tick();
  }
  return [ws.of("goodbye").at(-1)?.reason ?? null, ws.of("onError")[0]?.error ?? null];
}

let references = null;
const reference = () => { references ??= run(); return references; };

// Every word is rstreams', the limits' names too (max_string_length=65536, as §11 names them, not as
// this binding's options: the same text from every binding).
test("every case ends with rstreams' goodbye reason or onError text, byte for byte", { skip }, async () => {
  const [expected] = await reference();
  const differ = [];
  for (const [i, c] of CASES.entries()) {
    const got = await ours(c);
    for (const [k, what] of ["goodbye", "onError"].entries()) {
      if (got[k] !== expected[i][k]) differ.push(`${c[0]}, ${what}:\n  rstreams:   ${expected[i][k]}\n  JavaScript: ${got[k]}`);
    }
  }
  assert.equal(differ.length, 0, `\n${differ.join("\n")}`);
});

/** The reason of the resumeRefused this binding's listen() answers `bytes` with. */
async function refusal(bytes) {
  const link = new FakeTransport();
  const transport = new Sessions(serverResumeOptions(true), new ManualClock()).session(link);
  const conn = new Connection(transport, { role: "server", keepalive: null, idleTimeout: null, handshakeTimeout: null, onerror: () => {} });
  transport.onabandon = () => conn._abandon();
  await tick();
  link.feed(Uint8Array.from(Buffer.from(bytes, "hex")));
  await tick();
  const refused = link.of("extension", 0x8b).at(-1);
  return refused === undefined ? null : new TextDecoder().decode(refused.payload);
}

test("a malformed resume is refused with rstreams' reason, byte for byte", { skip }, async () => {
  const [, expected] = await reference();
  const differ = [];
  for (const [i, [what, bytes]] of RESUMES.entries()) {
    const got = await refusal(bytes);
    if (got !== expected[i]) differ.push(`${what}:\n  rstreams:   ${expected[i]}\n  JavaScript: ${got}`);
  }
  assert.equal(differ.length, 0, `\n${differ.join("\n")}`);
});

/** What a resuming client makes of `hex`, the server's answer to its resume (ResumeAnswer, as _recover words it). */
function outcome(hex) {
  try {
    const got = new ResumeAnswer().feed(Uint8Array.from(Buffer.from(hex, "hex")));
    if (got === null) return "(waits for more bytes)";
    return got.refused !== undefined ? `the server refused to resume the session: ${got.refused}` : `resumed at ${got.position}`;
  } catch (error) {
    return notResumed(error).message;
  }
}

test("a resuming client reads the server's answer as rstreams does, and fails with its text, byte for byte", { skip }, async () => {
  const [, , , , expected] = await reference();
  const differ = [];
  for (const [i, [what, hex]] of ANSWERS.entries()) {
    const got = outcome(hex);
    if (got !== expected[i]) differ.push(`${what}:\n  rstreams:   ${expected[i]}\n  JavaScript: ${got}`);
  }
  assert.equal(differ.length, 0, `\n${differ.join("\n")}`);
});

test("pythonG writes every number as Python's format(x, \"g\") does", { skip }, async () => {
  const [, , , expected] = await reference();
  const differ = NUMBERS.map((x, i) => [asText(x), pythonG(x), expected[i]]).filter(([, ours, theirs]) => ours !== theirs);
  assert.deepEqual(differ.slice(0, 10), [], `${differ.length} differ`);
});

/** A FakeTransport that keeps what it sent unsent (a peer that never reads), reading paused when asked. */
class NeverRead extends FakeTransport {
  unsent = 0;
  paused = false;
  send(data) { super.send(data); this.unsent += data.length; }
  pauseReading() { this.paused = true; }
}

/** This binding's goodbye reason when the timeout of `kind` (seconds `t`) passes. */
async function timedOut(kind, t) {
  const clock = new ManualClock();
  const ws = kind === "unread" ? new NeverRead() : new FakeTransport();
  const options = { clock, onerror: () => {}, keepalive: null, idleTimeout: null, handshakeTimeout: null,
    role: kind === "client handshake" ? "client" : "server" };
  if (kind.endsWith("handshake") || kind === "auth") options.handshakeTimeout = t;
  if (kind === "idle") options.idleTimeout = t;
  if (kind === "unread") options.unreadTimeout = t;
  if (kind === "auth") options.gate = new AuthGate({ authenticate: () => new Promise(() => {}) }); // never settled
  const conn = new Connection(ws, options);
  if (kind === "auth") {
    ws.feed({ type: "clientHello", version: 0, extensions: [2] },
      { type: "extension", code: 0x84, payload: encodeCredentials("token") });
  } else if (!kind.endsWith("handshake")) ws.feed({ type: "clientHello", version: 0, extensions: [] });
  // a peer that never reads: subscribes for a name of 1000 bytes nobody offers, each refused
  // (written a turn later, ten at once), until reading stops
  for (let id = 1; kind === "unread" && !ws.paused && id < 10_000; await Promise.resolve()) {
    for (const end = id + 10; id < end; id++) {
      ws.feed({ type: "subscribe", publisher: "n".repeat(1000), subscriber: id, initial_demand: 1n });
    }
  }
  await tick();
  clock.advance(t * 1000);
  await tick();
  assert.equal(conn.state, "CLOSED", `${kind} ${t}`);
  return ws.of("goodbye").at(-1)?.reason ?? null;
}

test("every goodbye naming a timeout is rstreams', the timeout as Python's :g writes it, byte for byte", { skip }, async () => {
  const [, , expected] = await reference();
  const differ = [];
  for (const [i, t] of TIMEOUTS.entries()) {
    for (const [kind, theirs] of Object.entries(expected[i])) {
      if (kind === "unread" && t > 1) continue; // backed up, the replies are looked at every 10 ms till then
      const wanted = theirs.replace("(unread_timeout)", "(unreadTimeout)"); // the option, by this binding's name
      const got = await timedOut(kind, t);
      if (got !== wanted) differ.push(`${kind}, ${t} s:\n  rstreams:   ${wanted}\n  JavaScript: ${got}`);
    }
  }
  assert.equal(differ.length, 0, `\n${differ.join("\n")}`);
});
