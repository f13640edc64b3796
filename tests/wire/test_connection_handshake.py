"""Handshake, versions, optimistic messages and extensions (PROTOCOL.md §4)."""

from __future__ import annotations

import pytest

from rstreams.wire import (
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    FrameError,
    Goodbye,
    HandshakeError,
    OnSubscribe,
    Request,
    ServerHello,
    Side,
    Subscribe,
    UnsupportedVersionError,
    encode,
)
from rstreams.wire._errors import TLSRecordError
from testkit.wire import ConnectionPair, wire


def test_each_side_sends_its_hello_at_once() -> None:
    """The loose handshake: hellos are queued on construction (§4.1)."""
    assert Connection(Side.CLIENT).data_to_send() == [encode(ClientHello())]
    assert Connection(Side.SERVER).data_to_send() == [encode(ServerHello())]
    config = ConnectionConfig(extensions=frozenset({5, 2}))
    assert Connection(Side.CLIENT, config).data_to_send() == [encode(ClientHello(extensions=(2, 5)))]


def test_pair_opens() -> None:
    """Both sides reach OPEN after exchanging hellos."""
    pair = ConnectionPair()
    assert pair.client.state is pair.server.state is ConnectionState.OPEN
    assert pair.client.peer_hello == ServerHello() and pair.server.peer_hello == ClientHello()


def test_extensions_are_the_intersection() -> None:
    """The active extensions are those both hellos list (§4.4)."""
    pair = ConnectionPair(
        ConnectionConfig(extensions=frozenset({1, 2, 3})), ConnectionConfig(extensions=frozenset({2, 3, 4}))
    )
    assert pair.client.extensions == pair.server.extensions == frozenset({2, 3})


def test_version_mismatch_says_goodbye_and_closes() -> None:
    """A hello with another version gets a goodbye naming the version and §4.2."""
    server = Connection(Side.SERVER)
    server.data_to_send()
    server.receive_data(encode(ClientHello(version=1)))
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, UnsupportedVersionError)
    assert closed.error.version == 1
    [data] = server.data_to_send()
    assert data[0] == 0x03 and b"version 1" in data and b"4.2" in data
    assert server.state is ConnectionState.CLOSED


def _other_version_hello(side: Side) -> bytes:
    """The peer's hello with version 1 and 65 extension ids: one over max_extensions=64 (§11)."""
    kind = 0x01 if side is Side.SERVER else 0x02
    return bytes([kind, 1, 65, *range(1, 66)])


def _closed_after(side: Side, pieces: list[bytes]) -> tuple[Connection, ConnectionClosed]:
    conn = Connection(side)
    conn.data_to_send()
    events = []
    for piece in pieces:
        if conn.state is ConnectionState.CLOSED:
            break  # closed at the version byte: the rest is not for this endpoint
        events += conn.receive(piece)
    [closed] = events
    assert isinstance(closed, ConnectionClosed)
    return conn, closed


@pytest.mark.parametrize("side", [Side.SERVER, Side.CLIENT])
def test_another_version_is_judged_before_its_extension_count(side: Side) -> None:
    """A hello of another version gets the goodbye naming the version (§4.2), not the limits one
    (§11), whatever follows its version byte: whole, or fed in pieces cut anywhere."""
    data = _other_version_hello(side)
    cuts = [[data]] + [[data[:cut], data[cut:]] for cut in range(1, len(data))]
    for pieces in [*cuts, [data[i : i + 1] for i in range(len(data))]]:
        conn, closed = _closed_after(side, pieces)
        assert type(closed.error) is UnsupportedVersionError, (pieces, closed.error)
        assert closed.error.version == 1
        [goodbye] = conn.data_to_send()
        assert goodbye[0] == 0x03 and b"version 1" in goodbye and b"4.2" in goodbye, goodbye
        assert b"max_extensions" not in goodbye
        assert conn.state is ConnectionState.CLOSED


def test_version_0_hello_still_limits_its_extensions() -> None:
    """Version 0's extension list is read and limited as before (§11)."""
    conn = Connection(Side.SERVER)
    conn.data_to_send()
    [closed] = conn.receive(bytes([0x01, 0, 65, *range(1, 66)]))
    assert isinstance(closed, ConnectionClosed) and closed.error is not None
    assert "max_extensions=64" in str(closed.error)


def test_optimistic_messages_before_server_hello() -> None:
    """A client may subscribe before the serverHello arrives; the server handles it after the hello (§4.3)."""
    client = Connection(Side.CLIENT)
    client.send(Subscribe(publisher="p", subscriber=1, initial_demand=3))
    client.send(Request(subscriber=1, demand=2))
    assert client.state is ConnectionState.AWAITING_HELLO
    server = Connection(Side.SERVER)
    for chunk in client.data_to_send():
        server.receive_data(chunk)
    assert server.events_received() == [
        ClientHello(),
        Subscribe(publisher="p", subscriber=1, initial_demand=3),
        Request(subscriber=1, demand=2),
    ]
    assert server.credit(1) == 0  # not ACTIVE until onSubscribe
    server.send(OnSubscribe(subscriber=1))
    assert server.credit(1) == 5


def test_optimistic_messages_are_discarded_on_version_mismatch() -> None:
    """If the serverHello has another version, the client's optimistic subscription never existed."""
    client = Connection(Side.CLIENT)
    client.send(Subscribe(publisher="p", subscriber=1))
    client.receive_data(encode(ServerHello(version=7)) + encode(OnSubscribe(subscriber=1)))
    [closed] = client.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, UnsupportedVersionError)
    assert client.subscriptions(publishing=False) == {}


def test_first_message_must_be_the_hello() -> None:
    """Anything but the peer's hello first is a handshake error."""
    server = Connection(Side.SERVER)
    server.receive_data(wire(Subscribe(publisher="p", subscriber=1)))
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, HandshakeError)


def test_hello_of_the_wrong_kind() -> None:
    """A server receiving a serverHello fails the handshake."""
    server = Connection(Side.SERVER)
    server.receive_data(encode(ServerHello()))
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, HandshakeError)


def test_duplicate_hello() -> None:
    """A second hello is a handshake error."""
    server = Connection(Side.SERVER)
    server.receive_data(encode(ClientHello()) + encode(ClientHello()))
    hello, closed = server.events_received()
    assert hello == ClientHello()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, HandshakeError)
    assert closed.error.section == "4.1"


def test_goodbye_instead_of_hello() -> None:
    """A peer may refuse with a goodbye before its hello; it is answered and the connection closes."""
    server = Connection(Side.SERVER)
    server.data_to_send()
    server.receive_data(encode(Goodbye(reason="no thanks")))
    assert server.events_received() == [Goodbye(reason="no thanks"), ConnectionClosed(reason="no thanks")]
    assert server.data_to_send()[0][0] == 0x03


@pytest.mark.parametrize(
    ("side", "first", "says"),
    [
        (
            Side.CLIENT,
            b"HTTP/1.1 400 Bad Request\r\n\r\n",
            "an HTTP response; for a WebSocket server use ws://",
        ),
        (Side.SERVER, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "an HTTP request; this endpoint speaks RS.io"),
    ],
    ids=["http-server", "http-client"],
)
def test_first_bytes_that_look_like_http_are_named(side: Side, first: bytes, says: str) -> None:
    """A peer that speaks HTTP fails the handshake (§4.1) with a reason that says what it spoke,
    not only which type byte it does not know."""
    conn = Connection(side)
    conn.data_to_send()
    conn.receive_data(first)
    [closed] = conn.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, HandshakeError)
    assert f"not an RS.io hello (they look like {says}" in closed.reason
    assert closed.reason.endswith("(PROTOCOL.md §4.1)")


def test_other_first_bytes_keep_the_frame_error() -> None:
    """Bytes that are not HTTP, and HTTP-looking bytes after the hello, are a frame error (§3)."""
    conn = Connection(Side.CLIENT)
    conn.data_to_send()
    conn.receive_data(b"\x7fjunk")
    [closed] = conn.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, FrameError)
    assert "unknown message type 0x7f" in closed.reason
    pair = ConnectionPair()
    pair.client.receive_data(b"HTTP/1.1 200 OK\r\n")
    [closed] = pair.client.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, FrameError)
    assert "unknown message type 0x48" in closed.reason


@pytest.mark.parametrize("side", [Side.CLIENT, Side.SERVER])
@pytest.mark.parametrize("record", [0x15, 0x16])
def test_a_tls_record_as_the_first_bytes_is_named(side: Side, record: int) -> None:
    """A TLS alert or handshake record (0x15/0x16, then 0x03) as the peer's first bytes fails the
    handshake (§4.1) with TLSRecordError, which the net layer tells a tcp:// client's error by;
    0x15 not followed by 0x03, or after the hello, stays the unknown message type (§3)."""
    conn = Connection(side)
    conn.data_to_send()
    conn.receive_data(bytes([record, 0x03, 0x03, 0x00, 0x02, 0x02, 0x28]))
    [closed] = conn.events_received()
    assert isinstance(closed, ConnectionClosed) and type(closed.error) is TLSRecordError
    assert closed.error.record_type == record
    assert f"they look like a TLS record, 0x{record:02x} 0x03" in closed.reason
    assert closed.reason.endswith("(PROTOCOL.md §4.1)")
    conn = Connection(side)
    conn.receive_data(bytes([record, 0x01, 0x00]))
    [closed] = conn.events_received()
    assert isinstance(closed, ConnectionClosed) and type(closed.error) is FrameError
    assert f"unknown message type 0x{record:02x}" in closed.reason
    pair = ConnectionPair()
    pair.client.receive_data(bytes([record, 0x03, 0x03]))
    [closed] = pair.client.events_received()
    assert isinstance(closed, ConnectionClosed) and type(closed.error) is FrameError
