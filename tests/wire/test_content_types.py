"""Extension content-types in the core (PROTOCOL.md §17): contentType written adjacent to its
onSubscribe, read back as a Qualifier, checked, and absent when not negotiated."""

from __future__ import annotations

import pytest

from rstreams.wire import (
    Cancel,
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    ExtensionMessage,
    OnSubscribe,
    Qualifier,
    ServerHello,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire import Connection as Core
from rstreams.wire._content import check_media_type, encode_content_type, same_media_type
from rstreams.wire.extensions import CONTENT_TYPE, CONTENT_TYPES
from testkit.wire import ConnectionPair, connected

ON = ConnectionConfig(extensions=frozenset({CONTENT_TYPES.id}))
OFF = ConnectionConfig()


def _client() -> Core:
    conn = Core(Side.CLIENT, ON)
    conn.receive_data(encode(ServerHello(extensions=(CONTENT_TYPES.id,))))
    conn.send(Subscribe(publisher="p", subscriber=1))
    conn.data_to_send()
    conn.events_received()
    return conn


def _ct(sid: int, text: str) -> bytes:
    return encode(ExtensionMessage(type=CONTENT_TYPE, payload=encode_content_type(sid, text)))


def test_content_type_goes_right_before_on_subscribe_and_comes_back_as_a_qualifier() -> None:
    pair = ConnectionPair(ON, ON)
    pair.client.send(Subscribe(publisher="p", subscriber=1))
    pair.events()
    pair.server.send_on_subscribe(1, 0, "application/json")
    data = b"".join(pair.server.data_to_send())
    assert data == _ct(1, "application/json") + encode(OnSubscribe(subscriber=1))
    pair.client.receive_data(data)
    assert pair.client.events_received() == [
        Qualifier(type=CONTENT_TYPE, subscriber=1, value="application/json"),
        OnSubscribe(subscriber=1),
    ]


@pytest.mark.parametrize(("client", "server"), [(ON, OFF), (OFF, ON)])
def test_without_the_extension_on_both_sides_on_subscribe_goes_alone(
    client: ConnectionConfig, server: ConnectionConfig
) -> None:
    pair = ConnectionPair(client, server)
    pair.client.send(Subscribe(publisher="p", subscriber=1))
    pair.events()
    pair.server.send_on_subscribe(1, 8, "application/vnd.rsio.int64le")
    assert b"".join(pair.server.data_to_send()) == encode(OnSubscribe(subscriber=1, element_size=8))


def test_no_type_means_the_bytes_of_a_peer_without_the_extension() -> None:
    conn = connected(Side.SERVER, ON)
    conn.receive_data(encode(Subscribe(publisher="p", subscriber=1)))
    conn.send_on_subscribe(1, 0, None)
    assert b"".join(conn.data_to_send()) == encode(OnSubscribe(subscriber=1))


def test_a_content_type_for_an_on_subscribe_dropped_after_cancel_is_dropped_with_it() -> None:
    conn = _client()
    conn.send(Cancel(subscriber=1))
    conn.receive_data(_ct(1, "text/plain") + encode(OnSubscribe(subscriber=1)))
    assert conn.events_received() == []
    conn.send(Subscribe(publisher="q", subscriber=2))
    conn.receive_data(encode(OnSubscribe(subscriber=2)))  # nothing left over to misapply
    assert conn.events_received() == [OnSubscribe(subscriber=2)]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (encode(ExtensionMessage(type=CONTENT_TYPE, payload=b"")), "subscriber id"),
        (encode(ExtensionMessage(type=CONTENT_TYPE, payload=b"\x01json")), "type/subtype"),
        (encode(ExtensionMessage(type=CONTENT_TYPE, payload=b"\x01text/pl\xc3\xa9")), "US-ASCII"),
        (encode(ExtensionMessage(type=CONTENT_TYPE, payload=b"\x01a/" + b"b" * 300)), "1..255"),
        (_ct(1, "a/b") + _ct(1, "a/c"), "two contentType (0x90) messages before one onSubscribe"),
        (
            _ct(2, "a/b") + encode(OnSubscribe(subscriber=1)),
            "contentType (0x90) for subscriber 2"
            " followed by message type 0x07 for subscriber 1, not by its onSubscribe",
        ),
    ],
)
def test_a_broken_content_type_is_a_connection_error_citing_17_1(data: bytes, words: str) -> None:
    conn = _client()
    conn.receive_data(data)
    closed = conn.events_received()[-1]
    assert isinstance(closed, ConnectionClosed) and closed.error is not None
    assert words in closed.reason and "§17.1" in closed.reason


def test_a_content_type_of_an_inactive_extension_is_refused() -> None:
    conn = Core(Side.SERVER, OFF)
    conn.receive_data(encode(ClientHello()) + _ct(1, "a/b"))
    closed = conn.events_received()[-1]
    assert isinstance(closed, ConnectionClosed) and "content-types (id 4)" in closed.reason


def test_media_type_syntax_and_comparison() -> None:
    assert check_media_type("text/plain; charset=utf-8") is None
    assert check_media_type("application/vnd.apache.arrow.stream") is None
    assert check_media_type("text") is not None
    assert check_media_type("") is not None
    assert same_media_type("Text/Plain;Charset=UTF-8", "text/plain; charset=utf-8")
    assert not same_media_type("text/plain", "text/plain; charset=utf-8")
