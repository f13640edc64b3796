"""MulticastProcessor: pacing by the slowest, errors without demand, auto-cancel (rules 2.x, 3.x, 4.x)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import itertools
import threading
import weakref
from collections.abc import Iterator
from typing import Generic, TypeVar

import pytest

import rstreams
from rstreams.api import Processor, Subscriber, Subscription
from rstreams.errors import (
    InvalidDemandError,
    OverflowStrategyError,
    ResourceClosedError,
    set_unhandled_error_hook,
)
from rstreams.flow._public import MulticastProcessor
from testkit import patience
from testkit.bound import within
from testkit.recording import RecordingSubscriber

T = TypeVar("T")


class ManualPublisher(Subscription, Generic[T]):
    """Driven by hand, or (``auto``) emitting from an iterator synchronously inside ``request``."""

    def __init__(self, auto: Iterator[T] | None = None) -> None:
        self.subscriber: Subscriber[T] | None = None
        self.requests: list[int] = []
        self.cancels = 0
        self._auto = auto

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        self.subscriber = subscriber
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        self.requests.append(n)
        if self._auto is not None and self.subscriber is not None:
            for item in itertools.islice(self._auto, n):
                self.subscriber.on_next(item)

    def cancel(self) -> None:
        self.cancels += 1

    @property
    def cancelled(self) -> bool:
        return self.cancels > 0

    @property
    def requested(self) -> int:
        return sum(self.requests)

    def emit(self, *items: T) -> None:
        assert self.subscriber is not None
        for item in items:
            self.subscriber.on_next(item)


def wired(buffer_size: int = 256, **kw: bool) -> tuple[ManualPublisher[int], MulticastProcessor[int]]:
    upstream: ManualPublisher[int] = ManualPublisher()
    processor: MulticastProcessor[int] = MulticastProcessor(buffer_size=buffer_size, **kw)
    upstream.subscribe(processor)
    return upstream, processor


def subscribed(processor: MulticastProcessor[int], initial: int = 0) -> RecordingSubscriber[int]:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial)
    processor.subscribe(s)
    return s


def test_it_is_a_processor_and_a_flow() -> None:
    """Rule 4.1: a Subscriber and a Publisher; Flow operators work on it."""
    processor: MulticastProcessor[int] = MulticastProcessor()
    as_object: object = processor
    assert isinstance(as_object, Processor)
    assert isinstance(as_object, rstreams.Flow)
    doubled: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    processor.map(lambda x: x * 2).subscribe(doubled)
    rstreams.range(0, 3).subscribe(processor)
    assert doubled.items == [0, 2, 4] and doubled.completed


def test_slowest_subscriber_sets_the_pace() -> None:
    """Upstream's total request never exceeds what the slowest took plus buffer_size."""
    upstream: ManualPublisher[int] = ManualPublisher(auto=itertools.count())
    processor: MulticastProcessor[int] = MulticastProcessor(buffer_size=16)
    fast = subscribed(processor, initial=rstreams.UNBOUNDED)
    slow = subscribed(processor)
    upstream.subscribe(processor)
    assert upstream.requests == [16] and len(fast.items) == 16 and slow.items == []
    for _ in range(200):
        slow.request(1)
        assert upstream.requested <= len(slow.items) + 16
        assert len(fast.items) <= len(slow.items) + 16
    assert slow.items == list(range(200)) and fast.items[:200] == slow.items
    assert len(upstream.requests) < 30, "upstream is asked in batches, not once per element"


def test_nothing_is_requested_upstream_before_some_subscriber_has_demand() -> None:
    """Rule 2.1 on the subscriber side: demand is signalled only when a subscriber asks."""
    upstream, processor = wired()
    a = subscribed(processor)
    subscribed(processor)
    assert upstream.requests == []
    a.request(1)
    assert upstream.requests == [256]


def test_error_reaches_every_subscriber_immediately_without_demand() -> None:
    """Rule 4.2 / TCK subtle point 13: on_error is passed on at once, by identity, buffers dropped."""
    upstream, processor = wired()
    a = subscribed(processor)
    b = subscribed(processor)
    a.request(1)
    upstream.emit(1, 2, 3)
    assert a.items == [1] and b.items == []
    boom = RuntimeError("boom")
    processor.on_error(boom)
    assert a.error is boom and b.error is boom and a.items == [1] and b.items == []
    assert processor.subscriber_count == 0
    late = subscribed(processor)
    assert late.signals == ["on_subscribe", "on_error"] and late.error is boom


def test_complete_follows_each_subscribers_remaining_elements() -> None:
    """Rules 1.5, 4.2: complete waits for the elements a subscriber can still take, then needs no demand."""
    upstream, processor = wired()
    a = subscribed(processor, initial=1)
    b = subscribed(processor)
    upstream.emit(1, 2, 3)
    c = subscribed(processor)  # joins after the elements: nothing left for it
    processor.on_complete()
    assert c.signals == ["on_subscribe", "on_complete"]
    assert a.items == [1] and not a.done and b.items == [] and not b.done
    a.request(5)
    assert a.items == [1, 2, 3] and a.completed
    b.request(3)
    assert b.items == [1, 2, 3] and b.completed and processor.subscriber_count == 0
    late = subscribed(processor)
    assert late.signals == ["on_subscribe", "on_complete"]


def test_a_late_subscriber_sees_only_elements_from_when_it_joined() -> None:
    """Hot semantics: joining puts a subscriber at the buffer's tail."""
    upstream, processor = wired()
    a = subscribed(processor, initial=100)
    upstream.emit(1, 2)
    b = subscribed(processor, initial=100)
    upstream.emit(3)
    assert a.items == [1, 2, 3] and b.items == [3]


def test_elements_requested_long_ago_are_buffered_per_subscriber() -> None:
    """The TCK's 'requested long ago' scenario: a subscriber with zero demand does not hold back another."""
    upstream, processor = wired()
    sub1 = subscribed(processor)
    sub1.request(20)
    assert upstream.requested >= 1
    upstream.emit(1, 2)
    sub2 = subscribed(processor)
    upstream.emit(3)
    assert sub1.items == [1, 2, 3] and sub2.items == []
    sub2.request(1)
    assert sub2.items == [3]
    processor.on_complete()
    assert sub1.completed and sub2.completed


def test_last_subscriber_cancelling_cancels_upstream() -> None:
    """auto_cancel / TCK subtle point 13: the only downstream cancels -> the upstream is cancelled."""
    upstream, processor = wired()
    a = subscribed(processor, initial=1)
    b = subscribed(processor)
    assert processor.subscriber_count == 2
    a.cancel()
    assert upstream.cancels == 0 and processor.subscriber_count == 1
    b.cancel()
    assert upstream.cancelled and processor.subscriber_count == 0
    upstream.emit(9)  # a late element after cancel is ignored (3.12)
    late = subscribed(processor)
    assert isinstance(late.error, ResourceClosedError) and "auto_cancel" in str(late.error)


def test_without_auto_cancel_the_upstream_outlives_its_subscribers() -> None:
    """auto_cancel=False: nothing is cancelled; a new subscriber resumes the flow."""
    upstream: ManualPublisher[int] = ManualPublisher(auto=itertools.count())
    processor: MulticastProcessor[int] = MulticastProcessor(buffer_size=4, auto_cancel=False)
    upstream.subscribe(processor)
    a = subscribed(processor, initial=2)
    a.cancel()
    assert upstream.cancels == 0 and processor.subscriber_count == 0
    b = subscribed(processor, initial=3)
    assert upstream.cancels == 0 and len(b.items) == 3
    assert b.items == sorted(b.items) and b.items[0] > a.items[-1]


def test_subscriber_may_arrive_before_the_upstream() -> None:
    """TCK subtle point 13: downstream first, upstream later; demand then flows up."""
    processor: MulticastProcessor[int] = MulticastProcessor(buffer_size=8)
    a = subscribed(processor, initial=3)
    assert a.signals == ["on_subscribe"]
    upstream: ManualPublisher[int] = ManualPublisher()
    upstream.subscribe(processor)
    assert upstream.requests == [8]
    upstream.emit(1, 2, 3, 4)
    assert a.items == [1, 2, 3]


def test_upstream_arriving_after_auto_cancel_is_cancelled() -> None:
    """The processor ended when its last subscriber left: a later upstream is cancelled unused."""
    processor: MulticastProcessor[int] = MulticastProcessor()
    subscribed(processor, initial=1).cancel()
    upstream: ManualPublisher[int] = ManualPublisher()
    upstream.subscribe(processor)
    assert upstream.cancelled and upstream.requests == []


def test_second_on_subscribe_is_cancelled_and_none_arguments_raise() -> None:
    """Rules 2.5 and 2.13 on the processor's Subscriber side (None checked before the duplicate check)."""
    upstream, processor = wired()
    other: ManualPublisher[int] = ManualPublisher()
    processor.on_subscribe(other)
    assert other.cancelled and other.requests == [] and upstream.cancels == 0
    with pytest.raises(TypeError, match=r"2\.13"):
        processor.on_subscribe(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"2\.13"):
        processor.on_next(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"2\.13"):
        processor.on_error(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"1\.9"):
        processor.subscribe(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="buffer_size"):
        MulticastProcessor(buffer_size=0)


def test_invalid_request_fails_only_that_subscriber() -> None:
    """Rules 3.9, 3.16: on_error(InvalidDemandError) to the offender; the others keep going."""
    upstream, processor = wired()
    bad = subscribed(processor)
    good = subscribed(processor, initial=5)
    bad.request(-1)
    assert isinstance(bad.error, InvalidDemandError) and "3.9" in str(bad.error)
    bad.request(1)  # rule 3.6: a no-op afterwards
    assert bad.signals == ["on_subscribe", "on_error"]
    upstream.emit(1, 2)
    assert good.items == [1, 2] and upstream.cancels == 0
    good.request(0)  # the last subscriber removed for a bad request: auto_cancel applies
    assert isinstance(good.error, InvalidDemandError) and upstream.cancelled


def test_upstream_breaking_rule_1_1_fails_the_processor() -> None:
    """An element beyond the requested amount is an overflow error for everyone, upstream cancelled."""
    upstream, processor = wired()
    a = subscribed(processor)
    upstream.emit(1)
    assert isinstance(a.error, OverflowStrategyError) and "1.1" in str(a.error) and upstream.cancelled


def test_demand_saturates_and_reentrant_requests_are_trampolined() -> None:
    """Rules 3.3 and 3.17 through a synchronous upstream."""
    depth = max_depth = 0

    class Reentrant(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            nonlocal depth, max_depth
            depth += 1
            max_depth = max(max_depth, depth)
            super().on_next(item)
            self.request(1)
            depth -= 1

    processor: MulticastProcessor[int] = MulticastProcessor(buffer_size=8)
    one_by_one = Reentrant(initial=1)
    processor.subscribe(one_by_one)
    unbounded = subscribed(processor, initial=rstreams.UNBOUNDED - 1)
    unbounded.request(rstreams.UNBOUNDED - 1)
    rstreams.range(0, 3000).subscribe(processor)
    assert one_by_one.items == list(range(3000)) and one_by_one.completed and max_depth == 1
    assert unbounded.items == list(range(3000)) and unbounded.completed and unbounded.error is None


def test_raising_subscriber_is_removed_and_reported_others_continue() -> None:
    """Rule 2.13: a subscriber whose on_next raises is treated as cancelled."""
    reported: list[BaseException] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append(e))
    try:

        class Broken(RecordingSubscriber[int]):
            def on_next(self, item: int) -> None:
                super().on_next(item)
                raise ValueError("user bug")

        upstream, processor = wired()
        broken = Broken(initial=5)
        processor.subscribe(broken)
        good = subscribed(processor, initial=5)
        upstream.emit(1, 2)
        assert broken.items == [1] and good.items == [1, 2] and processor.subscriber_count == 1
        assert len(reported) == 1 and isinstance(reported[0], ValueError) and upstream.cancels == 0
    finally:
        set_unhandled_error_hook(previous)


def test_cancel_drops_the_subscriber() -> None:
    """Rule 3.13: after cancel the processor holds no reference to the subscriber."""
    upstream, processor = wired()

    def subscribe_and_cancel() -> weakref.ref[RecordingSubscriber[int]]:
        s = subscribed(processor, initial=2)
        upstream.emit(1)
        s.cancel()
        return weakref.ref(s)

    keep = subscribed(processor)  # keeps the processor (and its upstream) alive
    ref = subscribe_and_cancel()
    gc.collect()
    assert ref() is None and processor.subscriber_count == 1 and keep.items == []


@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
def test_serial_delivery_with_upstream_and_requests_on_other_threads() -> None:
    """Rule 1.3: on_next from a pool thread, requests from two more threads; no overlap, order kept."""
    n = 5000
    violations = 0

    class Serial(RecordingSubscriber[int]):
        def __init__(self) -> None:
            super().__init__()
            self.busy = threading.Lock()

        def on_next(self, item: int) -> None:
            nonlocal violations
            if not self.busy.acquire(blocking=False):
                violations += 1
                return
            try:
                super().on_next(item)
            finally:
                self.busy.release()

    processor: MulticastProcessor[int] = MulticastProcessor(buffer_size=32)
    subscribers = [Serial(), Serial()]
    for s in subscribers:
        processor.subscribe(s)

    def ask(s: Serial) -> None:
        for _ in range(n):
            s.request(1)

    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        rstreams.range(0, n).observe_on(pool, buffer_size=16).subscribe(processor)
        threads = [threading.Thread(target=ask, args=(s,)) for s in subscribers]
        for t in threads:
            t.start()
        for t in threads:
            patience.join(t)
        for s in subscribers:
            s.await_done()
    assert violations == 0
    for s in subscribers:
        assert s.items == list(range(n)) and s.completed


@pytest.mark.timeout(60)
def test_passes_the_identity_processor_tck() -> None:
    """The whole IdentityProcessorVerification: subscriber side, publisher side, rules 4.x."""
    from rstreams.tck import verify_processor

    def create_failed() -> MulticastProcessor[int]:
        processor: MulticastProcessor[int] = MulticastProcessor()
        rstreams.error(RuntimeError("failed upstream")).subscribe(processor)
        return processor

    report = verify_processor(
        lambda buffer_size: MulticastProcessor(buffer_size=buffer_size),
        does_coordinated_emission=False,
        create_failed_publisher=create_failed,
    )
    assert report.ok, str(report)
    assert len(report.passed) >= 45


@pytest.mark.asyncio
@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
async def test_subscribers_on_an_event_loop_through_observe_on() -> None:
    """A processor fed from a thread, consumed on the loop: both subscribers get everything there."""
    loop = asyncio.get_running_loop()
    loop_thread = threading.get_ident()
    processor: MulticastProcessor[int] = MulticastProcessor(buffer_size=16)
    finished = [loop.create_future() for _ in range(2)]
    threads_seen: set[int] = set()

    class OnLoop(RecordingSubscriber[int]):
        def __init__(self, done: asyncio.Future[None]) -> None:
            super().__init__(initial=rstreams.UNBOUNDED)
            self.finished = done

        def on_next(self, item: int) -> None:
            threads_seen.add(threading.get_ident())
            super().on_next(item)

        def on_complete(self) -> None:
            super().on_complete()
            self.finished.set_result(None)

    subscribers = [OnLoop(done) for done in finished]
    for s in subscribers:
        processor.observe_on(loop, buffer_size=8).subscribe(s)
    feeder = threading.Thread(target=rstreams.range(0, 2000).subscribe, args=(processor,))
    feeder.start()
    await within(asyncio.gather(*finished))
    patience.join(feeder)
    assert threads_seen == {loop_thread}
    for s in subscribers:
        assert s.items == list(range(2000))
