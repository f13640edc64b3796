"""concat, zip, combine_latest, race, with_latest_from, switch_map (rules 1.1, 1.3, 2.13, 3.9, 4.2)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import InvalidDemandError, OverflowStrategyError
from testkit import patience
from testkit.publishers import ManualPublisher, ThreadPublisher, drive
from testkit.recording import RecordingSubscriber
from testkit.shapes import SHAPES, loop_thread, patient_env, upstreams

Make = Callable[[int], rstreams.Flow[Any]]


class _Never(rstreams.Flow[Any]):
    """Subscribes and then never signals (a source that loses every race)."""

    def __init__(self) -> None:
        self.cancelled = threading.Event()

    def subscribe(self, subscriber: Any) -> None:
        never = self

        class _Subscription:
            def request(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                never.cancelled.set()

        subscriber.on_subscribe(_Subscription())


# each operator over small sources, what it gives
CASES: dict[str, tuple[Callable[[], rstreams.Flow[Any]], list[Any]]] = {
    "concat": (
        lambda: rstreams.concat(rstreams.range(0, 3), rstreams.just(7), rstreams.empty()),
        [0, 1, 2, 7],
    ),
    "concat_with": (lambda: rstreams.range(0, 2).concat_with(rstreams.range(5, 7)), [0, 1, 5, 6]),
    "zip": (
        lambda: rstreams.zip(rstreams.range(0, 5), rstreams.just("a", "b", "c")),
        [(0, "a"), (1, "b"), (2, "c")],
    ),
    "zip_with": (lambda: rstreams.range(0, 3).zip_with(rstreams.range(10, 20)), [(0, 10), (1, 11), (2, 12)]),
    "combine_latest": (
        lambda: rstreams.combine_latest(rstreams.just(1), rstreams.just("a", "b")),
        [(1, "a"), (1, "b")],
    ),
    "race": (lambda: rstreams.race(rstreams.range(0, 3), _Never()), [0, 1, 2]),
    "with_latest_from": (
        lambda: rstreams.range(0, 3).with_latest_from(rstreams.just("x", "y")),
        [(0, "y"), (1, "y"), (2, "y")],
    ),
    "switch_map": (
        lambda: rstreams.just(2).switch_map(lambda x: rstreams.range(10 * x, 10 * x + 3)),
        [20, 21, 22],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_elements_in_order_then_complete(name: str) -> None:
    """Each operator's elements, in order, then on_complete."""
    build, expected = CASES[name]
    assert patience.result(build().collect()) == expected


@pytest.mark.parametrize("name", list(CASES))
@given(requests=st.lists(st.integers(1, 3), max_size=8))
def test_never_more_than_requested(name: str, requests: list[int]) -> None:
    """Rule 1.1 under any request pattern; the same elements as one big request."""
    build, expected = CASES[name]
    assert drive(build(), requests).items == expected


@pytest.mark.parametrize("name", list(CASES))
def test_illegal_request_is_signalled(name: str) -> None:
    """Rule 3.9: request(0) ends in on_error(InvalidDemandError), never a raise."""
    build, _ = CASES[name]
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    build().subscribe(s)
    s.request(0)
    s.await_done()
    assert isinstance(s.error, InvalidDemandError)


def _manual(n: int) -> list[ManualPublisher[Any]]:
    return [ManualPublisher() for _ in range(n)]


def test_zip_asks_each_side_for_what_the_demand_needs_and_nothing_before() -> None:
    """Nothing is requested before the downstream asks; request(2) asks each source for 2."""
    a, b = _manual(2)
    s: RecordingSubscriber[tuple[Any, ...]] = RecordingSubscriber()
    rstreams.zip(a, b).subscribe(s)
    assert a.requests == [] and b.requests == []
    s.request(2)
    assert a.requests == [2] and b.requests == [2]
    a.emit(1, 2)
    assert s.items == []
    b.emit("x")
    assert s.items == [(1, "x")]
    b.emit("y")
    assert s.items == [(1, "x"), (2, "y")] and a.requests == [2] and b.requests == [2]


def test_zip_prefetch_bounds_what_each_side_owes_under_unbounded_demand() -> None:
    """With unbounded demand each side is asked for prefetch, topped up as it is used."""
    a, b = _manual(2)
    s: RecordingSubscriber[tuple[Any, ...]] = RecordingSubscriber()
    rstreams.zip(a, b, prefetch=8).subscribe(s)
    s.request(rstreams.UNBOUNDED)
    assert a.requests == [8] and b.requests == [8]
    a.emit(*range(8))
    assert b.requests == [8] and a.requests == [8]  # a's queue is full: nothing more asked
    b.emit(*range(6))
    assert len(s.items) == 6 and a.requests == [8, 6] and b.requests == [8, 6]


def test_zip_completes_with_the_shortest_and_cancels_the_others() -> None:
    """Once one side completed and its queue is empty, the rest are cancelled."""
    a, b = _manual(2)
    s: RecordingSubscriber[tuple[Any, ...]] = RecordingSubscriber(initial=10)
    rstreams.zip(a, b).subscribe(s)
    a.emit(1)
    a.complete()
    assert not s.done and b.cancelled == 0
    b.emit(2)
    assert s.items == [(1, 2)] and s.completed and b.cancelled == 1


def test_the_first_error_cancels_every_other_source() -> None:
    """Rule 4.2 for zip, combine_latest and race: one error, the others cancelled."""
    for combine in (rstreams.zip, rstreams.combine_latest, rstreams.race):
        a, b, c = _manual(3)
        s: RecordingSubscriber[Any] = RecordingSubscriber(initial=5)
        combine(a, b, c).subscribe(s)
        b.fail(ValueError("b broke"))
        assert isinstance(s.error, ValueError), combine
        assert a.cancelled == 1 and c.cancelled == 1 and s.signals.count("on_error") == 1


def test_a_source_sending_more_than_asked_fails_the_stream() -> None:
    """Rule 1.1 broken upstream: OverflowStrategyError naming the source, the rest cancelled."""
    a, b = _manual(2)
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=1)
    rstreams.zip(a, b).subscribe(s)
    a.emit(1, 2, force=True)
    assert isinstance(s.error, OverflowStrategyError) and "source 0" in str(s.error)
    assert b.cancelled == 1


def test_combine_latest_waits_for_every_source_then_emits_per_arrival() -> None:
    """Earlier elements only update the latest values; each arrival then costs one demand."""
    a, b = _manual(2)
    s: RecordingSubscriber[tuple[Any, ...]] = RecordingSubscriber()
    rstreams.combine_latest(a, b).subscribe(s)
    s.request(2)
    a.emit(1, 2)
    assert s.items == [] and a.outstanding == 2  # both consumed without output: asked again
    b.emit("x")
    a.emit(3)
    assert s.items == [(2, "x"), (3, "x")]
    b.emit("y")  # asked for 2 at first, no demand now: it waits
    assert len(s.items) == 2
    s.request(1)
    assert s.items[-1] == (3, "y")


def test_combine_latest_completes_at_once_when_a_source_is_empty() -> None:
    """No tuple can ever be made: the others are cancelled."""
    a, b = _manual(2)
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=3)
    rstreams.combine_latest(a, b).subscribe(s)
    a.emit(1)
    b.complete()
    assert s.completed and a.cancelled == 1


def test_race_asks_everybody_until_the_first_signal_then_cancels_the_losers() -> None:
    """Demand goes to all sources until one signals; after that only to the winner."""
    a, b = _manual(2)
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    rstreams.race(a, b).subscribe(s)
    s.request(3)
    assert a.requests == [3] and b.requests == [3]
    b.emit("b1")
    assert s.items == ["b1"] and a.cancelled == 1
    a.emit("a1")  # a late loser is ignored
    s.request(2)
    assert b.requests == [3, 2] and a.requests == [3] and s.items == ["b1"]
    b.emit("b2", "b3", "b4")
    b.complete()
    assert s.items == ["b1", "b2", "b3", "b4"] and s.completed


def test_race_a_completion_can_win() -> None:
    """An empty source that completes first wins: the stream completes, the rest cancelled."""
    never = _Never()
    assert patience.result(rstreams.race(rstreams.empty(), never).collect()) == []
    assert never.cancelled.is_set()


def test_with_latest_from_drops_and_re_requests_until_other_has_an_element() -> None:
    """request(n) passes through; a source element without a partner is asked for again."""
    source, other = _manual(2)
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    source.with_latest_from(other).subscribe(s)
    assert other.requests == [rstreams.UNBOUNDED] and source.requests == []
    s.request(1)
    source.emit(1)
    assert s.items == [] and source.requests == [1, 1]
    other.emit("x")
    other.emit("y")
    source.emit(2)
    assert s.items == [(2, "y")]
    source.complete()
    assert s.completed and other.cancelled == 1


def test_with_latest_from_other_empty_or_failing_ends_the_stream() -> None:
    """other completing without an element completes; other's error goes downstream."""
    source, other = _manual(2)
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=1)
    source.with_latest_from(other).subscribe(s)
    other.complete()
    assert s.completed and source.cancelled == 1
    source, other = _manual(2)
    s = RecordingSubscriber(initial=1)
    source.with_latest_from(other).subscribe(s)
    other.fail(KeyError("other"))
    assert isinstance(s.error, KeyError) and source.cancelled == 1


def test_switch_map_cancels_the_previous_inner_and_carries_the_demand() -> None:
    """A new upstream element cancels the current inner; it still owed demand, the next gets it."""
    source = ManualPublisher[int]()
    inners: dict[int, ManualPublisher[str]] = {1: ManualPublisher(), 2: ManualPublisher()}
    s: RecordingSubscriber[str] = RecordingSubscriber()
    source.switch_map(lambda x: inners[x], prefetch=4).subscribe(s)
    assert source.requests == []
    s.request(3)
    assert source.requests == [4]
    source.emit(1)
    assert inners[1].requests == [3]
    inners[1].emit("a")
    source.emit(2)
    assert inners[1].cancelled == 1 and inners[2].requests == [2]
    inners[1].emit("late", force=True)
    inners[2].emit("b", "c")
    source.complete()
    assert not s.done
    inners[2].complete()
    assert s.items == ["a", "b", "c"] and s.completed


def test_switch_map_fn_raising_cancels_upstream_and_the_inner() -> None:
    """Rule 2.13: fn's error cancels the upstream and the current inner, signalled once."""
    source = ManualPublisher[int]()
    inner = ManualPublisher[int]()

    def fn(x: int) -> rstreams.Flow[int]:
        if x == 2:
            raise ValueError("fn failed at 2")
        return inner

    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    source.switch_map(fn).subscribe(s)
    source.emit(1, 2)
    assert isinstance(s.error, ValueError) and source.cancelled == 1 and inner.cancelled == 1
    source.emit(3, force=True)
    assert s.signals.count("on_error") == 1


def test_bad_arguments_are_refused_when_built() -> None:
    """Non-Publishers, non-callables and bad prefetch fail at once, naming the operator."""
    flow = rstreams.range(0, 1)
    calls: list[tuple[Callable[[], object], type[Exception], str]] = [
        (lambda: rstreams.zip(flow, 3), TypeError, "zip"),  # type: ignore[arg-type]
        (lambda: rstreams.zip(flow, prefetch=0), ValueError, "zip: prefetch"),
        (lambda: rstreams.concat(None), TypeError, "concat"),  # type: ignore[arg-type]
        (lambda: rstreams.combine_latest(flow, "x"), TypeError, "combine_latest"),  # type: ignore[arg-type]
        (lambda: rstreams.race(flow, prefetch=True), TypeError, "race: prefetch"),
        (lambda: flow.with_latest_from(5), TypeError, r"with_latest_from\(other\)"),  # type: ignore[arg-type]
        (lambda: flow.switch_map(5), TypeError, r"switch_map\(fn\)"),  # type: ignore[arg-type]
        (lambda: flow.switch_map(rstreams.just, prefetch=0), ValueError, "switch_map: prefetch"),
    ]
    for call, kind, message in calls:
        with pytest.raises(kind, match=message):
            call()


def test_no_publishers_completes_at_once() -> None:
    """zip(), concat(), combine_latest(), race() are empty."""
    for combine in (rstreams.zip, rstreams.concat, rstreams.combine_latest, rstreams.race, rstreams.amb):
        assert patience.result(combine().collect()) == []


@given(st.lists(st.lists(st.integers(), max_size=12), min_size=1, max_size=4))
def test_zip_is_as_long_as_the_shortest_and_pairs_by_position(parts: list[list[int]]) -> None:
    """The law of zip: the builtin's result."""
    flows = [rstreams.from_iterable(part) for part in parts]
    assert patience.result(rstreams.zip(*flows, prefetch=3).collect()) == list(zip(*parts, strict=False))


@given(st.lists(st.lists(st.integers(), max_size=8), max_size=5))
def test_concat_of_the_parts_is_the_whole(parts: list[list[int]]) -> None:
    """The law of concat."""
    flows = [rstreams.from_iterable(part) for part in parts]
    assert patience.result(rstreams.concat(*flows).collect()) == [x for part in parts for x in part]


@given(st.lists(st.integers(0, 1), min_size=1, max_size=30))
def test_combine_latest_emits_per_arrival_once_all_have_one(order: list[int]) -> None:
    """Driven in a given arrival order, the output is the latest pair after each arrival."""
    a, b = _manual(2)
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=rstreams.UNBOUNDED)
    rstreams.combine_latest(a, b, prefetch=64).subscribe(s)
    latest: list[Any] = [None, None]
    expected = []
    for i, side in enumerate(order):
        (a, b)[side].emit(i)
        latest[side] = i
        if None not in latest:
            expected.append(tuple(latest))
    assert s.items == expected


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    with loop_thread("combine-loop") as event_loop:
        yield event_loop


def _makers(up: Make) -> dict[str, Make]:
    """Each operator as a publisher of exactly n elements over the upstream shape ``up``."""
    return {
        "concat": lambda n: rstreams.concat(up(n // 2), rstreams.empty(), up(n - n // 2)),
        "zip": lambda n: rstreams.zip(up(n), up(n + 3), prefetch=4),
        "combine_latest": lambda n: rstreams.combine_latest(rstreams.just(0), up(n), prefetch=4),
        "race": lambda n: rstreams.race(up(n), _Never()),
        "with_latest_from": lambda n: up(n).with_latest_from(rstreams.just(0)),
        "switch_map": lambda n: rstreams.just(0).switch_map(lambda _: up(n)),
    }


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    "name", ["concat", "zip", "combine_latest", "race", "with_latest_from", "switch_map"]
)
def test_passes_the_publisher_tck_over_each_upstream_shape(
    name: str, shape: str, loop: asyncio.AbstractEventLoop
) -> None:
    """Every PublisherVerification case (rules 1.x-3.x), whatever thread the sources signal from."""
    from rstreams.tck import verify_publisher

    make = _makers(upstreams(loop)[shape])[name]
    failed: rstreams.Flow[int] = rstreams.error(RuntimeError("failed"))
    failing: dict[str, Callable[[], rstreams.Flow[Any]]] = {
        "concat": lambda: rstreams.concat(failed, rstreams.range(0, 3)),
        "zip": lambda: rstreams.zip(failed, rstreams.range(0, 3)),
        "combine_latest": lambda: rstreams.combine_latest(rstreams.range(0, 3), failed),
        "race": lambda: rstreams.race(failed, _Never()),
        "with_latest_from": lambda: failed.with_latest_from(rstreams.just(0)),
        "switch_map": lambda: failed.switch_map(rstreams.just),
    }
    report = verify_publisher(
        make, create_failed_publisher=failing[name], max_elements=1000, env=patient_env()
    )
    assert report.ok, str(report)


def test_signals_stay_serial_with_sources_on_their_own_threads() -> None:
    """Rule 1.3: zip over two threaded sources delivers every tuple, never overlapping."""
    from testkit.publishers import SerialChecker

    s: RecordingSubscriber[Any] = RecordingSubscriber()
    checker = SerialChecker(s)
    rstreams.zip(ThreadPublisher(range(500)), ThreadPublisher(range(500)), prefetch=7).subscribe(checker)
    s.request(rstreams.UNBOUNDED)
    s.await_done()
    assert s.items == [(i, i) for i in range(500)] and checker.overlaps == 0
