"""scan, start_with, distinct, distinct_until_changed, take_while, skip_while (rules 1.1, 2.13, 3.x)."""

from __future__ import annotations

import itertools
import operator
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import InvalidDemandError, NoneElementError
from testkit import patience
from testkit.publishers import ManualPublisher, drive
from testkit.recording import WAIT, RecordingSubscriber

Build = Callable[[rstreams.Flow[int]], rstreams.Flow[Any]]


def _boom(at: int) -> Callable[..., Any]:
    """A user function that raises on the element ``at`` (the last argument)."""

    def fn(*args: Any) -> Any:
        if args[-1] == at:
            raise ValueError(f"user code failed at {at}")
        return args[-1] if len(args) == 1 else args[0] + args[-1]

    return fn


# each operator, with a user function that raises on element 3 of 1, 2, 3, 4
RAISING: dict[str, Build] = {
    "scan": lambda f: f.scan(_boom(3), 0),
    "distinct": lambda f: f.distinct(key=_boom(3)),
    "distinct_until_changed": lambda f: f.distinct_until_changed(key=_boom(3)),
    "take_while": lambda f: f.take_while(_boom(3)),
    "skip_while": lambda f: f.skip_while(lambda x: _boom(3)(x) < 3),
}


@pytest.mark.parametrize("name", list(RAISING))
def test_user_code_raising_cancels_upstream_and_signals_the_error_once(name: str) -> None:
    """Rule 2.13 for operators: the upstream is cancelled, the error goes downstream once."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=10)
    RAISING[name](source).subscribe(s)
    source.emit(1, 2, 3)
    assert isinstance(s.error, ValueError) and "failed at 3" in str(s.error)
    assert source.cancelled == 1 and s.signals.count("on_error") == 1
    source.emit(4, force=True)  # a late element after the cancel is ignored (rule 3.12)
    assert s.signals[-1] == "on_error"


# each operator over 0..9, what it gives, and the exact upstream demand for request(2)
CASES: dict[str, tuple[Build, list[Any]]] = {
    "scan": (lambda f: f.scan(operator.add, 100), [100, 101, 103, 106, 110, 115, 121, 128, 136, 145]),
    "start_with": (lambda f: f.start_with(-2, -1), [-2, -1, *range(10)]),
    "distinct": (lambda f: f.map(lambda x: x % 4).distinct(), [0, 1, 2, 3]),
    "distinct(key=)": (lambda f: f.distinct(key=lambda x: x // 3), [0, 3, 6, 9]),
    "distinct_until_changed": (lambda f: f.map(lambda x: x // 3).distinct_until_changed(), [0, 1, 2, 3]),
    "distinct_until_changed(key=)": (lambda f: f.distinct_until_changed(key=lambda x: x > 4), [0, 5]),
    "take_while": (lambda f: f.take_while(lambda x: x < 4), [0, 1, 2, 3]),
    "skip_while": (lambda f: f.skip_while(lambda x: x < 7), [7, 8, 9]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_elements_in_order_then_complete(name: str) -> None:
    """Each operator's elements, in order, then on_complete."""
    build, expected = CASES[name]
    assert patience.result(build(rstreams.range(0, 10)).collect()) == expected


@pytest.mark.parametrize("name", list(CASES))
@given(requests=st.lists(st.integers(1, 4), max_size=10))
def test_never_more_than_requested(name: str, requests: list[int]) -> None:
    """Rule 1.1 under any request pattern; the same elements as one big request."""
    build, expected = CASES[name]
    assert drive(build(rstreams.range(0, 10)), requests).items == expected


@pytest.mark.parametrize("name", list(CASES))
def test_illegal_request_is_signalled(name: str) -> None:
    """Rule 3.9: request(0) ends in on_error(InvalidDemandError), never a raise."""
    build, _ = CASES[name]
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    build(rstreams.range(0, 10)).subscribe(s)
    s.request(0)
    s.await_done()
    assert isinstance(s.error, InvalidDemandError)


def test_scan_passes_demand_through_and_never_changes_initial() -> None:
    """One accumulator per element: request(2) upstream for request(2) downstream."""
    initial = [0]
    source: ManualPublisher[list[int]] = ManualPublisher()
    s: RecordingSubscriber[list[int]] = RecordingSubscriber()
    source.scan(operator.add, initial).subscribe(s)
    s.request(2)
    source.emit([1], [2])
    assert source.requests == [2] and s.items == [[0, 1], [0, 1, 2]] and initial == [0]


def test_filters_re_request_each_dropped_element() -> None:
    """distinct drops an element: one more is asked upstream, so request(2) yields two."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.distinct().subscribe(s)
    s.request(2)
    source.emit(1, 1, 1, 2)
    assert s.items == [1, 2] and source.requests == [2, 1, 1] and source.outstanding == 0


def test_take_while_cancels_upstream_at_the_first_failing_element() -> None:
    """The failing element is dropped, the upstream cancelled, the stream completed (1.6)."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    source.take_while(lambda x: x < 2).subscribe(s)
    source.emit(0, 1, 2)
    assert s.items == [0, 1] and s.completed and source.cancelled == 1


def test_start_with_subscribes_to_the_source_only_after_its_items() -> None:
    """The source is subscribed after the items are delivered, and asked only for what is left."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.start_with(7, 8).subscribe(s)
    s.request(1)
    assert s.items == [7] and source.subscriber is None
    s.request(1)
    assert s.items == [7, 8] and source.requested == 0
    s.request(1)
    assert source.requested == 1
    source.emit(9)
    source.complete()
    assert s.items == [7, 8, 9] and s.completed


def test_bad_arguments_are_refused_when_built() -> None:
    """Non-callables and None initial values fail at once, naming the operator."""
    flow = rstreams.range(0, 1)
    calls: list[tuple[Callable[[], object], str]] = [
        (lambda: flow.scan(3, 0), r"scan\(fn\)"),  # type: ignore[arg-type]
        (lambda: flow.scan(operator.add, None), "initial"),
        (lambda: flow.distinct(key=3), "distinct"),  # type: ignore[arg-type]
        (lambda: flow.distinct_until_changed(key=3), "distinct_until_changed"),  # type: ignore[arg-type]
        (lambda: flow.take_while(None), "take_while"),  # type: ignore[arg-type]
        (lambda: flow.skip_while(None), "skip_while"),  # type: ignore[arg-type]
        (lambda: flow.start_with(1, None), "None"),  # type: ignore[arg-type]
    ]
    for call, message in calls:
        with pytest.raises(TypeError, match=message):
            call()


@given(st.lists(st.integers(-20, 20), min_size=1, max_size=50))
def test_scan_then_last_equals_reduce(items: list[int]) -> None:
    """The law of a running fold: its last value is the fold."""
    flow = rstreams.from_iterable(items)
    assert flow.scan(operator.add, 0).last().result(WAIT) == patience.result(flow.reduce(operator.add, 0))


@given(st.lists(st.integers(-5, 5), max_size=60))
def test_distinct_has_no_repeats_and_keeps_first_occurrences(items: list[int]) -> None:
    """distinct == the first occurrence of each value, in order."""
    assert patience.result(rstreams.from_iterable(items).distinct().collect()) == list(dict.fromkeys(items))


@given(st.lists(st.integers(0, 3), max_size=60))
def test_distinct_until_changed_has_no_adjacent_repeats(items: list[int]) -> None:
    """No two neighbours are equal, and dropping runs is all that happened."""
    got = patience.result(rstreams.from_iterable(items).distinct_until_changed().collect())
    assert all(a != b for a, b in itertools.pairwise(got))
    assert got == [x for i, x in enumerate(items) if i == 0 or items[i - 1] != x]


@pytest.mark.parametrize("name", list(CASES))
def test_passes_the_publisher_tck(name: str) -> None:
    """Every PublisherVerification case (rules 1.x-3.x), over sources long enough for n."""
    from rstreams.tck import verify_publisher

    makers: dict[str, Callable[[int], rstreams.Flow[Any]]] = {
        "scan": lambda n: rstreams.range(0, n).scan(operator.add, 0),
        "start_with": lambda n: rstreams.range(0, max(n - 2, 0)).start_with(*[-1, -2][: min(n, 2)]),
        "distinct": lambda n: rstreams.range(0, n).flat_map(lambda x: rstreams.just(x, x)).distinct(),
        "distinct(key=)": lambda n: rstreams.range(0, 2 * n).distinct(key=lambda x: x // 2),
        "distinct_until_changed": lambda n: (
            rstreams.range(0, 2 * n).map(lambda x: x // 2).distinct_until_changed()
        ),
        "distinct_until_changed(key=)": lambda n: rstreams.range(0, n).distinct_until_changed(
            key=lambda x: x
        ),
        "take_while": lambda n: rstreams.range(0, n + 5).take_while(lambda x: x < n),
        "skip_while": lambda n: rstreams.range(-3, n).skip_while(lambda x: x < 0),
    }
    failed: rstreams.Flow[int] = rstreams.error(RuntimeError("failed"))
    report = verify_publisher(
        makers[name],
        # a failure behind start_with's items waits for them; with no items it comes at once
        create_failed_publisher=lambda: (
            failed.start_with() if name == "start_with" else CASES[name][0](failed)
        ),
    )
    assert report.ok, str(report)


def test_scan_fn_returning_none_fails_with_none_element_error() -> None:
    """Rule 2.13: an accumulator of None ends the stream with NoneElementError (a TypeError)
    after the accumulators before it, batched or one by one."""
    for source in (rstreams.range(1, 10), rstreams.from_iterable(iter(range(1, 10)))):
        s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
        source.scan(lambda acc, x: None if x == 3 else acc + x, 0).subscribe(s)  # type: ignore[arg-type, return-value]
        assert s.items == [1, 3] and isinstance(s.error, NoneElementError), s.signals
        assert str(s.error) == "scan: fn returned None for 3; None is never a stream element"


def test_scan_over_batches_delivers_what_came_before_a_failure() -> None:
    """Batched or one by one, a failing fn ends the stream after the accumulators before it."""
    for source in (rstreams.range(1, 300), rstreams.from_iterable(iter(range(1, 300)))):
        s: RecordingSubscriber[int] = RecordingSubscriber(initial=1000)
        source.scan(_boom(200), 0).subscribe(s)
        assert s.items == list(itertools.accumulate(range(1, 200)))
        assert isinstance(s.error, ValueError)
