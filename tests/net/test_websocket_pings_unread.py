"""A WebSocket peer that pings and never reads is cut off past MAX_UNSENT (PROTOCOL.md §6.3), by a
server and by a client: websockets answers pings itself, outside RS.io's backpressure, so without
a bound the pongs unsent to such a peer would grow without end."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net import connect, serve
from rstreams.wire import ServerHello, encode
from testkit.bound import within
from testkit.net import raw_websocket
from testkit.rawws import accept_upgrade

pytest.importorskip("websockets")

from rstreams.net._websocket import PINGED_NOT_READING  # (needs websockets)

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120), pytest.mark.usefixtures("smaller_bound")]

MAX_UNSENT = 4 * 1024 * 1024
"""The bound these tests set (the library's is 16 MiB, rstreams.net._intake.MAX_UNSENT): what they
check is that the peer is cut off past it, whatever it is; a smaller one takes fewer pings."""
CAP = 64 * 1024 * 1024
"""Most bytes of pings a test sends: the cut must come first. (Loopback TCP's buffers, which
autotune up to tcp_rmem's maximum, hold many MiB beside the bound: 12 to 15 MiB were sent before
the cut with a 4 MiB bound.)"""


@pytest.fixture
def smaller_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """The WebSocket connections' bound on unsent bytes (rstreams.net._websocket._PongLimit) at
    :data:`MAX_UNSENT` (PINGED_NOT_READING, made at import, still names the library's)."""
    monkeypatch.setattr("rstreams.net._websocket.MAX_UNSENT", MAX_UNSENT)


MASK = b"\x01\x02\x03\x04"
PING = b"\x89\xfd" + MASK + bytes(b ^ MASK[i % 4] for i, b in enumerate(bytes(125)))
"""A masked client ping with the largest payload a control frame may have (125 bytes)."""

"""RFC 6455 §1.3: the Sec-WebSocket-Accept is the base64 SHA-1 of the key and this."""


async def test_a_peer_that_pings_and_never_reads_is_cut_off() -> None:
    server = await serve("ws://127.0.0.1:0", {})
    async with server:
        _, writer = await raw_websocket(server.url)
        chunk = PING * (1024 * 1024 // len(PING))
        sent = 0
        limit = CAP
        cut_off = False
        try:
            while sent < limit:
                writer.write(chunk)
                await within(writer.drain(), 30)
                sent += len(chunk)
        except ConnectionError:  # reset once the server has aborted the socket
            cut_off = True
        writer.close()
    assert cut_off, sent
    # pongs are 2 bytes shorter than the pings: MAX_UNSENT of them, plus the kernel's buffers
    assert MAX_UNSENT < sent < limit, sent


async def _pinging_server(sent: list[int]) -> asyncio.Server:
    """A raw ws:// server that upgrades one connection for ``rsio.v0``, says the server's hello,
    then sends pings (of 125 bytes, unmasked) and never reads what the client writes (past the
    stream reader's buffer, which stops reading its socket): the client's pongs pile up unsent.
    ``sent`` gets the bytes of pings it wrote."""

    async def pinging(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept_upgrade(reader, writer)
        hello = encode(ServerHello())
        writer.write(bytes([0x82, len(hello)]) + hello)  # one binary message
        ping = b"\x89\x7d" + bytes(125)
        chunk = ping * (1024 * 1024 // len(ping))
        try:
            while sent[0] < CAP:
                writer.write(chunk)
                await within(writer.drain(), 30)
                sent[0] += len(chunk)
        except ConnectionError:  # reset once the client has aborted the socket
            pass
        finally:
            writer.close()

    return await asyncio.start_server(pinging, "127.0.0.1", 0)


async def test_a_client_whose_server_pings_and_never_reads_cuts_it_off() -> None:
    """The client's side of the bound (rstreams.net._websocket._PongLimit): its streams fail
    naming MAX_UNSENT (the socket's abort is their cause) before the server has sent all it could."""
    sent = [0]
    listener = await _pinging_server(sent)
    port = listener.sockets[0].getsockname()[1]
    try:
        conn = await within(connect(f"ws://127.0.0.1:{port}/rsio"), 10)
        try:
            with pytest.raises(ConnectionBrokenError) as broken:
                await within(conn.request("never-answered"), 60)
        finally:
            await conn.aclose()
    finally:
        listener.close()
        await listener.wait_closed()
    assert PINGED_NOT_READING in str(broken.value), str(broken.value)
    assert isinstance(broken.value.__cause__, ConnectionAbortedError), repr(broken.value.__cause__)
    # pongs are 6 bytes longer than the pings (a mask and its bit): MAX_UNSENT of them, plus the
    # kernel's buffers, well before the server's CAP
    assert MAX_UNSENT // 2 < sent[0] < CAP, sent
