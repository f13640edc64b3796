"""``observe_on``: an asynchronous boundary onto an asyncio loop or an Executor.

``ObserveOnFlow(source, target)`` delivers ``on_next``, ``on_error`` and ``on_complete``
on ``target``: an :class:`asyncio.AbstractEventLoop` (through ``call_soon_threadsafe``,
or ``call_soon`` when already on that loop's thread) or a
:class:`concurrent.futures.Executor` (through ``submit``). ``on_subscribe`` is signalled
on the thread that subscribed, before any other signal (rule 1.9).

Theory of operation (the work-in-progress counter, rules 1.3 and 3.3):

* Every event (an element, a terminal signal, a ``request``, a bad ``request``) is
  recorded, then increments ``_wip`` under a lock. Only the event that moves it from 0
  to 1 schedules a drain; the drain delivers everything available within demand,
  then subtracts what it saw ("missed") and loops until ``_wip`` is 0 again. So one
  drain runs at a time, signals never overlap (1.3), and a burst costs one scheduled
  callback, not one per element. A ``request`` made inside ``on_next`` only adds
  demand: the running drain picks it up (3.3).
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
  Subscription (3.13). After cancel or a terminal signal ``_wip`` is never released,
  so nothing is scheduled again.

If the loop is closed or the executor shut down, the drain cannot be scheduled: the
upstream is cancelled and the downstream gets ``on_error(RuntimeError)`` on the
calling thread, rather than waiting forever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import Callable
from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import OverflowStrategyError, report_unhandled
from rstreams.flow._flow import Flow
from rstreams.rules import check_error, check_item, check_subscriber

__all__ = ["ObserveOnFlow"]

T = TypeVar("T")

Schedule = Callable[[Callable[[], None]], None]


def _scheduler(target: asyncio.AbstractEventLoop | concurrent.futures.Executor) -> Schedule:
    """A function that runs a callback on ``target``; raises TypeError for anything else."""
    if isinstance(target, asyncio.AbstractEventLoop):
        loop = target

        def on_loop(callback: Callable[[], None]) -> None:
            if asyncio._get_running_loop() is loop:  # already on the loop's thread: no wake-up needed
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


class ObserveOnFlow(Flow[T]):
    """``source.observe_on(target)``; see :meth:`rstreams.Flow.observe_on` and the module docs."""

    __slots__ = ("_buffer_size", "_delay_error", "_schedule", "_source")

    def __init__(
        self,
        source: Publisher[T],
        target: asyncio.AbstractEventLoop | concurrent.futures.Executor,
        *,
        buffer_size: int = 256,
        delay_error: bool = False,
    ) -> None:
        if type(buffer_size) is not int or buffer_size <= 0:
            raise ValueError(f"observe_on(buffer_size=...) needs an int > 0, got {buffer_size!r}")
        self._schedule = _scheduler(target)
        self._source = source
        self._buffer_size = buffer_size
        self._delay_error = delay_error

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        inner = _ObserveOnSubscriber(subscriber, self._schedule, self._buffer_size, self._delay_error)
        self._source.subscribe(inner)


class _ObserveOnSubscriber(Subscriber[T], Subscription, Generic[T]):
    __slots__ = (
        "_bad_request",
        "_buffer_size",
        "_consumed",
        "_delay_error",
        "_done",
        "_downstream",
        "_error",
        "_halt",
        "_limit",
        "_lock",
        "_queue",
        "_requested",
        "_schedule",
        "_stopped",
        "_upstream",
        "_wip",
    )

    def __init__(self, downstream: Subscriber[T], schedule: Schedule, buffer_size: int, delay: bool) -> None:
        self._downstream: Subscriber[T] | None = downstream
        self._upstream: Subscription | None = None
        self._schedule = schedule
        self._buffer_size = buffer_size
        self._limit = buffer_size - buffer_size // 4  # replenish at three quarters delivered
        self._consumed = 0  # delivered since the last replenish; only the drain touches it
        self._delay_error = delay
        self._queue: deque[T] = deque()
        self._lock = threading.Lock()
        self._wip = 1  # held until on_subscribe has returned: nothing is delivered before it
        self._requested = 0  # downstream demand not yet met
        self._done = False  # upstream signalled a terminal (or broke rule 1.1)
        self._error: BaseException | None = None
        self._bad_request: BaseException | None = None  # rule 3.9, for the drain to deliver
        self._stopped = False  # cancelled or terminal delivered: every method is a no-op
        self._halt = False  # stopped or a bad request waits: the drain must stop delivering

    # -- upstream -> this -----------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self._upstream, subscription):
            return  # rule 2.5: a second subscription was cancelled
        if self._stopped:
            subscription.cancel()
            return
        self._upstream = subscription
        downstream = self._downstream
        assert downstream is not None
        try:
            downstream.on_subscribe(self)
        except Exception as exc:  # rule 2.13: the subscriber broke the contract
            self.cancel()
            report_unhandled(exc, f"{type(downstream).__name__}.on_subscribe")
            return
        self._start(subscription)

    def _start(self, subscription: Subscription) -> None:
        """After on_subscribe returned: open the upstream window, release the initial hold."""
        if self._stopped:
            return  # cancelled inside on_subscribe: keep _wip held, schedule nothing
        subscription.request(self._buffer_size)
        with self._lock:  # release the hold taken in __init__; schedule what arrived meanwhile
            self._wip -= 1
            if self._wip == 0:
                return
            self._wip = 1
        self._submit()

    def on_next(self, item: T) -> None:
        if item is None:
            check_item(item)  # raises TypeError naming rule 2.13
        if self._done or self._stopped:
            return  # late signal after cancel (3.12) or after a terminal
        queue = self._queue
        queue.append(item)
        if len(queue) > self._buffer_size:
            self._overflow()
            return
        lock = self._lock
        lock.acquire()  # the hot path: acquire/release cost half of a with-block here
        wip = self._wip = self._wip + 1
        lock.release()
        if wip == 1:
            self._submit()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self._done or self._stopped:
            return
        self._error = error
        self._done = True
        self._signal()

    def on_complete(self) -> None:
        if self._done or self._stopped:
            return
        self._done = True
        self._signal()

    # -- downstream -> this ---------------------------------------------------------

    def request(self, n: int) -> None:
        if self._stopped:
            return  # rules 3.6 and 1.7: no-op after cancel or a terminal signal
        problem = demand.invalid(n)
        with self._lock:
            if problem is None:
                self._requested = demand.add(self._requested, n)
            elif self._bad_request is None:
                self._bad_request = problem
                self._halt = True
            self._wip += 1
            if self._wip != 1:
                return
        self._submit()

    def cancel(self) -> None:
        if self._stopped:
            return
        self._stop()
        with self._lock:  # if no drain runs, empty the queue here and never release _wip
            self._wip += 1
            if self._wip != 1:
                return  # the running drain sees _stopped and clears the queue
        self._queue.clear()

    # -- the drain --------------------------------------------------------------------

    def _signal(self) -> None:
        with self._lock:
            self._wip += 1
            if self._wip != 1:
                return
        self._submit()

    def _submit(self) -> None:
        try:
            self._schedule(self._drain)
        except Exception as exc:  # the loop is closed or the executor shut down
            downstream = self._downstream
            self._stop()
            self._queue.clear()
            if downstream is not None:
                error = RuntimeError(f"observe_on: could not schedule delivery on the target: {exc}")
                error.__cause__ = exc
                self._deliver_terminal(downstream, error)

    def _stop(self) -> None:
        """Cancelled or finished: cancel upstream, drop both references (rule 3.13)."""
        self._stopped = True
        self._halt = True
        upstream = self._upstream
        self._downstream = None
        self._upstream = None
        if upstream is not None and not self._done:
            upstream.cancel()

    def _overflow(self) -> None:
        self._error = OverflowStrategyError(
            f"rule 1.1: observe_on's upstream sent more elements than the {self._buffer_size} requested"
        )
        self._done = True
        self._delay_error = False
        if self._upstream is not None:
            self._upstream.cancel()
        self._signal()

    def _drain(self) -> None:
        """Deliver everything available within demand, then the terminal signal if it is due.

        Runs on the target, never twice at once. One pass per burst: the inner loop is the
        hot path and makes no call per element besides ``on_next`` and ``popleft``.
        """
        missed = 1
        queue = self._queue
        emitted = 0  # delivered since the last demand bookkeeping
        consumed = self._consumed  # delivered since the last upstream replenish
        limit = self._limit
        while True:
            downstream = self._downstream
            if self._stopped or downstream is None:
                queue.clear()
                return
            bad = self._bad_request
            if bad is not None:
                self._stop()
                queue.clear()
                self._deliver_terminal(downstream, bad)
                return
            if self._done and self._error is not None and not self._delay_error:
                self._finish(downstream)
                return
            requested = self._requested
            while emitted != requested and queue:
                item = queue.popleft()
                try:
                    downstream.on_next(item)
                except Exception as exc:  # rule 2.13: consider the subscription cancelled
                    self._stop()
                    queue.clear()
                    report_unhandled(exc, f"{type(downstream).__name__}.on_next")
                    return
                emitted += 1
                consumed += 1
                if consumed == limit:
                    consumed = 0
                    upstream = self._upstream
                    if upstream is not None and not self._done:
                        upstream.request(limit)
                if self._halt:
                    break  # cancelled, or a bad request to report: see the loop's top
            if self._done and not queue and not self._stopped:
                self._finish(downstream)
                return
            self._consumed = consumed
            with self._lock:
                self._requested = demand.sub(self._requested, emitted)
                emitted = 0
                self._wip -= missed
                missed = self._wip
                if missed == 0:
                    return

    def _finish(self, downstream: Subscriber[T]) -> None:
        error = self._error
        self._stop()
        self._queue.clear()
        self._deliver_terminal(downstream, error)

    @staticmethod
    def _deliver_terminal(downstream: Subscriber[T], error: BaseException | None) -> None:
        try:
            if error is None:
                downstream.on_complete()
            else:
                downstream.on_error(error)
        except Exception as exc:
            where = "on_complete" if error is None else "on_error"
            report_unhandled(exc, f"{type(downstream).__name__}.{where}")
