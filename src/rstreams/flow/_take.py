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
from rstreams.api import Publisher, Subscriber
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_count
from rstreams.flow._signals import NONE_ITEM

__all__ = ["SkipFlow", "TakeFlow"]

T = TypeVar("T")


class TakeFlow(OperatorFlow[T, T]):
    """``source.take(n)``; see :meth:`rstreams.Flow.take`."""

    __slots__ = ("n",)

    def __init__(self, source: Publisher[T], n: int) -> None:
        super().__init__(source)
        self.n = check_count("take", n)

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _TakeSubscriber(downstream, self.n)


class _TakeSubscriber(OperatorSubscriber[T, T]):
    """``remaining``: elements still to pass on; ``budget``: elements not yet requested upstream."""

    __slots__ = ("budget", "lock", "remaining")

    def __init__(self, downstream: Subscriber[T], n: int) -> None:
        super().__init__(downstream)
        self.remaining = n
        self.budget = n
        self.lock = threading.Lock()

    def on_start(self) -> None:
        if self.remaining == 0 and not self.done:  # take(0): nothing will ever be wanted
            self.done = True
            if self.upstream is not None:
                self.upstream.cancel()
            self.downstream.on_complete()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return  # rule 3.12: a late element after cancel
        remaining = self.remaining - 1
        self.remaining = remaining
        self.downstream.on_next(item)
        if remaining == 0 and not self.done:  # the downstream may have cancelled inside on_next
            self.done = True
            if self.upstream is not None:
                self.upstream.cancel()
            self.downstream.on_complete()

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal: never more than ``remaining`` (upstream was asked for no more)."""
        if self.done:
            return
        if len(items) > self.remaining:
            del items[self.remaining :]
        self.remaining -= len(items)
        self.emit_many(items)
        if self.remaining == 0 and not self.done:
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
        with self.lock:  # requests may come from any thread (rule 2.7 makes them serial)
            grant = n if n < self.budget else self.budget
            self.budget -= grant
        if grant > 0:
            upstream.request(grant)


class SkipFlow(OperatorFlow[T, T]):
    """``source.skip(n)``; see :meth:`rstreams.Flow.skip`."""

    __slots__ = ("n",)

    def __init__(self, source: Publisher[T], n: int) -> None:
        super().__init__(source)
        self.n = check_count("skip", n)

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _SkipSubscriber(downstream, self.n)


class _SkipSubscriber(OperatorSubscriber[T, T]):
    """``remaining``: elements still to drop; ``extra``: drops not yet requested upstream."""

    __slots__ = ("extra", "lock", "remaining")

    def __init__(self, downstream: Subscriber[T], n: int) -> None:
        super().__init__(downstream)
        self.remaining = n
        self.extra = n
        self.lock = threading.Lock()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        if self.remaining:
            self.remaining -= 1  # signals are serial (rule 1.3): no lock needed
            return
        self.downstream.on_next(item)

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal: drop what is still to skip, pass the rest on whole."""
        if self.done:
            return
        if self.remaining:
            skipped = min(self.remaining, len(items))
            self.remaining -= skipped
            del items[:skipped]
        if items:
            self.emit_many(items)

    def request(self, n: int) -> None:
        if self.extra and demand.invalid(n) is None:
            with self.lock:  # only until the first legal request has carried the skipped count
                extra, self.extra = self.extra, 0
            n = demand.add(n, extra)
        super().request(n)
