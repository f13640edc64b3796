"""Extension error-codes in the core (PROTOCOL.md §19): qualifiers written adjacent to their
onError/goodbye, read back as Qualifier events, checked, and absent when not negotiated."""

from __future__ import annotations

import pytest

from rstreams.wire import (
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    ErrorCode,
    ExtensionMessage,
    Goodbye,
    OnError,
    OnSubscribe,
    Qualifier,
    Request,
    ServerHello,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire import Connection as Core
from rstreams.wire._codes import decode_error_code, encode_error_code, encode_goodbye_code
from rstreams.wire.extensions import ERROR_CODE, ERROR_CODES, GOODBYE_CODE
from testkit.wire import ConnectionPair, connected, parser, wire

ON = ConnectionConfig(extensions=frozenset({ERROR_CODES.id}))
OFF = ConnectionConfig()


def _connected(side: Side, config: ConnectionConfig = ON) -> Core:
    """A connection whose peer's hello listed error-codes; output and events drained."""
    conn = Core(side, config)
    hello = ClientHello if side is Side.SERVER else ServerHello
    conn.receive_data(encode(hello(extensions=(ERROR_CODES.id,))))
    conn.data_to_send()
    conn.events_received()
    return conn


def _pair(client: ConnectionConfig = ON, server: ConnectionConfig = ON) -> ConnectionPair:
    return ConnectionPair(client, server)


def test_error_code_is_written_right_before_its_on_error_and_read_as_a_qualifier() -> None:
    pair = _pair()
    pair.client.send(Subscribe(publisher="p", subscriber=3))
    pair.events()
    pair.server.send_error(3, "nope", ErrorCode.UNKNOWN_PUBLISHER)
    data = b"".join(pair.server.data_to_send())
    assert data == encode(ExtensionMessage(type=ERROR_CODE, payload=b"\x03\x02")) + encode(
        OnError(subscriber=3, error="nope")
    )
    pair.client.receive_data(data)
    assert pair.client.events_received() == [
        Qualifier(type=ERROR_CODE, subscriber=3, value=2),
        OnError(subscriber=3, error="nope"),
    ]


@pytest.mark.parametrize(("client", "server"), [(ON, OFF), (OFF, ON), (OFF, OFF)])
def test_without_the_extension_on_both_sides_no_code_is_sent(
    client: ConnectionConfig, server: ConnectionConfig
) -> None:
    pair = _pair(client, server)
    pair.client.send(Subscribe(publisher="p", subscriber=1))
    pair.events()
    pair.server.send_error(1, "nope", ErrorCode.UNKNOWN_PUBLISHER)
    assert b"".join(pair.server.data_to_send()) == encode(OnError(subscriber=1, error="nope"))
    pair.server.close("bye", code=ErrorCode.NORMAL)
    assert b"".join(pair.server.data_to_send()) == encode(Goodbye(reason="bye"))


def test_no_code_is_sent_for_an_on_error_that_is_not_sent() -> None:
    pair = _pair()
    pair.client.send(Subscribe(publisher="p", subscriber=1))
    pair.events()
    pair.server.send_error(1, "first", ErrorCode.INTERNAL)
    pair.server.data_to_send()
    pair.server.send_error(1, "again", ErrorCode.INTERNAL)  # already ended: dropped quietly
    assert pair.server.data_to_send() == []


def test_goodbye_code_reaches_connection_closed_on_both_sides() -> None:
    pair = _pair()
    pair.server.close("idle", code=ErrorCode.TIMEOUT)
    client_events, server_events = pair.events()
    closed = [e for e in client_events if isinstance(e, ConnectionClosed)]
    assert closed == [ConnectionClosed(reason="idle", code=ErrorCode.TIMEOUT)]
    assert next(e for e in server_events if isinstance(e, ConnectionClosed)).reason == "goodbye acknowledged"


def test_the_answering_goodbye_may_carry_a_code_too() -> None:
    conn = _connected(Side.CLIENT)
    conn.close("bye")
    conn.receive_data(
        encode(ExtensionMessage(type=GOODBYE_CODE, payload=encode_goodbye_code(0)))
        + encode(Goodbye(reason="ok"))
    )
    assert conn.events_received()[-1] == ConnectionClosed(reason="ok", code=0)


def test_a_violation_found_by_the_core_says_goodbye_with_a_code() -> None:
    conn = _connected(Side.SERVER)
    conn.receive_data(b"\x0e")  # a reserved core type (§3)
    out = b"".join(conn.data_to_send())
    assert out.startswith(encode(ExtensionMessage(type=GOODBYE_CODE, payload=b"\x06")) + b"\x03")
    assert conn.events_received()[-1].code == ErrorCode.PROTOCOL_VIOLATION  # type: ignore[union-attr]


def test_refusals_made_by_the_core_carry_their_codes() -> None:
    conn = _connected(Side.SERVER, ConnectionConfig(extensions=frozenset({6}), max_subscriptions=1))
    conn.receive_data(wire(Subscribe(publisher="a", subscriber=1), Subscribe(publisher="b", subscriber=2)))
    conn.send(OnSubscribe(subscriber=1))
    conn.receive_data(wire(Request(subscriber=1, demand=0)))
    out = b"".join(conn.data_to_send())
    codes = [decode_error_code(m) for m in _payloads(out, ERROR_CODE)]
    assert codes == [(2, ErrorCode.LIMIT_EXCEEDED), (1, ErrorCode.INVALID_DEMAND)]


def _payloads(data: bytes, kind: int) -> list[bytes]:
    """The payloads of the ``kind`` extension messages in ``data`` (parsed by a client core)."""
    frames = parser().feed(data)
    return [f.payload for f in frames if isinstance(f, ExtensionMessage) and f.type == kind]


def _client_with_subscription(sid: int = 1) -> Core:
    conn = _connected(Side.CLIENT)
    conn.send(Subscribe(publisher="p", subscriber=sid))
    conn.data_to_send()
    return conn


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (encode(ExtensionMessage(type=ERROR_CODE, payload=b"\x01")), "truncated"),
        (encode(ExtensionMessage(type=ERROR_CODE, payload=b"\x01\x02\x03")), "trailing"),
        (encode(ExtensionMessage(type=ERROR_CODE, payload=b"\x01\x80\x00")), "bad varint"),
        (
            encode(ExtensionMessage(type=ERROR_CODE, payload=encode_error_code(1, 2))) * 2,
            "two errorCode (0x98) messages before one onError",
        ),
        (
            encode(ExtensionMessage(type=ERROR_CODE, payload=encode_error_code(2, 2)))
            + encode(OnError(subscriber=1, error="x")),
            "errorCode (0x98) for subscriber 2"
            " followed by message type 0x0d for subscriber 1, not by its onError",
        ),
    ],
)
def test_a_broken_qualifier_is_a_connection_error_citing_19_1(data: bytes, words: str) -> None:
    conn = _client_with_subscription()
    conn.receive_data(data)
    closed = conn.events_received()[-1]
    assert isinstance(closed, ConnectionClosed) and closed.error is not None
    assert words in closed.reason and "§19.1" in closed.reason


def test_a_qualifier_of_an_inactive_extension_is_refused_citing_4_4() -> None:
    conn = connected(Side.CLIENT, OFF)
    conn.receive_data(encode(ExtensionMessage(type=ERROR_CODE, payload=b"\x01\x02")))
    closed = conn.events_received()[-1]
    assert (
        isinstance(closed, ConnectionClosed)
        and "error-codes (id 6)" in closed.reason
        and "§4.4" in closed.reason
    )


def test_the_code_is_checked_when_sent() -> None:
    conn = _connected(Side.SERVER)
    with pytest.raises(ValueError, match=r"§19\.2"):
        conn.send_error(1, "x", -1)
    with pytest.raises(TypeError, match="error code"):
        conn.close("x", code="2")  # type: ignore[arg-type]


def _server_with_subscriber(sid: int) -> Core:
    conn = _connected(Side.SERVER)
    conn.receive_data(encode(Subscribe(publisher="p", subscriber=sid)))
    conn.events_received()
    return conn


@pytest.mark.parametrize(("sid", "code"), [(1, 2), (127, 127), (128, 2), (1, 300), (70_000, 2**40)])
def test_send_error_writes_what_the_frames_encode(sid: int, code: int) -> None:
    """send_error builds no frame (a refusal flood's cost): its bytes are the frames' all the same."""
    conn = _server_with_subscriber(sid)
    conn.send_error(sid, "no publisher named 'p' ✓", code)
    expected = encode(ExtensionMessage(type=ERROR_CODE, payload=encode_error_code(sid, code)))
    assert conn.data_to_send() == [
        expected + encode(OnError(subscriber=sid, error="no publisher named 'p' ✓"))
    ]


@pytest.mark.parametrize(
    ("sid", "error", "raised"),
    [(1, "\ud800", UnicodeEncodeError), (1, b"x", TypeError), (-1, "x", ValueError), (True, "x", TypeError)],
)
def test_send_error_checks_its_arguments_before_ending_the_stream(
    sid: object, error: object, raised: type[Exception]
) -> None:
    conn = _server_with_subscriber(1)
    with pytest.raises(raised):
        conn.send_error(sid, error, 2)  # type: ignore[arg-type]
    conn.send_error(1, "x", 2)  # the subscription was left open
    assert conn.data_to_send() == [
        encode(ExtensionMessage(type=ERROR_CODE, payload=b"\x01\x02"))
        + encode(OnError(subscriber=1, error="x"))
    ]
