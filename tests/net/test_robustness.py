"""Peers that misbehave or vanish: each failure stays inside its own connection."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError
from rstreams.net import Connection, RemoteStreamError, connect, serve
from rstreams.net._websocket import SUBPROTOCOL
from rstreams.wire import ClientHello, ConnectionConfig, Subscribe, encode
from testkit.bound import within
from testkit.net import WAIT, CountingSource

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello")}


def _host_port(url: str) -> tuple[str, int]:
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    return host, int(port.split("/", 1)[0])


async def test_abrupt_disconnect_cancels_the_servers_publisher() -> None:
    """A client that vanishes without goodbye: its streams end, the local publisher is cancelled."""
    source = CountingSource()
    closed = asyncio.Event()

    def on_connection(conn: Connection) -> None:
        conn.add_close_callback(lambda _: closed.set())

    async with await serve("tcp://127.0.0.1:0", {"endless": source}, on_connection=on_connection) as server:
        reader, writer = await asyncio.open_connection(*_host_port(server.url))
        writer.write(
            encode(ClientHello()) + encode(Subscribe(publisher="endless", subscriber=1, initial_demand=10))
        )
        await within(reader.readexactly(3))  # serverHello: the server is talking to us
        await within(source.subscribed.wait())
        writer.transport.abort()
        await within(source.cancelled.wait())
        await within(closed.wait())
        assert not server.connections
        async with await connect(server.url) as conn:
            assert await within(conn.request("endless")) == (1).to_bytes(8, "big")


async def test_version_mismatch_gets_a_goodbye() -> None:
    """A hello with version 1 is answered with a goodbye naming the version, then EOF."""
    async with await serve("tcp://127.0.0.1:0", OFFER) as server:
        reader, writer = await asyncio.open_connection(*_host_port(server.url))
        writer.write(encode(ClientHello(version=1)))
        data = await within(reader.read())
        writer.close()
        assert data[:10] == b"\x02\x00\x07\x01\x04\x05\x06\x07\x08\x09"  # serverHello v0, extensions [1, 4-9]
        assert data[10] == 0x03  # goodbye
        assert b"version" in data


async def test_aclose_does_not_hang_when_the_peer_never_answers() -> None:
    """A peer that ignores our goodbye: aclose gives up after its timeout and closes anyway."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()  # read everything, answer nothing, until the client closes

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    try:
        port = listener.sockets[0].getsockname()[1]
        conn = await connect(f"tcp://127.0.0.1:{port}")
        await within(conn.aclose(timeout=0.2))
        assert conn.closed
    finally:
        for writer in accepted:
            writer.close()
        listener.close()
        await listener.wait_closed()


async def test_subscription_limit_refuses_with_on_error() -> None:
    """Beyond max_subscriptions the server refuses that subscribe with onError; others go on."""
    source = CountingSource()
    config = ConnectionConfig(max_subscriptions=2)
    async with (
        await serve("tcp://127.0.0.1:0", {"endless": source, **OFFER}, config=config) as server,
        await connect(server.url) as conn,
    ):
        iterators = [conn.publisher("endless").iter_async(window=4) for _ in range(2)]
        for iterator in iterators:
            assert await within(iterator.__anext__()) == (1).to_bytes(8, "big")
        with pytest.raises(RemoteStreamError, match="2 subscriptions"):
            await within(conn.request("greeting"))
        for iterator in iterators:
            await iterator.aclose()  # type: ignore[attr-defined]
        await within(source.cancelled.wait())


async def test_subscribe_and_consume_from_another_thread() -> None:
    """iter_blocking on a worker thread: subscribe/request cross to the loop's thread."""
    numbers = {"numbers": lambda p: rstreams.range(1000).map(lambda i: i.to_bytes(4, "big"))}
    async with await serve("tcp://127.0.0.1:0", numbers) as server, await connect(server.url) as conn:
        flow = conn.publisher("numbers")
        items = await within(asyncio.to_thread(lambda: list(flow.iter_blocking(window=16, timeout=WAIT))))
        assert [int.from_bytes(x, "big") for x in items] == list(range(1000))


async def test_websocket_text_message_closes_only_that_connection() -> None:
    """A WebSocket peer sending text is closed with code 1003; the server keeps serving."""
    from websockets.asyncio.client import connect as ws_connect

    async with await serve("ws://127.0.0.1:0/rs", OFFER) as server:
        ws = await ws_connect(server.url, proxy=None, subprotocols=[SUBPROTOCOL])
        await ws.send("not binary")
        await within(ws.wait_closed())
        assert ws.close_code == 1003
        async with await connect(server.url) as conn:
            assert await within(conn.request("greeting")) == b"hello"


async def test_websocket_to_a_non_websocket_port_is_connection_broken() -> None:
    """A failed WebSocket handshake is reported like any failed connect."""

    async def not_http(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"this is not HTTP\r\n\r\n")
        writer.close()

    listener = await asyncio.start_server(not_http, "127.0.0.1", 0)
    try:
        port = listener.sockets[0].getsockname()[1]
        with pytest.raises(ConnectionBrokenError):
            await connect(f"ws://127.0.0.1:{port}/")
    finally:
        listener.close()
        await listener.wait_closed()


async def test_tls_handshake_failure_leaves_the_server_serving(server_ssl: Any, client_ssl: Any) -> None:
    """A client that does not trust the certificate fails; a trusting one then works."""
    async with await serve("tls://127.0.0.1:0", OFFER, ssl=server_ssl) as server:
        with pytest.raises(ConnectionBrokenError):
            await connect(server.url)  # default context: the self-signed certificate is rejected
        async with await connect(server.url, ssl=client_ssl) as conn:
            assert await within(conn.request("greeting")) == b"hello"


async def test_ssl_with_a_plain_scheme_is_refused(client_ssl: Any) -> None:
    """ssl= with tcp:// is a mistake: the URL would lie about encryption."""
    with pytest.raises(ValueError, match="tls://"):
        await connect("tcp://127.0.0.1:1", ssl=client_ssl)


async def test_websocket_server_answers_only_at_its_path() -> None:
    """ws://host:port/rs serves /rs; another path is a failed connect."""
    async with await serve("ws://127.0.0.1:0/rs", OFFER) as server:
        with pytest.raises(ConnectionBrokenError):
            await connect(server.url.replace("/rs", "/other"))
        async with await connect(server.url + "?token=x") as conn:  # a query string is fine
            assert await within(conn.request("greeting")) == b"hello"
