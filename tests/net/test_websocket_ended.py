"""A ws:// server that goes away mid-stream (its process killed, its socket closed or reset, no
close frame) fails the client's streams with the words a tcp:// server doing the same gives
(PROTOCOL.md §9.3): ``the peer broke the protocol: input ended without a goodbye`` for an end
of input, ``the connection failed: ...`` with the socket's own error for a reset; not
websockets' "no close frame received or sent".

Each server here is raw: it says hello, answers the subscribe with onSubscribe and two elements
(fewer than the client asked for, so the client has nothing more to write), then ends its
socket without a word."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Callable
from typing import Any

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net import connect
from rstreams.wire import Connection as Core
from rstreams.wire import ConnectionConfig, Side, Subscribe

pytest.importorskip("websockets")

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


def _answer(core: Core, data: bytes) -> list[bytes] | None:
    """Feed ``data`` to the server's ``core``; once the subscribe is in, the bytes that answer it."""
    core.receive_data(data)
    for event in core.events_received():
        if isinstance(event, Subscribe):
            core.send_on_subscribe(event.subscriber)
            core.on_next(event.subscriber, b"one")
            core.on_next(event.subscriber, b"two")
            return core.data_to_send()
    return None


def _end(sock: Any, how: str, close: Callable[[], object]) -> None:
    if how == "reset":  # SO_LINGER 0: the close resets the connection, as a crashed host's stack may
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    close()


async def _tcp_server(how: str) -> tuple[str, asyncio.AbstractServer]:
    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        core = Core(Side.SERVER, ConnectionConfig())
        writer.writelines(core.data_to_send())
        while (answer := _answer(core, await reader.read(65536))) is None:
            pass
        writer.writelines(answer)
        await writer.drain()
        _end(writer.get_extra_info("socket"), how, writer.transport.abort if how == "reset" else writer.close)

    server = await asyncio.start_server(serve_one, "127.0.0.1", 0)
    return f"tcp://127.0.0.1:{server.sockets[0].getsockname()[1]}", server


async def _ws_server(how: str) -> tuple[str, Any]:
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve as ws_serve

    from rstreams.net._websocket import SUBPROTOCOL

    async def serve_one(ws: ServerConnection) -> None:
        core = Core(Side.SERVER, ConnectionConfig())
        await ws.send(b"".join(core.data_to_send()))
        while (answer := _answer(core, await ws.recv())) is None:
            pass
        await ws.send(b"".join(answer))
        transport = ws.transport  # the socket itself: no close frame
        _end(transport.get_extra_info("socket"), how, transport.abort if how == "reset" else transport.close)
        await ws.wait_closed()

    server = await ws_serve(serve_one, "127.0.0.1", 0, subprotocols=[SUBPROTOCOL], compression=None)
    return f"ws://127.0.0.1:{server.sockets[0].getsockname()[1]}/", server


async def _broken(url: str) -> ConnectionBrokenError:
    conn = await asyncio.wait_for(connect(url), 10)
    try:
        stream = aiter(conn.publisher("endless"))
        assert [await anext(stream), await anext(stream)] == [b"one", b"two"]
        with pytest.raises(ConnectionBrokenError) as broken:
            await anext(stream)
    finally:
        await conn.aclose()
    return broken.value


@pytest.mark.parametrize("how", ["end", "reset"])
async def test_a_ws_server_gone_mid_stream_is_told_as_on_tcp(how: str) -> None:
    errors = []
    for start in (_tcp_server, _ws_server):
        url, server = await start(how)
        try:
            errors.append(await asyncio.wait_for(_broken(url), 30))
        finally:
            server.close()
            await server.wait_closed()
    on_tcp, on_ws = errors
    assert str(on_ws) == str(on_tcp), (str(on_ws), str(on_tcp))
    assert type(on_ws.__cause__) is type(on_tcp.__cause__), (on_ws.__cause__, on_tcp.__cause__)
    if how == "end":
        assert str(on_ws) == "the peer broke the protocol: input ended without a goodbye"
    else:
        assert str(on_ws).startswith("the connection failed: [Errno"), str(on_ws)
        assert isinstance(on_ws.__cause__, ConnectionResetError), repr(on_ws.__cause__)
    assert "close frame" not in str(on_ws)
