"""A peer that resets its connection while the server is not reading it (its replies backed up
in the server's socket: rstreams.net._intake) ends that connection within a look at the socket
(at most UNREAD_POLL_MAX, 1 s), not at unread_timeout (30 s): not read, and with nothing of its
own to write, the server's socket would not tell, and its queue goes on counting the replies it
held. Over TCP and WebSocket, on real sockets."""

from __future__ import annotations

import asyncio
import socket
import struct

import pytest

from rstreams.net import Connection, serve
from rstreams.net._intake import UNREAD_POLL_MAX
from rstreams.wire import ClientHello, ExtensionMessage, encode, extensions
from testkit.bound import within
from testkit.net import pump_of
from testkit.rawws import masked

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

PINGS = encode(ExtensionMessage(type=extensions.PING, payload=bytes(8))) * 1000  # 17 KB of pings


async def _peer(url: str) -> tuple[socket.socket, asyncio.StreamWriter]:
    """A raw client socket with a 4 KiB receive buffer (the server's replies back up at once), its
    WebSocket opening handshake done for a ws:// ``url``."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.setblocking(False)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    reader, writer = await asyncio.open_connection(sock=sock)
    if url.startswith("ws:"):
        writer.write(
            (
                f"GET /rsio HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                "Connection: Upgrade\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n"
                "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: rsio.v0\r\n\r\n"
            ).encode()
        )
        head = await within(reader.readuntil(b"\r\n\r\n"))
        assert head.startswith(b"HTTP/1.1 101"), head
    return sock, writer


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:0", "ws://127.0.0.1:0/rsio"], ids=["tcp", "ws"])
async def test_a_peer_reset_while_not_read_ends_its_connection_within_a_look(url: str) -> None:
    connections: list[Connection] = []
    async with await serve(url, {}, on_connection=connections.append) as server:
        sock, writer = await _peer(server.url)
        frame = masked if server.url.startswith("ws:") else bytes
        writer.write(frame(encode(ClientHello(extensions=(extensions.KEEPALIVE.id,)))))

        async def not_read() -> Connection:
            """Pings until the server stops reading for the pongs its socket holds (over WebSocket,
            until websockets' queue is full too: it stops reading the socket)."""
            while True:
                if connections:
                    pump = pump_of(connections[0])
                    ws = pump.outbox.transport.get_extra_info("websocket")  # type: ignore[union-attr]
                    socket_read = ws is not None and ws.transport.is_reading()
                    if pump._backed_up and pump._look is not None and not socket_read:
                        return connections[0]
                writer.write(frame(PINGS))
                await asyncio.sleep(0.005)

        try:
            conn = await within(not_read(), 10)
        finally:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()  # a reset
        await within(conn.wait_closed(), 1.5 * UNREAD_POLL_MAX)  # (the loop's own time)
