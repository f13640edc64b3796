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
A peer that sends as many subscribes and reads its answers, late, gets every one of them.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscription
from rstreams.net import Connection, connect, serve
from rstreams.net._intake import UNREAD_MARK, socket_unsent
from rstreams.net._pump import Pump
from rstreams.wire import ClientHello, ConnectionState, OnError, Subscribe, encode
from testkit.bound import within
from testkit.net import MemoryPeer, pump_of

pytestmark = [
    pytest.mark.asyncio,
    pytest.mark.timeout(120),
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
HELLO = encode(ClientHello())


def subscribes(count: int, first: int = 1) -> bytes:
    return b"".join(encode(Subscribe(publisher="nope", subscriber=i)) for i in range(first, first + count))


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


class Made:
    """The server's connections in the order made (``serve(on_connection=...)``), and a wait for
    the next one."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        self.more = asyncio.Event()

    def __call__(self, conn: Connection) -> None:
        self.connections.append(conn)
        self.more.set()

    async def count(self, n: int) -> None:
        """Return once ``n`` connections were made (bound it with ``within``)."""
        while len(self.connections) < n:
            self.more.clear()
            await self.more.wait()


def read(pump: Pump) -> bool:
    """Whether ``pump`` reads its peer now (the state input backpressure keeps)."""
    return not pump._backed_up


def open_flooder(kind: str) -> socket.socket:
    sock = socket.socket(socket.AF_INET if kind == "tcp" else socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
    sock.setblocking(False)
    return sock


def address_of(url: str) -> Any:
    if url.startswith("unix://"):
        return url.removeprefix("unix://")
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    return host, int(port)


@contextlib.contextmanager
def listen_url(kind: str) -> Iterator[str]:
    if kind == "tcp":
        yield "tcp://127.0.0.1:0"
        return
    with tempfile.TemporaryDirectory() as directory:
        yield f"unix://{directory}/rsio.sock"


@pytest.mark.parametrize("kind", ["tcp", "unix"])
async def test_a_flood_that_never_reads_its_refusals_gets_no_more_reads(kind: str) -> None:
    """Each flooder is answered at most its receive buffer and UNREAD_MARK of refusals (and a
    part's worth more), then no longer read; 200,000 more elements of the stream beside the
    stopped flood cost it no byte: the flood's share of the server is zero per element."""
    loop = asyncio.get_running_loop()
    made = Made()
    socks: list[socket.socket] = []
    floods: list[asyncio.Task[None]] = []
    with listen_url(kind) as url:
        server = await serve(url, {"bench": bench}, on_connection=made)
        conn = await connect(server.url)
        stream = Counter()
        try:
            await within(made.count(1))  # the stream's connection: every later one is a flooder's
            for _ in range(FLOODERS):
                sock = open_flooder(kind)
                socks.append(sock)
                await loop.sock_connect(sock, address_of(server.url))
                floods.append(loop.create_task(loop.sock_sendall(sock, HELLO + subscribes(SUBSCRIBES))))
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
            for task in floods:
                task.cancel()
            for sock in socks:
                sock.close()
            await within(conn.aclose())
            server.close()
            await within(server.wait_closed())


class _Reader(asyncio.Protocol):
    """A raw peer over a real socket whose reading the test pauses and resumes (MemoryPeer's core
    decodes what it reads)."""

    def __init__(self) -> None:
        self.peer = MemoryPeer()
        self.errors = 0
        self.all_answered = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.peer.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        events = self.peer.events
        seen = len(events)
        self.peer.data_received(memoryview(data))
        self.errors += sum(isinstance(event, OnError) for event in events[seen:])
        if self.errors >= PIPELINED and not self.all_answered.done():
            self.all_answered.set_result(None)

    def eof_received(self) -> None:
        self.peer.eof_received()


async def test_a_peer_that_reads_its_refusals_late_gets_every_one() -> None:
    """A peer pipelines 20,000 subscribes and does not read until the server has
    stopped reading it (the refusals wait in the sockets); once it reads, the server reads it
    again (looking at the socket's queue, UNREAD_POLL) and answers every subscribe, in order.
    A stream on another connection runs beside it (and is the test's clock)."""
    loop = asyncio.get_running_loop()
    made = Made()
    server = await serve("tcp://127.0.0.1:0", {"bench": bench}, on_connection=made)
    conn = await connect(server.url)
    stream = Counter()
    await within(made.count(1))
    sock = open_flooder("tcp")  # a receive buffer of RCVBUF, as the flooders'
    await loop.sock_connect(sock, address_of(server.url))
    transport, reader = await loop.create_connection(_Reader, sock=sock)
    try:
        transport.pause_reading()
        core = reader.peer.core  # through the peer's core, which then knows what it subscribed
        for i in range(1, PIPELINED + 1):
            core.send(Subscribe(publisher="nope", subscriber=i))
        transport.write(b"".join(core.data_to_send()))
        conn.publisher("bench").subscribe(stream)
        await within(made.count(2))
        pump = pump_of(made.connections[1])
        await within(stream.when(lambda: not read(pump)), 60)
        assert pump._look is not None  # stopped for the refusals its socket holds: looked at again
        transport.resume_reading()
        await within(reader.all_answered, 60)
        errors = reader.peer.of(OnError)
        assert [e.subscriber for e in errors] == list(range(1, PIPELINED + 1))
        assert all(e.error.startswith("no publisher") for e in errors)
        assert read(pump) and pump.outbox.core.state is not ConnectionState.CLOSED
    finally:
        stream.cancel()
        transport.close()
        await within(conn.aclose())
        server.close()
        await within(server.wait_closed())


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
