"""``filter``: keep the elements for which a predicate is true.

Dropping an element must not lose demand (rule 1.1 seen from downstream: every
``request(n)`` is eventually answered with ``n`` elements or a terminal signal), so the
operator asks upstream for one more element for each one it drops. When the
downstream's demand has reached :data:`rstreams.demand.UNBOUNDED` (rule 3.17), upstream
already sends everything and the extra requests are skipped.

The iterable sources fuse ``filter`` into their iterator (:mod:`rstreams.flow._iterable`),
with the same errors; this operator serves every other Publisher.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_callable
from rstreams.flow._signals import NONE_ITEM

__all__ = ["FilterFlow", "FilterSubscriber"]

T = TypeVar("T")


class FilterFlow(OperatorFlow[T, T]):
    """``source.filter(predicate)``; see :meth:`rstreams.Flow.filter`."""

    __slots__ = ("predicate",)

    def __init__(self, source: Publisher[T], predicate: Callable[[T], object]) -> None:
        super().__init__(source)
        self.predicate = check_callable("filter", predicate, "predicate")

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return FilterSubscriber(downstream, self.predicate)


class FilterSubscriber(OperatorSubscriber[T, T]):
    """Passes kept elements on; re-requests one upstream per dropped element.

    ``requested`` is the downstream's cumulative demand, kept only to learn when it
    becomes unbounded. Requests are serial (rule 2.7), so it needs no lock; were a
    non-compliant caller to race, the worst outcome is a pointless ``request(1)``.
    """

    __slots__ = ("predicate", "requested", "unbounded")

    def __init__(self, downstream: Subscriber[T], predicate: Callable[[T], object]) -> None:
        super().__init__(downstream)
        self.predicate = predicate
        self.requested = 0
        self.unbounded = False

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return  # rule 3.12: a late element after cancel
        try:
            keep = self.predicate(item)
        except Exception as error:
            self.fail(error)
            return
        if keep:
            self.downstream.on_next(item)
        elif not self.unbounded and self.upstream is not None:
            self.upstream.request(1)  # demand for the dropped element is not lost

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal: the predicate over the batch at C speed (``list.extend`` keeps
        what was kept before a raise); one ``request`` for all the dropped elements."""
        if self.done:
            return
        kept: list[T] = []
        try:
            kept.extend(filter(self.predicate, items))
        except Exception as error:
            if kept:
                self.emit_many(kept)
            self.fail(error)
            return
        dropped = len(items) - len(kept)  # counted before: the downstream owns ``kept`` from here
        if kept:
            self.emit_many(kept)
        if dropped and not self.unbounded and self.upstream is not None:
            self.upstream.request(dropped)  # a no-op if cancelled meanwhile (rule 3.6)

    def request(self, n: int) -> None:
        if not self.unbounded and demand.invalid(n) is None:
            self.requested = demand.add(self.requested, n)
            if self.requested == demand.UNBOUNDED:
                self.unbounded = True
        # an illegal n goes upstream unchanged: upstream signals on_error (rule 3.9) serially
        super().request(n)
