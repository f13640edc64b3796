"""observe_on: delivery on a loop or an executor, bounded queue, serial signals (rules 1.x, 3.x)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import random
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

import pytest

import rstreams
from rstreams.api import Subscriber, Subscription
from rstreams.errors import (
    InvalidDemandError,
    LoopClosedError,
    OverflowStrategyError,
    set_unhandled_error_hook,
)
from rstreams.flow._observe_on import ObserveOnFlow
from testkit import patience
from testkit.bound import within
from testkit.recording import RecordingSubscriber
from testkit.shapes import patient_env

T = TypeVar("T")


class InlineExecutor(concurrent.futures.Executor):
    """Runs each submitted callable at once on the caller's thread: deterministic tests."""

    def __init__(self) -> None:
        self.submitted = 0

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        self.submitted += 1
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        future.set_result(fn(*args, **kwargs))
        return future


class ManualExecutor(concurrent.futures.Executor):
    """Queues submitted callables until the test calls :meth:`run`."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], object]] = []
        self.submitted = 0

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        self.submitted += 1
        self.pending.append(lambda: fn(*args, **kwargs))
        return concurrent.futures.Future()

    def run(self) -> None:
        while self.pending:
            self.pending.pop(0)()


class ManualPublisher(Subscription, Generic[T]):
    """A publisher the test drives by hand; records every request and cancel."""

    def __init__(self) -> None:
        self.subscriber: Subscriber[T] | None = None
        self.requests: list[object] = []
        self.cancelled = False

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        self.subscriber = subscriber
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        self.requests.append(n)

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def requested(self) -> int:
        return sum(n for n in self.requests if isinstance(n, int))

    def emit(self, *items: T) -> None:
        assert self.subscriber is not None
        for item in items:
            self.subscriber.on_next(item)


def test_queue_never_exceeds_buffer_size_and_replenishes_at_three_quarters() -> None:
    """Upstream gets buffer_size first, then `limit` per 3/4 delivered; queued <= buffer_size."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(source, InlineExecutor(), buffer_size=8).subscribe(s)
    assert source.requests == [8]
    source.emit(*range(8))  # the whole window, with zero downstream demand
    assert s.items == [] and source.requests == [8]
    s.request(5)
    assert s.items == [0, 1, 2, 3, 4] and source.requests == [8]
    s.request(1)  # the sixth delivered element completes three quarters (limit = 6)
    assert source.requests == [8, 6]
    rng = random.Random(7)
    sent = 8
    for _ in range(300):
        if rng.random() < 0.5:
            room = source.requested - sent
            batch = rng.randint(0, room)
            source.emit(*range(sent, sent + batch))
            sent += batch
        else:
            s.request(rng.randint(1, 5))
        assert source.requested - len(s.items) <= 8, "the queue could exceed buffer_size"
    assert s.items == list(range(len(s.items))) and s.error is None


def test_upstream_sending_more_than_requested_is_an_overflow_error() -> None:
    """Rule 1.1 broken upstream: the stream fails instead of growing the queue."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(source, InlineExecutor(), buffer_size=2).subscribe(s)
    source.emit(1, 2, 3)
    assert isinstance(s.error, OverflowStrategyError) and "1.1" in str(s.error)
    assert source.cancelled and s.items == []


def test_one_scheduled_drain_per_burst() -> None:
    """100 elements and on_complete arriving before the target runs cost one scheduled drain."""
    executor = ManualExecutor()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1000)
    ObserveOnFlow(rstreams.range(0, 100), executor, buffer_size=128).subscribe(s)
    assert s.items == [] and len(executor.pending) == 1
    executor.run()
    assert s.items == list(range(100)) and s.completed
    assert executor.submitted == 1


@pytest.mark.asyncio
@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
async def test_signals_arrive_on_the_loop_thread_when_produced_elsewhere() -> None:
    """on_next and on_complete run on the target loop's thread, whatever thread produced them."""
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    finished: asyncio.Future[None] = loop.create_future()
    seen: list[tuple[int, bool]] = []

    class OnLoop(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            seen.append((threading.get_ident(), asyncio._get_running_loop() is loop))
            super().on_next(item)

        def on_complete(self) -> None:
            seen.append((threading.get_ident(), asyncio._get_running_loop() is loop))
            super().on_complete()
            finished.set_result(None)

    s = OnLoop()
    flow = rstreams.range(0, 1000).observe_on(loop, buffer_size=16)
    producer = threading.Thread(target=flow.subscribe, args=(s,))
    producer.start()
    await loop.run_in_executor(None, s.await_subscribed)
    patience.join(producer)
    threading.Thread(target=s.request, args=(600,)).start()  # demand from another thread
    s.request(400)  # and from the loop itself (call_soon path)
    await within(finished)
    assert s.items == list(range(1000))
    assert seen and all(ident == loop_thread and on_loop for ident, on_loop in seen)


@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
def test_executor_delivers_serially_on_its_threads_under_concurrent_requests() -> None:
    """Rule 1.3 across a 4-thread pool: drains never overlap; all elements in order, once."""
    overlap = threading.Lock()
    violations = 0
    threads: set[str] = set()

    class Serial(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            nonlocal violations
            if not overlap.acquire(blocking=False):
                violations += 1
                return
            try:
                threads.add(threading.current_thread().name)
                super().on_next(item)
            finally:
                overlap.release()

    n = 20_000
    with concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="observer") as pool:
        s = Serial()
        rstreams.range(0, n).observe_on(pool, buffer_size=64).subscribe(s)

        def ask() -> None:
            for _ in range(n // 4):
                s.request(1)

        requesters = [threading.Thread(target=ask) for _ in range(4)]
        for t in requesters:
            t.start()
        for t in requesters:
            patience.join(t)
        s.await_done()
    assert violations == 0 and s.items == list(range(n)) and s.completed
    assert threads and all(name.startswith("observer") for name in threads)


def test_invalid_request_signals_on_error_and_cancels_upstream() -> None:
    """Rules 3.9, 3.16: request(0) is never raised; on_error(InvalidDemandError) via the drain."""
    for bad in (0, -3, True, 2.0):
        source: ManualPublisher[int] = ManualPublisher()
        s: RecordingSubscriber[int] = RecordingSubscriber()
        ObserveOnFlow(source, InlineExecutor()).subscribe(s)
        s.request(bad)  # type: ignore[arg-type]
        assert isinstance(s.error, InvalidDemandError) and "3.9" in str(s.error)
        assert source.cancelled and s.signals == ["on_subscribe", "on_error"]
        s.request(1)  # rule 3.6: a no-op afterwards
        assert s.signals == ["on_subscribe", "on_error"]


def test_demand_saturates_at_unbounded() -> None:
    """Rule 3.17: requests summing past 2**63-1 are unbounded, not an error."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(rstreams.range(0, 50), InlineExecutor(), buffer_size=4).subscribe(s)
    s.request(rstreams.UNBOUNDED - 1)
    s.request(rstreams.UNBOUNDED - 1)
    assert s.items == list(range(50)) and s.completed and s.error is None


def test_error_is_eager_and_needs_no_demand() -> None:
    """Rule 1.4, default eager mode: queued elements are dropped, the error arrives by identity."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(source, InlineExecutor()).subscribe(s)
    source.emit(1, 2, 3)
    boom = RuntimeError("boom")
    assert source.subscriber is not None
    source.subscriber.on_error(boom)
    assert s.error is boom and s.items == []


def test_delay_error_delivers_queued_elements_first() -> None:
    """delay_error=True: the queue drains within demand, then the error (same instance)."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(source, InlineExecutor(), delay_error=True).subscribe(s)
    source.emit(1, 2, 3)
    boom = RuntimeError("boom")
    assert source.subscriber is not None
    source.subscriber.on_error(boom)
    assert s.error is None
    s.request(2)
    assert s.items == [1, 2] and s.error is None
    s.request(1)
    assert s.items == [1, 2, 3] and s.error is boom


@pytest.mark.parametrize(("operator", "delivered"), [("observe_on", []), ("publish_on", [1, 2, 3])])
def test_each_name_keeps_its_peers_error_default(operator: str, delivered: list[int]) -> None:
    """observe_on drops the queue at an error (RxJava's observeOn); publish_on delivers it
    first, as demand allows (reactor's publishOn, delayError true by default)."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    getattr(rstreams.from_publisher(source), operator)(InlineExecutor()).subscribe(s)
    source.emit(1, 2, 3)
    boom = RuntimeError("boom")
    assert source.subscriber is not None
    source.subscriber.on_error(boom)
    assert s.error is (None if delivered else boom)
    s.request(3)
    assert s.items == delivered and s.error is boom
    off: RecordingSubscriber[int] = RecordingSubscriber()
    other: ManualPublisher[int] = ManualPublisher()
    rstreams.from_publisher(other).publish_on(InlineExecutor(), delay_error=False).subscribe(off)
    other.emit(1)
    assert other.subscriber is not None
    other.subscriber.on_error(boom)
    assert off.items == [] and off.error is boom


def test_complete_waits_for_the_queue_then_needs_no_demand() -> None:
    """Rule 1.5: on_complete comes after the last queued element, without extra demand."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(source, InlineExecutor()).subscribe(s)
    source.emit(1, 2)
    assert source.subscriber is not None
    source.subscriber.on_complete()
    assert s.signals == ["on_subscribe"]
    s.request(2)
    assert s.signals == ["on_subscribe", "on_next", "on_next", "on_complete"]
    e: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(rstreams.empty(), InlineExecutor()).subscribe(e)
    assert e.signals == ["on_subscribe", "on_complete"]


def test_reentrant_request_is_trampolined() -> None:
    """Rule 3.3: request(1) inside on_next only adds demand; the running drain delivers."""
    depth = max_depth = 0

    class Reentrant(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            nonlocal depth, max_depth
            depth += 1
            max_depth = max(max_depth, depth)
            super().on_next(item)
            self.request(1)
            depth -= 1

    s = Reentrant(initial=1)
    ObserveOnFlow(rstreams.range(0, 5000), InlineExecutor(), buffer_size=16).subscribe(s)
    assert s.completed and len(s.items) == 5000 and max_depth == 1


def test_cancel_cancels_upstream_clears_queue_and_drops_the_subscriber() -> None:
    """Rules 3.5, 3.7, 3.13: cancel is idempotent, later signals are dropped, refs released."""
    source: ManualPublisher[int] = ManualPublisher()
    flow = ObserveOnFlow(source, InlineExecutor())

    def subscribe() -> weakref.ref[RecordingSubscriber[int]]:
        s: RecordingSubscriber[int] = RecordingSubscriber()
        flow.subscribe(s)
        source.emit(1, 2)
        s.cancel()
        s.cancel()
        s.request(5)
        assert s.items == [] and not s.done
        return weakref.ref(s)

    ref = subscribe()
    assert source.cancelled
    source.emit(3)  # a late element (3.12) is ignored
    gc.collect()
    assert ref() is None


def test_subscriber_raising_in_on_next_is_cancelled_and_reported() -> None:
    """Rule 2.13: the error goes to the unhandled-error hook, upstream is cancelled."""
    reported: list[BaseException] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append(e))
    try:

        class Broken(RecordingSubscriber[int]):
            def on_next(self, item: int) -> None:
                super().on_next(item)
                raise ValueError("user bug")

        source: ManualPublisher[int] = ManualPublisher()
        s = Broken(initial=5)
        ObserveOnFlow(source, InlineExecutor()).subscribe(s)
        source.emit(1, 2)
        assert s.items == [1] and source.cancelled and not s.done
        assert len(reported) == 1 and isinstance(reported[0], ValueError)
    finally:
        set_unhandled_error_hook(previous)


def test_closed_loop_fails_the_stream_instead_of_hanging() -> None:
    """A drain that cannot be scheduled cancels upstream and signals on_error(LoopClosedError)."""
    loop = asyncio.new_event_loop()
    loop.close()
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(source, loop).subscribe(s)
    s.request(1)
    assert isinstance(s.error, LoopClosedError) and source.cancelled


def test_arguments_are_checked_when_built_and_subscribe_none_raises() -> None:
    """Rule 1.9 for subscribe(None); bad target or buffer_size fail at once."""
    with pytest.raises(TypeError, match=r"event loop or a concurrent\.futures\.Executor"):
        ObserveOnFlow(rstreams.range(0, 1), object())  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="buffer_size"):
        ObserveOnFlow(rstreams.range(0, 1), InlineExecutor(), buffer_size=0)
    with pytest.raises(TypeError, match=r"rule 1\.9"):
        ObserveOnFlow(rstreams.range(0, 1), InlineExecutor()).subscribe(None)  # type: ignore[arg-type]


def test_second_on_subscribe_is_cancelled_and_none_items_raise() -> None:
    """Rules 2.5 and 2.13 on the inner subscriber, checked on the caller's stack."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    ObserveOnFlow(source, InlineExecutor()).subscribe(s)
    inner = source.subscriber
    assert inner is not None
    other: ManualPublisher[int] = ManualPublisher()
    inner.on_subscribe(other)
    assert other.cancelled and other.requests == []
    with pytest.raises(TypeError, match=r"2\.13"):
        inner.on_subscribe(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"2\.13"):
        inner.on_next(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"2\.13"):
        inner.on_error(None)  # type: ignore[arg-type]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("kind", ["executor", "loop"])
def test_passes_the_publisher_tck(kind: str) -> None:
    """The whole PublisherVerification (rules 1.x, 3.x) on observe_on over a pool and over a loop."""
    from rstreams.tck import verify_publisher

    pool = concurrent.futures.ThreadPoolExecutor(4)
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever, daemon=True)
    runner.start()
    target: asyncio.AbstractEventLoop | concurrent.futures.Executor = pool if kind == "executor" else loop

    def create(n: int) -> rstreams.Publisher[int]:
        return ObserveOnFlow(rstreams.range(0, n), target, buffer_size=16)  # lazy even for 2**63-1

    def create_failed() -> rstreams.Publisher[int]:
        return ObserveOnFlow(rstreams.error(RuntimeError("failed publisher")), target)

    try:
        report = verify_publisher(create, create_failed_publisher=create_failed, env=patient_env())
    finally:
        loop.call_soon_threadsafe(loop.stop)
        patience.join(runner)
        loop.close()
        pool.shutdown()
    assert report.ok, str(report)
    assert len(report.passed) >= 30
