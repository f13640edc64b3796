"""PushSource / from_push: producers that cannot be slowed down, "buffer or drop" (rule 1.1)."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Callable

import pytest

from rstreams.errors import (
    InvalidDemandError,
    OverflowStrategyError,
    ResourceClosedError,
    set_unhandled_error_hook,
)
from rstreams.flow._flow import Flow
from rstreams.flow._public import PushSource, from_push
from rstreams.flow._push import OverflowStrategy
from testkit.recording import RecordingSubscriber

DROP, LATEST, BUFFER, ERROR = (
    OverflowStrategy.DROP,
    OverflowStrategy.LATEST,
    OverflowStrategy.BUFFER,
    OverflowStrategy.ERROR,
)


def subscribed(source: PushSource[int], initial: int = 0) -> RecordingSubscriber[int]:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial)
    source.subscribe(s)
    return s


def test_push_never_delivers_more_than_requested_drop_counts_the_rest() -> None:
    """Rule 1.1 with DROP: elements beyond demand are dropped and counted, exactly."""
    source: PushSource[int] = PushSource(overflow=DROP)
    s = subscribed(source, initial=2)
    for i in range(5):
        source.push(i)
    assert s.items == [0, 1] and source.dropped == 3
    s.request(1)
    source.push(5)
    assert s.items == [0, 1, 5] and source.dropped == 3


def test_drop_with_capacity_keeps_the_oldest_and_drops_the_newest() -> None:
    """DROP with capacity 2 buffers two undelivered elements; the newest overflow is dropped."""
    source: PushSource[int] = PushSource(overflow=DROP, capacity=2)
    s = subscribed(source)
    for i in range(5):
        source.push(i)
    assert s.items == [] and source.dropped == 3
    s.request(10)
    assert s.items == [0, 1]
    source.push(7)
    assert s.items == [0, 1, 7] and source.dropped == 3


def test_latest_keeps_only_the_newest_undelivered_elements() -> None:
    """LATEST drops the oldest undelivered element for each overflow."""
    source: PushSource[int] = PushSource(overflow=LATEST)
    s = subscribed(source)
    for i in range(10):
        source.push(i)
    s.request(5)
    assert s.items == [9] and source.dropped == 9

    source2: PushSource[int] = PushSource(overflow=LATEST, capacity=2)
    s2 = subscribed(source2, initial=1)
    for i in range(5):
        source2.push(i)
    assert s2.items == [0] and source2.dropped == 2
    s2.request(5)
    assert s2.items == [0, 3, 4]


def test_buffer_overflow_fails_after_the_buffered_elements() -> None:
    """BUFFER(3): a fourth undelivered element ends the stream with OverflowStrategyError,
    delivered after the three buffered ones; exactly the overflowing element is dropped."""
    source: PushSource[int] = PushSource(overflow=BUFFER, capacity=3)
    s = subscribed(source)
    for i in range(6):
        source.push(i)
    assert s.signals == ["on_subscribe"]
    assert source.dropped == 1 and source.subscriber_count == 0
    s.request(2)
    assert s.items == [0, 1] and not s.done
    s.request(1)
    assert s.items == [0, 1, 2] and isinstance(s.error, OverflowStrategyError)
    assert "element 3" in str(s.error) and "rule 1.1" in str(s.error) and "capacity=3" in str(s.error)


def test_error_strategy_fails_at_once_without_demand() -> None:
    """ERROR (BUFFER with capacity 0): rule 1.4, on_error arrives without any demand."""
    source: PushSource[str] = PushSource(overflow=ERROR)
    s: RecordingSubscriber[str] = RecordingSubscriber(initial=1)
    source.subscribe(s)
    source.push("a")
    source.push("b")
    assert s.items == ["a"] and isinstance(s.error, OverflowStrategyError)
    assert "'b'" in str(s.error) and "overflow=ERROR" in str(s.error)
    assert source.dropped == 1
    source.push("c")  # the failed subscriber is detached: not counted again
    assert source.dropped == 1 and s.signals.count("on_error") == 1


def test_elements_covered_by_demand_never_count_against_capacity() -> None:
    """A push made inside on_next (the drainer is busy) is queued, not an overflow."""
    source: PushSource[int] = PushSource(overflow=ERROR)

    class Echo(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            super().on_next(item)
            if item < 4:
                source.push(item + 1)

    s = Echo(initial=5)
    source.subscribe(s)
    source.push(0)
    assert s.items == [0, 1, 2, 3, 4] and s.error is None and source.dropped == 0


def test_each_subscriber_has_its_own_demand_and_buffer() -> None:
    """Multicast: a slow subscriber drops its own elements and does not hold back a fast one."""
    source: PushSource[int] = PushSource(overflow=DROP, capacity=1)
    fast = subscribed(source, initial=100)
    slow = subscribed(source)
    for i in range(4):
        source.push(i)
    assert fast.items == [0, 1, 2, 3] and slow.items == []
    assert source.dropped == 3
    slow.request(4)
    assert slow.items == [0]
    slow.cancel()
    assert source.dropped == 3 and source.subscriber_count == 1


def test_complete_and_fail_arrive_after_buffered_elements() -> None:
    """Rule 1.5: on_complete follows what was accepted; buffered elements are not lost."""
    source: PushSource[int] = PushSource(overflow=BUFFER, capacity=8)
    s = subscribed(source)
    for i in range(3):
        source.push(i)
    source.complete()
    assert s.signals == ["on_subscribe"]
    s.request(3)
    assert s.items == [0, 1, 2] and s.completed

    failing: PushSource[int] = PushSource(overflow=BUFFER)
    s2 = subscribed(failing)
    failing.push(1)
    boom = RuntimeError("sensor unplugged")
    failing.fail(boom)
    assert s2.error is None
    s2.request(1)
    assert s2.items == [1] and s2.error is boom


def test_late_subscriber_gets_the_terminal_signal_at_once() -> None:
    """Rules 1.9, 1.4/1.5: a hot source that ended signals on_subscribe then its end."""
    source: PushSource[int] = PushSource(overflow=DROP)
    source.push(1)  # nobody listens: gone, and not counted as dropped
    source.complete()
    s = subscribed(source)
    assert s.signals == ["on_subscribe", "on_complete"] and source.dropped == 0

    failed: PushSource[int] = PushSource(overflow=DROP)
    boom = ValueError("x")
    failed.fail(boom)
    s2 = subscribed(failed)
    assert s2.signals == ["on_subscribe", "on_error"] and s2.error is boom


def test_producer_misuse_raises_on_the_producers_stack() -> None:
    """Rule 2.13: push(None) raises TypeError; push after complete raises; complete is idempotent."""
    source: PushSource[int] = PushSource(overflow=DROP)
    with pytest.raises(TypeError, match=r"rule 2\.13"):
        source.push(None)  # type: ignore[arg-type]
    source.complete()
    source.complete()
    source.fail(RuntimeError("ignored after complete"))
    with pytest.raises(ResourceClosedError, match="after complete"):
        source.push(1)
    with pytest.raises(TypeError):
        source.fail("not an exception")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("overflow", "capacity", "message"),
    [
        (LATEST, 0, "capacity >= 1"),
        (ERROR, 3, "overflow=BUFFER"),
        (BUFFER, -1, "int >= 0"),
        ("drop", None, "OverflowStrategy"),
    ],
)
def test_bad_overflow_arguments_are_refused_when_built(
    overflow: object, capacity: object, message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        PushSource(overflow=overflow, capacity=capacity)  # type: ignore[arg-type]


def test_invalid_request_signals_on_error_and_detaches() -> None:
    """Rules 3.9, 3.16: request(n <= 0) is signalled, never raised, even with elements queued."""
    for bad in (0, -1, True, 2.0):
        source: PushSource[int] = PushSource(overflow=BUFFER)
        s = subscribed(source)
        source.push(1)
        s.request(bad)  # type: ignore[arg-type]
        assert isinstance(s.error, InvalidDemandError) and repr(bad) in str(s.error)
        assert s.items == [] and source.subscriber_count == 0


def test_subscribe_none_raises() -> None:
    """Rule 1.9."""
    with pytest.raises(TypeError, match=r"rule 1\.9"):
        PushSource(overflow=DROP).subscribe(None)  # type: ignore[arg-type]


def test_cancel_is_idempotent_stops_delivery_and_drops_the_subscriber() -> None:
    """Rules 3.5-3.7 and 3.13: after cancel nothing arrives and no reference is kept."""
    source: PushSource[int] = PushSource(overflow=BUFFER)
    s = subscribed(source, initial=1)
    source.push(1)
    source.push(2)
    s.cancel()
    s.cancel()
    s.request(5)
    s.request(0)
    source.push(3)
    assert s.items == [1] and not s.done and source.subscriber_count == 0
    ref = weakref.ref(s)
    del s
    gc.collect()
    assert ref() is None


def test_reentrant_request_is_trampolined() -> None:
    """Rule 3.3: request(1) inside on_next drains the buffer without recursion."""
    depth = max_depth = 0

    class Reentrant(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            nonlocal depth, max_depth
            depth += 1
            max_depth = max(max_depth, depth)
            super().on_next(item)
            self.request(1)
            depth -= 1

    source: PushSource[int] = PushSource(overflow=BUFFER, capacity=5000)
    s = Reentrant()
    source.subscribe(s)
    for i in range(5000):
        source.push(i)
    source.complete()
    s.request(1)
    assert s.items == list(range(5000)) and s.completed and max_depth == 1


def test_raising_on_next_cancels_and_reports() -> None:
    """Rule 2.13: the subscriber is considered cancelled; the error goes to the hook."""
    reported: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append((e, where)))
    try:

        class Broken(RecordingSubscriber[int]):
            def on_next(self, item: int) -> None:
                super().on_next(item)
                raise ValueError("user bug")

        source: PushSource[int] = PushSource(overflow=DROP)
        s = Broken(initial=5)
        source.subscribe(s)
        source.push(1)
        source.push(2)
        assert s.items == [1] and source.subscriber_count == 0
        assert len(reported) == 1 and "on_next" in reported[0][1]
    finally:
        set_unhandled_error_hook(previous)


@pytest.mark.timeout(20)
def test_concurrent_producers_and_requesters_deliver_serially_and_in_order() -> None:
    """Rule 1.3: pushes and requests from many threads never overlap on_next; each
    producer's elements arrive once and in its order."""
    overlap = threading.Lock()
    violations = 0

    class Serial(RecordingSubscriber[tuple[int, int]]):
        def on_next(self, item: tuple[int, int]) -> None:
            nonlocal violations
            if not overlap.acquire(blocking=False):
                violations += 1
                return
            try:
                super().on_next(item)
            finally:
                overlap.release()

    per_producer = 5000
    source: PushSource[tuple[int, int]] = PushSource(overflow=BUFFER, capacity=4 * per_producer)
    s = Serial()
    source.subscribe(s)

    def produce(p: int) -> Callable[[], None]:
        def run() -> None:
            for i in range(per_producer):
                source.push((p, i))

        return run

    def consume() -> None:
        for _ in range(per_producer):
            s.request(1)

    threads = [threading.Thread(target=produce(p)) for p in range(4)]
    threads += [threading.Thread(target=consume) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(15)
    items = s.await_items(4 * per_producer)
    assert violations == 0 and source.dropped == 0 and len(items) == 4 * per_producer
    for p in range(4):
        assert [i for q, i in items if q == p] == list(range(per_producer))


def test_from_push_registers_per_subscriber_and_cleans_up_on_cancel() -> None:
    """from_push is cold: each subscriber gets its own PushSource; the cleanup runs once."""
    sources: list[PushSource[int]] = []
    cleaned: list[int] = []

    def register(source: PushSource[int]) -> Callable[[], None]:
        sources.append(source)
        n = len(sources)
        return lambda: cleaned.append(n)

    flow = from_push(register, overflow=LATEST)
    a: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    b: RecordingSubscriber[int] = RecordingSubscriber()
    flow.subscribe(a)
    flow.subscribe(b)
    assert len(sources) == 2
    sources[0].push(10)
    sources[1].push(20)
    sources[1].push(21)
    assert a.items == [10] and b.items == []
    b.request(1)
    assert b.items == [21] and sources[1].dropped == 1
    b.cancel()
    b.cancel()
    assert cleaned == [2]
    sources[0].complete()
    assert a.completed and cleaned == [2, 1]


def test_from_push_register_failure_and_early_cancel() -> None:
    """A raising register becomes on_error; a cancel inside on_subscribe cleans up at once."""
    boom = RuntimeError("no device")

    def failing(source: PushSource[int]) -> None:
        raise boom

    s: RecordingSubscriber[int] = RecordingSubscriber()
    from_push(failing, overflow=DROP).subscribe(s)
    assert s.signals == ["on_subscribe", "on_error"] and s.error is boom

    class CancelAtOnce(RecordingSubscriber[int]):
        def on_subscribe(self, subscription: object) -> None:
            subscription.cancel()  # type: ignore[attr-defined]

    cleaned: list[str] = []
    from_push(lambda source: lambda: cleaned.append("done"), overflow=DROP).subscribe(CancelAtOnce())
    assert cleaned == ["done"]
    with pytest.raises(TypeError, match="callable"):
        from_push(42, overflow=DROP)  # type: ignore[arg-type]


@pytest.mark.timeout(60)
def test_from_push_passes_the_publisher_tck() -> None:
    """Every PublisherVerification case, with a producer that pushes everything at once
    into a buffer as large as the stream (rules 1.x, 3.x)."""
    from rstreams.tck import verify_publisher

    def numbers(n: int) -> Flow[int]:
        def register(source: PushSource[int]) -> None:
            for i in range(n):
                source.push(i)
            source.complete()

        return from_push(register, overflow=BUFFER, capacity=max(n, 1))

    def failed() -> Flow[int]:
        def register(source: PushSource[int]) -> None:
            source.fail(RuntimeError("device gone"))

        return from_push(register, overflow=DROP)

    report = verify_publisher(numbers, create_failed_publisher=failed, max_elements=100_000)
    assert report.ok, str(report)
    assert len(report.passed) >= 30
