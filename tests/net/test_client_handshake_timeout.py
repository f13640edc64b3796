"""A client's handshake timeout: a server that accepts the transport but never says its
serverHello is said goodbye, and the client's streams fail, instead of waiting for good.
On a virtual clock over memory transports, plus one real socket to a silent listener."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError
from rstreams.net import DEFAULT_HANDSHAKE_TIMEOUT, connect, connect_pipe, serve
from rstreams.net._resume import Resume
from rstreams.wire import ConnectionClosed
from testkit.bound import within
from testkit.chaos import ChaosProxy
from testkit.net import MemoryPeer, closed_after, connection, memory_pair, run_virtual

pytestmark = pytest.mark.timeout(30)

SILENT = "handshake timeout (no serverHello within 0.5 s)"


def test_a_silent_server_is_said_goodbye_and_the_streams_fail() -> None:
    async def main() -> tuple[MemoryPeer, BaseException, float]:
        client = connection(client=True, handshake_timeout=0.5)
        server = MemoryPeer(client=False, hello=False)
        memory_pair(client, server)
        loop = asyncio.get_running_loop()
        request = asyncio.ensure_future(client.request("greeting"))
        assert not await closed_after(client, 0.49)
        with pytest.raises(ConnectionBrokenError) as failed:
            await request
        return server, failed.value, loop.time()

    server, error, at = run_virtual(main)
    assert at == pytest.approx(0.5)
    assert SILENT in str(error) and "handshake_timeout" in str(error)
    [closed] = server.of(ConnectionClosed)
    assert closed.reason == SILENT


def test_the_servers_hello_stops_the_clients_timer() -> None:
    async def main() -> MemoryPeer:
        client = connection(client=True, handshake_timeout=0.5)
        server = MemoryPeer(client=False)
        memory_pair(client, server)
        await asyncio.sleep(5.0)
        assert not client.closed
        return server

    assert run_virtual(main).of(ConnectionClosed) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("bad", [0, -1.0, float("nan")])
async def test_the_handshake_timeout_is_checked(bad: float) -> None:
    with pytest.raises(ValueError, match="handshake_timeout"):
        await connect("tcp://127.0.0.1:1", handshake_timeout=bad)
    with pytest.raises(ValueError, match="handshake_timeout"):
        await connect_pipe(0, 1, handshake_timeout=bad)


def test_the_default_is_the_servers() -> None:
    for entry in (connect, connect_pipe):
        default = inspect.signature(entry).parameters["handshake_timeout"].default
        assert default == DEFAULT_HANDSHAKE_TIMEOUT


@pytest.mark.asyncio
async def test_a_silent_tcp_listener_does_not_hang_the_client() -> None:
    """A real socket: the listener accepts and reads, but never answers."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()  # until the client closes
        writer.close()  # then so does it (the client's lingering close ends at once, not at its bound)

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        conn = await connect(f"tcp://127.0.0.1:{port}", handshake_timeout=0.2)
        with pytest.raises(ConnectionBrokenError, match=r"no serverHello within 0\.2 s.*handshake_timeout"):
            await within(conn.request("anything"))
        await within(conn.aclose())
    finally:
        for writer in accepted:
            writer.close()
        listener.close()
        await listener.wait_closed()


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_a_resumed_session_outlives_the_handshake_timeout() -> None:
    """The timer runs once, for the first transport's serverHello: a resume is not a new
    handshake (its reconnects are bounded by Resume.attempt_timeout)."""
    fast = Resume(attempts=20, backoff=0.01, max_backoff=0.1, attempt_timeout=2.0)
    offer = {"greeting": lambda params: rstreams.just(b"hello")}
    async with await serve("tcp://127.0.0.1:0", offer, resume=fast) as server:
        port = int(server.url.rsplit(":", 1)[1])
        proxy = await ChaosProxy("127.0.0.1", port, seed=1).start()
        try:
            conn = await connect(proxy.url, resume=fast, handshake_timeout=0.1)
            assert await within(conn.request("greeting")) == b"hello"
            links = proxy.links_made
            proxy.cut()
            await proxy.wait_links(links + 1)
            await asyncio.sleep(0.3)  # past the handshake timeout, counted from either transport
            assert await within(conn.request("greeting")) == b"hello"
            assert not conn.closed
            await conn.aclose(timeout=1.0)
        finally:
            await proxy.aclose()
