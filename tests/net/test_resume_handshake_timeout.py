"""A server's handshake timeout counts from the transport's start, with ``resume=`` too (PROTOCOL.md §4.1).

A resumable server's accepted transport first waits for its first byte to tell a new session
from a resume (§16.3); a new session's connection is made then. The clientHello is still due
one ``handshake_timeout`` after the transport came up, not one after those first bytes: a peer
that sends the start of a hello just before the bound and then nothing is said goodbye at the
bound, as one that sends nothing is, and as without ``resume=``. On a virtual clock, through
memory transports.
"""

from __future__ import annotations

import asyncio

import pytest

from rstreams.net._pending import Pending
from rstreams.net._pump import Pump
from rstreams.net._resume import Resume, ResumeRegistry, resume_config
from rstreams.net._transport import TransportHandler
from rstreams.wire import ClientHello, ConnectionClosed, ServerHello, encode
from rstreams.wire._resume import RESUME, encode_message, encode_resume
from testkit.net import MemoryPeer, memory_pair, run_virtual

pytestmark = pytest.mark.timeout(60)

TIMEOUT = 4.0
HELLO = encode(ClientHello(extensions=()))
SENDS = {
    "nothing": b"",
    "one hello byte": HELLO[:1],
    "half a hello": HELLO[:2],
    "half a resume": encode_message(RESUME, encode_resume(bytes(16), 0))[:5],
}


def _handler(resume: bool) -> TransportHandler:
    """The handler a server gives an accepted transport (with ``resume=``: a resumption link)."""
    config = resume_config(None) if resume else None

    def driver() -> Pump:
        return Pump(client=False, offer={}, config=config, handshake_timeout=TIMEOUT)

    if resume:
        return ResumeRegistry(Resume(), driver, high=1 << 20, handshake_timeout=TIMEOUT).make_link()
    return Pending(driver, b"".join(driver().outbox.core.data_to_send()), TIMEOUT)


def _peer_sending(resume: bool, data: bytes, at: float) -> MemoryPeer:
    """A peer that reads the server's hello, sends ``data`` ``at`` seconds after the transport
    came up (loop time 0), then nothing; the server's timers all run out."""

    async def main() -> MemoryPeer:
        peer = MemoryPeer(hello=False)
        memory_pair(_handler(resume), peer)
        await asyncio.sleep(at)
        if data:
            peer.transport.writelines([data])
        await asyncio.sleep(3 * TIMEOUT)
        return peer

    return run_virtual(main)


@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
@pytest.mark.parametrize("sends", list(SENDS), ids=list(SENDS))
@pytest.mark.parametrize("at", [0.0, 0.5 * TIMEOUT, TIMEOUT - 0.001])
def test_the_goodbye_comes_one_handshake_timeout_after_the_start(resume: bool, sends: str, at: float) -> None:
    peer = _peer_sending(resume, SENDS[sends], at)
    assert len(peer.of(ServerHello)) == 1
    [closed] = peer.of(ConnectionClosed)
    assert closed.reason == f"handshake timeout (no clientHello within {TIMEOUT:g} s)"
    assert peer.time_of(ConnectionClosed) == TIMEOUT
    assert peer.closed_at is not None


@pytest.mark.parametrize("resume", [False, True], ids=["plain", "resume"])
def test_a_hello_completed_before_the_bound_is_served(resume: bool) -> None:
    """The rest of a hello begun before the bound, within it: no goodbye at the bound or later."""

    async def main() -> MemoryPeer:
        peer = MemoryPeer(hello=False)
        memory_pair(_handler(resume), peer)
        await asyncio.sleep(0.5 * TIMEOUT)
        peer.transport.writelines([HELLO[:1]])
        await asyncio.sleep(0.5 * TIMEOUT - 0.001)
        peer.transport.writelines([HELLO[1:]])
        await asyncio.sleep(3 * TIMEOUT)
        return peer

    peer = run_virtual(main)
    assert len(peer.of(ServerHello)) == 1
    assert peer.of(ConnectionClosed) == []
