"""``map``: each element ``x`` becomes ``fn(x)``."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rstreams.api import Publisher, Subscriber
from rstreams.flow._flow import Flow
from rstreams.flow._operator import OperatorSubscriber
from rstreams.rules import check_subscriber

__all__ = ["MapFlow"]

T = TypeVar("T")
R = TypeVar("R")


class MapFlow(Flow[R]):
    """``source.map(fn)``; see :meth:`rstreams.Flow.map`."""

    __slots__ = ("_fn", "_source")

    def __init__(self, source: Publisher[T], fn: Callable[[T], R]) -> None:
        if not callable(fn):
            raise TypeError(f"map(fn) needs a callable, got {fn!r}")
        self._source = source
        self._fn = fn

    def subscribe(self, subscriber: Subscriber[R]) -> None:
        self._source.subscribe(_MapSubscriber(check_subscriber(subscriber), self._fn))


class _MapSubscriber(OperatorSubscriber[T, R]):
    __slots__ = ("_fn",)

    def __init__(self, downstream: Subscriber[R], fn: Callable[[T], R]) -> None:
        super().__init__(downstream)
        self._fn = fn

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self.done:
            return
        try:
            result = self._fn(item)
        except Exception as error:
            self.fail(error)
            return
        if result is None:
            self.fail(
                TypeError(f"map: fn returned None for {item!r}; None is never a stream element (rule 2.13)")
            )
            return
        self.downstream.on_next(result)
