"""Synchronous cold sources: ``from_iterable``, ``range``, ``just``, ``empty``, ``error``.

Each subscription pulls from its own iterator, lazily: ``from_iterable(itertools.count())``
works, and nothing is read before it is requested.

Theory of operation (the drain loop, rules 1.3 and 3.3): ``request(n)`` adds to the
outstanding demand under a lock. The first caller that finds nobody draining becomes
the drainer and emits until the demand is used up; any ``request`` that arrives
meanwhile, from ``on_next`` on the same thread or from another thread, only adds demand
and returns. So signals never overlap, and re-entrancy is bounded at depth 1.
``cancel`` sets a flag the drainer checks before every element (3.5, 3.12), and an
illegal ``request`` records its error for the drainer to deliver (3.9, serially).

Fusion: ``map`` and ``filter`` on these sources run inside the iterator itself (the
builtins ``map``/``filter``), which gives the same signals for a fraction of the cost.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from operator import length_hint
from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.errors import report_unhandled
from rstreams.flow._flow import Flow
from rstreams.rules import check_subscriber

__all__ = ["IterableFlow", "empty", "error", "from_iterable", "just", "range_"]

T = TypeVar("T")
R = TypeVar("R")

# Iterators whose length_hint is exact: for these, completion is signalled right after
# the last element instead of on the next request.
_EXACT_LENGTH: tuple[type, ...] = (type(iter(range(0))), type(iter([])), type(iter(())), type(iter("")))


class IterableFlow(Flow[T]):
    """A cold Publisher over the iterator that ``factory()`` returns, one per subscription."""

    __slots__ = ("_factory",)

    def __init__(self, factory: Callable[[], Iterator[T]]) -> None:
        self._factory = factory

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        subscription: _IterableSubscription[T] = _IterableSubscription(subscriber)
        try:
            subscription.iterator = self._factory()
        except Exception as error:
            subscription.start(error)
        else:
            subscription.start(None)

    def map(self, fn: Callable[[T], R]) -> Flow[R]:
        if not callable(fn):
            raise TypeError(f"map(fn) needs a callable, got {fn!r}")
        factory = self._factory
        return IterableFlow(lambda: map(fn, factory()))

    def filter(self, predicate: Callable[[T], object]) -> Flow[T]:
        if not callable(predicate):
            raise TypeError(f"filter(predicate) needs a callable, got {predicate!r}")
        factory = self._factory
        return IterableFlow(lambda: filter(predicate, factory()))


class _IterableSubscription(Subscription, Generic[T]):
    __slots__ = ("_draining", "_error", "_halt", "_lock", "_requested", "_stopped", "_subscriber", "iterator")

    def __init__(self, subscriber: Subscriber[T]) -> None:
        self._subscriber: Subscriber[T] | None = subscriber
        self.iterator: Iterator[T] | None = None
        self._requested = 0
        self._draining = True  # nobody may drain before on_subscribe has returned
        self._stopped = False  # cancelled, failed or completed: emit nothing more
        self._error: BaseException | None = None  # to deliver from the drain loop
        self._halt = False  # stopped or an error is pending: the drain loop must look up
        self._lock = threading.Lock()

    def start(self, error: BaseException | None) -> None:
        """Signal on_subscribe, then an immediate end if there is one, then drain."""
        subscriber = self._subscriber
        assert subscriber is not None
        try:
            subscriber.on_subscribe(self)
        except Exception as exc:  # rule 2.13: the subscriber broke the contract
            self._stop()
            report_unhandled(exc, f"{type(subscriber).__name__}.on_subscribe")
            return
        if error is None and type(self.iterator) in _EXACT_LENGTH and length_hint(self.iterator) == 0:
            self._stop()
            self._signal_complete(subscriber)
            return
        if error is not None:
            self._error = error
        with self._lock:  # requests made inside on_subscribe only added demand
            if self._requested == 0 and self._error is None:
                self._draining = False
                return
        self._drain()

    def request(self, n: int) -> None:
        if self._stopped:
            return  # rules 3.6 and 1.7: after cancel or a terminal signal, a no-op
        problem = demand.invalid(n)
        with self._lock:
            if problem is not None:
                if self._error is None:
                    self._error = problem
                    self._halt = True
            else:
                self._requested = demand.add(self._requested, n)
            if self._draining:
                return
            self._draining = True
        self._drain()

    def cancel(self) -> None:
        self._stop()

    def _stop(self) -> None:
        self._stopped = True
        self._halt = True
        self._subscriber = None  # rule 3.13: drop the reference
        self.iterator = None

    def _drain(self) -> None:
        """Emit while there is demand; the only place elements and terminals are sent.

        Longer than most functions here on purpose: one pass over an iterator segment is
        the hot path, and splitting it up would cost a call per element.
        """
        subscriber = self._subscriber
        iterator = self.iterator
        if subscriber is None:
            return
        on_next = subscriber.on_next  # bound once: the loop below is the hot path
        emitted = 0
        while True:
            if self._stopped:
                return
            if self._error is not None:
                error = self._error
                self._stop()
                subscriber.on_error(error)
                return
            if iterator is None:
                return
            requested = self._requested
            if requested == demand.UNBOUNDED:
                segment: Iterator[T] = iterator
                want = -1
            else:
                want = requested - emitted
                segment = islice(iterator, want)
            count = 0
            try:
                for item in segment:
                    if self._halt:
                        break  # cancelled, or an illegal request to report: see the loop's top
                    if item is None:  # type: ignore[comparison-overlap, unused-ignore]
                        raise TypeError("rule 2.13: the source produced None; None is never a stream element")
                    try:
                        on_next(item)
                    except Exception as exc:  # rule 2.13: consider the subscription cancelled
                        self._stop()
                        report_unhandled(exc, f"{type(subscriber).__name__}.on_next")
                        return
                    count += 1
                else:
                    if (
                        want < 0
                        or count < want
                        or (type(iterator) in _EXACT_LENGTH and length_hint(iterator) == 0)
                    ):
                        if not self._stopped:
                            self._stop()
                            self._signal_complete(subscriber)
                        return
            except Exception as exc:  # the iterator (or a fused map/filter) failed
                if not self._stopped:
                    self._stop()
                    subscriber.on_error(exc)
                return
            emitted += count
            with self._lock:
                if self._requested != demand.UNBOUNDED:
                    self._requested -= emitted
                    emitted = 0
                if self._requested == 0 and self._error is None:
                    self._draining = False
                    return

    @staticmethod
    def _signal_complete(subscriber: Subscriber[T]) -> None:
        try:
            subscriber.on_complete()
        except Exception as exc:
            report_unhandled(exc, f"{type(subscriber).__name__}.on_complete")


class _OneShot(Iterator[T]):
    """The iterator behind ``from_iterable(an_iterator)``: subscribable once."""

    def __init__(self, iterator: Iterator[T]) -> None:
        self._iterator: Iterator[T] | None = iterator

    def take(self) -> Iterator[T]:
        iterator, self._iterator = self._iterator, None
        if iterator is None:
            raise RuntimeError(
                "from_iterable() was given an iterator, which can be consumed once; "
                "it was already subscribed. Pass a re-iterable (a list, a range) or "
                "build a new Flow per subscription"
            )
        return iterator

    def __next__(self) -> T:  # pragma: no cover - never iterated itself
        raise StopIteration


def from_iterable(iterable: Iterable[T]) -> Flow[T]:
    """A cold Flow of the iterable's elements; each subscription iterates it anew.

    Lazy: elements are pulled only as they are requested, so infinite iterables work.
    An *iterator* (or generator) can be consumed only once: a second subscription gets
    ``on_error(RuntimeError)`` saying so.
    """
    if not isinstance(iterable, Iterable):
        raise TypeError(f"from_iterable() needs an iterable, got {iterable!r}")
    if isinstance(iterable, Iterator):
        once = _OneShot(iterable)
        return IterableFlow(once.take)
    return IterableFlow(lambda: iter(iterable))


def range_(start: int, stop: int | None = None, step: int = 1) -> Flow[int]:
    """Like the builtin ``range``: ``range_(5)`` is 0..4, ``range_(2, 5)`` is 2..4."""
    numbers = range(start) if stop is None else range(start, stop, step)
    return IterableFlow(lambda: iter(numbers))


def just(*items: T) -> Flow[T]:
    """A Flow of exactly these elements. ``None`` is refused here, before anything runs."""
    if any(item is None for item in items):
        raise TypeError("just() got None; None is never a stream element (rule 2.13)")
    return IterableFlow(lambda: iter(items))


def empty() -> Flow[T]:
    """A Flow that completes right after ``on_subscribe``, without any request."""
    return IterableFlow(lambda: iter(()))


def error(exc: BaseException) -> Flow[T]:
    """A Flow that signals ``on_subscribe`` and then ``on_error(exc)``, without any request."""
    if not isinstance(exc, BaseException):
        raise TypeError(f"error() needs an exception instance, got {exc!r}")

    def fail() -> Iterator[T]:
        raise exc

    return IterableFlow(fail)
