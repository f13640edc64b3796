"""Silent peers on ws:// are bounded: a server closes a socket whose HTTP upgrade does not end
within its ``handshake_timeout`` (a slow-loris peer; the same seconds as for the clientHello
after it, not websockets' own ``open_timeout`` of 10 s), and a client's connect to a server that
accepts the socket and never answers fails instead of waiting for good.

The server's bound is watched on an event loop whose clock the test moves ahead (:class:`JumpingLoop`):
the sockets are real, the seconds are not."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net import connect, serve
from testkit.clock import JumpingLoop, run_jumping

pytest.importorskip("websockets")

pytestmark = [pytest.mark.timeout(60)]

UPGRADE_START = b"GET /rsio HTTP/1.1\r\nHost: 127.0.0.1\r\n"
UPGRADE_REST = (
    b"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: rsio.v0\r\n\r\n"
)


async def _upgrade_under_way(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A socket that has sent the start of its upgrade request, once the server handles it (its
    opening handshake, and that handshake's bound, started)."""
    before = asyncio.all_tasks()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(UPGRADE_START)
    for _ in range(10_000):
        await asyncio.sleep(0)
        if any("protocol_handler" in _qualname(task) for task in asyncio.all_tasks() - before):
            for _ in range(3):  # its first step: the bound is armed
                await asyncio.sleep(0)
            return reader, writer
    raise AssertionError("the server never started the socket's opening handshake")


def _qualname(task: asyncio.Task[Any]) -> str:
    return getattr(task.get_coro(), "__qualname__", "")


async def _closed(reader: asyncio.StreamReader) -> bool:
    """Whether the server closed the socket: its end (or reset) read within a few turns of the loop."""
    for _ in range(1_000):
        await asyncio.sleep(0)
        if reader.at_eof() or reader.exception() is not None:
            return True
    return False


def test_the_upgrade_has_the_handshake_timeout_not_websockets_ten_seconds() -> None:
    async def main(loop: JumpingLoop) -> None:
        async with await serve("ws://127.0.0.1:0/rsio", {}, handshake_timeout=60) as server:
            reader, writer = await _upgrade_under_way(_port(server.url))
            loop.jump(30)  # past websockets' 10 s, within the 60 s asked for
            writer.write(UPGRADE_REST)
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
            writer.close()
        assert head.startswith(b"HTTP/1.1 101"), head

    run_jumping(main)


def test_a_socket_whose_upgrade_outlasts_the_handshake_timeout_is_closed() -> None:
    async def main(loop: JumpingLoop) -> None:
        async with await serve("ws://127.0.0.1:0/rsio", {}, handshake_timeout=3) as server:
            reader, writer = await _upgrade_under_way(_port(server.url))
            loop.jump(3.5)  # past the 3 s asked for, within websockets' 10 s
            closed = await _closed(reader)
            writer.close()
        assert closed

    run_jumping(main)


def _port(url: str) -> int:
    return int(url.rsplit(":", 1)[1].split("/")[0])


def test_a_connect_to_a_server_that_never_answers_fails() -> None:
    """With the default ``handshake_timeout`` (10 s): still waiting 8 s in, failed 10.5 s in. (The
    loop's clock is the real one moved ahead: the real seconds since the connect began count too,
    and a loaded machine took more than the half second 9.5 s left.)"""

    async def main(loop: JumpingLoop) -> None:
        listener, accepted = await _silent_server()
        try:
            task = await _opening(listener.sockets[0].getsockname()[1], None, accepted)
            loop.jump(8.0)
            for _ in range(1_000):
                await asyncio.sleep(0)
            assert not task.done()
            loop.jump(2.5)
            for _ in range(1_000):
                await asyncio.sleep(0)
                if task.done():
                    break
            with pytest.raises(ConnectionBrokenError) as failed:
                task.result()
            assert isinstance(failed.value.__cause__, TimeoutError), repr(failed.value.__cause__)
        finally:
            for writer in accepted:
                writer.close()
            listener.close()

    run_jumping(main)


async def _silent_server() -> tuple[asyncio.Server, list[asyncio.StreamWriter]]:
    """A server that accepts sockets, reads nothing and never answers."""
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)

    return await asyncio.start_server(silent, "127.0.0.1", 0), accepted


async def _opening(port: int, handshake_timeout: float | None, accepted: list[Any]) -> asyncio.Task[Any]:
    """A connect under way to the silent server, once its socket is accepted and its upgrade sent
    (``handshake_timeout``: ``None`` for connect's default)."""
    url = f"ws://127.0.0.1:{port}/rsio"
    opening = connect(url) if handshake_timeout is None else connect(url, handshake_timeout=handshake_timeout)
    task = asyncio.create_task(opening)
    for _ in range(10_000):
        await asyncio.sleep(0)
        if accepted:
            for _ in range(20):  # the request written, websockets' bound armed
                await asyncio.sleep(0)
            return task
    raise AssertionError("the client never reached the server")


@pytest.mark.parametrize(
    ("asked", "jump", "fails"), [(60, 30, False), (3, 3.5, True)], ids=["within", "past"]
)
def test_a_clients_opening_has_its_handshake_timeout_not_websockets_ten_seconds(
    asked: float, jump: float, fails: bool
) -> None:
    """``connect(handshake_timeout=N)`` bounds a ``ws://`` opening at N s: still waiting 30 s in
    with 60 asked (websockets alone gave up at 10), failed 3.5 s in with 3 asked."""

    async def main(loop: JumpingLoop) -> None:
        listener, accepted = await _silent_server()
        try:
            task = await _opening(listener.sockets[0].getsockname()[1], asked, accepted)
            loop.jump(jump)
            for _ in range(1_000):
                await asyncio.sleep(0)
                if task.done():
                    break
            assert task.done() is fails
            if fails:
                with pytest.raises(ConnectionBrokenError) as failed:
                    task.result()
                assert isinstance(failed.value.__cause__, TimeoutError), repr(failed.value.__cause__)
            else:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        finally:
            for writer in accepted:
                writer.close()
            listener.close()

    run_jumping(main)
