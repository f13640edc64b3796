"""Floods of every kind of reply against a real server process (issue 18, PROTOCOL.md §6.3).

Eight raw-socket peers write one kind of message as fast as they can and never read what the
server answers, while an ordinary client streams ``counter`` on its own connection. The
server (``rstreams serve`` in a child process) must keep its memory bounded, measured as the
growth of its RSS in /proc, and must go on serving the ordinary client, during the flood and
after it. See ``testkit.hostile`` for how each flood ends (a byte budget, or the server
stopping to read).

Most floods run over a Unix socket: its kernel buffers are small and fixed, whereas loopback
TCP lets the kernel hold up to 4 MiB per direction of each connection outside the process,
which would hide that much of what the server queues. One flood also runs over TCP.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Iterator

import pytest

from rstreams.net import connect
from rstreams.wire import Cancel, ExtensionMessage, Request, Subscribe, extensions
from testkit.hostile import (
    Flood,
    Legit,
    MiB,
    RssWatch,
    ServerProcess,
    frames,
    hello,
    listen_url,
    numbered,
    repeat_to,
    server_process,
)

pytestmark = [pytest.mark.asyncio, pytest.mark.slow, pytest.mark.timeout(150)]

BOUND = 16 * MiB
"""Largest growth of the server's RSS allowed while eight peers flood it (issue 18)."""
FLOODERS = 8

KEEPALIVE, RESUME = extensions.KEEPALIVE.id, extensions.RESUME.id
PING = ExtensionMessage(type=extensions.PING, payload=bytes(8))
PONG = ExtensionMessage(type=extensions.PONG, payload=bytes(8))
LIMIT = 16
"""The server's per-connection subscription limit in the refused-subscribes flood."""


@dataclasses.dataclass(frozen=True)
class Attack:
    """One flood: what each peer sends first, the block it then repeats, and its byte budget."""

    prologue: bytes
    block: Callable[[], bytes]
    budget: int
    options: tuple[str, ...] = ()
    max_subscriptions: int | None = None


ATTACKS = {
    # each refused with onError: "... at most 16 subscriptions ..." (§11)
    "refused-subscribes": Attack(
        hello() + frames(*(Subscribe(publisher="counter", subscriber=i) for i in range(1, LIMIT + 1))),
        lambda: numbered(4 * MiB, lambda i: Subscribe(publisher="counter", subscriber=i), first=LIMIT + 1),
        4 * MiB,
        max_subscriptions=LIMIT,
    ),
    # each refused with onError "no publisher named 'nope'" (§5.5)
    "unknown-subscribes": Attack(
        hello(), lambda: numbered(4 * MiB, lambda i: Subscribe(publisher="nope", subscriber=i)), 4 * MiB
    ),
    # subscribe then cancel: onSubscribe, then onComplete acknowledging the cancel (§5.4)
    "cancels": Attack(
        hello(),
        lambda: numbered(
            256 * 1024, lambda i: Subscribe(publisher="counter", subscriber=i), lambda i: Cancel(subscriber=i)
        ),
        256 * 1024,
    ),
    # each answered with a pong (§14.1)
    "pings": Attack(hello(KEEPALIVE), lambda: repeat_to(frames(PING), 64 * 1024), 8 * MiB),
    # ignored: no subscription 7 is open (§5.4)
    "unknown-requests": Attack(
        hello(), lambda: repeat_to(frames(Request(subscriber=7, demand=1)), 64 * 1024), 512 * 1024
    ),
    # a resumable session (§16): pings and stray pongs; the answers also go to the replay buffer
    "extension-messages": Attack(
        hello(KEEPALIVE, RESUME),
        lambda: repeat_to(frames(PING, PONG), 64 * 1024),
        8 * MiB,
        options=("--resume",),
    ),
}


@dataclasses.dataclass
class Outcome:
    growth: int  # bytes
    sent: list[int]
    endings: list[str]
    during: int  # elements the ordinary client received while the flood ran
    served_after: bool
    alive: bool


@pytest.fixture
def directory() -> Iterator[str]:
    """A short directory for Unix sockets (their paths are limited to ~100 bytes)."""
    path = tempfile.mkdtemp(prefix="rs-hostile-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _flood_of(server: ServerProcess, attack: Attack, block: bytes) -> Flood:
    """``FLOODERS`` peers sending ``attack``. Their stall (:data:`~testkit.hostile.STALL`) counts
    the server process's own time alone (``children``). (Counted over this process too, on a
    loaded machine a stall outlasted the server's 30 s unread timeout, which ended every flood
    that stalled.)"""
    return Flood.of(
        server.address, attack.prologue, block, count=FLOODERS, budget=attack.budget, children=[server.pid]
    )


async def flood(server: ServerProcess, attack: Attack) -> Outcome:
    """Stream ``counter`` to an ordinary client, flood the server with ``attack``, measure."""
    block = attack.block()
    conn = await connect(server.url)
    try:
        legit = Legit()
        conn.publisher("counter").subscribe(legit)
        assert await legit.more_than(1000), "the ordinary client was not served before the flood"
        peers = _flood_of(server, attack, block)
        with RssWatch(server.pid, server.rss_kib(), limit_kib=BOUND // 1024, stop=peers.stop) as watch:
            before = legit.received
            peers.start()
            try:
                await peers.wait()
                during = legit.received - before
                served_after = await legit.more_than(legit.received + 512)
            finally:
                peers.close()
    finally:
        await conn.aclose()
    return Outcome(
        growth=watch.growth_kib * 1024,
        sent=[f.sent for f in peers.flooders],
        endings=peers.endings(),
        during=during,
        served_after=served_after,
        alive=server.process.poll() is None,
    )


def check(outcome: Outcome, attack: Attack) -> None:
    """Bounded memory first (the point of the test), then the ordinary client, then sanity."""
    assert outcome.growth <= BOUND, (
        f"the server's RSS grew by {outcome.growth / MiB:.1f} MiB (bound {BOUND // MiB} MiB) while "
        f"{FLOODERS} peers that never read sent {sum(outcome.sent) / MiB:.1f} MiB ({outcome.endings})"
    )
    assert outcome.during > 0, "the ordinary client received nothing while the flood ran"
    assert outcome.served_after, "the ordinary client was starved after the flood"
    assert outcome.alive
    floor = len(attack.prologue) + 64 * 1024
    assert all(sent >= floor for sent in outcome.sent), f"a peer could not flood: {outcome.endings}"


async def run(name: str, transport: str, directory: str) -> None:
    attack = ATTACKS[name]
    url = listen_url(transport, directory)
    with server_process(url, *attack.options, max_subscriptions=attack.max_subscriptions) as server:
        outcome = await flood(server, attack)
    check(outcome, attack)


async def test_refused_subscribes(directory: str) -> None:
    """Subscribes past the per-connection limit, never reading the refusals (§11)."""
    await run("refused-subscribes", "unix", directory)


@pytest.mark.parametrize("transport", ["unix", "tcp"])
async def test_unknown_subscribes(transport: str, directory: str) -> None:
    """Subscribes for a name nobody serves, never reading the refusals (§5.5)."""
    await run("unknown-subscribes", transport, directory)


async def test_cancels(directory: str) -> None:
    """Subscribe-and-cancel pairs, never reading the acknowledgements (§5.4)."""
    await run("cancels", "unix", directory)


async def test_pings(directory: str) -> None:
    """Keepalive pings, never reading the pongs (§14.1)."""
    await run("pings", "unix", directory)


async def test_unknown_requests(directory: str) -> None:
    """Requests for an id with no subscription: ignored, so nothing may pile up (§5.4)."""
    await run("unknown-requests", "unix", directory)


async def test_extension_messages(directory: str) -> None:
    """Pings and stray pongs on a resumable session, never reading nor acknowledging (§14, §16.4)."""
    await run("extension-messages", "unix", directory)
