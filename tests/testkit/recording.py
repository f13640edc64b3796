"""Deterministic test tools shared by the suite: no sleeps, every wait bounded by its own time
(:mod:`testkit.patience`), not by the machine's load."""

from __future__ import annotations

import threading
from typing import Any, Generic, TypeVar

from rstreams.api import Subscriber, Subscription
from testkit.patience import Patience

T = TypeVar("T")

WAIT = 10.0
"""Upper bound for any wait in a test, in seconds of this process's own time (wall time less the
time its threads waited for a CPU; :class:`~testkit.patience.Patience`); a correct implementation
answers far sooner."""


class RecordingSubscriber(Subscriber[T], Generic[T]):
    """Starts with zero demand (or ``initial``), requests on command, records every signal.

    Thread-safe: signals may come from any thread; ``await_*`` methods block on a
    condition, never poll, and fail after :data:`WAIT` seconds of this process's own time.
    """

    def __init__(self, initial: int = 0) -> None:
        self.initial = initial
        self.subscription: Subscription | None = None
        self.items: list[T] = []
        self.error: BaseException | None = None
        self.completed = False
        self.signals: list[str] = []
        self.subscriptions = 0
        self._cond = threading.Condition()

    # -- Subscriber -------------------------------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        with self._cond:
            self.subscriptions += 1
            self.subscription = subscription
            self.signals.append("on_subscribe")
            self._cond.notify_all()
        if self.initial:
            subscription.request(self.initial)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13")
        with self._cond:
            self.items.append(item)
            self.signals.append("on_next")
            self._cond.notify_all()

    def on_error(self, error: BaseException) -> None:
        with self._cond:
            self.error = error
            self.signals.append("on_error")
            self._cond.notify_all()

    def on_complete(self) -> None:
        with self._cond:
            self.completed = True
            self.signals.append("on_complete")
            self._cond.notify_all()

    # -- driving ----------------------------------------------------------------
    def request(self, n: int) -> None:
        assert self.subscription is not None, "no on_subscribe yet"
        self.subscription.request(n)

    def cancel(self) -> None:
        assert self.subscription is not None, "no on_subscribe yet"
        self.subscription.cancel()

    @property
    def done(self) -> bool:
        return self.completed or self.error is not None

    def _await(self, predicate: Any, what: str, timeout: float = WAIT) -> None:
        patience = Patience(timeout)
        with self._cond:
            if not patience.until(lambda seconds: self._cond.wait_for(predicate, seconds)):
                raise AssertionError(
                    f"timed out after {patience.said()} waiting for {what}; signals={self.signals}"
                )

    def await_items(self, n: int, timeout: float = WAIT) -> list[T]:
        self._await(lambda: len(self.items) >= n or self.done, f"{n} items", timeout)
        return list(self.items)

    def await_done(self, timeout: float = WAIT) -> None:
        self._await(lambda: self.done, "a terminal signal", timeout)

    def await_subscribed(self, timeout: float = WAIT) -> None:
        self._await(lambda: self.subscription is not None, "on_subscribe", timeout)
