"""Hostile peers against our server: each gets a goodbye naming the reason (or a refusal), memory
stays bounded, and a well-behaved client on another connection keeps being served meanwhile."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from rstreams.conformance import ConformancePublishers, conformance_publishers, element_bytes
from rstreams.conformance._case import Context, Options
from rstreams.conformance._peer import Peer
from rstreams.net import Server, connect, serve
from rstreams.wire import Goodbye, OnError, Request, Subscribe
from testkit.bound import Bound

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

UNBOUNDED = 2**63 - 1
ALL = frozenset({"range", "fixed", "large", "error", "never", "infinite", "stats"})
URLS = {"tcp": "tcp://127.0.0.1:0", "ws": "ws://127.0.0.1:0/rsio"}


@pytest_asyncio.fixture(params=sorted(URLS))
async def served(request: pytest.FixtureRequest) -> AsyncIterator[tuple[Server, ConformancePublishers]]:
    publishers = conformance_publishers()
    server = await serve(URLS[request.param], publishers)
    yield server, publishers
    await server.aclose()


async def well_behaved(url: str, n: int = 3000) -> None:
    """A normal client (rstreams.net.connect) reads a whole range."""
    conn = await connect(url)
    try:
        items = [item async for item in conn.publisher(f"conformance/range?n={n}")]
    finally:
        await conn.aclose()
    assert items == [element_bytes(i, 8) for i in range(n)]


async def open_peer(url: str, *, rcvbuf: int | None = None) -> tuple[Context, Peer]:
    ctx = Context(url, Options(timeout=10.0), ALL)
    return ctx, await ctx.open(rcvbuf=rcvbuf)


async def test_garbage_burst(served: tuple[Server, ConformancePublishers]) -> None:
    """A burst of random bytes gets a goodbye citing PROTOCOL.md; others are served meanwhile."""
    server, _ = served
    ctx, hostile = await open_peer(server.url)
    rng = random.Random(6)
    await hostile.raw.write(bytes(rng.randrange(256) for _ in range(16384)))
    bye, _ = await asyncio.gather(hostile.goodbye(), well_behaved(server.url))
    assert "PROTOCOL.md §" in bye.reason
    await hostile.closed()
    ctx.close()


async def test_flood_goodbye_not_lost() -> None:
    """A peer that keeps sending after its error still receives the goodbye naming it (§10)."""
    server = await serve("tcp://127.0.0.1:0", conformance_publishers())
    try:
        ctx, hostile = await open_peer(server.url)
        await hostile.raw.write(b"\x0e" + bytes(1 << 20))  # a bad type byte, then 1 MiB more
        await asyncio.sleep(0.5)  # the peer reads a little later (busy elsewhere): not polling
        bye = await hostile.goodbye()
        assert "§3" in bye.reason
        ctx.close()
    finally:
        await server.aclose()


@pytest.mark.parametrize(
    ("data", "limit"),
    [
        (b"\x04\x86\x80\x80\x80\x80\x20", "max_string_length"),  # a publisher name of 2**40 bytes
        (b"\x08\x01\x80\x80\x80\x80\x08", "max_element_size"),  # an onNext of 2 GiB
        (b"\x01\x00\x80\x80\x80\x80\x10", "max_extensions"),  # a hello with 2**32 extension ids
    ],
)
async def test_huge_declared_length(
    served: tuple[Server, ConformancePublishers], data: bytes, limit: str
) -> None:
    """A length prefix above a limit is refused when read, naming the limit (nothing is buffered)."""
    server, _ = served
    ctx = Context(server.url, Options(timeout=10.0), ALL)
    hello = limit != "max_extensions"
    hostile = await ctx.open(hello=hello)
    await hostile.send(data)
    bye, _ = await asyncio.gather(hostile.goodbye(), well_behaved(server.url))
    assert limit in bye.reason and "§11" in bye.reason
    await hostile.closed()
    ctx.close()


async def test_never_reads(served: tuple[Server, ConformancePublishers]) -> None:
    """A peer asking for everything and reading nothing stalls production at a bounded amount."""
    server, publishers = served
    ctx, hostile = await open_peer(server.url, rcvbuf=16384)
    await hostile.send(Subscribe(publisher="conformance/infinite?size=1024&tag=h", subscriber=1,
                                 initial_demand=UNBOUNDED))  # fmt: skip
    await hostile.elements(1, 1)
    stats = publishers.stats["h"]
    [conn] = server.connections

    def stalled() -> bool:
        """The server's transport is above its high-water mark and the source has served all it
        was asked for: nothing asks it for more until the peer reads."""
        return not conn.statistics().writable and stats.pulled == stats.requested

    try:  # the server runs until its output budget is used up: a bound of own time, not of load
        async with Bound(30):
            while not stalled():  # noqa: ASYNC110 (no event says so: a look every 10 ms)
                await asyncio.sleep(0.01)
    except TimeoutError:
        pytest.fail(f"production never stalled ({stats.pulled} elements produced)")
    stalled_at = stats.pulled
    assert stalled_at * 1032 <= 16 << 20, f"{stalled_at} elements produced for a peer that reads nothing"
    await well_behaved(server.url)
    assert stalled(), "the server's transport drained without the peer reading"
    assert stats.pulled == stalled_at, "production resumed without the peer reading"
    hostile.abort()
    ctx.close()


async def test_max_subscriptions(served: tuple[Server, ConformancePublishers]) -> None:
    """Subscribes beyond max_subscriptions are refused with onError naming the limit; others are served."""
    server, _ = served
    ctx, hostile = await open_peer(server.url)
    await hostile.send(*(Subscribe(publisher="conformance/never", subscriber=sid) for sid in range(1100)))
    await hostile.until(lambda: all(hostile.view(sid).subscribed or not hostile.view(sid).open
                                    for sid in range(1100)), "answers to 1100 subscribes")  # fmt: skip
    refused = [sid for sid in range(1100) if isinstance(hostile.view(sid).terminal, OnError)]
    assert refused == list(range(1024, 1100))
    assert "1024 subscriptions" in (hostile.view(1024).error or "")
    await well_behaved(server.url)
    await hostile.send(Goodbye(reason="done"))
    await hostile.goodbye_then_close()
    ctx.close()


async def test_request_storm(served: tuple[Server, ConformancePublishers]) -> None:
    """100 000 tiny requests in one burst are served exactly; others are served meanwhile."""
    server, _ = served
    ctx, hostile = await open_peer(server.url)
    await hostile.send(Subscribe(publisher="conformance/infinite?tag=s", subscriber=1))
    await hostile.send(*(Request(subscriber=1, demand=1) for _ in range(100_000)))
    await asyncio.gather(hostile.elements(1, 100_000, timeout=30), well_behaved(server.url))
    assert not await hostile.quiet(0.2)
    ctx.close()


async def test_simultaneous_goodbyes(served: tuple[Server, ConformancePublishers]) -> None:
    """Both sides say goodbye at once: each takes the other's as the answer, no second goodbye (§9.2)."""
    server, _ = served
    ctx, peer = await open_peer(server.url)
    await peer.hello()
    await asyncio.gather(peer.send(Goodbye(reason="client leaving")), server.aclose("server leaving"))
    await peer.goodbye_then_close()
    assert sum(isinstance(f, Goodbye) for f in peer.received) == 1
    ctx.close()
