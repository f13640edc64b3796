"""``take(n)`` and ``skip(n)``: the first ``n`` elements, or all but the first ``n``.

``take`` never asks upstream for more than ``n`` elements in total, however much the
downstream requests (rule 1.1 seen from upstream: nothing is requested that will be
thrown away). After the ``n``-th element it cancels upstream and completes (rules 1.6,
3.5); ``take(0)`` does so right after ``on_subscribe``, without waiting for a request
(rule 1.5: ``on_complete`` needs no demand).

``skip`` adds the ``n`` elements it drops to the first request it passes upstream.

Both pass an illegal ``request(n)`` upstream unchanged, so the upstream signals the
rule-3.9 ``on_error`` in its own serial order (rule 1.3) instead of this operator racing
its upstream's ``on_next`` from the requesting thread.
"""

from __future__ import annotations

import threading
from typing import TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.flow._flow import Flow
from rstreams.flow._operator import OperatorSubscriber
from rstreams.rules import check_subscriber

__all__ = ["SkipFlow", "TakeFlow"]

T = TypeVar("T")


def _check_count(operator: str, n: object) -> int:
    if not isinstance(n, int) or isinstance(n, bool):
        raise TypeError(f"{operator}(n) needs an int, got {n!r}")
    if n < 0:
        raise ValueError(f"{operator}(n) needs n >= 0, got {n}; use {operator}(0) for no elements")
    return n


class TakeFlow(Flow[T]):
    """``source.take(n)``; see :meth:`rstreams.Flow.take`."""

    __slots__ = ("_n", "_source")

    def __init__(self, source: Publisher[T], n: int) -> None:
        self._n = _check_count("take", n)
        self._source = source

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        self._source.subscribe(_TakeSubscriber(check_subscriber(subscriber), self._n))


class _TakeSubscriber(OperatorSubscriber[T, T]):
    """``_remaining``: elements still to pass on; ``_budget``: elements not yet requested upstream."""

    __slots__ = ("_budget", "_lock", "_remaining")

    def __init__(self, downstream: Subscriber[T], n: int) -> None:
        super().__init__(downstream)
        self._remaining = n
        self._budget = n
        self._lock = threading.Lock()

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.upstream, subscription):
            return
        self.upstream = subscription
        if self._remaining == 0:  # take(0): nothing will ever be wanted
            self.done = True
            subscription.cancel()
            self.downstream.on_subscribe(self)
            self.downstream.on_complete()
            return
        self.downstream.on_subscribe(self)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self.done:
            return  # rule 3.12: a late element after cancel
        remaining = self._remaining - 1
        self._remaining = remaining
        self.downstream.on_next(item)
        if remaining == 0 and not self.done:  # the downstream may have cancelled inside on_next
            self.done = True
            if self.upstream is not None:
                self.upstream.cancel()
            self.downstream.on_complete()

    def request(self, n: int) -> None:
        if self.done:
            return  # rule 3.6: after cancel or completion, a no-op
        upstream = self.upstream
        if upstream is None:
            return
        if demand.invalid(n) is not None:
            upstream.request(n)  # upstream signals on_error(InvalidDemandError), rule 3.9
            return
        with self._lock:  # requests may come from any thread (rule 2.7 makes them serial)
            grant = n if n < self._budget else self._budget
            self._budget -= grant
        if grant > 0:
            upstream.request(grant)


class SkipFlow(Flow[T]):
    """``source.skip(n)``; see :meth:`rstreams.Flow.skip`."""

    __slots__ = ("_n", "_source")

    def __init__(self, source: Publisher[T], n: int) -> None:
        self._n = _check_count("skip", n)
        self._source = source

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        self._source.subscribe(_SkipSubscriber(check_subscriber(subscriber), self._n))


class _SkipSubscriber(OperatorSubscriber[T, T]):
    """``_remaining``: elements still to drop; ``_extra``: drops not yet requested upstream."""

    __slots__ = ("_extra", "_lock", "_remaining")

    def __init__(self, downstream: Subscriber[T], n: int) -> None:
        super().__init__(downstream)
        self._remaining = n
        self._extra = n
        self._lock = threading.Lock()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self.done:
            return
        if self._remaining:
            self._remaining -= 1  # signals are serial (rule 1.3): no lock needed
            return
        self.downstream.on_next(item)

    def request(self, n: int) -> None:
        if self._extra and demand.invalid(n) is None:
            with self._lock:  # only until the first legal request has carried the skipped count
                extra, self._extra = self._extra, 0
            n = demand.add(n, extra)
        super().request(n)
