"""``merge`` and ``flat_map``: exact demand, concurrency limit, threads, errors, cancel (rules 1.x-4.2)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import InvalidDemandError, OverflowStrategyError, set_unhandled_error_hook
from rstreams.flow._merge import FlatMapFlow, merge
from testkit import patience
from testkit.bound import within
from testkit.publishers import (
    ActivityProbe,
    ManualPublisher,
    SerialChecker,
    ThreadPublisher,
    drive,
    requesting,
)
from testkit.recording import RecordingSubscriber


def test_merge_delivers_every_element_keeping_each_sources_order() -> None:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    merge(rstreams.range(0, 5), rstreams.range(10, 15), rstreams.empty()).subscribe(s)
    assert sorted(s.items) == [*range(5), *range(10, 15)] and s.completed
    assert [x for x in s.items if x < 10] == list(range(5))


def test_downstream_demand_is_honoured_exactly_while_sources_prefetch() -> None:
    """Rule 1.1: sources may be ahead by ``prefetch`` but the downstream gets only what it asked."""
    a: ManualPublisher[str] = ManualPublisher()
    b: ManualPublisher[str] = ManualPublisher()
    s: RecordingSubscriber[str] = RecordingSubscriber()
    merge(a, b, prefetch=4).subscribe(s)
    assert a.requests == [4] and b.requests == [4]  # prefetched before any downstream demand
    a.emit("a1", "a2", "a3", "a4")
    b.emit("b1", "b2")
    assert s.items == []
    s.request(3)
    assert len(s.items) == 3
    s.request(1)
    assert len(s.items) == 4
    s.request(100)
    assert Counter(s.items) == Counter(["a1", "a2", "a3", "a4", "b1", "b2"])
    assert [x for x in s.items if x[0] == "a"] == ["a1", "a2", "a3", "a4"]
    # replenished in batches of at least 4 - 4 // 4 = 3, only by what was used: never more than 4 ahead
    assert a.requests[0] == 4 and all(n >= 3 for n in a.requests[1:]) and a.requested <= 4 + 4
    assert a.outstanding <= 4
    a.complete()
    assert not s.done
    b.complete()
    assert s.completed


def test_flat_map_subscribes_at_most_max_concurrency_inners_at_once() -> None:
    """The upstream is asked for max_concurrency, then one more per finished inner."""
    outer: ManualPublisher[int] = ManualPublisher()
    inners: list[ManualPublisher[int]] = []

    def fn(x: int) -> Publisher[int]:
        inner: ManualPublisher[int] = ManualPublisher()
        inners.append(inner)
        return inner

    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    outer.flat_map(fn, max_concurrency=2, prefetch=3).subscribe(s)
    assert outer.requests == [2]
    outer.emit(1, 2)
    assert [p.requests for p in inners] == [[3], [3]]
    inners[1].emit(20)
    inners[1].complete()
    assert outer.requests == [2, 1]
    outer.emit(3)
    inners[2].emit(30)
    inners[0].emit(10)
    assert s.items == [20, 30, 10]


@pytest.mark.timeout(20)
def test_flat_map_concurrency_limit_holds_with_inners_on_threads() -> None:
    """No more than max_concurrency inners are ever subscribed and not yet finished."""
    probe = ActivityProbe()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=rstreams.UNBOUNDED)
    flow = rstreams.range(0, 40).flat_map(
        lambda x: probe.wrap(ThreadPublisher(range(x * 10, x * 10 + 10))), max_concurrency=3, prefetch=4
    )
    flow.subscribe(s)
    s.await_done()
    assert s.completed and sorted(s.items) == list(range(400))
    assert probe.subscribed == 40 and probe.max_active <= 3 and probe.active == 0


@pytest.mark.timeout(20)
def test_merge_of_sources_on_different_threads_never_overlaps_signals() -> None:
    """Rule 1.3: concurrent inner signals reach the downstream one at a time."""
    release = threading.Event()
    sources = [ThreadPublisher(range(k * 1000, k * 1000 + 500), hold=release) for k in range(6)]
    recorder: RecordingSubscriber[int] = RecordingSubscriber()
    checker = SerialChecker(recorder)
    merge(*sources, prefetch=8).subscribe(checker)
    release.set()  # all threads start emitting together
    requesters = [threading.Thread(target=requesting(recorder, 3, 500)) for _ in range(2)]
    for t in requesters:
        t.start()
    for t in requesters:
        patience.join(t)
    recorder.await_done()
    assert recorder.completed and checker.overlaps == 0
    assert len(recorder.items) == 3000 and sorted(recorder.items) == sorted(
        x for k in range(6) for x in range(k * 1000, k * 1000 + 500)
    )
    for k in range(6):
        assert [x for x in recorder.items if x // 1000 == k] == list(range(k * 1000, k * 1000 + 500))


def test_an_error_cancels_all_siblings_and_the_upstream_and_is_signalled_once() -> None:
    """Rule 4.2: the first error wins; a later one goes to the unhandled-error hook."""
    reported: list[BaseException] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append(e))
    try:
        outer: ManualPublisher[int] = ManualPublisher()
        inners: list[ManualPublisher[int]] = []

        def fn(x: int) -> Publisher[int]:
            inner: ManualPublisher[int] = ManualPublisher()
            inners.append(inner)
            return inner

        s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
        outer.flat_map(fn).subscribe(s)
        outer.emit(1, 2, 3)
        first, second = RuntimeError("first"), RuntimeError("second")
        inners[1].fail(first)
        assert s.error is first and s.signals.count("on_error") == 1
        assert outer.cancelled == 1 and inners[0].cancelled == 1 and inners[2].cancelled == 1
        assert inners[1].cancelled == 0  # it failed: nothing to cancel
        inners[0].fail(second)  # a late error from a cancelled sibling
        assert s.signals.count("on_error") == 1 and reported == [second]
    finally:
        set_unhandled_error_hook(previous)


@pytest.mark.timeout(20)
def test_an_error_on_one_thread_cancels_the_siblings_on_theirs() -> None:
    """Rule 4.2 across threads: the failing source's error arrives once, the others are cancelled."""
    boom = RuntimeError("source 0 failed")
    release = threading.Event()
    failing = ThreadPublisher(range(10), fail=boom, hold=release)  # starts once all are subscribed
    endless = [ThreadPublisher(range(100_000)) for _ in range(3)]
    recorder: RecordingSubscriber[int] = RecordingSubscriber(initial=rstreams.UNBOUNDED)
    checker = SerialChecker(recorder)
    merge(failing, *endless).subscribe(checker)
    release.set()
    recorder.await_done()
    assert recorder.error is boom and recorder.signals.count("on_error") == 1
    for source in endless:
        assert patience.wait(source.cancelled)
    assert checker.overlaps == 0


@pytest.mark.timeout(20)
def test_cancel_from_another_thread_cancels_every_threaded_source() -> None:
    """Rules 3.5, 3.13: a cancel racing with emissions reaches every source."""
    sources = [ThreadPublisher(range(100_000)) for _ in range(4)]
    recorder: RecordingSubscriber[int] = RecordingSubscriber(initial=rstreams.UNBOUNDED)
    rstreams.from_iterable(sources).flat_map(lambda p: p, max_concurrency=4).subscribe(recorder)
    recorder.await_items(1000)
    canceller = threading.Thread(target=recorder.cancel)
    canceller.start()
    patience.join(canceller)
    for source in sources:
        assert patience.wait(source.cancelled)
    assert not recorder.done


def test_upstream_error_cancels_the_inners() -> None:
    outer: ManualPublisher[int] = ManualPublisher()
    inner: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    outer.flat_map(lambda x: inner).subscribe(s)
    outer.emit(1)
    boom = RuntimeError("outer")
    outer.fail(boom)
    assert s.error is boom and inner.cancelled == 1 and outer.cancelled == 0


def test_fn_raising_fails_the_stream_and_cancels_upstream() -> None:
    def fn(x: int) -> Publisher[int]:
        raise KeyError(x)

    outer: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    outer.flat_map(fn).subscribe(s)
    outer.emit(7)
    assert isinstance(s.error, KeyError) and outer.cancelled == 1


def test_invalid_request_signals_invalid_demand_error_and_cancels_sources() -> None:
    """Rule 3.9: signalled through on_error from the drain loop, never raised."""
    a: ManualPublisher[int] = ManualPublisher()
    b: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    merge(a, b).subscribe(s)
    s.request(-1)
    assert isinstance(s.error, InvalidDemandError) and "-1" in str(s.error)
    assert a.cancelled == 1 and b.cancelled == 1


def test_cancel_stops_everything_and_later_calls_are_noops() -> None:
    """Rules 3.5-3.7, 3.12: every source cancelled; late elements are dropped."""
    a: ManualPublisher[int] = ManualPublisher()
    b: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    merge(a, b).subscribe(s)
    a.emit(1)
    s.cancel()
    s.cancel()
    s.request(0)
    b.emit(2)
    b.complete()
    assert s.items == [1] and not s.done and a.cancelled == 1 and b.cancelled == 1


def test_an_inner_sending_more_than_requested_fails_the_stream() -> None:
    """Rule 1.1 broken by an inner: the bounded queue refuses to grow."""
    a: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    merge(a, prefetch=2).subscribe(s)
    a.emit(1, 2, 3, force=True)
    assert isinstance(s.error, OverflowStrategyError) and "rule 1.1" in str(s.error)


def test_reentrant_requests_do_not_recurse() -> None:
    """Rule 3.3: request(1) inside on_next only adds demand."""
    depth = 0
    max_depth = 0

    class Reentrant(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            nonlocal depth, max_depth
            depth += 1
            max_depth = max(max_depth, depth)
            super().on_next(item)
            self.request(1)
            depth -= 1

    s = Reentrant(initial=1)
    merge(rstreams.range(0, 3000), rstreams.range(0, 3000)).subscribe(s)
    assert s.completed and len(s.items) == 6000 and max_depth == 1


def test_empty_merge_and_bad_arguments() -> None:
    s: RecordingSubscriber[int] = RecordingSubscriber()
    merge().subscribe(s)
    assert s.signals == ["on_subscribe", "on_complete"]
    with pytest.raises(TypeError, match=r"merge\(\) needs Publishers"):
        merge(rstreams.just(1), [2])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_concurrency needs an int >= 1, got 0"):
        FlatMapFlow(rstreams.just(1), rstreams.just, max_concurrency=0)
    with pytest.raises(ValueError, match="prefetch needs an int >= 1"):
        rstreams.just(1).merge_with(rstreams.just(2), prefetch=-1)
    with pytest.raises(TypeError, match=r"rule 1\.9"):
        merge(rstreams.just(1)).subscribe(None)  # type: ignore[arg-type]


def test_flow_merge_with_merges_self_and_others() -> None:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    rstreams.just(1, 2).merge_with(rstreams.just(3)).subscribe(s)
    assert sorted(s.items) == [1, 2, 3] and s.completed


@pytest.mark.asyncio
@pytest.mark.timeout(20)
async def test_merge_of_threaded_sources_completes_an_asyncio_future() -> None:
    """Signals from worker threads, result handed to the event loop thread-safely."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[list[int]] = loop.create_future()

    class ToFuture(Subscriber[int]):
        def __init__(self) -> None:
            self.items: list[int] = []

        def on_subscribe(self, subscription: Subscription) -> None:
            subscription.request(rstreams.UNBOUNDED)

        def on_next(self, item: int) -> None:
            self.items.append(item)

        def on_error(self, error: BaseException) -> None:
            loop.call_soon_threadsafe(done.set_exception, error)

        def on_complete(self) -> None:
            loop.call_soon_threadsafe(done.set_result, self.items)

    merge(ThreadPublisher(range(100)), ThreadPublisher(range(100, 200))).subscribe(ToFuture())
    items = await within(done)
    assert sorted(items) == list(range(200))


@given(
    sizes=st.lists(st.integers(0, 6), max_size=10),
    max_concurrency=st.integers(1, 4),
    prefetch=st.integers(1, 4),
    requests=st.lists(st.integers(1, 6), max_size=12),
)
def test_flat_map_delivers_every_inner_element_in_inner_order_under_any_request_pattern(
    sizes: list[int], max_concurrency: int, prefetch: int, requests: list[int]
) -> None:
    """Property: the multiset of elements is the concatenation's; each inner keeps its order (1.1)."""
    flow = rstreams.from_iterable(list(enumerate(sizes))).flat_map(
        lambda pair: rstreams.range(0, pair[1]).map(lambda k: (pair[0], k)),
        max_concurrency=max_concurrency,
        prefetch=prefetch,
    )
    s = drive(flow, requests)
    assert s.completed
    assert Counter(s.items) == Counter((i, k) for i, n in enumerate(sizes) for k in range(n))
    for i, n in enumerate(sizes):
        assert [k for j, k in s.items if j == i] == list(range(n))


def test_flat_map_and_merge_pass_the_publisher_tck() -> None:
    """Every PublisherVerification case (rules 1.x-3.x) for both entry points."""
    from rstreams.tck import verify_publisher

    flat = verify_publisher(
        lambda n: rstreams.from_iterable(range(n)).flat_map(lambda x: rstreams.just(x)),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).flat_map(rstreams.just),
    )
    assert flat.ok, str(flat)
    merged = verify_publisher(
        lambda n: merge(rstreams.from_iterable(range(n // 2)), rstreams.from_iterable(range(n - n // 2))),
        create_failed_publisher=lambda: merge(rstreams.just(1), rstreams.error(RuntimeError("failed"))),
    )
    assert merged.ok, str(merged)
    assert len(flat.passed) >= 29 and len(merged.passed) >= 29


def test_an_inner_error_after_cancel_is_reported_naming_the_operator() -> None:
    """Rule 3.12: a cancelled inner may still fail; nobody can receive it, so it is reported."""
    reported: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append((e, where)))
    try:
        first: ManualPublisher[int] = ManualPublisher()
        second: ManualPublisher[int] = ManualPublisher()
        s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
        rstreams.merge(first, second).subscribe(s)
        first.emit(1)
        s.cancel()
        assert first.cancelled == 1 and second.cancelled == 1
        late = RuntimeError("late")
        second.fail(late)
        second.complete()  # ignored: the inner is done
        assert s.items == [1] and s.signals == ["on_subscribe", "on_next"]
        assert reported == [(late, "merge: an inner Publisher's error after it was cancelled")]
    finally:
        set_unhandled_error_hook(previous)
