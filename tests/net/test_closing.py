"""How a connection ends: the handshake timeout and the lingering close after an error goodbye,
on a virtual clock over memory transports (every timer fires at its exact time, nothing sleeps)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rstreams
from rstreams.net._closing import LINGER_BYTES, LINGER_SECONDS
from rstreams.wire import ConnectionClosed, OnSubscribe, Subscribe, encode
from testkit.net import MemoryPeer, closed_after, connection, memory_pair, pump_of, run_virtual

pytestmark = pytest.mark.timeout(30)

OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello")}


def test_a_silent_peer_is_said_goodbye_at_the_handshake_timeout() -> None:
    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER, handshake_timeout=0.5)
        peer = MemoryPeer(hello=False)
        memory_pair(server, peer)
        assert not await closed_after(server, 0.49)
        assert await closed_after(server, 0.02)
        return peer

    peer = run_virtual(main)
    [closed] = peer.of(ConnectionClosed)
    assert closed.reason == "handshake timeout (no clientHello within 0.5 s)"
    assert peer.time_of(ConnectionClosed) == pytest.approx(0.5)


def test_the_handshake_timer_stops_at_the_hello() -> None:
    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER, handshake_timeout=0.5)
        peer = MemoryPeer()
        memory_pair(server, peer)
        await asyncio.sleep(5.0)
        assert not server.closed
        return peer

    assert run_virtual(main).of(ConnectionClosed) == []


def test_a_client_that_says_hello_is_not_timed_out() -> None:
    """The hello cancels the timer: the connection outlives the timeout and keeps serving
    (the real client's hello arrives at time 0 here, however loaded the machine is)."""

    async def main() -> None:
        server = connection(client=False, offer=OFFER, handshake_timeout=0.1)
        client = connection(client=True)
        memory_pair(client, server)
        assert await asyncio.wait_for(client.request("greeting"), 10) == b"hello"
        assert not await closed_after(server, 0.3)  # the timer would have fired at 0.1
        assert await asyncio.wait_for(client.request("greeting"), 10) == b"hello"
        assert not client.closed

    run_virtual(main)


def test_after_an_error_goodbye_input_is_discarded_until_the_linger_ends() -> None:
    """A peer that breaks the protocol gets the goodbye at once; its transport is closed only
    LINGER_SECONDS later (so that the goodbye is read, not reset away), whatever it sends meanwhile."""

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER)
        peer = MemoryPeer()
        memory_pair(server, peer)
        await asyncio.sleep(0.1)
        peer.transport.writelines([b"\x7f"])  # a reserved type byte
        await asyncio.sleep(1.0)
        assert server.closed and peer.closed_at is None  # lingering: still reading
        peer.transport.writelines([encode(Subscribe(publisher="greeting", subscriber=1, initial_demand=1))])
        await asyncio.sleep(LINGER_SECONDS)
        return peer

    peer = run_virtual(main)
    [closed] = peer.of(ConnectionClosed)
    assert "0x7f" in closed.reason  # the goodbye that explains the close
    assert peer.of(OnSubscribe) == []  # the subscribe sent while lingering was not served
    assert peer.time_of(ConnectionClosed) == pytest.approx(0.1)
    assert peer.closed_at == pytest.approx(0.1 + LINGER_SECONDS)


@pytest.mark.parametrize("tail", [b"", b"\x01"], ids=["without-goodbye", "inside-a-frame"])
def test_a_goodbye_for_the_end_of_input_closes_at_once(tail: bytes) -> None:
    """Input that ends without a goodbye, or inside a frame (§9.3), gets the goodbye that says
    so, and the transport closes at once: the peer's input is over, nothing is left to linger
    for (the linger ends at the peer's end of input, and this goodbye is for that very end)."""

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER)
        peer = MemoryPeer()
        memory_pair(server, peer)
        await asyncio.sleep(0.1)
        peer.transport.writelines([tail])
        await asyncio.sleep(0.1)
        pump_of(server).eof_received()  # (a memory transport cannot half-close: its end of input)
        await asyncio.sleep(LINGER_SECONDS)
        return peer

    peer = run_virtual(main)
    [closed] = peer.of(ConnectionClosed)
    assert "input ended" in closed.reason and "§9.3" in closed.reason
    assert peer.closed_at == pytest.approx(0.2)


def test_the_linger_ends_early_once_enough_input_was_discarded() -> None:
    """A peer that floods after the goodbye is cut off after LINGER_BYTES, not LINGER_SECONDS."""

    async def main() -> MemoryPeer:
        server = connection(client=False, offer=OFFER)
        peer = MemoryPeer()
        memory_pair(server, peer)
        await asyncio.sleep(0.1)
        peer.transport.writelines([b"\x7f"])
        await asyncio.sleep(0.1)
        for _ in range(LINGER_BYTES // (64 * 1024) + 1):
            peer.transport.writelines([bytes(64 * 1024)])
        await asyncio.sleep(0.1)
        return peer

    peer = run_virtual(main)
    assert peer.closed_at == pytest.approx(0.2)


def test_aclose_before_the_peers_hello_does_not_wait_for_a_goodbye() -> None:
    """A peer that never sent its hello may not speak RS.io at all (§9.1): the goodbye is
    written and the transport closed at once, not after CLOSE_TIMEOUT."""

    async def main() -> tuple[MemoryPeer, float]:
        client = connection(client=True)
        peer = MemoryPeer(client=False, hello=False)
        memory_pair(client, peer)
        await asyncio.sleep(0.1)
        await client.aclose("leaving")
        return peer, asyncio.get_running_loop().time()

    peer, done = run_virtual(main)
    assert done == pytest.approx(0.1)
    [closed] = peer.of(ConnectionClosed)
    assert closed.reason == "leaving"
    assert peer.closed_at == pytest.approx(0.1)


def test_aclose_after_the_peers_hello_waits_for_its_goodbye() -> None:
    """Once the hello has arrived the peer speaks RS.io: its answer is awaited (here it never
    comes, so for the whole timeout)."""

    async def main() -> float:
        client = connection(client=True)
        memory_pair(client, MemoryPeer(client=False))
        await asyncio.sleep(0.1)
        await client.aclose("leaving", timeout=3.0)
        return asyncio.get_running_loop().time()

    assert run_virtual(main) == pytest.approx(3.1)


def test_a_violation_instead_of_the_answer_to_our_goodbye_is_lingered_over() -> None:
    """After our goodbye a peer that breaks the protocol instead of answering is read and
    discarded for LINGER_SECONDS, as after any error goodbye (§9.1), not closed on at once with
    its bytes unread (which resets a TCP connection and can take our goodbye from the peer);
    aclose() returns when the linger ends, within its timeout."""

    async def main() -> tuple[MemoryPeer, float]:
        client = connection(client=True)
        peer = MemoryPeer(client=False)
        memory_pair(client, peer)
        await asyncio.sleep(0.1)
        closing = asyncio.ensure_future(client.aclose("leaving", timeout=5.0))
        await asyncio.sleep(0.1)
        peer.transport.writelines([b"\x7f"])  # a reserved type byte, not the answer
        await asyncio.sleep(1.0)
        assert peer.closed_at is None and not closing.done()  # lingering: still reading
        peer.transport.writelines([bytes(1000)])
        await closing
        return peer, asyncio.get_running_loop().time()

    peer, done = run_virtual(main)
    [closed] = peer.of(ConnectionClosed)
    assert closed.reason == "leaving"
    assert peer.closed_at == pytest.approx(0.2 + LINGER_SECONDS)
    assert done == pytest.approx(0.2 + LINGER_SECONDS)


def test_aclose_takes_its_timeout_in_all_even_when_the_transport_is_slow_to_close() -> None:
    """No answer, and a transport whose close() does not finish (its peer reads nothing, so the
    goodbye's bytes never drain): aborted when the one timeout is up, not after a second one."""

    async def main() -> tuple[float, bool]:
        client = connection(client=True)
        transport, _ = memory_pair(client, MemoryPeer(client=False))
        transport.close = lambda: setattr(transport, "closing", True)  # type: ignore[method-assign]
        await asyncio.sleep(0.1)
        await client.aclose("leaving", timeout=3.0)
        return asyncio.get_running_loop().time(), transport.lost

    done, aborted = run_virtual(main)
    assert aborted
    assert done == pytest.approx(3.1)


@pytest.mark.timeout(30)
def test_input_ended_before_the_hello_suggests_another_scheme() -> None:
    """A server that closes without a word (a WebSocket server reached with tcp://, anything
    that is not RS.io on that scheme): the streams' error says what that usually means."""
    from rstreams.net._closing import NOT_RSIO_HINT
    from testkit.net import broken_stream_from

    def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    async def main() -> str:
        broken, _ = await broken_stream_from(asyncio.start_server(hang_up, "127.0.0.1", 0))
        return str(broken)

    said = asyncio.run(main())
    # the end of input, or a reset or broken pipe when the hello was written to a closed socket
    assert said.endswith(f" before its hello; {NOT_RSIO_HINT}"), said
