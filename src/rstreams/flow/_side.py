"""The inner subscriber of an operator with a second Publisher beside its source.

``take_until``/``skip_until`` (:mod:`rstreams.flow._until`) and ``with_latest_from``
(:mod:`rstreams.flow._with_latest`) subscribe to ``other`` through a *side* subscriber when
the source's subscription arrives, before the downstream gets its own. Either side may end
the stream; :meth:`end` makes that one terminal signal downstream, cancelling the other side.
A terminal signal that arrives while the source's ``on_next`` runs (``busy``) is ``held``
and delivered by that ``on_next`` when it returns (rule 1.3: signals stay serial); one that
``other`` makes inside its ``subscribe`` waits for the downstream's ``on_subscribe`` (1.9).
"""

from __future__ import annotations

import abc
import threading
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.errors import report_unhandled
from rstreams.flow._operator import MISSING, OperatorSubscriber
from rstreams.flow._signals import signal_terminal
from rstreams.rules import check_error

__all__ = ["Side", "SideOperatorSubscriber"]

T = TypeVar("T")
R = TypeVar("R")


class Side(Subscriber[Any]):
    """The subscriber to ``other``: asks for ``WANTED`` elements, ends the stream with ``other``'s
    error, and ``stop()`` cancels its subscription (now or once it comes), once. ``stopped``:
    ``other`` no longer matters (stopped, failed, completed, or fired for take/skip_until)."""

    __slots__ = ("parent", "stopped", "subscription")

    WANTED = demand.UNBOUNDED
    NAME = "other"
    """The operator, in the report of an error ``other`` sends after it was cancelled."""

    def __init__(self, parent: SideOperatorSubscriber[Any, Any]) -> None:
        self.parent = parent
        self.subscription: Subscription | None = None
        self.stopped = False

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.subscription, subscription):
            return
        self.subscription = subscription
        if self.stopped or self.parent.done:
            subscription.cancel()
            return
        subscription.request(self.WANTED)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.stopped:
            report_unhandled(error, f"{self.NAME}: other's error after it was cancelled")
            return
        self.stopped = True
        self.parent.end(error, from_other=True)

    def stop(self) -> None:
        """No longer needed: cancel ``other``, once."""
        if self.stopped:
            return
        self.stopped = True
        if self.subscription is not None:
            self.subscription.cancel()


class SideOperatorSubscriber(OperatorSubscriber[T, R], Generic[T, R]):
    """``busy``: the source's ``on_next`` runs; ``held``: a terminal signal waiting for it."""

    __slots__ = ("busy", "held", "lock", "other", "side")

    def __init__(self, downstream: Subscriber[R], other: Publisher[Any]) -> None:
        super().__init__(downstream)
        self.other = other
        self.lock = threading.Lock()
        self.busy = False
        self.held: Any = MISSING
        self.side = self.make_side()

    @abc.abstractmethod
    def make_side(self) -> Side:
        """The subscriber to ``other`` (built once, in ``__init__``)."""

    def on_subscribe(self, subscription: Subscription) -> None:
        """``other`` is subscribed first (as reactor's ``skipUntil``/``withLatestFrom`` do), so
        what a synchronous ``other`` signals is known before the source's first element; a
        terminal signal it makes meanwhile is ``held`` until the downstream has its
        subscription (rule 1.9)."""
        if not accept_subscription(self.upstream, subscription):
            return
        self.upstream = subscription
        self.busy = True
        try:
            self.other.subscribe(self.side)
        finally:
            with self.lock:
                self.busy = False
                held, self.held = self.held, MISSING
        self.downstream.on_subscribe(self)
        if held is not MISSING:  # other ended the stream before it began
            signal_terminal(self.downstream, held)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        self.end(error, from_other=False)

    def on_complete(self) -> None:
        self.end(None, from_other=False)

    def request(self, n: int) -> None:
        if self.upstream is not None and not self.done:
            self.upstream.request(n)  # an illegal n too: the upstream signals rule 3.9

    def cancel(self) -> None:
        with self.lock:
            if self.done:
                return
            self.done = True
        self.side.stop()
        if self.upstream is not None:
            self.upstream.cancel()

    def end(self, error: BaseException | None, *, from_other: bool) -> None:
        """One terminal signal downstream, whoever caused it; the other side is cancelled."""
        with self.lock:
            if self.done:
                return
            self.done = True
            hold = self.busy
            if hold:
                self.held = error
        if from_other:
            if self.upstream is not None:
                self.upstream.cancel()
        else:
            self.side.stop()
        if not hold:
            signal_terminal(self.downstream, error)
