"""Test tools for rstreams.net: a recording transport handler; every wait is bounded."""

from __future__ import annotations

import asyncio
import gc
import math
import selectors
import ssl
import warnings
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from pathlib import Path
from types import UnionType
from typing import Any, TypeVar

from rstreams.errors import ConnectionBrokenError
from rstreams.net import Connection, connect
from rstreams.net._pump import Pump
from rstreams.net._resume_session import Session
from rstreams.net._transport import Transport
from rstreams.wire import (
    ClientHello,
    ConnectionConfig,
    ConnectionState,
    Event,
    ExtensionMessage,
    Frame,
    Side,
    encode,
)
from rstreams.wire import Connection as Core
from testkit.bound import family, within

WAIT = 10.0

T = TypeVar("T")


def listen_url(scheme: str, directory: Path) -> str:
    """A URL to serve on over ``scheme`` (tcp, tls, unix, ws, wss): port 0, or a socket file
    in ``directory``."""
    return {
        "tcp": "tcp://127.0.0.1:0",
        "tls": "tls://127.0.0.1:0",
        "unix": f"unix://{directory / 'rs.sock'}",
        "ws": "ws://127.0.0.1:0/rs",
        "wss": "wss://127.0.0.1:0/rs",
    }[scheme]


async def connect_child(
    url: str, children: Iterable[int] | None = None, limit: float = WAIT, **options: Any
) -> Connection:
    """``rstreams.net.connect(url, **options)`` to a server in another process: connect's own
    handshake timer (wall time) off, the connect bounded instead by :class:`~testkit.bound.Bound`
    over this loop and ``children`` (by default every process this one started): the time the
    server waited for a CPU on a loaded machine does not count."""
    awaited = family() if children is None else children
    return await within(connect(url, handshake_timeout=None, **options), limit, awaited)


def connection(**options: Any) -> Connection:
    """A connection with no transport yet (``memory_pair`` gives it one); ``options`` as for the pump."""
    return Connection(Pump(**options))


def pump_of(conn: Connection) -> Pump:
    """The pump under ``conn``'s facade (tests look beneath it; the library never does)."""
    return conn._pump


def session_of(conn: Connection) -> Session | None:
    """``conn``'s resumable session, if it runs over one (its transport, as the pump sees it)."""
    transport = pump_of(conn).outbox.transport
    return transport if isinstance(transport, Session) else None


class RecordingHandler:
    """A TransportHandler that records what arrives and can echo it back."""

    def __init__(self, *, echo: bool = False) -> None:
        self.echo = echo
        self.transport: Transport | None = None
        self.data = bytearray()
        self.eof = False
        self.lost: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        self.paused = 0
        self.resumed = 0
        self.made = asyncio.Event()
        self._changed = asyncio.Event()

    def connection_made(self, transport: Transport) -> None:
        self.transport = transport
        self.made.set()

    def data_received(self, data: memoryview) -> None:
        self.data += data
        self._changed.set()
        if self.echo and self.transport is not None:
            self.transport.writelines([bytes(data)])

    def eof_received(self) -> None:
        self.eof = True
        self._changed.set()
        if self.transport is not None:
            self.transport.close()  # StreamProtocol keeps the write side open: the handler decides

    def connection_lost(self, error: BaseException | None) -> None:
        if not self.lost.done():
            self.lost.set_result(error)
        self._changed.set()

    def pause_writing(self) -> None:
        self.paused += 1
        self._changed.set()

    def resume_writing(self) -> None:
        self.resumed += 1
        self._changed.set()

    async def wait_for(self, predicate: object, what: str) -> None:
        async def loop() -> None:
            while not predicate():  # type: ignore[operator]
                self._changed.clear()
                await self._changed.wait()

        try:
            await within(loop())
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    async def wait_bytes(self, n: int) -> bytes:
        await self.wait_for(lambda: len(self.data) >= n or self.lost.done(), f"{n} bytes")
        return bytes(self.data)


class CountingSource:
    """A Publisher of ``size``-byte elements (big-endian counters), ``limit`` of them or endless.

    Records how many elements were pulled and whether a subscription was cancelled, so
    tests can check what the serving side asked its local Publisher for.
    """

    def __init__(self, *, size: int = 8, limit: int | None = None) -> None:
        self.size = size
        self.limit = limit
        self.pulled = 0
        self.requests: list[int] = []
        self.cancelled = asyncio.Event()
        self.subscribed = asyncio.Event()
        self.progress = asyncio.Event()  # set after every request that produced elements

    async def wait_pulled(self, n: int) -> None:
        """Wait (bounded) until more than ``n`` elements were pulled in total."""

        async def loop() -> None:
            while self.pulled <= n:
                self.progress.clear()
                await self.progress.wait()

        await within(loop())

    def subscribe(self, subscriber: Any) -> None:
        subscription = _CountingSubscription(self, subscriber)
        self.subscribed.set()
        subscriber.on_subscribe(subscription)


class _CountingSubscription:
    def __init__(self, source: CountingSource, subscriber: Any) -> None:
        self.source = source
        self.subscriber = subscriber
        self.demand = 0
        self.sent = 0
        self.emitting = False
        self.stopped = False

    def request(self, n: int) -> None:
        if self.stopped:
            return
        if n <= 0:
            self.stopped = True
            self.subscriber.on_error(ValueError(f"rule 3.9: got {n}"))
            return
        self.source.requests.append(n)
        self.demand = min(self.demand + n, 2**63 - 1)
        if self.emitting:
            return
        self.emitting = True
        source = self.source
        while self.demand > 0 and not self.stopped:
            if source.limit is not None and self.sent >= source.limit:
                self.stopped = True
                self.subscriber.on_complete()
                break
            self.demand -= 1
            self.sent += 1
            source.pulled += 1
            self.subscriber.on_next(self.sent.to_bytes(source.size, "big"))
        else:
            if source.limit is not None and self.sent >= source.limit and not self.stopped:
                self.stopped = True
                self.subscriber.on_complete()
        self.emitting = False
        source.progress.set()

    def cancel(self) -> None:
        self.stopped = True
        self.source.cancelled.set()


class MemoryTransport:
    """One end of an in-memory transport pair: the driver's code without sockets.

    Writes are delivered to the peer on the next loop turn (like a network would), as long
    as the peer reads; while it does not (``pause_reading``), bytes stay buffered here and
    count towards ``get_write_buffer_size``, with the same high/low-water signals as
    asyncio's transports. ``writes`` counts ``writelines`` calls.
    """

    def __init__(self, handler: Any, *, high: int = 1024 * 1024, low: int = 256 * 1024) -> None:
        self.handler = handler
        self.peer: MemoryTransport | None = None
        self.high, self.low = high, low
        self.buffer: list[bytes] = []
        self.size = 0
        self.paused = False
        self.reading = True
        self.closing = False
        self.lost = False
        self.writes = 0
        self.loop = asyncio.get_running_loop()

    def set_handler(self, handler: Any) -> None:
        self.handler = handler

    def writelines(self, chunks: list[bytes]) -> bool:
        if self.closing:
            return False
        self.writes += 1
        data = b"".join(chunks)
        self.buffer.append(data)
        self.size += len(data)
        if not self.paused and self.size > self.high:
            self.paused = True
            self.handler.pause_writing()
        self.loop.call_soon(self.deliver)
        return True

    def deliver(self) -> None:
        peer = self.peer
        if peer is None or peer.lost:
            return
        while self.buffer and peer.reading:
            data = self.buffer.pop(0)
            self.size -= len(data)
            peer.handler.data_received(memoryview(data))
        if self.paused and self.size <= self.low:
            self.paused = False
            self.handler.resume_writing()
        if self.closing and not self.buffer:
            self._lose()

    def _lose(self) -> None:
        for end in (self, self.peer):
            if end is not None and not end.lost:
                end.lost = True
                end.closing = True
                end.handler.connection_lost(None)

    def get_write_buffer_size(self) -> int:
        return self.size

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        pass

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self.high, self.low = high, low
        if not self.paused and self.size > high:  # as asyncio's transports do
            self.paused = True
            self.handler.pause_writing()

    def pause_reading(self) -> None:
        self.reading = False

    def resume_reading(self) -> None:
        self.reading = True
        if self.peer is not None:
            self.loop.call_soon(self.peer.deliver)

    def close(self) -> None:
        self.closing = True
        self.loop.call_soon(self.deliver)

    def abort(self) -> None:
        self.buffer.clear()
        self.size = 0
        self._lose()

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return "memory" if name == "peername" else default


def memory_pair(a: Any, b: Any, **limits: int) -> tuple[MemoryTransport, MemoryTransport]:
    """Connect two handlers (or connections: their pumps) in memory; both get ``connection_made``."""
    if isinstance(a, Connection):
        a = pump_of(a)
    if isinstance(b, Connection):
        b = pump_of(b)
    ta, tb = MemoryTransport(a, **limits), MemoryTransport(b, **limits)
    ta.peer, tb.peer = tb, ta
    a.connection_made(ta)
    b.connection_made(tb)
    return ta, tb


class _VirtualSelector(selectors.DefaultSelector):
    """A selector that never sleeps: where the loop would wait ``timeout`` seconds for I/O, the
    virtual clock jumps ``timeout`` ahead instead (memory transports need no real waiting)."""

    def __init__(self) -> None:
        super().__init__()
        self.now = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready = super().select(0)
        if not ready and timeout is not None and timeout > 0:
            # at least one representable step: a timeout below the float's resolution at
            # ``now`` would otherwise leave the clock where it is, and the loop spinning
            self.now = max(self.now + timeout, math.nextafter(self.now, math.inf))
        elif not ready and timeout is None:
            raise AssertionError("the loop would wait forever: nothing scheduled, nothing to read")
        return ready


class VirtualTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock moves only when it has nothing to do, straight to the next timer.

    Timers (keepalive, idle and handshake timeouts, linger) fire at their exact virtual time,
    with no real waiting; drive it with :func:`run_virtual` over memory transports.
    """

    def __init__(self) -> None:
        self._virtual = _VirtualSelector()
        super().__init__(self._virtual)

    def time(self) -> float:
        return self._virtual.now


def run_virtual(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``main()`` on a fresh :class:`VirtualTimeLoop` (its clock starts at 0)."""
    loop = VirtualTimeLoop()
    try:
        return loop.run_until_complete(main())
    finally:
        loop.close()


async def closed_after(conn: Connection, seconds: float) -> bool:
    """Whether ``conn`` is closed ``seconds`` from now (on a virtual loop: once the clock is there)."""
    await asyncio.sleep(seconds)
    return conn.closed


class MemoryPeer:
    """A peer that speaks frames through its own wire core over a memory transport (tests write
    what a real implementation would, or would not: ``hello=False`` sends nothing at first)."""

    def __init__(self, *, client: bool = True, extensions: tuple[int, ...] = (), hello: bool = True) -> None:
        self.core = Core(
            Side.CLIENT if client else Side.SERVER, ConnectionConfig(extensions=frozenset(extensions))
        )
        self.hello = hello
        self.transport: Any = None
        self.events: list[Event] = []
        self.times: list[float] = []  # loop time each event arrived
        self.closed_at: float | None = None  # loop time the transport was lost
        self.loop = asyncio.get_running_loop()

    def connection_made(self, transport: Any) -> None:
        self.transport = transport
        hello = self.core.data_to_send()
        if self.hello:
            transport.writelines(hello)

    def data_received(self, data: memoryview) -> None:
        if self.core.state is not ConnectionState.CLOSED:
            self.core.receive_data(data)
            self._take()

    def eof_received(self) -> None:
        self.core.receive_eof()
        self._take()

    def _take(self) -> None:
        events = self.core.events_received()
        self.events += events
        self.times += [self.loop.time()] * len(events)

    def connection_lost(self, error: BaseException | None) -> None:
        self.closed_at = self.loop.time()

    def pause_writing(self) -> None:
        pass

    def resume_writing(self) -> None:
        pass

    def send(self, *frames: Any) -> None:
        """Write ``frames`` now (extension messages as they are, the others through our core)."""
        data = b"".join(self.core.data_to_send())
        for frame in frames:
            if isinstance(frame, ExtensionMessage):
                data += encode(frame)
            else:
                self.core.send(frame)
                data += b"".join(self.core.data_to_send())
        self.transport.writelines([data])

    def of(self, kind: type) -> list[Any]:
        """The events of type ``kind`` received so far."""
        return [event for event in self.events if isinstance(event, kind)]

    def time_of(self, kind: type) -> float:
        """Loop time the first event of type ``kind`` arrived (fails if none did)."""
        for event, at in zip(self.events, self.times, strict=True):
            if isinstance(event, kind):
                return at
        raise AssertionError(f"no {kind.__name__} among {self.events}")


class StalledPeer:
    """A TLS client that sent its ClientHello, read the server's answer to it (so its handshake
    is done on this side) and holds back its Finished: the server's handshake waits for it."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, finished: bytes) -> None:
        self.reader, self.writer, self.finished = reader, writer, finished

    @classmethod
    async def open(cls, url: str, context: ssl.SSLContext) -> StalledPeer:
        host, port = url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = context.wrap_bio(incoming, outgoing, server_hostname=host)
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                writer.write(outgoing.read())
                data = await within(reader.read(1 << 16))
                if not data:
                    writer.close()
                    raise ConnectionResetError("the server ended its TLS handshake") from None
                incoming.write(data)
        return cls(reader, writer, outgoing.read())

    async def ended(self) -> bool:
        """Whether the server's side is gone: its end of input, or a reset."""
        try:
            return await within(self.reader.read(1 << 16)) == b""
        except ConnectionError:
            return True


class RawPeer:
    """A client that speaks bytes; a client core reads what the server sends."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, extensions: set[int]
    ) -> None:
        self.reader, self.writer = reader, writer
        self.core = Core(Side.CLIENT, ConnectionConfig(extensions=frozenset(extensions)))
        self.core.data_to_send()  # our hello is written by hand
        self.events: list[Event] = []  # received, not yet taken by read_until
        self.seen: list[Event] = []  # everything received, in order

    @classmethod
    async def open(cls, url: str, *, hello: bool = True, extensions: tuple[int, ...] = ()) -> RawPeer:
        host, port = url.removeprefix("tcp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        if hello:
            writer.write(encode(ClientHello(extensions=extensions)))
        return cls(reader, writer, set(extensions))

    async def read_until(self, wanted: type | UnionType, *, deadline: float = WAIT) -> Any:
        """Read until an event of type ``wanted`` (or the end); returns it or fails."""

        async def loop() -> Any:
            while True:
                for event in self.events:
                    if isinstance(event, wanted):
                        self.events.remove(event)
                        return event
                data = await self.reader.read(65536)
                if not data:
                    self.core.receive_eof()
                    self._take()
                    for event in self.events:
                        if isinstance(event, wanted):
                            return event
                    raise AssertionError(f"EOF before {wanted}: {self.events}")
                self.core.receive_data(data)
                self._take()

        return await within(loop(), deadline)

    def _take(self) -> None:
        events = self.core.events_received()
        self.events += events
        self.seen += events

    def send(self, *frames: Frame) -> None:
        """Write ``frames``: core frames through the client core (so that it knows our
        subscriptions), extension messages as they are (the core sends none before the hello)."""
        data = b""
        for frame in frames:
            if isinstance(frame, ExtensionMessage):
                data += b"".join(self.core.data_to_send()) + encode(frame)
            else:
                self.core.send(frame)
        self.writer.write(data + b"".join(self.core.data_to_send()))

    def close(self) -> None:
        self.writer.close()


class BytePeer(MemoryPeer):
    """A :class:`MemoryPeer` that also keeps every byte it received."""

    def __init__(self) -> None:
        super().__init__()
        self.received = bytearray()

    def data_received(self, data: memoryview) -> None:
        self.received += data
        super().data_received(data)


def serve_plan(offer: Any, plan: list[list[Any]]) -> BytePeer:
    """A server offering ``offer`` on a memory pair with a :class:`BytePeer`, on a virtual clock:
    after both hellos, each step's frames are sent and the server answers all it will."""

    async def main() -> BytePeer:
        server = connection(client=False, offer=offer)
        peer = BytePeer()
        memory_pair(server, peer)
        await asyncio.sleep(1.0)  # virtual time: until both hellos are through
        for frames in plan:
            peer.send(*frames)
            await asyncio.sleep(1.0)  # until the server has answered all it will
        return peer

    return run_virtual(main)


def assert_collected_closes_its_loop(make: Callable[[], Any]) -> None:
    """What ``make`` builds (an object with a loop thread: rstreams.net._loop_thread, as
    ReplayServer and LivePage have), dropped without ever being started, closes its event loop
    when collected: nothing for -X dev to report as an unclosed event loop (a ResourceWarning)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        dropped = make()
        loop = dropped.loop
        del dropped
        gc.collect()
        assert loop.is_closed()
        del loop
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


async def raw_websocket(url: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A raw client of the ws:// server at ``url``: the opening handshake for ``rsio.v0`` done
    (its 101 checked), the socket's streams for the test's own frames."""
    import base64
    import os
    import urllib.parse

    parts = urllib.parse.urlsplit(url)
    host, port, path = parts.hostname or "127.0.0.1", parts.port, parts.path or "/"
    reader, writer = await asyncio.open_connection(host, port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            "Sec-WebSocket-Protocol: rsio.v0\r\n\r\n"
        ).encode()
    )
    head = await within(reader.readuntil(b"\r\n\r\n"))  # (own time: the server may share this loop)
    assert head.startswith(b"HTTP/1.1 101"), head
    return reader, writer


async def broken_stream_from(starting: Awaitable[asyncio.Server]) -> tuple[ConnectionBrokenError, int]:
    """A tcp:// client's stream from the server ``starting`` makes (closed after), which must
    fail: its ConnectionBrokenError and the server's port."""
    import pytest

    server = await starting
    port = server.sockets[0].getsockname()[1]
    try:
        conn = await connect(f"tcp://127.0.0.1:{port}")
        with pytest.raises(ConnectionBrokenError) as broken:
            await conn.publisher("x").collect()
        await conn.aclose()
        return broken.value, port
    finally:
        server.close()
        await server.wait_closed()
