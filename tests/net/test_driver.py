"""The connection driver over an in-memory transport: coalescing and the output budget, exactly."""

from __future__ import annotations

import asyncio

import pytest
from netsupport import WAIT, CountingSource, memory_pair

from rstreams import UNBOUNDED
from rstreams.net import Connection
from rstreams.net._serving import MAX_BATCH
from support import RecordingSubscriber

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


async def test_writes_are_coalesced_per_loop_turn() -> None:
    """10 000 elements from a synchronous source take a handful of writes, not 10 000."""
    source = CountingSource(limit=10_000)
    server = Connection(client=False, offer={"n": source})
    client = Connection(client=True)
    server_transport, _ = memory_pair(server, client)
    items = await asyncio.wait_for(client.publisher("n").collect(), WAIT)
    assert len(items) == 10_000
    assert server_transport.writes <= 10_000 // MAX_BATCH + 5


async def test_output_budget_stops_production_for_a_non_reading_peer() -> None:
    """Unbounded demand, a peer that stops reading: the source is asked for about high-water bytes."""
    high, element = 64 * 1024, 1024
    source = CountingSource(size=element)
    server = Connection(client=False, offer={"endless": source}, high_water=high, low_water=high // 4)
    client = Connection(client=True)
    server_transport, client_transport = memory_pair(server, client, high=high, low=high // 4)
    subscriber: RecordingSubscriber[bytes] = RecordingSubscriber()
    client.publisher("endless").subscribe(subscriber)
    await asyncio.wait_for(source.subscribed.wait(), WAIT)
    client_transport.pause_reading()
    subscriber.request(UNBOUNDED)
    while not server_transport.paused:
        await asyncio.wait_for(source.progress.wait(), WAIT)
        source.progress.clear()
    stalled_at = source.pulled
    for _ in range(100):  # loop turns: nothing more is produced while the transport is full
        await asyncio.sleep(0)
    assert source.pulled == stalled_at
    assert not server.writable
    # what was produced fits the budget: the high-water mark plus at most one turn's batch
    assert stalled_at * element <= 2 * high, stalled_at
    client_transport.resume_reading()
    await source.wait_pulled(stalled_at + 500)
    assert len(subscriber.items) > stalled_at


async def test_refills_are_round_robin() -> None:
    """Three endless streams of 1 KiB elements on one connection: every one progresses (no starvation)."""
    high = 64 * 1024
    sources = {name: CountingSource(size=1024) for name in "abc"}
    server = Connection(client=False, offer=dict(sources), high_water=high, low_water=high // 4)
    client = Connection(client=True)
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
