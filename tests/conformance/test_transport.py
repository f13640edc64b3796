"""The driver's raw transports (rstreams.conformance._transport), against a peer made for each test."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.conformance._transport import open_raw
from rstreams.net._websocket import INPUT_FRAMES
from testkit.rawws import accept_upgrade

pytestmark = pytest.mark.timeout(30)

BACKLOG = INPUT_FRAMES + 20
"""Messages the peer sends before it reads: more than the driver's library queues (it then stops
reading the socket), few and small enough for the socket buffers to hold the rest."""
CLOSE = 0x8
"""RFC 6455 §5.5.1: the close frame's opcode."""


def _message(index: int) -> bytes:
    return index.to_bytes(2, "big") * 8


class _StillSending:
    """A WebSocket peer, by hand (RFC 6455), that sends :data:`BACKLOG` messages nobody reads yet
    and then reads the driver's frames: at its close frame it answers with its own, which queues
    behind the messages, and closes."""

    def __init__(self) -> None:
        self.got_close = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept_upgrade(reader, writer)
        for index in range(BACKLOG):
            writer.write(bytes([0x82, 16]) + _message(index))  # binary, final, unmasked: 16 bytes
        while True:
            head = await reader.readexactly(2)
            size = head[1] & 0x7F  # the driver sends nothing long before its close
            await reader.readexactly(4 + size)  # the mask and the payload
            if head[0] & 0x0F == CLOSE:
                break
        self.got_close.set()
        writer.write(bytes([0x88, 2]) + (1000).to_bytes(2, "big"))
        writer.close()


@pytest.mark.asyncio
async def test_ending_our_output_over_websocket_sends_the_close_and_does_not_wait_for_the_peers() -> None:
    """write_eof over WebSocket sends our close frame and returns, as TCP's FIN is sent: by the time
    the peer has read that close frame, write_eof has returned. It used to await the whole close
    handshake, whose answer sat unread behind the peer's messages (the library had stopped reading
    the socket), until a 2 s bound: cl.eof_releases_publisher against an endless stream over ws
    took 2.01 s. What the peer sent before its close is still read in full, then the end of input.

    No clock is read: the order of two events decides (write_eof done, the peer's read of our close)."""
    peer = _StillSending()
    async with await asyncio.start_server(peer.handle, "127.0.0.1", 0) as server:
        port = server.sockets[0].getsockname()[1]
        transport = await open_raw(f"ws://127.0.0.1:{port}/rsio")
        first = await transport.read()  # the peer is sending; the driver's library queue fills
        eof = asyncio.ensure_future(transport.write_eof())
        try:
            await peer.got_close.wait()
            assert eof.done(), "write_eof still waited for the close handshake when the peer read our close"
            await eof
            received = [first]
            while data := await transport.read():
                received.append(data)
        finally:
            eof.cancel()
            transport.abort()
    assert received == [_message(index) for index in range(BACKLOG)]
