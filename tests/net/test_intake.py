"""Input backpressure and fairness (rstreams.net._intake): on a virtual clock over memory transports.

A peer that never reads makes replies pile up in our transport; once the replies among the
unsent bytes pass the low-water mark we stop reading it (so it cannot make us answer more),
read again once they drain, and say goodbye after ``unread_timeout``. Elements are
bounded by production instead, so a slow reader of a stream is still read.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED
from rstreams.net import Connection
from rstreams.net._intake import HELD_EVERY, HELD_PART, MARK_SPACING, READ_TURN, Backlog, ReplyLedger
from rstreams.net._pending import Pending
from rstreams.net._pump import Pump
from rstreams.wire import (
    Cancel,
    ClientHello,
    ConnectionClosed,
    ExtensionMessage,
    ExtensionReceived,
    OnError,
    OnSubscribe,
    Request,
    ServerHello,
    Subscribe,
    encode,
)
from rstreams.wire.extensions import KEEPALIVE, PING, PONG
from testkit.net import (
    CountingSource,
    MemoryPeer,
    MemoryTransport,
    closed_after,
    connection,
    memory_pair,
    pump_of,
    run_virtual,
)

pytestmark = pytest.mark.timeout(30)

HIGH, LOW = 16 * 1024, 4 * 1024
PING_FRAME = encode(ExtensionMessage(type=PING, payload=bytes(8)))
OFFER: dict[str, Any] = {"greeting": rstreams.just(b"hello")}


def flooded(**options: Any) -> tuple[Connection, MemoryPeer, Any, Any]:
    """A server and a raw peer that lists keepalive, joined in memory with small water marks."""
    server = connection(client=False, offer=OFFER, high_water=HIGH, low_water=LOW, **options)
    peer = MemoryPeer(extensions=(KEEPALIVE.id,))
    server_side, peer_side = memory_pair(server, peer, high=HIGH, low=LOW)
    return server, peer, server_side, peer_side


def test_a_peer_that_never_reads_its_pongs_is_no_longer_read() -> None:
    """Pings flood in, pongs back up: reading stops once the unsent pongs pass the low-water mark,
    so what the server holds for the peer stays near that mark, however much the peer sends."""

    async def main() -> None:
        server, peer, server_side, peer_side = flooded()
        await asyncio.sleep(0.01)
        peer_side.pause_reading()  # the peer stops reading what the server sends
        for _ in range(200):
            peer.transport.writelines([PING_FRAME * 1000])  # 2 MiB of pings in all
            await asyncio.sleep(0.001)
        assert not server.closed
        assert LOW < server_side.size <= LOW + READ_TURN, server_side.size  # one turn's replies at most
        assert not server_side.reading  # the server stopped reading the peer
        assert peer.transport.size > 1024 * 1024  # the flood waits on the peer's side

    run_virtual(main)


def test_reading_resumes_once_the_peer_reads_again() -> None:
    """Once the pongs drain the server reads again and answers every ping, in order."""

    async def main() -> MemoryPeer:
        server, peer, server_side, peer_side = flooded()
        await asyncio.sleep(0.01)
        peer_side.pause_reading()
        peer.transport.writelines([PING_FRAME * 20_000])  # 360 KiB of pings
        await asyncio.sleep(0.1)
        assert not server_side.reading
        peer_side.resume_reading()
        await asyncio.sleep(1.0)
        assert server_side.reading and not server.closed
        return peer

    peer = run_virtual(main)
    assert len([e for e in peer.of(ExtensionReceived) if e.type == PONG]) == 20_000


def test_a_peer_that_leaves_its_replies_unread_is_said_goodbye() -> None:
    """unread_timeout after reading stopped: goodbye "peer not reading", and the transport is
    closed (aborted: the peer has not even read the goodbye)."""

    async def main() -> MemoryPeer:
        server, peer, _, peer_side = flooded(unread_timeout=5.0)
        await asyncio.sleep(0.01)
        peer_side.pause_reading()
        peer.transport.writelines([PING_FRAME * 20_000])
        assert not await closed_after(server, 4.9)
        assert await closed_after(server, 0.2)
        await asyncio.sleep(3.0)  # the lingering close (2 s) ends: the transport goes
        assert peer.closed_at is not None
        peer_side.resume_reading()
        return peer

    peer = run_virtual(main)
    assert not peer.of(ConnectionClosed)  # the goodbye was never read: the transport was aborted


def test_refusals_back_up_like_pongs() -> None:
    """Subscribes for names nobody serves, refusals never read: reading stops too (§5.5)."""

    async def main() -> None:
        server, peer, server_side, peer_side = flooded()
        await asyncio.sleep(0.01)
        peer_side.pause_reading()
        flood = b"".join(encode(Subscribe(publisher="nope", subscriber=i)) for i in range(1, 20_000))
        peer.transport.writelines([flood])
        await asyncio.sleep(1.0)
        assert LOW < server_side.size <= LOW + 8 * READ_TURN, server_side.size  # ~6x: ~60 B per 9 B
        assert not server_side.reading and not server.closed

    run_virtual(main)


def test_a_stream_backing_up_does_not_stop_reading() -> None:
    """Unsent elements are bounded by production, not by reading: a peer that takes a stream
    slowly is still read, so its cancel arrives (two endpoints streaming to each other never
    wait for each other to read)."""

    async def main() -> None:
        source = CountingSource(size=1024)
        server = connection(client=False, offer={"n": source}, high_water=HIGH, low_water=LOW)
        peer = MemoryPeer()
        server_side, peer_side = memory_pair(server, peer, high=HIGH, low=LOW)
        peer_side.pause_reading()
        peer.send(Subscribe(publisher="n", subscriber=1, initial_demand=UNBOUNDED))
        await asyncio.sleep(0.1)
        assert server_side.size > HIGH and not server.statistics().writable  # production paused
        assert server_side.reading
        peer.send(Cancel(subscriber=1))
        await asyncio.sleep(0.1)
        assert source.cancelled.is_set()

    run_virtual(main)


def test_a_client_facing_a_flooding_server_stops_reading_it_too() -> None:
    """The same on the client side: a server that floods subscribes (the client serves nothing,
    so each is refused) and never reads is no longer read once the refusals back up."""

    async def main() -> None:
        client = connection(client=True, high_water=HIGH, low_water=LOW)
        server = MemoryPeer(client=False)
        client_side, server_side = memory_pair(client, server, high=HIGH, low=LOW)
        await asyncio.sleep(0.01)
        server_side.pause_reading()
        flood = b"".join(encode(Subscribe(publisher="nope", subscriber=i)) for i in range(2, 40_000, 2))
        server.transport.writelines([flood])
        await asyncio.sleep(1.0)
        assert LOW < client_side.size <= LOW + 8 * READ_TURN, client_side.size
        assert not client_side.reading and not client.closed

    run_virtual(main)


class Neighbour:
    """Another connection busy every loop turn (a ping read, its pong written), so that the backlog
    hands out its rationed parts: while none is, it hands out growing parts every turn."""

    def __init__(self) -> None:
        server, self.peer, _, _ = flooded()
        self.pump = pump_of(server)
        self.loop = asyncio.get_running_loop()
        self.handle: Any = None

    def start(self) -> None:
        self.pump.data_received(memoryview(PING_FRAME))
        self.handle = self.loop.call_soon(self.start)

    def stop(self) -> None:
        self.handle.cancel()


def test_a_pipelining_peer_that_reads_its_replies_gets_a_turn_s_worth_beside_busy_connections() -> None:
    """Fairness without the ration for a peer that reads: a read of many small frames is handled
    READ_TURN bytes per loop turn, so other connections run in between; a peer that takes its
    replies gets the rest READ_TURN per turn too, as a connection read as its bytes come, while
    another connection is busy every turn (counted in loop turns: not HELD_PART every HELD_EVERY
    turns, which took 1,591 turns for these 20,000 bytes); every frame is handled, in order."""

    async def main() -> tuple[int, list[int], MemoryPeer]:
        # The default marks: a part's pongs (4.1 KB) do not stop reading it (the unread mark).
        server = connection(client=False, offer=OFFER)
        peer = MemoryPeer(extensions=(KEEPALIVE.id,))
        memory_pair(server, peer)
        neighbour = Neighbour()
        await asyncio.sleep(0.01)
        neighbour.start()
        frames = [encode(ExtensionMessage(type=PING, payload=i.to_bytes(8, "big"))) for i in range(2_000)]
        data = b"".join(frames)  # 20,000 bytes: five turns' worth at once
        before = len(peer.events)
        pump_of(server).data_received(memoryview(data))
        handled: list[int] = []
        turns = 0
        while len(peer.events) - before < 2_000 and turns < 10_000:
            await asyncio.sleep(0)  # one loop turn: the pongs written so far arrive
            turns += 1
            handled.append(len(peer.events) - before)
        neighbour.stop()
        return turns, handled, peer

    turns, handled, peer = run_virtual(main)
    per_turn = READ_TURN // len(PING_FRAME) + 1
    assert 0 < handled[0] <= per_turn  # the first turn's part only
    assert turns <= 20_000 // READ_TURN + 3, turns  # a part per turn (and a turn for the last pongs)
    assert max(b - a for a, b in itertools.pairwise(handled)) <= per_turn  # READ_TURN at most per turn
    pongs = [int.from_bytes(e.payload, "big") for e in peer.of(ExtensionReceived)]
    assert pongs == list(range(2_000))


def unread(**options: Any) -> tuple[Pump, MemoryTransport]:
    """A server and a raw peer that lists keepalive, joined in memory, with a mark of 8 KiB for
    unread replies (a part's pongs, 4.1 KB, are more than a quarter of it, not past it); the
    peer does not read."""
    server = connection(client=False, offer=OFFER, high_water=4 * HIGH, low_water=2 * LOW, **options)
    peer = MemoryPeer(extensions=(KEEPALIVE.id,))
    _, peer_side = memory_pair(server, peer, high=4 * HIGH, low=2 * LOW)
    peer_side.pause_reading()
    return pump_of(server), peer_side


def test_a_peer_that_leaves_its_replies_unread_gets_the_ration_beside_busy_connections() -> None:
    """A peer that pipelines the same frames but does not read its replies: once they wait unsent
    (more than a quarter of the mark), the rest of its read gets HELD_PART bytes at most every
    HELD_EVERY turns while another connection is busy, until it reads again; then all of it is
    handled, in order."""

    async def main() -> tuple[list[int], MemoryPeer]:
        pump, peer_side = unread()
        peer = peer_side.handler
        neighbour = Neighbour()
        await asyncio.sleep(0.01)
        neighbour.start()
        data = b"".join(
            encode(ExtensionMessage(type=PING, payload=i.to_bytes(8, "big"))) for i in range(2_000)
        )
        pump.data_received(memoryview(data))
        written = [pump.outbox.ledger.written]
        for _ in range(40):
            await asyncio.sleep(0)
            written.append(pump.outbox.ledger.written)
        peer_side.resume_reading()
        for _ in range(100):
            if len(peer.of(ExtensionReceived)) == 2_000:
                break
            await asyncio.sleep(0)
        neighbour.stop()
        return [b - a for a, b in itertools.pairwise(written)], peer

    steps, peer = run_virtual(main)
    per_part = (HELD_PART // len(PING_FRAME) + 1) * len(PING_FRAME)  # bytes of pongs a part answers
    assert 0 < sum(steps) <= 40 // HELD_EVERY * per_part, steps  # a part every other turn at most
    assert max(steps) <= per_part
    pongs = [int.from_bytes(e.payload, "big") for e in peer.of(ExtensionReceived)]
    assert pongs == list(range(2_000))  # read again: all of it


def test_a_big_read_alone_is_handled_in_few_turns() -> None:
    """Work-conserving: while no other connection is busy, the held rest of a big read gets a part
    every loop turn, twice as long as the last up to READ_TURN, so a peer alone that pipelines
    many small messages is served in about as many turns as READ_TURN parts (counted in loop
    turns: not a part of HELD_PART every HELD_EVERY turns)."""

    async def main() -> tuple[int, list[int], MemoryPeer]:
        # The default marks: a part's pongs (4.5 KB) do not stop reading it (the unread mark).
        server = connection(client=False, offer=OFFER)
        peer = MemoryPeer(extensions=(KEEPALIVE.id,))
        memory_pair(server, peer)
        await asyncio.sleep(0.01)
        frames = [encode(ExtensionMessage(type=PING, payload=i.to_bytes(8, "big"))) for i in range(10_000)]
        data = b"".join(frames)  # 110,000 bytes
        before = len(peer.events)
        pump_of(server).data_received(memoryview(data))
        handled: list[int] = []
        turns = 0
        while len(peer.events) - before < 10_000 and turns < 10_000:
            await asyncio.sleep(0)
            turns += 1
            handled.append(len(peer.events) - before)
        return turns, handled, peer

    turns, handled, peer = run_virtual(main)
    ramp = (READ_TURN // HELD_PART).bit_length()  # parts that double up to READ_TURN
    assert turns <= 110_000 // READ_TURN + ramp + 4, turns  # 37 turns, not about 14,000
    steps = [b - a for a, b in itertools.pairwise(handled)]
    assert max(steps) <= READ_TURN // len(PING_FRAME) + 1  # still READ_TURN at most per turn
    pongs = [int.from_bytes(e.payload, "big") for e in peer.of(ExtensionReceived)]
    assert pongs == list(range(10_000))


def test_a_peer_that_outruns_its_turns_waits_for_a_turn_with_every_read() -> None:
    """Once a read left a rest held, the peer's later reads are not handled in their read
    callback (not even a first part): each waits for a loop turn, until a read that fits
    the part it gets shows the peer keeps to its turns again; then its reads are handled as
    they come."""

    async def main() -> None:
        server, peer, _, _ = flooded()
        neighbour = Neighbour()
        await asyncio.sleep(0.01)
        neighbour.start()
        pump = pump_of(server)
        ledger = pump.outbox.ledger
        pump.data_received(memoryview(PING_FRAME * 1000))  # one part now, the rest held
        for _ in range(20):
            await asyncio.sleep(0)
        assert len(peer.of(ExtensionReceived)) == 1000  # all of it handled, a turn's worth a turn
        written = ledger.written
        pump.data_received(memoryview(PING_FRAME * 10))  # held, not handled now
        assert ledger.written == written
        await asyncio.sleep(0)  # its turn: handled, and it fitted the part
        assert ledger.written == written + 10 * len(PING_FRAME)
        pump.data_received(memoryview(PING_FRAME * 100))  # read at once
        assert ledger.written == written + 110 * len(PING_FRAME)
        neighbour.stop()

    run_virtual(main)


def test_requests_for_unknown_ids_are_read_on() -> None:
    """What needs no reply (a request for no open subscription) never stops reading."""

    async def main() -> None:
        server, peer, server_side, peer_side = flooded()
        await asyncio.sleep(0.01)
        peer_side.pause_reading()
        peer.transport.writelines([encode(Request(subscriber=7, demand=1)) * 100_000])
        await asyncio.sleep(0.5)
        assert server_side.reading and server_side.size < HIGH and not server.closed
        assert peer.transport.size == 0  # all of it was read (and ignored)

    run_virtual(main)


def test_the_ledger_counts_only_unsent_replies() -> None:
    ledger = ReplyLedger(mark=150)
    ledger.wrote(100, more=False)  # 100 bytes of replies
    ledger.element_bytes += MARK_SPACING
    ledger.wrote(MARK_SPACING + 100, more=False)  # elements, and 100 bytes of replies
    # 200 replies not yet known to be sent (one assert: mypy would keep may_pass_mark narrowed to True)
    assert (ledger.may_pass_mark, ledger.unsent_replies(MARK_SPACING + 200)) == (True, 200)
    assert ledger.unsent_replies(MARK_SPACING + 100) == 100  # the first write went out
    assert ledger.unsent_replies(MARK_SPACING + 99) == 100  # unsent until all of the write is
    assert ledger.unsent_replies(50) == 50  # never more than what is unsent
    assert ledger.unsent_replies(0) == 0
    assert not ledger.may_pass_mark
    ledger.element_bytes += 5000
    ledger.wrote(1000, more=True)  # parts of a split element: the rest of its bytes come later
    ledger.wrote(1000, more=False)
    assert ledger.unsent_replies(2000) == 0


def test_small_writes_share_the_ledgers_marks() -> None:
    """A peer answered in many small writes costs the ledger one mark per MARK_SPACING bytes;
    the replies of writes that share a mark count as unsent until the last of them is sent."""
    ledger = ReplyLedger(mark=1 << 30)
    for _ in range(10_000):
        ledger.wrote(66, more=False)  # a few pongs per write
    written = 10_000 * 66
    assert len(ledger._marks) <= written // MARK_SPACING + 1
    assert ledger.unsent_replies(written) == written
    assert ledger.unsent_replies(100) == 100  # the last mark's writes: unsent until all are sent
    assert ledger.unsent_replies(0) == 0


def test_a_write_after_all_replies_went_out_opens_a_mark() -> None:
    """Once the open mark's writes were sent, a write close behind them counts on its own."""
    ledger = ReplyLedger(mark=1 << 30)
    ledger.wrote(100, more=False)
    assert ledger.unsent_replies(0) == 0  # all of it went out
    ledger.wrote(50, more=False)
    assert ledger.unsent_replies(50) == 50
    ledger.element_bytes += 3000
    ledger.wrote(3000, more=False)  # elements only: no mark
    assert ledger.unsent_replies(3000) == 0  # the 50 bytes of replies went out
    assert ledger.unsent_replies(0) == 0


def test_every_subscribe_is_answered_across_a_pause() -> None:
    """Each subscribe gets its one refusal, and the refusals of one kind keep subscribe order,
    across a pause in reading."""

    async def main() -> MemoryPeer:
        _, peer, server_side, peer_side = flooded()
        await asyncio.sleep(0.01)
        peer_side.pause_reading()
        peer.send(*(Subscribe(publisher="nope", subscriber=i) for i in range(1, 5000)))  # through its core
        await asyncio.sleep(0.5)
        assert not server_side.reading
        peer_side.resume_reading()
        await asyncio.sleep(1.0)
        return peer

    errors = run_virtual(main).of(OnError)
    assert sorted(e.subscriber for e in errors) == list(range(1, 5000))
    unknown = [e.subscriber for e in errors if e.error.startswith("no publisher")]
    assert len(unknown) > 1000 and unknown == sorted(unknown)


def test_a_connection_is_made_only_once_its_hello_is_whole() -> None:
    """Before its clientHello an accepted transport is held by a Pending handler: the server's
    hello goes out at once, the connection (its pump) is made when the hello is whole."""
    made: list[Pump] = []

    def make() -> Pump:
        pump = Pump(client=False, offer=OFFER)
        made.append(pump)
        return pump

    async def main() -> MemoryPeer:
        server_hello = b"".join(Pump(client=False, offer=OFFER).outbox.core.data_to_send())
        pending = Pending(make, server_hello, timeout=10.0)
        peer = MemoryPeer(hello=False)
        memory_pair(pending, peer)
        hello = encode(ClientHello(extensions=(KEEPALIVE.id,)))
        await asyncio.sleep(0.1)
        peer.transport.writelines([hello[:1]])
        await asyncio.sleep(1.0)
        assert made == []  # one byte of a hello: still pending
        peer.core.send(Subscribe(publisher="greeting", subscriber=1))  # its core knows the stream
        peer.transport.writelines([hello[1:], *peer.core.data_to_send()])
        await asyncio.sleep(0.1)
        assert len(made) == 1 and made[0].outbox.core.peer_hello is not None
        return peer

    peer = run_virtual(main)
    assert peer.of(ServerHello) and peer.of(OnSubscribe)  # one hello, then the stream


def test_a_pending_connection_hands_its_transport_over_to_the_pump_once_made() -> None:
    made: list[Pump] = []

    def make() -> Pump:
        pump = Pump(client=False, offer=OFFER)
        made.append(pump)
        return pump

    async def main() -> tuple[object, object, MemoryPeer]:
        server_hello = b"".join(Pump(client=False, offer=OFFER).outbox.core.data_to_send())
        pending = Pending(make, server_hello, timeout=10.0)
        peer = MemoryPeer(hello=False)
        transport, _ = memory_pair(pending, peer)
        hello = encode(ClientHello())
        peer.transport.writelines([hello[:1]])
        await asyncio.sleep(0.1)
        before = transport.handler  # one byte of a hello: still pending
        peer.core.send(Subscribe(publisher="greeting", subscriber=1))
        peer.transport.writelines([hello[1:], *peer.core.data_to_send()])
        await asyncio.sleep(0.1)
        assert before is pending
        return transport.handler, made[0], peer

    handler, pump, peer = run_virtual(main)
    assert handler is pump  # its reads go to the pump, not through the pending handler
    assert peer.of(ServerHello) and peer.of(OnSubscribe)


def test_a_pending_connection_gets_the_handshake_goodbye() -> None:
    async def main() -> MemoryPeer:
        server_hello = b"".join(Pump(client=False, offer=OFFER).outbox.core.data_to_send())
        pending = Pending(lambda: Pump(client=False, offer=OFFER, handshake_timeout=0.5), server_hello, 0.5)
        peer = MemoryPeer(hello=False)
        memory_pair(pending, peer)
        peer.transport.writelines([b"\x01"])
        await asyncio.sleep(1.0)
        return peer

    peer = run_virtual(main)
    [closed] = peer.of(ConnectionClosed)
    assert closed.reason == "handshake timeout (no clientHello within 0.5 s)"
    assert peer.time_of(ConnectionClosed) == pytest.approx(0.5)
    assert len(peer.of(ServerHello)) == 1


def test_held_reads_of_many_connections_share_one_part_every_other_turn() -> None:
    """However many peers flood at once and leave their replies unread, their held rests together
    get one part every HELD_EVERY loop turns while another connection is busy."""

    async def main() -> list[int]:
        pumps = [unread()[0] for _ in range(4)]
        neighbour = Neighbour()
        await asyncio.sleep(0.01)
        neighbour.start()
        for pump in pumps:
            pump.data_received(memoryview(PING_FRAME * 2000))  # each: one part now, the rest held
        await asyncio.sleep(0)
        first = [pump.outbox.ledger.written for pump in pumps]
        for _ in range(8):
            await asyncio.sleep(0)
        later = [pump.outbox.ledger.written for pump in pumps]
        assert Backlog.of(asyncio.get_running_loop()) is Backlog.of(asyncio.get_running_loop())
        neighbour.stop()
        return [b - a for a, b in zip(first, later, strict=True)]

    progress = run_virtual(main)
    per_part = (HELD_PART // len(PING_FRAME) + 1) * len(PING_FRAME)
    assert 0 < sum(progress) <= 8 // HELD_EVERY * per_part  # eight turns: four held parts in all, not 32
