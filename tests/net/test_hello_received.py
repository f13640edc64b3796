"""``Connection.hello_received``: whether the peer's hello has arrived (PROTOCOL.md §4.1), what
the CLI's hint for a server that never said hello reads."""

from __future__ import annotations

import asyncio

import pytest

import rstreams
from rstreams.net import connect, serve
from testkit.bound import within

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


async def test_true_once_the_server_has_answered() -> None:
    async with (
        await serve("tcp://127.0.0.1:0", {"one": rstreams.just(b"x")}) as server,
        await connect(server.url) as conn,
    ):
        assert await within(conn.request("one")) == b"x"
        assert conn.hello_received


async def test_false_while_the_server_has_said_nothing() -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    try:
        conn = await within(connect(f"tcp://127.0.0.1:{listener.sockets[0].getsockname()[1]}"))
        try:
            for _ in range(100):
                await asyncio.sleep(0)
            assert accepted
            assert not conn.hello_received
        finally:
            await within(conn.aclose(), 30)
    finally:
        for writer in accepted:
            writer.close()
        listener.close()
