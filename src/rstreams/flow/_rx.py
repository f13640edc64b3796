"""Interop with reactivex (RxPY): :func:`to_observable` and :func:`from_observable`.

reactivex Observables are push-only: they have no ``request(n)`` and cannot be slowed
down (RxPY removed backpressure in 3.0). So the two directions differ:

* ``to_observable(flow)``: each Observable subscription subscribes to the Flow and
  requests unbounded demand (or ``window`` at a time, asked for again at half, which
  holds a source to the pace of a synchronous observer). Disposing cancels (rule 3.5).
  The observer's ``on_next`` raising cancels the subscription and goes to
  :func:`rstreams.errors.report_unhandled` (rule 2.13: a Subscriber must not raise).
* ``from_observable(observable, overflow=..., capacity=...)``: a cold Flow, built on
  :func:`rstreams.flow._push.from_push`: the Observable pushes into a
  :class:`~rstreams.PushSource` and the overflow strategy (buffer, drop,
  latest, error) decides what happens to elements that find no demand (rule 1.1).
  Cancelling the subscription disposes the Observable subscription.

reactivex is an optional dependency, imported on first use: ``pip install rstreams[reactivex]``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import MissingExtraError, NoneElementError, report_unhandled
from rstreams.flow._push import OverflowStrategy, PushHub, from_push
from rstreams.flow._sinks import check_publisher, check_window
from rstreams.rules import check_error

if TYPE_CHECKING:
    import reactivex
    from reactivex import abc as rx_abc

__all__ = ["from_observable", "to_observable"]

T = TypeVar("T")


def _import_reactivex() -> Any:
    """The reactivex module (the reactivex extra), or a :class:`MissingExtraError` naming it."""
    try:
        import reactivex
    except ModuleNotFoundError as missing:
        if (missing.name or "").partition(".")[0] != "reactivex":
            raise  # a broken installation, not a missing extra
        raise MissingExtraError(
            "the reactivex interop (from_observable, to_observable) needs the reactivex extra: "
            "pip install 'rstreams[reactivex]'",
            name=missing.name,
        ) from missing
    return reactivex


class _ObserverSubscriber(Subscriber[T], Generic[T]):
    """Subscribes to a Flow on behalf of one reactivex observer."""

    __slots__ = ("_cancelled", "_half", "_observer", "_received", "_window", "done", "upstream")

    def __init__(self, observer: rx_abc.ObserverBase[T], window: int | None) -> None:
        self._observer = observer
        self._window = window
        self._half = 0 if window is None else (window + 1) // 2
        self._received = 0
        self.upstream: Subscription | None = None
        self._cancelled = False
        self.done = False

    def on_subscribe(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self.upstream, subscription):
            return  # rule 2.5
        self.upstream = subscription
        if self._cancelled:  # disposed before the publisher answered
            subscription.cancel()
            return
        subscription.request(demand.UNBOUNDED if self._window is None else self._window)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self.done:
            return  # rule 3.12: late after a cancel
        try:
            self._observer.on_next(item)
        except Exception as error:  # rule 2.13: we must not raise into the publisher
            self.cancel()
            report_unhandled(error, f"to_observable: {type(self._observer).__name__}.on_next")
            return
        if self._half:
            self._received += 1
            if self._received == self._half:
                self._received = 0
                upstream = self.upstream
                if upstream is not None:
                    upstream.request(self._half)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:
            return
        self.done = True
        self.upstream = None
        try:
            self._observer.on_error(error)
        except Exception as exc:
            report_unhandled(exc, f"to_observable: {type(self._observer).__name__}.on_error")

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.upstream = None
        try:
            self._observer.on_completed()
        except Exception as exc:
            report_unhandled(exc, f"to_observable: {type(self._observer).__name__}.on_completed")

    def cancel(self) -> None:
        """Dispose: cancel the subscription (rules 3.5, 3.7); safe from any thread."""
        self._cancelled = True
        self.done = True
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.cancel()


def to_observable(publisher: Publisher[T], *, window: int | None = None) -> reactivex.Observable[T]:
    """A reactivex Observable over ``publisher``; each Observable subscription subscribes anew.

    ``window=None`` requests unbounded demand (rule 3.17); ``window=n`` keeps at most ``n``
    outstanding. Elements are delivered on whatever thread the publisher signals on; the
    ``scheduler`` given to ``subscribe`` is not used. Disposing cancels the subscription.

    Raises:
        MissingExtraError: reactivex is not installed (an ``ImportError``).
        TypeError: ``publisher`` has no ``subscribe``.
        ValueError: ``window`` is not an int > 0 (rule 3.9: a request must be > 0).
    """
    rx = _import_reactivex()
    check_publisher(publisher, "to_observable")
    if window is not None:
        check_window(window, "to_observable")

    def subscribe(observer: rx_abc.ObserverBase[T], scheduler: object = None) -> rx_abc.DisposableBase:
        subscriber: _ObserverSubscriber[T] = _ObserverSubscriber(observer, window)
        publisher.subscribe(subscriber)
        return rx.disposable.Disposable(subscriber.cancel)

    return rx.create(subscribe)


class _ObservableBridge(Generic[T]):
    """The reactivex observer that feeds a :class:`~rstreams.flow._push.PushHub`; tolerant of late signals."""

    __slots__ = ("_ended", "_source")

    def __init__(self, source: PushHub[T]) -> None:
        self._source = source
        self._ended = False

    def on_next(self, item: T) -> None:
        if self._ended:
            return
        if item is None:
            self.on_error(
                NoneElementError(
                    "from_observable: the Observable emitted None; None is never a stream element (rule 2.13)"
                )
            )
            return
        self._source.push(item)

    def on_error(self, error: BaseException) -> None:
        if not self._ended:
            self._ended = True
            self._source.fail(error)

    def on_completed(self) -> None:
        if not self._ended:
            self._ended = True
            self._source.complete()


def from_observable(
    observable: reactivex.Observable[T],
    *,
    overflow: OverflowStrategy | str = OverflowStrategy.BUFFER,
    capacity: int | None = None,
) -> Publisher[T]:
    """The publisher behind :func:`rstreams.from_observable`."""
    _import_reactivex()
    if not callable(getattr(observable, "subscribe", None)):
        raise TypeError(f"from_observable() needs a reactivex Observable, got {observable!r}")
    if isinstance(overflow, str):
        try:
            overflow = OverflowStrategy(overflow.lower())
        except ValueError:
            choices = ", ".join(repr(s.value) for s in OverflowStrategy)
            raise ValueError(
                f"from_observable(overflow=...) needs one of {choices}, got {overflow!r}"
            ) from None

    def register(source: PushHub[T]) -> Any:
        bridge = _ObservableBridge(source)
        disposable = observable.subscribe(
            on_next=bridge.on_next, on_error=bridge.on_error, on_completed=bridge.on_completed
        )
        return disposable.dispose

    return from_push(register, overflow=overflow, capacity=capacity, make=PushHub, who="from_observable")
