"""Clock sources on an asyncio event loop: ``interval`` (0, 1, 2, ... every period) and ``timer``.

A clock cannot be slowed down, so rule 1.1 leaves the specification's two choices,
"buffer or drop" (see :mod:`rstreams.flow._push`). The default is
``OverflowStrategy.ERROR``, like RxJava's ``interval`` and its MissingBackpressureException:
a tick that finds no demand ends the stream with
:class:`~rstreams.errors.OverflowStrategyError` and the clock stops. ``overflow=DROP``
skips ticks nobody asked for (tick numbers keep counting, so gaps show), ``LATEST`` keeps
the newest ``capacity`` ticks, ``BUFFER`` holds up to ``capacity`` and then fails.

Timing: tick ``n`` is due at ``origin + n * period`` on the loop's clock (``loop.time()``),
where ``origin`` is the subscribe time plus ``initial_delay``; each tick is scheduled with
``loop.call_at`` from that formula, so errors never accumulate (no drift). A loop that
falls behind catches up one tick per loop iteration.

Threads: ticks are produced and, when demand is waiting, delivered on the loop's thread.
``on_subscribe`` runs on the thread that calls ``subscribe``. Ticks held by ``BUFFER``/
``LATEST`` are delivered by whichever thread's ``request`` makes room for them; signals
are serial either way (rule 1.3). ``cancel`` from any thread stops the clock (the timer
handle is cancelled on the loop's thread).
"""

from __future__ import annotations

import asyncio
from typing import Any

from rstreams.api import Publisher, Subscriber
from rstreams.errors import LoopClosedError
from rstreams.flow._async_source import check_loop, on_loop_thread, resolve_loop
from rstreams.flow._push import BufferedSubscription, OverflowStrategy, resolve_capacity
from rstreams.rules import check_subscriber

__all__ = ["interval", "timer"]


def _seconds(value: object, what: str, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{what} needs a number of seconds, got {value!r}")
    if value < 0 or (positive and value == 0) or value != value:
        raise ValueError(f"{what} needs a number of seconds {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


class _ClockFlow(Publisher[int]):
    __slots__ = ("_capacity", "_delay", "_loop", "_name", "_overflow", "_period")

    def __init__(
        self,
        name: str,
        delay: float,
        period: float | None,
        loop: asyncio.AbstractEventLoop | None,
        overflow: OverflowStrategy,
        capacity: int | None,
    ) -> None:
        check_loop(loop, name)
        self._name = name
        self._delay = delay
        self._period = period  # None: a timer, one tick then complete
        self._loop = loop
        self._overflow = overflow
        self._capacity = resolve_capacity(overflow, capacity, name)

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        check_subscriber(subscriber)
        loop = resolve_loop(self._loop, self._name)
        if isinstance(loop, RuntimeError):
            refused: BufferedSubscription[int] = BufferedSubscription(
                subscriber, self._overflow, 0, self._name
            )
            refused.finish(loop)
            refused.start()
            return
        clock = _Clock(loop, self._delay, self._period)
        subscription = BufferedSubscription(
            subscriber, self._overflow, self._capacity, self._name, clock.stop, "tick"
        )
        clock.subscription = subscription
        clock.origin = loop.time() + self._delay
        subscription.start()
        clock.begin()


class _Clock:
    """Schedules the ticks of one subscription on the loop and feeds them to it."""

    __slots__ = ("_handle", "_loop", "_period", "_stopped", "count", "origin", "subscription")

    def __init__(self, loop: asyncio.AbstractEventLoop, delay: float, period: float | None) -> None:
        self._loop = loop
        self._period = period
        self._handle: asyncio.TimerHandle | None = None
        self._stopped = False
        self.subscription: BufferedSubscription[int] | None = None
        self.origin = 0.0
        self.count = 0

    def begin(self) -> None:
        if self._stopped:
            return  # cancelled (or failed) inside on_subscribe
        if on_loop_thread(self._loop):
            self._schedule()
            return
        try:
            self._loop.call_soon_threadsafe(self._schedule)
        except RuntimeError as exc:  # the loop is closed: the clock can never tick
            if self.subscription is not None:
                closed = LoopClosedError(
                    f"interval/timer: its event loop is closed, the clock can never tick: {exc}"
                )
                closed.__cause__ = exc
                self.subscription.finish(closed)

    def _schedule(self) -> None:
        if self._stopped:
            return
        period = self._period or 0.0
        self._handle = self._loop.call_at(self.origin + self.count * period, self._tick)

    def _tick(self) -> None:
        subscription = self.subscription
        if self._stopped or subscription is None:
            return
        n = self.count
        self.count = n + 1
        if self._period is None:  # timer: one element, then complete (after it, if buffered)
            subscription.offer(0)
            subscription.finish(None)
            return
        self._schedule()  # before offering, so a cancel from on_next finds the new handle
        subscription.offer(n)

    def stop(self, _subscription: Any = None) -> None:
        """``on_detach``: the subscription ended; cancel the pending tick on the loop's thread."""
        if self._stopped:
            return
        self._stopped = True
        self.subscription = None
        if on_loop_thread(self._loop):
            self._cancel_handle()
            return
        try:
            self._loop.call_soon_threadsafe(self._cancel_handle)
        except RuntimeError:
            pass  # the loop is closed: its timers will never run

    def _cancel_handle(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            handle.cancel()


def interval(
    period: float,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    initial_delay: float | None = None,
    overflow: OverflowStrategy = OverflowStrategy.ERROR,
    capacity: int | None = None,
) -> Publisher[int]:
    """The publisher behind :func:`rstreams.interval`."""
    step = _seconds(period, "interval(period)", positive=True)
    delay = (
        step if initial_delay is None else _seconds(initial_delay, "interval(initial_delay=)", positive=False)
    )
    return _ClockFlow("interval", delay, step, loop, overflow, capacity)


def timer(
    delay: float,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    overflow: OverflowStrategy = OverflowStrategy.ERROR,
    capacity: int | None = None,
) -> Publisher[int]:
    """The publisher behind :func:`rstreams.timer`."""
    seconds = _seconds(delay, "timer(delay)", positive=False)
    return _ClockFlow("timer", seconds, None, loop, overflow, capacity)
