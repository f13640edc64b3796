"""PROTOCOL.md §10's error table against what the core sends (extension error-codes active).

For each violation the core detects, the goodbye (or the refusing onError) cites a section, and
the error code (§19.2) written right before it is the one in the §10 row that cites that
section. And every row of the table is well formed: a scope, an action, a code.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rstreams.wire import (
    ClientHello,
    Connection,
    ConnectionConfig,
    ExtensionMessage,
    Goodbye,
    OnComplete,
    OnError,
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
from rstreams.wire._codes import decode_error_code, decode_goodbye_code, encode_error_code
from rstreams.wire._content import encode_content_type
from rstreams.wire._metadata import encode_metadata
from rstreams.wire.extensions import (
    AUTH,
    CONTENT_TYPE,
    CONTENT_TYPES,
    ERROR_CODE,
    ERROR_CODES,
    GOODBYE_CODE,
    KEEPALIVE,
    METADATA,
    SUBSCRIBE_METADATA,
)
from testkit.wire import parser

pytestmark = pytest.mark.timeout(30)

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()
CITATION = re.compile(r"\(PROTOCOL\.md §(\d+(?:\.\d+)?)\)$")
CODES = ERROR_CODES.id


def _table() -> list[list[str]]:
    """§10's rows: what the peer did, scope, what the receiver does, code."""
    section = PROTOCOL.split("## 10. Errors")[1].split("\n## ")[0]
    lines = [line for line in section.splitlines() if line.startswith("| ")]
    assert lines[0] == "| what the peer did | scope | what the receiver does | code (§19.2) |"
    rows = []
    for line in lines[1:]:
        cells = [cell.strip() for cell in re.split(r"(?<!\\)\|", line.strip().strip("|"))]
        rows.append(cells)
    return rows


ROWS = _table()


def test_every_row_has_a_scope_an_action_and_a_code() -> None:
    assert len(ROWS) >= 40
    for what, scope, action, code in ROWS:
        assert scope in {"connection", "subscription", "transport", "—"}, what
        assert re.search(r"§\d", action), f"§10: {what!r} cites no section"
        assert code in {"—", "none"} or re.match(r"^\d+( |$)", code), f"§10: {what!r} has code {code!r}"
        for number in re.findall(r"\b(\d+) \(", code) or re.findall(r"^\d+$", code):
            assert f"| {number} |" in PROTOCOL.split("### 19.2")[1].split("###")[0], (what, number)


def _quoted_goodbye(action: str) -> re.Pattern[str] | None:
    """The goodbye a row's action quotes (`too many connections: ...`), as a pattern: ``...``
    stands for any text, ``N`` for a number. None if the action quotes none."""
    quoted = re.search(r"goodbye `([^`]+)`", action)
    if quoted is None:
        return None
    pattern = re.escape(quoted.group(1)).replace(r"\.\.\.", ".*")
    return re.compile(re.sub(r"\bN\b", r"[0-9.]+", pattern))


def _codes_for(section: str, scope: str, reason: str | None = None) -> set[int]:
    """The codes §10 gives the rows of ``scope`` whose action cites ``section``; with ``reason``,
    a row that quotes its goodbye counts only for a goodbye that says what it quotes (§10's
    max_connections row cites §11 with code 8, the other §11 goodbyes have 7)."""
    found: set[int] = set()
    for _, row_scope, action, code in ROWS:
        if row_scope != scope or section not in re.findall(r"§(\d+(?:\.\d+)?)", action):
            continue
        quoted = _quoted_goodbye(action)
        if reason is not None and quoted is not None and not quoted.match(reason):
            continue
        found |= {int(n) for n in re.findall(r"\d+", code)}
    return found


def _server(*extensions: int, **limits: Any) -> Connection:
    offered = frozenset({CODES, *extensions})
    core = Connection(Side.SERVER, ConnectionConfig(extensions=offered, **limits))
    core.receive_data(encode(ClientHello(extensions=tuple(sorted(offered)))))
    core.data_to_send()
    core.events_received()
    return core


def _client(sid: int = 1, demand: int = 1, element_size: int = 0, *extensions: int) -> Connection:
    """A client core with subscription ``sid`` answered by onSubscribe."""
    offered = frozenset({CODES, *extensions})
    core = Connection(Side.CLIENT, ConnectionConfig(extensions=offered))
    core.receive_data(encode(ServerHello(extensions=tuple(sorted(offered)))))
    core.send(Subscribe(publisher="p", subscriber=sid, initial_demand=demand))
    core.receive_data(encode(OnSubscribe(subscriber=sid, element_size=element_size)))
    core.data_to_send()
    core.events_received()
    return core


def _written(core: Connection, data: bytes, *, eof: bool = False) -> list[object]:
    core.receive_data(data)
    if eof:
        core.receive_eof()
    core.events_received()
    return list(parser().feed(b"".join(core.data_to_send())))


def _goodbye(core: Connection, data: bytes, *, eof: bool = False) -> tuple[str, int | None]:
    """The goodbye ``data`` makes the core write, and the code of the goodbyeCode before it."""
    frames = _written(core, data, eof=eof)
    assert frames and isinstance(frames[-1], Goodbye), f"no goodbye for {data.hex(' ')}: {frames}"
    before = frames[-2] if len(frames) > 1 else None
    if isinstance(before, ExtensionMessage) and before.type == GOODBYE_CODE:
        return frames[-1].reason, decode_goodbye_code(before.payload)
    return frames[-1].reason, None


def _refusal(core: Connection, data: bytes) -> tuple[str, int | None]:
    """The onError ``data`` makes the core write, and the code of the errorCode before it."""
    frames = _written(core, data)
    errors = [i for i, f in enumerate(frames) if isinstance(f, OnError)]
    assert errors, f"no onError for {data.hex(' ')}: {frames}"
    at = errors[0]
    before = frames[at - 1] if at else None
    error = frames[at]
    assert isinstance(error, OnError)
    if isinstance(before, ExtensionMessage) and before.type == ERROR_CODE:
        return error.error, decode_error_code(before.payload)[1]
    return error.error, None


def _ext(kind: int, payload: bytes) -> bytes:
    return encode(ExtensionMessage(type=kind, payload=payload))


_SUB = encode(Subscribe(publisher="p", subscriber=1, initial_demand=1))
_BIG_METADATA = encode_metadata(1, {"k": b"x" * 40})

# (what the peer did, how to make the core answer it); the answer cites a section
GOODBYES: list[tuple[str, Callable[[], tuple[str, int | None]]]] = [
    ("reserved core type", lambda: _goodbye(_server(), b"\x0e\x00")),
    ("inactive extension", lambda: _goodbye(_server(), b"\x80\x08" + bytes(8))),
    ("reserved extension type", lambda: _goodbye(_server(AUTH.id), b"\x87\x00")),
    ("7-byte ping", lambda: _goodbye(_server(KEEPALIVE.id), b"\x80\x07" + bytes(7))),
    ("non-minimal varint", lambda: _goodbye(_server(), b"\x05\x80\x00\x01")),
    ("11-byte varint", lambda: _goodbye(_server(), b"\x05" + b"\xff" * 10 + b"\x01")),
    ("invalid UTF-8", lambda: _goodbye(_server(), b"\x04\x01\xff\x01\x01")),
    ("a second hello", lambda: _goodbye(_server(), encode(ClientHello()))),
    ("subscribe reusing an open id", lambda: _goodbye(_server(), _SUB + _SUB)),
    ("onNext for an unknown id", lambda: _goodbye(_client(), encode(OnNext(subscriber=9, element=b"x")))),
    (
        "elements beyond demand",
        lambda: _goodbye(_client(demand=1), encode(OnNext(subscriber=1, element=b"x")) * 2),
    ),
    ("onNextPacked without elementSize", lambda: _goodbye(_client(), b"\x09\x01\x01\x00")),
    (
        "onComplete inside a split element",
        lambda: _goodbye(
            _client(),
            encode(OnNextPart(subscriber=1, element_id=0, data=b"a")) + encode(OnComplete(subscriber=1)),
        ),
    ),
    (
        "a split element not of elementSize",
        lambda: _goodbye(_client(1, 1, 8), encode(OnNextLastPart(subscriber=1, element_id=0, data=b"abc"))),
    ),
    ("input ends inside a message", lambda: _goodbye(_server(), b"\x05\x01", eof=True)),
    (
        "a string above max_string_length",
        lambda: _goodbye(_server(max_string_length=4, max_name_length=4), b"\x03\x05hello"),
    ),
    (
        "too many partial elements",
        lambda: _goodbye(_parts_client(), encode(OnNextPart(subscriber=2, element_id=0, data=b"b"))),
    ),
    (
        "a malformed contentType",
        lambda: _goodbye(_client(1, 1, 0, CONTENT_TYPES.id), _ext(CONTENT_TYPE, b"\x01\x7f")),
    ),
    (
        "a contentType for another id",
        lambda: _goodbye(
            _subscribed_client(CONTENT_TYPES.id),
            _ext(CONTENT_TYPE, encode_content_type(2, "text/plain")) + encode(OnSubscribe(subscriber=1)),
        ),
    ),
    (
        "a malformed subscribeMetadata",
        lambda: _goodbye(_server(METADATA.id), _ext(SUBSCRIBE_METADATA, b"\x01\x01\x01X\x00") + _SUB),
    ),
    (
        "a subscribeMetadata above max_metadata_bytes",
        lambda: _goodbye(
            _server(METADATA.id, max_metadata_bytes=16), _ext(SUBSCRIBE_METADATA, _BIG_METADATA)
        ),
    ),
    (
        "a malformed errorCode",
        lambda: _goodbye(_client(), _ext(ERROR_CODE, b"\x01")),
    ),
    (
        "an errorCode for another id",
        lambda: _goodbye(
            _client(), _ext(ERROR_CODE, encode_error_code(2, 2)) + encode(OnError(subscriber=1, error="x"))
        ),
    ),
]


def _parts_client() -> Connection:
    """A client with two answered subscriptions, a part of subscription 1 in flight, and room
    for one partial element only."""
    core = Connection(Side.CLIENT, ConnectionConfig(extensions=frozenset({CODES}), max_parts_in_flight=1))
    core.receive_data(encode(ServerHello(extensions=(CODES,))))
    for sid in (1, 2):
        core.send(Subscribe(publisher="p", subscriber=sid, initial_demand=1))
        core.receive_data(encode(OnSubscribe(subscriber=sid)))
    core.receive_data(encode(OnNextPart(subscriber=1, element_id=0, data=b"a")))
    core.data_to_send()
    core.events_received()
    return core


def _subscribed_client(*extensions: int) -> Connection:
    """A client whose subscribe 1 is not answered yet."""
    offered = frozenset({CODES, *extensions})
    core = Connection(Side.CLIENT, ConnectionConfig(extensions=offered))
    core.receive_data(encode(ServerHello(extensions=tuple(sorted(offered)))))
    core.send(Subscribe(publisher="p", subscriber=1, initial_demand=1))
    core.data_to_send()
    core.events_received()
    return core


@pytest.mark.parametrize(("what", "make"), GOODBYES, ids=[g[0] for g in GOODBYES])
def test_a_goodbye_carries_the_code_of_its_row(what: str, make: Callable[[], tuple[str, int | None]]) -> None:
    reason, code = make()
    cited = CITATION.search(reason)
    assert cited is not None, f"{what}: {reason!r} cites no section"
    expected = _codes_for(cited.group(1), "connection", reason)
    assert expected, f"{what}: no connection row of §10 cites §{cited.group(1)} ({reason!r})"
    assert code in expected, f"{what}: goodbye code {code}, §10 says {sorted(expected)} for §{cited.group(1)}"


REFUSALS: list[tuple[str, Callable[[], tuple[str, int | None]]]] = [
    ("request(0)", lambda: _refusal(_server(), _SUB + encode(Request(subscriber=1, demand=1))[:2] + b"\x00")),
    (
        "request(2**63)",
        lambda: _refusal(_server(), _SUB + b"\x05\x01" + b"\x80" * 9 + b"\x01"),
    ),
    (
        "initialDemand 2**63",
        lambda: _refusal(_server(), b"\x04\x01p\x01" + b"\x80" * 9 + b"\x01"),
    ),
    (
        "subscribe beyond max_subscriptions",
        lambda: _refusal(_server(max_subscriptions=1), _SUB + _SUB.replace(b"\x01\x01", b"\x02\x01")),
    ),
    (
        "a name above max_name_length",
        lambda: _refusal(_server(max_name_length=1), encode(Subscribe(publisher="ab", subscriber=1))),
    ),
]


@pytest.mark.parametrize(("what", "make"), REFUSALS, ids=[r[0] for r in REFUSALS])
def test_a_refusal_carries_the_code_of_its_row(what: str, make: Callable[[], tuple[str, int | None]]) -> None:
    text, code = make()
    cited = re.search(r"§(\d+(?:\.\d+)?)", text) or re.search(r"rule (3\.9)", text)
    assert cited is not None, f"{what}: {text!r} cites nothing"
    section = "6.2" if cited.group(1) == "3.9" else cited.group(1)
    expected = _codes_for(section, "subscription")
    assert expected, f"{what}: no subscription row of §10 cites §{section} ({text!r})"
    assert code in expected, f"{what}: errorCode {code}, §10 says {sorted(expected)} for §{section}"


def test_a_reserved_metadata_key_is_taken_like_any_other() -> None:
    """§18.1: keys starting with ``rsio.`` are reserved for the document; a receiver takes them."""
    assert "a receiver takes them like any other key" in PROTOCOL.replace("\n  ", " ")
    core = _server(METADATA.id)
    core.receive_data(_ext(SUBSCRIBE_METADATA, encode_metadata(1, {"rsio.x": b"1"})) + _SUB)
    events = core.events_received()
    assert [type(e).__name__ for e in events] == ["Metadata", "Subscribe"], events


def test_each_code_of_the_table_is_used_with_the_message_the_row_sends() -> None:
    """A code §10 gives a goodbye is one §19.2 says goes with goodbye, and so for onError."""
    registry = PROTOCOL.split("### 19.2")[1].split("\n\n")[2]
    used_with = {}
    for line in registry.splitlines()[2:]:
        code, _, used, *_ = (cell.strip() for cell in line.strip().strip("|").split("|"))
        used_with[int(code)] = used
    for what, _, action, code in ROWS:
        message = "goodbye" if "goodbye" in action else "onError" if "onError" in action else None
        for number in re.findall(r"\d+", code):
            assert message is not None, f"§10: {what!r} has code {number} but sends no goodbye or onError"
            assert message in used_with[int(number)], f"§10: {what!r}: code {number} is not for {message}"


def _reason(core: Connection, data: bytes) -> str:
    return _goodbye(core, data)[0]


def _marked_server() -> Connection:
    return _server(8)


# (the reason as PROTOCOL.md quotes it, how to make the core say it)
QUOTED: list[tuple[str, Callable[[], str]]] = [
    (
        "1 element(s) for subscriber 7 exceed the outstanding demand of 0 (PROTOCOL.md §6.3)",
        lambda: _reason(_client(7, 0), encode(OnNext(subscriber=7, element=b"x"))),
    ),
    (
        "message type 0x80 belongs to extension keepalive (id 1), which is not active on this connection "
        "(PROTOCOL.md §4.4)",
        lambda: _reason(_server(), b"\x80\x08" + bytes(8)),
    ),
    (
        "message type 0x87 is reserved by extension auth (id 2) (PROTOCOL.md §4.4)",
        lambda: _reason(_server(AUTH.id), b"\x87\x00"),
    ),
    (
        "0xa0 for subscriber 4 followed by a Subscribe for subscriber 5 (PROTOCOL.md §21.3)",
        lambda: _reason(
            _marked_server(),
            _ext(0xA0, b"\x04") + encode(Subscribe(publisher="p", subscriber=5, initial_demand=1)),
        ),
    ),
    (
        "two 0xa0 messages before one Subscribe (PROTOCOL.md §21.3)",
        lambda: _reason(_marked_server(), _ext(0xA0, b"\x04") * 2),
    ),
]


@pytest.mark.parametrize(("quoted", "make"), QUOTED, ids=[q[0][:40] for q in QUOTED])
def test_a_reason_the_document_quotes_is_what_the_core_says(quoted: str, make: Callable[[], str]) -> None:
    assert f"`{quoted}`" in re.sub(r"\s*\n\s*", " ", PROTOCOL), f"PROTOCOL.md no longer quotes {quoted!r}"
    assert make() == quoted


def _raised_sections() -> dict[str, set[str]]:
    """Section -> files: the sections the code's protocol errors cite (``XError(..., section="N")``,
    a ResumeError's N being §16.N) and the goodbyes it says itself (``close_now("... §N)")``)."""
    root = Path(__file__).resolve().parents[2] / "src" / "rstreams"
    found: dict[str, set[str]] = {}
    for path in [*(root / "wire").rglob("*.py"), *(root / "net").rglob("*.py")]:
        text = path.read_text()
        for match in re.finditer(
            r"(\w+Error)\((?:[^()]|\([^()]*\))*?section=\"(\d+(?:\.\d+)?)\"", text, re.S
        ):
            section = f"16.{match.group(2)}" if match.group(1) == "ResumeError" else match.group(2)
            found.setdefault(section, set()).add(path.name)
        for match in re.finditer(r"close_now\(\s*f?\"[^\"]*PROTOCOL\.md §(\d+(?:\.\d+)?)", text):
            found.setdefault(match.group(1), set()).add(path.name)
    return found


def test_every_section_the_code_s_errors_cite_has_a_row() -> None:
    """An implementer finds in §10 every kind of error the code answers bad input with."""
    raised = _raised_sections()
    assert len(raised) >= 20
    in_table = {number for _, _, action, _ in ROWS for number in re.findall(r"§(\d+(?:\.\d+)?)", action)}
    in_table |= {number for what, *_ in ROWS for number in re.findall(r"§(\d+(?:\.\d+)?)", what)}
    missing = {section: sorted(files) for section, files in raised.items() if section not in in_table}
    assert not missing, f"§10 has no row for errors citing {missing}"
