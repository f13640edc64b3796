"""Connections that never finish their hello are cheap (issue 18: <= 4 KiB each before the hello).

A thousand raw sockets connect to a server process and send one byte of a clientHello, then
wait; the server must hold each for up to its handshake timeout (10 s), and the growth of its
RSS while it does is the price of a pending connection. The server's open file descriptors
(/proc/PID/fd) show when it has accepted every one; an ordinary client's elements show that
its loop has run since, so each pending socket has been read.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from collections.abc import Iterator

import pytest

from rstreams.net import connect
from testkit.hostile import Legit, hello, listen_url, server_process

pytestmark = [pytest.mark.asyncio, pytest.mark.slow, pytest.mark.timeout(90)]

PENDING = 1000
PER_CONNECTION = 4 * 1024
"""Bytes a server may spend on a connection that has not sent its hello yet (issue 18)."""


@pytest.fixture
def directory() -> Iterator[str]:
    path = tempfile.mkdtemp(prefix="rs-hostile-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


async def test_pending_connections_are_cheap(directory: str) -> None:
    """1,000 half hellos cost the server at most 4 KiB each while it waits for the rest."""
    with server_process(listen_url("unix", directory)) as server:
        conn = await connect(server.url)
        socks: list[socket.socket] = []
        try:
            legit = Legit()
            conn.publisher("counter").subscribe(legit)
            assert await legit.more_than(1000)
            fds, baseline = open_fds(server.pid), server.rss_kib()
            for _ in range(PENDING):
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                socks.append(sock)
                sock.connect(server.url.removeprefix("unix://"))
                sock.send(hello()[:1])
            while open_fds(server.pid) < fds + PENDING:  # accepted: each has its descriptor
                assert await legit.more_than(legit.received), "the server stopped serving"
            assert await legit.more_than(legit.received + 256)  # the loop has run: each byte was read
            growth = (server.rss_kib() - baseline) * 1024
            held = open_fds(server.pid) - fds
        finally:
            for sock in socks:
                sock.close()
            await conn.aclose()
    assert held >= PENDING, f"only {held} of {PENDING} pending connections were still open when measured"
    assert growth <= PENDING * PER_CONNECTION, (
        f"{PENDING} connections without a hello cost the server {growth / PENDING / 1024:.1f} KiB each "
        f"(bound {PER_CONNECTION // 1024} KiB)"
    )
