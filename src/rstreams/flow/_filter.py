"""``filter``: keep the elements for which a predicate is true.

Dropping an element must not lose demand (rule 1.1 seen from downstream: every
``request(n)`` is eventually answered with ``n`` elements or a terminal signal), so the
operator asks upstream for one more element for each one it drops. When the
downstream's demand has reached :data:`rstreams.demand.UNBOUNDED` (rule 3.17), upstream
already sends everything and the extra ``request(1)`` calls are skipped.

:class:`rstreams.flow._iterable.IterableFlow` fuses ``filter`` into its iterator; this
operator serves every other Publisher.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber
from rstreams.flow._flow import Flow
from rstreams.flow._operator import OperatorSubscriber
from rstreams.rules import check_subscriber

__all__ = ["FilterFlow"]

T = TypeVar("T")


class FilterFlow(Flow[T]):
    """``source.filter(predicate)``; see :meth:`rstreams.Flow.filter`."""

    __slots__ = ("_predicate", "_source")

    def __init__(self, source: Publisher[T], predicate: Callable[[T], object]) -> None:
        if not callable(predicate):
            raise TypeError(f"filter(predicate) needs a callable, got {predicate!r}")
        self._source = source
        self._predicate = predicate

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        self._source.subscribe(_FilterSubscriber(check_subscriber(subscriber), self._predicate))


class _FilterSubscriber(OperatorSubscriber[T, T]):
    """Passes kept elements on; re-requests one upstream per dropped element.

    ``_requested`` is the downstream's cumulative demand, kept only to learn when it
    becomes unbounded. Requests are serial (rule 2.7), so it needs no lock; were a
    non-compliant caller to race, the worst outcome is a pointless ``request(1)``.
    """

    __slots__ = ("_predicate", "_requested", "_unbounded")

    def __init__(self, downstream: Subscriber[T], predicate: Callable[[T], object]) -> None:
        super().__init__(downstream)
        self._predicate = predicate
        self._requested = 0
        self._unbounded = False

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self.done:
            return  # rule 3.12: a late element after cancel
        try:
            drop = not self._predicate(item)
        except Exception as error:
            self.fail(error)
            return
        if not drop:
            self.downstream.on_next(item)
        elif not self._unbounded and self.upstream is not None:
            self.upstream.request(1)  # demand for the dropped element is not lost

    def request(self, n: int) -> None:
        if not self._unbounded and demand.invalid(n) is None:
            self._requested = demand.add(self._requested, n)
            if self._requested == demand.UNBOUNDED:
                self._unbounded = True
        # an illegal n goes upstream unchanged: upstream signals on_error (rule 3.9) serially
        super().request(n)
