"""Peers in the server's own event loop, for the hostile scenario's counts and the fairness tests.

``benchmarks/net_hostile.py`` (its ``count`` and ``pipeline`` roles) and
tests/net/test_hostile_fairness.py run the same peers, so the test checks the very flood the
benchmark counts:

* :func:`flooding`: raw sockets that each send a block of frames (subscribes for a name nobody
  offers: :func:`subscribes`) as fast as the server reads them and never read what it answers;
* :class:`Pipeliner`: a raw client that writes many subscribes at once and reads the answers
  as they come (a wire core decodes them), as a legitimate client that pipelines does;
* :class:`Made`: the server's connections in the order made (``serve(on_connection=...)``),
  so the caller can look at each one's pump: what it was answered, whether it is still read.

Counted, never timed: everything runs in one process and one event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import tempfile
from collections.abc import AsyncIterator, Iterator
from typing import Any, cast

from rstreams.net import Connection
from rstreams.wire import (
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    OnComplete,
    OnError,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire import Connection as Core

__all__ = ["HELLO", "Made", "Pipeliner", "address_of", "flooding", "listen_url", "subscribes"]

HELLO = encode(ClientHello())
"""A client's hello without extensions: what a flooder sends first."""


def subscribes(count: int, publisher: str = "nope", first: int = 1) -> bytes:
    """``count`` subscribes to ``publisher`` with ids ``first``, ``first + 1``, ... and no demand."""
    return b"".join(encode(Subscribe(publisher=publisher, subscriber=i)) for i in range(first, first + count))


def address_of(url: str) -> Any:
    """The socket address of a ``tcp://HOST:PORT`` or ``unix://PATH`` server URL."""
    if url.startswith("unix://"):
        return url.removeprefix("unix://")
    host, port = url.removeprefix("tcp://").rsplit(":", 1)
    return host, int(port)


@contextlib.contextmanager
def listen_url(kind: str) -> Iterator[str]:
    """A URL to serve on: ``tcp`` on loopback (any port), ``unix`` in a fresh directory."""
    if kind == "tcp":
        yield "tcp://127.0.0.1:0"
        return
    with tempfile.TemporaryDirectory() as directory:
        yield f"unix://{directory}/rsio.sock"


class Made:
    """The server's connections in the order made (pass it as ``serve(on_connection=...)``), and a
    wait for the next one."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        self.more = asyncio.Event()

    def __call__(self, conn: Connection) -> None:
        self.connections.append(conn)
        self.more.set()

    async def count(self, n: int) -> None:
        """Return once ``n`` connections were made (the caller bounds the wait)."""
        while len(self.connections) < n:
            self.more.clear()
            await self.more.wait()


@contextlib.asynccontextmanager
async def flooding(
    url: str, data: bytes, peers: int, *, rcvbuf: int | None = None
) -> AsyncIterator[list[socket.socket]]:
    """``peers`` raw sockets connected to the server at ``url``, each writing ``HELLO + data`` as
    fast as the server reads it and never reading; ``rcvbuf``: each one's ``SO_RCVBUF`` (fixed:
    Linux then does not grow it), else the system's (which Linux grows). Yields the sockets once
    all are connected; on leaving, the writes are cancelled and the sockets closed."""
    loop = asyncio.get_running_loop()
    unix = url.startswith("unix://")
    socks: list[socket.socket] = []
    floods: list[asyncio.Task[None]] = []
    try:
        for _ in range(peers):
            sock = socket.socket(socket.AF_UNIX if unix else socket.AF_INET, socket.SOCK_STREAM)
            socks.append(sock)
            if rcvbuf is not None:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            sock.setblocking(False)
            await loop.sock_connect(sock, address_of(url))
            floods.append(loop.create_task(loop.sock_sendall(sock, HELLO + data)))
        yield socks
    finally:
        for task in floods:
            task.cancel()
        for sock in socks:
            sock.close()


class Pipeliner(asyncio.Protocol):
    """A raw client that writes many subscribes at once (:meth:`pipeline`) and reads the answers
    as they come, decoding them with a wire core: :attr:`ended` lists the subscriber ids whose
    streams ended (onComplete, or onError: a refusal), in order, and :attr:`done` resolves once
    ``expected`` have. ``pause_reading`` on its transport makes it a peer that reads late."""

    def __init__(self, expected: int) -> None:
        self.core = Core(Side.CLIENT, ConnectionConfig())
        self.expected = expected
        self.ended: list[int] = []
        self.errors: list[str] = []
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.closed: ConnectionClosed | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's is one, not a subclass
        self.transport.writelines(self.core.data_to_send())  # the hello

    def pipeline(self, publisher: str, count: int, demand: int = 0) -> int:
        """Write ``count`` subscribes to ``publisher`` (ids 1, 2, ...) in one write; returns its bytes."""
        for i in range(1, count + 1):
            self.core.send(Subscribe(publisher=publisher, subscriber=i, initial_demand=demand))
        data = b"".join(self.core.data_to_send())
        assert self.transport is not None
        self.transport.write(data)
        return len(data)

    def data_received(self, data: bytes) -> None:
        self.core.receive_data(memoryview(data))
        for event in self.core.events_received():
            if isinstance(event, OnComplete):
                self.ended.append(event.subscriber)
            elif isinstance(event, OnError):
                self.ended.append(event.subscriber)
                self.errors.append(event.error)
            elif isinstance(event, ConnectionClosed):
                self.closed = event
        if len(self.ended) >= self.expected and not self.done.done():
            self.done.set_result(None)

    def connection_lost(self, error: BaseException | None) -> None:
        if not self.done.done():
            self.done.set_exception(ConnectionError(f"closed before every stream ended: {self.closed}"))
