"""The connection driver over an in-memory transport: coalescing and the output budget, exactly."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED
from rstreams._cli_publishers import builtin_publishers
from rstreams.net import Connection, fixed_size, with_codec
from rstreams.net._serving import MAX_BATCH
from testkit.bound import within
from testkit.net import CountingSource, MemoryTransport, connection, memory_pair, pump_of
from testkit.recording import RecordingSubscriber

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


async def test_writes_are_coalesced_per_loop_turn() -> None:
    """10 000 elements from a synchronous source take a handful of writes, not 10 000."""
    source = CountingSource(limit=10_000)
    server = connection(client=False, offer={"n": source})
    client = connection(client=True)
    server_transport, _ = memory_pair(server, client)
    items = await within(client.publisher("n").collect())
    assert len(items) == 10_000
    assert server_transport.writes <= 10_000 // MAX_BATCH + 5


async def test_output_budget_stops_production_for_a_non_reading_peer() -> None:
    """Unbounded demand, a peer that stops reading: the source is asked for about high-water bytes."""
    high, element = 64 * 1024, 1024
    source = CountingSource(size=element)
    server = connection(client=False, offer={"endless": source}, high_water=high, low_water=high // 4)
    client = connection(client=True)
    server_transport, client_transport = memory_pair(server, client, high=high, low=high // 4)
    subscriber: RecordingSubscriber[bytes] = RecordingSubscriber()
    client.publisher("endless").subscribe(subscriber)
    await within(source.subscribed.wait())
    client_transport.pause_reading()
    subscriber.request(UNBOUNDED)
    while not server_transport.paused:
        await within(source.progress.wait())
        source.progress.clear()
    stalled_at = source.pulled
    for _ in range(100):  # loop turns: nothing more is produced while the transport is full
        await asyncio.sleep(0)
    assert source.pulled == stalled_at
    assert not server.statistics().writable
    # what was produced fits the budget: the high-water mark plus at most one turn's batch
    assert stalled_at * element <= 2 * high, stalled_at
    client_transport.resume_reading()
    await source.wait_pulled(stalled_at + 500)
    assert len(subscriber.items) > stalled_at


async def test_refills_are_round_robin() -> None:
    """Three endless streams of 1 KiB elements on one connection: every one progresses (no starvation)."""
    high = 64 * 1024
    sources = {name: CountingSource(size=1024) for name in "abc"}
    server = connection(client=False, offer=dict(sources), high_water=high, low_water=high // 4)
    client = connection(client=True)
    memory_pair(server, client, high=high, low=high // 4)
    subscribers: list[RecordingSubscriber[bytes]] = []
    for name in sources:
        subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=UNBOUNDED)
        client.publisher(name).subscribe(subscriber)
        subscribers.append(subscriber)
    for source in sources.values():
        await source.wait_pulled(2000)
    counts = [source.pulled for source in sources.values()]
    assert min(counts) * 4 > max(counts), counts
    await client.aclose()


async def test_subscriber_ids_are_reused_lowest_first() -> None:
    """Ids come back once their terminal is received, so hundreds of streams keep one-byte ids (§5.3)."""
    server = connection(client=False, offer={"one": CountingSource(limit=1), "never": Never()})
    client = connection(client=True)
    memory_pair(server, client)
    for _ in range(300):
        assert await within(client.request("one")) == (1).to_bytes(8, "big")
    open_ids = await _open_never(client)
    assert open_ids == {1}
    await client.aclose()


async def test_a_cancelled_id_is_reused_only_after_the_acknowledgement() -> None:
    """After cancel, the id stays in use until the publisher's onComplete arrives (§5.3, §5.4)."""
    server = connection(client=False, offer={"never": Never()})
    client = connection(client=True)
    memory_pair(server, client)
    first: RecordingSubscriber[bytes] = RecordingSubscriber()
    client.publisher("never").subscribe(first)
    await _turns(lambda: 1 in pump_of(server).outbox.core.subscriptions(publishing=True))
    assert first.subscription is not None
    first.subscription.cancel()  # the acknowledgement is at least a loop turn away
    second: RecordingSubscriber[bytes] = RecordingSubscriber()
    client.publisher("never").subscribe(second)
    assert set(pump_of(client).outbox.core.subscriptions(publishing=False)) == {1, 2}
    await _turns(lambda: not pump_of(client).outbox.core.id_in_use(1))
    assert await _open_never(client) == {1, 2}
    await client.aclose()


class Never:
    """A Publisher that subscribes and then sends nothing until cancelled."""

    def subscribe(self, subscriber: Any) -> None:
        subscriber.on_subscribe(_Idle())


class _Idle:
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


async def _turns(done: Callable[[], bool], limit: int = 100) -> None:
    """Run loop turns until ``done()`` (the in-memory transport delivers one hop per turn)."""
    for _ in range(limit):
        if done():
            return
        await asyncio.sleep(0)
    raise AssertionError(f"not done after {limit} loop turns")


async def _items(subscriber: RecordingSubscriber[bytes], count: int) -> None:
    """Run loop turns until ``subscriber`` holds ``count`` elements."""
    await _turns(lambda: len(subscriber.items) >= count)


async def _open_never(client: Connection) -> set[int]:
    """Subscribe to ``never`` once more; return our open subscription ids."""
    subscriber: RecordingSubscriber[bytes] = RecordingSubscriber()
    client.publisher("never").subscribe(subscriber)
    return set(pump_of(client).outbox.core.subscriptions(publishing=False))


@pytest.mark.parametrize("codec", ["utf8", "int64", "float64", "json"])
async def test_a_finite_counter_completes_with_exactly_its_demand(codec: str) -> None:
    """counter?to=10 with demand 10: ten elements and onComplete, no eleventh request needed (§6.1)."""
    server = connection(client=False, offer=builtin_publishers(codec))
    client = connection(client=True)
    memory_pair(server, client)
    subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=10)
    client.publisher("counter?from=5&to=15").subscribe(subscriber)
    await _turns(lambda: subscriber.completed)
    assert len(subscriber.items) == 10 and subscriber.error is None
    await client.aclose()


@pytest.mark.parametrize("size", [8, 0])
async def test_a_served_publisher_that_knows_its_end_completes_without_spare_demand(size: int) -> None:
    """N of N over the wire: a publisher that completes right after its last element is relayed at
    once, packed (fixed-size codec) or not."""
    source = CountingSource(limit=300)
    target = with_codec(source, fixed_size(8)) if size else source
    server = connection(client=False, offer={"n": target})
    client = connection(client=True)
    memory_pair(server, client)
    subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=300)
    client.publisher("n").subscribe(subscriber)
    await _turns(lambda: subscriber.completed)
    assert [int.from_bytes(item, "big") for item in subscriber.items] == list(range(1, 301))
    assert sum(source.requests) == 300  # never asked for more than the peer's demand
    await client.aclose()


class _ReadSpy:
    """Stands between a memory transport and a pump: how many writes each read made while
    the pump handled it."""

    def __init__(self, pump: Any, transport: MemoryTransport) -> None:
        self.pump = pump
        self.transport = transport
        self.writes: list[int] = []

    def data_received(self, data: memoryview) -> None:
        before = self.transport.writes
        self.pump.data_received(data)
        self.writes.append(self.transport.writes - before)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.pump, name)


_Spied = tuple[MemoryTransport, MemoryTransport, _ReadSpy, _ReadSpy]


def _spied(server: Connection, client: Connection) -> _Spied:
    """``memory_pair`` with a :class:`_ReadSpy` on each side's reads."""
    server_transport, client_transport = memory_pair(server, client)
    server_spy = _ReadSpy(pump_of(server), server_transport)
    client_spy = _ReadSpy(pump_of(client), client_transport)
    server_transport.handler, client_transport.handler = server_spy, client_spy
    return server_transport, client_transport, server_spy, client_spy


async def test_a_request_response_is_one_write_each_way_with_no_loop_turn_before_either() -> None:
    """The client's subscribe is written in the turn that asked for it (not by a flush a turn
    later), the server's answer inside the read that brought the subscribe, and the client's
    read of the answer writes nothing: one write each way, as the ping-pong ceiling does."""
    server = connection(client=False, offer={"echo": lambda params: rstreams.just(b"12345678")})
    client = connection(client=True)
    server_transport, client_transport, server_spy, client_spy = _spied(server, client)
    assert await within(client.request("echo")) == b"12345678"  # hellos exchanged
    for _ in range(3):
        sent, answered = client_transport.writes, server_transport.writes
        server_spy.writes.clear()
        client_spy.writes.clear()
        request = asyncio.ensure_future(client.request("echo"))
        await asyncio.sleep(0)  # the request's first step ran; what it wrote is not delivered yet
        assert client_transport.writes == sent + 1
        assert server_spy.writes == []
        assert await within(request) == b"12345678"
        assert server_spy.writes == [1]  # answered within the read of the subscribe
        assert client_spy.writes == [0]  # nothing follows the answer
        assert (client_transport.writes, server_transport.writes) == (sent + 1, answered + 1)
    await client.aclose()


async def test_one_element_on_an_open_stream_is_one_write_each_way_with_no_loop_turn_before_either() -> None:
    """request(1) on an open stream is written within the call, the element inside the read
    that brought the request, and the client's read of the element writes nothing."""
    source = CountingSource()
    server = connection(client=False, offer={"n": source})
    client = connection(client=True)
    server_transport, client_transport, server_spy, client_spy = _spied(server, client)
    subscriber: RecordingSubscriber[bytes] = RecordingSubscriber(initial=1)
    client.publisher("n").subscribe(subscriber)
    await _turns(lambda: len(subscriber.items) == 1)
    assert subscriber.subscription is not None
    for count in range(2, 5):
        sent, answered = client_transport.writes, server_transport.writes
        server_spy.writes.clear()
        client_spy.writes.clear()
        subscriber.subscription.request(1)
        assert client_transport.writes == sent + 1  # written through, not at a later flush
        await _items(subscriber, count)
        assert server_spy.writes == [1]  # the element went out within the read of the request
        assert client_spy.writes == [0]
        assert (client_transport.writes, server_transport.writes) == (sent + 1, answered + 1)
    await client.aclose()
