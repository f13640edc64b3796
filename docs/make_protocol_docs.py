"""Generate PROTOCOL.md's tables and examples, and docs/protocol-vectors.json, from the code.

Run ``python docs/make_protocol_docs.py`` after changing frames or state tables; ``--check``
exits with status 1 (and changes nothing) when the files are out of date. The test suite
runs the same check (tests/wire/test_docs.py), so the document cannot drift from the code.

Blocks between ``<!-- generated:NAME -->`` and ``<!-- /generated:NAME -->`` in PROTOCOL.md
are owned by this script; everything else in PROTOCOL.md is written by hand.
"""

# ruff: noqa: RUF001  (the generated Markdown uses the multiplication sign, en dash and arrows on purpose)
from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

from rstreams.wire import extensions as X
from rstreams.wire import frames as F
from rstreams.wire._auth import (
    Token,
    UserPassword,
    decode_credentials,
    decode_subscribe_credentials,
)
from rstreams.wire._channels import (
    CHANNEL,
    INPUT_CANCEL,
    INPUT_COMPLETE,
    INPUT_ERROR,
    INPUT_NEXT,
    INPUT_NEXT_PART,
    INPUT_REQUEST,
    decode_channel_message,
    encode_channel_message,
)
from rstreams.wire._codes import (
    ErrorCode,
    decode_error_code,
    decode_goodbye_code,
    encode_error_code,
    encode_goodbye_code,
)
from rstreams.wire._content import decode_content_type, encode_content_type
from rstreams.wire._messages import (
    MESSAGE,
    MESSAGE_CREDIT,
    decode_credit,
    decode_message,
    encode_credit,
    encode_message,
)
from rstreams.wire._metadata import decode_metadata, encode_metadata
from rstreams.wire._resume import (
    RESUME,
    RESUME_ACK,
    RESUME_REFUSED,
    RESUME_TOKEN,
    RESUMED,
    decode_position,
    decode_resume,
    decode_token,
    encode_position,
    encode_resume,
)
from rstreams.wire._state import (
    CONNECTION_TRANSITIONS,
    STREAM_TRANSITIONS,
    ConnectionInput,
    ConnectionState,
    Signal,
    StreamState,
)

ROOT = Path(__file__).resolve().parent.parent
PROTOCOL_MD = ROOT / "PROTOCOL.md"
VECTORS_JSON = ROOT / "docs" / "protocol-vectors.json"

WIRE_NAMES: dict[type[F.Frame], str] = {
    F.ClientHello: "clientHello",
    F.ServerHello: "serverHello",
    F.Goodbye: "goodbye",
    F.Subscribe: "subscribe",
    F.Request: "request",
    F.Cancel: "cancel",
    F.OnSubscribe: "onSubscribe",
    F.OnNext: "onNext",
    F.OnNextPacked: "onNextPacked",
    F.OnNextPart: "onNextPart",
    F.OnNextLastPart: "onNextLastPart",
    F.OnComplete: "onComplete",
    F.OnError: "onError",
}

LAYOUTS: dict[type[F.Frame], str] = {
    F.ClientHello: "version: u8, extensions: varint count + count × varint",
    F.ServerHello: "version: u8, extensions: varint count + count × varint",
    F.Goodbye: "reason: string",
    F.Subscribe: "publisher: string, subscriber: varint, initialDemand: varint",
    F.Request: "subscriber: varint, demand: varint",
    F.Cancel: "subscriber: varint",
    F.OnSubscribe: "subscriber: varint, elementSize: varint",
    F.OnNext: "subscriber: varint, element: bytes (elementSize = 0) or elementSize raw bytes",
    F.OnNextPacked: "subscriber: varint, count: varint, count × elementSize raw bytes",
    F.OnNextPart: "subscriber: varint, element: varint, data: bytes",
    F.OnNextLastPart: "subscriber: varint, element: varint, data: bytes",
    F.OnComplete: "subscriber: varint",
    F.OnError: "subscriber: varint, error: string",
}

DIRECTIONS: dict[type[F.Frame], str] = {
    F.ClientHello: "client → server",
    F.ServerHello: "server → client",
    F.Goodbye: "either",
    F.Subscribe: "subscriber → publisher",
    F.Request: "subscriber → publisher",
    F.Cancel: "subscriber → publisher",
}

# Extension messages (§4.4): type -> (wire name, direction, payload layout, section). Every one
# is framed as type byte, varint payload length, payload; the layout says what the payload holds.
EXTENSION_MESSAGES: dict[int, tuple[str, str, str, str]] = {
    X.PING: ("ping", "either", "8 opaque bytes", "§14"),
    X.PONG: ("pong", "either", "the 8 bytes of the ping it answers", "§14"),
    X.AUTH_AUTHENTICATE: ("authenticate", "client → server", "credentials", "§15"),
    X.AUTH_OK: ("authenticated", "server → client", "empty", "§15"),
    X.AUTH_SUBSCRIBE_CREDENTIALS: (
        "subscribeCredentials",
        "client → server",
        "subscriber: varint, credentials",
        "§15",
    ),
    RESUME_TOKEN: ("resumeToken", "server → client", "the token: 1–64 raw bytes", "§16"),
    RESUME: ("resume", "client → server", "token: bytes, position: varint", "§16"),
    RESUMED: ("resumed", "server → client", "position: varint", "§16"),
    RESUME_REFUSED: ("resumeRefused", "server → client", "reason: UTF-8 text, the whole payload", "§16"),
    RESUME_ACK: ("resumeAck", "either", "position: varint", "§16"),
    X.CONTENT_TYPE: (
        "contentType",
        "publisher → subscriber",
        "subscriber: varint, media type: the rest",
        "§17",
    ),
    X.SUBSCRIBE_METADATA: (
        "subscribeMetadata",
        "subscriber → publisher",
        "subscriber: varint, count: varint, count × (key: string, value: bytes)",
        "§18",
    ),
    X.ERROR_CODE: ("errorCode", "publisher → subscriber", "subscriber: varint, code: varint", "§19"),
    X.GOODBYE_CODE: ("goodbyeCode", "either", "code: varint", "§19"),
    MESSAGE: ("message", "either", "name: string, body: the rest of the payload", "§20"),
    MESSAGE_CREDIT: ("messageCredit", "either (receiver of messages → sender)", "count: varint", "§20"),
    CHANNEL: ("channel", "subscriber → publisher", "subscriber: varint", "§21"),
    INPUT_REQUEST: ("inputRequest", "publisher → subscriber", "subscriber: varint, demand: varint", "§21"),
    INPUT_CANCEL: ("inputCancel", "publisher → subscriber", "subscriber: varint", "§21"),
    INPUT_NEXT: (
        "inputNext",
        "subscriber → publisher",
        "subscriber: varint, element: the rest of the payload",
        "§21",
    ),
    INPUT_COMPLETE: ("inputComplete", "subscriber → publisher", "subscriber: varint", "§21"),
    INPUT_ERROR: (
        "inputError",
        "subscriber → publisher",
        "subscriber: varint, error: the rest, UTF-8",
        "§21",
    ),
    INPUT_NEXT_PART: (
        "inputNextPart",
        "subscriber → publisher",
        "subscriber: varint, data: the rest of the payload",
        "§21.6",
    ),
}
EXTENSION_NAMES = {name: code for code, (name, *_) in EXTENSION_MESSAGES.items()}

_TOKEN = bytes(range(16))
"""The session token of the resume examples (§16.2)."""

# (frame, element_size context, note)
EXAMPLES: list[tuple[F.Frame, int, str]] = [
    (F.ClientHello(), 0, "version 0, no extensions"),
    (F.ClientHello(version=0, extensions=(1, 300)), 0, "offers extensions 1 and 300"),
    (
        F.ClientHello(version=0, extensions=(1024, 2**64 - 1)),
        0,
        "private-use ids (§4.4), the largest a 10-byte varint",
    ),
    (F.ServerHello(), 0, "version 0, no extensions"),
    (F.Goodbye(reason=""), 0, "no reason"),
    (F.Goodbye(reason="bye"), 0, ""),
    (F.Goodbye(reason="h\u00e9 \u2713"), 0, "the length counts UTF-8 bytes, not characters"),
    (F.Subscribe(publisher="sensors/temp?from=100", subscriber=1, initial_demand=16), 0, ""),
    (F.Subscribe(publisher="ticks", subscriber=2, initial_demand=2**63 - 1), 0, "unbounded demand"),
    (F.Subscribe(publisher="t", subscriber=0, initial_demand=0), 0, "id 0 and no initial demand are allowed"),
    (F.Request(subscriber=1, demand=1), 0, ""),
    (F.Request(subscriber=300, demand=2**63 - 1), 0, "2**63-1: effectively unbounded"),
    (F.Request(subscriber=2**32, demand=2**32 + 1), 0, "ids and demands above 32 bits"),
    (F.Cancel(subscriber=1), 0, ""),
    (F.OnSubscribe(subscriber=1), 0, "variable-size elements"),
    (F.OnSubscribe(subscriber=1, element_size=8), 0, "8-byte elements"),
    (F.OnNext(subscriber=1, element=b"hi"), 0, "length-prefixed element"),
    (F.OnNext(subscriber=1, element=b""), 0, "an empty element"),
    (F.OnNext(subscriber=1, element=bytes(range(8))), 8, "on a stream with elementSize 8"),
    (F.OnNextPacked(subscriber=1, count=2, elements=bytes(range(16))), 8, "two 8-byte elements"),
    (F.OnNextPart(subscriber=1, element_id=0, data=b"abc"), 0, ""),
    (F.OnNextLastPart(subscriber=1, element_id=0, data=b"de"), 0, "completes element 0: b'abcde'"),
    (F.OnComplete(subscriber=1), 0, ""),
    (F.OnError(subscriber=1, error="boom"), 0, ""),
    (F.ExtensionMessage(type=X.PING, payload=bytes(range(1, 9))), 0, "keepalive ping (§14)"),
    (F.ExtensionMessage(type=X.PONG, payload=bytes(range(1, 9))), 0, "its pong"),
    (
        F.ExtensionMessage(type=X.AUTH_AUTHENTICATE, payload=b"\x01\x05token"),
        0,
        'credentials: kind 1 (token), "token" (§15)',
    ),
    (
        F.ExtensionMessage(type=X.AUTH_AUTHENTICATE, payload=b"\x02\x03ann\x02pw"),
        0,
        'credentials: kind 2 (user, password), "ann", "pw"',
    ),
    (F.ExtensionMessage(type=X.AUTH_OK), 0, "empty payload"),
    (
        F.ExtensionMessage(type=X.AUTH_SUBSCRIBE_CREDENTIALS, payload=b"\x07\x01\x01t"),
        0,
        'credentials for subscriber 7: token "t"',
    ),
    (F.ExtensionMessage(type=RESUME_TOKEN, payload=_TOKEN), 0, "session token 00 01 … 0f (§16)"),
    (
        F.ExtensionMessage(type=RESUME, payload=encode_resume(_TOKEN, 300)),
        0,
        "that token; 300 bytes of the server's stream received",
    ),
    (F.ExtensionMessage(type=RESUMED, payload=encode_position(0)), 0, "position 0"),
    (F.ExtensionMessage(type=RESUME_REFUSED, payload=b"no"), 0, 'reason "no"'),
    (F.ExtensionMessage(type=RESUME_ACK, payload=encode_position(65536)), 0, "position 65536"),
    (
        F.ExtensionMessage(type=X.CONTENT_TYPE, payload=encode_content_type(1, "application/json")),
        0,
        "the elements of subscription 1, whose onSubscribe follows, are JSON (§17)",
    ),
    (
        F.ExtensionMessage(type=X.SUBSCRIBE_METADATA, payload=encode_metadata(1, {"x": b"1"})),
        0,
        'one entry, "x" = "1", for the subscribe of subscriber 1 that follows (§18)',
    ),
    (
        F.ExtensionMessage(type=X.ERROR_CODE, payload=encode_error_code(1, ErrorCode.UNKNOWN_PUBLISHER)),
        0,
        "the next onError for subscriber 1 has code 2, unknown publisher (§19)",
    ),
    (
        F.ExtensionMessage(type=X.GOODBYE_CODE, payload=encode_goodbye_code(ErrorCode.TIMEOUT)),
        0,
        "the goodbye that follows has code 11, timeout",
    ),
    (
        F.ExtensionMessage(type=MESSAGE, payload=encode_message("events/click", b"hi")),
        0,
        'to handler "events/click", body "hi" (§20)',
    ),
    (F.ExtensionMessage(type=MESSAGE_CREDIT, payload=encode_credit(16)), 0, "16 more messages"),
    (
        F.ExtensionMessage(type=CHANNEL, payload=encode_channel_message(CHANNEL, 1)),
        0,
        "the next subscribe with subscriber 1 opens a channel (§21)",
    ),
    (
        F.ExtensionMessage(type=INPUT_REQUEST, payload=encode_channel_message(INPUT_REQUEST, 1, 16)),
        0,
        "16 more input elements on channel 1",
    ),
    (
        F.ExtensionMessage(type=INPUT_CANCEL, payload=encode_channel_message(INPUT_CANCEL, 1)),
        0,
        "no more input",
    ),
    (
        F.ExtensionMessage(type=INPUT_NEXT, payload=encode_channel_message(INPUT_NEXT, 1, b"hi")),
        0,
        'input element "hi"',
    ),
    (
        F.ExtensionMessage(type=INPUT_NEXT_PART, payload=encode_channel_message(INPUT_NEXT_PART, 1, b"abc")),
        0,
        'a part of channel 1\'s next input element: "abc" (extension input-parts, §21.6)',
    ),
    (
        F.ExtensionMessage(type=INPUT_NEXT, payload=encode_channel_message(INPUT_NEXT, 1, b"de")),
        0,
        'its last part: the input element "abcde"',
    ),
    (
        F.ExtensionMessage(type=INPUT_COMPLETE, payload=encode_channel_message(INPUT_COMPLETE, 1)),
        0,
        "the input ended",
    ),
    (
        F.ExtensionMessage(type=INPUT_ERROR, payload=encode_channel_message(INPUT_ERROR, 1, b"boom")),
        0,
        'the input failed: "boom"',
    ),
]


def wire_name(frame: F.Frame) -> str:
    """The message's name in PROTOCOL.md (an extension message's is its type's)."""
    if isinstance(frame, F.ExtensionMessage):
        return EXTENSION_MESSAGES[frame.type][0]
    return WIRE_NAMES[type(frame)]


def type_code(frame: F.Frame) -> int:
    if isinstance(frame, F.ExtensionMessage):
        return frame.type
    return F.FRAME_TYPES[type(frame)].value


# -- vectors -------------------------------------------------------------------------------
def _field_json(value: object) -> object:
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    if isinstance(value, tuple):
        return list(value)
    return value


def frame_to_json(frame: F.Frame) -> dict[str, Any]:
    """The fields of ``frame`` as JSON values (bytes as ``{"hex": ...}``, tuples as lists)."""
    return {name: _field_json(getattr(frame, name)) for name in frame.__dataclass_fields__}


def frame_from_json(type_name: str, fields: dict[str, Any]) -> F.Frame:
    """Inverse of :func:`frame_to_json`, by the message's wire name."""
    cls: type[F.Frame]
    if type_name in EXTENSION_NAMES:
        cls = F.ExtensionMessage
    else:
        cls = {name: cls for cls, name in WIRE_NAMES.items()}[type_name]
    kwargs: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, dict):
            kwargs[key] = bytes.fromhex(value["hex"])
        elif isinstance(value, list):
            kwargs[key] = tuple(value)
        else:
            kwargs[key] = value
    return cls(**kwargs)


def _credentials_json(credentials: object) -> dict[str, Any]:
    if isinstance(credentials, Token):
        return {"kind": 1, "token": credentials.token}
    assert isinstance(credentials, UserPassword)
    return {"kind": 2, "user": credentials.user, "password": credentials.password}


def payload_fields(message_type: int, payload: bytes) -> dict[str, Any]:
    """An extension message's payload as its section spells the fields, decoded by the code's
    own decoders (bytes as ``{"hex": ...}``), so that other languages can check their payload
    codecs too."""
    if message_type in (X.PING, X.PONG):
        return {"data": {"hex": payload.hex()}}
    if message_type == X.AUTH_AUTHENTICATE:
        return _credentials_json(decode_credentials(payload))
    if message_type == X.AUTH_OK:
        return {}
    if message_type == X.AUTH_SUBSCRIBE_CREDENTIALS:
        sid, credentials = decode_subscribe_credentials(payload)
        return {"subscriber": sid, **_credentials_json(credentials)}
    if message_type == RESUME_TOKEN:
        return {"token": {"hex": decode_token(payload).hex()}}
    if message_type == RESUME:
        request = decode_resume(payload)
        return {"token": {"hex": request.token.hex()}, "position": request.position}
    if message_type in (RESUMED, RESUME_ACK):
        return {"position": decode_position(payload, "position")}
    if message_type == RESUME_REFUSED:
        return {"reason": payload.decode()}
    if message_type == X.CONTENT_TYPE:
        sid, media_type = decode_content_type(payload)
        return {"subscriber": sid, "media_type": media_type}
    if message_type == X.SUBSCRIBE_METADATA:
        sid, entries = decode_metadata(payload, 1 << 16, 1024)
        return {"subscriber": sid, "entries": {key: {"hex": value.hex()} for key, value in entries.items()}}
    if message_type == X.ERROR_CODE:
        sid, code = decode_error_code(payload)
        return {"subscriber": sid, "code": code}
    if message_type == X.GOODBYE_CODE:
        return {"code": decode_goodbye_code(payload)}
    if message_type == MESSAGE:
        name, body = decode_message(payload)
        return {"name": name, "body": {"hex": body.hex()}}
    if message_type == MESSAGE_CREDIT:
        return {"count": decode_credit(payload)}
    sid, value = decode_channel_message(message_type, payload)
    if message_type == INPUT_REQUEST:
        return {"subscriber": sid, "demand": value}
    if message_type in (INPUT_NEXT, INPUT_NEXT_PART):
        assert isinstance(value, bytes)
        return {"subscriber": sid, "data": {"hex": value.hex()}}
    if message_type == INPUT_ERROR:
        return {"subscriber": sid, "error": value}
    return {"subscriber": sid}  # channel, inputCancel, inputComplete


def vectors() -> list[dict[str, Any]]:
    """Every example as a JSON-able test vector."""
    out = []
    for frame, element_size, note in EXAMPLES:
        vector = {
            "type": wire_name(frame),
            "code": type_code(frame),
            "fields": frame_to_json(frame),
            "element_size": element_size,
            "hex": F.encode(frame, element_size=element_size).hex(" "),
            "note": note,
        }
        if isinstance(frame, F.ExtensionMessage):
            vector["payload_fields"] = payload_fields(frame.type, frame.payload)
        out.append(vector)
    return out


INVALID: list[tuple[str, int, str]] = [
    ("05 80 00 01", 0, "request whose subscriber varint is not minimal (80 00 for 0)"),
    ("05 ff ff ff ff ff ff ff ff ff ff 01", 0, "a varint of 11 bytes"),
    ("05 01 ff ff ff ff ff ff ff ff ff 02", 0, "a 10-byte varint whose last byte is above 01: 2**64 or more"),
    ("03 01 ff", 0, "a goodbye reason that is not UTF-8"),
    ("03 03 ed a0 80", 0, "a goodbye reason holding an encoded surrogate (U+D800)"),
    ("00", 0, "type 0x00, reserved forever"),
    ("0e", 0, "type 0x0e, the first reserved core type"),
    ("7f", 0, "type 0x7f, the last reserved core type"),
    ("03 81 80 04", 0, "a string length of 65537, above the default max_string_length"),
    ("08 01 81 80 80 08", 0, "an element length of 16 MiB + 1, above the default max_element_size"),
    ("09 01 00", 8, "onNextPacked with count 0 on a stream with elementSize 8"),
    ("09 01 01 00", 0, "onNextPacked with elementSize 0, before onSubscribe or for no subscription"),
    ("01 00 41" + " 01" * 65, 0, "a hello listing 65 extensions, above the default max_extensions"),
]
"""Byte strings every receiver refuses as soon as it has read them, with the default limits of §11:
(hex, elementSize of subscriber 1, what is wrong). The section each breaks is computed below."""


def invalid_vectors() -> list[dict[str, Any]]:
    """Each of :data:`INVALID` with the section the code's goodbye cites for it."""
    from rstreams.wire import ConnectionConfig
    from rstreams.wire._parser import FrameParser

    config = ConnectionConfig()
    out = []
    for hexed, element_size, note in INVALID:
        parser = FrameParser(
            max_element_size=config.max_element_size,
            max_string_length=config.max_string_length,
            max_extensions=config.max_extensions,
        )
        if element_size:
            parser.element_sizes[1] = element_size
        frames = parser.feed(bytes.fromhex(hexed))
        error = parser.error
        assert not frames and error is not None, f"{hexed} is not refused"
        section: str = getattr(error, "cited", "")
        out.append({"hex": hexed, "element_size": element_size, "section": section, "note": note})
    return out


INVALID_PAYLOADS: list[tuple[int, str, str]] = [
    (X.AUTH_AUTHENTICATE, "", "no credentials kind"),
    (X.AUTH_AUTHENTICATE, "03 01 61", "credentials kind 3"),
    (X.AUTH_AUTHENTICATE, "01 05 61", "a token whose length runs past the payload"),
    (X.AUTH_AUTHENTICATE, "01 01 61 00", "a byte after the token"),
    (X.AUTH_AUTHENTICATE, "01 02 c3 28", "a token that is not UTF-8"),
    (RESUME, "00 00", "a resume token of 0 bytes"),
    (RESUME_ACK, "80 00", "a non-minimal position"),
    (X.CONTENT_TYPE, "01", "no media type"),
    (X.CONTENT_TYPE, "01 74 65 78 74", "a media type without type/subtype"),
    (X.CONTENT_TYPE, "01 61 2f 62 c3 a9", "a media type that is not printable US-ASCII"),
    (X.SUBSCRIBE_METADATA, "01 01 01 58 00", "an upper-case key"),
    (X.SUBSCRIBE_METADATA, "01 02 01 78 00 01 78 00", "the same key twice"),
    (X.SUBSCRIBE_METADATA, "01 01 01 78 00 00", "a byte after the last entry"),
    (X.SUBSCRIBE_METADATA, "01 41", "65 entries, above the default max_metadata_entries"),
    (X.ERROR_CODE, "01", "a subscriber and no code"),
    (X.GOODBYE_CODE, "0b 00", "a byte after the code"),
    (MESSAGE, "05 61", "a name whose length runs past the payload"),
    (MESSAGE, "01 ff", "a name that is not UTF-8"),
    (MESSAGE_CREDIT, "00", "a count of 0"),
    (MESSAGE_CREDIT, "80 80 80 80 80 80 80 80 80 01", "a count of 2**63"),
    (MESSAGE_CREDIT, "01 00", "a byte after the count"),
    (INPUT_REQUEST, "01 00", "input demand 0"),
    (INPUT_CANCEL, "01 00", "a byte after the subscriber"),
    (INPUT_ERROR, "01 ff", "an error text that is not UTF-8"),
]
"""Extension payloads every receiver refuses (the extension active, with the default limits):
(type, payload hex, what is wrong). The section each breaks is computed below."""


def invalid_payloads() -> list[dict[str, Any]]:
    """Each of :data:`INVALID_PAYLOADS` with the section the code's decoder cites for it."""
    from rstreams.errors import RemoteProtocolError

    def metadata(data: bytes) -> object:
        return decode_metadata(data, 16 * 1024, 64)

    decoders: dict[int, Any] = {
        X.AUTH_AUTHENTICATE: decode_credentials,
        RESUME: decode_resume,
        RESUME_ACK: lambda data: decode_position(data, "resumeAck"),
        X.CONTENT_TYPE: decode_content_type,
        X.SUBSCRIBE_METADATA: metadata,
        X.ERROR_CODE: decode_error_code,
        X.GOODBYE_CODE: decode_goodbye_code,
        MESSAGE: decode_message,
        MESSAGE_CREDIT: decode_credit,
    }
    out = []
    for kind, hexed, note in INVALID_PAYLOADS:
        decode = decoders.get(kind) or (lambda data, kind=kind: decode_channel_message(kind, data))
        try:
            decode(bytes.fromhex(hexed))
        except RemoteProtocolError as error:
            reason = getattr(error, "reason", "")
            cited = re.search(r"\(PROTOCOL\.md §([\d.]+)\)$", reason)
            assert cited, reason
            out.append(
                {
                    "type": EXTENSION_MESSAGES[kind][0],
                    "code": kind,
                    "payload": hexed,
                    "section": cited.group(1),
                    "note": note,
                }
            )
        else:
            raise AssertionError(f"0x{kind:02x} {hexed} is not refused")
    return out


def content_type_vectors() -> list[dict[str, Any]]:
    """§17.3's example elements whose bytes this document defines, encoded by the codecs that
    announce them (msgpack and Arrow elements are their own specifications' business)."""
    from rstreams.net import FLOAT64, INT64, JSON, UTF8, fixed_size

    examples: list[tuple[Any, Any, str]] = [
        (fixed_size(2), None, "any bytes, no structure; elementSize any (2 for this stream)"),
        (UTF8, "hé", "UTF-8, no byte-order mark, no terminator"),
        (JSON, {"a": [1, "é"]}, "compact, non-ASCII escaped as \\uXXXX; decoders accept any JSON text"),
        (INT64, 1, "signed, two's complement, little-endian"),
        (INT64, -2, "signed, two's complement, little-endian"),
        (FLOAT64, 1.5, "IEEE 754 binary64, little-endian"),
    ]
    out = []
    for codec, value, note in examples:
        data = codec.encode(b"ab" if value is None else value)
        out.append(
            {
                "media_type": codec.media_type,
                "element_size": codec.element_size,
                "hex": data.hex(" "),
                "value_json": None if value is None else json.dumps(value, ensure_ascii=False),
                "note": note,
            }
        )
    return out


NAME_OFFER = ["a b", "x%2Fy", "100%25", "f/{x}", "n", "ev/{kind}", "ev/all", "ev/{other}"]
"""The names one side offers for the ``names`` vectors (PROTOCOL.md §5.5), in this order."""

NAME_REQUESTS = [
    # the path: split on '/', each segment percent-decoded; %2F is a '/' inside its segment
    "a%20b", "a b", "%61%20%62", "x%2Fy", "x%2fy", "100%25", "f/a%2Fb", "f/a%20b", "f/%25",
    "f/k%C3%BCche", "f/a%2Fb?n=1", "f/a?x=q",
    "x/y", "f/a/b", "f/", "a%2520b", "A%20B", "a b/", "/a b", "nope/%zz", "a%zz", "nope/a%20b?x=1",
    "it's/a%20\"b\"?x='",  # the path quoted as written, not escaped
    "f/%zz", "f/%FF", "f/a%2", "100%", "f/%zz?y=%zz",
    # the query: '&' and the first '=' split, each part percent-decoded, '+' a plus
    "n?", "n?q=a+b", "n?q=a%2Bb", "n?q=a%20b", "n?q=", "n?q", "n?q=a=b", "n?a%26b=c%3Dd", "n?x=1&y",
    "n?&x=1&&y=2&", "n?q=%C3%A9", "n?q=%e2%82%ac", "n?q=%F0%9F%98%80", "n?q=100%25", "n?q=é",
    "n?q=1+1&s=%20&e=", "n?q=a%2Bb+c", "n?__proto__=x",
    "n?q=%", "n?q=%2", "n?q=%zz", "n?q=a%2", "n?q=%FF", "n?q=%C3", "n?q=%C3x%A9", "n?q=%C0%80",
    "n?q=%ED%A0%80", "n?q=%F4%90%80%80", "n?q=%\uff21\uff21", "n?%zz=1", "n?%=1&q=%zz", "n?q=%zz&q=1",
    "n?to=3&to=4", "n?to=3&t%6F=4", "n?to&to", "n?to=1&to=%zz", "n?to=1&x&to=2&x",
    "nope?x=%zz", "nope?to=3&to=4", "nope/{x}?a&a",
    # exact names before patterns, patterns in the order offered, a field over a query key
    "ev/all", "ev/x", "ev/a%2Fb", "ev/x?kind=q", "ev/all?k=1&k=2", "ev/", "ev/x/y",
]  # fmt: skip
"""Requested names, each answered as in :func:`name_vectors`."""

NOT_OFFERABLE = ["100%", "a/%zz", "{x}/%E9"]
"""Offered names with a segment that is not percent-encoded UTF-8: no request could reach them."""


def name_vectors() -> dict[str, Any]:
    """PROTOCOL.md §5.5's names: what a side offering :data:`NAME_OFFER` does with each of
    :data:`NAME_REQUESTS`, as Python's router answers (the other bindings' tests check theirs)."""
    from rstreams.net._routes import MalformedNameError, Router, unknown_message

    def factory(entry: str) -> Any:
        return lambda params: (entry, params)

    router = Router({entry: factory(entry) for entry in NAME_OFFER})
    cases: list[dict[str, Any]] = []
    for name in NAME_REQUESTS:
        try:
            found = router.find_batched(name)
        except MalformedNameError as malformed:
            cases.append(
                {
                    "name": name,
                    "outcome": "malformed",
                    "code": int(ErrorCode.APPLICATION),
                    "error": str(malformed),
                }
            )
            continue
        if found is None:
            error = unknown_message(name)
            cases.append(
                {"name": name, "outcome": "unknown", "code": int(ErrorCode.UNKNOWN_PUBLISHER), "error": error}
            )
            continue
        entry, params = found[0]
        cases.append(
            {"name": name, "outcome": "found", "offer": entry, "params": dict(sorted(params.items()))}
        )
    for entry in NOT_OFFERABLE:
        try:
            Router({entry: factory(entry)})
        except ValueError:
            continue
        raise AssertionError(f"{entry!r} is offered")
    return {"offered": NAME_OFFER, "cases": cases, "not_offerable": NOT_OFFERABLE}


def vectors_text() -> str:
    header = {
        "description": "RS.io wire-protocol test vectors (PROTOCOL.md §13). Each 'hex' is the exact "
        "encoding of 'fields'; 'element_size' is the subscription's onSubscribe.elementSize, "
        "which onNext and onNextPacked depend on; an extension message's 'payload_fields' are its "
        "payload's fields as its section names them. Each of 'invalid' is bytes a receiver with "
        "the default limits of §11 refuses as soon as it reads them (a connection error, §10), and "
        "the section its goodbye cites; each of 'invalid_payloads' an extension message's payload a "
        "receiver refuses (a connection error), and the section cited; each of 'content_types' an "
        "element as §17.3 encodes it for its media type ('value_json': the element decoded, as JSON "
        "text in a string, so that a reader with no floating-point JSON numbers can skip it; null for "
        "opaque bytes). 'names' (PROTOCOL.md §5.5): each of its 'cases' a name requested from a side "
        "that offers the names 'offered' (in that order, '{field}' a pattern matching one segment), "
        "and what it gives: 'found', the offer it matches (as written) and the parameters its factory "
        "gets (query and fields), or the onError a subscribe for it is refused with, its 'code' "
        "(§19.2) and text ('error'): 'unknown' (code 2) or 'malformed' (code 1); 'not_offerable' "
        "names a side refuses to offer. Generated by "
        "docs/make_protocol_docs.py.",
        "version": F.PROTOCOL_VERSION,
        "vectors": vectors(),
        "invalid": invalid_vectors(),
        "invalid_payloads": invalid_payloads(),
        "content_types": content_type_vectors(),
        "names": name_vectors(),
    }
    return json.dumps(header, indent=2, ensure_ascii=False) + "\n"


# -- markdown blocks -----------------------------------------------------------------------
def _types_table() -> str:
    rows = ["| code | message | direction | fields, in order |", "|---|---|---|---|"]
    rows.append("| `0x00` | *(reserved, never valid)* | | |")
    for code, cls in F.FRAME_CLASSES.items():
        direction = DIRECTIONS.get(cls, "publisher → subscriber")
        rows.append(f"| `0x{code.value:02X}` | {WIRE_NAMES[cls]} | {direction} | {LAYOUTS[cls]} |")
    rows.append(f"| `0x{F.FIRST_RESERVED_CORE_TYPE:02X}`–`0x7F` | *(reserved for later core versions)* | | |")
    extension_rows: list[tuple[int, str]] = []  # (first type, row), sorted by type below
    for ext in X.REGISTERED:
        codes = sorted(ext.message_types)
        named = [t for t in codes if t in EXTENSION_MESSAGES]
        for t in named:
            name, direction, layout, section = EXTENSION_MESSAGES[t]
            extension_rows.append(
                (
                    t,
                    f"| `0x{t:02X}` | {name} ({ext.name}, {section}) | {direction} | "
                    f"length: varint, payload: {layout} |",
                )
            )
        rest = [t for t in codes if t not in named]
        if rest:  # tests/wire/test_protocol_doc.py: these must be ext.reserved (refused by the core)
            span = f"`0x{rest[0]:02X}`" + (f"–`0x{rest[-1]:02X}`" if len(rest) > 1 else "")
            reserved = "reserved" if named else "its messages"
            owner = f"extension {ext.name}, id {ext.id}: {reserved}"
            extension_rows.append((rest[0], f"| {span} | *({owner})* | | length: varint, payload |"))
    rows += [row for _, row in sorted(extension_rows)]
    owned = set(X.BY_TYPE)
    free = [t for t in range(F.FIRST_EXTENSION_TYPE, 0x100) if t not in owned]
    rows.append(
        f"| `0x{free[0]:02X}`–`0xFF` | *(no extension yet: a connection error, §4.4)* | | |"
        if free == list(range(free[0], 0x100))
        else "| (other types in `0x80`–`0xFF`) | *(no extension yet: a connection error, §4.4)* | | |"
    )
    return "\n".join(rows)


def _examples_table() -> str:
    rows = ["| message | fields | elementSize | bytes (hex) | note |", "|---|---|---|---|---|"]
    for v in vectors():
        fields = ", ".join(f"{k}={_show(val)}" for k, val in v["fields"].items())
        rows.append(f"| {v['type']} | {fields} | {v['element_size']} | `{v['hex']}` | {v['note']} |")
    return "\n".join(rows)


def _show(value: object) -> str:
    if isinstance(value, dict):
        return f"0x{value['hex']}" if value["hex"] else "(empty)"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def _stream_table() -> str:
    signals = list(Signal)
    rows = ["| state \\ signal | " + " | ".join(s.value for s in signals) + " |"]
    rows.append("|---" * (len(signals) + 1) + "|")
    for state in StreamState:
        cells = []
        for sig in signals:
            new = STREAM_TRANSITIONS.get((state, sig))
            cells.append(new.name if new is not None else "✗")
        rows.append(f"| **{state.name}** | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def _connection_table() -> str:
    inputs = list(ConnectionInput)
    rows = ["| state \\ input | " + " | ".join(i.value for i in inputs) + " |"]
    rows.append("|---" * (len(inputs) + 1) + "|")
    for state in ConnectionState:
        cells = []
        for inp in inputs:
            new = CONNECTION_TRANSITIONS.get((state, inp))
            cells.append(new.name if new is not None else "✗")
        rows.append(f"| **{state.name}** | " + " | ".join(cells) + " |")
    return "\n".join(rows)


# -- a real conversation (§13) -------------------------------------------------------------------
def describe(frame: F.Frame) -> str:
    """A frame as the example conversations of PROTOCOL.md write it (tests decode and compare)."""
    if isinstance(frame, F.ClientHello | F.ServerHello):
        return f"{wire_name(frame)}(version {frame.version}, extensions {list(frame.extensions)})"
    if isinstance(frame, F.Goodbye):
        return f"goodbye({json.dumps(frame.reason, ensure_ascii=False)})"
    if isinstance(frame, F.Subscribe):
        return (
            f"subscribe({json.dumps(frame.publisher)}, subscriber {frame.subscriber}, "
            f"initialDemand {frame.initial_demand})"
        )
    if isinstance(frame, F.Request):
        return f"request({frame.subscriber}, demand {frame.demand})"
    if isinstance(frame, F.OnSubscribe):
        return f"onSubscribe({frame.subscriber}, elementSize {frame.element_size})"
    if isinstance(frame, F.OnNext):
        return f"onNext({frame.subscriber}, {_element(frame.element)})"
    if isinstance(frame, F.OnError):
        return f"onError({frame.subscriber}, {json.dumps(frame.error, ensure_ascii=False)})"
    if isinstance(frame, F.Cancel | F.OnComplete):
        return f"{wire_name(frame)}({frame.subscriber})"
    if isinstance(frame, F.ExtensionMessage):
        return _describe_extension(frame)
    return wire_name(frame)


def _element(data: bytes) -> str:
    try:
        text = data.decode()
    except UnicodeDecodeError:
        text = ""
    return json.dumps(text) if text.isprintable() and text else f"0x{data.hex()}"


def _describe_extension(frame: F.ExtensionMessage) -> str:
    name = EXTENSION_MESSAGES[frame.type][0] if frame.type in EXTENSION_MESSAGES else f"0x{frame.type:02x}"
    payload = frame.payload
    if frame.type == X.AUTH_AUTHENTICATE and payload[:1] == b"\x01":
        return f"{name}(kind 1: token {json.dumps(payload[2:].decode())})"
    if frame.type in (RESUMED, RESUME_ACK):
        return f"{name}({decode_position(payload, name)})"
    if frame.type == RESUME:
        return f"{name}(token, {decode_resume(payload).position})"
    if frame.type == X.ERROR_CODE:
        subscriber, code = decode_error_code(payload)
        return f"{name}(subscriber {subscriber}, code {code}: {_code_name(code)})"
    if frame.type == X.GOODBYE_CODE:
        code = decode_goodbye_code(payload)
        return f"{name}({code}: {_code_name(code)})"
    if frame.type == X.CONTENT_TYPE:
        subscriber, media_type = decode_content_type(payload)
        return f"{name}({subscriber}, {json.dumps(media_type)})"
    if frame.type == X.SUBSCRIBE_METADATA:
        subscriber, entries = decode_metadata(payload, max_bytes=1 << 20, max_entries=1 << 10)
        shown = ", ".join(f"{json.dumps(k)} = {_element(v) if v else '(empty)'}" for k, v in entries.items())
        count = f"{len(entries)} entr{'y' if len(entries) == 1 else 'ies'}"
        return f"{name}(subscriber {subscriber}, {count}{': ' + shown if entries else ''})"
    if frame.type == MESSAGE_CREDIT:
        return f"{name}({decode_credit(payload)})"
    if frame.type == MESSAGE:
        target, body = decode_message(payload)
        return f"{name}({json.dumps(target)}, {_element(body) if body else 'no body'})"
    if frame.type in (X.PING, X.PONG) or not payload:
        return name
    return f"{name}(payload {payload.hex(' ')})"


def _code_name(code: int) -> str:
    return ErrorCode(code).name.lower().replace("_", " ") if code in set(ErrorCode) else "unregistered"


def _hello_of(server: bool, extensions: tuple[int, ...]) -> F.Frame:
    return F.ServerHello(extensions=extensions) if server else F.ClientHello(extensions=extensions)


async def _recorded_exchange() -> list[tuple[str, F.Frame]]:
    """A real `connect` subscribes to a real `serve`'s built-in ``counter?to=2`` (``--codec raw``:
    the decimal text as bytes, no content type announced) with demand 2,
    takes both elements and the completion, and says goodbye; a proxy between them records
    every frame. The proxy reads the server's bytes only once the client's subscribe has
    passed, and hands them to the client only once the subscription's onComplete is among
    them (as a network slower in that direction would), so that the recording is the same on
    every run: the subscribe is optimistic, sent before the serverHello arrives, and whatever
    the client says in answer to the server comes after the server's whole answer."""
    from rstreams._cli_publishers import builtin_publishers
    from rstreams.net import connect, serve
    from rstreams.wire._parser import FrameParser

    record: list[tuple[str, F.Frame]] = []
    subscribed = asyncio.Event()
    done = asyncio.Event()
    server = await serve("tcp://127.0.0.1:0", builtin_publishers("raw"))  # no content type announced
    host, port = server.url.removeprefix("tcp://").rsplit(":", 1)

    async def relay(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter, way: str, gate: asyncio.Event | None
    ) -> None:
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
        held = bytearray() if gate is not None else None  # the server's bytes up to its onComplete
        while data := await reader.read(65536):
            if gate is not None:
                await gate.wait()
            for frame in parser.feed(data):
                record.append((way, frame))  # type: ignore[arg-type]  # no batching parser: frames only
                if isinstance(frame, F.Subscribe):
                    subscribed.set()
                if isinstance(frame, F.OnComplete) and held is not None:
                    data, held = bytes(held) + data, None  # the whole answer reaches the client at once
            if held is not None:
                held += data
                continue
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()

    async def proxy(client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_connection(host, int(port))
        await asyncio.gather(
            relay(client_reader, server_writer, "C→S", None),
            relay(server_reader, client_writer, "S→C", subscribed),
        )
        server_writer.close()
        client_writer.close()
        done.set()

    relay_server = await asyncio.start_server(proxy, "127.0.0.1", 0)
    proxy_port = relay_server.sockets[0].getsockname()[1]
    conn = await connect(f"tcp://127.0.0.1:{proxy_port}")
    taker = _TakeTwo()
    conn.publisher("counter?to=2").subscribe(taker)
    items = await asyncio.wait_for(taker.result, 10)
    await conn.aclose("bye")
    await asyncio.wait_for(done.wait(), 10)
    relay_server.close()
    await server.aclose()
    if items != [b"0", b"1"]:
        raise AssertionError(f"the example exchange received {items!r}")
    return record


class _TakeTwo:
    """A subscriber that requests exactly 2 elements, once, and collects them."""

    def __init__(self) -> None:
        self.items: list[bytes] = []
        self.result: asyncio.Future[list[bytes]] = asyncio.get_running_loop().create_future()

    def on_subscribe(self, subscription: Any) -> None:
        subscription.request(2)

    def on_next(self, item: bytes) -> None:
        self.items.append(item)

    def on_error(self, error: BaseException) -> None:
        self.result.set_exception(error)

    def on_complete(self) -> None:
        self.result.set_result(self.items)


def _conversation() -> str:
    record = asyncio.run(asyncio.wait_for(_recorded_exchange(), 30))
    lines = [(way, F.encode(frame).hex(" "), describe(frame)) for way, frame in record]
    width = max(len(hexed) for _, hexed, _ in lines) + 2
    return "```\n" + "\n".join(f"{way}  {hexed.ljust(width)}{text}" for way, hexed, text in lines) + "\n```"


BLOCKS = {
    "types": _types_table,
    "examples": _examples_table,
    "conversation": _conversation,
    "stream-states": _stream_table,
    "connection-states": _connection_table,
}


def render(markdown: str) -> str:
    """``markdown`` with every generated block replaced by its current content."""
    for name, make in BLOCKS.items():
        pattern = re.compile(rf"(<!-- generated:{name} -->\n).*?(<!-- /generated:{name} -->)", re.DOTALL)
        if not pattern.search(markdown):
            raise ValueError(f"PROTOCOL.md lacks the generated:{name} block")
        start, end = pattern.search(markdown).span()  # type: ignore[union-attr]  # checked just above
        opening, closing = f"<!-- generated:{name} -->\n", f"<!-- /generated:{name} -->"
        markdown = markdown[:start] + opening + make() + "\n" + closing + markdown[end:]
    return markdown


def main(argv: list[str]) -> int:
    asked = argv in (["-h"], ["--help"])
    if asked or set(argv) - {"--check"}:  # a typo must not rewrite the files
        print(f"usage: python docs/make_protocol_docs.py [--check]\n\n{__doc__}", file=sys.stderr)
        return 0 if asked else 2
    check = "--check" in argv
    current_md = PROTOCOL_MD.read_text()
    wanted = {PROTOCOL_MD: render(current_md), VECTORS_JSON: vectors_text()}
    stale = [path for path, text in wanted.items() if not path.exists() or path.read_text() != text]
    if check:
        for path in stale:
            print(f"out of date: {path.relative_to(ROOT)} (run python docs/make_protocol_docs.py)")
        return 1 if stale else 0
    for path in stale:
        path.write_text(wanted[path])
        print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
