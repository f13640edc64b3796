"""``switch_map(fn)``: each element becomes a Publisher that replaces (cancels) the previous one.

Built on :class:`rstreams.flow._drain.DrainSubscriber` (its module tells the theory of
operation). ``fn`` runs in the upstream's ``on_next``, on its thread; the Publisher it
returns waits as ``pending`` (a newer one replaces it unsubscribed) until the drain loop
cancels the current inner, drops what it had queued and subscribes the new one.

* Demand: the current inner is asked for the downstream's outstanding demand, at most
  :data:`~rstreams.flow._concat_map.INNER_WINDOW` owed at a time (asked again at half),
  so its queue never outgrows that window; whatever a cancelled inner still owed is
  asked of the next one. The upstream is asked for ``prefetch`` elements once the
  downstream first requests, and for ``prefetch - prefetch // 4`` more each time that
  many were mapped (its elements are never queued: the newest replaces the rest).
* Termination: complete when the upstream and the last inner are done; the first error,
  from the upstream, ``fn`` or the current inner, cancels everything and is signalled
  once (rule 4.2). An error of the upstream or of the current inner comes after the
  elements that inner already sent (all within the demand, as in ``concat_map``); a
  Publisher mapped but not yet switched to is dropped. A replaced inner's elements are
  dropped; its late error is reported (:func:`rstreams.errors.report_unhandled`), as for
  any cancelled inner.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber
from rstreams.flow._concat_map import INNER_WINDOW
from rstreams.flow._drain import OUTER, DrainSubscriber, InnerSubscriber, as_publisher, check_prefetch
from rstreams.flow._operator import OperatorFlow, check_callable
from rstreams.flow._signals import NONE_ITEM, report_broken

__all__ = ["SwitchMapFlow"]

T = TypeVar("T")
R = TypeVar("R")


class SwitchMapFlow(OperatorFlow[T, R]):
    """``source.switch_map(fn, prefetch=32)``; see :meth:`rstreams.Flow.switch_map`."""

    __slots__ = ("fn", "prefetch")

    def __init__(self, source: Publisher[T], fn: Callable[[T], Publisher[R]], prefetch: int = 32) -> None:
        super().__init__(source)
        self.fn = check_callable("switch_map", fn)
        self.prefetch = check_prefetch("switch_map", "prefetch", prefetch)

    def subscriber(self, downstream: Subscriber[R]) -> Subscriber[T]:
        return _SwitchMapSubscriber(downstream, self.fn, self.prefetch)


class _Inner(InnerSubscriber[R, "_SwitchMapSubscriber[Any, R]"]):
    """Subscriber to one inner Publisher; ``asked``/``taken`` belong to the drain loop."""

    __slots__ = ("asked", "queue", "taken")

    ordered = True  # asked only within the downstream's demand: its elements go before its error

    def __init__(self, parent: _SwitchMapSubscriber[Any, R]) -> None:
        InnerSubscriber.__init__(self, parent)
        self.queue: deque[R] = deque()
        self.asked = 0
        self.taken = 0

    def on_next(self, item: R) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return  # replaced, or cancelled (rule 3.12)
        self.queue.append(item)
        calling = self.parent.calling
        if calling is not self and calling is not OUTER:
            self.parent.drain()


class _SwitchMapSubscriber(DrainSubscriber[T, R]):
    __slots__ = ("_failure", "_fn", "_limit", "_mapped", "_prefetch", "inner", "pending")

    name = "switch_map"

    def __init__(self, downstream: Subscriber[R], fn: Callable[[T], Publisher[R]], prefetch: int) -> None:
        super().__init__(downstream)
        self._fn = fn
        self._prefetch = prefetch
        self._limit = prefetch - (prefetch >> 2)
        self._mapped = 0  # upstream elements mapped since the last replenishing request
        self.pending: Publisher[R] | None = None
        self.inner: _Inner[R] | None = None
        self._failure: BaseException | None = None  # the upstream's error (see _before_error)

    def on_error(self, error: BaseException) -> None:
        if not self.done:
            self._failure = error
        super().on_error(error)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.cancelled or self.done or self.error is not None:
            return  # rule 3.12: late signals after cancel
        try:
            publisher: Publisher[R] = as_publisher("switch_map", self._fn(item), item)
        except Exception as exc:
            self.fail(exc)
            return
        with self.lock:
            self.pending = publisher
            self._mapped += 1
        if self.calling is not OUTER:
            self.drain()

    def _pass(self, emitted: int) -> int:
        """Do all the work there is; return the number of elements emitted so far."""
        downstream = self.downstream
        while True:
            if self._stopping():
                return emitted
            if self.requested and self._start(self._prefetch):
                continue
            outer_done = self.done  # read before pending: on_next comes before on_complete
            with self.lock:
                pending, self.pending = self.pending, None
                mapped = self._mapped
                if mapped >= self._limit:
                    self._mapped = 0
            if mapped >= self._limit and not self.done and self.upstream is not None:
                self.call(OUTER, self.upstream.request, mapped)
            if pending is not None and self.error is None:  # with an error: dropped
                self._switch(pending)
                continue
            inner = self.inner
            if inner is None:
                if outer_done:
                    self._complete()
                return emitted
            queue = inner.queue
            requested = self.requested
            if queue and (emitted < requested or requested == demand.UNBOUNDED):
                inner.taken += 1
                emitted += 1
                try:
                    downstream.on_next(queue.popleft())
                except Exception as exc:  # rule 2.13: consider the subscription cancelled
                    self.cancelled = True
                    report_broken(exc, downstream, "on_next")
                continue
            if inner.done:  # done first: every element came before on_complete
                if not queue:
                    self.inner = None
                    if inner.failure is not None:
                        self.fail(inner.failure)
                    continue
                return emitted
            if self._ask(inner, emitted):
                continue
            return emitted

    def _before_error(self) -> bool:
        """An upstream error waits behind what the current inner already sent, as in
        ``concat_map`` (within the demand, so it goes out at once); the inner is cancelled
        now. An error of ``fn`` or of a request does not wait."""
        inner = self.inner
        if inner is None or not inner.queue or self.error is not self._failure:
            return False
        if not inner.cancelled:
            inner.cancel()
        return True

    def _ask(self, inner: _Inner[R], emitted: int) -> bool:
        """Top the inner's window up to the outstanding demand; ``True`` if it was asked."""
        subscription = inner.subscription
        owed = inner.asked - inner.taken
        if subscription is None or owed > INNER_WINDOW // 2:
            return False
        requested = self.requested
        outstanding = INNER_WINDOW if requested == demand.UNBOUNDED else requested - emitted
        want = min(outstanding, INNER_WINDOW) - owed
        if want <= 0:
            return False
        inner.asked += want
        self.call(inner, subscription.request, want)
        return True

    def _switch(self, publisher: Publisher[R]) -> None:
        """Cancel the current inner, drop its queue, subscribe the new one."""
        old, self.inner = self.inner, None
        if old is not None and old.failure is not None:
            self.fail(old.failure)  # it failed before it was replaced: the error wins
            return
        if old is not None:
            old.cancel()
            old.queue.clear()
        inner: _Inner[R] = _Inner(self)
        self.inner = inner
        try:
            self.call(inner, publisher.subscribe, inner)
        except Exception as exc:  # a Publisher that raises instead of signalling (rule 1.9)
            self.fail(exc)

    def _clear(self) -> None:
        """Cancel the upstream and the inner, drop what is queued (rules 3.13, 4.2)."""
        self.pending = None
        inner, self.inner = self.inner, None
        if inner is not None:
            inner.cancel()
            inner.queue.clear()
        self._cancel_upstream()
