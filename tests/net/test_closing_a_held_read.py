"""A server that closes while it works through a read a part at a time still reads the answer to
its goodbye (PROTOCOL.md §9.1).

A read of many small messages is handled READ_TURN bytes a loop turn, the transport not read
meanwhile (rstreams.net._intake). When the server closes then (``aclose()``: its goodbye, and its
streams end), the rest of that read is still to be handled and the transport read again: the
peer's answer comes in or after it. The rest was dropped and reading not resumed: the server
waited its 5 s bound on a connection's close, then aborted it (a reset, which can take the
goodbye from the peer); resuming alone would have cut the input inside a message.
"""

from __future__ import annotations

import asyncio

import pytest

from rstreams.net import Connection, Server, serve
from rstreams.wire import ClientHello, ExtensionMessage, FrameParser, Goodbye, encode, extensions
from testkit.bound import within

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

HELLO = encode(ClientHello(extensions=(extensions.KEEPALIVE.id,)))
PINGS = encode(ExtensionMessage(type=extensions.PING, payload=bytes(8))) * 2_000  # 20 KB: parts
ANSWER = encode(Goodbye(reason="bye"))


def _goodbye_in(parser: FrameParser, data: bytes) -> bool:
    return any(isinstance(frame, Goodbye) for frame in parser.feed(data))


async def _holding(server: Server, connections: list[Connection]) -> None:
    """Until the server's connection holds the rest of a read (reading paused meanwhile)."""

    async def held() -> None:
        while True:
            if connections and connections[0]._pump._held is not None:
                return
            await asyncio.sleep(0)

    await within(held())


async def test_the_answer_is_read_over_tcp() -> None:
    connections: list[Connection] = []
    server = await serve("tcp://127.0.0.1:0", {}, on_connection=connections.append)
    host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(HELLO + PINGS)

    async def peer() -> bool:
        """Reads; answers the goodbye; whether its input then ended (not a reset)."""
        parser, answered = (
            FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64),
            False,
        )
        try:
            while data := await reader.read(1 << 16):
                if not answered and _goodbye_in(parser, data):
                    writer.write(ANSWER)
                    answered = True
        except ConnectionResetError:
            return False
        return answered

    reading = asyncio.ensure_future(peer())
    try:
        await _holding(server, connections)
        await within(server.aclose(), 2)  # not the 5 s bound
        assert await within(reading), "the peer did not answer, or was reset"
        assert str(connections[0]._pump.outbox.ended) == "the connection was closed by this side"
    finally:
        reading.cancel()
        writer.close()


async def test_the_answer_is_read_over_websocket() -> None:
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed

    connections: list[Connection] = []
    server = await serve("ws://127.0.0.1:0/rsio", {}, on_connection=connections.append)
    ws = await ws_connect(server.url, subprotocols=["rsio.v0"], proxy=None)
    await ws.send(HELLO + PINGS)

    async def peer() -> bool:
        parser, answered = (
            FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64),
            False,
        )
        try:
            while True:
                data = await ws.recv()
                assert isinstance(data, bytes)
                if not answered and _goodbye_in(parser, data):
                    await ws.send(ANSWER)
                    answered = True
        except ConnectionClosed as closed:
            return answered and closed.rcvd is not None  # the server's close frame

    reading = asyncio.ensure_future(peer())
    try:
        await _holding(server, connections)
        await within(server.aclose(), 2)  # not the 5 s bound
        assert await within(reading), "the peer did not answer, or got no close"
        assert str(connections[0]._pump.outbox.ended) == "the connection was closed by this side"
    finally:
        reading.cancel()
        await ws.close()
