"""Bulk transfer end to end: large elements (cut by reads anywhere, written by writev on sockets,
read into 1 MiB buffers) arrive whole and in order over every transport, resumable too."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

import rstreams
from rstreams.net import Resume, connect, serve
from testkit.bound import within
from testkit.net import listen_url

pytestmark = [pytest.mark.asyncio]

# Sizes around the core's split threshold (64 KiB) and the parser's large-element path (16 KiB),
# each distinct, so that a duplicated, lost or misplaced byte shows.
SIZES = [65536, 16384, 65535, 70000, 200_000, 3, 65537, 1_100_000, 40_000]
ELEMENTS = [
    bytes([(i * 37 + k) % 251 for k in range(256)]) * (size // 256) + b"z" * (size % 256)
    for i, size in enumerate(SIZES * 6)
]


@pytest.mark.parametrize("scheme", ["tcp", "tls", "unix", "ws", "tcp-resume"])
async def test_large_elements_arrive_whole_over_each_transport(
    scheme: str, tmp_path: Path, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    url = listen_url("tcp" if scheme == "tcp-resume" else scheme, tmp_path)
    secure = scheme == "tls"
    resume = Resume() if scheme == "tcp-resume" else None
    offer = {"big": rstreams.from_iterable(ELEMENTS)}
    async with (
        await serve(url, offer, ssl=server_ssl if secure else None, resume=resume) as server,
        await connect(server.url, ssl=client_ssl if secure else None, resume=resume) as conn,
    ):
        got = await within(conn.publisher("big").collect())
        assert [len(e) for e in got] == [len(e) for e in ELEMENTS]
        assert got == ELEMENTS
