"""Keepalive pings and the idle timeout on real sockets (PROTOCOL.md §14)."""

from __future__ import annotations

import asyncio
import time
from types import UnionType
from typing import Any

import pytest
from netsupport import WAIT

import rstreams
from rstreams import UNBOUNDED
from rstreams.errors import ConnectionBrokenError
from rstreams.net import DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE, connect, serve
from rstreams.wire import (
    ClientHello,
    ConnectionClosed,
    ConnectionConfig,
    Event,
    ExtensionMessage,
    ExtensionReceived,
    Frame,
    OnNext,
    Side,
    Subscribe,
    encode,
)
from rstreams.wire import Connection as Core
from rstreams.wire.extensions import KEEPALIVE, PING, PONG

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello")}


async def within(awaitable: Any) -> Any:
    return await asyncio.wait_for(awaitable, WAIT)


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

        return await asyncio.wait_for(loop(), deadline)

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


async def test_defaults_are_exported() -> None:
    assert (DEFAULT_KEEPALIVE, DEFAULT_IDLE_TIMEOUT) == (15.0, 60.0)


@pytest.mark.parametrize("hello", [True, False])
async def test_a_silent_peer_is_closed_after_idle_timeout(hello: bool) -> None:
    """A raw socket that sends (at most) its hello, then nothing: goodbye "idle timeout", then EOF.
    Another client keeps being served meanwhile and afterwards."""
    async with await serve("tcp://127.0.0.1:0", OFFER, idle_timeout=0.3, handshake_timeout=None) as server:
        good = await connect(server.url, keepalive=0.05)
        started = time.monotonic()
        peer = await RawPeer.open(server.url, hello=hello)
        closed = await peer.read_until(ConnectionClosed)
        elapsed = time.monotonic() - started
        peer.close()
        assert closed.reason == "idle timeout: nothing received for 0.3 s (PROTOCOL.md §14.2)"
        assert 0.25 <= elapsed < 5
        assert await within(good.request("greeting")) == b"hello"
        await within(good.aclose())


async def test_an_idle_client_with_keepalive_stays_connected() -> None:
    """The client pings every 0.05 s: the server, whose idle timeout is 0.3 s, keeps it for 1 s."""
    async with await serve("tcp://127.0.0.1:0", OFFER, idle_timeout=0.3, keepalive=None) as server:
        conn = await connect(server.url, keepalive=0.05)
        await asyncio.sleep(1.0)  # the point of the test: a second of silence from the application
        assert not conn.closed and len(server.connections) == 1
        assert await within(conn.request("greeting")) == b"hello"
        await within(conn.aclose())


async def test_the_servers_pings_keep_a_client_that_does_not_ping() -> None:
    """A client with keepalive=None still answers the server's pings, which keep it alive."""
    async with await serve("tcp://127.0.0.1:0", OFFER, idle_timeout=0.3, keepalive=0.05) as server:
        conn = await connect(server.url, keepalive=None)
        await asyncio.sleep(1.0)
        assert not conn.closed and len(server.connections) == 1
        assert await within(conn.request("greeting")) == b"hello"
        await within(conn.aclose())


async def test_without_keepalive_an_idle_client_is_closed() -> None:
    """Neither side pings: the server's idle timeout ends the connection; the client's streams
    fail with the reason."""
    async with await serve("tcp://127.0.0.1:0", OFFER, idle_timeout=0.2, keepalive=None) as server:
        conn = await connect(server.url, keepalive=None)
        await within(conn.wait_closed())
        assert conn.closed
        with pytest.raises(ConnectionBrokenError, match="idle timeout"):
            await within(conn.request("greeting"))


async def test_ping_is_answered_with_the_same_bytes() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, keepalive=None) as server:
        peer = await RawPeer.open(server.url, extensions=(KEEPALIVE.id,))
        peer.writer.write(encode(ExtensionMessage(type=PING, payload=b"12345678")))
        pong = await peer.read_until(ExtensionReceived)
        assert pong == ExtensionReceived(type=PONG, payload=b"12345678")
        peer.close()


async def test_the_server_pings_a_silent_peer_that_offers_keepalive() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER, keepalive=0.05, idle_timeout=None) as server:
        peer = await RawPeer.open(server.url, extensions=(KEEPALIVE.id,))
        ping = await peer.read_until(ExtensionReceived)
        assert ping.type == PING and len(ping.payload) == 8
        peer.close()


async def test_ping_before_the_extension_is_active_gets_a_goodbye() -> None:
    """The peer's hello does not list keepalive: its ping is a connection error citing §4.4;
    other clients keep being served."""
    async with await serve("tcp://127.0.0.1:0", OFFER) as server:
        good = await connect(server.url)
        peer = await RawPeer.open(server.url, extensions=())
        peer.writer.write(encode(ExtensionMessage(type=PING, payload=bytes(8))))
        closed = await peer.read_until(ConnectionClosed)
        peer.close()
        assert "0x80" in closed.reason and "keepalive (id 1)" in closed.reason and "§4.4" in closed.reason
        assert await within(good.request("greeting")) == b"hello"
        await within(good.aclose())


async def test_bad_intervals_are_refused() -> None:
    for bad in (0, -1.0, "15", True):
        with pytest.raises(ValueError, match="keepalive"):
            await serve("tcp://127.0.0.1:0", OFFER, keepalive=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="idle_timeout"):
            await connect("tcp://127.0.0.1:1", idle_timeout=bad)  # type: ignore[arg-type]


async def test_one_timer_callback_per_interval_however_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection that receives all the time costs one timer callback per interval, not per read:
    the timer is armed for the next deadline and finds recent traffic when it fires."""
    from rstreams.net._keepalive import Keepalive

    fired: list[float] = []
    original = Keepalive._fire

    def counting(self: Keepalive) -> None:
        fired.append(time.monotonic())
        original(self)

    monkeypatch.setattr(Keepalive, "_fire", counting)
    async with await serve("tcp://127.0.0.1:0", OFFER, keepalive=0.1, idle_timeout=None) as server:
        conn = await connect(server.url, keepalive=None)
        started = time.monotonic()
        requests = 0
        while time.monotonic() - started < 0.6:  # hundreds of reads on both sides
            assert await within(conn.request("greeting")) == b"hello"
            requests += 1
        await within(conn.aclose())
    assert requests > 50
    assert 3 <= len(fired) <= 10, fired  # about 0.6 / 0.1 on the server; none on the client


async def test_a_client_idle_timeout_ends_a_silent_server() -> None:
    """connect(idle_timeout=...): a server that sends its hello and then nothing is said goodbye to."""
    received = bytearray()
    done = asyncio.Event()

    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"\x02\x00\x00")  # serverHello, no extensions: no pings will come
        while data := await reader.read(65536):
            received.extend(data)
        done.set()
        writer.close()

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        conn = await connect(f"tcp://127.0.0.1:{port}", idle_timeout=0.2, keepalive=0.05)
        await within(done.wait())  # the client wrote its goodbye and ended its output
        assert conn.closed
        assert b"idle timeout: nothing received for 0.2 s" in received
        await within(conn.aclose())


async def test_a_peer_that_only_receives_is_not_idle() -> None:
    """A peer without keepalive that subscribed with unbounded demand sends nothing more, yet
    its stream flows: what the server writes counts as activity (§14.2)."""
    offer: dict[str, Any] = {
        "ticks": lambda params: rstreams.interval(0.02).map(lambda i: i.to_bytes(8, "big"))
    }
    async with await serve("tcp://127.0.0.1:0", offer, idle_timeout=0.3, keepalive=None) as server:
        peer = await RawPeer.open(server.url, extensions=())
        peer.send(Subscribe(publisher="ticks", subscriber=1, initial_demand=UNBOUNDED))
        started = time.monotonic()
        elements = 0
        while time.monotonic() - started < 1.0:  # three idle timeouts without a byte from the peer
            await peer.read_until(OnNext)
            elements += 1
        assert elements > 20 and not [e for e in peer.seen if isinstance(e, ConnectionClosed)]
        peer.close()


async def test_pings_are_not_activity() -> None:
    """A silent peer that lists keepalive (and never answers) is closed although the server pings it."""
    async with await serve("tcp://127.0.0.1:0", OFFER, idle_timeout=0.4, keepalive=0.05) as server:
        peer = await RawPeer.open(
            server.url, extensions=(KEEPALIVE.id,)
        )  # its core's pongs are never written
        closed = await peer.read_until(ConnectionClosed)
        pings = [e for e in peer.seen if isinstance(e, ExtensionReceived) and e.type == PING]
        assert len(pings) >= 3 and closed.reason.startswith("idle timeout")
        peer.close()
