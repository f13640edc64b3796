"""Rate and threads: ``limit_rate``, ``on_backpressure_buffer``/``_drop``/``_latest``, ``subscribe_on``.

* ``limit_rate(high, low=)``: elements pass straight through; what changes is how demand
  goes upstream. The upstream never owes more than ``high`` elements, nor more than the
  downstream asked for; once ``low`` of them have arrived (``low`` defaults to three
  quarters of ``high``), up to ``low`` more are asked (reactor's replenishing prefetch).
  Requests and the cancel from the downstream's thread and requests from the upstream's
  ``on_next`` meet in a small drain loop, so calls on the upstream Subscription stay
  serial (rule 2.7) and a synchronous upstream never recurses (rule 3.3).
* ``on_backpressure_buffer(n, overflow=)``, ``on_backpressure_drop(on_drop=)``,
  ``on_backpressure_latest()``: for an upstream that cannot be slowed down. The upstream is
  asked for everything (``UNBOUNDED``) once the downstream has subscribed; the downstream
  gets ``from_push``'s :class:`~rstreams.flow._push.BufferedSubscription`, which delivers
  within its demand and holds the rest up to a bound, with the overflow behaviour of
  :class:`~rstreams.flow._push.OverflowStrategy`: ``ERROR``/``BUFFER`` fail the stream
  with :class:`~rstreams.errors.OverflowStrategyError` after the buffered elements (and
  cancel the upstream), ``DROP`` drops the newest, ``LATEST`` the oldest. An upstream
  error comes after the buffered elements, except for ``on_backpressure_latest``: the
  element it holds is one nobody asked for, and the error drops it (reactor's and
  RxJava's ``onBackpressureLatest``), as a completion does not.
* ``subscribe_on(target)``: the ``subscribe`` call to the upstream (and so whatever the
  upstream does in it) runs on an asyncio loop or an executor's thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Callable
from typing import Any, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.errors import LoopClosedError
from rstreams.flow._async_source import on_loop_thread
from rstreams.flow._drain import DrainLoop, check_prefetch
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_callable
from rstreams.flow._push import BufferedSubscription, OverflowStrategy, resolve_capacity
from rstreams.flow._signals import NONE_ITEM
from rstreams.rules import check_error, check_subscriber

__all__ = ["BackpressureFlow", "LimitRateFlow", "SubscribeOnFlow"]

T = TypeVar("T")


class LimitRateFlow(OperatorFlow[T, T]):
    """``source.limit_rate(high, low=)``; see :meth:`rstreams.Flow.limit_rate`."""

    __slots__ = ("high", "low")

    def __init__(self, source: Publisher[T], high: int, low: int | None) -> None:
        super().__init__(source)
        self.high = check_prefetch("limit_rate", "high", high)
        self.low = self.high - (self.high >> 2) if low is None else check_prefetch("limit_rate", "low=", low)
        if self.low > self.high:
            raise ValueError(f"limit_rate: low= needs low <= high, got high={self.high}, low={self.low}")

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _LimitRate(downstream, self.high, self.low)


class _Requests(DrainLoop):
    """The drain loop that makes every upstream ``request`` of one ``limit_rate`` subscriber."""

    __slots__ = ("parent",)

    def __init__(self, parent: _LimitRate[Any]) -> None:
        self.parent = parent
        self.init_drain()

    def drain_pass(self) -> bool:
        parent = self.parent
        upstream = parent.upstream
        while upstream is not None:
            with self.lock:
                cancel, bad = parent.cancelled, parent.bad
                parent.bad = None
                ask = 0 if cancel or bad is not None or parent.done else parent.take_ask()
            if cancel:
                upstream.cancel()
                return True  # for good: nothing is called on the upstream again
            if bad is not None:
                upstream.request(bad)  # the upstream signals rule 3.9 in its own order
            elif not ask:
                return False
            else:
                upstream.request(ask)
        return False


class _LimitRate(OperatorSubscriber[T, T]):
    """``wanted``: downstream demand not yet asked upstream; ``owed``: asked, not yet arrived."""

    __slots__ = ("bad", "cancelled", "high", "low", "owed", "requests", "wanted")

    def __init__(self, downstream: Subscriber[T], high: int, low: int) -> None:
        super().__init__(downstream)
        self.high = high
        self.low = low
        self.wanted = 0
        self.owed = 0
        self.bad: int | None = None  # an illegal request(n), for the request loop to pass on
        self.cancelled = False
        self.requests = _Requests(self)

    def take_ask(self) -> int:
        """How much to ask upstream now (under the request loop's lock)."""
        wanted = self.wanted
        if not wanted:
            return 0
        room = self.high - self.owed
        if room < self.low and self.owed:
            return 0  # wait until low have arrived
        ask = wanted if wanted < room else room
        if wanted != demand.UNBOUNDED:
            self.wanted = wanted - ask
        self.owed += ask
        return ask

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        requests = self.requests
        with requests.lock:
            self.owed -= 1
            replenish = self.high - self.owed >= self.low and self.wanted > 0
        self.downstream.on_next(item)
        if replenish:
            requests.drain()

    def request(self, n: int) -> None:
        requests = self.requests
        with requests.lock:
            if demand.invalid(n) is not None:
                self.bad = n
            else:
                self.wanted = demand.add(self.wanted, n)
        requests.drain()

    def cancel(self) -> None:
        """Through the request loop, so a cancel never overlaps a request (rule 2.7)."""
        if self.cancelled:
            return
        self.cancelled = self.done = True
        self.requests.drain()


class BackpressureFlow(OperatorFlow[T, T]):
    """``on_backpressure_buffer``/``_drop``/``_latest``: ``overflow`` with ``capacity``."""

    __slots__ = ("capacity", "error_at_once", "name", "on_drop", "overflow")

    def __init__(
        self,
        source: Publisher[T],
        name: str,
        overflow: OverflowStrategy,
        capacity: int,
        on_drop: Callable[[T], object] | None = None,
        *,
        error_at_once: bool = False,
    ) -> None:
        super().__init__(source)
        self.error_at_once = error_at_once  # an upstream error drops what is held
        self.name = name
        self.overflow = overflow
        self.capacity = capacity
        self.on_drop = on_drop

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _Backpressure(downstream, self)


def backpressure_buffer(source: Publisher[T], n: int, overflow: OverflowStrategy) -> BackpressureFlow[T]:
    """``on_backpressure_buffer(n, overflow=)`` with checked arguments."""
    capacity = check_prefetch("on_backpressure_buffer", "n", n)
    if overflow is OverflowStrategy.ERROR:
        overflow = OverflowStrategy.BUFFER  # ERROR holds nothing; here it means "fail past n"
    resolve_capacity(overflow, capacity, "on_backpressure_buffer")
    return BackpressureFlow(source, "on_backpressure_buffer", overflow, capacity)


def backpressure_drop(source: Publisher[T], on_drop: Callable[[T], object] | None) -> BackpressureFlow[T]:
    """``on_backpressure_drop(on_drop=)`` with checked arguments."""
    if on_drop is not None:
        check_callable("on_backpressure_drop", on_drop, "on_drop=")
    return BackpressureFlow(source, "on_backpressure_drop", OverflowStrategy.DROP, 0, on_drop)


class _Backpressure(OperatorSubscriber[T, T]):
    """Feeds a :class:`BufferedSubscription`, which is what the downstream holds."""

    __slots__ = ("at_once", "buffered", "on_drop")

    def __init__(self, downstream: Subscriber[T], flow: BackpressureFlow[T]) -> None:
        super().__init__(downstream)
        self.on_drop = flow.on_drop
        self.at_once = flow.error_at_once
        self.buffered: BufferedSubscription[T] = BufferedSubscription(
            downstream, flow.overflow, flow.capacity, flow.name, self._detached
        )

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.upstream, subscription):
            return
        self.upstream = subscription
        self.buffered.start()  # on_subscribe downstream; then what it requested flows
        if not self.done:
            subscription.request(demand.UNBOUNDED)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        buffered = self.buffered
        dropped = buffered.dropped
        buffered.offer(item)
        if self.on_drop is not None and buffered.dropped != dropped:
            try:
                self.on_drop(item)
            except Exception as error:  # rule 2.13: the user's hook ends the stream
                self.done = True
                if self.upstream is not None:
                    self.upstream.cancel()
                buffered.finish(error)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if not self.done:
            self.done = True
            self.buffered.finish(error, at_once=self.at_once)

    def on_complete(self) -> None:
        if not self.done:
            self.done = True
            self.buffered.finish(None)

    def _detached(self, _subscription: BufferedSubscription[T]) -> None:
        """The downstream cancelled, or the buffer overflowed: the upstream is no longer needed."""
        if not self.done:
            self.done = True
            if self.upstream is not None:
                self.upstream.cancel()


Target = asyncio.AbstractEventLoop | concurrent.futures.Executor


class SubscribeOnFlow(OperatorFlow[T, T]):
    """``source.subscribe_on(target)``; see :meth:`rstreams.Flow.subscribe_on`."""

    __slots__ = ("target",)

    def __init__(self, source: Publisher[T], target: Target) -> None:
        super().__init__(source)
        if not isinstance(target, asyncio.AbstractEventLoop | concurrent.futures.Executor):
            raise TypeError(
                "subscribe_on(target) needs an asyncio event loop or a concurrent.futures.Executor, "
                f"got {target!r}"
            )
        self.target = target

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        inner = self.subscriber(check_subscriber(subscriber))
        target = self.target
        try:
            if isinstance(target, concurrent.futures.Executor):
                target.submit(self.source.subscribe, inner)
            elif on_loop_thread(target):
                target.call_soon(self.source.subscribe, inner)
            else:
                target.call_soon_threadsafe(self.source.subscribe, inner)
        except RuntimeError as exc:  # shut down or closed: it can never subscribe (rule 1.9, then 1.4)
            closed = LoopClosedError(f"subscribe_on: cannot use {target!r}, it is closed or shut down: {exc}")
            closed.__cause__ = exc
            subscriber.on_subscribe(_Nothing())
            subscriber.on_error(closed)

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _PassThrough(downstream)


class _PassThrough(OperatorSubscriber[T, T]):
    __slots__ = ()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if not self.done:
            self.downstream.on_next(item)


class _Nothing(Subscription):
    __slots__ = ()

    def request(self, n: int) -> None:
        """Nothing to request: the stream already failed."""

    def cancel(self) -> None:
        """Nothing to cancel: the stream already failed."""
