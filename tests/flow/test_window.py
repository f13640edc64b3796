"""group_by and window: Flows of Flows with their own demand (rules 1.1, 1.3, 2.13, 3.9, 4.2)."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.api import Subscriber
from rstreams.errors import (
    AlreadySubscribedError,
    InvalidDemandError,
    LoopClosedError,
    NoEventLoopError,
    OverflowStrategyError,
)
from testkit import patience
from testkit.clock import Stepped, clock_and_loop
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber
from testkit.shapes import SHAPES, loop_thread, patient_env, upstreams


def _outer(flow: rstreams.Flow[Any], initial: int = 0) -> RecordingSubscriber[Any]:
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=initial)
    flow.subscribe(s)
    return s


def _inner(group: rstreams.Flow[Any], initial: int = 0) -> RecordingSubscriber[Any]:
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=initial)
    group.subscribe(s)
    return s


def test_group_by_asks_upstream_only_once_asked_and_bounds_what_it_holds() -> None:
    """Nothing before the outer request; prefetch up front; replenished as groups consume."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.group_by(lambda x: x % 2, prefetch=4))
    assert source.requests == []
    outer.request(1)
    assert source.requests == [4]
    source.emit(0, 1, 2)  # opens group 0 (emitted) and group 1 (waits for outer demand)
    assert [g.key for g in outer.items] == [0]
    evens = _inner(outer.items[0], initial=1)
    assert evens.items == [0] and source.requests == [4]
    evens.request(1)
    assert evens.items == [0, 2] and source.requests == [4]  # 2 taken: not yet 3 (limit)
    outer.request(1)
    odds = _inner(outer.items[1], initial=5)
    assert odds.items == [1] and source.requests == [4, 3]


def test_groups_complete_with_the_upstream_and_the_outer_after_every_group() -> None:
    """Completion reaches every group after its elements, and the outer subscriber."""
    got = patience.result(
        rstreams.range(0, 9)
        .group_by(lambda x: x % 3)
        .flat_map(lambda g: g.map(lambda x: (g.key, x)).buffer(10))
        .collect()
    )
    assert sorted(got) == [[(0, 0), (0, 3), (0, 6)], [(1, 1), (1, 4), (1, 7)], [(2, 2), (2, 5), (2, 8)]]


def test_past_max_groups_the_stream_fails_naming_the_bound() -> None:
    """OverflowStrategyError with max_groups and the key; upstream cancelled; every group told."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.group_by(lambda x: x, max_groups=2), initial=10)
    source.emit(1, 2)
    groups = [_inner(g, initial=1) for g in outer.items]
    source.emit(3)
    assert isinstance(outer.error, OverflowStrategyError) and "max_groups=2" in str(outer.error)
    assert "key 3" in str(outer.error) and source.cancelled == 1
    assert all(isinstance(g.error, OverflowStrategyError) for g in groups)


def test_a_cancelled_group_drops_its_elements_and_a_later_one_reopens() -> None:
    """Cancelling a group frees its demand upstream; its key opens a new group afterwards."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.group_by(lambda x: x % 2, prefetch=4), initial=10)
    source.emit(0, 2, 4)
    first = _inner(outer.items[0])
    first.cancel()
    assert source.requests == [4, 3]
    source.emit(6)
    assert len(outer.items) == 2 and outer.items[1].key == 0
    assert _inner(outer.items[1], initial=1).items == [6]


def test_a_group_can_be_subscribed_once() -> None:
    """A second subscriber gets on_subscribe then on_error naming the group."""
    outer = _outer(rstreams.just(1).group_by(lambda x: "k"), initial=1)
    group = outer.items[0]
    _inner(group, initial=1)
    second = _inner(group)
    assert isinstance(second.error, AlreadySubscribedError) and "'k'" in str(second.error)


def test_key_raising_cancels_upstream_and_signals_everyone() -> None:
    """Rule 2.13: key's error ends the stream, for the outer subscriber and every group."""

    def key(x: int) -> int:
        if x == 3:
            raise ValueError("key failed at 3")
        return x % 2

    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.group_by(key), initial=5)
    source.emit(1)
    group = _inner(outer.items[0], initial=5)
    source.emit(3)
    assert isinstance(outer.error, ValueError) and isinstance(group.error, ValueError)
    assert source.cancelled == 1


def test_key_raising_inside_a_batch_ends_the_stream_once() -> None:
    """A batched source (range hands lists of elements): key's error still cancels and ends all."""

    def key(x: int) -> int:
        if x == 200:
            raise ValueError("key failed at 200")
        return x % 2

    outer = _outer(rstreams.range(0, 300).group_by(key), initial=5)
    groups = [_inner(g, initial=1000) for g in outer.items]
    assert isinstance(outer.error, ValueError) and outer.signals.count("on_error") == 1
    assert all(isinstance(g.error, ValueError) for g in groups)


@pytest.mark.parametrize("batched", [False, True])
def test_an_unhashable_key_ends_the_stream_as_a_raising_key_does(batched: bool) -> None:
    """As distinct's: a key that cannot be hashed is the stream's TypeError, upstream cancelled;
    it was raised out of on_next (reported, the stream left hanging)."""
    source: ManualPublisher[int] = ManualPublisher()
    upstream: rstreams.Flow[int] = rstreams.range(0, 300) if batched else source
    outer = _outer(upstream.group_by(lambda x: [x] if x == 2 else x % 2), initial=5)  # type: ignore[arg-type,return-value]
    if not batched:
        source.emit(1, 2)
        assert source.cancelled == 1
    assert isinstance(outer.error, TypeError) and "unhashable" in str(outer.error)
    assert outer.signals.count("on_error") == 1


def test_cancelling_the_outer_stream_keeps_emitted_groups_running() -> None:
    """New groups stop; the upstream is cancelled once no subscribed group is left."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.group_by(lambda x: x % 2, prefetch=8), initial=1)
    source.emit(0)
    evens = _inner(outer.items[0], initial=10)
    outer.cancel()
    source.emit(1, 2)  # 1 would open a new group: dropped
    assert evens.items == [0, 2] and source.cancelled == 0
    evens.cancel()
    assert source.cancelled == 1


def test_window_cuts_consecutive_windows_of_count() -> None:
    """Each window completes with its count-th element; the last with the upstream."""
    windows = patience.result(rstreams.range(0, 7).window(3).concat_map(lambda w: w.buffer(10)).collect())
    assert windows == [[0, 1, 2], [3, 4, 5], [6]]


@given(st.lists(st.integers(0, 5), max_size=40), st.integers(1, 6))
def test_window_then_flatten_is_the_identity(items: list[int], count: int) -> None:
    """The law of window: concatenating the windows gives the stream back."""
    flow = rstreams.from_iterable(items).window(count, prefetch=4).concat_map(lambda w: w)
    assert patience.result(flow.collect()) == items


@given(st.lists(st.integers(0, 4), max_size=40))
def test_group_by_partitions_in_order(items: list[int]) -> None:
    """The law of group_by: each group is the sub-sequence of its key, in order."""
    groups = patience.result(
        rstreams.from_iterable(items)
        .group_by(lambda x: x % 3, prefetch=4)
        .flat_map(lambda g: g.buffer(100).map(lambda b: (g.key, b)))
        .collect()
    )
    assert dict(groups) == {k: [x for x in items if x % 3 == k] for k in {x % 3 for x in items}}


def test_illegal_requests_are_signalled() -> None:
    """Rule 3.9 for the outer subscription and for a group's."""
    outer = _outer(ManualPublisher[int]().group_by(lambda x: x))
    outer.request(0)
    assert isinstance(outer.error, InvalidDemandError)
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.group_by(lambda x: x), initial=1)
    source.emit(1)
    group = _inner(outer.items[0])
    group.request(-1)
    assert isinstance(group.error, InvalidDemandError) and not outer.done


def test_bad_arguments_are_refused_when_built() -> None:
    """Non-callable keys and non-positive bounds fail at once, naming the operator."""
    flow = rstreams.range(0, 1)
    calls: list[tuple[Callable[[], object], type[Exception], str]] = [
        (lambda: flow.group_by(3), TypeError, r"group_by\(key\)"),  # type: ignore[arg-type]
        (lambda: flow.group_by(str, max_groups=0), ValueError, "group_by: max_groups"),
        (lambda: flow.window(0), ValueError, "window: count"),
        (lambda: flow.window(2, prefetch=0), ValueError, "window: prefetch"),
    ]
    for call, kind, message in calls:
        with pytest.raises(kind, match=message):
            call()


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    with loop_thread("window-loop") as event_loop:
        yield event_loop


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ["group_by", "window"])
def test_passes_the_publisher_tck_over_each_upstream_shape(
    name: str, shape: str, loop: asyncio.AbstractEventLoop
) -> None:
    """The outer Flow and the flattened groups pass PublisherVerification."""
    from rstreams.tck import verify_publisher

    shapes = upstreams(loop)
    up = shapes[shape]
    ops: dict[str, Callable[[rstreams.Flow[int]], rstreams.Flow[Any]]] = {
        # n elements in, n groups out (each group one element), consumed as they come
        "group_by": lambda f: f.group_by(lambda x: x, max_groups=2000, prefetch=8).flat_map(lambda g: g),
        "window": lambda f: f.window(3, prefetch=8).concat_map(lambda w: w),
    }
    op = ops[name]
    report = verify_publisher(
        lambda n: op(up(n)),
        create_failed_publisher=lambda: op(rstreams.error(RuntimeError("failed"))),
        max_elements=1000,
        env=patient_env(),
    )
    assert report.ok, str(report)


def test_the_outer_flow_alone_passes_the_publisher_tck() -> None:
    """The Flow of windows itself: n windows of one element each, nobody subscribing to them.

    Their elements stay held, so prefetch covers the TCK's largest n (see the module's bound)."""
    from rstreams.tck import verify_publisher

    report = verify_publisher(
        lambda n: rstreams.range(0, n).window(1, prefetch=1024),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).window(1),
        max_elements=1000,
    )
    assert report.ok, str(report)


# -- an error after a window was cut: that window is complete --------------------------------


def test_a_cut_window_nobody_subscribed_to_yet_still_completes_after_an_error() -> None:
    """The outer got the cut window before the error; whoever subscribes later gets its
    elements and its completion. Cut windows the outer had not got yet go with the outer."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.window(1), initial=1)
    source.emit(1, 2, 3)  # three cut windows: the outer asked for one
    source.fail(RuntimeError("upstream"))
    assert len(outer.items) == 1 and isinstance(outer.error, RuntimeError)
    late = _inner(outer.items[0], initial=5)
    assert late.items == [1] and late.completed
    again = _inner(outer.items[0])
    assert isinstance(again.error, AlreadySubscribedError)


def test_an_error_of_the_stream_itself_spares_cut_windows_and_cancels_the_upstream() -> None:
    """Rule 3.9 on the outer subscription: the upstream is cancelled, the open window fails,
    the cut one completes once taken; a bad request on it then is its own error."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.window(2), initial=5)
    source.emit(1, 2, 3, 4, 5)
    first, second, open_ = (_inner(w) for w in outer.items)
    outer.request(0)
    assert isinstance(outer.error, InvalidDemandError) and source.cancelled == 1
    assert isinstance(open_.error, InvalidDemandError) and open_.items == []
    first.request(5)
    assert first.items == [1, 2] and first.completed
    second.request(0)
    assert isinstance(second.error, InvalidDemandError) and second.items == []
    source.emit(6)  # late, after the cancel (rule 3.12): nobody gets it
    assert open_.signals.count("on_error") == 1 and first.signals.count("on_complete") == 1


def test_a_cut_window_cancelled_after_an_error_lets_go() -> None:
    """Its subscriber cancels: its elements are dropped and nothing more is signalled."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    outer = _outer(source.window_time(1.0, loop=loop), initial=5)
    source.emit(1, 2)
    clock.advance(1.0)
    cut = _inner(outer.items[0], initial=1)
    source.fail(RuntimeError("upstream"))
    assert cut.items == [1] and not cut.done
    cut.cancel()
    cut.request(5)
    clock.advance(0)  # the clock's cancel is handed to the loop (this is not its thread)
    assert cut.signals == ["on_subscribe", "on_next"] and clock.pending == 0


class _Element:
    """An element whose lifetime a test can watch (``weakref.ref``)."""

    __slots__ = ("__weakref__", "n")

    def __init__(self, n: int) -> None:
        self.n = n


def _cut_and_end(
    build: Callable[[rstreams.Flow[_Element]], rstreams.Flow[Any]], ending: str, clock: Any
) -> tuple[RecordingSubscriber[Any], list[weakref.ref[_Element]]]:
    """Three elements in windows of two (or one period), nobody subscribing to any window,
    then the upstream ends as ``ending`` says."""
    source: ManualPublisher[_Element] = ManualPublisher()
    outer = _outer(build(source), initial=10)
    elements = [_Element(n) for n in range(3)]
    source.emit(*elements[:2])
    if clock is not None:
        clock.advance(1.0)
    source.emit(elements[2])
    if ending == "error":
        source.fail(RuntimeError("upstream"))
    else:
        source.complete()
    return outer, [weakref.ref(e) for e in elements]


@pytest.mark.parametrize("ending", ["error", "complete"])
@pytest.mark.parametrize("name", ["window", "window_time", "group_by"])
def test_a_group_nobody_subscribed_to_is_held_by_itself_not_by_the_operator(name: str, ending: str) -> None:
    """Once the outer stream is over, a group or window that no element can join and nobody
    subscribed to keeps its elements only as long as somebody keeps the group (as reactor's
    windows, which own their queues): the outer subscriber, which keeps its Subscription,
    does not keep them alive. The open window at an error fails and drops its own."""
    clock, loop = clock_and_loop()
    builds: dict[str, Callable[[rstreams.Flow[_Element]], rstreams.Flow[Any]]] = {
        "window": lambda f: f.window(2),
        "window_time": lambda f: f.window_time(1.0, loop=loop),
        "group_by": lambda f: f.group_by(lambda e: e.n < 2),
    }
    outer, alive = _cut_and_end(builds[name], ending, clock if name == "window_time" else None)
    assert outer.done and len(outer.items) == 2 and outer.subscription is not None
    outer.items.clear()
    gc.collect()
    assert [ref() for ref in alive] == [None, None, None]
    clock.advance(0)  # the clock's cancel is handed to the loop (this is not its thread)
    assert clock.pending == 0


@pytest.mark.parametrize("ending", ["error", "complete"])
def test_a_group_let_go_of_still_serves_whoever_subscribes_later(ending: str) -> None:
    """Its elements within the subscriber's demand, then its completion; once only."""
    outer = _cut_and_end(lambda f: f.window(2), ending, None)[0]
    cut = outer.items[0]
    late = _inner(cut, initial=1)
    assert [e.n for e in late.items] == [0] and not late.done
    late.request(5)
    assert [e.n for e in late.items] == [0, 1] and late.completed
    assert isinstance(_inner(cut).error, AlreadySubscribedError)
    last = _inner(outer.items[1], initial=5)
    assert (
        [e.n for e in last.items] == [2] and last.completed
        if ending == "complete"
        else last.items == [] and isinstance(last.error, RuntimeError)
    )


@pytest.mark.parametrize("name", ["window", "window_time"])
def test_cancelling_the_outer_stream_with_only_cut_windows_left_cancels_the_upstream(name: str) -> None:
    """A cut window takes no more elements: once the outer subscriber cancelled, only an open
    group keeps the upstream running, whether or not anybody subscribed to the cut ones."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    flow = source.window(2) if name == "window" else source.window_time(1.0, loop=loop)
    outer = _outer(flow, initial=1)
    source.emit(1, 2)
    clock.advance(1.0)
    taken = _inner(outer.items[0], initial=1)
    outer.cancel()
    clock.advance(0)
    assert source.cancelled == 1 and clock.pending == 0
    taken.request(1)
    assert taken.items == [1, 2] and taken.completed


# -- window_time: windows cut by a clock (a virtual one here) ---------------------------------


def test_window_time_cuts_every_period_and_skips_empty_ones() -> None:
    """Periods of 1 s: [1, 2] in period 0, nothing in 1, [3] in 2 (completed with the upstream)."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    windows = _outer(source.window_time(1.0, prefetch=8, loop=loop), initial=10)
    assert source.requested == 8  # prefetch, once the outer subscriber asked
    source.emit(1, 2)
    first = _inner(windows.items[0], initial=10)
    assert (first.items, first.completed) == ([1, 2], False)
    clock.advance(1.0)
    assert first.completed
    clock.advance(1.0)  # a period without elements: no window
    source.emit(3)
    assert [w.key for w in windows.items] == [0, 2]
    third = _inner(windows.items[1], initial=1)
    source.complete()
    assert third.items == [3] and third.completed and windows.completed
    clock.advance(0)  # the cancel is handed to the loop (this is not its thread)
    assert clock.pending == 0  # the clock stops once the upstream ended


def test_window_time_keeps_group_demand() -> None:
    """A window's subscriber gets only what it asked for; the rest waits in the window."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    windows = _outer(source.window_time(1.0, prefetch=8, loop=loop), initial=1)
    source.emit(1, 2, 3)
    w = _inner(windows.items[0], initial=1)
    clock.advance(1.0)  # the window is cut, but still holds 2 and 3
    assert (w.items, w.completed) == ([1], False)
    w.request(5)
    assert w.items == [1, 2, 3] and w.completed


def test_window_time_then_flatten_is_the_identity() -> None:
    """Concatenating the windows gives the stream back, however the clock cuts it."""
    clock, loop = clock_and_loop()
    flow = rstreams.from_publisher(Stepped(10, clock, 0.4)).window_time(1.0, loop=loop)
    assert patience.result(flow.concat_map(lambda w: w).collect()) == list(range(10))


def test_window_time_refuses_bad_arguments_and_a_missing_loop() -> None:
    """seconds must be > 0; without loop= and outside a running loop, on_error names window_time."""
    flow = rstreams.range(0, 3)
    with pytest.raises(ValueError, match=r"window_time\(seconds\) needs seconds > 0"):
        flow.window_time(0)
    with pytest.raises(ValueError, match="window_time: prefetch"):
        flow.window_time(1, prefetch=0)
    s = _outer(flow.window_time(1.0), initial=1)
    assert isinstance(s.error, NoEventLoopError) and "window_time" in str(s.error)


def test_window_time_on_a_closed_loop_fails_with_loop_closed_error() -> None:
    """A clock that can never tick ends the stream with LoopClosedError (still a RuntimeError),
    the loop's own error as its cause, rather than leaving the window open forever."""
    loop = asyncio.new_event_loop()
    loop.close()
    s = _outer(rstreams.range(0, 3).window_time(1.0, loop=loop), initial=1)
    assert isinstance(s.error, LoopClosedError) and isinstance(s.error.__cause__, RuntimeError)
    assert "window_time" in str(s.error)


def test_window_time_passes_the_publisher_tck() -> None:
    """The outer Flow (one window per element: the clock moves a period after each) and the
    flattened one."""
    from rstreams.tck import verify_publisher

    def outer(n: int) -> rstreams.Flow[Any]:
        clock, loop = clock_and_loop()
        return rstreams.from_publisher(Stepped(n, clock, 1.0)).window_time(1.0, prefetch=1024, loop=loop)

    def flat(n: int) -> rstreams.Flow[Any]:
        clock, loop = clock_and_loop()
        flow = rstreams.from_publisher(Stepped(n, clock, 0.5)).window_time(1.0, loop=loop)
        return flow.concat_map(lambda w: w)

    for make in (outer, flat):
        report = verify_publisher(
            make,
            create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).window_time(
                1.0, loop=clock_and_loop()[1]
            ),
            max_elements=1000,
        )
        assert report.ok, str(report)


# -- group_by into flat_map: the batch path (groups hand batches to flat_map's inners) -----


class _Batches(RecordingSubscriber[Any]):
    """Takes the batch signal too, and checks it never gets more than it asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0
        self.batches = 0

    def request(self, n: int) -> None:
        self.asked += n
        super().request(n)

    def on_next(self, item: Any) -> None:
        assert len(self.items) < self.asked, "an element beyond the demand (rule 1.1)"
        super().on_next(item)

    def on_next_many(self, items: list[Any]) -> None:
        assert len(self.items) + len(items) <= self.asked, "a batch beyond the demand (rule 1.1)"
        self.batches += 1
        for item in items:
            super().on_next(item)


@given(
    st.lists(st.integers(0, 50), max_size=300),
    st.integers(1, 8),
    st.lists(st.integers(1, 40), min_size=1, max_size=30),
)
def test_group_by_into_flat_map_keeps_demand_and_order(items: list[int], keys: int, asks: list[int]) -> None:
    """Every element once, each key's elements in order, never more than was requested."""
    s = _Batches()
    flow = rstreams.from_iterable(items).group_by(lambda x: x % keys, prefetch=16)
    flow.flat_map(lambda g: g, max_concurrency=keys).subscribe(s)
    for n in asks:
        s.request(n)
    s.request(len(items) + 1)
    assert s.completed and sorted(s.items) == sorted(items)
    for key in range(keys):
        assert [x for x in s.items if x % keys == key] == [x for x in items if x % keys == key]


def test_group_by_into_flat_map_hands_batches_on() -> None:
    """With demand at hand the groups' elements reach a batch-taking subscriber in batches."""
    s = _Batches()
    rstreams.range(0, 1000).group_by(lambda x: x % 4).flat_map(lambda g: g, max_concurrency=4).subscribe(s)
    s.request(10_000)
    assert s.completed and sorted(s.items) == list(range(1000))
    assert 0 < s.batches < 1000


class _BatchSource(rstreams.Flow[int]):
    """Hands its elements on in one ``on_next_many`` call, from the test's own thread."""

    def __init__(self) -> None:
        self.subscriber: Any = None
        self.requested = 0

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        self.subscriber = subscriber
        subscriber.on_subscribe(self)

    def request(self, n: int) -> None:
        self.requested += n

    def cancel(self) -> None:
        self.requested = 0

    def emit(self, items: list[int]) -> None:
        assert len(items) <= self.requested
        self.requested -= len(items)
        self.subscriber.on_next_many(items)


def test_a_batch_outside_any_drain_stays_within_the_demand() -> None:
    """A group's batch reaching an idle flat_map is cut to the downstream's demand; the rest
    waits in the inner's queue and goes on when asked for."""
    source = _BatchSource()
    s = _Batches()
    source.group_by(lambda x: x % 2, prefetch=16).flat_map(lambda g: g, max_concurrency=2).subscribe(s)
    s.request(3)
    source.emit(list(range(12)))
    assert len(s.items) == 3
    s.request(100)
    source.subscriber.on_complete()
    assert sorted(s.items) == list(range(12)) and s.completed and s.batches > 0
