"""The lingering close after an error goodbye over ws:// (PROTOCOL.md §9.1, §10) is bounded as on
TCP: a peer that floods after its violation and never answers the WebSocket close is cut off
after about LINGER_BYTES (4 MiB) discarded, not read for websockets' own close_timeout (10 s)."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.net import serve
from rstreams.wire import ClientHello, encode
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
