"""Recovering from errors: ``retry``, ``retry_when``, ``on_error_resume``, ``on_error_return``.

Each is an :class:`~rstreams.flow._operator.OperatorFlow` whose inner subscriber can *switch
upstreams*: when the current upstream signals ``on_error``, the operator decides whether to
go on, and if so subscribes to the next Publisher (the same source again for ``retry``, the
fallback for ``on_error_resume``) instead of passing the error on. Demand carries over
exactly: the operator counts what the downstream requested and what it delivered, and asks
the next upstream for the difference (nothing is re-requested, nothing is lost; rule 1.1
holds across the switch). The downstream sees one subscription and one terminal signal.

Rules kept:

* 1.3 and 3.3: a source that fails synchronously inside ``subscribe`` does not recurse;
  re-subscriptions run in a loop (a trampoline), however many attempts are allowed.
* 2.5: a second ``on_subscribe`` while an upstream is active is cancelled.
* 3.9: an illegal ``request(n)`` goes to the current upstream, which signals it (and that
  error is never recovered from); between two upstreams the operator signals it itself.
* 2.13: a ``predicate`` or ``fn`` that raises ends the stream with that exception (the
  upstream's error attached as ``__context__``).
* ``cancel`` stops everything: the current upstream, and a retry waiting for its backoff.

Backoff (``retry``/``retry_when``): attempt ``k`` (1, 2, ...) waits
``min(backoff * 2**(k-1), max_backoff)``, scaled by a random factor in
``[1 - jitter, 1 + jitter]``, on an asyncio loop (``loop=``, or the running loop at
subscribe time). ``backoff=0`` re-subscribes at once, on the thread of the failure.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.flow._async_source import check_loop, resolve_loop
from rstreams.flow._iterable import just
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber, check_callable
from rstreams.flow._signals import NONE_ITEM
from rstreams.rules import check_error, check_subscriber

__all__ = ["Backoff", "OnErrorResumeFlow", "RetryFlow", "on_error_return"]

T = TypeVar("T")


class Backoff:
    """How long attempt ``k`` waits: exponential from ``backoff``, capped, with jitter."""

    __slots__ = ("base", "cap", "jitter", "random")

    def __init__(self, operator: str, base: object, cap: object, jitter: object) -> None:
        self.base = _seconds(operator, "backoff", base)
        self.cap = _seconds(operator, "max_backoff", cap)
        if isinstance(jitter, bool) or not isinstance(jitter, int | float):
            raise TypeError(f"{operator}(jitter=) needs a fraction 0 <= jitter <= 1, got {jitter!r}")
        if not 0 <= jitter <= 1:
            raise ValueError(f"{operator}(jitter=) needs a fraction 0 <= jitter <= 1, got {jitter!r}")
        self.jitter = float(jitter)
        self.random: Callable[[], float] = random.random

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt ``attempt`` (1-based); 0 means at once."""
        if self.base == 0:
            return 0.0
        seconds = min(self.base * 2.0 ** min(attempt - 1, 64), self.cap)
        return seconds * (1 + self.jitter * (2 * self.random() - 1))


def _seconds(operator: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{operator}({name}=) needs a number of seconds, got {value!r}")
    if value < 0 or value != value:  # NaN is no number of seconds
        raise ValueError(f"{operator}({name}=) needs seconds >= 0, got {value!r}")
    return float(value)


class RetryFlow(OperatorFlow[T, T]):
    """``retry``/``retry_when``: re-subscribe to the source after an error the policy accepts."""

    __slots__ = ("backoff", "loop", "name", "predicate", "times")

    def __init__(
        self,
        source: Publisher[T],
        name: str,
        times: int,
        predicate: Callable[[BaseException], object] | None,
        backoff: Backoff,
        loop: asyncio.AbstractEventLoop | None,
    ) -> None:
        super().__init__(source)
        check_loop(loop, name)
        self.name = name
        self.times = times
        self.predicate = predicate
        self.backoff = backoff
        self.loop = loop

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        if self.backoff.base > 0:
            found = resolve_loop(self.loop, self.name)
            if isinstance(found, RuntimeError):  # no loop for the backoff timer: refuse here
                subscriber.on_subscribe(_Nothing())
                subscriber.on_error(found)
                return
            self.source.subscribe(_Retrying(subscriber, self, found))
            return
        self.source.subscribe(_Retrying(subscriber, self, None))

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _Retrying(downstream, self, self.loop)


class OnErrorResumeFlow(OperatorFlow[T, T]):
    """``on_error_resume(fn)``: on the first error, continue with the Publisher ``fn(error)``."""

    __slots__ = ("fn",)

    def __init__(self, source: Publisher[T], fn: Callable[[BaseException], Publisher[T]]) -> None:
        super().__init__(source)
        self.fn = check_callable("on_error_resume", fn)

    def subscriber(self, downstream: Subscriber[T]) -> Subscriber[T]:
        return _Resuming(downstream, self.fn)


def on_error_return(source: Publisher[T], value: T) -> OnErrorResumeFlow[T]:
    """``on_error_return(value)``: on an error, emit ``value`` (when requested) and complete."""
    if value is None:
        raise TypeError("on_error_return(value): None is never an element (rule 2.13); pick a sentinel")
    fallback = just(value)
    return OnErrorResumeFlow(source, lambda _error: fallback)


class _Switching(OperatorSubscriber[T, T], Generic[T]):
    """An inner subscriber whose upstream may be replaced after an error (see the module)."""

    __slots__ = ("_again", "_lock", "_looping", "_next", "bad_request", "delivered", "requested", "started")

    def __init__(self, downstream: Subscriber[T]) -> None:
        super().__init__(downstream)
        self.many = None  # one element at a time: every delivery is counted
        self._lock = threading.Lock()
        self.requested = 0
        self.delivered = 0
        self.started = False
        self._looping = False
        self._again = False
        self._next: Publisher[T] | None = None
        self.bad_request = False

    def next_source(self, error: BaseException) -> Publisher[T] | None:
        """The Publisher to continue with after ``error``, or ``None`` to pass the error on."""
        raise NotImplementedError  # pragma: no cover - both subclasses override it

    # -- upstream -> this -------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        with self._lock:
            refuse = self.done or self.upstream is not None
            if not refuse:
                self.upstream = subscription
                outstanding = demand.sub(self.requested, self.delivered)
        if refuse:
            subscription.cancel()  # rule 2.5, or cancelled meanwhile
            return
        if not self.started:
            self.started = True
            self.downstream.on_subscribe(self)
        elif outstanding > 0:
            subscription.request(outstanding)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        if self.requested != demand.UNBOUNDED:
            self.delivered += 1
        self.downstream.on_next(item)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:
            return
        with self._lock:
            self.upstream = None
        if self.bad_request:  # the upstream signals our downstream's illegal request (3.9): no recovery
            self._terminate(error)
            return
        try:
            following = self.next_source(error)
        except Exception as raised:
            raised.__context__ = error
            self._terminate(raised)
            return
        if following is None:
            self._terminate(error)
            return
        self.switch_to(following)

    def _terminate(self, error: BaseException) -> None:
        if self.done:
            return
        self.done = True
        self.downstream.on_error(error)

    def switch_to(self, source: Publisher[T]) -> None:
        """Subscribe to ``source`` next, in a loop so that synchronous failures do not recurse."""
        self._next = source
        if self._looping:
            self._again = True
            return
        self._looping = True
        try:
            while True:
                self._again = False
                following, self._next = self._next, None
                if self.done or following is None:
                    return
                following.subscribe(self)
                if not self._again:
                    return
        finally:
            self._looping = False

    # -- downstream -> this -----------------------------------------------------------

    def request(self, n: int) -> None:
        problem = demand.invalid(n)
        with self._lock:
            if problem is None:
                self.requested = demand.add(self.requested, n)
            else:
                self.bad_request = True
            upstream = self.upstream
        if upstream is not None:
            upstream.request(n)  # an illegal n too: the upstream signals it in its own order (3.9)
        elif problem is not None:
            self.fail(problem)

    def cancel(self) -> None:
        with self._lock:
            if self.done:
                return
            self.done = True
            upstream, self.upstream = self.upstream, None
        if upstream is not None:
            upstream.cancel()
        self.cancelled()

    def cancelled(self) -> None:
        """Hook: the downstream cancelled (a retry stops its backoff timer)."""


class _Retrying(_Switching[T]):
    __slots__ = ("_timer", "attempts", "flow", "loop")

    def __init__(
        self, downstream: Subscriber[T], flow: RetryFlow[T], loop: asyncio.AbstractEventLoop | None
    ) -> None:
        super().__init__(downstream)
        self.flow = flow
        self.loop = loop
        self.attempts = 0
        self._timer: asyncio.TimerHandle | asyncio.Handle | None = None

    def next_source(self, error: BaseException) -> Publisher[T] | None:
        flow = self.flow
        if self.attempts >= flow.times:
            return None
        if flow.predicate is not None and not flow.predicate(error):
            return None
        self.attempts += 1
        return flow.source

    def switch_to(self, source: Publisher[T]) -> None:
        delay = self.flow.backoff.delay(self.attempts)
        loop = self.loop
        if delay <= 0 or loop is None:
            super().switch_to(source)
            return
        loop.call_soon_threadsafe(self._arm, loop, delay, source)

    def _arm(self, loop: asyncio.AbstractEventLoop, delay: float, source: Publisher[T]) -> None:
        if not self.done:
            self._timer = loop.call_later(delay, self._fire, source)

    def _fire(self, source: Publisher[T]) -> None:
        self._timer = None
        _Switching.switch_to(self, source)

    def cancelled(self) -> None:
        timer, loop = self._timer, self.loop
        if timer is not None and loop is not None:
            loop.call_soon_threadsafe(timer.cancel)


class _Resuming(_Switching[T]):
    __slots__ = ("fn", "resumed")

    def __init__(self, downstream: Subscriber[T], fn: Callable[[BaseException], Publisher[T]]) -> None:
        super().__init__(downstream)
        self.fn = fn
        self.resumed = False

    def next_source(self, error: BaseException) -> Publisher[T] | None:
        if self.resumed:
            return None  # the fallback's own error goes on
        self.resumed = True
        fallback = self.fn(error)
        if not isinstance(fallback, Publisher):
            raise TypeError(f"on_error_resume(fn): fn must return a Publisher, it returned {fallback!r}")
        return fallback


class _Nothing(Subscription):
    __slots__ = ()

    def request(self, n: int) -> None:
        """Nothing to request: the stream already failed."""

    def cancel(self) -> None:
        """Nothing to cancel: the stream already failed."""
