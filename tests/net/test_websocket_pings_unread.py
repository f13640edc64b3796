"""A WebSocket peer that pings and never reads is cut off past MAX_UNSENT (PROTOCOL.md §6.3):
websockets answers pings itself, outside RS.io's backpressure, so without a bound the pongs
unsent to such a peer would grow without end."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.net import serve
from rstreams.net._intake import MAX_UNSENT
from testkit.net import raw_websocket

pytest.importorskip("websockets")

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

MASK = b"\x01\x02\x03\x04"
PING = b"\x89\xfd" + MASK + bytes(b ^ MASK[i % 4] for i, b in enumerate(bytes(125)))
"""A masked client ping with the largest payload a control frame may have (125 bytes)."""


async def test_a_peer_that_pings_and_never_reads_is_cut_off() -> None:
    server = await serve("ws://127.0.0.1:0", {})
    async with server:
        _, writer = await raw_websocket(server.url)
        chunk = PING * (1024 * 1024 // len(PING))
        sent = 0
        limit = 4 * MAX_UNSENT
        cut_off = False
        try:
            while sent < limit:
                writer.write(chunk)
                await asyncio.wait_for(writer.drain(), 30)
                sent += len(chunk)
        except ConnectionError:  # reset once the server has aborted the socket
            cut_off = True
        writer.close()
    assert cut_off, sent
    # pongs are 2 bytes shorter than the pings: MAX_UNSENT of them, plus the kernel's buffers
    assert MAX_UNSENT < sent < limit, sent
