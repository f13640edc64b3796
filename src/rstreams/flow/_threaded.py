"""``ThreadedSubscription``: a producer thread that makes elements only while there is demand.

For sources whose production blocks (reading a pipe line by line) or is paced by the clock
(simulated sensors): each subscription runs its own thread. The thread asks
:meth:`ThreadedSubscription.take` how many elements it may make; ``take`` blocks while the
subscriber has no outstanding demand (the producer waits, nothing is buffered) and returns
0 once the subscription is cancelled, which ends the thread. ``request`` and ``cancel`` come
from any thread; invalid demand cancels and signals ``on_error`` (rule 3.9). An exception
raised by :meth:`ThreadedSubscription.run` (a read that fails, say) ends the subscription
with ``on_error``, unless it was cancelled already: the subscriber is never left waiting.
"""

from __future__ import annotations

import abc
import threading
import time
from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.flow._signals import signal_subscribe, signal_terminal

__all__ = ["ThreadedSubscription"]

T = TypeVar("T")


class ThreadedSubscription(Subscription, Generic[T]):
    """Demand shared between a subscriber and the producer thread of :meth:`run`."""

    def __init__(self, subscriber: Subscriber[T]) -> None:
        self.subscriber = subscriber
        self.waited = 0.0
        """Seconds the producer spent blocked in :meth:`take` for lack of demand (backpressure)."""
        self._demand = 0
        self._cancelled = False
        self._cond = threading.Condition()

    def begin(self, name: str) -> None:
        """Signal ``on_subscribe``, then start the producer thread (``name``) running :meth:`run`."""
        if not signal_subscribe(self.subscriber, self):  # rule 2.13: consider it cancelled
            self.cancel()
            return
        threading.Thread(target=self._main, name=name, daemon=True).start()

    def _main(self) -> None:
        try:
            self.run()
        except Exception as error:
            with self._cond:
                cancelled, self._cancelled = self._cancelled, True
            if not cancelled:
                signal_terminal(self.subscriber, error)

    @abc.abstractmethod
    def run(self) -> None:
        """The producer: loop on :meth:`take`, emit that many elements, stop when it returns 0."""

    def take(self, limit: int) -> int:
        """Wait for demand; take up to ``limit`` of it. Returns 0 once cancelled (stop producing)."""
        with self._cond:
            if self._demand == 0 and not self._cancelled:
                started = time.monotonic()
                self._cond.wait_for(lambda: self._demand > 0 or self._cancelled)
                self.waited += time.monotonic() - started
            if self._cancelled:
                return 0
            taken = min(self._demand, limit)
            self._demand -= taken
            return taken

    def request(self, n: int) -> None:
        problem = demand.invalid(n)
        with self._cond:
            if problem is None:
                self._demand = demand.add(self._demand, n)
            else:
                self._cancelled = True
            self._cond.notify()
        if problem is not None:
            signal_terminal(self.subscriber, problem)  # rule 3.9

    def cancel(self) -> None:
        with self._cond:
            self._cancelled = True
            self._cond.notify()
