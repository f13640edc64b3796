"""``observe_on``: an asynchronous boundary onto an asyncio loop or an Executor.

``ObserveOnFlow(source, target)`` delivers ``on_next``, ``on_error`` and ``on_complete``
on ``target``: an :class:`asyncio.AbstractEventLoop` (through ``call_soon_threadsafe``,
or ``call_soon`` when already on that loop's thread) or a
:class:`concurrent.futures.Executor` (through ``submit``). ``on_subscribe`` is signalled
on the thread that subscribed, before any other signal (rule 1.9).

Theory of operation: the drain loop of :mod:`rstreams.flow._drain` (rules 1.3 and 3.3),
run on the target instead of the signalling thread:

* Every event (an element, a terminal signal, a ``request``, a bad ``request``) is
  recorded, then counted under the lock. Only the event that finds the loop idle
  schedules it on the target; the loop delivers everything available within demand and
  repeats while events were missed. So one drain runs at a time, signals never overlap
  (1.3), and a burst costs one scheduled callback, not one per element. A ``request``
  made inside ``on_next`` only adds demand: the running drain picks it up (3.3).
* Upstream demand is a window: ``buffer_size`` is requested first, then ``limit`` =
  ``buffer_size - buffer_size // 4`` more each time three quarters of the window has
  been delivered downstream. Received-but-undelivered elements therefore never exceed
  ``buffer_size``, whatever the downstream requests; an upstream that sends more than
  it was asked for breaks rule 1.1 and the stream fails with
  :class:`~rstreams.errors.OverflowStrategyError`.
* Downstream demand is tracked here, separately: summed with saturation (3.17),
  validated (3.9: an illegal ``n`` cancels upstream and is signalled as ``on_error``
  by the drain, in order, never raised).
* Errors are *eager* by default: an upstream ``on_error`` is delivered as soon as the
  drain runs, and elements still queued are dropped (an error needs no demand, 1.4).
  With ``delay_error=True`` the queued elements are delivered first, as demand allows.
  ``on_complete`` always waits until the queue is empty, then needs no demand (1.5).
* ``cancel`` cancels upstream, clears the queue, and drops the Subscriber and the
  Subscription (3.13). After cancel or a terminal signal the loop is never released,
  so nothing is scheduled again.

If the loop is closed or the executor shut down, the drain cannot be scheduled: the
upstream is cancelled and the downstream gets ``on_error(LoopClosedError)`` on the
calling thread, rather than waiting forever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import LoopClosedError, OverflowStrategyError
from rstreams.flow._async_source import on_loop_thread
from rstreams.flow._drain import DrainLoop
from rstreams.flow._operator import OperatorFlow
from rstreams.flow._signals import NONE_ITEM, report_broken, signal_subscribe, signal_terminal
from rstreams.rules import check_error

__all__ = ["ObserveOnFlow"]

T = TypeVar("T")

Schedule = Callable[[Callable[[], None]], None]


def _scheduler(target: asyncio.AbstractEventLoop | concurrent.futures.Executor) -> Schedule:
    """A function that runs a callback on ``target``; raises TypeError for anything else."""
    if isinstance(target, asyncio.AbstractEventLoop):
        loop = target

        def on_loop(callback: Callable[[], None]) -> None:
            if on_loop_thread(loop):  # already on the loop's thread: no wake-up needed
                loop.call_soon(callback)
            else:
                loop.call_soon_threadsafe(callback)

        return on_loop
    if isinstance(target, concurrent.futures.Executor):
        submit = target.submit

        def on_executor(callback: Callable[[], None]) -> None:
            submit(callback)

        return on_executor
    raise TypeError(
        f"observe_on(target) needs an asyncio event loop or a concurrent.futures.Executor, got {target!r}"
    )


class ObserveOnFlow(OperatorFlow[T, T]):
    """``source.observe_on(target)``; see :meth:`rstreams.Flow.observe_on` and the module docs."""

    __slots__ = ("buffer_size", "delay_error", "schedule")

    def __init__(
        self,
        source: Publisher[T],
        target: asyncio.AbstractEventLoop | concurrent.futures.Executor,
        *,
        buffer_size: int = 256,
        delay_error: bool = False,
        operator: str = "observe_on",
    ) -> None:
        super().__init__(source)
        if type(buffer_size) is not int:
            raise TypeError(f"{operator}(buffer_size=...) needs an int, got {buffer_size!r}")
        if buffer_size <= 0:
            raise ValueError(f"{operator}(buffer_size=...) needs an int > 0, got {buffer_size!r}")
        self.schedule = _scheduler(target)
        self.buffer_size = buffer_size
        self.delay_error = delay_error

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _ObserveOnSubscriber(downstream, self.schedule, self.buffer_size, self.delay_error)


class _ObserveOnSubscriber(DrainLoop, Subscriber[T], Subscription, Generic[T]):
    """``done``: the upstream terminated (or broke rule 1.1); ``cancelled``: every method is a no-op."""

    __slots__ = (
        "bad_request",
        "buffer_size",
        "cancelled",
        "consumed",
        "delay_error",
        "done",
        "downstream",
        "emitted_pass",
        "error",
        "halt",
        "limit",
        "queue",
        "requested",
        "schedule",
        "upstream",
    )

    def __init__(self, downstream: Subscriber[T], schedule: Schedule, buffer_size: int, delay: bool) -> None:
        self.downstream: Subscriber[T] | None = downstream
        self.upstream: Subscription | None = None
        self.done = False
        self.schedule = schedule
        self.buffer_size = buffer_size
        self.limit = buffer_size - buffer_size // 4  # replenish at three quarters delivered
        self.consumed = 0  # delivered since the last replenish; only the drain touches it
        self.delay_error = delay
        self.queue: deque[T] = deque()
        self.init_drain(held=True)  # nothing is delivered before on_subscribe has returned
        self.requested = 0  # downstream demand not yet met
        self.emitted_pass = 0  # delivered by the current pass; settled under the lock
        self.error: BaseException | None = None
        self.bad_request: BaseException | None = None  # rule 3.9, for the drain to deliver
        self.cancelled = False  # cancelled or terminal delivered
        self.halt = False  # cancelled or a bad request waits: the drain must stop delivering

    # -- upstream -> this -----------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self.upstream, subscription):
            return  # rule 2.5: a second subscription was cancelled
        if self.cancelled:
            subscription.cancel()
            return
        self.upstream = subscription
        downstream = self.downstream
        assert downstream is not None
        if not signal_subscribe(downstream, self):
            self.cancel()
            return
        self.on_start(subscription)

    def on_start(self, subscription: Subscription) -> None:
        """After on_subscribe returned: open the upstream window, release the initial hold."""
        if self.cancelled:
            return  # cancelled inside on_subscribe: keep the loop held, schedule nothing
        subscription.request(self.buffer_size)
        self.leave()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done or self.cancelled:
            return  # late signal after cancel (3.12) or after a terminal
        queue = self.queue
        queue.append(item)
        if len(queue) > self.buffer_size:
            self._overflow()
            return
        lock = self.lock
        lock.acquire()  # the hot path: acquire/release cost half of a with-block here
        wip = self.wip = self.wip + 1
        lock.release()
        if wip == 1:
            self.start_drain()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done or self.cancelled:
            return
        self.error = error
        self.done = True
        self.drain()

    def on_complete(self) -> None:
        if self.done or self.cancelled:
            return
        self.done = True
        self.drain()

    # -- downstream -> this ---------------------------------------------------------

    def request(self, n: int) -> None:
        if self.cancelled:
            return  # rules 3.6 and 1.7: no-op after cancel or a terminal signal
        problem = demand.invalid(n)
        with self.lock:
            if problem is None:
                self.requested = demand.add(self.requested, n)
            elif self.bad_request is None:
                self.bad_request = problem
                self.halt = True
            self.wip += 1
            if self.wip != 1:
                return
        self.start_drain()

    def cancel(self) -> None:
        if self.cancelled:
            return
        self._stop()
        with self.lock:  # if no drain runs, empty the queue here and never release the loop
            self.wip += 1
            if self.wip != 1:
                return  # the running drain sees ``cancelled`` and clears the queue
        self.queue.clear()

    # -- the drain --------------------------------------------------------------------

    def start_drain(self) -> None:
        """Run the loop on the target; if it cannot be scheduled, end the stream here."""
        try:
            self.schedule(self.drain_loop)
        except Exception as exc:  # the loop is closed or the executor shut down
            downstream = self.downstream
            self._stop()
            self.queue.clear()
            if downstream is not None:
                error = LoopClosedError(f"observe_on: could not schedule delivery on the target: {exc}")
                error.__cause__ = exc
                signal_terminal(downstream, error)

    def _stop(self) -> None:
        """Cancelled or finished: cancel upstream, drop both references (rule 3.13)."""
        self.cancelled = True
        self.halt = True
        upstream = self.upstream
        self.downstream = None
        self.upstream = None
        if upstream is not None and not self.done:
            upstream.cancel()

    def _overflow(self) -> None:
        self.error = OverflowStrategyError(
            f"rule 1.1: observe_on's upstream sent more elements than the {self.buffer_size} requested"
        )
        self.done = True
        self.delay_error = False
        if self.upstream is not None:
            self.upstream.cancel()
        self.drain()

    def drain_pass(self) -> bool:
        """Deliver everything available within demand, then the terminal signal if it is due.

        Runs on the target, never twice at once. The inner loop is the hot path and makes
        no call per element besides ``on_next`` and ``popleft``.
        """
        queue = self.queue
        downstream = self.downstream
        if self.cancelled or downstream is None:
            queue.clear()
            return True
        bad = self.bad_request
        if bad is not None:
            self._stop()
            queue.clear()
            signal_terminal(downstream, bad)
            return True
        if self.done and self.error is not None and not self.delay_error:
            self._finish(downstream)
            return True
        emitted = 0
        consumed = self.consumed
        limit = self.limit
        requested = self.requested
        while emitted != requested and queue:
            item = queue.popleft()
            try:
                downstream.on_next(item)
            except Exception as exc:  # rule 2.13: consider the subscription cancelled
                self._stop()
                queue.clear()
                report_broken(exc, downstream, "on_next")
                return True
            emitted += 1
            consumed += 1
            if consumed == limit:
                consumed = 0
                upstream = self.upstream
                if upstream is not None and not self.done:
                    upstream.request(limit)
            if self.halt:
                break  # cancelled, or a bad request to report: the next pass looks
        self.consumed = consumed
        if self.done and not queue and not self.cancelled:
            self._finish(downstream)
            return True
        self.emitted_pass = emitted
        return False

    def settle(self) -> None:
        self.requested = demand.sub(self.requested, self.emitted_pass)
        self.emitted_pass = 0

    def _finish(self, downstream: Subscriber[T]) -> None:
        error = self.error
        self._stop()
        self.queue.clear()
        signal_terminal(downstream, error)
