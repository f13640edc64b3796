"""TLS cannot half-close: a server's error goodbye must still reach a peer that floods it (issue 5).

Closing a socket with unread input resets it, and a reset makes the peer's kernel drop what
the peer has not read yet: the goodbye that explains the close. Over TCP the server closes
its sending side first (``write_eof``) and then discards input; TLS has no half-close, so
the server must keep reading (and discarding) until the peer, having read the goodbye,
closes, or a bound is reached (PROTOCOL.md §10).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

import rstreams
from rstreams.net import connect, serve
from rstreams.wire import ClientHello, ConnectionClosed, Side, encode
from rstreams.wire import Connection as Core

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello")}
FLOOD = 3 * 1024 * 1024  # below the 4 MiB discard bound: the goodbye must survive every time


async def _flood_then_read(url: str, client_ssl: ssl.SSLContext, violation: bytes) -> str:
    """Send hello, ``violation`` and FLOOD more bytes, *then* read (a busy peer reads late):
    return the goodbye reason found in what arrives before the end or a reset."""
    host, port = url.split("://", 1)[1].rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port), ssl=client_ssl)
    core = Core(Side.CLIENT)
    writer.write(encode(ClientHello()) + violation + bytes(FLOOD))  # zeros: more of the same bad frame
    await asyncio.sleep(0.3)  # the peer is busy elsewhere and reads late: that is the case under test
    try:
        while data := await asyncio.wait_for(reader.read(65536), 10):
            core.receive_data(data)
            closed = [event for event in core.events_received() if isinstance(event, ConnectionClosed)]
            if closed:
                return closed[0].reason
    except (ConnectionError, ssl.SSLError):
        pass  # a reset: what was read before it is all we get
    finally:
        writer.close()
    raise AssertionError("the goodbye was lost: the connection ended (or was reset) before it was read")


async def test_a_flooding_tls_peer_gets_the_goodbye_reason(
    server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    async with await serve("tls://127.0.0.1:0", OFFER, ssl=server_ssl) as server:
        good = await connect(server.url, ssl=client_ssl)
        for _ in range(5):  # the race is timing-dependent: several rounds make a loss likely without the fix
            reason = await _flood_then_read(server.url, client_ssl, b"\x0e")
            assert "unknown message type 0x0e" in reason and "§3" in reason
        assert await asyncio.wait_for(good.request("greeting"), 10) == b"hello"
        await good.aclose()


async def test_a_flooding_tls_peer_gets_a_limit_goodbye(
    server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    """The same for a goodbye the server decides on its own (close_now): the connection limit."""
    async with await serve("tls://127.0.0.1:0", OFFER, ssl=server_ssl, max_connections=1) as server:
        good = await connect(server.url, ssl=client_ssl)
        assert await asyncio.wait_for(good.request("greeting"), 10) == b"hello"
        for _ in range(3):
            reason = await _flood_then_read(server.url, client_ssl, b"")
            assert "too many connections" in reason
        await good.aclose()


async def _ws_flood_then_read(url: str, client_ssl: ssl.SSLContext | None) -> str:
    """The same over a WebSocket (binary messages). Its close handshake already delivered the goodbye
    before the lingering close; this guards it."""
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed as WsClosed

    from rstreams.net._websocket import SUBPROTOCOL

    core = Core(Side.CLIENT)
    async with ws_connect(url, subprotocols=[SUBPROTOCOL], ssl=client_ssl, max_size=None) as ws:
        await ws.send(encode(ClientHello()) + b"\x0e")
        try:
            for _ in range(FLOOD // (256 * 1024)):
                await ws.send(bytes(256 * 1024))
        except WsClosed:
            pass
        await asyncio.sleep(0.3)  # the peer reads late
        try:
            while True:
                message = await asyncio.wait_for(ws.recv(), 10)
                core.receive_data(message if isinstance(message, bytes) else message.encode())
                closed = [event for event in core.events_received() if isinstance(event, ConnectionClosed)]
                if closed:
                    return closed[0].reason
        except WsClosed:
            pass
    raise AssertionError("the goodbye was lost: the WebSocket closed before it was read")


@pytest.mark.parametrize("scheme", ["ws", "wss"])
async def test_a_flooding_websocket_peer_gets_the_goodbye_reason(
    scheme: str, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    secure = scheme == "wss"
    async with await serve(
        f"{scheme}://127.0.0.1:0/rsio", OFFER, ssl=server_ssl if secure else None
    ) as server:
        for _ in range(3):
            reason = await _ws_flood_then_read(server.url, client_ssl if secure else None)
            assert "unknown message type 0x0e" in reason
