"""Operators on an asyncio clock: ``debounce``, ``throttle_first``, ``throttle_latest``,
``sample``, ``delay``, ``timeout``, and ``buffer_time`` (lists by count-or-time).

Each runs its timers on an asyncio loop (``loop=``, or the loop running at subscribe time;
with neither, the subscriber gets ``on_subscribe`` then ``on_error(NoEventLoopError)``), and
is built on :class:`rstreams.flow._drain.DrainSubscriber` (its module tells the theory of
operation): upstream signals (any thread) and timer callbacks (the loop's thread) change
the state under the lock and put elements that are due into ``ready``; only the drain loop
signals the downstream or calls the upstream, so signals stay serial (rules 1.3, 2.7).
Every timer is armed with ``loop.call_at`` at an absolute time, so a hop to the loop's
thread adds no drift; at most one timer per subscription is armed at a time (a timer that
finds its deadline moved re-arms itself), and cancelling the stream cancels it.

Demand: nothing is requested upstream before the downstream requests. The filters
(``debounce``, ``throttle_first``, ``throttle_latest``, ``sample``) pass ``request(n)``
through and ask upstream for one more element for every element they drop (none once
the demand is unbounded), so what is held (``ready``, plus at most one pending element)
never exceeds the outstanding demand. ``delay`` asks for the outstanding demand, at most
``max_pending`` elements ahead, so at most ``max_pending`` are ever held. ``timeout``
passes demand through. ``buffer_time`` counts demand in lists and asks for ``max_size``
elements per list asked (see :class:`BufferTime`).

Completion: ``debounce``, ``throttle_latest`` and ``sample`` emit the pending element (if
any) when the upstream completes, ``buffer_time`` its partial list; ``delay`` completes
after its last element's delay.
Errors go on at once, dropping what is held.
"""

from __future__ import annotations

import abc
import asyncio
from collections import deque
from typing import Any, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import ReactiveStreamsError
from rstreams.flow._async_source import check_loop, on_loop_thread, resolve_loop
from rstreams.flow._drain import OUTER, DrainSubscriber, check_prefetch
from rstreams.flow._iterable import error
from rstreams.flow._operator import MISSING, OperatorFlow
from rstreams.flow._recover import OnErrorResumeFlow
from rstreams.flow._signals import NONE_ITEM, report_broken
from rstreams.rules import check_subscriber

__all__ = ["StreamTimeoutError", "TimedFlow", "buffer_time", "delay_flow", "seconds", "timed", "timeout"]

T = TypeVar("T")
R = TypeVar("R")


class StreamTimeoutError(ReactiveStreamsError, TimeoutError):
    """``timeout``: no element (or no end) in time; ``iter_blocking(timeout=)``: no element or end
    within it. ``seconds`` is the limit that passed."""

    def __init__(self, message: str, seconds: float) -> None:
        super().__init__(message)
        self.seconds = seconds


def seconds(operator: str, name: str, value: object, *, positive: bool = False) -> float:
    """``value`` as seconds >= 0 (> 0 if ``positive``), or an error naming the operator."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{operator}({name}) needs a number of seconds, got {value!r}")
    if value < 0 or (positive and value == 0) or value != value:  # NaN is no number of seconds
        raise ValueError(f"{operator}({name}) needs seconds {'> 0' if positive else '>= 0'}, got {value!r}")
    return float(value)


class TimedFlow(OperatorFlow[T, R]):
    """A clocked operator: ``kind`` is its subscriber class, ``args`` its checked arguments."""

    __slots__ = ("args", "kind", "loop")

    def __init__(
        self,
        source: Publisher[T],
        kind: type[_Timed[Any, Any]],
        args: tuple[Any, ...],
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        super().__init__(source)
        check_loop(loop, kind.name)
        self.kind = kind
        self.args = args
        self.loop = loop

    def subscribe(self, subscriber: Subscriber[R]) -> None:
        check_subscriber(subscriber)
        found = resolve_loop(self.loop, self.kind.name)
        if isinstance(found, RuntimeError):  # no clock: refuse here (rule 1.9 then 1.4)
            subscriber.on_subscribe(_Nothing())
            subscriber.on_error(found)
            return
        self.source.subscribe(self.kind(subscriber, found, *self.args))

    def subscriber(self, downstream: Subscriber[R]) -> Subscriber[T]:
        found = resolve_loop(self.loop, self.kind.name)
        if isinstance(found, RuntimeError):
            raise found
        return self.kind(downstream, found, *self.args)


class _Nothing(Subscription):
    __slots__ = ()

    def request(self, n: int) -> None:
        """Nothing to request: the stream already failed."""

    def cancel(self) -> None:
        """Nothing to cancel: the stream already failed."""


class _Timed(DrainSubscriber[T, R]):
    """The drain loop plus one timer; subclasses write :meth:`arrive`, :meth:`fire`.

    ``ask`` is upstream demand to pass on (the loop passes it); ``asked`` what was passed
    in all, ``sent`` what was emitted in all (both the loop's).
    """

    __slots__ = ("alarm", "armed", "ask", "asked", "handle", "loop", "pending", "ready", "sent")

    def __init__(self, downstream: Subscriber[R], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(downstream)
        self.loop = loop
        self.ready: deque[R] = deque()
        self.pending: Any = MISSING
        self.ask = 0
        self.asked = 0
        self.sent = 0
        self.armed = False
        self.handle: asyncio.TimerHandle | None = None
        self.alarm = _Alarm(self)  # what the loop holds: let go of at the end (rule 3.13)

    # -- signals ------------------------------------------------------------------------

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.cancelled or self.done:
            return  # rule 3.12: late signals after cancel
        with self.lock:
            self.arrive(item, self.loop.time())
        if self.calling is not OUTER:
            self.drain()

    def on_complete(self) -> None:
        with self.lock:
            if self.pending is not MISSING:
                self.ready.append(self.pending)
                self.pending = MISSING
        super().on_complete()

    def request(self, n: int) -> None:
        if demand.invalid(n) is None and not self.cancelled:
            with self.lock:
                self.on_request(n)
        super().request(n)

    # -- for subclasses (called with the lock held) -----------------------------------

    @abc.abstractmethod
    def arrive(self, item: T, now: float) -> None:
        """An upstream element at ``now``: put it in ``ready``, hold it, or drop it."""

    def fire(self, now: float) -> None:
        """The armed timer is due (on the loop's thread); ``armed`` is already false."""

    def on_request(self, n: int) -> None:
        """The downstream asked for ``n``: by default passed through upstream."""
        self.ask = demand.add(self.ask, n)

    def drop(self) -> None:
        """An element was dropped: ask upstream for one more (none once unbounded)."""
        self.ask = demand.add(self.ask, 1)

    def take_ask(self) -> int:
        """How much to request upstream now."""
        ask, self.ask = self.ask, 0
        if not ask or self.asked == demand.UNBOUNDED:
            return 0
        self.asked = demand.add(self.asked, ask)
        return ask

    def finished(self) -> bool:
        """Whether nothing is held any more once the upstream completed."""
        return not self.ready

    def arm(self, when: float) -> None:
        """Arm the timer for ``when`` (loop time), from any thread."""
        self.armed = True
        if on_loop_thread(self.loop):
            self.handle = self.loop.call_at(when, self.alarm.fire)
            return
        try:
            self.loop.call_soon_threadsafe(self.alarm.arm, when)
        except RuntimeError as exc:  # the loop is closed: this clock can never tick
            self.error = self.error or exc

    # -- the timer and the loop ---------------------------------------------------------

    def arm_on_loop(self, when: float) -> None:
        """``arm`` handed over to the loop's thread."""
        if not self.cancelled:
            self.handle = self.loop.call_at(when, self.alarm.fire)

    def on_alarm(self) -> None:
        """The timer is due, on the loop's thread."""
        self.handle = None
        if self.cancelled:
            return
        with self.lock:
            self.armed = False
            self.fire(self.loop.time())
        self.drain()

    def _pass(self, emitted: int) -> int:
        downstream = self.downstream
        ready = self.ready
        while True:
            if self._stopping():
                return emitted
            with self.lock:
                ask = self.take_ask()
            if ask and not self.done and self.upstream is not None:
                self.call(OUTER, self.upstream.request, ask)
                continue
            requested = self.requested
            if ready and (emitted < requested or requested == demand.UNBOUNDED):
                emitted += 1
                self.sent += 1
                try:
                    downstream.on_next(ready.popleft())
                except Exception as exc:  # rule 2.13: consider the subscription cancelled
                    self.cancelled = True
                    report_broken(exc, downstream, "on_next")
                continue
            if self.done:
                with self.lock:
                    finished = self.finished()
                if finished:
                    self._complete()
                    self._clear()
            return emitted

    def _clear(self) -> None:
        """Cancel the upstream and the timer, drop what is held (rules 3.13, 4.2)."""
        with self.lock:
            self.ready.clear()
            self.pending = MISSING
        self.alarm.owner = None
        handle, self.handle = self.handle, None
        if handle is not None:
            if on_loop_thread(self.loop):
                handle.cancel()
            else:
                try:
                    self.loop.call_soon_threadsafe(handle.cancel)
                except RuntimeError:
                    pass  # the loop is closed: its timers never run
        self._cancel_upstream()


class _Alarm:
    """The timer callbacks the loop holds; cut from the operator when the stream ends."""

    __slots__ = ("owner",)

    def __init__(self, owner: _Timed[Any, Any]) -> None:
        self.owner: _Timed[Any, Any] | None = owner

    def arm(self, when: float) -> None:
        owner = self.owner
        if owner is not None:
            owner.arm_on_loop(when)

    def fire(self) -> None:
        owner = self.owner
        if owner is not None:
            owner.on_alarm()


class Debounce(_Timed[T, T]):
    """An element goes on once ``quiet`` seconds pass without a newer one; newer ones replace it."""

    __slots__ = ("due", "quiet")

    name = "debounce"

    def __init__(self, downstream: Subscriber[T], loop: asyncio.AbstractEventLoop, quiet: float) -> None:
        super().__init__(downstream, loop)
        self.quiet = quiet
        self.due = 0.0

    def arrive(self, item: T, now: float) -> None:
        if self.pending is not MISSING:
            self.drop()
        self.pending = item
        self.due = now + self.quiet
        if not self.armed:
            self.arm(self.due)

    def fire(self, now: float) -> None:
        if self.pending is MISSING:
            return
        if now < self.due:  # a newer element moved the deadline
            self.arm(self.due)
            return
        self.ready.append(self.pending)
        self.pending = MISSING


class ThrottleFirst(_Timed[T, T]):
    """The first element of each window of ``window`` seconds goes on; the rest are dropped."""

    __slots__ = ("ends", "window")

    name = "throttle_first"

    def __init__(self, downstream: Subscriber[T], loop: asyncio.AbstractEventLoop, window: float) -> None:
        super().__init__(downstream, loop)
        self.window = window
        self.ends = float("-inf")

    def arrive(self, item: T, now: float) -> None:
        if now >= self.ends:
            self.ready.append(item)
            self.ends = now + self.window
        else:
            self.drop()


class ThrottleLatest(_Timed[T, T]):
    """The first element goes on at once and opens a window; at its end the latest one held goes on."""

    __slots__ = ("window",)

    name = "throttle_latest"

    def __init__(self, downstream: Subscriber[T], loop: asyncio.AbstractEventLoop, window: float) -> None:
        super().__init__(downstream, loop)
        self.window = window

    def arrive(self, item: T, now: float) -> None:
        if not self.armed:  # no window open
            self.ready.append(item)
            self.arm(now + self.window)
            return
        if self.pending is not MISSING:
            self.drop()
        self.pending = item

    def fire(self, now: float) -> None:
        if self.pending is MISSING:
            return  # the window closes
        self.ready.append(self.pending)
        self.pending = MISSING
        self.arm(now + self.window)


class Sample(_Timed[T, T]):
    """Every ``period`` seconds, the latest element since the last tick goes on (if any)."""

    __slots__ = ("origin", "period", "ticks")

    name = "sample"

    def __init__(self, downstream: Subscriber[T], loop: asyncio.AbstractEventLoop, period: float) -> None:
        super().__init__(downstream, loop)
        self.period = period
        self.origin = loop.time()
        self.ticks = 1

    def on_start_clock(self) -> None:
        with self.lock:
            self.arm(self.origin + self.period)

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        if not self.cancelled:
            self.on_start_clock()

    def arrive(self, item: T, now: float) -> None:
        if self.pending is not MISSING:
            self.drop()
        self.pending = item

    def fire(self, now: float) -> None:
        if self.pending is not MISSING:
            self.ready.append(self.pending)
            self.pending = MISSING
        if self.done:
            return
        while True:  # the next tick after now: a late loop skips ticks, never drifts
            self.ticks += 1
            due = self.origin + self.ticks * self.period
            if due > now:
                break
        self.arm(due)


class Delay(_Timed[T, T]):
    """Each element goes on ``by`` seconds after it arrived; at most ``max_pending`` held."""

    __slots__ = ("by", "delayed", "limit", "max_pending", "outstanding")

    name = "delay"

    def __init__(
        self, downstream: Subscriber[T], loop: asyncio.AbstractEventLoop, by: float, max_pending: int
    ) -> None:
        super().__init__(downstream, loop)
        self.by = by
        self.max_pending = max_pending
        self.limit = max_pending - (max_pending >> 2)
        self.delayed: deque[tuple[float, T]] = deque()
        self.outstanding = 0  # the downstream's demand not yet emitted

    def on_request(self, n: int) -> None:
        self.outstanding = demand.add(self.outstanding, n)

    def take_ask(self) -> int:
        sent, self.sent = self.sent, 0
        self.outstanding = demand.sub(self.outstanding, sent)
        self.asked -= sent  # ``asked`` is now what upstream owes or we hold, not yet emitted
        target = min(self.outstanding, self.max_pending)
        want = target - self.asked
        if want <= 0 or (self.asked > self.max_pending >> 2 and want < self.limit):
            return 0
        self.asked += want
        return want

    def arrive(self, item: T, now: float) -> None:
        self.delayed.append((now + self.by, item))
        if not self.armed:
            self.arm(now + self.by)

    def fire(self, now: float) -> None:
        delayed = self.delayed
        while delayed and delayed[0][0] <= now:
            self.ready.append(delayed.popleft()[1])
        if delayed:
            self.arm(delayed[0][0])

    def finished(self) -> bool:
        return not self.ready and not self.delayed

    def _clear(self) -> None:
        with self.lock:
            self.delayed.clear()
        super()._clear()


class BufferTime(_Timed[T, list[T]]):
    """Lists cut every ``period`` seconds (when the downstream wants one) or at ``max_size``.

    Demand counts lists. The upstream is asked for ``max_size`` elements per list the
    downstream asked for, minus what is held or owed; a tick cuts the current list only
    when the downstream wants one more than is waiting (otherwise it grows, up to
    ``max_size``), so what is held never exceeds ``max_size`` times the demand.
    """

    __slots__ = ("current", "max_size", "origin", "outstanding", "owed", "period", "ticks")

    name = "buffer_time"

    def __init__(
        self, downstream: Subscriber[list[T]], loop: asyncio.AbstractEventLoop, period: float, max_size: int
    ) -> None:
        super().__init__(downstream, loop)
        self.period = period
        self.max_size = max_size
        self.current: list[T] = []
        self.origin = loop.time()
        self.ticks = 1
        self.outstanding = 0  # lists the downstream asked for and did not get yet
        self.owed = 0  # elements asked upstream, not yet arrived

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        if not self.cancelled:
            with self.lock:
                self.arm(self.origin + self.period)

    def on_complete(self) -> None:
        with self.lock:
            if self.current:
                self.cut()
        super().on_complete()

    def on_request(self, n: int) -> None:
        self.outstanding = demand.add(self.outstanding, n)

    def take_ask(self) -> int:
        sent, self.sent = self.sent, 0
        self.outstanding = demand.sub(self.outstanding, sent)
        if self.asked == demand.UNBOUNDED:
            return 0
        if self.outstanding == demand.UNBOUNDED:
            self.asked = demand.UNBOUNDED
            return demand.UNBOUNDED
        held = self.owed + len(self.current) + sum(len(batch) for batch in self.ready)
        want = self.outstanding * self.max_size - held
        if want <= 0:
            return 0
        self.owed += want
        return want

    def arrive(self, item: T, now: float) -> None:
        self.owed -= 1
        self.current.append(item)
        if len(self.current) >= self.max_size:
            self.cut()

    def cut(self) -> None:
        """The current list is complete: it waits in ``ready`` for the loop."""
        self.ready.append(self.current)
        self.current = []

    def fire(self, now: float) -> None:
        if self.current and self.outstanding - self.sent > len(self.ready):
            self.cut()
        if self.done:
            return
        while True:  # the next tick after now: a late loop skips ticks, never drifts
            self.ticks += 1
            due = self.origin + self.ticks * self.period
            if due > now:
                break
        self.arm(due)

    def finished(self) -> bool:
        return not self.ready and not self.current

    def _clear(self) -> None:
        with self.lock:
            self.current = []
        super()._clear()


class Timeout(_Timed[T, T]):
    """Fails with :class:`StreamTimeoutError` when the upstream is silent too long, or runs too long.

    ``per_element``: seconds the upstream may stay silent while it owes elements (counted
    from the request that made it owe, or its previous element). ``total``: seconds from
    subscribe to the end of the stream.
    """

    __slots__ = ("deadline", "end", "owed", "per_element", "total")

    name = "timeout"

    def __init__(
        self,
        downstream: Subscriber[T],
        loop: asyncio.AbstractEventLoop,
        per_element: float | None,
        total: float | None,
    ) -> None:
        super().__init__(downstream, loop)
        self.per_element = per_element
        self.total = total
        self.end = float("inf") if total is None else loop.time() + total
        self.deadline = float("inf")
        self.owed = 0  # elements the upstream owes

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        if self.total is not None and not self.cancelled:
            with self.lock:
                if not self.armed:
                    self.arm(self.end)

    def take_ask(self) -> int:
        ask = super().take_ask()
        if ask:
            if not self.owed and self.per_element is not None:
                self.deadline = self.loop.time() + self.per_element
            self.owed = demand.add(self.owed, ask)
            if not self.armed and self.deadline < float("inf"):
                self.arm(min(self.deadline, self.end))
        return ask

    def arrive(self, item: T, now: float) -> None:
        self.owed = demand.sub(self.owed, 1)
        if self.per_element is not None:
            self.deadline = now + self.per_element if self.owed else float("inf")
        self.ready.append(item)

    def fire(self, now: float) -> None:
        if self.done:
            return
        if now >= self.end:
            limit, what = self.total, "the stream did not end"
        elif now >= self.deadline:
            limit, what = self.per_element, "no element arrived"
        else:
            when = min(self.deadline, self.end)
            if when < float("inf"):
                self.arm(when)
            return
        assert limit is not None
        if self.error is None:
            self.error = StreamTimeoutError(f"timeout: {what} within {limit} s", limit)


def timeout(
    source: Publisher[T],
    per_element: float | None,
    total: float | None,
    fallback: Publisher[T] | None,
    loop: asyncio.AbstractEventLoop | None,
) -> Publisher[T]:
    """``source.timeout(...)``: checked arguments; a fallback continues after our own timeout."""
    per = None if per_element is None else seconds("timeout", "per_element", per_element, positive=True)
    whole = None if total is None else seconds("timeout", "total=", total, positive=True)
    if per is None and whole is None:
        raise ValueError("timeout() needs per_element or total=; both are None")
    if fallback is not None and not callable(getattr(fallback, "subscribe", None)):
        raise TypeError(f"timeout(fallback=) needs a Publisher, got {fallback!r}")
    timed: Publisher[T] = TimedFlow(source, Timeout, (per, whole), loop)
    if fallback is None:
        return timed
    chosen = fallback

    def resume(exc: BaseException) -> Publisher[T]:
        return chosen if isinstance(exc, StreamTimeoutError) else error(exc)

    return OnErrorResumeFlow(timed, resume)


def buffer_time(
    source: Publisher[T], period: float, max_size: int, loop: asyncio.AbstractEventLoop | None
) -> Publisher[list[T]]:
    """``source.buffer_time(...)`` with checked arguments."""
    return TimedFlow(
        source,
        BufferTime,
        (
            seconds("buffer_time", "seconds", period, positive=True),
            check_prefetch("buffer_time", "max_size", max_size),
        ),
        loop,
    )


def delay_flow(
    source: Publisher[T], by: float, max_pending: int, loop: asyncio.AbstractEventLoop | None
) -> Publisher[T]:
    """``source.delay(...)`` with checked arguments."""
    return TimedFlow(
        source,
        Delay,
        (seconds("delay", "seconds", by), check_prefetch("delay", "max_pending", max_pending)),
        loop,
    )


_KINDS: dict[str, tuple[type[_Timed[Any, Any]], str, bool]] = {
    "debounce": (Debounce, "seconds", False),
    "throttle_first": (ThrottleFirst, "seconds", False),
    "throttle_latest": (ThrottleLatest, "seconds", True),
    "sample": (Sample, "period", True),
}
"""Each filter on the clock: its subscriber, its argument's name, whether it must be > 0."""


def timed(
    source: Publisher[T], operator: str, value: float, loop: asyncio.AbstractEventLoop | None
) -> Publisher[T]:
    """``source.debounce(value)`` (or ``throttle_first``, ...) with checked arguments."""
    kind, name, positive = _KINDS[operator]
    return TimedFlow(source, kind, (seconds(operator, name, value, positive=positive),), loop)
