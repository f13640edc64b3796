"""``buffer(size)``: group elements into lists of ``size``; the last list may be shorter.

Demand is counted in lists: ``request(n)`` downstream becomes ``request(n * size)``
upstream, saturated at :data:`rstreams.demand.UNBOUNDED` (rule 3.17). The shorter last
list is sent on completion; there is always demand left for it, because an upstream
that completes after ``m`` elements with ``m % size != 0`` has delivered fewer than it
was asked for. On error the partial list is dropped and the error passed on (rule 4.2).
"""

from __future__ import annotations

from typing import TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber
from rstreams.flow._signals import NONE_ITEM
from rstreams.rules import check_error

__all__ = ["BufferFlow"]

T = TypeVar("T")


class BufferFlow(OperatorFlow[T, list[T]]):
    """``source.buffer(size)``; see :meth:`rstreams.Flow.buffer`."""

    __slots__ = ("size",)

    def __init__(self, source: Publisher[T], size: int) -> None:
        super().__init__(source)
        self.size = _check_size(size)

    def subscriber(self, downstream: Subscriber[list[T]]) -> Subscriber[T]:
        return _BufferSubscriber(downstream, self.size)


def _check_size(size: object) -> int:
    if not isinstance(size, int) or isinstance(size, bool):
        raise TypeError(f"buffer(size) needs an int, got {size!r}")
    if size < 1:
        raise ValueError(f"buffer(size) needs size >= 1, got {size}")
    return size


class _BufferSubscriber(OperatorSubscriber[T, list[T]]):
    __slots__ = ("buffer", "size")

    def __init__(self, downstream: Subscriber[list[T]], size: int) -> None:
        super().__init__(downstream)
        self.size = size
        self.buffer: list[T] = []

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        buffer = self.buffer
        buffer.append(item)
        if len(buffer) == self.size:
            self.buffer = []
            self.downstream.on_next(buffer)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        self.buffer = []
        super().on_error(error)

    def on_complete(self) -> None:
        buffer, self.buffer = self.buffer, []
        if buffer and not self.done:
            self.downstream.on_next(buffer)
        super().on_complete()  # a no-op if the downstream cancelled inside on_next (rule 3.6)

    def request(self, n: int) -> None:
        if demand.invalid(n) is None:
            n = demand.add(0, n * self.size)
        # an illegal n goes upstream unchanged: upstream signals on_error (rule 3.9) serially
        super().request(n)
