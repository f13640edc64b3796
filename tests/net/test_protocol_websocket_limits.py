"""PROTOCOL.md §1 over WebSocket: a server refuses a message above 1 MiB with close status 1009
and a text message with 1003, in neither case with a goodbye (§10's rows say so)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rstreams.net import serve
from rstreams.wire import ClientHello, FrameParser, Goodbye, encode
from testkit.bound import within

pytest.importorskip("websockets")

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()


async def _close_of(message: bytes | str) -> tuple[int | None, list[object]]:
    """Send a hello then ``message`` to a fresh server; its close status and what it sent."""
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import ConnectionClosed

    received = bytearray()
    server = await serve("ws://127.0.0.1:0", {})
    async with server, ws_connect(server.url, subprotocols=["rsio.v0"], max_size=None) as ws:
        await ws.send(encode(ClientHello()))
        await ws.send(message)
        try:
            while True:
                data = await within(ws.recv(), 10)
                received.extend(data if isinstance(data, bytes) else data.encode())
        except ConnectionClosed:
            pass
        code = ws.close_code
    frames = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64).feed(
        bytes(received)
    )
    return code, list(frames)


async def test_a_message_above_1_mib_is_closed_with_1009_without_a_goodbye() -> None:
    assert (
        "| a WebSocket message above 1 MiB | connection | WebSocket close 1009, no goodbye §1 | — |"
        in PROTOCOL
    )
    code, frames = await _close_of(bytes(1024 * 1024 + 1))
    assert code == 1009
    assert not any(isinstance(f, Goodbye) for f in frames), frames


async def test_a_message_of_1_mib_is_taken() -> None:
    """1 MiB exactly is within the bound: the server reads it (here, a run of reserved type 0x00
    bytes, which it refuses as RS.io with a goodbye citing §3, not as a WebSocket message)."""
    code, frames = await _close_of(bytes(1024 * 1024))
    goodbyes = [f for f in frames if isinstance(f, Goodbye)]
    assert goodbyes and goodbyes[0].reason.endswith("(PROTOCOL.md §3)"), (code, frames)


async def test_a_text_message_is_closed_with_1003_without_a_goodbye() -> None:
    assert "| a text WebSocket message | connection | WebSocket close 1003, no goodbye §1 | — |" in PROTOCOL
    code, frames = await _close_of("text")
    assert code == 1003
    assert not any(isinstance(f, Goodbye) for f in frames), frames
