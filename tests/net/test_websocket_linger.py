"""Every WebSocket close is bounded as the lingering close of TCP is (PROTOCOL.md §9.1, §10):
within LINGER_BYTES (4 MiB) read, counted at the socket, WebSocket pings included, and
LINGER_SECONDS (2 s). A peer that floods after its violation and never answers the WebSocket
close is cut off after about LINGER_BYTES discarded, not read for websockets' own close_timeout;
one that sends its close and then floods, or stays silent, is cut off as soon, not held until
the idle timeout."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest

from rstreams.net import Connection, Server, serve
from rstreams.wire import ClientHello, FrameParser, Goodbye, encode
from testkit.bound import within
from testkit.net import raw_websocket
from testkit.rawws import masked

pytest.importorskip("websockets")

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

MiB = 1024 * 1024


async def test_a_peer_flooding_after_its_error_is_cut_off() -> None:
    server = await serve("ws://127.0.0.1:0/rsio", {})
    async with server:
        _, writer = await raw_websocket(server.url)
        writer.write(masked(encode(ClientHello()) + b"\x0e"))  # a reserved type: an error goodbye
        flood = masked(bytes(256 * 1024))
        sent = 0
        cut_off = False
        try:
            while sent < 512 * MiB:
                writer.write(flood)
                await asyncio.wait_for(writer.drain(), 30)
                sent += len(flood)
        except ConnectionError:  # reset once the server has closed the socket
            cut_off = True
        writer.close()
    assert cut_off, sent
    assert sent < 64 * MiB, f"the server took {sent} bytes after its goodbye"


CLOSE_1000 = bytes([0x88, 0x82]) + bytes(4) + (1000).to_bytes(2, "big")  # a client's close, masked
PINGS = (bytes([0x89, 0x80 | 125]) + bytes(4 + 125)) * 512  # WebSocket pings, 64 KB (a client's)
EMPTY_PINGS = (bytes([0x89, 0x80]) + bytes(4)) * 10_000  # empty ones, 60 KB


@contextlib.asynccontextmanager
async def _raw_peer() -> AsyncIterator[tuple[Server, asyncio.StreamReader, asyncio.StreamWriter, Connection]]:
    """A ws:// server, a raw peer of it with its hello sent, and the server's connection; the
    peer's socket aborted at the end."""
    made: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    server = await serve("ws://127.0.0.1:0/rsio", {}, on_connection=made.set_result)
    async with server:
        reader, writer = await raw_websocket(server.url)
        try:
            writer.write(masked(encode(ClientHello())))
            yield server, reader, writer, await within(made)
        finally:
            writer.transport.abort()


async def _flood(writer: asyncio.StreamWriter, block: bytes) -> None:
    with contextlib.suppress(OSError):
        while True:
            writer.write(block)
            await writer.drain()


async def _frames(reader: asyncio.StreamReader) -> AsyncIterator[tuple[int, bytes]]:
    """The server's frames (opcode, payload) to its end of output (or a reset)."""
    with contextlib.suppress(OSError, asyncio.IncompleteReadError):
        while True:
            head = await reader.readexactly(2)
            size = head[1] & 0x7F
            if size >= 126:
                size = int.from_bytes(await reader.readexactly(2 if size == 126 else 8), "big")
            yield head[0] & 0x0F, await reader.readexactly(size)


def _cut_off(caplog: pytest.LogCaptureFixture) -> list[str]:
    """What the server logged of the WebSocket connections it aborted at a linger's bound."""
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "rstreams.net.websocket" and "aborting a closing" in record.getMessage()
    ]


@pytest.mark.parametrize(("then", "bound"), [("flood", "LINGER_BYTES"), ("silence", "LINGER_SECONDS")])
async def test_after_the_peers_close_its_end_of_input_is_waited_for_within_the_linger(
    then: str, bound: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A peer's close frame is answered (websockets echoes it; a server ends its output), then its
    end of input waited for within LINGER_BYTES and LINGER_SECONDS, as after a close this side
    sent (was: nothing bounded it but the idle timeout, 60 s, a flood read and discarded at a GB
    a second meanwhile). LINGER_SECONDS is 0.05 s here, so that silence ends soon."""
    monkeypatch.setattr("rstreams.net._websocket.LINGER_SECONDS", 0.05)
    async with _raw_peer() as (_, reader, writer, conn):
        writer.write(CLOSE_1000)
        flood = masked(bytes(1 << 16))
        going = asyncio.ensure_future(_flood(writer, flood) if then == "flood" else reader.read())
        try:
            with caplog.at_level(logging.INFO, logger="rstreams.net.websocket"):
                await within(conn.wait_closed(), 3)
        finally:
            going.cancel()
    assert [f"({bound})" in said for said in _cut_off(caplog)] == [True], caplog.text


@pytest.mark.parametrize(("pings", "bound"), [(PINGS, "LINGER_BYTES"), (EMPTY_PINGS, "LINGER_PINGS")])
async def test_pings_after_the_goodbyes_are_bounded(
    pings: bytes, bound: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """After the goodbyes the server closes the WebSocket; a peer that sends pings then, and
    reads the pongs, is cut off once LINGER_BYTES are read, as one that sends messages is (was:
    pings were not counted, and were read until close_timeout, 2 s). LINGER_BYTES is 64 KiB
    here (about 500 pings of 125 bytes): each ping costs the loop a frame parsed and a pong,
    about 30 µs. Empty pings (6 bytes: 700,000 of them in the 4 MiB of LINGER_BYTES, left as
    it is for them) are cut off at LINGER_PINGS, 1024 (was: read for 2 s, LINGER_SECONDS, the
    loop busy with them the whole time)."""
    if bound == "LINGER_BYTES":
        monkeypatch.setattr("rstreams.net._websocket.LINGER_BYTES", 1 << 16)
    async with _raw_peer() as (server, reader, writer, _):
        closing = asyncio.ensure_future(server.aclose())
        parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
        flooding: asyncio.Future[None] | None = None

        async def peer() -> None:
            nonlocal flooding
            async for opcode, payload in _frames(reader):
                if opcode == 0x2 and any(isinstance(frame, Goodbye) for frame in parser.feed(payload)):
                    writer.write(masked(encode(Goodbye(reason="bye"))))
                    flooding = asyncio.ensure_future(_flood(writer, pings))

        reading = asyncio.ensure_future(peer())
        try:
            with caplog.at_level(logging.INFO, logger="rstreams.net.websocket"):
                await within(closing, 3)
        finally:
            reading.cancel()
            if flooding is not None:
                flooding.cancel()
    assert [f"({bound})" in said for said in _cut_off(caplog)] == [True], caplog.text


async def test_a_peer_flooding_after_its_refused_handshake_is_cut_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A handshake the server refuses (here a 404: another path) is answered, then the peer's end
    of input waited for within the same bounds (was: 2 s, websockets' close_timeout, and no
    bound in bytes: 1.3 GB read and discarded in them)."""
    server = await serve("ws://127.0.0.1:0/rsio", {})
    async with server:
        _, port = server.url.removeprefix("ws://").split("/")[0].rsplit(":", 1)
        reader, writer = await asyncio.open_connection("127.0.0.1", int(port))
        try:
            writer.write(
                b"GET /elsewhere HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
                b"Sec-WebSocket-Protocol: rsio.v0\r\n\r\n"
            )
            assert (await within(reader.readuntil(b"\r\n"))).startswith(b"HTTP/1.1 404"), "not refused"
            with caplog.at_level(logging.INFO, logger="rstreams.net.websocket"):
                await within(_flood(writer, bytes(1 << 16)), 3)
        finally:
            writer.transport.abort()
    assert ["(LINGER_BYTES)" in said for said in _cut_off(caplog)] == [True], caplog.text
