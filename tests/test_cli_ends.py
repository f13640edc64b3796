"""`rstreams serve`'s built-in publishers complete with their last element when their end is known
(PROTOCOL.md §6.1): a subscriber that asks for exactly N of N gets onComplete without a spare request,
paced or not, over a memory transport on a virtual clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from rstreams._cli_publishers import builtin_publishers
from testkit.net import connection, memory_pair, run_virtual
from testkit.recording import RecordingSubscriber

pytestmark = pytest.mark.timeout(30)


def _exactly(name: str, demand: int) -> RecordingSubscriber[Any]:
    """Subscribe to ``name`` with ``demand`` and nothing more; run until onComplete (virtual time)."""

    async def main() -> RecordingSubscriber[Any]:
        server = connection(client=False, offer=builtin_publishers())
        client = connection(client=True)
        memory_pair(server, client)
        subscriber: RecordingSubscriber[Any] = RecordingSubscriber(initial=demand)
        client.publisher(name).subscribe(subscriber)
        for _ in range(10_000):  # each turn may advance the virtual clock to the next reading
            if subscriber.completed or subscriber.error is not None:
                break
            await asyncio.sleep(0.01)
        await client.aclose()
        return subscriber

    return run_virtual(main)


@pytest.mark.parametrize("rate", ["0", "5", "0.5"])
def test_sensors_with_a_count_complete_with_the_last_reading(rate: str) -> None:
    subscriber = _exactly(f"sensors/a?rate={rate}&count=3", 3)
    assert subscriber.completed, f"3 of 3 readings and no onComplete: {subscriber.items!r}"
    assert [reading["seq"] for reading in subscriber.items] == [0, 1, 2]  # decoded: JSON is announced


@pytest.mark.parametrize("rate", ["0", "20"])
def test_a_bounded_counter_completes_with_its_last_number(rate: str) -> None:
    subscriber = _exactly(f"counter?from=5&to=9&rate={rate}", 4)
    assert subscriber.completed, f"4 of 4 numbers and no onComplete: {subscriber.items!r}"
    assert [int(item) for item in subscriber.items] == [5, 6, 7, 8]


@pytest.mark.parametrize("name", ["sensors/a?rate=5&count=0", "counter?from=3&to=3&rate=20"])
def test_an_empty_paced_stream_completes_at_once(name: str) -> None:
    subscriber = _exactly(name, 1)
    assert subscriber.completed and subscriber.items == []
