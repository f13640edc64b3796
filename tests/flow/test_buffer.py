"""``buffer(size)``: list boundaries, demand in lists, errors, cancel (rules 1.1, 3.9, 3.17, 4.2)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import InvalidDemandError
from testkit import patience
from testkit.publishers import ManualPublisher, drive
from testkit.recording import RecordingSubscriber


def test_buffer_groups_elements_and_sends_the_short_last_list_on_complete() -> None:
    s: RecordingSubscriber[list[int]] = RecordingSubscriber(initial=10)
    rstreams.range(0, 7).buffer(3).subscribe(s)
    assert s.items == [[0, 1, 2], [3, 4, 5], [6]] and s.completed


def test_exact_multiple_has_no_empty_last_list() -> None:
    s: RecordingSubscriber[list[int]] = RecordingSubscriber(initial=10)
    rstreams.range(0, 6).buffer(3).subscribe(s)
    assert s.items == [[0, 1, 2], [3, 4, 5]] and s.completed


def test_request_n_lists_becomes_n_times_size_upstream() -> None:
    """Demand is counted in lists: request(2) of buffer(3) asks upstream for 6 elements."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[list[int]] = RecordingSubscriber()
    source.buffer(3).subscribe(s)
    s.request(2)
    assert source.requests == [6]
    source.emit(*range(6))
    assert s.items == [[0, 1, 2], [3, 4, 5]]


def test_huge_request_saturates_at_unbounded() -> None:
    """Rule 3.17: n * size is capped at 2**63 - 1, never an error."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[list[int]] = RecordingSubscriber()
    source.buffer(4).subscribe(s)
    s.request(rstreams.UNBOUNDED // 2)
    assert source.requests == [rstreams.UNBOUNDED] and s.error is None


def test_error_drops_the_partial_list_and_passes_the_error_on() -> None:
    """Rule 4.2: the error is passed on at once, even without demand; the partial list is dropped."""
    boom = RuntimeError("boom")
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[list[int]] = RecordingSubscriber(initial=1)
    source.buffer(3).subscribe(s)
    source.emit(1, 2)
    source.fail(boom)
    assert s.items == [] and s.error is boom


def test_invalid_request_signals_invalid_demand_error() -> None:
    """Rule 3.9: request(0), request(-1) and request(True) are illegal, signalled not raised."""
    for bad in (0, -1, True):
        s: RecordingSubscriber[list[int]] = RecordingSubscriber()
        rstreams.range(0, 10).buffer(3).subscribe(s)
        s.request(bad)
        assert isinstance(s.error, InvalidDemandError), bad
        assert s.items == []


def test_cancel_cancels_upstream_and_the_partial_list_is_never_sent() -> None:
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[list[int]] = RecordingSubscriber(initial=5)
    source.buffer(2).subscribe(s)
    source.emit(1)
    s.cancel()
    source.complete()
    assert source.cancelled == 1 and s.items == [] and not s.done


def test_cancel_inside_on_next_of_the_last_list_suppresses_on_complete() -> None:
    class CancelOnItem(RecordingSubscriber[list[int]]):
        def on_next(self, item: list[int]) -> None:
            super().on_next(item)
            self.cancel()

    s = CancelOnItem(initial=5)
    source: ManualPublisher[int] = ManualPublisher()
    source.buffer(3).subscribe(s)
    source.emit(1)
    source.complete()
    assert s.items == [[1]] and not s.done


def test_bad_size_is_refused_at_build_time() -> None:
    with pytest.raises(ValueError, match="size >= 1, got 0"):
        rstreams.range(0, 1).buffer(0)
    with pytest.raises(TypeError, match="needs an int"):
        rstreams.range(0, 1).buffer(2.0)  # type: ignore[arg-type]


@given(
    items=st.lists(st.integers(), max_size=50),
    size=st.integers(1, 8),
    requests=st.lists(st.integers(1, 5), max_size=10),
)
def test_buffer_equals_list_chunking_under_any_request_pattern(
    items: list[int], size: int, requests: list[int]
) -> None:
    """Property: the lists are the chunks of size ``size``; never more lists than requested (1.1)."""
    s = drive(rstreams.from_iterable(items).buffer(size), requests)
    assert s.items == [items[i : i + size] for i in range(0, len(items), size)] and s.completed


def test_buffer_passes_the_publisher_tck() -> None:
    """Every PublisherVerification case (rules 1.x-3.x), lists of two as elements."""
    from rstreams.tck import verify_publisher

    report = verify_publisher(
        lambda n: rstreams.from_iterable(range(2 * n)).buffer(2),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).buffer(2),
    )
    assert report.ok, str(report)
    assert len(report.passed) >= 30


@given(items=st.lists(st.integers(), max_size=80), size=st.integers(1, 9))
def test_buffer_then_flatten_is_the_identity(items: list[int], size: int) -> None:
    """The law of buffer(n): concatenating the lists gives the stream back; all but the last are full."""
    lists = patience.result(rstreams.from_iterable(items).buffer(size).collect())
    assert [x for chunk in lists for x in chunk] == items
    assert all(len(chunk) == size for chunk in lists[:-1]) and all(lists)
