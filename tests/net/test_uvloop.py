"""The same code on uvloop (the ``uvloop`` extra): its transports read into our buffers, pipes too."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.net import connect, connect_pipe, fixed_size, serve, with_codec

uvloop = pytest.importorskip("uvloop")

OFFER: dict[str, Any] = {
    "n": lambda p: rstreams.range(int(p["n"])).map(lambda i: i.to_bytes(4, "big")),
    "packed": with_codec(lambda p: rstreams.range(1000).map(lambda i: i.to_bytes(4, "big")), fixed_size(4)),
}


async def _scenario(socket_path: Path) -> None:
    for url in ("tcp://127.0.0.1:0", f"unix://{socket_path}", "ws://127.0.0.1:0/"):
        async with await serve(url, OFFER) as server, await connect(server.url) as conn:
            assert len(await conn.publisher("n?n=5000").collect()) == 5000
            items = await conn.publisher("packed").collect()
            assert [int.from_bytes(x, "big") for x in items] == list(range(1000))
    a, b = os.pipe()
    c, d = os.pipe()
    served = await connect_pipe(a, d, server=True, publishers=OFFER)
    client = await connect_pipe(c, b)
    assert len(await client.publisher("n?n=100").collect()) == 100
    await client.aclose()
    await served.wait_closed()


@pytest.mark.timeout(60)
def test_streams_on_uvloop(tmp_path: Path) -> None:
    """TCP, Unix socket, WebSocket and pipes carry streams on a uvloop event loop."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(asyncio.wait_for(_scenario(tmp_path / "rs.sock"), 30))
