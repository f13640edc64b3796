"""reactivex interop: to_observable, from_observable with each overflow strategy, round trips."""

from __future__ import annotations

import re
import sys
import threading
from typing import Any

import pytest
import reactivex
from reactivex import operators as ops
from reactivex.subject import Subject

import rstreams
from rstreams.errors import (
    MissingExtraError,
    NoneElementError,
    OverflowStrategyError,
    set_unhandled_error_hook,
)
from rstreams.flow._public import PushSource, from_observable
from rstreams.flow._push import OverflowStrategy
from rstreams.flow._rx import _ObserverSubscriber, to_observable
from rstreams.tck._subscriber import verify_subscriber_blackbox
from testkit import patience
from testkit.recording import RecordingSubscriber


class Events:
    """Collects what a reactivex observer receives."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.error: BaseException | None = None
        self.completed = False
        self.done = threading.Event()

    def subscribe(self, observable: reactivex.Observable[Any]) -> reactivex.abc.DisposableBase:
        def on_error(error: Exception) -> None:
            self.error = error
            self.done.set()

        def on_completed() -> None:
            self.completed = True
            self.done.set()

        return observable.subscribe(on_next=self.items.append, on_error=on_error, on_completed=on_completed)


def test_to_observable_delivers_everything_and_completes() -> None:
    """A Flow seen through reactivex operators gives the same answer as Python."""
    events = Events()
    double: Any = ops.map(lambda x: x * 2)
    events.subscribe(rstreams.range(0, 100).to_observable().pipe(double, ops.sum()))
    assert events.items == [sum(x * 2 for x in range(100))] and events.completed


def test_to_observable_is_cold_and_windowed() -> None:
    """Each subscription starts over; with a window the source is asked in steps."""
    observable = to_observable(rstreams.range(0, 10), window=3)
    first, second = Events(), Events()
    first.subscribe(observable)
    second.subscribe(observable)
    assert first.items == second.items == list(range(10)) and first.completed and second.completed


def test_to_observable_error() -> None:
    """on_error reaches the observer."""
    events = Events()
    events.subscribe(rstreams.range(0, 5).map(lambda x: 1 // (x - 2)).to_observable())
    assert events.items == [-1, -1] and isinstance(events.error, ZeroDivisionError)


def test_dispose_cancels_the_subscription() -> None:
    """Disposing the reactivex subscription cancels the rstreams one."""
    source: PushSource[int] = PushSource(overflow=OverflowStrategy.BUFFER)
    events = Events()
    disposable = events.subscribe(to_observable(source))
    source.push(1)
    assert source.subscriber_count == 1
    disposable.dispose()
    assert source.subscriber_count == 0
    source.push(2)
    assert events.items == [1] and not events.done.is_set()


def test_raising_observer_cancels_and_reports() -> None:
    """An observer whose on_next raises is cancelled; the error is reported, not lost."""
    reported: list[BaseException] = []
    previous = set_unhandled_error_hook(lambda error, where: reported.append(error))
    try:
        seen: list[int] = []

        def on_next(x: int) -> None:
            seen.append(x)
            if x == 2:
                raise ValueError("observer bug")

        to_observable(rstreams.range(0, 10)).subscribe(on_next=on_next)
        assert seen == [0, 1, 2]
        assert len(reported) == 1 and isinstance(reported[0], ValueError)
    finally:
        set_unhandled_error_hook(previous)


def test_round_trip_flow_observable_flow() -> None:
    """Flow -> Observable -> Flow keeps every element and the completion."""
    flow: rstreams.Flow[int] = from_observable(rstreams.range(0, 1000).to_observable(), capacity=1000)
    assert patience.result(flow.collect()) == list(range(1000))
    observable = reactivex.from_iterable(range(50))
    assert patience.result(from_observable(observable).reduce(lambda a, b: a + b, 0)) == sum(range(50))


def push_five(overflow: str, capacity: int | None) -> tuple[RecordingSubscriber[int], Subject[int]]:
    """A subscriber with demand for 2 and a Subject that pushes 0..4 into it."""
    subject: Subject[int] = Subject()
    subscriber: RecordingSubscriber[int] = RecordingSubscriber(initial=2)
    from_observable(subject, overflow=overflow, capacity=capacity).subscribe(subscriber)
    for i in range(5):
        subject.on_next(i)
    return subscriber, subject


def test_overflow_buffer() -> None:
    """ "buffer": holds ``capacity`` beyond demand, then fails after the buffered elements."""
    subscriber, subject = push_five("buffer", 2)
    assert subscriber.items == [0, 1] and not subscriber.done
    assert not subject.observers  # the overflow disposed the Observable subscription
    subscriber.request(5)
    assert subscriber.items == [0, 1, 2, 3] and isinstance(subscriber.error, OverflowStrategyError)


def test_overflow_drop() -> None:
    """ "drop": elements without demand are dropped; the stream goes on."""
    subscriber, subject = push_five("drop", None)
    subject.on_completed()
    assert subscriber.items == [0, 1] and subscriber.completed


def test_overflow_latest() -> None:
    """ "latest": only the newest element without demand is kept."""
    subscriber, subject = push_five("latest", None)
    subject.on_completed()
    assert subscriber.items == [0, 1] and not subscriber.done
    subscriber.request(10)
    assert subscriber.items == [0, 1, 4] and subscriber.completed


def test_overflow_error() -> None:
    """ "error": the first element without demand fails the stream at once."""
    subscriber, subject = push_five("error", None)
    assert subscriber.items == [0, 1] and isinstance(subscriber.error, OverflowStrategyError)
    assert not subject.observers


def test_cancel_disposes_the_observable_subscription() -> None:
    """Cancelling the Flow subscription unsubscribes from the Observable."""
    subject: Subject[int] = Subject()
    subscriber: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    from_observable(subject).subscribe(subscriber)
    assert len(subject.observers) == 1
    subject.on_next(1)
    subscriber.cancel()
    assert not subject.observers and subscriber.items == [1]


def test_observable_error_and_none() -> None:
    """An Observable's error reaches the subscriber; an emitted None fails the stream (2.13)."""
    failing: reactivex.Observable[int] = reactivex.throw(KeyError("k"))
    assert isinstance(patience.exception(from_observable(failing).collect()), KeyError)
    with_none: reactivex.Observable[Any] = reactivex.of(1, None, 3)
    error = patience.exception(from_observable(with_none).collect())
    assert isinstance(error, NoneElementError) and "2.13" in str(error)


def test_bad_arguments() -> None:
    """Unknown strategies and non-Observables are refused when built."""
    with pytest.raises(ValueError, match="'buffer'"):
        from_observable(reactivex.empty(), overflow="sometimes")
    with pytest.raises(TypeError, match="Observable"):
        from_observable(42)
    with pytest.raises(ValueError, match=r"3\.9"):
        to_observable(rstreams.range(0, 1), window=0)
    assert from_observable(reactivex.of(1), overflow=OverflowStrategy.DROP, capacity=4) is not None


@pytest.mark.timeout(30)
@pytest.mark.parametrize("window", [None, 4])
def test_observer_subscriber_passes_the_tck(window: int | None) -> None:
    """The TCK's blackbox Subscriber verification passes for to_observable's subscriber."""
    report = verify_subscriber_blackbox(lambda: _ObserverSubscriber(Subject(), window))
    assert report.ok, str(report)


def test_without_reactivex_both_ways_are_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """from_observable and to_observable without reactivex: MissingExtraError (an ImportError, as
    for the other extras) quoting the install command."""
    monkeypatch.setitem(sys.modules, "reactivex", None)  # import fails: not installed
    install = re.escape("pip install 'rstreams[reactivex]'")
    with pytest.raises(MissingExtraError, match=install) as caught:
        from_observable(Subject())
    assert issubclass(MissingExtraError, ImportError) and caught.value.name == "reactivex"
    with pytest.raises(MissingExtraError, match=install):
        to_observable(rstreams.just(1))
