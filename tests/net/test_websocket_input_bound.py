"""What a ws:// server holds of a peer it does not read is bounded by a few messages, not by the
websockets library's default queue of 16 frames (PROTOCOL.md §6.3's input backpressure); and a
connection it does not read still ends when its WebSocket does.

A server reads a peer a part at a time and stops reading one that leaves its replies unread
(rstreams.net._intake); over TCP the rest waits in the kernel. Over WebSocket the library parses
what arrives into frames and queues them until its own bound, then stops reading the socket: a
frame may be 1 MiB (§1), so with websockets' default of 16 frames a peer sending 1 MiB messages
had the server hold 17 MiB. Every connection here has a queue of one frame: at most two frames
and the one being parsed, about 3 MiB.
"""

from __future__ import annotations

import asyncio
import base64
import os
import socket

import pytest

from rstreams.conformance._transport import RawListener, open_raw
from rstreams.net import Connection, serve
from rstreams.wire import ClientHello, ExtensionMessage, encode, extensions
from testkit.bound import within
from testkit.rawws import masked

pytest.importorskip("websockets")

from rstreams.net._websocket import INPUT_FRAMES  # (needs websockets)

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

MiB = 1024 * 1024
PING = encode(ExtensionMessage(type=extensions.PING, payload=bytes(8)))
MESSAGE = PING * (MiB // len(PING))  # one message of pings, just under 1 MiB


async def _upgraded(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A ws:// client socket with a 4 KiB receive buffer (so the server's pongs back up at once),
    its opening handshake for rsio.v0 done."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET /rsio HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Protocol: rsio.v0\r\n\r\n"
        ).encode()
    )
    head = await within(reader.readuntil(b"\r\n\r\n"))
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


def _held(ws: object) -> int:
    """Bytes of the peer's input a websockets connection holds: frames parsed and queued for its
    reader, and the bytes of the frame being parsed."""
    queued = ws.recv_messages.frames.queue  # type: ignore[attr-defined]  # websockets' own
    parsing = ws.protocol.reader.buffer  # type: ignore[attr-defined]
    return sum(len(frame.data) for frame in queued) + len(parsing)


async def test_a_peer_that_floods_1_mib_messages_and_never_reads_is_held_to_a_few_mib() -> None:
    connections: list[Connection] = []
    async with await serve("ws://127.0.0.1:0/rsio", {}, on_connection=connections.append) as server:
        _, writer = await _upgraded(int(server.url.rsplit(":", 1)[1].split("/")[0]))
        writer.write(masked(encode(ClientHello(extensions=(extensions.KEEPALIVE.id,)))))

        async def flood() -> None:
            while True:
                writer.write(masked(MESSAGE))
                await writer.drain()

        flooding = asyncio.create_task(flood())
        try:

            async def server_stopped_reading() -> object:
                while True:
                    await asyncio.sleep(0.01)
                    if connections:
                        transport = connections[0]._pump.outbox.transport
                        assert transport is not None
                        ws = transport.get_extra_info("websocket")
                        if not ws.transport.is_reading():
                            return ws

            ws = await within(server_stopped_reading(), 30)
            held = _held(ws)
        finally:
            flooding.cancel()
            writer.transport.abort()
    assert held <= 3 * MiB + 64 * 1024, f"the server holds {held / MiB:.1f} MiB of a peer it does not read"


async def test_a_connection_the_server_is_not_reading_ends_when_the_server_closes() -> None:
    """The server is not reading the peer (it works through a read of pings a part a turn, and
    websockets' queue is full, so the socket is not read either), the peer resets the socket, the
    server closes: the connection ends at once, not at the server's 5 s bound on its connections'
    close. (Its read loop, waiting for reading to resume, did not hear that websockets'
    connection had ended.)"""
    connections: list[Connection] = []
    server = await serve("ws://127.0.0.1:0/rsio", {}, on_connection=connections.append)
    _, writer = await _upgraded(int(server.url.rsplit(":", 1)[1].split("/")[0]))
    writer.write(masked(encode(ClientHello(extensions=(extensions.KEEPALIVE.id,)))))

    async def not_read() -> Connection:
        while True:
            writer.write(masked(MESSAGE))
            await asyncio.sleep(0)
            if connections:
                pump = connections[0]._pump
                transport = pump.outbox.transport
                assert transport is not None
                ws = transport.get_extra_info("websocket")
                if pump._held is not None and not pump._backed_up and not ws.transport.is_reading():
                    return connections[0]

    try:
        conn = await within(not_read(), 30)
    finally:
        writer.transport.abort()
    await within(server.aclose(), 2)
    assert conn.closed


async def test_the_conformance_driver_s_websockets_queue_as_many_frames() -> None:
    """The conformance driver's raw WebSocket client and listener (its own websockets
    connections) have rstreams.net's INPUT_FRAMES as their queue, not the library's 16 frames."""
    from websockets.asyncio.client import connect as ws_connect

    async with await serve("ws://127.0.0.1:0/rsio", {}) as server:
        client = await within(open_raw(server.url))
        try:
            assert client._ws.recv_messages.high == INPUT_FRAMES  # type: ignore[attr-defined]
        finally:
            client.abort()
    listener = RawListener()
    await listener.start("ws")
    try:
        async with ws_connect(listener.url, subprotocols=["rsio.v0"]):
            accepted = await within(listener.accept())
            assert accepted._ws.recv_messages.high == INPUT_FRAMES  # type: ignore[attr-defined]
    finally:
        await listener.aclose()
