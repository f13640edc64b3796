"""PROTOCOL.md agrees with the bytes and with itself.

* every section a goodbye or onError text cites exists, and the rule it cites is stated there;
* every message of the §3 table has a test vector in docs/protocol-vectors.json, and every
  type the table calls reserved is refused by the code;
* every example byte string in PROTOCOL.md decodes to what the text beside it says;
* every "§N" in the bindings' sources, docs/ and README.md is a heading here, the section named
  beside an extension is that extension's, and an error code's number and name agree.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.wire import (
    Cancel,
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    ExtensionMessage,
    Frame,
    OnComplete,
    OnNext,
    OnNextLastPart,
    OnNextPart,
    OnSubscribe,
    Request,
    ServerHello,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire._parser import FrameParser
from rstreams.wire._resume import ReplayBuffer, ResumeError, _read_message, decode_position
from rstreams.wire._varint import decode_varint, encode_varint
from rstreams.wire.extensions import AUTH, BY_TYPE, KEEPALIVE, REGISTERED, RESUME
from testkit.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
PROTOCOL = (ROOT / "PROTOCOL.md").read_text()
VECTORS = json.loads((ROOT / "docs" / "protocol-vectors.json").read_text())["vectors"]
CITATION = re.compile(r"\(PROTOCOL\.md §(\d+(?:\.\d+)?)\)$")


def _load_docs_script() -> ModuleType:
    return load_script("docs/make_protocol_docs.py")


DOCS = _load_docs_script()


def sections() -> dict[str, str]:
    """Section number -> its text, heading included; a section holds its subsections."""
    heads = [
        (m.start(), m.group(1)) for m in re.finditer(r"^##+ (?:(\d+(?:\.\d+)?)\.? )?", PROTOCOL, re.MULTILINE)
    ]
    found = {}
    for i, (start, number) in enumerate(heads):
        if number is None:
            continue
        end = next(
            (later for later, other in heads[i + 1 :] if other is None or not other.startswith(number + ".")),
            len(PROTOCOL),
        )
        found[number] = PROTOCOL[start:end]
    return found


SECTIONS = sections()


# -- citations ---------------------------------------------------------------------------------------
def _sources() -> list[Path]:
    src = ROOT / "src" / "rstreams"
    return sorted([*src.rglob("*.py"), *src.rglob("*.js"), *(ROOT / "js" / "src").rglob("*.js")])


def _cited(path: Path) -> set[str]:
    """The sections ``path`` cites: ``PROTOCOL.md §N``; ``section="N"`` of an error (§16.N for a
    ResumeError); the JavaScript client's ``"§N"`` strings."""
    text = path.read_text()
    cited = set(re.findall(r"PROTOCOL\.md §(\d+(?:\.\d+)?)", text))
    for match in re.finditer(r"section=\"(\d+(?:\.\d+)?)\"", text):
        before = text[max(0, match.start() - 400) : match.start()]
        last = before.rfind("Error(")  # the error this section= belongs to
        resume = last >= len("Resume") and before[last - len("Resume") : last] == "Resume"
        cited.add(f"16.{match.group(1)}" if resume else match.group(1))
    if path.suffix == ".js":
        cited |= set(re.findall(r"\"§(\d+(?:\.\d+)?)\"", text))
    return cited


def test_every_cited_section_in_the_sources_exists() -> None:
    assert {"16.2", "16.4", "16.7"} <= _cited(ROOT / "src" / "rstreams" / "wire" / "_resume.py")
    assert {"2.1"} <= _cited(ROOT / "src" / "rstreams" / "wire" / "_varint.py")
    missing = [
        f"{path.relative_to(ROOT)}: §{number}"
        for path in _sources()
        for number in sorted(_cited(path))
        if number not in SECTIONS
    ]
    assert not missing, missing


def _server(*extensions: int, **limits: Any) -> Connection:
    core = Connection(Side.SERVER, ConnectionConfig(extensions=frozenset(extensions), **limits))
    core.receive_data(encode(ClientHello(extensions=extensions)))
    core.data_to_send()
    core.events_received()
    return core


def _client_with(sid: int = 1, demand: int = 1, element_size: int = 0) -> Connection:
    """A client core with subscription ``sid`` answered by onSubscribe."""
    core = Connection(Side.CLIENT)
    core.receive_data(encode(ServerHello()))
    core.send(Subscribe(publisher="p", subscriber=sid, initial_demand=demand))
    core.receive_data(encode(OnSubscribe(subscriber=sid, element_size=element_size)))
    core.data_to_send()
    core.events_received()
    return core


def _goodbye(core: Connection, data: bytes, *, eof: bool = False) -> str:
    core.receive_data(data)
    if eof:
        core.receive_eof()
    closed = [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
    assert closed, f"no goodbye for {data.hex(' ')}"
    return closed[0].reason


def _refusal(core: Connection, data: bytes) -> str:
    """The onError text the core answers ``data`` with (a per-subscription error)."""
    core.receive_data(data)
    parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
    errors = [f for f in parser.feed(b"".join(core.data_to_send())) if type(f).__name__ == "OnError"]
    assert errors, f"no onError for {data.hex(' ')}"
    return str(errors[0].error)  # type: ignore[union-attr]  # an OnError


def _resume_error(call: Callable[[], object]) -> str:
    with pytest.raises(ResumeError) as info:
        call()
    return info.value.reason


def _websocket_close(data: bytes) -> str:
    """The close reason rstreams' WebSocket server sends when ``data`` is read after the upgrade
    (websockets' protocol, as rstreams.net._websocket sets up every connection's, without I/O)."""
    pytest.importorskip("websockets")
    from websockets.protocol import State
    from websockets.server import ServerProtocol

    from rstreams.net._websocket import own_close_reasons

    protocol = ServerProtocol(state=State.OPEN)
    own_close_reasons(protocol)
    protocol.receive_data(data)
    assert protocol.close_sent is not None, f"no close for {data.hex(' ')}"
    return str(protocol.close_sent.reason)


_SUB = encode(Subscribe(publisher="p", subscriber=1, initial_demand=1))
# (what the peer did, how to make the code answer it, the section that must be cited, words of that
# section that state the rule)
VIOLATIONS: list[tuple[str, Callable[[], str], str, str]] = [
    ("non-minimal varint", lambda: _goodbye(_server(), b"\x05\x80\x00\x01"), "2.1", "MUST be minimal"),
    (
        "11-byte varint",
        lambda: _goodbye(_server(), b"\x05" + b"\xff" * 10 + b"\x01"),
        "2.1",
        "longer than 10 bytes",
    ),
    ("invalid UTF-8", lambda: _goodbye(_server(), b"\x04\x01\xff\x01\x01"), "2.2", "invalid\nUTF-8"),
    ("unknown core type", lambda: _goodbye(_server(), b"\x0e\x00"), "3", "unknown or reserved type byte"),
    ("a second hello", lambda: _goodbye(_server(), encode(ClientHello())), "4.1", "a second hello"),
    (
        "version 1",
        lambda: _goodbye(Connection(Side.SERVER), encode(ClientHello(version=1))),
        "4.2",
        "version it does not",
    ),
    ("inactive extension", lambda: _goodbye(_server(), b"\x80\x08" + bytes(8)), "4.4", "is not active"),
    ("reserved type 0x87", lambda: _goodbye(_server(AUTH.id), b"\x87\x00"), "4.4", "*reserves*"),
    ("reserved type 0x8D", lambda: _goodbye(_server(RESUME.id), b"\x8d\x00"), "4.4", "*reserves*"),
    (
        "subscribe reusing an open id",
        lambda: _goodbye(_server(), _SUB + _SUB),
        "5.3",
        "MUST NOT send another subscribe",
    ),
    (
        "onNext for an id never subscribed",
        lambda: _goodbye(_client_with(), encode(OnNext(subscriber=9, element=b"x"))),
        "5.2",
        "IDLE",
    ),
    (
        "elements beyond demand",
        lambda: _goodbye(_client_with(demand=1), encode(OnNext(subscriber=1, element=b"x")) * 2),
        "6.3",
        "beyond it treats this as a **connection** error",
    ),
    (
        "onNextPacked without elementSize",
        lambda: _goodbye(_client_with(), b"\x09\x01\x01\x00"),
        "7",
        "onNextPacked for an id with no elementSize above 0",
    ),
    (
        "a split element not of elementSize",
        lambda: _goodbye(
            _client_with(element_size=8), encode(OnNextLastPart(subscriber=1, element_id=0, data=b"abc"))
        ),
        "7",
        "must join to exactly n bytes",
    ),
    (
        "onComplete inside a split element",
        lambda: _goodbye(
            _client_with(),
            encode(OnNextPart(subscriber=1, element_id=0, data=b"a")) + encode(OnComplete(subscriber=1)),
        ),
        "8",
        "onComplete while a part-received element",
    ),
    (
        "input ends inside a message",
        lambda: _goodbye(_server(), b"\x05\x01", eof=True),
        "9.3",
        "truncated frame",
    ),
    (
        "a string above its limit",
        lambda: _goodbye(_server(max_string_length=4, max_name_length=4), b"\x03\x05hello"),
        "11",
        "max_string_length",
    ),
    (
        "a hello listing too many extensions",
        lambda: _goodbye(
            Connection(Side.SERVER, ConnectionConfig(max_extensions=1)), b"\x01\x00\x02\x01\x02"
        ),
        "11",
        "max_extensions",
    ),
    (
        "a 7-byte ping",
        lambda: _goodbye(_server(KEEPALIVE.id), b"\x80\x07" + bytes(7)),
        "14.1",
        "exactly\n8 bytes",
    ),
    (
        "request(0)",
        lambda: _refusal(_server(), _SUB + encode(Request(subscriber=1, demand=1))[:2] + b"\x00"),
        "6.2",
        "rule 3.9",
    ),
    (
        "subscribe beyond max_subscriptions",
        lambda: _refusal(_server(max_subscriptions=1), _SUB + _SUB.replace(b"\x01\x01", b"\x02\x01")),
        "11",
        "max_subscriptions",
    ),
    (
        "a publisher name above max_name_length",
        lambda: _refusal(_server(max_name_length=1), encode(Subscribe(publisher="ab", subscriber=1))),
        "11",
        "max_name_length",
    ),
    (
        "an unmasked WebSocket frame from a client",
        lambda: _websocket_close(b"\x82\x03abc"),
        "1",
        "bytes that are not a valid client frame",
    ),
    (
        "a WebSocket close frame whose reason is not UTF-8",
        lambda: _websocket_close(b"\x88\x83" + bytes(4) + b"\x03\xe8\xff"),
        "1",
        "a close frame whose reason is not UTF-8 gets it too",
    ),
    (
        "a WebSocket message above 1 MiB",
        lambda: _websocket_close(b"\x82\xff" + (2**20 + 1).to_bytes(8, "big") + bytes(4)),
        "1",
        "MUST NOT send one above 1 MiB",
    ),
    (
        "a malformed resumeAck",
        lambda: _resume_error(lambda: decode_position(b"\x80\x00", "resumeAck")),
        "16.2",
        "non-minimal varint",
    ),
    (
        "an acknowledgement beyond what was sent",
        lambda: _resume_error(lambda: ReplayBuffer().acknowledge(5)),
        "16.4",
        "beyond what the peer has sent",
    ),
    (
        "a resume-exchange payload above 256 bytes",
        lambda: _resume_error(lambda: _read_message(bytearray(b"\x8a\x80\x04"), 0)),
        "16.7",
        "256 bytes",
    ),
]


@pytest.mark.parametrize(("what", "make", "section", "rule"), VIOLATIONS, ids=[v[0] for v in VIOLATIONS])
def test_a_reason_cites_the_section_that_states_the_rule(
    what: str, make: Callable[[], str], section: str, rule: str
) -> None:
    reason = make()
    match = CITATION.search(reason)
    assert match is not None, f"{what}: {reason!r} cites no section"
    assert match.group(1) == section, f"{what}: {reason!r} should cite §{section}"
    assert rule in SECTIONS[section], f"§{section} does not say {rule!r}"


# -- the message table and the vectors -------------------------------------------------------------
def _table_rows() -> list[tuple[list[int], str]]:
    block = PROTOCOL.split("<!-- generated:types -->")[1].split("<!-- /generated:types -->")[0]
    rows = []
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        codes = [int(c, 16) for c in re.findall(r"`0x([0-9A-Fa-f]{2})`", cells[0])]
        if codes and cells[0].startswith("`"):
            span = list(range(codes[0], codes[-1] + 1))
            rows.append((span, cells[1]))
    return rows


def test_every_message_of_the_table_has_a_vector() -> None:
    """The list comes from §3's table (whoever adds a message type adds its row and its vector)."""
    vectors = {(v["code"], v["type"]) for v in VECTORS}
    named = [(codes[0], cell.split(" (")[0]) for codes, cell in _table_rows() if not cell.startswith("*")]
    assert len(named) >= 13 + 10
    missing = [f"0x{code:02X} {name}" for code, name in named if (code, name) not in vectors]
    assert not missing, f"no vector in docs/protocol-vectors.json for {missing}"


def test_every_extension_type_the_table_does_not_name_is_reserved_and_refused() -> None:
    """A type of an extension without a message in the table must be refused by the core (§4.4).

    An extension that defines no message yet (its row says "its messages") is still being
    written: its types are checked once it names one."""
    for codes, cell in _table_rows():
        owners = {BY_TYPE[c] for c in codes if c in BY_TYPE}
        if not cell.startswith("*") or not owners or "its messages" in cell:
            continue
        for code in codes:
            owner = BY_TYPE[code]
            assert code in owner.reserved, (
                f"0x{code:02X} of {owner}: in the table without a message, not reserved"
            )
    for ext in REGISTERED:
        defined = ext.message_types - ext.reserved
        if defined & set(DOCS.EXTENSION_MESSAGES):
            assert defined <= set(DOCS.EXTENSION_MESSAGES), (
                f"{ext}: types without a message in §3 or a vector"
            )


# -- examples decode to what the text says ---------------------------------------------------------------
def test_varint_examples() -> None:
    text = SECTIONS["2.1"]
    examples = re.findall(r"`([0-9*\u2212 ]+)` → `([0-9a-f ]+)`", text)
    assert len(examples) >= 7
    for expression, hexed in examples:
        value = eval(expression.replace("\u2212", "-"), {"__builtins__": {}})  # digits, *, - only
        assert encode_varint(value).hex(" ") == hexed, expression
        data = bytes.fromhex(hexed)
        assert decode_varint(data, 0, len(data)) == (value, len(data))


def test_the_example_table_decodes_to_its_fields() -> None:
    block = PROTOCOL.split("<!-- generated:examples -->")[1].split("<!-- /generated:examples -->")[0]
    rows = [line for line in block.splitlines() if line.startswith("| ") and "`" in line]
    assert len(rows) == len(VECTORS)
    for row, vector in zip(rows, VECTORS, strict=True):
        hexed = re.search(r"`([0-9a-f ]+)`", row)
        assert hexed is not None and hexed.group(1) == vector["hex"], row
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=300)
        if vector["element_size"]:
            parser.element_sizes[1] = vector["element_size"]
        frames = parser.feed(bytes.fromhex(vector["hex"]))
        assert frames == [DOCS.frame_from_json(vector["type"], vector["fields"])], row
        assert row.startswith(f"| {vector['type']} |")


_TOKEN_HEX = bytes(range(16)).hex(" ")


def _conversation_lines() -> list[tuple[str, str, str]]:
    """Every line of an example conversation: (the section it is in, hex, description)."""
    lines = []
    for number, text in SECTIONS.items():
        if "." in number:
            continue  # a subsection: its section holds its text too
        for block in re.findall(r"```\n(.*?)```", text, re.DOTALL):
            # a long line's description may stand alone on the next line, indented
            block = re.sub(r"^((?:C→S|S→C)  [0-9a-f ]+)\n +(\S)", r"\1  \2", block, flags=re.MULTILINE)
            for line in block.splitlines():
                match = re.match(r"^(?:C→S|S→C)  (.+?)  +(\S.*)$", line)
                if match:
                    lines.append((number, match.group(1).replace("<token>", _TOKEN_HEX), match.group(2)))
    return lines


def test_every_example_conversation_decodes_to_what_the_text_says() -> None:
    """§13, §15.6, §16.3: the hex of each line decodes to exactly one frame, described as written."""
    lines = _conversation_lines()
    assert {number for number, _, _ in lines} >= {"13", "15", "16"}
    checked = 0
    for number, hexed, text in lines:
        if "<" in hexed or "..." in hexed:
            continue  # "<server stream from 300>", "03 ...": not whole bytes
        data = bytes.fromhex(hexed)
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
        frames: list[Any] = parser.feed(data)
        assert len(frames) == 1 and not parser.buffered, f"§{number}: {hexed} is not one whole message"
        frame: Frame = frames[0]
        described = DOCS.describe(frame)
        assert text.startswith(described), f"§{number}: {hexed} is {described}, the text says {text}"
        checked += 1
    assert checked >= 20


def test_every_inline_example_is_whole_messages() -> None:
    """Byte strings in the prose are whole messages the code decodes (not §2.1's varints, nor
    the element bytes of §17's codec table)."""
    text = PROTOCOL.replace(SECTIONS["2.1"], "")
    if "17" in SECTIONS:
        text = text.replace(
            SECTIONS["17"],
            "\n".join(line for line in SECTIONS["17"].splitlines() if not line.startswith("| `")),
        )
    examples = re.findall(r"`([0-9a-f]{2}(?: [0-9a-f]{2})+)`", text)
    assert len(examples) >= 30
    for hexed in examples:
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=300)
        if hexed.startswith(("08 01 00 01", "09 ")):
            parser.element_sizes[1] = 8  # §13's fixed-size rows (elementSize 8)
        frames = parser.feed(bytes.fromhex(hexed))
        assert frames and not parser.buffered and parser.error is None, hexed


def test_every_section_the_document_refers_to_exists() -> None:
    """A reference "§N" in PROTOCOL.md names one of its headings (not another document's: "RFC 6455 §1.9")."""
    dangling = [
        PROTOCOL[max(0, m.start() - 40) : m.end()].replace("\n", " ")
        for m in re.finditer(r"§(\d+(?:\.\d+)*)", PROTOCOL)
        if m.group(1) not in SECTIONS
        and not re.search(r"RFC \d+ $", PROTOCOL[max(0, m.start() - 10) : m.start()])
    ]
    assert not dangling, dangling


def _encode_payload(kind: str, fields: dict[str, Any]) -> bytes:
    """An extension payload from the fields a vector's ``payload_fields`` names, by the encoders."""
    from rstreams.wire._auth import Token, UserPassword, encode_credentials, encode_subscribe_credentials
    from rstreams.wire._channels import encode_channel_message
    from rstreams.wire._codes import encode_error_code, encode_goodbye_code
    from rstreams.wire._content import encode_content_type
    from rstreams.wire._messages import encode_credit, encode_message
    from rstreams.wire._metadata import encode_metadata
    from rstreams.wire._resume import encode_position, encode_resume

    def credentials() -> Token | UserPassword:
        if fields["kind"] == 1:
            return Token(fields["token"])
        return UserPassword(fields["user"], fields["password"])

    def raw(name: str) -> bytes:
        return bytes.fromhex(fields[name]["hex"])

    channel_types = {n: c for n, c in DOCS.EXTENSION_NAMES.items() if n.startswith(("input", "channel"))}
    encoders: dict[str, Callable[[], bytes]] = {
        "ping": lambda: raw("data"),
        "pong": lambda: raw("data"),
        "authenticate": lambda: encode_credentials(credentials()),
        "authenticated": lambda: b"",
        "subscribeCredentials": lambda: encode_subscribe_credentials(fields["subscriber"], credentials()),
        "resumeToken": lambda: raw("token"),
        "resume": lambda: encode_resume(raw("token"), fields["position"]),
        "resumed": lambda: encode_position(fields["position"]),
        "resumeAck": lambda: encode_position(fields["position"]),
        "resumeRefused": lambda: fields["reason"].encode(),
        "contentType": lambda: encode_content_type(fields["subscriber"], fields["media_type"]),
        "subscribeMetadata": lambda: encode_metadata(
            fields["subscriber"],
            {key: bytes.fromhex(value["hex"]) for key, value in fields["entries"].items()},
        ),
        "errorCode": lambda: encode_error_code(fields["subscriber"], fields["code"]),
        "goodbyeCode": lambda: encode_goodbye_code(fields["code"]),
        "message": lambda: encode_message(fields["name"], raw("body")),
        "messageCredit": lambda: encode_credit(fields["count"]),
    }
    if kind in channel_types:
        rest: bytes | int = b""
        if "demand" in fields:
            rest = fields["demand"]
        elif "data" in fields:
            rest = raw("data")
        elif "error" in fields:
            rest = fields["error"].encode()
        return encode_channel_message(channel_types[kind], fields["subscriber"], rest)
    return encoders[kind]()


def test_every_extension_vector_s_payload_fields_encode_to_its_payload() -> None:
    """docs/protocol-vectors.json gives each extension message's payload as fields too (for other
    languages' payload codecs); the encoders of the code make exactly the payload from them."""
    extension = [v for v in VECTORS if v["code"] >= 0x80]
    assert {v["type"] for v in extension} == set(DOCS.EXTENSION_NAMES)
    for vector in extension:
        payload = bytes.fromhex(vector["fields"]["payload"]["hex"])
        assert _encode_payload(vector["type"], vector["payload_fields"]) == payload, vector["note"]


def test_every_section_the_bindings_and_docs_cite_exists() -> None:
    """``PROTOCOL.md §N`` in the Java binding, the JavaScript typings, docs/ and README.md names a
    heading of PROTOCOL.md (the Python and JavaScript sources are checked above)."""
    paths = [
        *(ROOT / "java" / "src").rglob("*.java"),
        *(ROOT / "js" / "types").glob("*.ts"),
        *(ROOT / "docs").glob("*.md"),
        ROOT / "README.md",
    ]
    cited = [
        (path, match.group(1))
        for path in paths
        for match in re.finditer(r"PROTOCOL\.md,? §(\d+(?:\.\d+)*)", path.read_text())
    ]
    assert len(cited) > 100
    missing = [f"{path.relative_to(ROOT)}: §{number}" for path, number in cited if number not in SECTIONS]
    assert not missing, missing


INVALID = json.loads((ROOT / "docs" / "protocol-vectors.json").read_text())["invalid"]


@pytest.mark.parametrize("vector", INVALID, ids=[v["note"][:40] for v in INVALID])
def test_an_invalid_vector_ends_the_connection_citing_its_section(vector: dict[str, Any]) -> None:
    """docs/protocol-vectors.json's 'invalid': a connection that has read the peer's hello (and,
    for an elementSize, answered subscriber 1) says goodbye citing the vector's section, whole
    or fed byte by byte; the section states a rule and §10's table has a row citing it."""
    data = bytes.fromhex(vector["hex"])
    section = vector["section"]
    assert section in SECTIONS
    table = SECTIONS["10"]
    assert re.search(rf"\| [^|\n]*§{re.escape(section)}\b[^|\n]*\|[^|\n]*\|\n", table), section
    for chunks in ([data], [data[i : i + 1] for i in range(len(data))]):
        core = _client_with(element_size=vector["element_size"]) if vector["element_size"] else _server()
        closed: list[ConnectionClosed] = []
        for chunk in chunks:
            core.receive_data(chunk)
            closed += [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
            if closed:
                break
        assert closed and closed[0].reason.endswith(f"(PROTOCOL.md §{section})"), (vector["note"], closed)


INVALID_PAYLOADS = json.loads((ROOT / "docs" / "protocol-vectors.json").read_text())["invalid_payloads"]


@pytest.mark.parametrize(
    "vector", INVALID_PAYLOADS, ids=[f"{v['type']} {v['note']}"[:50] for v in INVALID_PAYLOADS]
)
def test_an_invalid_payload_cites_a_section_with_a_row(vector: dict[str, Any]) -> None:
    """docs/protocol-vectors.json's 'invalid_payloads': the section exists, §10 has a row for it,
    and for the qualifiers the core reads itself (§17.1, §18.1, §19.1), a connection with the
    extension active says goodbye citing it."""
    section = vector["section"]
    assert section in SECTIONS
    assert re.search(rf"\| [^|\n]*§{re.escape(section)}\b[^|\n]*\|[^|\n]*\|\n", SECTIONS["10"]), section
    owner = BY_TYPE[vector["code"]]
    message = bytes([vector["code"]]) + encode_varint(len(bytes.fromhex(vector["payload"])))
    message += bytes.fromhex(vector["payload"])
    if vector["type"] == "subscribeMetadata":
        reason = _goodbye(_server(owner.id), message + _SUB)
    elif vector["type"] in ("contentType", "errorCode"):
        core = Connection(Side.CLIENT, ConnectionConfig(extensions=frozenset({owner.id})))
        core.receive_data(encode(ServerHello(extensions=(owner.id,))))
        core.send(Subscribe(publisher="p", subscriber=1, initial_demand=1))
        reason = _goodbye(core, message)
    elif vector["type"] == "goodbyeCode":
        reason = _goodbye(_server(owner.id), message)
    else:
        return  # read outside the core (rstreams.net): checked by the generator's decoders
    assert reason.endswith(f"(PROTOCOL.md §{section})"), reason


# -- references as an outside implementer reads them ------------------------------------------------
def _read_by_implementers() -> list[Path]:
    """PROTOCOL.md and every file that cites it: the sources of the three bindings, docs/, and the
    README.md files (the project's, java/'s and js/'s)."""
    src = ROOT / "src" / "rstreams"
    return [
        ROOT / "PROTOCOL.md",
        *sorted(src.rglob("*.py")),
        *sorted(src.rglob("*.js")),
        *sorted((ROOT / "js" / "src").rglob("*.js")),
        *sorted((ROOT / "js" / "types").glob("*.ts")),
        *sorted((ROOT / "java" / "src").rglob("*.java")),
        *sorted((ROOT / "docs").glob("*.md")),
        ROOT / "README.md",
        ROOT / "java" / "README.md",
        ROOT / "js" / "README.md",
    ]


TITLES = {m.group(1): m.group(2) for m in re.finditer(r"^##+ (\d+(?:\.\d+)?)\.? (.*)$", PROTOCOL, re.M)}


def test_every_bare_section_reference_exists() -> None:
    """A "§N" written without "PROTOCOL.md" before it (a comment's "(§19.2)", a doc's "§4.1") in
    the bindings' sources, docs/ and the README.md files names a heading of PROTOCOL.md too, unless it is
    another document's ("RFC 9110 §15.5.22", wrapped in a comment or not)."""
    dangling = [
        f"{path.relative_to(ROOT)}: {text[max(0, m.start() - 40) : m.end()]!r}"
        for path in _read_by_implementers()[1:]
        for text in [path.read_text()]
        for m in re.finditer(r"§(\d+(?:\.\d+)*)", text)
        if m.group(1) not in SECTIONS
        and not re.search(r"RFC \d+[\s*/#]+$", text[max(0, m.start() - 16) : m.start()])
    ]
    assert not dangling, dangling


_EXTENSION_NAMES = "|".join(re.escape(e.name) for e in sorted(REGISTERED, key=lambda e: -len(e.name)))
_BESIDE_EXTENSION = re.compile(
    rf"(?:\bextension |\()({_EXTENSION_NAMES})(?: \(id \d+\))?,? §((\d+)(?:\.\d+)?)"
)


def test_an_extension_named_beside_a_section_is_that_section_s() -> None:
    """The section cited beside an extension's name ("extension auth, §15.3", "(resume, §16)") is
    one whose heading (or its chapter's) names that extension, so a renumbered chapter cannot
    leave a reference pointing at another extension's rules."""
    seen, wrong = 0, []
    for path in _read_by_implementers():
        text = path.read_text()
        for m in _BESIDE_EXTENSION.finditer(text):
            seen += 1
            if m.group(1) not in TITLES.get(m.group(2), "") + TITLES.get(m.group(3), ""):
                wrong.append(f"{path.relative_to(ROOT)}: {m.group(0)!r}")
    assert seen > 30
    assert not wrong, wrong


def test_an_error_code_named_beside_its_number_is_the_registry_s() -> None:
    """An error code's number and name agree with §19.2's registry wherever they are written
    together ("code 4 (unauthorized)", "code 2, unknown publisher")."""
    registry = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"^\| (\d+) \| ([a-z ]+) \| (?:onError|goodbye)", SECTIONS["19.2"], re.MULTILINE)
    }
    assert len(registry) == 12
    names = "|".join(sorted(registry.values(), key=len, reverse=True))
    seen, wrong = 0, []
    for path in _read_by_implementers():
        text = path.read_text()
        for m in re.finditer(rf"\bcode (\d+)(?:,| \(| =| is| for)? ?(?:an? |the )?({names})\b", text):
            seen += 1
            if registry.get(int(m.group(1))) != m.group(2):
                wrong.append(f"{path.relative_to(ROOT)}: {m.group(0)!r}")
    assert seen > 15
    assert not wrong, wrong


# -- §21.8: the replay server's upload texts ----------------------------------------------------------
class _Outcome(Subscriber[Any]):
    """What a publisher that answers at once (the replay server's answers and refusals) said."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: BaseException | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        subscription.request(1)

    def on_next(self, item: Any) -> None:
        self.items.append(item)

    def on_error(self, error: BaseException) -> None:
        self.error = error

    def on_complete(self) -> None:
        pass


def _said(publisher: Publisher[Any] | None) -> str:
    """The onError text the peer reads (``Type: message``, §10), or the answer's JSON."""
    assert publisher is not None
    outcome = _Outcome()
    publisher.subscribe(outcome)
    if outcome.error is not None:
        return f"{type(outcome.error).__name__}: {outcome.error}"
    (answer,) = outcome.items
    return json.dumps(json.loads(answer))


def _flat(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def test_the_upload_texts_of_the_replay_server_are_those_of_21_8() -> None:
    """The answers and refusals of a sink log's uploads, as rstreams.replay makes them for a log
    named NAME and a token TOKEN, are written in §21.8 (the variable parts as the text names
    them), so a change of either shows here."""
    from rstreams.replay import ReplayLog
    from rstreams.replay._server import _packed_rows, replay_offer
    from rstreams.replay._staging import Owner, Staging

    section = _flat(SECTIONS["21.8"])
    route = replay_offer({}, {"NAME": ReplayLog(name="NAME")})
    channel = route.channels["NAME"]
    epoch = route.logs["NAME"].epoch
    said = {
        "channel's name": _said(channel(None, {"stage": "TOKEN", "x": "1"})).replace("'x'", "..."),
        "owner": _said(channel(None, {"stage": "TOKEN", "writer": "w"})),
        "plain subscribe": _said(route("NAME", {"stage": "T"})),
        "run alone": _said(route("NAME", {"run": "R"})),
        "announcement": _said(route("NAME", {"discard": "", "run": "R"})).replace(epoch, "E"),
        "discard": _said(route("NAME", {"discard": "TOKEN"})).replace(epoch, "E"),
        "not a sink log": _said(replay_offer({"NAME": ReplayLog(name="NAME")})("NAME", {"staged": "TOKEN"})),
    }
    with pytest.raises(ValueError, match="packed rows") as packed:
        _packed_rows(b"\0\0\0\x05")
    said["packed rows"] = f"LogRequestError: sink log 'NAME': {packed.value} (PROTOCOL.md §21.8)".replace(
        "got 4 bytes", "got N bytes"
    )
    staging = Staging(ReplayLog(name="NAME"), 1024)
    first = staging.begin("TOKEN")
    staging.begin("TOKEN")
    said["began again"] = f"LogLookupError: {first.exception()}"
    with pytest.raises(LookupError, match="while its rows arrived") as late:
        staging.add("TOKEN", [b"row"], first)
    said["late rows"] = f"LogLookupError: {late.value}"
    staging.publish("W", 7, [])
    said["re-run"] = json.dumps(staging.publish("W", 7, []).result(timeout=5))
    now = [0.0]
    idle = Staging(ReplayLog(name="NAME"), 1024, ttl=5, clock=lambda: now[0])
    running = idle.begin("TOKEN", Owner(writer="W", batch=7, run="R"))
    now[0] = 10.0
    assert idle.expire() == 1
    said["idle"] = f"LogLookupError: {running.exception()}".replace("writer 'W', batch 7, run 'R'", "OWNER")
    said["idle"] = said["idle"].replace("; 0 rows) dropped after 5 s", "; N rows) dropped after S s")
    missing = [f"{what}: {text!r}" for what, text in said.items() if _flat(text) not in section]
    assert not missing, missing


def test_the_upload_numbers_of_21_8_are_the_code_s() -> None:
    """§21.8's numbers: the client packs up to 1024 rows and about 256 KiB per element; the
    channel grants 1, then keeps about 8 MiB in flight within 1024 elements; the reverse
    subscription asks 1024, then 512 after each 512."""
    from rstreams.replay import _client, _cursor, _server

    section = _flat(SECTIONS["21.8"])
    kib = 1024
    stated = {
        "pack rows": int(re.search(r"packs up to (\d+) rows", section).group(1)),  # type: ignore[union-attr]
        "pack KiB": int(re.search(r"about (\d+) KiB per element", section).group(1)),  # type: ignore[union-attr]
        "in flight MiB": int(re.search(r"keeps about (\d+) MiB", section).group(1)),  # type: ignore[union-attr]
        "window": int(re.search(r"min\((\d+), (\d+) MiB //", section).group(1)),  # type: ignore[union-attr]
        "reverse demand": int(re.search(r"with demand (\d+), and requests", section).group(1)),  # type: ignore[union-attr]
        "reverse renewal": int(re.search(r"requests (\d+) more after each", section).group(1)),  # type: ignore[union-attr]
    }
    code = {
        "pack rows": _client.PACK,
        "pack KiB": _cursor.PACK_BYTES // kib,
        "in flight MiB": _server._IN_FLIGHT_BYTES // (kib * kib),
        "window": _server._UPLOAD_WINDOW,
        "reverse demand": _server._UPLOAD_WINDOW,
        "reverse renewal": _server._UPLOAD_WINDOW // 2,
    }
    assert stated == code


def test_every_text_of_rstreams_replay_citing_21_8_is_in_it() -> None:
    """Every string of src/rstreams/replay that cites §21.8 (an onError text of the upload, a
    part of one) is written in §21.8, the parts it fills in left out: a text added or reworded
    in the code and not in the section fails here."""
    section = _flat(SECTIONS["21.8"])
    literal = r'[fr]?(?:"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')'
    checked, missing = 0, []
    for path in sorted((ROOT / "src" / "rstreams" / "replay").glob("*.py")):
        code = re.sub(r'"""(?:.|\n)*?"""', "", path.read_text())  # docstrings: not texts sent
        code = re.sub(r"#[^\n]*", "", code)
        for m in re.finditer(rf"(?:{literal}\s*)+", code):
            text = "".join(
                piece[piece.index(piece[-1]) + 1 : -1] for piece in re.findall(literal, m.group(0))
            )
            if "PROTOCOL.md §21.8)" not in text:
                continue
            checked += 1
            parts = re.split(r"\{[^{}]*\}", text.replace("{{", "\x00").replace("}}", "\x01"))
            parts = [part.replace("\x00", "{").replace("\x01", "}").strip() for part in parts]
            missing += [f"{path.name}: {part!r}" for part in parts if part and _flat(part) not in section]
    assert checked >= 7
    assert not missing, missing


def test_the_limit_refusals_are_those_of_11() -> None:
    """The onError texts of a subscribe refused by max_name_length and max_subscriptions, as the
    core sends them, are §11's, N the limit."""
    core = _server(max_name_length=4, max_subscriptions=1)
    refusals = [_refusal(core, encode(Subscribe(publisher="longer", subscriber=1, initial_demand=1)))]
    core.receive_data(encode(Subscribe(publisher="open", subscriber=2, initial_demand=1)))
    refusals.append(_refusal(core, encode(Subscribe(publisher="more", subscriber=3, initial_demand=1))))
    section = _flat(SECTIONS["11"])
    missing = [text for text in refusals if _flat(re.sub(r"=\d+", "=N", text)) not in section]
    assert not missing, missing
    # The JavaScript and Java servers send the same texts (their sources, string pieces joined).
    parts = [part for text in refusals for part in re.split(r"=\d+", text)]
    for path in (
        ROOT / "js" / "src" / "rsio-publish.js",
        ROOT / "java" / "src" / "main" / "java" / "io" / "rstreams" / "wire" / "Connection.java",
    ):
        source = re.sub(r"[\"`]\s*\+\s*[\"`]", "", path.read_text())
        assert [part for part in parts if part not in source] == [], path.name


# -- the closing bounds each binding states ------------------------------------------------------------
def _constants(path: Path, names: set[str]) -> dict[str, int]:
    """The integer constants ``names`` of a JavaScript or Java source (``4 * 1024 * 1024``,
    ``4L << 20``)."""
    found = {}
    for m in re.finditer(r"\b([A-Z_]+)\s*=\s*([0-9][0-9L*<> ]*);", path.read_text()):
        if m.group(1) in names:
            expression = m.group(2).replace("L", "")
            assert re.fullmatch(r"[0-9*<> ]+", expression), expression
            found[m.group(1)] = eval(expression)  # digits, * and << only
    assert found.keys() == names, (path, names - found.keys())
    return found


def test_the_closing_bounds_the_sections_state_are_each_binding_s() -> None:
    """§9.1's linger (seconds, bytes) and wait for a goodbye's answer, and §10's bound on unsent
    replies, are said once for the three bindings: each binding's constants are those numbers."""
    from rstreams.net import _closing, _intake

    text = _flat(SECTIONS["9.1"])
    linger_s = int(re.search(r"all wait at most (\d+) s", text).group(1))  # type: ignore[union-attr]
    linger_mib = int(re.search(r"once (\d+) MiB have been discarded", text).group(1))  # type: ignore[union-attr]
    close_s = int(re.search(r"wait at most (\d+) s \(CLOSE_TIMEOUT", text).group(1))  # type: ignore[union-attr]
    unsent_mib = int(re.search(r"MAX_UNSENT, (\d+) MiB", _flat(SECTIONS["10"])).group(1))  # type: ignore[union-attr]
    mib = 1024 * 1024
    js = {
        **_constants(ROOT / "js" / "src" / "node.js", {"LINGER_MS", "LINGER_BYTES"}),
        **_constants(
            ROOT / "js" / "src" / "rsio.js",
            {"CLOSE_TIMEOUT_MS", "MAX_UNSENT", "WS_LINGER_MS", "WS_LINGER_BYTES"},
        ),
    }
    java = _constants(
        ROOT / "java" / "src" / "main" / "java" / "io" / "rstreams" / "net" / "Endpoint.java",
        {"LINGER_MILLIS", "LINGER_BYTES", "CLOSE_MILLIS", "MAX_UNSENT"},
    )
    said = {
        "Python": (
            round(_closing.LINGER_SECONDS * 1000),
            _closing.LINGER_BYTES,
            round(_closing.CLOSE_TIMEOUT * 1000),
            _intake.MAX_UNSENT,
        ),
        "JavaScript": (js["LINGER_MS"], js["LINGER_BYTES"], js["CLOSE_TIMEOUT_MS"], js["MAX_UNSENT"]),
        "JavaScript ws": (
            js["WS_LINGER_MS"],
            js["WS_LINGER_BYTES"],
            js["CLOSE_TIMEOUT_MS"],
            js["MAX_UNSENT"],
        ),
        "Java": (java["LINGER_MILLIS"], java["LINGER_BYTES"], java["CLOSE_MILLIS"], java["MAX_UNSENT"]),
    }
    stated = (linger_s * 1000, linger_mib * mib, close_s * 1000, unsent_mib * mib)
    wrong = [f"{binding}: {values}" for binding, values in said.items() if values != stated]
    assert not wrong, (stated, wrong)


def _js_object(path: Path, name: str) -> dict[str, int | None]:
    """The frozen object ``name`` of a JavaScript source, its values integers or null
    (``4 * 1024 * 1024``, ``45_000``)."""
    body = re.search(rf"const {name} = Object\.freeze\(\{{(.*?)\}}\);", path.read_text(), re.S)
    assert body is not None, name
    found: dict[str, int | None] = {}
    for key, value in re.findall(r"(\w+): ([0-9_* ]+|null),", body.group(1)):
        assert re.fullmatch(r"[0-9_* ]+|null", value), value
        found[key] = None if value == "null" else eval(value.replace("_", ""))  # digits and * only
    return found


def test_the_javascript_resume_defaults_are_16_7_s() -> None:
    """§16.9 says the JavaScript binding resumes with §16.7's defaults in milliseconds and bytes:
    its client's and its server's defaults are rstreams.net.Resume's (which §16.7's table is,
    tests/wire/test_protocol_tables.py)."""
    from rstreams.net import Resume

    python = Resume()
    expected = {
        "attempts": python.attempts,
        "backoff": round(python.backoff * 1000),
        "maxBackoff": round(python.max_backoff * 1000),
        "attemptTimeout": round(python.attempt_timeout * 1000),
        "bufferBytes": python.buffer_bytes,
        "stallTimeout": None if python.stall_timeout is None else round(python.stall_timeout * 1000),
        "ackDelay": round(python.ack_delay * 1000),
        "sessionTimeout": round(python.session_timeout * 1000),
    }
    js = ROOT / "js" / "src"
    client = _js_object(js / "rsio-resume.js", "RESUME_DEFAULTS")
    server = _js_object(js / "sessions.js", "SERVER_RESUME_DEFAULTS")
    assert client == {key: expected[key] for key in client} and len(client) == 7, client
    assert server == {key: expected[key] for key in server} and len(server) == 4, server


# -- what an implementation written from the document alone met on the wire ------------------------
def _rsio_over_websocket(messages: list[bytes]) -> tuple[bytes, int | None, str | None]:
    """Send ``messages`` as binary WebSocket messages to an rstreams server, one at a time; return
    what the server sent until it closed, and its close frame's status and reason."""
    pytest.importorskip("websockets")
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed

    from rstreams.net import serve
    from rstreams.net._websocket import SUBPROTOCOL

    async def run() -> tuple[bytes, int | None, str | None]:
        offer = {"two": lambda params: rstreams.from_iterable([b"a", b"b"])}
        async with asyncio.timeout(10), await serve("ws://127.0.0.1:0/rsio", offer) as server:
            ws = await ws_connect(server.url, proxy=None, subprotocols=[SUBPROTOCOL], compression=None)
            for message in messages:
                await ws.send(message)
            got = b""
            try:
                while True:
                    got += await ws.recv()
            except ConnectionClosed as closed:
                rcvd = closed.rcvd
            return got, None if rcvd is None else rcvd.code, None if rcvd is None else rcvd.reason

    return asyncio.run(run())


def test_over_websocket_an_empty_message_means_nothing_and_an_orderly_end_closes_with_1000() -> None:
    """§1: a WebSocket message carries any run of the byte stream, nothing included (the
    conformance suite's fr.empty_writes sends empty ones, which a peer read as its end of input
    when the document said "one or more messages per binary WebSocket message"); after the
    goodbyes rstreams closes the WebSocket with 1000 and an empty reason."""
    hello = encode(ClientHello())
    subscribe = encode(Subscribe(publisher="two", subscriber=1, initial_demand=2))
    messages = [b"", hello, b"", subscribe[:3], b"", subscribe[3:], b"\x03\x00"]
    got, status, reason = _rsio_over_websocket(messages)
    parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
    names = [type(frame).__name__ for frame in parser.feed(got)]
    assert names == ["ServerHello", "OnSubscribe", "OnNext", "OnNext", "OnComplete", "Goodbye"], names
    assert (status, reason) == (1000, "")
    assert "an empty WebSocket message being valid and\nmeaning nothing" in SECTIONS["1"]
    assert "closes the\nWebSocket with status 1000 (normal closure) and an empty reason" in SECTIONS["1"]


def test_a_malformed_resume_is_refused_with_resume_refused_not_a_goodbye() -> None:
    """§16.2: a malformed resume at the start of a new transport is answered with the server's
    hello and resumeRefused naming the fault, then the transport closes; the document called it
    a connection error (a goodbye) wherever it came."""
    from rstreams.net import serve

    token = bytes(range(16))
    # the first bytes of a new transport, the reason refusing them, and how §16.2 words that reason
    cases = [
        (
            b"\x89\x11\x10" + token,
            "resume position: the payload ends inside a varint (PROTOCOL.md §16.2)",
            "`resume position: FAULT (PROTOCOL.md §16.2)`",
        ),
        (
            b"\x89\x13\x10" + token + b"\x80\x00",
            "resume position: non-minimal varint encoding (trailing 0x00 byte) (PROTOCOL.md §16.2)",
            "`resume position: FAULT (PROTOCOL.md §16.2)`",
        ),
        (
            b"\x89\x02\x00\x00",
            "resume token length 0 is not 1 to 64 bytes (PROTOCOL.md §16.2)",
            "`resume token length N is not 1 to 64 bytes (PROTOCOL.md §16.2)`",
        ),
        (
            b"\x89\x13\x10" + token + b"\x00\x00",
            "resume: 1 byte(s) after the position (PROTOCOL.md §16.2)",
            "`resume: N byte(s) after the position (PROTOCOL.md §16.2)`",
        ),
    ]

    async def answer(server_url: str, data: bytes) -> bytes:
        host, port = server_url.removeprefix("tcp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(data)
        got = await reader.read()  # to the end of input: the server closes after its answer
        writer.close()
        return got

    async def run() -> list[bytes]:
        async with asyncio.timeout(10), await serve("tcp://127.0.0.1:0", {}, resume=True) as server:
            return await asyncio.gather(*(answer(server.url, data) for data, _, _ in cases))

    flat = " ".join(SECTIONS["16.2"].split())
    for got, (_, reason, worded) in zip(asyncio.run(run()), cases, strict=True):
        hello_end = 3 + got[2]  # serverHello: type, version, count, one byte per extension id
        assert got[0] == 0x02 and got[hello_end] == 0x8B, got.hex(" ")
        assert got[hello_end + 1] == len(got) - hello_end - 2  # resumeRefused, and nothing after it
        assert got[hello_end + 2 :].decode() == reason
        assert worded in flat, worded
    for fault in ("the payload ends inside a varint", "non-minimal varint encoding (trailing 0x00 byte)"):
        assert f"`{fault}`" in flat, fault


def test_a_malformed_answer_to_resume_fails_the_session_at_once_as_worded() -> None:
    """§16.2, §16.6: a resuming client that reads a malformed or unexpected answer fails the
    session at once, in the words §16.2 gives (rstreams counted it a failed attempt and tried
    again: 8 attempts and about 7 s against a server that answered the same way each time)."""
    from rstreams.net import _resume
    from rstreams.wire._resume import ResumeReplyParser

    hello = encode(ServerHello(extensions=(3,)))
    # the server's answer, how §16.2 words the fault
    cases = [
        (hello + b"\x8a\x02\x00\x00", "`resumed: N byte(s) after the position (PROTOCOL.md §16.2)`"),
        (hello + b"\x8a\x02\x80\x00", "`resumed: FAULT (PROTOCOL.md §16.2)`"),
        (hello + b"\x8a\x80\x00", "`message 0xNN: FAULT (PROTOCOL.md §16.2)`"),
        (hello + b"\x03\x80\x00", "`goodbye: FAULT (PROTOCOL.md §16.2)`"),
        (b"\x02\x00\x80\x00", "`serverHello: FAULT (PROTOCOL.md §16.2)`"),
        (
            hello + b"\x8a\x81\x02",
            "`message 0xNN announces a N-byte payload; at most 256 in the resume exchange"
            " (PROTOCOL.md §16.7)`",
        ),
        (hello + b"\x8c\x01\x00", "`expected resumed or resumeRefused, got type 0xNN (PROTOCOL.md §16.3)`"),
        (b"\x01\x00\x00", "`expected a hello of type 0x02, got type 0xNN (PROTOCOL.md §16.3)`"),
        (b"\x02\x01\x00", "`a hello with version N on a version-0 session (PROTOCOL.md §16.3)`"),
        (b"\x02\x00\x81\x02", "`serverHello lists N extensions (PROTOCOL.md §16.3)`"),
    ]
    flat = " ".join(SECTIONS["16.2"].split())
    faults = "non-minimal varint encoding \\(trailing 0x00 byte\\)"
    for data, worded in cases:
        with pytest.raises(ResumeError) as raised:
            ResumeReplyParser().feed(data)
        assert worded in flat, worded
        pattern = re.escape(worded.strip("`")).replace("0xNN", "0x[0-9a-f]{2}").replace("FAULT", faults)
        reason = raised.value.reason
        assert re.fullmatch(pattern.replace("N", "[0-9]+"), reason), (reason, worded)
    assert "`the session could not be resumed: REASON`" in flat
    assert "fails at once (§16.6), without another attempt" in flat
    source = " ".join(Path(_resume.__file__).read_text().split())
    failing = 'session.fail(ConnectionBrokenError(f"the session could not be resumed: {error.reason}"))'
    assert failing in source
    row = next(line for line in SECTIONS["16.6"].splitlines() if line.startswith("| malformed `resumed`"))
    assert "fails at once" in row and "no other attempt" in row, row


HANDSHAKE_GOODBYES = [
    # (the side reading, what it reads first, its goodbye, how §4.1/§4.2 word that goodbye)
    (
        Side.SERVER,
        encode(Subscribe(publisher="p", subscriber=1)),
        "the first message must be ClientHello, got Subscribe (PROTOCOL.md §4.1)",
        "`the first message must be ClientHello, got TYPE (PROTOCOL.md §4.1)`",
    ),
    (
        Side.SERVER,
        b"\x80\x08" + bytes(8),
        "the first message must be ClientHello, got ExtensionMessage (PROTOCOL.md §4.1)",
        "`ExtensionMessage` for any type from `0x80`",
    ),
    (
        Side.CLIENT,
        encode(ClientHello()),
        "the first message must be ServerHello, got ClientHello (PROTOCOL.md §4.1)",
        "(`ServerHello` at a client)",
    ),
    (
        Side.CLIENT,
        encode(ServerHello()) + encode(ServerHello()),
        "unexpected ServerHello: the handshake is over or it is ours (PROTOCOL.md §4.1)",
        "`unexpected TYPE: the handshake is over or it is ours (PROTOCOL.md §4.1)`",
    ),
    (
        Side.SERVER,
        encode(ClientHello(version=7)),
        "unsupported protocol version 7; this endpoint speaks version 0 (PROTOCOL.md §4.2)",
        "`unsupported protocol version N; this endpoint speaks version 0 (PROTOCOL.md §4.2)`",
    ),
]


@pytest.mark.parametrize(("side", "data", "reason", "worded"), HANDSHAKE_GOODBYES)
def test_the_handshake_goodbyes_are_worded_in_4_1_and_4_2(
    side: Side, data: bytes, reason: str, worded: str
) -> None:
    """§4.1 and §4.2 give the goodbyes of a bad first message, a late hello and another version
    (an implementation written from the document had to guess them; they are the three bindings'
    alike)."""
    assert _goodbye(Connection(side), data) == reason
    assert worded in " ".join((SECTIONS["4.1"] + SECTIONS["4.2"]).split())


def test_split_parts_are_split_threshold_bytes_round_robin_as_8_says() -> None:
    """§8 says how rstreams cuts an element (parts of split_threshold bytes, the last the rest)
    and that it sends the parts of different subscriptions in turn, which the conformance suite
    requires of every publisher; the document gave neither the part size nor the SHOULD."""
    core = Connection(Side.SERVER)
    core.receive_data(
        encode(ClientHello())
        + encode(Subscribe(publisher="p", subscriber=1, initial_demand=2))
        + encode(Subscribe(publisher="q", subscriber=2, initial_demand=1))
    )
    threshold = core.config.split_threshold
    core.send(OnSubscribe(subscriber=1))
    core.send(OnSubscribe(subscriber=2))
    core.send(OnNext(subscriber=1, element=bytes(3 * threshold + 5)))
    core.send(OnNext(subscriber=2, element=bytes(threshold + 1)))
    core.send(OnNext(subscriber=1, element=bytes(threshold)))
    parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 16, max_extensions=64)

    def described(frame: object) -> tuple[str, int, int]:
        if isinstance(frame, (OnNextPart, OnNextLastPart)):
            return type(frame).__name__, frame.subscriber, len(frame.data)
        if isinstance(frame, OnNext):
            return "OnNext", frame.subscriber, len(frame.element)
        return type(frame).__name__, 0, 0

    sent = [described(frame) for frame in parser.feed(b"".join(core.data_to_send()))]
    assert sent[3:] == [
        ("OnNextPart", 1, threshold),
        ("OnNextPart", 2, threshold),
        ("OnNextPart", 1, threshold),
        ("OnNextLastPart", 2, 1),
        ("OnNextPart", 1, threshold),
        ("OnNextLastPart", 1, 5),
        ("OnNext", 1, threshold),
    ], sent
    text = " ".join(SECTIONS["8"].split())
    assert "into parts of `split_threshold` bytes, the onNextLastPart holding the rest" in text
    assert "one of exactly 64 KiB goes whole" in text and threshold == 64 * 1024
    assert "A publisher that splits SHOULD interleave likewise" in text


def test_rstreams_pings_carry_their_number_as_14_1_says() -> None:
    """§14.1: rstreams' ping payload is the ping's number, big-endian, 1 first (a peer written
    from the document saw `00 .. 01`, `00 .. 02` and had no sentence saying what they were)."""
    from rstreams.net import serve

    async def run() -> list[bytes]:
        async with asyncio.timeout(10), await serve("tcp://127.0.0.1:0", {}, keepalive=0.02) as server:
            host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(encode(ClientHello(extensions=(KEEPALIVE.id,))))
            got = b""
            while got.count(b"\x80\x08") < 2:  # the serverHello, then two pings
                got += await reader.read(4096)
            writer.close()
            parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
            return [f.payload for f in parser.feed(got) if isinstance(f, ExtensionMessage) and f.type == 0x80]

    assert asyncio.run(run())[:2] == [(1).to_bytes(8, "big"), (2).to_bytes(8, "big")]
    assert "`80 08 00 00 00 00 00 00 00 01`, then `... 00 02`" in " ".join(SECTIONS["14.1"].split())


def _client_subscribed(sid: int = 1) -> Connection:
    """A client core whose subscription ``sid`` has no onSubscribe yet."""
    core = Connection(Side.CLIENT)
    core.receive_data(encode(ServerHello()))
    core.send(Subscribe(publisher="p", subscriber=sid, initial_demand=1))
    core.data_to_send()
    core.events_received()
    return core


_SPLIT = encode(OnNextPart(subscriber=1, element_id=0, data=b"a"))
# (what the peer sent, the core that reads it and the bytes, §10's template for its goodbye)
CORE_GOODBYES: list[tuple[str, Callable[[], str], str]] = [
    ("a non-minimal varint", lambda: _goodbye(_server(), b"\x05\x80\x00\x01"), "non-minimal varint encoding"),
    ("an 11-byte varint", lambda: _goodbye(_server(), b"\x05" + b"\xff" * 10 + b"\x01"), "over-long varint"),
    ("a reason not UTF-8", lambda: _goodbye(_server(), b"\x03\x01\xff"), "FIELD is not valid UTF-8"),
    ("an error not UTF-8", lambda: _goodbye(_client_with(), b"\x0d\x01\x01\xff"), "FIELD is not valid UTF-8"),
    ("type 0x0e", lambda: _goodbye(_server(), b"\x0e"), "unknown message type 0xNN"),
    ("onComplete, id 9", lambda: _goodbye(_client_with(), b"\x0c\x09"), "SIGNAL for unknown subscriber id N"),
    (
        "a part, id 9",
        lambda: _goodbye(_client_with(), b"\x0a\x09\x00\x01a"),
        "SIGNAL for unknown subscriber id N",
    ),
    (
        "a second onSubscribe",
        lambda: _goodbye(_client_with(), b"\x07\x01\x00"),
        "SIGNAL for subscriber N in state",
    ),
    ("onNext, no onSubscribe", lambda: _goodbye(_client_subscribed(), b"\x08\x01\x01a"), "in state STATE"),
    ("a subscribe reusing 1", lambda: _goodbye(_server(), _SUB + _SUB), "subscribe reuses subscriber id N"),
    (
        "beyond demand",
        lambda: _goodbye(_client_with(demand=0), b"\x08\x01\x01a"),
        "N element(s) for subscriber N exceed the outstanding demand of N",
    ),
    (
        "packed, elementSize 0",
        lambda: _goodbye(_client_with(), b"\x09\x01\x01\x00"),
        "onNextPacked for subscriber N, which has no onSubscribe with an elementSize above 0",
    ),
    (
        "packed, id 9",
        lambda: _goodbye(_client_with(), b"\x09\x09\x01" + bytes(8)),
        "onNextPacked for subscriber N, which has no onSubscribe with an elementSize above 0",
    ),
    ("packed, count 0", lambda: _goodbye(_client_with(element_size=8), b"\x09\x01\x00"), "with count 0"),
    (
        "a split element not of elementSize",
        lambda: _goodbye(_client_with(element_size=8), b"\x0b\x01\x00\x01a"),
        "joined element of N bytes for subscriber N, whose elementSize is N",
    ),
    (
        "onComplete amid a split element",
        lambda: _goodbye(_client_with(), _SPLIT + b"\x0c\x01"),
        "onComplete for subscriber N with N unfinished split element(s)",
    ),
    (
        "input ending inside a message",
        lambda: _goodbye(_server(), b"\x05\x01", eof=True),
        "input ended inside a frame (N bytes of an incomplete frame)",
    ),
    (
        "a reason too long",
        lambda: _goodbye(_server(), b"\x03\x81\x80\x04"),
        "FIELD of N bytes exceeds max_string_length=N",
    ),
    (
        "a payload too long",
        lambda: _goodbye(_server(), b"\x80\x81\x80\x04"),
        "extension message 0xNN payload of N bytes exceeds max_string_length=N",
    ),
    (
        "an element too long",
        lambda: _goodbye(_client_with(), b"\x08\x01\x81\x80\x80\x08"),
        "FIELD of N bytes for subscriber N exceeds max_element_size=N",
    ),
    (
        "a hello listing too many extensions",
        lambda: _goodbye(
            Connection(Side.SERVER, ConnectionConfig(max_extensions=1)), b"\x01\x00\x02\x01\x02"
        ),
        "hello lists N extensions, more than max_extensions=N",
    ),
    (
        "too many split elements",
        lambda: _goodbye(
            _two_streams(ConnectionConfig(max_parts_in_flight=1)),
            _SPLIT + encode(OnNextPart(subscriber=2, element_id=0, data=b"a")),
        ),
        "more than max_parts_in_flight=N split elements at once",
    ),
    (
        "too many bytes in split elements",
        lambda: _goodbye(
            _two_streams(ConnectionConfig(max_reassembly_bytes=4, max_element_size=4)),
            encode(OnNextPart(subscriber=1, element_id=0, data=b"abc"))
            + encode(OnNextPart(subscriber=2, element_id=0, data=b"abc")),
        ),
        "split elements in flight exceed max_reassembly_bytes=N",
    ),
]


def _two_streams(config: ConnectionConfig) -> Connection:
    """A client core with subscriptions 1 and 2 answered by onSubscribe, demand 1 each."""
    core = Connection(Side.CLIENT, config)
    core.receive_data(encode(ServerHello()))
    for sid in (1, 2):
        core.send(Subscribe(publisher="p", subscriber=sid, initial_demand=1))
        core.receive_data(encode(OnSubscribe(subscriber=sid)))
    core.data_to_send()
    core.events_received()
    return core


@pytest.mark.parametrize(("what", "make", "words"), CORE_GOODBYES, ids=[c[0] for c in CORE_GOODBYES])
def test_the_core_s_goodbyes_are_the_templates_10_lists(
    what: str, make: Callable[[], str], words: str
) -> None:
    """§10 lists the words of the core's connection errors (a peer written from the document could
    only guess them); each template is §10's and the reason rstreams sends fits it."""
    listed = re.findall(r"`([^`]*\(PROTOCOL\.md §[\d.]+\))`", " ".join(SECTIONS["10"].split()))
    template = next((t for t in listed if words in t), None)
    assert template is not None, f"§10 lists no goodbye with {words!r}"
    variables = {
        "N": r"\d+",
        "0xNN": "0x[0-9a-f]{2}",
        "SIGNAL": "[a-zA-Z]+",
        "STATE": "[A-Z]+",
        "FIELD": "[a-zA-Z ]+",
    }
    pattern = re.sub(
        r"\b(0xNN|N|SIGNAL|STATE|FIELD)\b",
        lambda match: variables[match.group(1)],
        re.escape(template).replace(r"\ ", " "),
    )
    reason = make()
    assert re.fullmatch(pattern, reason), f"{what}: {reason!r} does not fit {template!r}"


def test_an_onsubscribe_that_crossed_our_cancel_frames_the_onnext_after_it() -> None:
    """§7: the elementSize of an onSubscribe received in CANCELLED frames the onNext that follow
    (8 raw bytes here); the document did not say which elementSize a receiver reads them by."""
    core = _client_subscribed()
    core.send(Cancel(subscriber=1))
    core.data_to_send()
    core.receive_data(
        encode(OnSubscribe(subscriber=1, element_size=8)) + b"\x08\x01" + bytes(8) + b"\x0c\x01"
    )
    assert not [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
    assert "in CANCELLED too" in " ".join(SECTIONS["7"].split())


def test_a_closing_server_says_server_closing_as_9_1_says() -> None:
    """§9.1 gives the goodbye of a server closing: `server closing`, code 0 after a hello that
    lists error-codes, no code to a transport whose clientHello has not come (a peer written from
    the document read it and found no sentence naming it)."""
    from rstreams.net import serve

    async def run() -> tuple[bytes, bytes]:
        async with asyncio.timeout(10):
            server = await serve("tcp://127.0.0.1:0", {})
            host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
            said_hello = await asyncio.open_connection(host, int(port))
            silent = await asyncio.open_connection(host, int(port))
            said_hello[1].write(
                encode(ClientHello(extensions=(6,))) + encode(Subscribe(publisher="x", subscriber=1))
            )
            await said_hello[0].readuntil(b"no publisher named 'x'")  # its hello has been read
            await silent[0].readexactly(3)  # the other one's transport is up: its serverHello came
            closing = asyncio.create_task(server.aclose())
            answers = []
            for (reader, writer), answer in ((said_hello, b"\x03\x00"), (silent, b"")):
                goodbye = await reader.readuntil(b"server closing")
                writer.write(answer)  # the server waits for the answer of the one that said hello (§9.1)
                writer.write_eof()  # and lingers until our end of input
                answers.append(goodbye + await reader.read())
            await closing
            for _, writer in (said_hello, silent):
                writer.close()
            return answers[0], answers[1]

    with_hello, without = asyncio.run(run())
    goodbye = b"\x03\x0eserver closing"
    assert with_hello.endswith(b"\x99\x01\x00" + goodbye), with_hello.hex(" ")
    assert without.endswith(goodbye) and b"\x99" not in without, without.hex(" ")
    assert "`server closing`, with code 0 where error-codes is active" in " ".join(SECTIONS["9.1"].split())


def test_a_type_no_extension_owns_is_refused_in_the_words_of_4_4() -> None:
    """§4.4 words the refusal of a type that no extension owns (it gave only the other two)."""
    reason = _goodbye(_server(), b"\xa8\x00")
    assert reason == "message type 0xa8 belongs to no extension this endpoint knows (PROTOCOL.md §4.4)"
    assert f"`{reason}`" in " ".join(SECTIONS["4.4"].split())


def test_the_invalid_demand_refusals_are_those_of_6_2() -> None:
    """§6.2 words the rule-3.9 refusals, says a request that crossed the end is ignored whatever
    its demand, and that a refusal before onSubscribe has no onSubscribe (a peer written from the
    document saw both orders and no text for them)."""

    def refused(data: bytes) -> list[tuple[str, str | None]]:
        core = _server()
        core.receive_data(data)
        core.events_received()
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
        return [
            (type(f).__name__, getattr(f, "error", None)) for f in parser.feed(b"".join(core.data_to_send()))
        ]

    texts = {
        b"\x05\x01\x00": "rule 3.9: request(0) is illegal (PROTOCOL.md §6.2)",
        encode(
            Request(subscriber=1, demand=2**63)
        ): "rule 3.9: request(9223372036854775808 (a negative 64-bit number)) is illegal (PROTOCOL.md §6.2)",
    }
    for request, text in texts.items():  # read before the onSubscribe: the onError alone
        assert refused(_SUB + request) == [("OnError", text)]
    initial = encode(Subscribe(publisher="p", subscriber=1, initial_demand=2**63))
    assert refused(initial) == [
        ("OnError", "rule 3.9: initialDemand 9223372036854775808 is above 2**63 - 1 (PROTOCOL.md §6.2)")
    ]
    ended = _server()
    ended.receive_data(_SUB)
    ended.send(OnSubscribe(subscriber=1))
    ended.send(OnComplete(subscriber=1))
    ended.data_to_send()
    ended.events_received()
    ended.receive_data(b"\x05\x01\x00")  # crossed the onComplete: ignored, not refused
    assert not ended.data_to_send() and not ended.events_received()
    flat = " ".join(SECTIONS["6.2"].split())
    for template in (
        "`rule 3.9: request(0) is illegal (PROTOCOL.md §6.2)`",
        "`rule 3.9: request(N (a negative 64-bit number)) is illegal (PROTOCOL.md §6.2)`",
        "`rule 3.9: initialDemand N is above 2**63 - 1 (PROTOCOL.md §6.2)`",
        "out with the onError alone",
    ):
        assert template in flat, template


def test_the_bindings_tests_10_names_for_its_goodbyes_exist() -> None:
    """§10 says the Java and JavaScript bindings' goodbyes are compared with rstreams' by two tests,
    which it names: they are where it says."""
    flat = " ".join(SECTIONS["10"].split())
    for path, name in (
        ("java/src/test/java/io/rstreams/net/GoodbyeTextsTest.java", "Java's `GoodbyeTextsTest`"),
        ("js/test/goodbye-texts.test.mjs", "`js/test/goodbye-texts.test.mjs`"),
    ):
        assert name in flat, name
        assert "goodbye" in (ROOT / path).read_text(encoding="utf-8").lower(), path


def test_a_qualifier_followed_by_another_type_ends_the_connection_as_19_1_says() -> None:
    """§19.1: a qualifier not followed by what it qualifies ends the connection in the three
    bindings, with the words §19.1 quotes."""
    core = Connection(Side.CLIENT, ConnectionConfig(extensions=frozenset({6})))
    core.receive_data(encode(ServerHello(extensions=(6,))))
    core.send(Subscribe(publisher="p", subscriber=1, initial_demand=1))
    core.data_to_send()
    core.receive_data(
        b"\x98\x02\x01\x02" + encode(OnComplete(subscriber=1))
    )  # errorCode(1, 2), onComplete(1)
    closed = [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
    text = (
        "errorCode (0x98) for subscriber 1"
        " followed by message type 0x0c, not by its onError (PROTOCOL.md §19.1)"
    )
    assert [c.reason for c in closed] == [text]
    flat = " ".join(SECTIONS["19.1"].split())
    assert "the three bindings end the connection for it" in flat
    assert f"`{text}`" in flat


def test_elements_in_cancelled_are_not_counted_against_demand_as_5_2_says() -> None:
    """§5.2: what "checked" means for elements that crossed our cancel (a peer written from the
    document checked them against demand and ended connections the bindings keep)."""
    core = _client_with(demand=1)
    core.send(Cancel(subscriber=1))
    core.data_to_send()
    core.receive_data(encode(OnNext(subscriber=1, element=b"a")) * 3 + encode(OnComplete(subscriber=1)))
    assert not [e for e in core.events_received() if isinstance(e, ConnectionClosed)]
    assert "not counted against demand" in " ".join(SECTIONS["5.2"].split())
