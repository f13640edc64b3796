"""``map``, and the batch signal between rstreams' own stages (rules 1.1, 2.13, 3.x).

Every chain is checked two ways: over rstreams' iterable sources, which hand batches to
``map``/``filter``/the sinks, and over a :class:`ManualPublisher`, which signals one
element at a time. The errors, the elements and the demand must be the same.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import NoneElementError
from rstreams.flow._map import MapFlow
from testkit import patience
from testkit.publishers import ManualPublisher, drive
from testkit.recording import RecordingSubscriber


def _fails_at(bad: int) -> Any:
    def fn(x: int) -> int:
        if x == bad:
            raise ValueError(f"bad element {x}")
        return x * 10

    return fn


def test_map_transforms_in_order_and_completes() -> None:
    """Each element becomes fn(element); on_complete follows the last one."""
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    rstreams.range(0, 4).map(lambda x: x * x).subscribe(s)
    assert s.items == [0, 1, 4, 9] and s.completed


def test_a_raising_fn_delivers_the_elements_before_it_then_the_error() -> None:
    """A batch that fails midway still passes on what came before the failure, then on_error."""
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    rstreams.range(0, 50).map(_fails_at(7)).subscribe(s)
    assert s.items == [x * 10 for x in range(7)]
    assert isinstance(s.error, ValueError) and str(s.error) == "bad element 7"


def test_a_raising_fn_cancels_upstream_and_signals_once() -> None:
    """Rule 2.13 for operators: user code raising cancels upstream; the error goes down once."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    source.map(_fails_at(2)).subscribe(s)
    source.emit(1, 2, 3)
    assert s.items == [10] and source.cancelled == 1 and s.signals.count("on_error") == 1


@pytest.mark.parametrize("batched", [True, False])
def test_fn_returning_none_fails_with_the_same_error_on_every_path(batched: bool) -> None:
    """Rule 2.13: None is never an element; the TypeError is the same batched or not."""
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=10)
    source: rstreams.Flow[int] = rstreams.range(0, 5) if batched else rstreams.from_iterable(iter(range(5)))
    source.map(lambda x: None if x == 2 else x).filter(lambda x: x is not None).subscribe(s)
    assert s.items == [0, 1]
    assert isinstance(s.error, NoneElementError)  # a TypeError
    assert str(s.error) == "map: fn returned None for 2; None is never a stream element (rule 2.13)"


def test_errors_match_between_a_source_chain_and_a_manual_publisher() -> None:
    """The chain over an iterable source fails exactly like the operators driven one by one."""
    failures: list[BaseException | None] = []
    for source in (rstreams.range(1, 6), rstreams.from_iterable(iter(range(1, 6)))):
        s: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
        source.map(_fails_at(3)).filter(bool).subscribe(s)
        failures.append(s.error)
    assert [type(e) for e in failures] == [ValueError, ValueError]
    assert len({str(e) for e in failures}) == 1


def test_map_refuses_a_non_callable_and_none() -> None:
    """Bad arguments are refused when the operator is built; on_next(None) raises (2.13)."""
    with pytest.raises(TypeError, match=r"map\(fn\) needs a callable"):
        rstreams.range(0, 1).map(3)  # type: ignore[arg-type]
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[str] = RecordingSubscriber(initial=1)
    MapFlow(source, str).subscribe(s)
    assert source.subscriber is not None
    with pytest.raises(TypeError, match=r"2\.13"):
        source.subscriber.on_next(None)  # type: ignore[arg-type]


def test_batches_never_exceed_the_demand() -> None:
    """Rule 1.1: a batch is cut to the outstanding demand."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 1000).map(lambda x: x + 1).subscribe(s)
    for n in (1, 3, 200, 2):
        before = len(s.items)
        s.request(n)
        assert len(s.items) == before + n
    assert not s.done


def test_a_list_holding_none_fails_after_the_elements_before_it() -> None:
    """Rule 2.13 at the source: the elements before the None go on, then on_error(TypeError)."""
    result = rstreams.from_iterable([1, 2, None, 4]).collect()
    with pytest.raises(TypeError, match=r"2\.13"):
        patience.result(result)
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=10)
    rstreams.from_iterable([1, 2, None, 4]).map(lambda x: x).subscribe(s)
    assert s.items == [1, 2] and isinstance(s.error, TypeError)


def test_cancel_inside_on_next_stops_a_batch() -> None:
    """Rule 3.12: a downstream that cancels mid-batch gets nothing more."""

    class CancelAtTwo(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            super().on_next(item)
            if len(self.items) == 2:
                self.cancel()

    s = CancelAtTwo(initial=100)
    rstreams.range(0, 100).map(lambda x: x).subscribe(s)
    assert s.items == [0, 1] and not s.done


@given(
    items=st.lists(st.integers(-50, 50), max_size=300),
    requests=st.lists(st.integers(1, 150), max_size=8),
)
def test_batched_chains_equal_per_element_chains(items: list[int], requests: list[int]) -> None:
    """Property: map+filter over a batching source == over a per-element one == the builtins."""
    expected = [y for y in (x * 3 for x in items) if y % 2 == 0]
    batched = drive(rstreams.from_iterable(items).map(lambda x: x * 3).filter(lambda x: x % 2 == 0), requests)
    single = drive(
        rstreams.from_iterable(iter(items)).map(lambda x: x * 3).filter(lambda x: x % 2 == 0), requests
    )
    assert batched.items == single.items == expected and batched.completed and single.completed


def test_map_passes_the_publisher_tck() -> None:
    """Every PublisherVerification case (rules 1.x-3.x), over a batching source."""
    from rstreams.tck import verify_publisher

    report = verify_publisher(
        lambda n: rstreams.range(0, n).map(lambda x: x + 1),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).map(str),
    )
    assert report.ok, str(report)
