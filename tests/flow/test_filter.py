"""``filter`` over a non-fused Publisher: demand kept by re-requesting, errors, cancel (rules 1.1, 3.x)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import InvalidDemandError
from rstreams.flow._filter import FilterFlow
from testkit.publishers import ManualPublisher, drive
from testkit.recording import RecordingSubscriber


def test_filter_keeps_matching_elements_in_order() -> None:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    FilterFlow(rstreams.range(0, 20), lambda x: x % 3 == 0).subscribe(s)
    assert s.items == [0, 3, 6, 9, 12, 15, 18] and s.completed


def test_each_dropped_element_is_re_requested_upstream_so_demand_is_not_lost() -> None:
    """Rule 1.1 from downstream: request(2) is answered with 2 elements although some are dropped."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.filter(lambda x: x % 2 == 0).subscribe(s)
    s.request(2)
    assert source.requests == [2]
    source.emit(1)  # dropped
    assert source.requests == [2, 1]
    source.emit(2, 3)  # kept, dropped
    assert source.requests == [2, 1, 1] and s.items == [2]
    source.emit(4)
    assert s.items == [2, 4] and source.outstanding == 0  # exactly the two requested, no more asked


def test_no_re_request_once_downstream_demand_is_unbounded() -> None:
    """Rule 3.17: with unbounded demand upstream sends everything; request(1) per drop is pointless."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.filter(lambda x: x > 5).subscribe(s)
    s.request(rstreams.UNBOUNDED // 2)
    s.request(rstreams.UNBOUNDED // 2 + 1)  # the cumulative demand reaches exactly 2**63 - 1
    source.emit(*range(10))
    assert source.requests == [rstreams.UNBOUNDED // 2, rstreams.UNBOUNDED // 2 + 1]
    assert s.items == [6, 7, 8, 9]


def test_raising_predicate_cancels_upstream_and_signals_the_error() -> None:
    """Rule 4.2 / operator contract: user code failing ends the stream once, upstream cancelled."""
    boom = ValueError("bad element")

    def predicate(x: int) -> bool:
        if x == 2:
            raise boom
        return True

    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    source.filter(predicate).subscribe(s)
    source.emit(1, 2, 3)
    assert s.items == [1] and s.error is boom and source.cancelled == 1
    assert s.signals.count("on_error") == 1


def test_invalid_request_signals_invalid_demand_error() -> None:
    """Rule 3.9: request(0) ends in on_error(InvalidDemandError), never a raise."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    FilterFlow(rstreams.range(0, 5), bool).subscribe(s)
    s.request(0)
    assert isinstance(s.error, InvalidDemandError) and "3.9" in str(s.error)


def test_cancel_cancels_upstream_and_late_elements_are_ignored() -> None:
    """Rules 3.5, 3.12: after cancel the upstream is cancelled and late signals go nowhere."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    source.filter(lambda x: True).subscribe(s)
    source.emit(1)
    s.cancel()
    source.emit(2)
    source.complete()
    assert s.items == [1] and not s.done and source.cancelled == 1


def test_dropping_many_elements_does_not_recurse() -> None:
    """Rule 3.3: request(1) per drop, made inside on_next, is trampolined by the upstream."""
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    FilterFlow(rstreams.range(0, 50_000), lambda x: x == 49_999).subscribe(s)
    assert s.items == [49_999] and s.completed


def test_none_and_bad_arguments_are_refused() -> None:
    """Rule 2.13: on_next(None) raises TypeError; a non-callable predicate fails at build time."""
    with pytest.raises(TypeError, match="callable"):
        FilterFlow(rstreams.range(0, 1), 3)  # type: ignore[arg-type]
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    source.filter(bool).subscribe(s)
    assert source.subscriber is not None
    with pytest.raises(TypeError, match=r"2\.13"):
        source.subscriber.on_next(None)  # type: ignore[arg-type]


@given(
    items=st.lists(st.integers(-50, 50), max_size=60),
    requests=st.lists(st.integers(1, 7), max_size=12),
)
def test_filter_equals_the_list_equivalent_under_any_request_pattern(
    items: list[int], requests: list[int]
) -> None:
    """Property: same elements as the builtin filter; never more than requested (rule 1.1)."""
    s = drive(FilterFlow(rstreams.from_iterable(items), lambda x: x % 3 != 0), requests)
    assert s.items == [x for x in items if x % 3 != 0] and s.completed


def test_filter_passes_the_publisher_tck() -> None:
    """Every PublisherVerification case (rules 1.x-3.x), with half the elements dropped."""
    from rstreams.tck import verify_publisher

    report = verify_publisher(
        lambda n: FilterFlow(rstreams.from_iterable(range(2 * n)), lambda x: x % 2 == 0),
        create_failed_publisher=lambda: FilterFlow(rstreams.error(RuntimeError("failed")), bool),
    )
    assert report.ok, str(report)
    assert len(report.passed) >= 30
