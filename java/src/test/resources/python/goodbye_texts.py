"""The cases of ``GoodbyeTextsTest`` and rstreams' texts for each: the peer bytes that end a
connection (the 'invalid' vectors of docs/protocol-vectors.json, PROTOCOL.md §13, the malformed
qualifiers of its 'invalid_payloads', and the other framing, handshake, stream and limit errors of
§2-§8, §11, §14) fed to rstreams.wire's Connection, whose goodbye reason and onError text the Java
connection core must end with, byte for byte (the same cases as js/test/goodbye-texts.test.mjs).

Also the malformed resumes a server refuses for their form (§16.2, §16.7), with rstreams'
resumeRefused reason for each (``parse_resume_request``).

Also doubles with Python's ``format(x, "g")`` of each, as Java's PythonG must write them (a
timeout in a goodbye).

Also the answers a server may give a resume, with what a resuming rstreams client makes of each:
it resumes, is refused, or fails the session at once naming the fault (``ResumeReplyParser``, and
rstreams.net's texts for a refusal and a failure, PROTOCOL.md §16.6).

Run as ``python goodbye_texts.py REPO_ROOT``; writes ``[cases, resumes, numbers, answers]`` as JSON: each case
``[what, side, limits, hello (hex: the peer's hello, or ""), onSubscribes (hex), data (hex),
goodbye, onError]``, where side is "server" (after the peer's clientHello), "server-fresh"
(nothing read yet) or "client" (subscribers 1 and 2 subscribed with demand 1, answered by the
onSubscribes); each resume ``[what, the transport's first bytes (hex), reason]``; each answer
``[what, its bytes (hex), the client's outcome]``.
"""

from __future__ import annotations

import json
import math
import random
import struct
import sys
from pathlib import Path
from typing import Any

from rstreams.wire import (
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    FrameParser,
    OnError,
    OnSubscribe,
    ServerHello,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire._resume import Refused, Resumed, ResumeError, ResumeReplyParser, parse_resume_request

SUB = encode(Subscribe(publisher="p", subscriber=1, initial_demand=1)).hex()
# The qualifiers of 'invalid_payloads' that a connection reads itself (§17.1, §18.1, §19.1): the
# side that receives one, what follows it, and its extension
QUALIFIERS = {
    "contentType": ("client", "", 4),
    "errorCode": ("client", "", 6),
    "goodbyeCode": ("server", "", 6),
    "subscribeMetadata": ("server", SUB, 5),
}


EXT1, EXT4, EXT5, EXT6 = ({"extensions": [n]} for n in (1, 4, 5, 6))
"""Limits of a case: extension keepalive, content-types, metadata or error-codes offered."""
PARTS = {"max_parts_in_flight": 1}


def message(code: int, payload: str) -> str:
    """An extension message of type ``code`` whose payload is ``payload`` (hex), as hex."""
    data = bytes.fromhex(payload)
    size = len(data)
    varint = bytearray()
    while True:
        byte, size = size & 0x7F, size >> 7
        varint.append(byte | (0x80 if size else 0))
        if not size:
            break
    return bytes([code, *varint, *data]).hex()


def cases(root: Path) -> list[tuple[str, str, int, str, dict[str, Any]]]:
    """[what, side, elementSize of the client's subscriber 1 (its 2 has 0), the peer's bytes, limits]."""
    vectors = json.loads((root / "docs" / "protocol-vectors.json").read_text(encoding="utf-8"))
    out: list[tuple[str, str, int, str, dict[str, Any]]] = [
        (v["note"], "client" if v.get("element_size") else "server", v.get("element_size", 0), v["hex"], {})
        for v in vectors["invalid"]
    ]
    out += [
        ("a request's demand varint of 11 bytes", "server", 0, f"{SUB}0501{'ff' * 10}01", {}),
        ("a subscribe name that is not UTF-8", "server", 0, "0401ff0101", {}),
        ("an onError text that is not UTF-8", "client", 0, "0d0101ff", {}),
        ("an onError text above max_string_length", "client", 0, "0d0181800400", {}),
        ("a subscribe name above max_string_length", "server", 0, "0481800400", {}),
        ("onSubscribe's elementSize above max_element_size", "client", 0, "070281808008", {}),
        ("onNextPart data above max_element_size", "client", 0, "0a010081808008", {}),
        ("onNextLastPart data above max_element_size", "client", 0, "0b010081808008", {}),
        ("onNextPacked beyond max_element_size", "client", 8, "090181808001", {}),
        ("onNextPacked for a stream of elementSize 0", "client", 0, "090101", {}),
        ("onNextPacked for a subscriber never subscribed", "client", 8, "090901" + "00" * 8, {}),
        ("an extension message no extension owns", "server", 0, "fe00", {}),
        ("an extension message no extension owns, its length too long", "server", 0, "fe81800400", {}),
        ("an extension payload above max_string_length", "server", 0, "8081800400", {}),
        ("an extension message of an extension not active", "server", 0, "9000", {}),
        ("request(0)", "server", 0, f"{SUB}050100", {}),
        ("request(2**64 - 1)", "server", 0, f"{SUB}0501{'ff' * 9}01", {}),
        ("a subscribe for an id still open", "server", 0, SUB * 2, {}),
        ("a second hello", "server", 0, "010000", {}),
    ]
    for v in vectors["invalid_payloads"]:
        if v["type"] in QUALIFIERS:
            side, after, extension = QUALIFIERS[v["type"]]
            data = message(v["code"], v["payload"].replace(" ", "")) + after
            out.append((f"{v['type']}: {v['note']}", side, 0, data, {"extensions": [extension]}))
    out += [
        ("contentType: a media type that is not US-ASCII", "client", 0, message(0x90, "01612fe9"), EXT4),
        ("contentType: a media type of 256 bytes", "client", 0, message(0x90, "01" + "61" * 256), EXT4),
        ("contentType: type/subtype with a space", "client", 0, message(0x90, "0161202f62"), EXT4),
        ("subscribeMetadata: a key that is not ASCII", "server", 0, message(0x94, "010101e900") + SUB, EXT5),
        (
            "subscribeMetadata: a payload above max_metadata_bytes",
            "server",
            0,
            message(0x94, "01" + "00" * 16384) + SUB,
            EXT5,
        ),
        ("errorCode: a non-minimal code", "client", 0, message(0x98, "018000"), EXT6),
        ("a 7-byte ping", "server-fresh", 0, "010001018007" + "00" * 7, EXT1),
        ("a 9-byte pong", "server-fresh", 0, "010001018109" + "00" * 9, EXT1),
        ("a one-part element of 3 bytes where elementSize is 8", "client", 8, "0b010003616263", {}),
        ("the client's hello sent to the client", "client", 0, "010000", {}),
        ("a hello of version 1", "server-fresh", 0, "010100", {}),
        ("a subscribe before the hello", "server-fresh", 0, "0401700101", {}),
        ("onNext from the client", "server", 0, "08010161", {}),
        ("onNext for a subscriber never subscribed", "client", 0, "08030161", {}),
        ("onComplete with an unfinished split element", "client", 0, "0a010001610c01", {}),
        ("split elements beyond max_parts_in_flight", "client", 0, "0a010001610a02000161", PARTS),
        (
            "split elements beyond max_reassembly_bytes",
            "client",
            0,
            f"0a010008{'61' * 8}0a020008{'62' * 8}",
            {"max_element_size": 10, "max_reassembly_bytes": 10},
        ),
        ("a second onSubscribe", "client", 0, "070100", {}),
        ("two elements beyond a demand of one", "client", 0, "080101610801016208010163", {}),
        ("onNextPacked beyond the demand", "client", 8, "090102" + "00" * 16, {}),
        ("input ending inside a request", "server", 0, f"{SUB}0501", {"eof": True}),
        # a qualifier not followed by the message it qualifies (§17.1, §18.1, §19.1)
        ("an errorCode followed by onComplete", "client", 0, "980201020c01", EXT6),
        ("an errorCode followed by onNext", "client", 0, "9802010208010161", EXT6),
        ("an errorCode followed by a goodbyeCode", "client", 0, "9802010299010b", EXT6),
        ("two errorCodes before one onError", "client", 0, "98020102980201020d010178", EXT6),
        ("an errorCode for another id than its onError's", "client", 0, "980202020d010178", EXT6),
        ("a goodbyeCode followed by a request", "server", 0, f"{SUB}99010b050101", EXT6),
        ("two goodbyeCodes before one goodbye", "server", 0, "99010b99010b0300", EXT6),
        ("a contentType followed by onError", "client", 0, "900401612f620d010178", EXT4),
        ("two contentTypes before one onSubscribe", "client", 0, "900401612f62900401612f62", EXT4),
        ("a contentType for another id than its onSubscribe's", "client", 0, "900402612f62070100", EXT4),
        ("a subscribeMetadata followed by a request", "server", 0, f"{SUB}94020200050101", EXT5),
        ("two subscribeMetadata before one subscribe", "server", 0, f"9402010094020100{SUB}", EXT5),
        ("a subscribeMetadata for another id than its subscribe's", "server", 0, f"94020200{SUB}", EXT5),
    ]
    return [(what, side, size, data.replace(" ", ""), limits) for what, side, size, data, limits in out]


def run(what: str, side: str, size: int, data: str, limits: dict[str, Any]) -> list[Any]:
    """The case as written for the Java side, with rstreams' goodbye reason and onError text."""
    extensions = tuple(limits.get("extensions", ()))
    options: dict[str, Any] = {
        k: frozenset(v) if k == "extensions" else v for k, v in limits.items() if k != "eof"
    }
    config = ConnectionConfig(**options)
    hello = subscribed = b""
    if side.startswith("server"):
        core = Connection(Side.SERVER, config)
        if side == "server":
            hello = encode(ClientHello(extensions=extensions))
    else:
        core = Connection(Side.CLIENT, config)
        hello = encode(ServerHello(extensions=extensions))
        subscribed = encode(OnSubscribe(subscriber=1, element_size=size))
        subscribed += encode(OnSubscribe(subscriber=2, element_size=0))
    core.receive_data(hello)
    if side == "client":
        core.send(Subscribe(publisher="p", subscriber=1, initial_demand=1))
        core.send(Subscribe(publisher="p", subscriber=2, initial_demand=1))
        core.receive_data(subscribed)
    core.data_to_send()
    core.events_received()
    core.receive_data(bytes.fromhex(data))
    if limits.get("eof"):  # then the input ends
        core.receive_eof()
    closed = [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
    parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 16, max_extensions=64)
    errors = [f.error for f in parser.feed(b"".join(core.data_to_send())) if isinstance(f, OnError)]
    return [
        what,
        side,
        limits,
        hello.hex(),
        subscribed.hex(),
        data,
        closed[0].reason if closed else None,
        errors[0] if errors else None,
    ]


# [what, the first bytes of a transport to a server with resume (§16.3)]: refused for their form,
# before any session is looked up
RESUMES = [
    ("a resume payload above 256 bytes", "898102"),
    ("a non-minimal length varint", "898000"),
    ("an over-long length varint", "89" + "ff" * 10 + "01"),
    ("a token length of 0", "89020000"),
    ("a token length of 65", "89024100"),
    ("a token longer than the payload", "89030561aa"),
    ("a payload ending inside the token length", "890180"),
    ("a non-minimal token length", "8903800000"),
    ("a payload ending inside the position", "8903016180"),
    ("a non-minimal position", "890401618000"),
    ("a byte after the position", "890401610000"),
]


def refused(what: str, data: str) -> list[str]:
    """The resume with rstreams' reason for refusing it (or the request, should it be accepted)."""
    try:
        return [what, data, repr(parse_resume_request(bytearray.fromhex(data)))]
    except ResumeError as error:
        return [what, data, error.reason]


HELLO = "02000103"
"""serverHello: version 0, extension resume (3)."""
# [what, the bytes a server answers a resume with (§16.3)]: read by a resuming client, which
# resumes, is refused, or fails the session naming the fault (§16.2, §16.3, §16.7, §16.6)
ANSWERS = [
    ("resumed", HELLO + "8a0105"),
    ("resumeRefused", HELLO + "8b03616263"),
    ("a goodbye in place of the answer", HELLO + "0303616263"),
    ("a goodbye whose reason is above 256 bytes", HELLO + "03ac02" + "61" * 300),
    ("a resumeRefused that is not UTF-8", HELLO + "8b01ff"),
    ("a byte after the resumed position", HELLO + "8a020500"),
    ("a non-minimal resumed position", HELLO + "8a028000"),
    ("an over-long resumed position", HELLO + "8a0b" + "ff" * 10 + "01"),
    ("an empty resumed", HELLO + "8a00"),
    ("a resumed payload above 256 bytes", HELLO + "8a8102"),
    ("a non-minimal payload length", HELLO + "8a8000"),
    ("a resumeAck in place of the answer", HELLO + "8c0100"),
    ("an onNext in place of the answer", HELLO + "08010161"),
    ("a goodbye with a non-minimal length", HELLO + "038000"),
    ("a clientHello in place of the serverHello", "010000"),
    ("a serverHello of version 1", "020100"),
    ("a serverHello listing 257 extensions", "02008102"),
    ("a serverHello with a non-minimal count", "02008000"),
    ("a serverHello with a non-minimal extension id", "0200018000"),
]


def answered(what: str, data: str) -> list[str]:
    """The answer with what a resuming rstreams client makes of it: the position it resumes at,
    the server's refusal, or the session's failure (rstreams.net's texts, §16.6)."""
    try:
        outcome = ResumeReplyParser().feed(bytes.fromhex(data))
    except ResumeError as error:
        return [what, data, f"the session could not be resumed: {error.reason}"]
    if isinstance(outcome, Resumed):
        return [what, data, f"resumed at {outcome.position}"]
    if isinstance(outcome, Refused):
        return [what, data, f"the server refused to resume the session: {outcome.reason}"]
    return [what, data, "(waits for more bytes)"]


def numbers() -> list[list[str]]:
    """[repr(x), format(x, "g")] of the doubles PythonG must write as Python does: ties rounded half
    to even from the exact value (2**-9 is 0.001953125), the ends of the range, timeouts, and
    pseudo-random doubles of every exponent and short decimals."""
    rng = random.Random(7)
    xs = [0.0, -0.0, 1.0, -1.5, 0.1 + 0.2, 2**-9, 1000005.0, 1234565.0, 999999.5, 9999995.0, 0.00009999995]
    xs += [
        0.000099999949,
        123456.0,
        1e21,
        1e-7,
        5e-324,
        2.2250738585072014e-308,
        sys.float_info.max,
        2.0**53 + 2,
    ]
    xs += [60.0, 0.5, 1.1, 0.0001, 1e-5, 999999.0, 1e6, 1234567.5]
    for i in range(2000):
        if i % 2:
            xs.append(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
        else:
            xs.append(rng.randrange(10 ** (1 + i % 12)) / 10 ** (i % 9))
    return [[repr(x), format(x, "g")] for x in xs if math.isfinite(x)]


if __name__ == "__main__":
    out = [
        [run(*case) for case in cases(Path(sys.argv[1]))],
        [refused(*r) for r in RESUMES],
        numbers(),
        [answered(*a) for a in ANSWERS],
    ]
    json.dump(out, sys.stdout, ensure_ascii=True)
