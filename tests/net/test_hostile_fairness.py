"""A subscribe flood beside a stream on a real server in this process: what the flood takes, counted.

Eight raw sockets send subscribes for a name nobody offers and never read the refusals (the
``subscribe-flood`` of ``benchmarks/net_hostile.py``) while an ordinary client streams 8-byte
elements with a window of 256 beside them. The server's pumps tell how many bytes each
connection was answered (the reply ledger) and whether it is still read. Input backpressure
counts the replies its socket holds as well as its transport's (:mod:`rstreams.net._intake`),
so a peer that never reads is no longer read once its receive buffer and ``UNREAD_MARK`` of
replies are full; from then on the flood gets no reads and no answers however long the stream
beside it runs: no bytes of refusals per element of the stream. Counted, not timed (before,
the flooders were read a part per loop turn until the kernel held 4 MiB of refusals for each).
A peer that sends as many subscribes and reads its answers gets every one of them, at a
READ_TURN per loop turn as any busy connection (and, if it reads late, once it reads). The
flooders and the pipelining peer are those of ``benchmarks/_flood.py``, which the benchmark's
``count`` role runs too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import sys
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from _flood import Made, Pipeliner, address_of, flooding, listen_url, subscribes

import rstreams
from rstreams.api import Subscription
from rstreams.net import connect, serve
from rstreams.net._intake import MARK_SPACING, UNREAD_MARK, socket_unsent
from rstreams.net._pump import Pump
from rstreams.net._transport import SOCKET_READ_SIZE
from rstreams.wire import ConnectionState
from testkit.bound import within
from testkit.net import pump_of

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.timeout(300),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the socket's queue is read on Linux"),
]

FLOODERS = 8
RCVBUF = 16 * 1024
"""Each flooder's receive buffer: what the server cannot see it left unread (set, Linux doubles it
and does not grow it as it grows a buffer left to the system, so the bound below holds)."""
SUBSCRIBES = 100_000
"""Subscribes each flooder sends (about 1 MiB; answered in full, about 4 MiB of refusals)."""
PIPELINED = 20_000
"""Subscribes the peer that reads late sends at once (about 600 KB of refusals: the server stops
reading it long before)."""
STREAMED = 200_000
"""Elements of the legitimate stream counted beside the stopped flood."""


def bench(params: dict[str, str]) -> rstreams.Flow[bytes]:
    return rstreams.from_iterable(itertools.repeat(b"12345678"))


class Counter:
    """Requests 256, then 128 every 128 elements (the hostile benchmark's stream), and counts; looks
    at the conditions it was given (:meth:`when`) every 128 elements: the stream is the clock."""

    def __init__(self) -> None:
        self.count = 0
        self.subscription: Subscription | None = None
        self._waits: list[tuple[Callable[[], bool], asyncio.Future[int]]] = []

    def when(self, condition: Callable[[], bool]) -> asyncio.Future[int]:
        """The count of elements once ``condition()`` holds (bound it with ``within``)."""
        reached = asyncio.get_running_loop().create_future()
        self._waits.append((condition, reached))
        return reached

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.request(256)

    def on_next(self, item: bytes) -> None:
        self.count += 1
        if self.count % 128 == 0:
            assert self.subscription is not None
            self.subscription.request(128)
            for wait in list(self._waits):
                if wait[0]() and not wait[1].done():
                    wait[1].set_result(self.count)
                    self._waits.remove(wait)

    def on_error(self, error: BaseException) -> None:
        for _, reached in self._waits:
            if not reached.done():
                reached.set_exception(error)

    def on_complete(self) -> None:
        self.on_error(AssertionError("the endless stream completed"))

    def cancel(self) -> None:
        if self.subscription is not None:
            self.subscription.cancel()


def read(pump: Pump) -> bool:
    """Whether ``pump`` reads its peer now (the state input backpressure keeps)."""
    return not pump._backed_up


@pytest.mark.parametrize("kind", ["tcp", "unix"])
async def test_a_flood_that_never_reads_its_refusals_gets_no_more_reads(kind: str) -> None:
    """Each flooder is answered at most its receive buffer and UNREAD_MARK of refusals (and a
    part's worth more), then no longer read; 200,000 more elements of the stream beside the
    stopped flood cost it no byte: the flood's share of the server is zero per element."""
    made = Made()
    with listen_url(kind) as url:
        server = await serve(url, {"bench": bench}, on_connection=made)
        conn = await connect(server.url)
        stream = Counter()
        try:
            await within(made.count(1))  # the stream's connection: every later one is a flooder's
            async with flooding(server.url, subscribes(SUBSCRIBES), FLOODERS, rcvbuf=RCVBUF) as socks:
                conn.publisher("bench").subscribe(stream)
                await within(made.count(1 + FLOODERS))
                flooders = [pump_of(flooder) for flooder in made.connections[1:]]

                stopped_at = await within(stream.when(lambda: not any(map(read, flooders))), 60)
                answered = [pump.outbox.ledger.written for pump in flooders]
                rcvbuf = socks[0].getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
                bound = rcvbuf + UNREAD_MARK + 8 * 1024  # what the peer holds, the mark, a part's answers
                assert max(answered) <= bound, (answered, bound)
                await within(stream.when(lambda: stream.count >= stopped_at + STREAMED))
                assert [pump.outbox.ledger.written for pump in flooders] == answered  # nothing more
                assert not any(map(read, flooders))
                assert all(pump.outbox.core.state is not ConnectionState.CLOSED for pump in flooders)
        finally:
            stream.cancel()
            await within(conn.aclose())
            server.close()
            await within(server.wait_closed())


async def test_what_the_server_holds_for_a_flood_stays_bounded_whatever_the_kernel_holds() -> None:
    """Flooders that leave the size of their receive buffers to the system (which Linux grows):
    the kernel decides how many refusals each gets before it is seen not to read, but what the
    server holds for each stays bounded all along, looked at every 128 elements of the stream
    beside them: its transport's unsent bytes within UNREAD_MARK and a turn's replies, its held
    input within one read (the transport's read buffer), its ledger's marks few."""
    made = Made()
    server = await serve("tcp://127.0.0.1:0", {"bench": bench}, on_connection=made)
    conn = await connect(server.url)
    stream = Counter()
    flooders: list[Pump] = []
    most = {"unsent": 0, "held": 0, "marks": 0}

    def look() -> bool:
        for pump in flooders:
            transport = pump.outbox.transport
            unsent = 0 if transport is None else transport.get_write_buffer_size()
            held = 0 if pump._held is None else len(pump._held)
            most["unsent"] = max(most["unsent"], unsent)
            most["held"] = max(most["held"], held)
            most["marks"] = max(most["marks"], len(pump.outbox.ledger._marks))
        return stream.count >= STREAMED

    try:
        await within(made.count(1))
        async with flooding(server.url, subscribes(SUBSCRIBES), FLOODERS):
            conn.publisher("bench").subscribe(stream)
            await within(made.count(1 + FLOODERS))
            flooders.extend(pump_of(flooder) for flooder in made.connections[1:])
            await within(stream.when(look), 60)
            assert all(pump.outbox.core.state is not ConnectionState.CLOSED for pump in flooders)
            assert min(pump.outbox.ledger.written for pump in flooders) > 0  # all were answered
    finally:
        stream.cancel()
        await within(conn.aclose())
        server.close()
        await within(server.wait_closed())
    turn = 16 * 1024  # a turn's refusals: a READ_TURN part of 10-byte subscribes, 30 bytes each
    assert most["unsent"] <= UNREAD_MARK + turn, most
    assert most["held"] <= SOCKET_READ_SIZE, most
    assert most["marks"] <= (UNREAD_MARK + turn) // MARK_SPACING + 2, most


@contextlib.asynccontextmanager
async def pipelining_beside_a_stream(
    rcvbuf: int | None = None,
) -> AsyncIterator[tuple[Counter, asyncio.Transport, Pipeliner, Pump]]:
    """A server, a client on it whose stream (the test's clock) the caller starts, and a raw client
    (``rcvbuf``: its receive buffer, fixed) that pipelines subscribes: yields the stream, the raw
    client's transport, the raw client, and the server's pump for it."""
    loop = asyncio.get_running_loop()
    made = Made()
    server = await serve("tcp://127.0.0.1:0", {"bench": bench}, on_connection=made)
    conn = await connect(server.url)
    stream = Counter()
    transport: asyncio.Transport | None = None
    try:
        await within(made.count(1))
        sock = socket.socket()
        if rcvbuf is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        await loop.sock_connect(sock, address_of(server.url))
        transport, client = await loop.create_connection(lambda: Pipeliner(PIPELINED), sock=sock)
        await within(made.count(2))
        conn.publisher("bench").subscribe(stream)
        yield stream, transport, client, pump_of(made.connections[1])
    finally:
        stream.cancel()
        if transport is not None:
            transport.close()
        await within(conn.aclose())
        server.close()
        await within(server.wait_closed())


async def test_a_pipelining_peer_that_reads_its_answers_gets_a_turn_s_worth_beside_a_stream() -> None:
    """A peer that sends what a flooder sends, 20,000 subscribes for an unknown name at once, but
    reads the refusals as they come, is served as a connection read as its bytes come: READ_TURN
    of its subscribes per loop turn beside the stream, not the ration of peers that leave their
    replies unread (HELD_PART every HELD_EVERY turns). Counted in elements of the stream beside
    it: about 7,000 (2.5 million when it was rationed as a flooder)."""
    async with pipelining_beside_a_stream() as (stream, _, client, pump):
        client.pipeline("nope", PIPELINED)
        started = stream.count
        answered_at = await within(stream.when(lambda: client.done.done()), 60)
        assert client.ended == list(range(1, PIPELINED + 1))  # every one, in order
        assert all(error.startswith("no publisher") for error in client.errors)
        assert answered_at - started <= 100_000, answered_at - started
        assert read(pump)


async def test_a_peer_that_reads_its_refusals_late_gets_every_one() -> None:
    """A peer pipelines 20,000 subscribes and does not read until the server has
    stopped reading it (the refusals wait in the sockets); once it reads, the server reads it
    again (looking at the socket's queue, UNREAD_POLL) and answers every subscribe, in order.
    A stream on another connection runs beside it (and is the test's clock)."""
    async with pipelining_beside_a_stream(RCVBUF) as (stream, transport, client, pump):
        transport.pause_reading()
        client.pipeline("nope", PIPELINED)
        await within(stream.when(lambda: not read(pump)), 60)
        assert pump._look is not None  # stopped for the refusals its socket holds: looked at again
        transport.resume_reading()
        await within(client.done, 60)
        assert client.ended == list(range(1, PIPELINED + 1))
        assert all(error.startswith("no publisher") for error in client.errors)
        assert read(pump) and pump.outbox.core.state is not ConnectionState.CLOSED


class _Beneath:
    """A transport's ``get_extra_info`` alone, over ``sock`` (or none: a pipe, a memory pair)."""

    def __init__(self, sock: socket.socket | None) -> None:
        self.sock = sock

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self.sock if name == "socket" else default


async def test_socket_unsent_counts_what_the_peer_has_not_taken() -> None:
    """A Unix socket's unread bytes (with the kernel's overhead: at least as many), TCP's bytes
    not sent for a closed window; 0 without a socket, and once a reader took them."""
    ours, theirs = socket.socketpair(socket.AF_UNIX)
    with ours, theirs:
        assert socket_unsent(_Beneath(ours)) == 0
        ours.send(b"x" * 1000)
        assert socket_unsent(_Beneath(ours)) >= 1000
        assert theirs.recv(4096) == b"x" * 1000
        assert socket_unsent(_Beneath(ours)) == 0
    assert socket_unsent(_Beneath(None)) == 0
    with socket.create_server(("127.0.0.1", 0)) as listening:
        theirs = socket.create_connection(listening.getsockname())
        theirs.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
        ours, _ = listening.accept()
        with ours, theirs:
            ours.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                while True:  # until our socket takes no more: the peer's window is closed
                    ours.send(b"x" * 65536)
            assert socket_unsent(_Beneath(ours)) > 0
    assert socket_unsent(_Beneath(ours)) == 0  # closed: nothing to tell
