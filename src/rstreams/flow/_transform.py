"""Transform and accumulate: ``scan``, ``start_with``, ``distinct``, ``distinct_until_changed``,
``take_while``, ``skip_while``.

Each is the operator shape of :mod:`rstreams.flow._operator`; how each treats demand:

* ``scan(fn, initial)``: one accumulator out per element in, so ``request(n)`` passes
  through. ``initial`` itself is not emitted (``scan`` then ``last`` equals ``reduce`` on
  a non-empty stream), and it is never changed in place.
* ``distinct(key=)``, ``distinct_until_changed(key=)``, ``skip_while(predicate)``: filters
  whose predicate has per-subscription state; each dropped element is asked for again
  upstream (see :mod:`rstreams.flow._filter`). ``distinct`` holds every key it has seen
  (memory grows with the number of distinct keys; bound it upstream, e.g. with ``take``).
* ``take_while(predicate)``: passes elements while the predicate holds; the first that
  fails it is dropped, the upstream is cancelled and the stream completes (rule 1.6).
* ``start_with(*items)``: the items, then the source, which is subscribed only once the
  items are delivered (a ``concat`` of the two, on ``concat_map``'s drain loop).

A function of the user's that raises cancels upstream and ends the stream with its
error (rule 2.13).
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

from rstreams.api import Publisher, Subscriber
from rstreams.errors import NoneElementError
from rstreams.flow._concat_map import ConcatMapFlow
from rstreams.flow._filter import FilterSubscriber
from rstreams.flow._iterable import just
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_callable
from rstreams.flow._signals import NONE_ITEM

__all__ = [
    "DistinctFlow",
    "DistinctUntilChangedFlow",
    "ScanFlow",
    "SkipWhileFlow",
    "TakeWhileFlow",
    "start_with",
]

T = TypeVar("T")
A = TypeVar("A")

_UNSET: Any = object()
"""No previous key yet (``distinct_until_changed``)."""


def _identity(item: T) -> T:
    return item


class ScanFlow(OperatorFlow[T, A]):
    """``source.scan(fn, initial)``; see :meth:`rstreams.Flow.scan`."""

    __slots__ = ("fn", "initial")

    def __init__(self, source: Publisher[T], fn: Callable[[A, T], A], initial: A) -> None:
        super().__init__(source)
        self.fn = check_callable("scan", fn)
        if initial is None:
            raise TypeError("scan(fn, initial) needs an initial value; None is never a stream element")
        self.initial = initial

    def subscriber(self, downstream: Subscriber[A]) -> Subscriber[T]:
        return _ScanSubscriber(downstream, self.fn, self.initial)


class _ScanSubscriber(OperatorSubscriber[T, A]):
    __slots__ = ("acc", "fn")

    def __init__(self, downstream: Subscriber[A], fn: Callable[[A, T], A], initial: A) -> None:
        super().__init__(downstream)
        self.fn = fn
        self.acc = initial

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        try:
            acc = self.fn(self.acc, item)
        except Exception as error:
            self.fail(error)
            return
        if acc is None:
            self.fail(_none_result(item))
            return
        self.acc = acc
        self.downstream.on_next(acc)

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal: one accumulator per element; those before a failure go on first."""
        if self.done:
            return
        fn = self.fn
        acc = self.acc
        results: list[A] = []
        append = results.append
        try:
            for item in items:
                acc = fn(acc, item)
                if acc is None:
                    raise _none_result(item)
                append(acc)
        except Exception as error:
            if results:
                self.emit_many(results)
            self.fail(error)
            return
        self.acc = acc
        self.emit_many(results)


def _none_result(item: object) -> NoneElementError:
    return NoneElementError(f"scan: fn returned None for {item!r}; None is never a stream element")


class _StatefulFilterFlow(OperatorFlow[T, T]):
    """A filter whose predicate is made per subscription by :meth:`predicate`."""

    __slots__ = ()

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return FilterSubscriber(downstream, self.predicate())

    @abc.abstractmethod
    def predicate(self) -> Callable[[T], bool]:
        """A fresh predicate, with its own state, for one subscription."""


class DistinctFlow(_StatefulFilterFlow[T]):
    """``source.distinct(key=)``; see :meth:`rstreams.Flow.distinct`."""

    __slots__ = ("key",)

    def __init__(self, source: Publisher[T], key: Callable[[T], Hashable] | None) -> None:
        super().__init__(source)
        self.key = _identity if key is None else check_callable("distinct", key, "key=")

    def predicate(self) -> Callable[[T], bool]:
        seen: set[Hashable] = set()
        key = self.key

        def first_time(item: T) -> bool:
            k = key(item)
            if k in seen:
                return False
            seen.add(k)
            return True

        return first_time


class DistinctUntilChangedFlow(_StatefulFilterFlow[T]):
    """``source.distinct_until_changed(key=)``; see :meth:`rstreams.Flow.distinct_until_changed`."""

    __slots__ = ("key",)

    def __init__(self, source: Publisher[T], key: Callable[[T], object] | None) -> None:
        super().__init__(source)
        self.key = _identity if key is None else check_callable("distinct_until_changed", key, "key=")

    def predicate(self) -> Callable[[T], bool]:
        key = self.key
        previous: list[object] = [_UNSET]

        def changed(item: T) -> bool:
            k = key(item)
            if previous[0] is not _UNSET and k == previous[0]:
                return False
            previous[0] = k
            return True

        return changed


class SkipWhileFlow(_StatefulFilterFlow[T]):
    """``source.skip_while(predicate)``; see :meth:`rstreams.Flow.skip_while`."""

    __slots__ = ("test",)

    def __init__(self, source: Publisher[T], predicate: Callable[[T], object]) -> None:
        super().__init__(source)
        self.test = check_callable("skip_while", predicate, "predicate")

    def predicate(self) -> Callable[[T], bool]:
        test = self.test
        skipping = [True]

        def past(item: T) -> bool:
            if skipping[0] and test(item):
                return False
            skipping[0] = False
            return True

        return past


class TakeWhileFlow(OperatorFlow[T, T]):
    """``source.take_while(predicate)``; see :meth:`rstreams.Flow.take_while`."""

    __slots__ = ("test",)

    def __init__(self, source: Publisher[T], predicate: Callable[[T], object]) -> None:
        super().__init__(source)
        self.test = check_callable("take_while", predicate, "predicate")

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _TakeWhileSubscriber(downstream, self.test)


class _TakeWhileSubscriber(OperatorSubscriber[T, T]):
    __slots__ = ("test",)

    def __init__(self, downstream: Subscriber[T], test: Callable[[T], object]) -> None:
        super().__init__(downstream)
        self.test = test

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        try:
            keep = self.test(item)
        except Exception as error:
            self.fail(error)
            return
        if keep:
            self.downstream.on_next(item)
            return
        self.done = True  # the first element that fails the test ends the stream (1.6)
        if self.upstream is not None:
            self.upstream.cancel()
        self.downstream.on_complete()


def start_with(source: Publisher[T], items: tuple[T, ...]) -> OperatorFlow[Publisher[T], T]:
    """``items``, then ``source`` (subscribed once the items are delivered)."""
    if any(item is None for item in items):
        raise TypeError("start_with(*items) got None; None is never a stream element (rule 2.13)")
    prefix: Publisher[T] = just(*items)
    return ConcatMapFlow(just(prefix, source), _identity, prefetch=1)
