"""Keepalive pings and the idle timeout (PROTOCOL.md §14), on a virtual clock over memory transports.

Every timer fires at its exact virtual time (``run_virtual``): the assertions name the moment
something must happen, and no test waits for real time to pass.
"""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED
from rstreams.errors import ConnectionBrokenError
from rstreams.net import DEFAULT_IDLE_TIMEOUT, DEFAULT_KEEPALIVE, connect, serve
from rstreams.net._keepalive import Keepalive
from rstreams.wire import ConnectionClosed, ExtensionMessage, ExtensionReceived, OnNext, Subscribe
from rstreams.wire.extensions import KEEPALIVE, PING, PONG
from testkit.net import MemoryPeer, closed_after, connection, memory_pair, run_virtual

pytestmark = pytest.mark.timeout(30)

OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello")}


def test_defaults_are_exported() -> None:
    assert (DEFAULT_KEEPALIVE, DEFAULT_IDLE_TIMEOUT) == (15.0, 60.0)


@pytest.mark.parametrize("hello", [True, False])
def test_a_silent_peer_is_said_goodbye_at_the_idle_timeout(hello: bool) -> None:
    """A peer that sends (at most) its hello, then nothing: goodbye "idle timeout" at exactly 0.3 s."""

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER, idle_timeout=0.3)
        peer = MemoryPeer(hello=hello)
        memory_pair(server, peer)
        await asyncio_sleep(5.0)
        assert server.closed
        return peer

    peer = run_virtual(main)
    [closed] = peer.of(ConnectionClosed)
    assert closed.reason == "idle timeout: nothing received for 0.3 s (PROTOCOL.md §14.2)"
    assert peer.time_of(ConnectionClosed) == pytest.approx(0.3)


def test_an_idle_client_with_keepalive_stays_connected() -> None:
    """The client pings every 0.05 s: the server, whose idle timeout is 0.3 s, keeps it for 10 s."""

    async def main() -> None:
        server = connection(client=False, offer=OFFER, idle_timeout=0.3)
        client = connection(client=True, keepalive=0.05)
        memory_pair(server, client)
        await asyncio_sleep(10.0)
        assert not client.closed and not server.closed
        assert await client.request("greeting") == b"hello"
        await client.aclose()

    run_virtual(main)


def test_the_servers_pings_keep_a_client_that_does_not_ping() -> None:
    """A client with keepalive=None still answers the server's pings, which keep it alive."""

    async def main() -> None:
        server = connection(client=False, offer=OFFER, idle_timeout=0.3, keepalive=0.05)
        client = connection(client=True)
        memory_pair(server, client)
        await asyncio_sleep(10.0)
        assert not client.closed and not server.closed
        assert await client.request("greeting") == b"hello"
        await client.aclose()

    run_virtual(main)


def test_without_keepalive_an_idle_client_is_closed() -> None:
    """Neither side pings: the server's idle timeout ends the connection at 0.2 s; the client's
    streams then fail with the reason."""

    async def main() -> None:
        server = connection(client=False, offer=OFFER, idle_timeout=0.2)
        client = connection(client=True)
        memory_pair(server, client)
        assert not await closed_after(client, 0.19)
        assert await closed_after(client, 0.02)
        with pytest.raises(ConnectionBrokenError, match="idle timeout"):
            await client.request("greeting")

    run_virtual(main)


def test_ping_is_answered_with_the_same_bytes() -> None:
    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER)
        peer = MemoryPeer(extensions=(KEEPALIVE.id,))
        memory_pair(server, peer)
        await asyncio_sleep(0.01)
        peer.send(ExtensionMessage(type=PING, payload=b"12345678"))
        await asyncio_sleep(0.01)
        return peer

    peer = run_virtual(main)
    assert peer.of(ExtensionReceived) == [ExtensionReceived(type=PONG, payload=b"12345678")]


def test_the_server_pings_a_silent_peer_that_offers_keepalive() -> None:
    """The first ping goes out one interval after the last read (the hello, at 0)."""

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER, keepalive=0.05)
        peer = MemoryPeer(extensions=(KEEPALIVE.id,))
        memory_pair(server, peer)
        await asyncio_sleep(0.06)
        return peer

    peer = run_virtual(main)
    [ping] = peer.of(ExtensionReceived)
    assert ping.type == PING and len(ping.payload) == 8
    assert peer.time_of(ExtensionReceived) == pytest.approx(0.05)


def test_ping_before_the_extension_is_active_gets_a_goodbye() -> None:
    """The peer's hello does not list keepalive: its ping is a connection error citing §4.4."""

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER)
        peer = MemoryPeer(extensions=())
        memory_pair(server, peer)
        await asyncio_sleep(0.01)
        peer.send(ExtensionMessage(type=PING, payload=bytes(8)))
        await asyncio_sleep(0.01)
        return peer

    [closed] = run_virtual(main).of(ConnectionClosed)
    assert "0x80" in closed.reason and "keepalive (id 1)" in closed.reason and "§4.4" in closed.reason


@pytest.mark.asyncio
async def test_bad_intervals_are_refused() -> None:
    for bad in (0, -1.0, "15", True):
        with pytest.raises(ValueError, match="keepalive"):
            await serve("tcp://127.0.0.1:0", OFFER, keepalive=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="idle_timeout"):
            await connect("tcp://127.0.0.1:1", idle_timeout=bad)  # type: ignore[arg-type]


def test_one_timer_callback_per_interval_however_busy(monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection that receives all the time costs one timer callback per interval, not per read:
    the timer is armed for the next deadline and finds recent traffic when it fires."""
    fired: list[float] = []
    original = Keepalive._fire

    def counting(self: Keepalive) -> None:
        fired.append(self._loop.time())
        original(self)

    monkeypatch.setattr(Keepalive, "_fire", counting)

    async def main() -> None:
        server = connection(client=False, offer=OFFER, keepalive=0.1)
        client = connection(client=True)
        memory_pair(server, client)
        for _ in range(60):  # a request every 10 ms for 0.6 s: 60 reads on each side
            assert await client.request("greeting") == b"hello"
            await asyncio_sleep(0.01)
        await client.aclose()

    run_virtual(main)
    assert 5 <= len(fired) <= 7, fired  # about 0.6 / 0.1 on the server; the client has no timer


def test_a_client_idle_timeout_ends_a_silent_server() -> None:
    """connect(idle_timeout=...): a server that sends its hello and then nothing is said goodbye to."""

    async def main() -> MemoryPeer:
        client = connection(client=True, idle_timeout=0.2, keepalive=0.05)
        server = MemoryPeer(client=False)  # its hello lists no keepalive: no pings will come
        memory_pair(client, server)
        await asyncio_sleep(1.0)
        assert client.closed
        return server

    server = run_virtual(main)
    [closed] = server.of(ConnectionClosed)
    assert closed.reason.startswith("idle timeout: nothing received for 0.2 s")
    assert server.time_of(ConnectionClosed) == pytest.approx(0.2)


def test_a_peer_that_only_receives_is_not_idle() -> None:
    """A peer without keepalive that subscribed with unbounded demand sends nothing more, yet
    its stream flows: what the server writes counts as activity (§14.2)."""
    offer: dict[str, Any] = {
        "ticks": lambda params: rstreams.interval(0.02).map(lambda i: i.to_bytes(8, "big"))
    }

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=offer, idle_timeout=0.3)
        peer = MemoryPeer()
        memory_pair(server, peer)
        peer.send(Subscribe(publisher="ticks", subscriber=1, initial_demand=UNBOUNDED))
        await asyncio_sleep(1.0)  # three idle timeouts without a byte from the peer
        assert not server.closed
        return peer

    peer = run_virtual(main)
    assert len(peer.of(OnNext)) >= 45 and not peer.of(ConnectionClosed)


def test_pings_are_not_activity() -> None:
    """A silent peer that lists keepalive (and never answers) is closed although the server pings it."""

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER, idle_timeout=0.4, keepalive=0.05)
        peer = MemoryPeer(extensions=(KEEPALIVE.id,))  # its core's pongs are never written
        memory_pair(server, peer)
        await asyncio_sleep(1.0)
        return peer

    peer = run_virtual(main)
    pings = [e for e in peer.of(ExtensionReceived) if e.type == PING]
    [closed] = peer.of(ConnectionClosed)
    assert len(pings) >= 6 and closed.reason.startswith("idle timeout")
    assert peer.time_of(ConnectionClosed) == pytest.approx(0.4)


async def asyncio_sleep(seconds: float) -> None:
    """Let ``seconds`` of virtual time pass."""
    import asyncio

    await asyncio.sleep(seconds)
