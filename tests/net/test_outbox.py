"""The outbox's writes (:mod:`rstreams.net._outbox`): how much it asks of the core, and when
it asks whether output was left behind."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rstreams.net._outbox import WRITE_LIMIT, Outbox
from rstreams.wire import ConnectionConfig, OnComplete, OnNext
from testkit.net import MemoryTransport
from testkit.wire import ConnectionPair

SPLIT = ConnectionConfig(split_threshold=10, max_element_size=100)


@settings(max_examples=200, deadline=None)
@given(
    elements=st.lists(st.tuples(st.integers(1, 3), st.integers(0, 100)), max_size=12),
    limit=st.integers(1, 400),
)
def test_the_core_keeps_output_only_after_handing_over_its_limit(
    elements: list[tuple[int, int]], limit: int
) -> None:
    """What Outbox.write relies on to ask the core about leftover output only after a write of
    WRITE_LIMIT bytes: ``data_to_send(limit)`` returns all the core holds (frames and parts of
    split elements, PROTOCOL.md §8) unless that is at least ``limit`` bytes."""
    pair = ConnectionPair(SPLIT, SPLIT)
    for sid in (1, 2, 3):
        pair.open(sid, demand=len(elements) + 1)
    for sid, size in elements:
        pair.server.send(OnNext(subscriber=sid, element=bytes(size)))
    pair.server.send(OnComplete(subscriber=2))
    for _ in range(10_000):
        taken = sum(map(len, pair.server.data_to_send(limit)))
        if taken < limit:
            assert not pair.server.has_data_to_send, f"{taken} bytes taken, output left"
        if not pair.server.has_data_to_send:
            return
    raise AssertionError("the output never drained")


class _Handler:
    def pause_writing(self) -> None:
        raise AssertionError("not above the high-water mark")


@pytest.mark.asyncio
async def test_a_split_element_larger_than_a_write_goes_on_with_the_next_flush() -> None:
    """A write of WRITE_LIMIT bytes leaves the rest of a split element in the core, and the
    outbox schedules the flush that writes it."""
    pair = ConnectionPair()
    pair.open(1, demand=1)
    outbox = Outbox(pair.server)
    transport = MemoryTransport(_Handler(), high=1 << 30)
    outbox.transport = transport
    flushes: list[None] = []
    outbox.install_flush(lambda: flushes.append(None), lambda: None)
    element = bytes(3 * WRITE_LIMIT)
    pair.server.send(OnNext(subscriber=1, element=element))
    outbox.ledger.element_bytes += len(element)  # as the serving side says (no replies: no backlog check)
    outbox.write_now()
    assert WRITE_LIMIT <= transport.size < len(element)
    assert outbox.flush_scheduled
    await asyncio.sleep(0)  # the flush's turn (scheduled before this task's wake-up)
    assert flushes == [None]
    outbox.flush_scheduled = False
    while pair.server.has_data_to_send:
        outbox.write_now()
        outbox.flush_scheduled = False
    assert len(element) < transport.size < len(element) + 1024  # all of it, with its parts' heads
