"""The extension framework (PROTOCOL.md §4.4) and the keepalive extension's core rules (§14)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstreams.wire import (
    ClientHello,
    Connection,
    ConnectionBrokenError,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
    ExtensionError,
    ExtensionMessage,
    ExtensionReceived,
    Goodbye,
    HandshakeError,
    LocalProtocolError,
    Request,
    ServerHello,
    Side,
    encode,
    extensions,
)
from rstreams.wire.extensions import (
    AUTH,
    CHANNELS,
    ERROR_CODES,
    KEEPALIVE,
    MESSAGES,
    PING,
    PONG,
    RESUME,
    Extension,
)
from testkit.wire import ConnectionPair, connected, feed_three_ways, wire

BOTH = ConnectionConfig(extensions=frozenset({KEEPALIVE.id, AUTH.id}))


def test_registry() -> None:
    """The registered ids and their message types; no type has two owners."""
    assert (KEEPALIVE.id, KEEPALIVE.message_types) == (1, frozenset({0x80, 0x81}))
    assert (AUTH.id, AUTH.message_types) == (2, frozenset({0x84, 0x85, 0x86, 0x87}))
    assert (RESUME.id, RESUME.message_types) == (3, frozenset(range(0x88, 0x90)))
    owned = [t for ext in extensions.REGISTERED for t in ext.message_types]
    assert len(owned) == len(set(owned))
    assert extensions.owner_of(0x81) is KEEPALIVE and extensions.owner_of(0x82) is None
    with pytest.raises(ValueError, match=r"0x80\.\.0xFF"):
        Extension(9, "bad", frozenset({0x7F}))


def test_extension_message_checks_itself_and_encodes_generically() -> None:
    """type byte, varint payload length, payload (§4.4)."""
    assert encode(ExtensionMessage(type=0x80, payload=b"12345678")) == b"\x80\x0812345678"
    assert encode(ExtensionMessage(type=0x85)) == b"\x85\x00"
    with pytest.raises(ValueError, match=r"0x80\.\.0xFF"):
        ExtensionMessage(type=0x05)
    with pytest.raises(TypeError):
        ExtensionMessage(type=0x80, payload="text")  # type: ignore[arg-type]


def test_parsing_is_the_same_whole_bytewise_and_with_trailing_bytes() -> None:
    frames = [
        ExtensionMessage(type=0x80, payload=bytes(range(8))),
        ExtensionMessage(type=0x86, payload=b"x" * 200),
    ]
    feed_three_ways(wire(*frames), list(frames))


def test_send_before_active_is_a_local_error_naming_the_extension() -> None:
    """Nothing is active before the peer's hello, and only ids both hellos list."""
    client = Connection(Side.CLIENT, BOTH)
    client.data_to_send()
    with pytest.raises(LocalProtocolError, match=r"keepalive \(id 1\) is not active.*hello has not arrived"):
        client.send(ExtensionMessage(type=PING, payload=bytes(8)))
    pair = ConnectionPair(BOTH, ConnectionConfig(extensions=frozenset({AUTH.id})))
    assert pair.client.extensions == frozenset({AUTH.id})
    with pytest.raises(LocalProtocolError, match=r"0x80: extension keepalive \(id 1\) is not active"):
        pair.client.send(ExtensionMessage(type=PING, payload=bytes(8)))
    with pytest.raises(LocalProtocolError, match="no extension owns it"):
        pair.client.send(ExtensionMessage(type=0xF0, payload=b""))
    assert not pair.client.has_data_to_send  # nothing was queued


def test_active_extension_messages_become_events_both_ways() -> None:
    pair = ConnectionPair(BOTH, BOTH)
    pair.client.send(ExtensionMessage(type=0x84, payload=b"hello"))
    pair.server.send(ExtensionMessage(type=0x85, payload=b""))
    client_events, server_events = pair.events()
    assert server_events == [ExtensionReceived(type=0x84, payload=b"hello")]
    assert client_events == [ExtensionReceived(type=0x85, payload=b"")]


def test_ping_is_answered_with_pong_by_the_core() -> None:
    """§14: a ping is answered with a pong carrying the same 8 bytes."""
    pair = ConnectionPair(BOTH, BOTH)
    pair.client.send(ExtensionMessage(type=PING, payload=b"\x00\x01\x02\x03\x04\x05\x06\x07"))
    client_events, server_events = pair.events()
    assert server_events == [ExtensionReceived(type=PING, payload=b"\x00\x01\x02\x03\x04\x05\x06\x07")]
    assert client_events == [ExtensionReceived(type=PONG, payload=b"\x00\x01\x02\x03\x04\x05\x06\x07")]


@pytest.mark.parametrize("size", [0, 7, 9])
def test_keepalive_payload_must_be_8_bytes(size: int) -> None:
    server = Connection(Side.SERVER, BOTH)
    server.receive_data(
        encode(ClientHello(extensions=(1,))) + encode(ExtensionMessage(type=PING, payload=bytes(size)))
    )
    *_, closed = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, ExtensionError)
    assert "8 bytes" in closed.reason and "§14" in closed.reason


@pytest.mark.parametrize("code", [0x80, 0x81, 0x84, 0x88, 0x8F])
def test_message_of_an_inactive_extension_is_a_connection_error(code: int) -> None:
    """Goodbye naming the type and §4.4; the frames before it were handled."""
    server = connected(Side.SERVER)  # no extension offered
    server.receive_data(wire(Request(subscriber=1, demand=1), ExtensionMessage(type=code, payload=bytes(8))))
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, ExtensionError)
    assert f"0x{code:02x}" in closed.reason and "not active" in closed.reason and "§4.4" in closed.reason
    [data] = server.data_to_send()
    assert data[0] == 0x03 and f"0x{code:02x}".encode() in data and "§4.4".encode() in data
    assert server.state is ConnectionState.CLOSED


def test_extension_active_at_one_end_only_is_inactive() -> None:
    """The client offers keepalive, the server does not: a ping is an error at the server."""
    server = Connection(Side.SERVER)
    server.receive_data(
        encode(ClientHello(extensions=(1,))) + encode(ExtensionMessage(type=PING, payload=bytes(8)))
    )
    *_, closed = server.events_received()
    assert isinstance(closed, ConnectionClosed) and "keepalive (id 1), which is not active" in closed.reason


def test_a_type_no_extension_owns_is_refused() -> None:
    server = connected(Side.SERVER, BOTH)
    server.receive_data(b"\xfe\x00")
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and "0xfe" in closed.reason and "§4.4" in closed.reason


@pytest.mark.parametrize(
    ("code", "owner"),
    [
        (0x87, AUTH),
        (0x8D, RESUME),
        (0x8E, RESUME),
        (0x8F, RESUME),
        (0x9A, ERROR_CODES),
        (0x9E, MESSAGES),
        (0xA7, CHANNELS),
    ],
)
def test_a_reserved_type_of_an_active_extension_is_a_connection_error(code: int, owner: Extension) -> None:
    """Reserved types are defined by no message: a goodbye citing §4.4, even with the extension active."""
    config = ConnectionConfig(extensions=frozenset({owner.id}))
    server = Connection(Side.SERVER, config)
    server.receive_data(encode(ClientHello(extensions=(owner.id,))))
    assert server.extensions == {owner.id}
    server.receive_data(encode(ExtensionMessage(type=code, payload=b"x")))
    *_, closed = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, ExtensionError)
    assert closed.reason == f"message type 0x{code:02x} is reserved by extension {owner} (PROTOCOL.md §4.4)"
    assert b"".join(server.data_to_send()).endswith(encode(Goodbye(reason=closed.reason)))
    client = Connection(Side.CLIENT, config)
    client.receive_data(encode(ServerHello(extensions=(owner.id,))))
    with pytest.raises(LocalProtocolError, match="reserves it"):
        client.send(ExtensionMessage(type=code))


def test_reserved_types_are_owned_types() -> None:
    assert AUTH.reserved == {0x87} and RESUME.reserved == set(range(0x8D, 0x90))
    with pytest.raises(ValueError, match="reserved"):
        Extension(9, "bad", frozenset({0x90}), reserved=frozenset({0x91}))


def test_extension_message_before_the_hello_is_a_handshake_error() -> None:
    """Even if the extension would be active: the first message must be the hello (§4.1)."""
    server = Connection(Side.SERVER, BOTH)
    server.receive_data(encode(ExtensionMessage(type=PING, payload=bytes(8))))
    [closed] = server.events_received()
    assert isinstance(closed, ConnectionClosed) and isinstance(closed.error, HandshakeError)


def test_extension_messages_after_our_goodbye_are_discarded() -> None:
    pair = ConnectionPair(BOTH, BOTH)
    pair.client.send(Goodbye(reason="bye"))
    pair.server.send(ExtensionMessage(type=PING, payload=bytes(8)))
    pair.pump()
    client_events = pair.client.events_received()
    assert [type(e) for e in client_events] == [Goodbye, ConnectionClosed]
    with pytest.raises(ConnectionBrokenError):
        pair.client.send(ExtensionMessage(type=PING, payload=bytes(8)))


def test_hello_lists_the_configured_extensions() -> None:
    assert Connection(Side.SERVER, BOTH).data_to_send() == [encode(ServerHello(extensions=(1, 2)))]


extension_messages = st.builds(ExtensionMessage, type=st.integers(0x80, 0xFF), payload=st.binary(max_size=40))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(extension_messages, max_size=8),
    st.sampled_from([frozenset(), frozenset({1}), frozenset({1, 2, 3})]),
)
def test_any_extension_traffic_gives_events_or_our_error(
    messages: list[ExtensionMessage], ids: frozenset[int]
) -> None:
    """Whatever extension messages arrive, fed whole or byte by byte: the same events, and a
    connection that closes does so with our ExtensionError (never another exception)."""
    data = encode(ClientHello(extensions=tuple(sorted(ids)))) + wire(*messages)
    results = []
    for step in (len(data), 1):
        server = Connection(Side.SERVER, ConnectionConfig(extensions=frozenset({1, 2, 3})))
        events = []
        for i in range(0, len(data), step):
            if server.state is ConnectionState.CLOSED:
                break
            server.receive_data(data[i : i + step])
            events += server.events_received()
        results.append([repr(event) for event in events])  # exceptions compare by identity
        for event in events:
            assert isinstance(event, ClientHello | ExtensionReceived | ConnectionClosed)
            if isinstance(event, ConnectionClosed):
                assert isinstance(event.error, ExtensionError) and "§" in event.reason
    assert results[0] == results[1]
