"""PROTOCOL.md §1 over WebSocket: a server refuses a message above 1 MiB (or in too many frames)
with close status 1009, bytes that are not a valid client frame with 1002, and a text message
with 1003 (1007 if it is not UTF-8), in no case with a goodbye (§10's rows say so); the 1002, 1007
and 1009 close reasons are rstreams' own and cite §1, on the server's side and on the client's."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net import Connection, connect, serve
from rstreams.wire import ClientHello, FrameParser, Goodbye, ServerHello, encode
from testkit.bound import within
from testkit.net import raw_websocket
from testkit.rawws import accept_upgrade

pytest.importorskip("websockets")

from rstreams.net._websocket import (  # (needs websockets)
    INVALID_FRAME_REASON,
    NOT_UTF8_REASON,
    TOO_BIG_REASON,
)

pytestmark = pytest.mark.timeout(30)

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()
SECTION_1 = PROTOCOL.split("\n## 1. ", 1)[1].split("\n## 2. ", 1)[0]

"""RFC 6455 §1.3: the Sec-WebSocket-Accept is the base64 SHA-1 of the key and this."""


async def _close_of(
    message: bytes | str | list[bytes], *, text: bool | None = None
) -> tuple[int | None, str | None, list[object]]:
    """Send a hello then ``message`` (a list: one message in those frames; ``text``: bytes sent
    in a text message) to a fresh server; its close status and reason, and what it sent. The
    server then closes within 1 s: it read the answer to its close (its close_timeout is 2 s)."""
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed

    received = bytearray()
    server = await serve("ws://127.0.0.1:0", {})
    async with server:
        async with ws_connect(server.url, subprotocols=["rsio.v0"], max_size=None) as ws:
            await ws.send(encode(ClientHello()))
            await ws.send(message, text=text)
            parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
            try:
                while True:
                    data = await within(ws.recv(), 10)
                    received.extend(data if isinstance(data, bytes) else data.encode())
                    if any(isinstance(f, Goodbye) for f in parser.feed(data)):
                        break  # (not the WebSocket's: its close would wait for our goodbye)
            except ConnectionClosed:
                pass
            code, reason = ws.close_code, ws.close_reason
        await within(server.aclose(), 1)
    frames = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64).feed(
        bytes(received)
    )
    return code, reason, list(frames)


def _frames(data: bytes) -> list[tuple[int, bytes]]:
    """The whole WebSocket frames at the start of ``data`` (masked or not, payloads under 64 KiB):
    opcode, payload."""
    frames, at = [], 0
    while at + 2 <= len(data):
        opcode, masked, n = data[at] & 0x0F, data[at + 1] & 0x80, data[at + 1] & 0x7F
        start = at + 2
        if n == 126:
            n, start = int.from_bytes(data[start : start + 2], "big"), start + 2
        mask = data[start : start + 4] if masked else bytes(4)
        start += 4 if masked else 0
        if start + n > len(data):
            break
        frames.append((opcode, bytes(b ^ mask[i % 4] for i, b in enumerate(data[start : start + n]))))
        at = start + n
    return frames


def _close_in(data: bytes) -> tuple[int, str]:
    """The status and reason of the close frame in ``data``, the last frame there."""
    opcode, payload = _frames(data)[-1]
    assert opcode == 0x8, _frames(data)
    return int.from_bytes(payload[:2], "big"), payload[2:].decode()


def test_the_close_reasons_are_those_section_1_gives() -> None:
    for reason in (INVALID_FRAME_REASON, NOT_UTF8_REASON, TOO_BIG_REASON):
        assert f"`{reason}`" in SECTION_1, reason
        assert reason.endswith("(PROTOCOL.md §1)") and len(reason.encode()) <= 123, reason


@pytest.mark.asyncio
async def test_a_message_above_1_mib_is_closed_with_1009_without_a_goodbye() -> None:
    assert (
        "| a WebSocket message above 1 MiB | connection | WebSocket close 1009, no goodbye §1 | — |"
        in PROTOCOL
    )
    code, reason, frames = await _close_of(bytes(1024 * 1024 + 1))
    assert (code, reason) == (1009, TOO_BIG_REASON)
    assert not any(isinstance(f, Goodbye) for f in frames), frames


@pytest.mark.asyncio
async def test_a_message_in_more_than_4096_frames_is_closed_with_1009() -> None:
    code, reason, frames = await _close_of([b"\x00"] * 4097)
    assert (code, reason) == (1009, TOO_BIG_REASON)
    assert not any(isinstance(f, Goodbye) for f in frames), frames


@pytest.mark.asyncio
async def test_a_message_of_1_mib_is_taken() -> None:
    """1 MiB exactly is within the bound: the server reads it (here, a run of reserved type 0x00
    bytes, which it refuses as RS.io with a goodbye citing §3, not as a WebSocket message)."""
    code, _, frames = await _close_of(bytes(1024 * 1024))
    goodbyes = [f for f in frames if isinstance(f, Goodbye)]
    assert goodbyes and goodbyes[0].reason.endswith("(PROTOCOL.md §3)"), (code, frames)


@pytest.mark.asyncio
async def test_a_text_message_is_closed_with_1003_without_a_goodbye() -> None:
    row = "| a text WebSocket message | connection | WebSocket close 1003 (1007 if not UTF-8), no goodbye §1"
    assert row in PROTOCOL
    code, reason, frames = await _close_of("text")
    assert (code, reason) == (1003, "RS.io uses binary messages")
    assert not any(isinstance(f, Goodbye) for f in frames), frames


@pytest.mark.asyncio
async def test_a_text_message_that_is_not_utf8_is_closed_with_1007_and_rstreams_reason() -> None:
    """websockets checks a text message's UTF-8 before handing it over and closes with 1007: §1
    allows it, and the reason is rstreams' own (the library's is "invalid start byte at position 0")."""
    assert "WebSocket close 1003 (1007 if not UTF-8), no goodbye §1" in PROTOCOL
    code, reason, frames = await _close_of(b"\xff", text=True)
    assert (code, reason) == (1007, NOT_UTF8_REASON)
    assert not any(isinstance(f, Goodbye) for f in frames), frames


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "data",
    [encode(ClientHello()), b"\x82\x03abc", b"\x83\x80\x00\x00\x00\x00"],
    ids=["rsio-bytes-unframed", "unmasked", "reserved-opcode"],
)
async def test_bytes_that_are_not_a_valid_client_frame_are_closed_with_1002(data: bytes) -> None:
    assert (
        "| bytes after the WebSocket upgrade that are not a valid client frame (unframed, unmasked) "
        "| connection | WebSocket close 1002, no goodbye §1 | — |" in PROTOCOL
    )
    server = await serve("ws://127.0.0.1:0", {})
    async with server:
        reader, writer = await raw_websocket(server.url)
        writer.write(data)
        answer = await within(reader.read(), 10)  # until the server closes the socket
        writer.close()
    assert [opcode for opcode, _ in _frames(answer)] == [0x2, 0x8]  # its hello, then the close
    assert _close_in(answer) == (1002, INVALID_FRAME_REASON)


@pytest.mark.asyncio
async def test_a_peer_flooding_after_its_violation_is_cut_off_after_linger_bytes() -> None:
    """After its close 1002 the server reads on for the peer's answer, discarding, as a lingering
    close does: at most LINGER_BYTES (4 MiB), then it aborts the socket. (The library does not
    bound it: a peer flooding on was read and discarded at a GB a second until the idle timeout,
    60 s; one silent after it was held as long, now LINGER_SECONDS.)"""
    connected: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    server = await serve("ws://127.0.0.1:0/rsio", {}, on_connection=connected.set_result)
    async with server:
        _, writer = await raw_websocket(server.url)
        hello = encode(ClientHello())
        writer.write(bytes([0x82, 0x80 | len(hello)]) + bytes(4) + hello)
        conn = await within(connected)
        writer.write(b"\x82\x03abc")  # unmasked: close 1002

        async def flood() -> None:
            block = bytes(1 << 16)
            with contextlib.suppress(OSError):
                while True:
                    writer.write(block)
                    await writer.drain()

        flooding = asyncio.create_task(flood())
        try:
            await within(conn.wait_closed(), 1)
        finally:
            flooding.cancel()
            writer.transport.abort()


async def _masking_server(closes: asyncio.Future[bytes]) -> asyncio.Server:
    """A raw ws:// server that upgrades one connection for ``rsio.v0`` and sends its hello in a
    masked frame (a server's frames are never masked); ``closes`` gets what the client sends back."""

    async def masking(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await accept_upgrade(reader, writer)
        hello = encode(ServerHello())
        writer.write(bytes([0x82, 0x80 | len(hello)]) + bytes(4) + hello)  # masked with the key 0
        data = bytearray()
        while (chunk := await reader.read(1 << 16)) and 0x8 not in [
            op for op, _ in _frames(bytes(data + chunk))
        ]:
            data += chunk
        closes.set_result(bytes(data + chunk))
        writer.close()  # (no close frame back: the end of input ends the client's wait)

    return await asyncio.start_server(masking, "127.0.0.1", 0)


@pytest.mark.asyncio
async def test_a_client_closes_a_masked_server_frame_with_1002() -> None:
    closes: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()
    listener = await _masking_server(closes)
    port = listener.sockets[0].getsockname()[1]
    try:
        conn = await within(connect(f"ws://127.0.0.1:{port}/rsio"), 10)
        try:
            with pytest.raises(ConnectionBrokenError):
                await within(conn.request("never-answered"), 10)
        finally:
            await conn.aclose()
        sent = await within(closes, 10)
    finally:
        listener.close()
        await listener.wait_closed()
    assert [opcode for opcode, _ in _frames(sent)] in ([0x2, 0x8], [0x8])  # its hello may come first
    assert _close_in(sent) == (1002, INVALID_FRAME_REASON)
