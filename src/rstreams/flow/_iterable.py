"""Synchronous cold sources: ``from_iterable``, ``range``, ``just``, ``empty``, ``error``.

Each subscription pulls from its own iterator, lazily: ``from_iterable(itertools.count())``
works, and nothing is read before it is requested.

Theory of operation: the drain loop of :mod:`rstreams.flow._drain` (rules 1.3 and 3.3).
``request(n)`` adds to the demand under the lock; whoever finds the loop idle runs it and
emits until the demand is used up; a ``request`` that arrives meanwhile, from
``on_next`` on the same thread or from another thread, only adds demand and returns. The
loop starts held, so nothing is emitted before ``on_subscribe`` has returned. ``cancel``
sets a flag the loop checks before every element (3.5, 3.12), and an illegal ``request``
records its error for the loop to deliver (3.9, serially). The demand is two running
totals, ``requested`` (written under the lock) and ``emitted`` (written by the loop only):
what is outstanding is their difference, so a pass needs no bookkeeping after it.

Completion needs no spare demand (1.5): when the iterator's length is known
(``range``, lists, tuples, strings: :data:`_EXACT`), ``on_complete`` follows the last
element at once; any other iterator ends when a pull finds it exhausted.

Batches: a Subscriber inside rstreams that offers ``on_next_many`` (see
:mod:`rstreams.flow._signals`) is handed up to :data:`~rstreams.flow._signals.CHUNK`
elements per call, within its demand, when the iterator is one of :data:`_EXACT` (pulling
those ahead runs no user code and never blocks). Any other iterator, and any other
Subscriber, gets one ``on_next`` per element.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from itertools import islice, repeat
from operator import is_, length_hint
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import AlreadySubscribedError, NoneElementError
from rstreams.flow._drain import DrainLoop
from rstreams.flow._signals import (
    CHUNK,
    NextMany,
    next_many,
    report_broken,
    signal_subscribe,
    signal_terminal,
)
from rstreams.rules import check_subscriber

__all__ = ["IterableFlow", "Just", "Pull", "empty", "error", "from_iterable", "just", "puller", "range_"]

T = TypeVar("T")

_RANGE = type(iter(range(0)))
_EXACT: frozenset[type] = frozenset({_RANGE, type(iter([])), type(iter(())), type(iter(""))})
"""Iterators whose ``length_hint`` is exact and whose ``next`` runs no user code."""

SOURCE_NONE = "rule 2.13: the source produced None; None is never a stream element"

_END: Any = object()
"""What ``next(iterator, _END)`` returns at the iterator's end (a pull of one element)."""


class IterableFlow(Publisher[T]):
    """A cold Publisher over the iterator that ``factory()`` returns, one per subscription.

    ``known``: the elements, when they are fixed before anything subscribes (``just``,
    ``empty``): a Subscriber inside rstreams that can take them without a Subscription
    reads them with :func:`rstreams.flow._flow.known_elements` (reactor's scalar sources).
    """

    __slots__ = ("_factory", "known")

    def __init__(self, factory: Callable[[], Iterator[T]], known: tuple[T, ...] | None = None) -> None:
        self._factory = factory
        self.known = known

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        try:
            iterator = self._factory()
        except Exception as exc:
            _IterableSubscription(subscriber, None).start(exc)
        else:
            _IterableSubscription(subscriber, iterator).start(None)


class _IterableSubscription(DrainLoop, Subscription, Generic[T]):
    __slots__ = (
        "emitted",
        "error",
        "exact",
        "halt",
        "iterator",
        "many",
        "requested",
        "stopped",
        "subscriber",
    )

    def __init__(self, subscriber: Subscriber[T], iterator: Iterator[T] | None) -> None:
        self.subscriber: Subscriber[T] | None = subscriber
        self.iterator = iterator
        self.exact = type(iterator) in _EXACT
        self.many: NextMany | None = next_many(subscriber) if self.exact else None
        self.init_drain(held=True)  # nothing is emitted before on_subscribe has returned
        self.requested = 0  # in all; may pass UNBOUNDED (3.17): outstanding = requested - emitted
        self.emitted = 0  # in all; written only by the drain loop
        self.stopped = False  # cancelled, failed or completed: emit nothing more
        self.error: BaseException | None = None  # to deliver from the drain loop
        self.halt = False  # stopped or an error is pending: the loop must look up

    def start(self, error: BaseException | None) -> None:
        """Signal on_subscribe, then an immediate end if there is one, then release the loop."""
        subscriber = self.subscriber
        assert subscriber is not None
        if not signal_subscribe(subscriber, self):
            self._stop()
            return
        if error is not None or self._at_end():
            if not self.stopped:
                self._stop()
                signal_terminal(subscriber, error)
            return
        self.leave()  # requests made inside on_subscribe only added demand: run them now

    def request(self, n: int) -> None:
        if self.stopped:
            return  # rules 3.6 and 1.7: after cancel or a terminal signal, a no-op
        problem = demand.invalid(n) if type(n) is not int or n <= 0 else None  # its common case, inlined
        with self.lock:
            if problem is not None:
                if self.error is None:
                    self.error = problem
                    self.halt = True
            else:
                self.requested += n
            self.wip += 1
            if self.wip != 1:
                return
        self.drain_loop()

    def cancel(self) -> None:
        self._stop()

    def pull(self, n: int) -> tuple[list[T], bool | BaseException]:
        """Up to ``n`` elements taken at once by a consumer that pulls them (see :func:`puller`),
        and how the source stands after them: ``False`` while more may come, ``True`` when it
        completed with them (as soon as its end is known, rule 1.5, as :meth:`drain_pass`
        completes), or the error it failed with (the elements before the failure are
        returned, as :meth:`drain_pass` delivers them before it; ``None`` is a failure, 2.13).
        No demand, drain loop or signal: the consumer acts on what this returns (and, never
        requesting, reads no count of what was emitted: that is the drain loop's)."""
        iterator = self.iterator
        if self.halt or iterator is None:
            return [], False  # cancelled: the consumer stopped
        if n == 1:  # one at a time (an open stream's latency): no list searched, no islice made
            try:
                item = next(iterator, _END)
            except Exception as exc:
                self._stop()
                return [], exc
            if item is _END or item is None:
                self._stop()
                return [], True if item is _END else NoneElementError(SOURCE_NONE)
            if self.exact and length_hint(iterator) == 0:  # _at_end, inlined: once per pull
                self._stop()
                return [item], True
            return [item], False
        items: list[T] = []
        failure: BaseException | None = None
        try:
            items.extend(islice(iterator, n))  # (what came before a failure stays in items)
        except Exception as exc:
            failure = exc
        if type(iterator) is not _RANGE and any(map(is_, items, repeat(None))):
            del items[[item is None for item in items].index(True) :]  # the elements before it go on
            failure = NoneElementError(SOURCE_NONE)
        if failure is not None:
            self._stop()
            return items, failure
        if len(items) < n or (self.exact and length_hint(iterator) == 0):  # _at_end, inlined: once per pull
            self._stop()
            return items, True
        return items, False

    def _stop(self) -> None:
        self.stopped = True
        self.halt = True
        self.subscriber = None  # rule 3.13: drop the reference
        self.iterator = None

    def _at_end(self) -> bool:
        return self.exact and length_hint(self.iterator) == 0

    def drain_pass(self) -> bool:
        """Emit within the demand; the only place elements and terminals are sent.

        One ``on_next`` per element, unless the Subscriber takes lists
        (:meth:`_emit_batches`): the hot path for every Subscriber from outside, one pass
        over an iterator segment with nothing per element but the checks the rules require.
        """
        subscriber = self.subscriber
        iterator = self.iterator
        if self.stopped or subscriber is None or iterator is None:
            return True
        error = self.error
        if error is not None:
            self._stop()
            signal_terminal(subscriber, error)
            return True
        emitted = self.emitted
        want = self.requested - emitted
        if want >= demand.UNBOUNDED:
            want = -1  # effectively unbounded (3.17)
        elif want == 0:
            return False
        try:
            if self.many is not None:
                ended = self._emit_batches(subscriber, self.many, iterator, want)
            else:
                on_next = subscriber.on_next
                count = 0
                ended = False
                for item in iterator if want < 0 else islice(iterator, want):
                    if self.halt:
                        break  # cancelled, or an illegal request to report: see the top
                    if item is None:  # type: ignore[comparison-overlap, unused-ignore]
                        raise NoneElementError(SOURCE_NONE)
                    try:
                        on_next(item)
                    except Exception as exc:  # rule 2.13: consider the subscription cancelled
                        self._stop()
                        report_broken(exc, subscriber, "on_next")
                        return True
                    count += 1
                else:
                    # _at_end, inlined: once per pass
                    ended = want < 0 or count < want or (self.exact and length_hint(iterator) == 0)
                self.emitted = emitted + count
        except Exception as exc:  # the iterator failed, or produced None
            if not self.stopped:
                self._stop()
                signal_terminal(subscriber, exc)
            return True
        if ended and not self.stopped:
            self._stop()
            signal_terminal(subscriber, None)
        return self.stopped

    def _emit_batches(
        self, subscriber: Subscriber[T], many: NextMany, iterator: Iterator[T], want: int
    ) -> bool:
        """Lists of up to :data:`CHUNK` elements within the demand; true at the end.

        The demand is read again before each list: what a downstream ``filter`` asks for
        again, from inside ``many``, goes into the same pass.
        """
        check_none = type(iterator) is not _RANGE
        base = self.emitted
        count = 0  # by this pass
        while True:
            if want >= 0:
                want = self.requested - base  # only grows during a pass
                if want >= demand.UNBOUNDED:
                    want = -1
                elif count == want:
                    break
            size = CHUNK if want < 0 or want - count > CHUNK else want - count
            chunk = list(islice(iterator, size))
            pulled = len(chunk)
            failure = None
            if check_none and any(map(is_, chunk, repeat(None))):
                del chunk[[item is None for item in chunk].index(True) :]  # the elements before it go on
                failure = NoneElementError(SOURCE_NONE)
            if chunk:
                count += len(chunk)  # counted before: the receiver owns the list from here
                try:
                    many(chunk)
                except Exception as exc:  # rule 2.13: consider the subscription cancelled
                    self._stop()
                    report_broken(exc, subscriber, "on_next")
                    return False
            if failure is not None:
                self.emitted = base + count
                raise failure
            if pulled < size:
                self.emitted = base + count
                return True
            if self.halt:
                self.emitted = base + count
                return False
        self.emitted = base + count
        return self._at_end()


Pull = Callable[[int], tuple[list[Any], "bool | BaseException"]]
"""``pull(n)``: see :meth:`_IterableSubscription.pull`."""


def puller(subscription: Subscription) -> Pull | None:
    """The ``pull`` of a subscription to an iterable source, for a consumer inside rstreams that
    takes elements when it is ready for them instead of requesting them (reactor's synchronous
    fusion); ``None`` for any other Subscription.

    A consumer that uses it calls only ``pull`` (never ``request``) and ``cancel``, on one
    thread, once its ``on_subscribe`` has returned; it then gets no ``on_next``,
    ``on_complete`` or ``on_error`` for what ``pull`` returns, and acts on the result itself:
    the elements, then the completion or the error (the serving side of :mod:`rstreams.net`
    refills its streams this way)."""
    if type(subscription) is _IterableSubscription:
        return subscription.pull
    return None


class _OneShot(Iterator[T]):
    """The iterator behind ``from_iterable(an_iterator)``: subscribable once."""

    def __init__(self, iterator: Iterator[T]) -> None:
        self._iterator: Iterator[T] | None = iterator

    def take(self) -> Iterator[T]:
        iterator, self._iterator = self._iterator, None
        if iterator is None:
            raise AlreadySubscribedError(
                "from_iterable() was given an iterator, which can be consumed once; "
                "it was already subscribed. Pass a re-iterable (a list, a range) or "
                "build a new Flow per subscription"
            )
        return iterator

    def __next__(self) -> T:  # pragma: no cover - never iterated itself
        raise StopIteration


def from_iterable(iterable: Iterable[T]) -> Publisher[T]:
    """The publisher behind :func:`rstreams.from_iterable`."""
    if not isinstance(iterable, Iterable):
        raise TypeError(f"from_iterable() needs an iterable, got {iterable!r}")
    if isinstance(iterable, Iterator):
        once = _OneShot(iterable)
        return IterableFlow(once.take)
    return IterableFlow(lambda: iter(iterable))


def range_(start: int, stop: int | None = None, step: int = 1) -> Publisher[int]:
    """The publisher behind :func:`rstreams.range`."""
    numbers = range(start) if stop is None else range(start, stop, step)
    return IterableFlow(numbers.__iter__)


class Just(IterableFlow[T]):
    """``just(*items)``: the IterableFlow over ``items``, checked; ``None`` is refused here.

    It sets the fields itself rather than calling ``IterableFlow.__init__``: a source made
    per request (a request/response answer) pays one call to be built.
    """

    __slots__ = ()

    def __init__(self, items: tuple[T, ...]) -> None:
        if any(map(is_, items, repeat(None))):
            raise TypeError("just() got None; None is never a stream element (rule 2.13)")
        self._factory = items.__iter__
        self.known = items


def just(*items: T) -> Publisher[T]:
    """The publisher behind :func:`rstreams.just`."""
    return Just(items)


_NOTHING: tuple[Any, ...] = ()


def empty() -> Publisher[T]:
    """The publisher behind :func:`rstreams.empty`."""
    return IterableFlow(_NOTHING.__iter__, _NOTHING)


def error(exc: BaseException) -> Publisher[T]:
    """The publisher behind :func:`rstreams.error`."""
    if not isinstance(exc, BaseException):
        raise TypeError(f"error() needs an exception instance, got {exc!r}")

    return _ErrorFlow(exc)


class _ErrorFlow(Publisher[T]):
    """``error(exc)``: signals ``exc`` without raising it, so the caller's exception gets no
    traceback of ours (which would keep every subscriber's frames alive, rule 3.13)."""

    __slots__ = ("_exc",)

    def __init__(self, exc: BaseException) -> None:
        self._exc = exc

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        _IterableSubscription(subscriber, None).start(self._exc)
