"""``for x in flow.iter_blocking()``: a Publisher as a plain iterator, for threads.

Theory of operation. :func:`iter_blocking` returns a generator; its body subscribes on
the first ``next()`` with a :class:`_Receiver`, which never refers back to the
generator. Closing the generator (``close()``, ``break`` dropping the last reference,
an exception in the loop body) runs its ``finally``, which cancels the subscription
(rule 3.5). The publisher may keep the receiver alive; nothing keeps the generator.

* Demand: ``window`` is requested in ``on_subscribe`` and ``ceil(window / 2)`` again
  each time that many elements were taken by the consumer, so buffered plus
  outstanding never exceeds ``window``.
* ``on_next`` appends to a deque (thread-safe) and takes the condition's lock only when
  the consumer is parked (``waiting``); the consumer sets ``waiting`` under that lock
  *before* it looks at the buffer again, so a wake-up is never lost, and an element
  costs no lock while the consumer keeps up.
* After ``timeout`` seconds without an element the generator raises
  :class:`TimeoutError` and the subscription is cancelled.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.flow._sinks import check_publisher, check_window
from rstreams.flow._timeops import StreamTimeoutError
from rstreams.rules import check_error

__all__ = ["iter_blocking"]

T = TypeVar("T")


class _Complete:
    """Marks normal completion in ``_Receiver.terminal``."""


_COMPLETE = _Complete()


class _Receiver(Subscriber[T], Generic[T]):
    __slots__ = ("buffer", "cancelled", "cond", "terminal", "upstream", "waiting", "window")

    def __init__(self, window: int) -> None:
        self.window = window
        self.buffer: deque[T] = deque()
        self.terminal: BaseException | _Complete | None = None
        self.upstream: Subscription | None = None
        self.cancelled = False
        self.waiting = False
        self.cond = threading.Condition(threading.Lock())

    def on_subscribe(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self.upstream, subscription):
            return  # rule 2.5
        self.upstream = subscription
        if self.cancelled:
            subscription.cancel()
            return
        subscription.request(self.window)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal; None is never a stream element")
        if self.cancelled:
            return  # rule 3.12
        self.buffer.append(item)
        if self.waiting:
            with self.cond:
                self.cond.notify()

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal of :mod:`rstreams.flow._signals`: ``on_next`` for each, in one step."""
        if self.cancelled:
            return
        self.buffer.extend(items)
        if self.waiting:
            with self.cond:
                self.cond.notify()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        with self.cond:
            if self.terminal is None:
                self.terminal = error
            self.cond.notify()

    def on_complete(self) -> None:
        with self.cond:
            if self.terminal is None:
                self.terminal = _COMPLETE
            self.cond.notify()

    def wait(self, timeout: float | None) -> None:
        """Block until an element or a terminal signal is there; ``StreamTimeoutError`` otherwise."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.cond:
            self.waiting = True
            try:
                while not self.buffer and self.terminal is None:
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        raise StreamTimeoutError(
                            f"iter_blocking: no element or terminal signal within timeout={timeout}s; "
                            "the subscription was cancelled",
                            timeout or 0.0,  # (not None: there is a deadline)
                        )
                    self.cond.wait(remaining)
            finally:
                self.waiting = False

    def request(self, n: int) -> None:
        upstream = self.upstream
        if upstream is not None and not self.cancelled and self.terminal is None:
            upstream.request(n)

    def cancel(self) -> None:
        self.cancelled = True
        self.buffer.clear()
        upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.cancel()


def _iterate(publisher: Publisher[T], window: int, timeout: float | None) -> Iterator[T]:
    receiver: _Receiver[T] = _Receiver(window)
    half = (window + 1) // 2
    taken = 0
    buffer = receiver.buffer
    publisher.subscribe(receiver)
    try:
        while True:
            if not buffer:
                terminal = receiver.terminal  # read before the buffer: appends precede it
                if not buffer:
                    if terminal is None:
                        receiver.wait(timeout)
                        continue
                    receiver.upstream = None  # ended: nothing left to cancel
                    if terminal is _COMPLETE:
                        return
                    assert isinstance(terminal, BaseException)
                    raise terminal
            yield buffer.popleft()
            taken += 1
            if taken == half:
                taken = 0
                receiver.request(half)
    finally:
        receiver.cancel()  # a no-op after a terminal signal (rule 3.7); else rule 3.5


def iter_blocking(publisher: Publisher[T], *, window: int = 256, timeout: float | None = None) -> Iterator[T]:
    """``publisher`` as a blocking iterator keeping at most ``window`` elements outstanding.

    Subscribes on the first ``next()``. Each ``next()`` blocks until an element arrives;
    after ``timeout`` seconds without one it raises :class:`~rstreams.StreamTimeoutError` (a
    ``TimeoutError``) and cancels.
    The stream's error is raised from ``next()``. Closing the iterator, or leaving a
    ``for`` loop over it early, cancels the subscription (rule 3.5).

    Do not iterate on an event loop's thread when the source needs that loop to run.
    """
    check_publisher(publisher, "iter_blocking")
    check_window(window, "iter_blocking")
    if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, int | float)):
        raise TypeError(f"iter_blocking(timeout=...) needs a number of seconds > 0 or None, got {timeout!r}")
    if timeout is not None and not timeout > 0:
        raise ValueError(f"iter_blocking(timeout=...) needs a number of seconds > 0 or None, got {timeout!r}")
    return _iterate(publisher, window, timeout)
