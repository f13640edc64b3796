"""A server's keepalive, idle and linger timers run from the moments PROTOCOL.md states.

§14.1: a ping when nothing was received for ``keepalive`` seconds, at most one per interval;
§14.2: goodbye ``idle timeout`` when nothing was received for ``idle_timeout`` seconds (a ping
of ours is not activity); §9.1/§10: after that error goodbye the transport is closed once the
linger's bound (:data:`LINGER_SECONDS`) passes with the peer neither closing nor sending. The
peer's hello is what it last sent, so every timer counts from it, whenever it came (the server
made the connection then, from a pending transport or, with ``resume=``, a resumption link).
On a virtual clock, through memory transports; the peer never answers a ping.
"""

from __future__ import annotations

import asyncio

import pytest

from rstreams.net._closing import LINGER_SECONDS
from rstreams.net._pending import Pending
from rstreams.net._pump import Pump
from rstreams.net._resume import Resume, ResumeRegistry, resume_config
from rstreams.net._transport import TransportHandler
from rstreams.wire import ClientHello, ConnectionClosed, ExtensionReceived, Goodbye, encode
from rstreams.wire.extensions import KEEPALIVE, PING
from testkit.net import MemoryPeer, memory_pair, run_virtual

pytestmark = pytest.mark.timeout(60)

HANDSHAKE = 2.0
KEEPALIVE_INTERVAL = 3.0
IDLE = 7.0


def _handler(resume: bool) -> TransportHandler:
    config = resume_config(None) if resume else None

    def driver() -> Pump:
        return Pump(
            client=False,
            offer={},
            config=config,
            handshake_timeout=HANDSHAKE,
            keepalive=KEEPALIVE_INTERVAL,
            idle_timeout=IDLE,
        )

    if resume:
        return ResumeRegistry(Resume(), driver, high=1 << 20, handshake_timeout=HANDSHAKE).make_link()
    return Pending(driver, b"".join(driver().outbox.core.data_to_send()), HANDSHAKE)


@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
@pytest.mark.parametrize("hello_at", [0.0, 1.5])
def test_pings_idle_goodbye_and_linger_count_from_the_hello(resume: bool, hello_at: float) -> None:
    async def main() -> MemoryPeer:
        peer = MemoryPeer(hello=False, extensions=(KEEPALIVE.id,))
        memory_pair(_handler(resume), peer)
        await asyncio.sleep(hello_at)
        peer.transport.writelines([encode(ClientHello(extensions=(KEEPALIVE.id,)))])
        await asyncio.sleep(3 * IDLE)
        return peer

    peer = run_virtual(main)
    pings = [
        at for event, at in zip(peer.events, peer.times, strict=True) if isinstance(event, ExtensionReceived)
    ]
    assert all(event.type == PING for event in peer.of(ExtensionReceived))
    assert pings == [hello_at + KEEPALIVE_INTERVAL, hello_at + 2 * KEEPALIVE_INTERVAL]
    [goodbye] = peer.of(Goodbye)
    assert goodbye.reason == f"idle timeout: nothing received for {IDLE:g} s (PROTOCOL.md §14.2)"
    assert peer.time_of(ConnectionClosed) == hello_at + IDLE
    assert peer.closed_at == hello_at + IDLE + LINGER_SECONDS


@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
def test_a_silent_peer_is_closed_a_linger_after_the_handshake_goodbye(resume: bool) -> None:
    async def main() -> MemoryPeer:
        peer = MemoryPeer(hello=False)
        memory_pair(_handler(resume), peer)
        await asyncio.sleep(3 * IDLE)
        return peer

    peer = run_virtual(main)
    [goodbye] = peer.of(Goodbye)
    assert goodbye.reason == f"handshake timeout (no clientHello within {HANDSHAKE:g} s)"
    assert peer.time_of(ConnectionClosed) == HANDSHAKE
    assert peer.closed_at == HANDSHAKE + LINGER_SECONDS
