"""Handshake, versions, optimistic messages and extensions (PROTOCOL.md §4)."""

from __future__ import annotations

from rstreams.wire import (
    ClientHello,
    Connection,
    ConnectionClosed,
    ConnectionConfig,
    ConnectionState,
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
