"""take_until(other) and skip_until(other): a second Publisher closes or opens the stream (1.3, 1.6).

with_latest_from(other) shares their side subscriber, so the order in which ``other`` is
subscribed is tested for all three here.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Iterator

import pytest

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import InvalidDemandError
from testkit import patience
from testkit.publishers import ManualPublisher, SerialChecker, ThreadPublisher, drive
from testkit.recording import RecordingSubscriber


def _pair() -> tuple[ManualPublisher[int], ManualPublisher[str]]:
    return ManualPublisher(), ManualPublisher()


def test_take_until_passes_elements_until_the_trigger_then_completes() -> None:
    """other's first element cancels the source and completes; other is asked for one only."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.take_until(other).subscribe(s)
    s.request(5)
    assert source.requests == [5] and other.requests == [1]
    source.emit(1, 2)
    other.emit("stop")
    assert s.items == [1, 2] and s.completed
    assert source.cancelled == 1 and other.cancelled == 1


def test_take_until_completes_when_other_completes_empty() -> None:
    """An empty other is a trigger too (reactor's takeUntilOther, RxJava 2+'s takeUntil):
    the elements before it pass, then the source is cancelled and the stream completes."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    source.take_until(other).subscribe(s)
    source.emit(1, 2)
    other.complete()
    assert s.items == [1, 2] and s.completed and source.cancelled == 1
    source.emit(3, force=True)  # late, after the cancel (rule 3.12)
    assert s.items == [1, 2] and s.signals.count("on_complete") == 1


def test_take_until_an_other_empty_at_once_completes_before_any_element() -> None:
    """other completing inside its subscribe: on_subscribe, then on_complete (rule 1.9), the
    source cancelled before it sent anything."""
    source = _Eager(1, 2)
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    rstreams.from_publisher(source).take_until(rstreams.empty()).subscribe(s)
    assert s.signals == ["on_subscribe", "on_complete"] and source.cancelled == 1


def test_take_until_the_source_completing_first_cancels_other() -> None:
    """The other order: the source ends first; other, not yet ended, is cancelled and its
    later completion changes nothing."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    source.take_until(other).subscribe(s)
    source.emit(1)
    source.complete()
    other.complete()
    assert s.items == [1] and s.signals.count("on_complete") == 1 and other.cancelled == 1


def test_skip_until_opens_when_other_completes_empty() -> None:
    """As reactor's skipUntilOther and RxJava's skipUntil: other's completion opens the gate."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    source.skip_until(other).subscribe(s)
    source.emit(1)
    other.complete()
    source.emit(2, 3)
    source.complete()
    assert s.items == [2, 3] and s.completed and other.cancelled == 0
    assert patience.result(rstreams.range(0, 3).skip_until(rstreams.empty()).collect()) == [0, 1, 2]


def test_skip_until_drops_and_re_requests_until_the_trigger() -> None:
    """Before the trigger each element is dropped and asked for again (rule 1.1 from downstream)."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.skip_until(other).subscribe(s)
    s.request(2)
    source.emit(1, 2)
    assert s.items == [] and source.requests == [2, 1, 1]
    other.emit("go")
    source.emit(3, 4)
    assert s.items == [3, 4] and source.outstanding == 0 and other.cancelled == 1


@pytest.mark.parametrize("operator", ["take_until", "skip_until"])
def test_an_error_from_other_cancels_the_source_and_goes_downstream(operator: str) -> None:
    """Rule 4.2-like: the first error, from either side, ends the stream once."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    getattr(source, operator)(other).subscribe(s)
    other.fail(ValueError("other failed"))
    source.emit(1, force=True)
    assert str(s.error) == "other failed" and source.cancelled == 1 and s.items == []


@pytest.mark.parametrize("operator", ["take_until", "skip_until"])
def test_the_sources_end_cancels_other(operator: str) -> None:
    """When the source completes or fails, other is no longer needed."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    getattr(source, operator)(other).subscribe(s)
    source.fail(RuntimeError("source failed"))
    assert str(s.error) == "source failed" and other.cancelled == 1


@pytest.mark.parametrize("operator", ["take_until", "skip_until"])
def test_cancel_cancels_both(operator: str) -> None:
    """Rule 3.5 (and 3.7: once)."""
    source, other = _pair()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    getattr(source, operator)(other).subscribe(s)
    s.cancel()
    s.cancel()
    assert source.cancelled == 1 and other.cancelled == 1


def test_a_trigger_during_on_next_waits_for_it() -> None:
    """Rule 1.3: other fires while the source's on_next runs; on_complete comes after it."""
    source, other = _pair()
    order: list[str] = []

    class Triggering(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            order.append("next-start")
            other.emit("stop")  # as if another thread fired right now
            order.append("next-end")
            super().on_next(item)

        def on_complete(self) -> None:
            order.append("complete")
            super().on_complete()

    s = Triggering(initial=5)
    source.take_until(other).subscribe(s)
    source.emit(1)
    assert order == ["next-start", "next-end", "complete"] and s.items == [1]


@pytest.fixture
def pool() -> Iterator[concurrent.futures.Executor]:
    with concurrent.futures.ThreadPoolExecutor(2) as executor:
        yield executor


def test_signals_stay_serial_with_a_threaded_trigger(pool: concurrent.futures.Executor) -> None:
    """Elements from one thread, the trigger from another: never overlapping (rule 1.3)."""
    for _ in range(20):
        gate = threading.Event()
        inner: RecordingSubscriber[int] = RecordingSubscriber(initial=rstreams.UNBOUNDED)
        checker = SerialChecker(inner)
        rstreams.from_iterable(range(10_000)).observe_on(pool).take_until(
            ThreadPublisher(["stop"], hold=gate)
        ).subscribe(checker)
        gate.set()
        inner.await_done()
        assert checker.overlaps == 0 and inner.completed


def test_illegal_request_goes_upstream() -> None:
    """Rule 3.9 is the source's to signal, in order."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 5).take_until(ManualPublisher()).subscribe(s)
    s.request(0)
    assert isinstance(s.error, InvalidDemandError)


def test_other_must_be_a_publisher() -> None:
    """Checked when the operator is built, naming it."""
    with pytest.raises(TypeError, match="take_until"):
        rstreams.range(0, 1).take_until(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="skip_until"):
        rstreams.range(0, 1).skip_until(None)  # type: ignore[arg-type]


def test_demand_exact_under_any_pattern() -> None:
    """Never more than requested (rule 1.1), the trigger never firing."""
    assert drive(rstreams.range(0, 40).take_until(ManualPublisher()), [1, 3, 2]).items == list(range(40))
    assert drive(rstreams.range(0, 40).skip_until(rstreams.just(1)), [1, 3, 2]).items == list(range(40))


@pytest.mark.parametrize("operator", ["take_until", "skip_until"])
def test_passes_the_publisher_tck(operator: str) -> None:
    """Every PublisherVerification case, with an other that never fires (take_until) or fires
    first (skip_until)."""
    from rstreams.tck import verify_publisher

    def other() -> rstreams.Flow[int]:
        return rstreams.from_publisher(_Never()) if operator == "take_until" else rstreams.just(0)

    report = verify_publisher(
        lambda n: getattr(rstreams.range(0, n), operator)(other()),
        create_failed_publisher=lambda: getattr(rstreams.error(RuntimeError("failed")), operator)(other()),
    )
    assert report.ok, str(report)
    assert patience.result(rstreams.range(0, 3).take_until(rstreams.just(1)).collect()) == []


class _Never(Publisher[int]):
    """Never signals after ``on_subscribe`` and keeps no reference to its subscriber (rule 3.13)."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        class Sub(Subscription):
            def request(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                pass

        subscriber.on_subscribe(Sub())


class _Eager(Publisher[int]):
    """Emits its numbers inside ``request``, one ``on_next`` each, as a plain synchronous source does."""

    def __init__(self, *items: int) -> None:
        self.items = items
        self.cancelled = 0

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        publisher, left = self, list(self.items)

        class Sub(Subscription):
            def request(self, n: int) -> None:
                while n > 0 and left and not publisher.cancelled:
                    n -= 1
                    subscriber.on_next(left.pop(0))
                if not left and not publisher.cancelled:
                    publisher.cancelled = -1  # ended
                    subscriber.on_complete()

            def cancel(self) -> None:
                publisher.cancelled += publisher.cancelled >= 0

        subscriber.on_subscribe(Sub())


@pytest.mark.parametrize(
    ("operator", "expected"),
    [("take_until", []), ("skip_until", [1, 2, 3]), ("with_latest_from", [(1, 9), (2, 9), (3, 9)])],
)
def test_a_synchronous_other_is_subscribed_before_the_source(operator: str, expected: list[object]) -> None:
    """As reactor's takeUntil/skipUntil/withLatestFrom: ``other`` first, so ``just(9)`` has fired
    (or given its element) before a synchronous source's first element, whatever the demand."""
    s: RecordingSubscriber[object] = RecordingSubscriber(initial=10)
    getattr(rstreams.from_publisher(_Eager(1, 2, 3)), operator)(rstreams.just(9)).subscribe(s)
    assert s.items == expected and s.completed and s.signals[0] == "on_subscribe"


@pytest.mark.parametrize("operator", ["take_until", "skip_until", "with_latest_from"])
def test_other_failing_at_once_reaches_the_downstream_after_its_on_subscribe(operator: str) -> None:
    """Rule 1.9: other's error, signalled inside its subscribe, waits for the downstream's
    on_subscribe; the source is cancelled and never emits."""
    source = _Eager(1, 2)
    s: RecordingSubscriber[object] = RecordingSubscriber(initial=10)
    getattr(rstreams.from_publisher(source), operator)(rstreams.error(ValueError("other"))).subscribe(s)
    assert s.signals == ["on_subscribe", "on_error"] and str(s.error) == "other"
    assert source.cancelled == 1
