"""The idle timeout on a resumable session breaks the link, not the session (PROTOCOL.md §14.2, §16.3).

Every test runs a stream each way through :class:`ChaosProxy`, whose ``stall`` makes the link
silent without an error or an end of input reaching either end. ``stall_timeout`` is off, so
only the idle timeout can notice the silence; every element must still arrive exactly once,
in order, and no goodbye may end the session.
"""

from __future__ import annotations

import asyncio
from typing import Any, Self

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError, ResourceClosedError
from rstreams.net import Connection, connect, serve
from rstreams.net._resume import Resume
from rstreams.net._resume_session import Session
from testkit.bound import within
from testkit.chaos import ChaosProxy
from testkit.net import session_of as session_or_none
from testkit.resume import Collector

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

N = 20_000
IDLE = 0.3
CLIENT_RESUME = Resume(attempts=200, backoff=0.01, max_backoff=0.05, attempt_timeout=0.3, stall_timeout=None)
SERVER_RESUME = Resume(session_timeout=20.0, stall_timeout=None)


def offer() -> dict[str, Any]:
    return {"count": lambda params: rstreams.range(int(params["n"])).map(lambda i: i.to_bytes(8, "big"))}


def on_link_lost(session: Session) -> asyncio.Event:
    """An event set when ``session``'s current link reports its transport closed (a spy on link_lost)."""
    lost = asyncio.Event()
    original = session.link_lost

    def link_lost(link: Any, error: BaseException | None) -> None:
        original(link, error)
        lost.set()

    session.link_lost = link_lost  # type: ignore[method-assign]
    return lost


def session_of(conn: Connection) -> Session:
    session = session_or_none(conn)
    assert session is not None
    return session


class Pair:
    """A resumable server, the proxy in front of it, and a client through the proxy; a stream each way."""

    def __init__(self, *, client_idle: float | None, server_idle: float | None) -> None:
        self.client_idle = client_idle
        self.server_idle = server_idle
        self.from_server = Collector(pattern=False)
        self.from_client = Collector(pattern=False)
        self.server_conns: list[Connection] = []

    async def __aenter__(self) -> Self:
        def on_connection(conn: Connection) -> None:
            self.server_conns.append(conn)
            conn.publisher(f"count?n={N}").subscribe(self.from_client)

        self.server = await serve(
            "tcp://127.0.0.1:0",
            offer(),
            on_connection=on_connection,
            resume=SERVER_RESUME,
            idle_timeout=self.server_idle,
        )
        port = int(self.server.url.rsplit(":", 1)[1])
        self.proxy = await ChaosProxy("127.0.0.1", port).start()
        self.client = await connect(
            self.proxy.url, publishers=offer(), resume=CLIENT_RESUME, idle_timeout=self.client_idle
        )
        self.client.publisher(f"count?n={N}").subscribe(self.from_server)
        await self.from_server.wait_items(1000)
        await self.from_client.wait_items(1000)
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.client.aclose()
        await self.proxy.aclose()
        await self.server.aclose()

    async def all_arrived(self) -> None:
        """Both streams complete, each element exactly once and in order; neither side closed."""
        await within(self.from_server.done.wait())
        await within(self.from_client.done.wait())
        assert self.from_server.error is None, self.from_server.error
        assert self.from_client.error is None, self.from_client.error
        assert self.from_server.items == list(range(N))
        assert self.from_client.items == list(range(N))
        assert not self.client.closed
        assert len(self.server_conns) == 1  # one session, never a second one
        assert not self.server_conns[0].closed


async def test_client_idle_timeout_resumes_instead_of_saying_goodbye() -> None:
    """The client's idle timeout drops the silent link and resumes on a new one (no goodbye)."""
    async with Pair(client_idle=IDLE, server_idle=None) as pair:
        links = pair.proxy.links_made
        pair.proxy.stall()
        await pair.proxy.wait_links(links + 1)  # the idle client gave up on the link and reconnects
        assert not pair.client.closed
        pair.proxy.resume()
        await pair.all_arrived()
        assert session_of(pair.client).resumes >= 1
        assert session_of(pair.server_conns[0]).resumes >= 1


async def test_server_idle_timeout_drops_the_link_and_waits_for_the_resume() -> None:
    """The server's idle timeout drops the link but keeps the session; the client's resume continues it."""
    async with Pair(client_idle=None, server_idle=IDLE) as pair:
        server_session = session_of(pair.server_conns[0])
        dropped = on_link_lost(server_session)
        pair.proxy.stall()
        await within(dropped.wait())  # the idle server aborted the link
        assert server_session.link is None
        assert not pair.server_conns[0].closed  # the session waits for session_timeout
        pair.proxy.resume()  # the proxy now finds its upstream gone and cuts the client's side
        await pair.all_arrived()
        assert server_session.resumes >= 1
        assert session_of(pair.client).resumes >= 1


async def test_idle_session_waits_only_session_timeout_for_the_resume() -> None:
    """A server session whose idle link was dropped fails after session_timeout if nobody resumes."""
    server_conns: list[Connection] = []
    received = Collector(pattern=False)
    resume = Resume(session_timeout=0.3, stall_timeout=None)
    async with await serve(
        "tcp://127.0.0.1:0", offer(), on_connection=server_conns.append, resume=resume, idle_timeout=IDLE
    ) as server:
        port = int(server.url.rsplit(":", 1)[1])
        async with ChaosProxy("127.0.0.1", port) as proxy:
            client = await connect(proxy.url, publishers=offer(), resume=CLIENT_RESUME)
            client.publisher(f"count?n={N}").subscribe(received)
            await received.wait_items(100)
            proxy.stall()
            served = Collector(pattern=False)
            server_conns[0].publisher(f"count?n={N}").subscribe(served)  # ends when the session does
            await within(served.done.wait())
            assert isinstance(served.error, ConnectionBrokenError), served.error
            said = str(served.error.__cause__ or served.error)
            assert "the session was not resumed within 0.3 s (PROTOCOL.md §16.3)" in said, said
            proxy.resume()
            await within(received.done.wait())  # the resume is refused: the client fails
            assert isinstance(received.error, ConnectionBrokenError), received.error
            await client.aclose()


async def test_idle_timeout_without_resume_still_says_goodbye() -> None:
    """Where resume is not active (the server does not offer it) the idle timeout ends the connection."""
    async with await serve("tcp://127.0.0.1:0", offer()) as server:
        port = int(server.url.rsplit(":", 1)[1])
        async with ChaosProxy("127.0.0.1", port) as proxy:
            client = await connect(proxy.url, resume=CLIENT_RESUME, idle_timeout=IDLE)
            assert session_or_none(client) is None or session_of(client).token is None
            received = Collector(pattern=False)
            client.publisher(f"count?n={N}").subscribe(received)
            await received.wait_items(100)
            proxy.stall()
            await within(received.done.wait())
            assert isinstance(received.error, ResourceClosedError), received.error
            assert "idle timeout: nothing received for 0.3 s (PROTOCOL.md §14.2)" in str(received.error)
            assert client.closed
            proxy.resume()
            await client.aclose()
