"""A finite publisher completes as soon as its end is known, without spare demand (rules 1.5, 3.x).

Each case builds a publisher of exactly ``N`` elements, requests exactly ``N`` and expects
the ``N`` elements followed by ``on_complete``: one unit of demand more must never be
needed to learn that the stream ended. (Sources whose end can only be learnt by pulling
once more, such as a generator or an async generator, are left out on purpose: pulling
ahead would run user code that nobody asked for.)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber

N = 5


def _multicast(n: int) -> Publisher[int]:
    processor: rstreams.MulticastProcessor[int] = rstreams.MulticastProcessor()
    rstreams.range(0, n).subscribe(processor)
    return processor


def _pushed(n: int) -> Publisher[int]:
    def register(source: rstreams.PushSource[int]) -> None:
        for i in range(n):
            source.push(i)
        source.complete()

    return rstreams.from_push(register, overflow=rstreams.OverflowStrategy.BUFFER, capacity=n)


@pytest.fixture(scope="module")
def pool() -> Iterator[concurrent.futures.Executor]:
    with concurrent.futures.ThreadPoolExecutor(2) as executor:
        yield executor


SOURCES: dict[str, Callable[[int], Publisher[Any]]] = {
    "range": lambda n: rstreams.range(0, n),
    "from_iterable(list)": lambda n: rstreams.from_iterable(list(range(n))),
    "from_iterable(tuple)": lambda n: rstreams.from_iterable(tuple(range(n))),
    "from_iterable(str)": lambda n: rstreams.from_iterable("x" * n),
    "just": lambda n: rstreams.just(*range(n)),
    "range.map": lambda n: rstreams.range(0, n).map(lambda x: x * 2),
    "range.filter(all kept)": lambda n: rstreams.range(0, n).filter(lambda x: x >= 0),
    "range.map.filter.map": lambda n: rstreams.range(0, n).map(str).filter(bool).map(len),
    "take": lambda n: rstreams.from_iterable(iter(int, 1)).map(lambda _: 1).take(n),
    "skip": lambda n: rstreams.range(0, n + 3).skip(3),
    "buffer": lambda n: rstreams.range(0, 2 * n).buffer(2),
    "concat_map": lambda n: rstreams.range(0, n).concat_map(lambda x: rstreams.just(x)),
    "flat_map": lambda n: rstreams.range(0, n).flat_map(lambda x: rstreams.just(x)),
    "merge": lambda n: rstreams.merge(rstreams.range(0, n - 2), rstreams.range(0, 2)),
    "multicast": _multicast,
    "from_push": _pushed,
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_requesting_exactly_n_of_n_completes(name: str) -> None:
    """``request(N)`` of an ``N``-element publisher gets N elements, then on_complete."""
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    SOURCES[name](N).subscribe(s)
    s.request(N)
    s.await_done()
    assert len(s.items) == N and s.completed and s.error is None


@pytest.mark.parametrize("name", list(SOURCES))
def test_requesting_one_at_a_time_completes_with_the_last(name: str) -> None:
    """N requests of one: on_complete follows the N-th element with no (N+1)-th request."""
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    SOURCES[name](N).subscribe(s)
    for _ in range(N):
        s.request(1)
    s.await_done()
    assert len(s.items) == N and s.completed


def test_observe_on_completes_with_exact_demand(pool: concurrent.futures.Executor) -> None:
    """The asynchronous boundary forwards completion without waiting for more demand."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, N).observe_on(pool).subscribe(s)
    s.request(N)
    s.await_done()
    assert s.items == list(range(N)) and s.completed


def test_timer_completes_after_its_tick_with_demand_one() -> None:
    """``timer`` is one element: request(1) is all it needs to complete."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        s: RecordingSubscriber[int] = RecordingSubscriber()
        overflow = rstreams.OverflowStrategy.BUFFER  # the tick may come before the request
        rstreams.timer(0, loop=loop, overflow=overflow, capacity=1).subscribe(s)
        s.request(1)
        s.await_done()
        assert s.items == [0] and s.completed
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def test_operator_over_a_manual_publisher_completes_when_upstream_does() -> None:
    """An operator passes on_complete on at once: no demand is needed for it (rule 1.5)."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.map(lambda x: x + 1).filter(bool).subscribe(s)
    s.request(2)
    source.emit(1, 2)
    source.complete()
    assert s.items == [2, 3] and s.completed
