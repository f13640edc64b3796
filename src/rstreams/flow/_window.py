"""Flows of Flows: ``group_by(key, max_groups=)``, ``window(count)`` and ``window_time(seconds)``.

Both emit one :class:`Group` per group (a Publisher with a ``key``, subscribable once;
:class:`rstreams.Flow` hands them on as ``GroupedFlow`` through ``wrap``),
and are built on one :class:`rstreams.flow._drain.DrainSubscriber` (its module tells the
theory of operation): the drain loop signals the outer subscriber *and* every group's
subscriber, so all signals are serial (rules 1.3, 2.7) and a request inside any
``on_next`` only adds demand (rule 3.3).

* Demand: the outer subscriber's demand counts groups; each group's subscriber has its
  own. The upstream is asked for ``prefetch`` elements once the outer subscriber first
  requests, then for as many as the groups' subscribers took (or their cancels dropped),
  in batches of ``prefetch - prefetch // 4``. So at most ``prefetch`` elements are held in
  all, whatever the groups: a group that nobody consumes stops the upstream (subscribe to
  every group, or cancel the ones you do not want).
* ``group_by``: an element whose ``key(element)`` has no open group opens one; past
  ``max_groups`` open groups the stream fails with
  :class:`~rstreams.errors.OverflowStrategyError` naming the bound and the key (the
  upstream is cancelled, every group and the outer subscriber get the error). A group
  whose subscriber cancels is closed, its queue dropped; a later element of that key
  opens a new group. Groups complete when the upstream completes.
* ``window(count)``: consecutive windows of ``count`` elements; a window completes with
  its ``count``-th element (the last may be shorter, completed with the upstream).
* ``window_time(seconds)``: a clock on an asyncio loop cuts the stream every ``seconds``
  from subscribe; a window opens with the first element of its period (its ``key`` is
  the period's number, 0, 1, ...; a period without elements has no window) and
  completes when the period ends (the last one with the upstream). An element takes the
  window of the period that is current when it is placed, under the lock the clock
  takes to cut, so no element lands in a window that was already cut.
* The outer stream completes when the upstream completed and every group was emitted.
  Cancelling it stops new groups (their elements are dropped) and closes every emitted
  group nobody subscribed to (let go of, below); the upstream is cancelled once no
  subscribed group can take an element any more (a cut window cannot). An error
  reaches the outer subscriber and every open group at once (rule 4.2), dropping what
  they hold; a window already cut (full, or its period over) before the error is
  complete: it delivers what it holds, within its subscriber's demand, and completes (as
  reactor's and RxJava's windows, completed when cut). A window cut but not yet handed to
  the outer subscriber is dropped with it.
* Once the outer stream is over (completed, failed or cancelled), an emitted group that
  nobody subscribed to and that can take no more elements (after a cancel, none can) is
  let go of: its elements move into the group, which serves them itself to whoever
  subscribes later (then completes), so they live as long as the group object does and
  no longer (the operator, which the outer subscriber's Subscription keeps, holds
  nothing of them).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import AlreadySubscribedError, LoopClosedError, OverflowStrategyError
from rstreams.flow._async_source import check_loop, on_loop_thread, resolve_loop
from rstreams.flow._drain import OUTER, DrainSubscriber, check_prefetch
from rstreams.flow._iterable import IterableFlow
from rstreams.flow._operator import MISSING, OperatorFlow, check_callable
from rstreams.flow._signals import (
    NONE_ITEM,
    NextMany,
    next_many,
    report_broken,
    signal_subscribe,
    signal_terminal,
)
from rstreams.flow._timeops import seconds
from rstreams.rules import check_subscriber

__all__ = ["Group", "GroupByFlow", "WindowTimeFlow"]

T = TypeVar("T")
G = TypeVar("G")


class GroupByFlow(OperatorFlow[T, G], Generic[T, G]):
    """``group_by(key)`` (no ``count``) or ``window(count)`` (``key`` ``None``); each group goes
    downstream as ``wrap(group)``."""

    __slots__ = ("key", "max_groups", "prefetch", "size", "wrap")

    def __init__(
        self,
        source: Publisher[T],
        key: Callable[[T], Hashable] | None,
        max_groups: int,
        prefetch: int,
        wrap: Callable[[Group[T]], G],
        count: int = MISSING,
    ) -> None:
        super().__init__(source)
        self.wrap = wrap
        windows = count is not MISSING  # window(count) passes no key; group_by(key) no count
        name = "window" if windows else "group_by"
        self.key = None if windows else check_callable(name, key, "key")
        self.max_groups = check_prefetch("group_by", "max_groups", max_groups)
        self.prefetch = check_prefetch(name, "prefetch", prefetch)
        self.size = check_prefetch("window", "count", count) if windows else None

    def subscriber(self, downstream: Subscriber[G]) -> Subscriber[T]:
        if self.size is not None:
            return _Windowing(downstream, self)
        return _Grouping(downstream, self)


class Group(Publisher[T], Generic[T]):
    """One group (or window): its ``key`` and its elements; it can be subscribed once."""

    __slots__ = (
        "attached",
        "cancelled",
        "closed",
        "emitted",
        "ended",
        "failure",
        "key",
        "many",
        "marked",
        "parent",
        "queue",
        "received",
        "requested",
        "rest",
        "sent",
        "subscriber",
    )

    def __init__(self, parent: _Grouping[T], key: Hashable) -> None:
        self.parent = parent
        self.key = key
        self.queue: deque[T] = deque()
        self.subscriber: Subscriber[T] | None = None
        self.many: NextMany | None = None  # the subscriber's batch signal, if it has one
        self.attached = False
        self.requested = 0  # what the group's subscriber asked for in all (saturating)
        self.sent = 0  # what the loop delivered to it in all
        self.received = 0
        self.closed = False  # no more elements will join (window full, or upstream ended)
        self.cancelled = False
        self.ended = False  # its subscriber got (or will get no) terminal signal: finished
        self.failure: BaseException | None = None  # a rule 3.9 error for its subscriber
        self.marked = False  # in the parent's ``dirty`` queue (guarded by its lock)
        self.emitted = False  # handed to the outer subscriber: the loop serves it
        self.rest: list[T] | None = None  # let go of by the operator: its elements, served by itself

    def __repr__(self) -> str:
        return f"Group(key={self.key!r})"

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        parent = self.parent
        with parent.lock:
            again = self.attached
            self.attached = True
            rest, self.rest = self.rest, None
        if again:
            subscriber.on_subscribe(_GroupSubscription(None))
            subscriber.on_error(
                AlreadySubscribedError(f"{parent.name}: the group {self.key!r} can be subscribed only once")
            )
            return
        if rest is not None:  # the operator let go of it (see _Grouping.let_go): a finished list
            IterableFlow(rest.__iter__).subscribe(subscriber)
            return
        if not signal_subscribe(subscriber, _GroupSubscription(self)):
            self.cancelled = True
        elif self.ended:  # the stream failed before anybody subscribed to this group
            signal_terminal(subscriber, parent.error)
            return
        else:
            self.many = next_many(subscriber)
            self.subscriber = subscriber
        parent.mark(self)


class _GroupSubscription(Subscription):
    __slots__ = ("group",)

    def __init__(self, group: Group[Any] | None) -> None:
        self.group = group

    def request(self, n: int) -> None:
        group = self.group
        if group is None or group.cancelled or group.ended:
            return
        problem = demand.invalid(n)
        with group.parent.lock:
            if problem is not None:
                group.failure = group.failure or problem
            else:
                group.requested = demand.add(group.requested, n)
        group.parent.mark(group)

    def cancel(self) -> None:
        group = self.group
        if group is not None and not group.cancelled:
            group.cancelled = True
            group.parent.mark(group)


class _Grouping(DrainSubscriber[T, Any]):
    name = "group_by"

    __slots__ = (
        "consumed",
        "dirty",
        "failed",
        "fresh",
        "key",
        "limit",
        "live",
        "max_groups",
        "open",
        "outer_cancelled",
        "outer_ended",
        "prefetch",
        "seen",
        "size",
        "swept",
        "wrap",
    )

    def __init__(self, downstream: Subscriber[Any], flow: GroupByFlow[T, Any]) -> None:
        super().__init__(downstream)
        self.wrap = flow.wrap
        self.key = flow.key
        self.size = flow.size
        self.max_groups = flow.max_groups
        self.prefetch = flow.prefetch
        self.limit = flow.prefetch - (flow.prefetch >> 2)
        self.open: dict[Hashable, Group[T]] = {}  # groups elements may still join
        self.fresh: deque[Group[T]] = deque()  # opened, not yet emitted to the outer subscriber
        self.live: list[Group[T]] = []  # emitted, not yet ended
        self.dirty: deque[Group[T]] = deque()  # groups with news for the loop
        self.swept = False  # every live group was looked at once the upstream ended
        self.consumed = 0  # elements taken (or dropped) since the last request upstream
        self.seen = 0  # window: elements so far
        self.outer_cancelled = False
        self.outer_ended = False
        self.failed = False  # the error went out; only windows already cut are served

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.cancelled or self.done or self.error is not None:
            return  # rule 3.12: late signals after cancel
        count = self.size
        try:
            key: Hashable = self.seen // count if count is not None else self.key(item)  # type: ignore[misc]
        except Exception as exc:
            self.fail(exc)
            return
        self.seen += 1
        overflow: Exception | None = None
        fast: Subscriber[T] | None = None
        with self.lock:
            try:
                group = self.open.get(key)
            except TypeError as exc:  # an unhashable key: the stream fails, as when key raises
                group, overflow = None, exc
            else:
                if group is not None and not self.wip and self._direct(group):
                    self.wip = 1  # the fast path: deliver on this thread, holding the loop
                    fast = group.subscriber
                    group.received += 1
                    if count is not None and group.received == count:
                        group.closed = True
                        del self.open[key]
                else:
                    overflow = self._place(item, key)
        if overflow is not None:
            self.fail(overflow)
            return
        if fast is not None and group is not None:
            self._deliver_fast(group, fast, item)
        elif self.calling is not OUTER:
            self.drain()

    def on_next_many(self, items: list[T]) -> None:
        """The batch signal: every element queued under one lock, then one drain."""
        if self.cancelled or self.done or self.error is not None:
            return
        count = self.size
        keys: list[Hashable] = []
        failure: BaseException | None = None
        if count is not None:
            seen = self.seen
            keys = [(seen + i) // count for i in range(len(items))]
        else:
            key = self.key
            assert key is not None
            try:
                for item in items:
                    keys.append(key(item))
            except Exception as exc:  # the elements before it are grouped, then the stream fails
                failure = exc
        self.seen += len(keys)
        with self.lock:
            for item, k in zip(items, keys, strict=False):
                try:
                    overflow = self._place(item, k)
                except TypeError as exc:  # an unhashable key: as in on_next
                    failure = exc
                    break
                if overflow is not None:
                    failure = overflow
                    break
        if failure is not None:
            self.fail(failure)
        elif self.calling is not OUTER:
            self.drain()

    def _place(self, item: T, key: Hashable) -> OverflowStrategyError | None:
        """Queue ``item`` in its group, opening it if needed (lock held); the error past the bound."""
        group = self.open.get(key)
        if group is None:
            if len(self.open) >= self.max_groups:
                return OverflowStrategyError(
                    f"group_by: key {key!r} would open group {len(self.open) + 1}, past "
                    f"max_groups={self.max_groups}; raise max_groups= or cancel groups you are done with"
                )
            group = self.open[key] = Group(self, key)
            self.fresh.append(group)
        group.queue.append(item)
        group.received += 1
        if group.received == self.size:
            group.closed = True
            del self.open[key]
        if not group.marked:
            group.marked = True
            self.dirty.append(group)
        return None

    def _direct(self, group: Group[T]) -> bool:
        """Whether ``group``'s element may skip its queue (lock held, nobody draining)."""
        return (
            group.emitted
            and group.subscriber is not None
            and not group.queue
            and not group.cancelled
            and group.failure is None
            and (group.sent < group.requested or group.requested == demand.UNBOUNDED)
            and not self.dirty
            and not self.fresh
            and self.error is None
            and not self.cancelled
            and not self.outer_cancelled
        )

    def _deliver_fast(self, group: Group[T], subscriber: Subscriber[T], item: T) -> None:
        """reactor's ``tryEmit``: one element straight to its group, then the loop if needed."""
        group.sent += 1
        self.consumed += 1
        try:
            subscriber.on_next(item)
        except Exception as exc:  # rule 2.13: consider the group's subscription cancelled
            group.cancelled = True
            report_broken(exc, subscriber, "on_next")
        with self.lock:
            if group.closed or group.cancelled or self.consumed >= self.limit:
                if not group.marked:  # the loop completes, ends or replenishes
                    group.marked = True
                    self.dirty.append(group)
                missed = self.wip
            else:
                self.wip -= 1
                if self.wip == 0:
                    return
                missed = self.wip
        self.drain_loop(missed)

    def mark(self, group: Group[T]) -> None:
        """``group`` has news (demand, a subscriber, a cancel): the loop looks at it."""
        with self.lock:
            if not group.marked:
                group.marked = True
                self.dirty.append(group)
        self.drain()

    def cancel(self) -> None:
        if not self.outer_cancelled:
            self.outer_cancelled = True
            self.drain()

    def _stopping(self) -> bool:
        if self.cancelled:
            self._clear()
            return True
        error = self.error
        if error is None:
            return False
        if not self.failed:
            self.failed = True
            if not self.outer_ended and not self.outer_cancelled:
                signal_terminal(self.downstream, error)  # first: a flat_map there cancels its groups
            self._end_all(error, keep_cut=True)
        self._let_go()
        if self.live:  # windows cut before the error: what they hold, then their completion
            self._serve_groups(True)
        if not self.live:
            self.cancelled = True
        return True

    def _pass(self, emitted: int) -> int:
        while True:
            if self._stopping():
                return emitted
            if self.requested and self._start(self.prefetch):
                continue
            upstream_done = self.done  # read before the queues: on_next comes before on_complete
            emitted = self._emit_groups(emitted)
            if self.cancelled:
                return emitted
            self._serve_groups(upstream_done)
            upstream = self.upstream
            if self.consumed >= self.limit and not self.done and not self.upstream_cancelled and upstream:
                used, self.consumed = self.consumed, 0
                self.call(OUTER, upstream.request, used)
                continue
            if upstream_done and not self.fresh and not self.outer_ended:
                self.outer_ended = True
                if not self.outer_cancelled:
                    signal_terminal(self.downstream, None)
            if self.outer_cancelled or self.outer_ended:
                self._let_go()
            if self.outer_cancelled and not self.fresh and not self.open:
                self._cancel_upstream()  # no group an element could join is left
            if (self.outer_cancelled or self.outer_ended) and not self.live and not self.fresh:
                self.cancelled = True  # nobody is left to take anything: everything ended
            return emitted

    def _let_go(self) -> None:
        """Once the outer stream is over, forget every emitted group that nobody subscribed
        to and that no element can join any more (cut, the upstream ended, or the outer
        subscriber cancelled: then nobody asked for the group's elements to come, and they
        would keep the upstream running): its elements move into the group itself, which
        serves them to whoever subscribes (as a list does), so they are held as long as the
        group is, never by the operator (as reactor's windows own their queues)."""
        kept: list[Group[T]] = []
        for group in self.live:
            with self.lock:
                idle = not group.attached and (group.closed or self.done or self.outer_cancelled)
                if idle:
                    group.closed = True
                    group.rest = list(group.queue)
                    if self.open.get(group.key) is group:
                        del self.open[group.key]
            if idle:
                group.ended = True
                self.consumed += len(group.queue)
                group.queue.clear()
            else:
                kept.append(group)
        self.live = kept

    def _emit_groups(self, emitted: int) -> int:
        """Hand opened groups to the outer subscriber while it has demand (or drop them)."""
        fresh = self.fresh
        while fresh:
            if self.outer_cancelled:
                group = fresh.popleft()
                with self.lock:
                    if self.open.get(group.key) is group:
                        del self.open[group.key]
                self.consumed += len(group.queue)
                group.queue.clear()
                continue
            requested = self.requested
            if emitted >= requested and requested != demand.UNBOUNDED:
                break
            group = fresh.popleft()
            self.live.append(group)
            group.emitted = True
            emitted += 1
            try:
                self.downstream.on_next(self.wrap(group))
            except Exception as exc:  # rule 2.13: consider the outer subscription cancelled
                self.outer_cancelled = True
                report_broken(exc, self.downstream, "on_next")
        return emitted

    def _serve_groups(self, upstream_done: bool) -> None:
        """Deliver each group's queue within its demand; end the groups that are over."""
        if upstream_done and not self.swept:
            self.swept = True  # once: every group may complete now
            groups: list[Group[T]] = list(self.live)
        else:
            groups = []
        with self.lock:
            dirty = self.dirty
            while dirty:
                group = dirty.popleft()
                group.marked = False
                groups.append(group)
        ended = False
        for group in groups:
            if group.ended or not group.emitted:
                continue  # not emitted yet (it is looked at when it is), or over
            queue = group.queue
            subscriber = group.subscriber
            if group.cancelled or group.failure is not None:
                self._end_group(group, group.failure if not group.cancelled else None)
                ended = True
                continue
            if subscriber is None:
                continue  # not subscribed yet: its elements wait
            if group.many is not None and queue:
                self._serve_batch(group, subscriber, group.many)
            while queue and (group.sent < group.requested or group.requested == demand.UNBOUNDED):
                group.sent += 1
                self.consumed += 1
                try:
                    subscriber.on_next(queue.popleft())
                except Exception as exc:  # rule 2.13: consider the group's subscription cancelled
                    group.cancelled = True
                    report_broken(exc, subscriber, "on_next")
                    break
            if not queue and (group.closed or upstream_done) and not group.cancelled:
                self._end_group(group, None, complete=True)
                ended = True
        if ended:
            self.live = [group for group in self.live if not group.ended]

    def _serve_batch(self, group: Group[T], subscriber: Subscriber[T], many: NextMany) -> None:
        """What the group's demand allows of its queue, in one batch signal (rstreams' own
        subscribers: ``flat_map``'s inner takes it whole, under one lock)."""
        queue = group.queue
        want = (
            len(queue)
            if group.requested == demand.UNBOUNDED
            else min(len(queue), group.requested - group.sent)
        )
        if want <= 0:
            return
        if want == len(queue):
            batch = list(queue)
            queue.clear()
        else:
            batch = [queue.popleft() for _ in range(want)]
        group.sent += want
        self.consumed += want
        try:
            many(batch)
        except Exception as exc:  # rule 2.13: consider the group's subscription cancelled
            group.cancelled = True
            report_broken(exc, subscriber, "on_next_many")

    def _end_group(self, group: Group[T], error: BaseException | None, *, complete: bool = False) -> None:
        group.ended = True
        with self.lock:
            if self.open.get(group.key) is group:
                del self.open[group.key]
        self.consumed += len(group.queue)
        group.queue.clear()
        subscriber, group.subscriber = group.subscriber, None  # rule 3.13
        group.many = None
        if subscriber is not None and (complete or error is not None):
            signal_terminal(subscriber, error)

    def _clear(self) -> None:
        """Cancel the upstream; every group's subscriber gets the error, if there is one (4.2)."""
        self._end_all(self.error, keep_cut=False)

    def _end_all(self, error: BaseException | None, *, keep_cut: bool) -> None:
        """Cancel the upstream and end every group with ``error`` (rule 4.2), except, with
        ``keep_cut``, the emitted windows already cut: they stay in ``live``, complete."""
        with self.lock:
            self.open.clear()
        groups = [*self.live, *self.fresh]
        self.live, self.fresh = [], deque()
        for group in groups:
            if group.ended:
                continue
            if keep_cut and group.closed and group.emitted and not group.cancelled:
                self.live.append(group)  # served on: its own rule 3.9 error, if it has one
            else:
                self._end_group(group, None if group.cancelled else error)
        self._cancel_upstream()


class _Windowing(_Grouping[T]):
    __slots__ = ()

    name = "window"


class WindowTimeFlow(GroupByFlow[T, G]):
    """``window_time(seconds)``: windows cut by a clock on ``loop`` (default: the running loop
    at subscribe; without one the subscriber gets ``on_subscribe`` then ``on_error``)."""

    __slots__ = ("loop", "period")

    def __init__(
        self,
        source: Publisher[T],
        period: float,
        prefetch: int,
        wrap: Callable[[Group[T]], G],
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        OperatorFlow.__init__(self, source)
        self.period = seconds("window_time", "seconds", period, positive=True)
        self.prefetch = check_prefetch("window_time", "prefetch", prefetch)
        self.key, self.max_groups, self.size, self.wrap = None, 2**63 - 1, None, wrap
        check_loop(loop, "window_time")
        self.loop = loop

    def subscribe(self, subscriber: Subscriber[G]) -> None:
        check_subscriber(subscriber)
        found = resolve_loop(self.loop, "window_time")
        if isinstance(found, RuntimeError):  # no clock: refuse here (rule 1.9 then 1.4)
            subscriber.on_subscribe(_GroupSubscription(None))
            subscriber.on_error(found)
            return
        self.source.subscribe(_TimedWindowing(subscriber, self, found))

    def subscriber(self, downstream: Subscriber[G]) -> Subscriber[T]:
        found = resolve_loop(self.loop, "window_time")
        if isinstance(found, RuntimeError):
            raise found
        return _TimedWindowing(downstream, self, found)


class _TimedWindowing(_Grouping[T]):
    """``_Grouping`` keyed by the clock's period number; the clock's tick cuts the window."""

    __slots__ = ("clock", "handle", "index", "loop", "period")

    name = "window_time"

    def __init__(
        self, downstream: Subscriber[Any], flow: WindowTimeFlow[T, Any], loop: asyncio.AbstractEventLoop
    ) -> None:
        super().__init__(downstream, flow)
        self.loop = loop
        self.period = flow.period
        self.index = 0  # the current period: the window elements join now (lock held to change)
        self.key = self._period_of
        self.handle: asyncio.TimerHandle | None = None
        self.clock: _Clock | None = _Clock(self)  # what the loop holds: let go of at the end (3.13)

    def _period_of(self, item: T) -> Hashable:
        return self.index

    def _place(self, item: T, key: Hashable) -> OverflowStrategyError | None:
        """The window is the period current now, under the lock (not when ``key`` was read)."""
        return super()._place(item, self.index)

    def on_subscribe(self, subscription: Subscription) -> None:
        first = self.upstream is None
        super().on_subscribe(subscription)
        if first and self.upstream is subscription:
            self._arm(self.loop.time() + self.period)

    def _arm(self, when: float) -> None:
        """Arm the next cut for ``when`` (loop time), from any thread."""
        clock = self.clock
        if clock is None:
            return
        if on_loop_thread(self.loop):
            self.handle = self.loop.call_at(when, clock.tick, when)
            return
        try:
            self.loop.call_soon_threadsafe(clock.arm, when)
        except RuntimeError as exc:  # the loop is closed: this clock can never tick
            closed = LoopClosedError(f"window_time: its event loop is closed, no window can end: {exc}")
            closed.__cause__ = exc
            self.fail(closed)

    def arm_on_loop(self, when: float) -> None:
        """``_arm`` handed over to the loop's thread."""
        clock = self.clock
        if clock is not None and not self.cancelled:
            self.handle = self.loop.call_at(when, clock.tick, when)

    def on_tick(self, when: float) -> None:
        """The period that began ``period`` before ``when`` is over (on the loop's thread)."""
        self.handle = None
        if self.cancelled:
            self.clock = None
            return
        with self.lock:
            # after an error the open window fails: no cut may complete it (the lock orders them)
            group = self.open.pop(self.index, None) if self.error is None else None
            self.index += 1
            if group is not None:
                group.closed = True
                if not group.marked:
                    group.marked = True
                    self.dirty.append(group)
        if not self.done:
            self._arm(when + self.period)
        self.drain()

    def on_complete(self) -> None:
        super().on_complete()
        self._stop_clock()  # no element comes any more: nothing left to cut

    def _end_all(self, error: BaseException | None, *, keep_cut: bool) -> None:
        self._stop_clock()
        super()._end_all(error, keep_cut=keep_cut)

    def _cancel_upstream(self) -> None:
        self._stop_clock()  # no element comes any more: nothing left to cut
        super()._cancel_upstream()

    def _stop_clock(self) -> None:
        """Cancel the armed cut, from any thread, and let the loop forget this operator (3.13)."""
        clock, self.clock = self.clock, None
        if clock is not None:
            clock.owner = None
        handle, self.handle = self.handle, None
        if handle is not None:
            if on_loop_thread(self.loop):
                handle.cancel()
            else:
                try:
                    self.loop.call_soon_threadsafe(handle.cancel)
                except RuntimeError:
                    pass  # the loop is closed: its timers never run


class _Clock:
    """The callbacks the loop holds for a ``window_time``; cut from it when the stream ends."""

    __slots__ = ("owner",)

    def __init__(self, owner: _TimedWindowing[Any]) -> None:
        self.owner: _TimedWindowing[Any] | None = owner

    def arm(self, when: float) -> None:
        owner = self.owner
        if owner is not None:
            owner.arm_on_loop(when)

    def tick(self, when: float) -> None:
        owner = self.owner
        if owner is not None:
            owner.on_tick(when)
