"""The shape every operator's inner subscriber shares: ``downstream``, ``upstream``, ``done``.

An operator sits between an upstream Publisher and a downstream Subscriber. Its inner
subscriber is both the upstream's Subscriber and the downstream's Subscription. Each
signal method follows the same steps in the same order:

* ``on_subscribe``: accept at most one subscription (2.5), then hand ``self`` downstream.
* ``on_next``: reject ``None`` (2.13), ignore after ``done`` (late signals after a cancel,
  3.12), transform, pass on. User code that raises ends the stream via :meth:`fail`.
* ``on_error`` / ``on_complete``: reject ``None`` (2.13), mark ``done``, pass on once.
* ``request`` / ``cancel``: pass upstream. Validation of ``n`` (3.9) is the upstream's job;
  its ``on_error`` flows back down through this operator.

Operators that change the demand (filter, take, buffer, ...) override ``request``.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from rstreams.api import Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.rules import check_error

__all__ = ["OperatorSubscriber"]

T = TypeVar("T")
R = TypeVar("R")


class OperatorSubscriber(Subscriber[T], Subscription, Generic[T, R]):
    """Base for an operator's inner subscriber; subclasses override ``on_next``."""

    __slots__ = ("done", "downstream", "upstream")

    def __init__(self, downstream: Subscriber[R]) -> None:
        self.downstream = downstream
        self.upstream: Subscription | None = None
        self.done = False

    # -- upstream -> this ---------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.upstream, subscription):
            return
        self.upstream = subscription
        self.downstream.on_subscribe(self)

    def on_next(self, item: T) -> None:  # pragma: no cover - every subclass overrides it
        raise NotImplementedError

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:
            return
        self.done = True
        self.downstream.on_error(error)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.downstream.on_complete()

    # -- downstream -> this -------------------------------------------------------

    def request(self, n: int) -> None:
        if self.upstream is not None:
            self.upstream.request(n)

    def cancel(self) -> None:
        self.done = True
        if self.upstream is not None:
            self.upstream.cancel()

    # -- helpers ------------------------------------------------------------------

    def fail(self, error: BaseException) -> None:
        """User code in this operator raised: cancel upstream, signal ``error`` downstream."""
        if self.done:
            return
        if self.upstream is not None:
            self.upstream.cancel()
        self.done = True
        self.downstream.on_error(error)
