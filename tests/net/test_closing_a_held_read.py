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


class _Tcp:
    """The peer over tcp://: its socket's streams."""

    async def open(self, url: str) -> None:
        host, port = url.removeprefix("tcp://").rsplit(":", 1)
        self.reader, self.writer = await asyncio.open_connection(host, int(port))

    async def send(self, data: bytes) -> None:
        self.writer.write(data)

    async def read(self) -> bytes:
        """What came next; b"" at the server's end of input (a reset raises)."""
        return await self.reader.read(1 << 16)

    async def close(self) -> None:
        self.writer.close()


class _WebSocket:
    """The peer over ws://: a websockets client, whose messages are the bytes."""

    async def open(self, url: str) -> None:
        from websockets.asyncio.client import connect as ws_connect

        self.ws = await ws_connect(url, subprotocols=["rsio.v0"], proxy=None)

    async def send(self, data: bytes) -> None:
        await self.ws.send(data)

    async def read(self) -> bytes:
        """What came next; b"" at the server's close frame (an end without one raises)."""
        from websockets.exceptions import ConnectionClosed

        try:
            data = await self.ws.recv()
        except ConnectionClosed as closed:
            if closed.rcvd is None:
                raise ConnectionResetError("no close frame from the server") from closed
            return b""
        assert isinstance(data, bytes)
        return data

    async def close(self) -> None:
        await self.ws.close()


@pytest.mark.parametrize(
    ("url", "transport"),
    [("tcp://127.0.0.1:0", _Tcp), ("ws://127.0.0.1:0/rsio", _WebSocket)],
    ids=["tcp", "ws"],
)
async def test_the_answer_is_read(url: str, transport: type[_Tcp | _WebSocket]) -> None:
    peer = transport()
    connections: list[Connection] = []
    server = await serve(url, {}, on_connection=connections.append)
    await peer.open(server.url)
    await peer.send(HELLO + PINGS)

    async def answering() -> bool:
        """Reads; answers the goodbye; whether its input then ended (no reset, a close frame)."""
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
        answered = False
        try:
            while data := await peer.read():
                if not answered and _goodbye_in(parser, data):
                    await peer.send(ANSWER)
                    answered = True
        except ConnectionResetError:
            return False
        return answered

    reading = asyncio.ensure_future(answering())
    try:
        await _holding(server, connections)
        await within(server.aclose(), 2)  # not the 5 s bound
        assert await within(reading), "the peer did not answer, or its input did not end cleanly"
        assert str(connections[0]._pump.outbox.ended) == "the connection was closed by this side"
    finally:
        reading.cancel()
        await peer.close()
