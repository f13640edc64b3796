"""``concat_map``: order, demand carried across inners, prefetch, threads, errors, cancel (rules 1.x-3.x)."""

from __future__ import annotations

import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import InvalidDemandError, set_unhandled_error_hook
from testkit.publishers import ManualPublisher, SerialChecker, ThreadPublisher, drive, requesting
from testkit.recording import RecordingSubscriber


class Inners:
    """A ``fn`` for concat_map that hands out a fresh ManualPublisher per element and keeps them."""

    def __init__(self) -> None:
        self.made: list[ManualPublisher[str]] = []

    def __call__(self, x: int) -> Publisher[str]:
        publisher: ManualPublisher[str] = ManualPublisher()
        self.made.append(publisher)
        return publisher


def test_inner_elements_come_in_order_one_inner_after_another() -> None:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    rstreams.range(1, 4).concat_map(lambda x: rstreams.range(x * 10, x * 10 + x)).subscribe(s)
    assert s.items == [10, 20, 21, 30, 31, 32] and s.completed


def test_outstanding_demand_carries_over_from_one_inner_to_the_next() -> None:
    """Rule 1.1: an inner is asked exactly for what the downstream still wants, no more."""
    outer: ManualPublisher[int] = ManualPublisher()
    inners = Inners()
    s: RecordingSubscriber[str] = RecordingSubscriber()
    outer.concat_map(inners).subscribe(s)
    assert outer.requests == [2]  # the prefetch
    outer.emit(1, 2)
    assert len(inners.made) == 1 and inners.made[0].requests == []  # subscribed, nothing asked yet
    s.request(3)
    assert inners.made[0].requests == [3]
    inners.made[0].emit("a", "b")
    inners.made[0].complete()
    assert len(inners.made) == 2 and inners.made[1].requests == [1]  # the one still owed
    inners.made[1].emit("c")
    assert s.items == ["a", "b", "c"]
    s.request(2)
    assert inners.made[1].requests == [1, 2]
    assert inners.made[1].outstanding == 2  # exactly the downstream's outstanding demand


def test_at_most_prefetch_upstream_elements_are_held_and_replenished_in_batches() -> None:
    """prefetch=4 asks for 4 up front and 3 (= 4 - 4 // 4) more after 3 have been used."""
    outer: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    outer.concat_map(lambda x: rstreams.just(x), prefetch=4).subscribe(s)
    assert outer.requests == [4]
    outer.emit(1, 2)
    assert outer.requests == [4] and s.items == [1, 2]
    outer.emit(3)
    assert outer.requests == [4, 3]
    for x in range(4, 20):
        outer.emit(x)
        assert outer.outstanding <= 4  # requested and not yet arrived: never above prefetch
    assert outer.requests == [4, 3, 3, 3, 3, 3, 3] and s.items == list(range(1, 20))
    outer.complete()
    assert s.completed


def test_inner_publisher_need_not_be_a_flow() -> None:
    """Any rstreams.api.Publisher works as an inner."""

    class Plain:
        def __init__(self, x: int) -> None:
            self.x = x

        def subscribe(self, subscriber: Subscriber[int]) -> None:
            rstreams.just(self.x, self.x).subscribe(subscriber)

    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    rstreams.range(0, 3).concat_map(Plain).subscribe(s)
    assert s.items == [0, 0, 1, 1, 2, 2] and s.completed


@pytest.mark.timeout(20)
def test_inners_on_other_threads_keep_order_and_signals_serial() -> None:
    """Rule 1.3: inners emitting from their own threads never overlap on the downstream."""
    recorder: RecordingSubscriber[int] = RecordingSubscriber()
    checker = SerialChecker(recorder)
    rstreams.range(0, 20).concat_map(lambda x: ThreadPublisher(range(x * 100, x * 100 + 50))).subscribe(
        checker
    )
    requester = threading.Thread(target=requesting(recorder, 7, 200))
    requester.start()
    requester.join(10)
    recorder.await_done()
    assert recorder.items == [x * 100 + k for x in range(20) for k in range(50)] and recorder.completed
    assert checker.overlaps == 0


def test_reentrant_requests_do_not_recurse() -> None:
    """Rule 3.3: request(1) inside on_next adds demand; the drain loop emits the next element."""
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
    rstreams.range(0, 5000).concat_map(lambda x: rstreams.just(x)).subscribe(s)
    assert s.completed and len(s.items) == 5000 and max_depth == 1


def test_inner_error_cancels_upstream_and_is_signalled_once() -> None:
    """Rule 4.2: the first error ends the stream; the upstream is cancelled."""
    outer: ManualPublisher[int] = ManualPublisher()
    inners = Inners()
    s: RecordingSubscriber[str] = RecordingSubscriber(initial=5)
    outer.concat_map(inners).subscribe(s)
    outer.emit(1, 2)
    boom = RuntimeError("inner failed")
    inners.made[0].emit("a")
    inners.made[0].fail(boom)
    assert s.items == ["a"] and s.error is boom and outer.cancelled == 1
    assert len(inners.made) == 1 and s.signals.count("on_error") == 1


def test_upstream_error_cancels_the_active_inner() -> None:
    outer: ManualPublisher[int] = ManualPublisher()
    inners = Inners()
    s: RecordingSubscriber[str] = RecordingSubscriber(initial=5)
    outer.concat_map(inners).subscribe(s)
    outer.emit(1)
    boom = RuntimeError("outer failed")
    outer.fail(boom)
    assert s.error is boom and inners.made[0].cancelled == 1 and outer.cancelled == 0


class _FailsUpstream(Publisher[str]):
    """Inside ``request`` sends ``items``, then makes the upstream fail (the same call)."""

    def __init__(self, items: list[str], upstream: ManualPublisher[int], error: BaseException) -> None:
        self.items, self.upstream, self.error = items, upstream, error
        self.cancelled = 0

    def subscribe(self, subscriber: Subscriber[str]) -> None:
        publisher = self

        class Sub(Subscription):
            def request(self, n: int) -> None:
                for item in publisher.items[:n]:
                    subscriber.on_next(item)
                publisher.upstream.fail(publisher.error)
                subscriber.on_next("late")  # sent after the error, before the loop cancels it

            def cancel(self) -> None:
                publisher.cancelled += 1

        subscriber.on_subscribe(Sub())


def test_an_upstream_error_comes_after_the_inner_elements_already_received() -> None:
    """Reactor's concatMap (IMMEDIATE, its default) hands an inner's element straight on, so
    what the inner sent before an upstream error reaches the downstream before it. Here the
    inner's elements wait in the queue (a synchronous inner, inside the loop's request) when
    the upstream fails: they go out, then the error. What the inner sends after the error is
    dropped (in reactor the error has gone out by then), and so are upstream elements not yet
    mapped; the inner is cancelled."""
    outer: ManualPublisher[int] = ManualPublisher()
    boom = RuntimeError("outer failed")
    inner = _FailsUpstream(["a", "b"], outer, boom)
    mapped: list[int] = []

    def fn(x: int) -> Publisher[str]:
        mapped.append(x)
        return inner

    s: RecordingSubscriber[str] = RecordingSubscriber(initial=5)
    outer.concat_map(fn, prefetch=2).subscribe(s)
    outer.emit(1, 2)
    assert s.items == ["a", "b"]
    assert s.error is boom and s.signals.count("on_error") == 1
    assert inner.cancelled == 1 and mapped == [1]


def test_fn_raising_or_returning_a_non_publisher_fails_the_stream() -> None:
    boom = ValueError("bad element")

    def fn(x: int) -> Publisher[int]:
        if x == 2:
            raise boom
        return rstreams.just(x)

    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    rstreams.range(0, 5).concat_map(fn).subscribe(s)
    assert s.items == [0, 1] and s.error is boom

    s2: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    rstreams.range(0, 5).concat_map(lambda x: [x]).subscribe(s2)  # type: ignore[arg-type, return-value]
    assert isinstance(s2.error, TypeError) and "must return a Publisher" in str(s2.error)


def test_cancel_stops_upstream_and_inner() -> None:
    """Rules 3.5, 3.13: cancel cancels both Subscriptions; late signals are dropped.

    A late error cannot reach anybody (rule 3.12): it is reported, naming the operator.
    """
    reported: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append((e, where)))
    try:
        outer: ManualPublisher[int] = ManualPublisher()
        inners = Inners()
        s: RecordingSubscriber[str] = RecordingSubscriber(initial=5)
        outer.concat_map(inners).subscribe(s)
        outer.emit(1)
        s.cancel()
        s.cancel()
        s.request(3)  # rule 3.6: a no-op
        inners.made[0].emit("late")
        assert outer.cancelled == 1 and inners.made[0].cancelled == 1
        late = RuntimeError("late")
        inners.made[0].fail(late)
        inners.made[0].complete()
        assert s.items == [] and not s.done
        assert reported == [(late, "concat_map: an inner Publisher's error after it was cancelled")]
    finally:
        set_unhandled_error_hook(previous)


def test_invalid_request_signals_error_and_cancels_everything() -> None:
    """Rule 3.9: request(0) is signalled as on_error(InvalidDemandError) from the drain loop."""
    outer: ManualPublisher[int] = ManualPublisher()
    inners = Inners()
    s: RecordingSubscriber[str] = RecordingSubscriber()
    outer.concat_map(inners).subscribe(s)
    outer.emit(1)
    s.request(0)
    assert isinstance(s.error, InvalidDemandError)
    assert outer.cancelled == 1 and inners.made[0].cancelled == 1


def test_empty_outer_and_empty_inners_complete_without_demand() -> None:
    """Rule 1.5: on_complete needs no request."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.empty().concat_map(lambda x: rstreams.just(1)).subscribe(s)
    assert s.signals == ["on_subscribe", "on_complete"]
    s2: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 3).concat_map(lambda x: rstreams.empty()).subscribe(s2)
    assert s2.signals == ["on_subscribe", "on_complete"]


def test_unbounded_demand_reaches_each_inner_as_a_bounded_window() -> None:
    """Rule 3.17 downstream, a window upstream: each inner is owed at most INNER_WINDOW."""
    from rstreams.flow._concat_map import INNER_WINDOW

    outer: ManualPublisher[int] = ManualPublisher()
    inners = Inners()
    s: RecordingSubscriber[str] = RecordingSubscriber(initial=rstreams.UNBOUNDED)
    outer.concat_map(inners).subscribe(s)
    outer.emit(1, 2)
    first = inners.made[0]
    first.emit(*["a"] * (INNER_WINDOW // 2))
    assert first.requests == [INNER_WINDOW, INNER_WINDOW // 2]  # topped up at half used
    first.complete()
    assert inners.made[1].requests == [INNER_WINDOW]


def test_an_endless_synchronous_inner_stops_at_a_cancel() -> None:
    """A cancel inside on_next ends an endless inner: nothing is pulled past the window."""
    import itertools

    pulled = itertools.count()

    class CancelAtFive(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            super().on_next(item)
            if len(self.items) == 5:
                self.cancel()

    s = CancelAtFive(initial=rstreams.UNBOUNDED)
    endless = rstreams.from_iterable(next(pulled) for _ in itertools.repeat(None))
    rstreams.just(1).concat_map(lambda _: endless).subscribe(s)
    assert s.items == [0, 1, 2, 3, 4] and not s.done
    assert next(pulled) <= 256 + 1


def test_a_raising_downstream_is_cancelled_and_reported() -> None:
    """Rule 2.13: an on_next that raises cancels the subscription; the error is reported."""
    reported: list[BaseException] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append(e))
    try:

        class Broken(RecordingSubscriber[int]):
            def on_next(self, item: int) -> None:
                super().on_next(item)
                raise ValueError("user bug")

        outer: ManualPublisher[int] = ManualPublisher()
        s = Broken(initial=5)
        outer.concat_map(lambda x: rstreams.just(x, x)).subscribe(s)
        outer.emit(1)
        assert s.items == [1] and outer.cancelled == 1 and isinstance(reported[0], ValueError)
    finally:
        set_unhandled_error_hook(previous)


def test_bad_arguments_are_refused_at_build_time() -> None:
    with pytest.raises(TypeError, match="callable"):
        rstreams.range(0, 1).concat_map(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="prefetch needs an int >= 1, got 0"):
        rstreams.range(0, 1).concat_map(rstreams.just, prefetch=0)
    with pytest.raises(TypeError, match=r"rule 1\.9"):
        rstreams.range(0, 1).concat_map(rstreams.just).subscribe(None)  # type: ignore[arg-type]


@given(
    sizes=st.lists(st.integers(0, 6), max_size=12),
    prefetch=st.integers(1, 5),
    requests=st.lists(st.integers(1, 6), max_size=12),
)
def test_concat_map_equals_list_concatenation_under_any_request_pattern(
    sizes: list[int], prefetch: int, requests: list[int]
) -> None:
    """Property: elements in inner order, never more than requested (rule 1.1)."""
    flow = rstreams.from_iterable(sizes).concat_map(lambda n: rstreams.range(0, n), prefetch=prefetch)
    s = drive(flow, requests)
    assert s.items == [k for n in sizes for k in range(n)] and s.completed


def test_concat_map_passes_the_publisher_tck() -> None:
    """Every PublisherVerification case (rules 1.x-3.x), one single-element inner per element."""
    from rstreams.tck import verify_publisher

    report = verify_publisher(
        lambda n: rstreams.from_iterable(range(n)).concat_map(lambda x: rstreams.just(x)),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).concat_map(rstreams.just),
    )
    assert report.ok, str(report)
    assert len(report.passed) >= 30


class _Eager(Publisher[int]):
    """Sends its numbers inside ``request``, one ``on_next`` each, then ``error`` (or completes)."""

    def __init__(self, items: list[int], error: BaseException | None) -> None:
        self.items, self.error = items, error

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        left, error = list(self.items), self.error

        class Sub(Subscription):
            ended = False

            def request(self, n: int) -> None:
                while n > 0 and left and not self.ended:
                    n -= 1
                    subscriber.on_next(left.pop(0))
                if not left and not self.ended:
                    self.ended = True
                    if error is None:
                        subscriber.on_complete()
                    else:
                        subscriber.on_error(error)

            def cancel(self) -> None:
                self.ended = True

        subscriber.on_subscribe(Sub())


@settings(max_examples=60, deadline=None)
@given(
    items=st.lists(st.integers(0, 9), max_size=8),
    fails=st.booleans(),
    requests=st.lists(st.integers(1, 4), max_size=6),
    kind=st.sampled_from(["concat", "concat_map", "start_with", "race", "switch_map"]),
)
def test_one_inner_signals_exactly_what_it_sends(
    items: list[int], fails: bool, requests: list[int], kind: str
) -> None:
    """concat(p), race(p), just(x).concat_map(-> p), just(x).switch_map(-> p) and p.start_with()
    are p: an inner's error comes after the elements it sent within the demand, as in reactor,
    whether they were asked for at once or bit by bit."""
    error = RuntimeError("inner failed") if fails else None
    p = rstreams.from_publisher(_Eager(items, error))
    flow = {
        "concat": lambda: rstreams.concat(p),
        "concat_map": lambda: rstreams.just(0).concat_map(lambda _: p),
        "start_with": lambda: p.start_with(),
        "race": lambda: rstreams.race(p),
        "switch_map": lambda: rstreams.just(0).switch_map(lambda _: p),
    }[kind]()
    s = drive(flow, requests)
    assert s.items == items
    assert s.error is error and s.completed is (error is None)
