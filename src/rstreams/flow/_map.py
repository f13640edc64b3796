"""``map``: each element ``x`` becomes ``fn(x)``.

One :class:`MapFlow` serves every Publisher; on the iterable sources the same function
runs fused into the source's iterator (:mod:`rstreams.flow._iterable`), with the same
errors: a raise from ``fn`` cancels upstream and goes downstream as ``on_error``, and a
``None`` result fails the stream with the ``NoneElementError`` of :func:`none_result` (2.13).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from operator import is_
from typing import TypeVar

from rstreams.api import Publisher, Subscriber
from rstreams.errors import NoneElementError
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_callable
from rstreams.flow._signals import NONE_ITEM

__all__ = ["MapFlow", "none_result"]

T = TypeVar("T")
R = TypeVar("R")


def none_result(item: object) -> NoneElementError:
    """The error for ``fn(item) is None``: None is never a stream element (rule 2.13)."""
    return NoneElementError(f"map: fn returned None for {item!r}; None is never a stream element (rule 2.13)")


class MapFlow(OperatorFlow[T, R]):
    """``source.map(fn)``; see :meth:`rstreams.Flow.map`."""

    __slots__ = ("fn",)

    def __init__(self, source: Publisher[T], fn: Callable[[T], R]) -> None:
        super().__init__(source)
        self.fn = check_callable("map", fn)

    def subscriber(self, downstream: Subscriber[R]) -> Subscriber[T]:
        return _MapSubscriber(downstream, self.fn)


class _MapSubscriber(OperatorSubscriber[T, R]):
    __slots__ = ("fn",)

    def __init__(self, downstream: Subscriber[R], fn: Callable[[T], R]) -> None:
        super().__init__(downstream)
        self.fn = fn

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        try:
            result = self.fn(item)
        except Exception as error:
            self.fail(error)
            return
        if result is None:
            self.fail(none_result(item))
            return
        self.downstream.on_next(result)

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal: ``fn`` over the batch at C speed (``list.extend`` keeps what was
        made before a raise), then the elements before any failure go on, then the failure."""
        if self.done:
            return
        results: list[R] = []
        failure: Exception | None = None
        try:
            results.extend(map(self.fn, items))
        except Exception as error:
            failure = error
        if any(map(is_, results, repeat(None))):
            index = [result is None for result in results].index(True)
            del results[index:]
            failure = none_result(items[index])
        if results:
            self.emit_many(results)
        if failure is not None:
            self.fail(failure)
