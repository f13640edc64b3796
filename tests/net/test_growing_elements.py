"""A stream whose elements grow (8-byte ones, then 1 MiB ones, written whole with a split
threshold of 1 MiB) served with a window of 256: a refill sized by the small ones is answered
with large ones. A client of another process that reads gets every element, no goodbye; a peer
that never reads is closed by idle_timeout, not by MAX_UNSENT (the Java and JavaScript servers'
tests: java/.../GrowingElementsTest.java, js/test/wide-window.test.mjs)."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.net import Connection
from rstreams.wire import ClientHello, ConnectionConfig, Subscribe, encode
from testkit.bound import within

MIB = 1 << 20
SRC = Path(__file__).resolve().parents[2] / "src"

READER = """
import asyncio, sys
import rstreams

async def main(url: str, name: str) -> None:
    count = total = 0
    async with await rstreams.connect(url) as conn:
        async for element in conn.publisher(name).iter_async(window=256):
            count += 1
            total += len(element)
    print(count, total)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def grow(params: dict[str, str]) -> Any:
    """``n`` elements of 8 bytes, then ``m`` of 1 MiB."""
    n, m = int(params.get("n", "1000")), int(params.get("m", "300"))

    def elements() -> Iterator[bytes]:
        small, large = bytes(8), bytes(MIB)
        for i in range(n + m):
            yield small if i < n else large

    return rstreams.from_iterable(elements())


def closed_why(conn: Connection) -> str:
    return str(conn._pump.outbox.ended)


@pytest.mark.timeout(120)
def test_a_client_of_another_process_reading_a_window_of_256_gets_every_element() -> None:
    async def main() -> tuple[int, str, str, list[str]]:
        connections: list[Connection] = []
        async with await rstreams.serve(
            "tcp://127.0.0.1:0",
            {"grow": grow},
            config=ConnectionConfig(split_threshold=MIB),
            on_connection=connections.append,
        ) as server:
            child = await asyncio.create_subprocess_exec(
                sys.executable, "-c", READER, server.url, "grow?n=1000&m=300",
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(SRC)},
            )  # fmt: skip
            out, err = await within(child.communicate(), 100, [child.pid])
            return child.returncode or 0, out.decode(), err.decode(), [closed_why(c) for c in connections]

    status, out, err, why = asyncio.run(main())
    assert status == 0, (err, why)
    assert out.split() == ["1300", str(1000 * 8 + 300 * MIB)]


@pytest.mark.timeout(60)
def test_a_peer_that_never_reads_is_closed_by_the_idle_timeout_not_max_unsent(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the goodbye's lingering close, which this peer never ends, at 0.2 s instead of 2 s
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 0.2)

    async def main() -> str:
        accepted: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
        async with await rstreams.serve(
            "tcp://127.0.0.1:0",
            {"grow": grow},
            config=ConnectionConfig(split_threshold=MIB),
            idle_timeout=1.0,
            on_connection=accepted.set_result,
        ) as server:
            host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
            sock = socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            sock.setblocking(False)
            await asyncio.get_running_loop().sock_connect(sock, (host, int(port)))
            try:
                # 256 granted at once; never read
                hello = encode(ClientHello(extensions=()))
                subscribe = encode(Subscribe(publisher="grow?n=100&m=300", subscriber=1, initial_demand=256))
                await asyncio.get_running_loop().sock_sendall(sock, hello + subscribe)
                conn = await asyncio.wait_for(accepted, 10)
                await asyncio.wait_for(conn.wait_closed(), 30)
                return closed_why(conn)
            finally:
                sock.close()

    why = asyncio.run(main())
    assert "idle timeout" in why, why
