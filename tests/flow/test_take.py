"""``take`` and ``skip``: capped demand, cancelling upstream, completion, errors (rules 1.x, 3.x)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import InvalidDemandError
from rstreams.flow._flow import Flow
from testkit.publishers import ManualPublisher, drive
from testkit.recording import RecordingSubscriber


def test_take_emits_the_first_n_then_completes_and_cancels_upstream() -> None:
    """Rules 1.6, 3.5: after the n-th element, upstream is cancelled and downstream completed."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    source.take(3).subscribe(s)
    source.emit(1, 2)
    assert not s.done and source.cancelled == 0
    source.emit(3)
    assert s.items == [1, 2, 3] and s.completed and source.cancelled == 1
    assert s.signals[-1] == "on_complete"


def test_take_never_requests_more_than_n_upstream_in_total() -> None:
    """Nothing is requested that would be thrown away, even for unbounded downstream demand."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.take(5).subscribe(s)
    s.request(2)
    s.request(rstreams.UNBOUNDED)
    s.request(7)
    assert source.requests == [2, 3] and source.requested == 5


def test_take_zero_completes_right_after_on_subscribe_and_cancels_upstream() -> None:
    """Rule 1.5: on_complete needs no demand; the upstream is cancelled without a request."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.take(0).subscribe(s)
    assert s.signals == ["on_subscribe", "on_complete"]
    assert source.cancelled == 1 and source.requests == []
    s.request(3)  # rule 3.6: a no-op after the terminal signal
    assert source.requests == [] and s.error is None


def test_take_on_a_shorter_source_completes_with_the_source() -> None:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    rstreams.range(0, 3).take(10).subscribe(s)
    assert s.items == [0, 1, 2] and s.completed and s.signals.count("on_complete") == 1


def test_take_cancelled_downstream_inside_last_on_next_gets_no_on_complete() -> None:
    """Rule 3.6/1.8: a cancel made inside on_next stops the completion that would follow."""

    class CancelOnItem(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            super().on_next(item)
            self.cancel()

    s = CancelOnItem(initial=1)
    source: ManualPublisher[int] = ManualPublisher()
    source.take(1).subscribe(s)
    source.emit(7)
    assert s.items == [7] and not s.done and source.cancelled == 1


def test_take_and_skip_refuse_bad_counts_at_build_time() -> None:
    for op in (rstreams.range(0, 3).take, rstreams.range(0, 3).skip):
        with pytest.raises(ValueError, match="n >= 0, got -1"):
            op(-1)
        with pytest.raises(TypeError, match="needs an int"):
            op(True)
        with pytest.raises(TypeError, match="needs an int"):
            op(1.5)  # type: ignore[arg-type]


def test_invalid_request_signals_invalid_demand_error_even_after_the_budget_is_requested() -> None:
    """Rule 3.9: the illegal request reaches the upstream, which signals on_error serially."""
    for flow in (rstreams.range(0, 5).take(2), rstreams.range(0, 5).skip(2)):
        s: RecordingSubscriber[int] = RecordingSubscriber()
        flow.subscribe(s)
        s.request(1)
        s.request(-3)
        assert isinstance(s.error, InvalidDemandError)


def test_skip_adds_the_skipped_count_to_the_first_request_only() -> None:
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.skip(3).subscribe(s)
    s.request(2)
    s.request(2)
    assert source.requests == [5, 2]
    source.emit(*range(7))
    assert s.items == [3, 4, 5, 6]


def test_cancel_passes_upstream_for_both() -> None:
    """Rule 3.5: the operator cancels its upstream when its downstream cancels."""
    builds: list[Callable[[Flow[int]], Flow[int]]] = [lambda p: p.take(5), lambda p: p.skip(1)]
    for build in builds:
        source: ManualPublisher[int] = ManualPublisher()
        s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
        build(source).subscribe(s)
        s.cancel()
        source.emit(1, 2)
        assert source.cancelled == 1 and s.items == []


def test_errors_pass_through() -> None:
    boom = RuntimeError("upstream failed")
    builds: list[Callable[[Flow[int]], Flow[int]]] = [lambda p: p.take(5), lambda p: p.skip(1)]
    for build in builds:
        source: ManualPublisher[int] = ManualPublisher()
        s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
        build(source).subscribe(s)
        source.fail(boom)
        assert s.error is boom


def test_take_of_an_infinite_source_terminates() -> None:
    """Cancelling upstream is what lets take() end an unbounded stream."""
    import itertools

    s: RecordingSubscriber[int] = RecordingSubscriber(initial=rstreams.UNBOUNDED)
    rstreams.from_iterable(itertools.count()).take(1000).subscribe(s)
    assert s.items == list(range(1000)) and s.completed


@given(
    items=st.lists(st.integers(), max_size=40),
    n=st.integers(0, 45),
    requests=st.lists(st.integers(1, 9), max_size=10),
)
def test_take_and_skip_equal_slicing_under_any_request_pattern(
    items: list[int], n: int, requests: list[int]
) -> None:
    """Property: take(n) == items[:n] and skip(n) == items[n:], never more than requested (rule 1.1)."""
    taken = drive(rstreams.from_iterable(items).take(n), requests)
    assert taken.items == items[:n] and taken.completed
    skipped = drive(rstreams.from_iterable(items).skip(n), requests)
    assert skipped.items == items[n:] and skipped.completed


def test_take_and_skip_pass_the_publisher_tck() -> None:
    """Every PublisherVerification case (rules 1.x-3.x); take cuts an infinite source."""
    import itertools

    from rstreams.tck import verify_publisher

    taken = verify_publisher(
        lambda n: rstreams.from_iterable(itertools.count()).take(n),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).take(3),
    )
    assert taken.ok, str(taken)
    skipped = verify_publisher(
        lambda n: rstreams.from_iterable(range(n + 3)).skip(3),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).skip(3),
    )
    assert skipped.ok, str(skipped)
    assert len(taken.passed) >= 25 and len(skipped.passed) >= 30


@given(
    items=st.lists(st.integers(), max_size=300),
    n=st.integers(0, 320),
    requests=st.lists(st.integers(1, 150), max_size=6),
)
def test_batched_and_per_element_sources_give_the_same_take_and_skip(
    items: list[int], n: int, requests: list[int]
) -> None:
    """Batches from an iterable source and single elements from an iterator: same results,
    also behind a filter (whose batch the next stage may shorten in place)."""
    even = [x for x in items if x % 2 == 0]
    cases: list[tuple[Callable[[Flow[int]], Flow[int]], list[int]]] = [
        (lambda f: f.take(n), items[:n]),
        (lambda f: f.skip(n), items[n:]),
        (lambda f: f.filter(lambda x: x % 2 == 0).take(n), even[:n]),
        (lambda f: f.filter(lambda x: x % 2 == 0).skip(n), even[n:]),
    ]
    for build, expected in cases:
        batched = drive(build(rstreams.from_iterable(items)), requests)
        single = drive(build(rstreams.from_iterable(iter(items))), requests)
        assert batched.items == single.items == expected and batched.completed and single.completed
