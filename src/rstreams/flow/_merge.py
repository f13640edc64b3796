"""``merge(*publishers)`` and ``flat_map(fn)``: elements of many Publishers, as they arrive.

Theory of operation: the WIP/drain pattern of :mod:`rstreams.flow._concat_map`, with
many inner Publishers at once. Inners may signal from different threads at the same
time; each only appends to its own deque (at most ``prefetch`` elements, since that is
all it is ever asked for) and calls :meth:`_FlatMapSubscriber.drain`. The one thread
that wins the lock-protected work counter runs the drain loop, which alone signals the
downstream and calls ``request``/``cancel`` on every Subscription (rules 1.3 and 2.7).
A ``request`` made inside ``on_next`` only adds demand (rule 3.3).

* Demand: the downstream's outstanding demand is honoured exactly (rule 1.1). Each inner
  is asked for ``prefetch`` elements once subscribed and replenished in batches of
  ``prefetch - prefetch // 4`` as its elements go downstream.
* Concurrency: the upstream is asked for ``max_concurrency`` elements, then for one more
  each time an inner has completed and its queue is empty, so no more than
  ``max_concurrency`` inners are ever subscribed at once.
* Termination: complete when the upstream and every inner are done; the first error,
  wherever from, cancels every other Subscription and is signalled once (rule 4.2).

``merge`` is ``flat_map`` over the static list of its Publishers, all subscribed at once.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.errors import OverflowStrategyError, report_unhandled
from rstreams.flow._concat_map import as_publisher, check_prefetch, signal_terminal
from rstreams.flow._flow import Flow
from rstreams.flow._iterable import empty, from_iterable
from rstreams.rules import check_error, check_subscriber

__all__ = ["FlatMapFlow", "merge"]

T = TypeVar("T")
R = TypeVar("R")

_NONE_ITEM = "rule 2.13: on_next(None) is illegal; None is never a stream element"


class FlatMapFlow(Flow[R]):
    """``source.flat_map(fn, ...)``; see :meth:`rstreams.Flow.flat_map`."""

    __slots__ = ("_fn", "_max_concurrency", "_prefetch", "_source")

    def __init__(
        self,
        source: Publisher[T],
        fn: Callable[[T], Publisher[R]],
        max_concurrency: int = 16,
        prefetch: int = 32,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"flat_map(fn) needs a callable, got {fn!r}")
        self._max_concurrency = check_prefetch("flat_map", "max_concurrency", max_concurrency)
        self._prefetch = check_prefetch("flat_map", "prefetch", prefetch)
        self._source = source
        self._fn = fn

    def subscribe(self, subscriber: Subscriber[R]) -> None:
        self._source.subscribe(
            _FlatMapSubscriber(check_subscriber(subscriber), self._fn, self._max_concurrency, self._prefetch)
        )


def _identity(publisher: Publisher[T]) -> Publisher[T]:
    return publisher


def merge(*publishers: Publisher[T], prefetch: int = 32) -> Flow[T]:
    """The elements of all ``publishers``, interleaved as they arrive.

    Every Publisher is subscribed at once, each buffered up to ``prefetch`` elements.
    Completes when all have completed; the first error cancels the others and is passed
    on. ``merge()`` with no Publishers completes at once.
    """
    for publisher in publishers:
        as_publisher("merge", publisher, publisher)
    check_prefetch("merge", "prefetch", prefetch)
    if not publishers:
        return empty()
    return FlatMapFlow(
        from_iterable(publishers), _identity, max_concurrency=len(publishers), prefetch=prefetch
    )


class _Inner(Subscriber[R]):
    """Subscriber to one inner Publisher: a bounded queue the parent's drain loop empties.

    ``started`` and ``consumed`` (elements passed on since the last replenishing
    request) belong to the drain loop.
    """

    __slots__ = ("cancelled", "consumed", "done", "parent", "queue", "started", "subscription")

    def __init__(self, parent: _FlatMapSubscriber[Any, R]) -> None:
        self.parent = parent
        self.queue: deque[R] = deque()
        self.subscription: Subscription | None = None
        self.done = False
        self.cancelled = False
        self.started = False
        self.consumed = 0

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.subscription, subscription):
            return
        self.subscription = subscription
        if self.cancelled:  # the parent ended while this inner was being subscribed
            subscription.cancel()
            return
        self.parent.drain()

    def on_next(self, item: R) -> None:
        if item is None:
            raise TypeError(_NONE_ITEM)
        if self.done:
            return
        queue = self.queue
        queue.append(item)
        if len(queue) > self.parent.prefetch:
            self.done = True
            self.parent.fail(
                OverflowStrategyError(
                    f"rule 1.1: an inner Publisher sent more than the {self.parent.prefetch} "
                    f"elements requested of it ({type(self.subscription).__name__})"
                )
            )
            return
        self.parent.drain()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:  # late, after a cancel (rule 3.12): nobody can receive it
            report_unhandled(error, "flat_map/merge: an inner Publisher's error after it was cancelled")
            return
        self.done = True
        self.parent.fail(error)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        self.parent.drain()

    def cancel(self) -> None:
        was_done, self.done = self.done, True
        self.cancelled = True
        self.queue.clear()
        subscription = self.subscription
        if subscription is not None and not was_done:
            subscription.cancel()


class _FlatMapSubscriber(Subscriber[T], Subscription, Generic[T, R]):
    __slots__ = (
        "_cancelled",
        "_downstream",
        "_error",
        "_fn",
        "_index",
        "_inners",
        "_limit",
        "_lock",
        "_max_concurrency",
        "_outer_done",
        "_requested",
        "_started",
        "_upstream",
        "_upstream_cancelled",
        "_wip",
        "prefetch",
    )

    def __init__(
        self, downstream: Subscriber[R], fn: Callable[[T], Publisher[R]], max_concurrency: int, prefetch: int
    ) -> None:
        self._downstream = downstream
        self._fn = fn
        self._max_concurrency = max_concurrency
        self.prefetch = prefetch
        self._limit = prefetch - (prefetch >> 2)
        self._upstream: Subscription | None = None
        self._lock = threading.Lock()
        self._wip = 0
        self._requested = 0
        self._inners: tuple[_Inner[R], ...] = ()  # copy-on-write, replaced under the lock
        self._index = 0  # where the next pass starts, so no inner is always served last
        self._outer_done = False
        self._error: BaseException | None = None
        self._cancelled = False  # cancelled or terminated: the drain loop only cleans up
        self._upstream_cancelled = False
        self._started = False

    # -- upstream -> this -------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self._upstream, subscription):
            return
        self._upstream = subscription
        self._downstream.on_subscribe(self)
        self.drain()  # the first request upstream is made from the drain loop (rule 2.7)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(_NONE_ITEM)
        if self._cancelled or self._outer_done or self._error is not None:
            return  # rule 3.12: late signals after cancel
        try:
            publisher: Publisher[R] = as_publisher("flat_map", self._fn(item), item)
        except Exception as exc:
            self.fail(exc)
            return
        inner: _Inner[R] = _Inner(self)
        with self._lock:
            self._inners = (*self._inners, inner)
        try:
            publisher.subscribe(inner)
        except Exception as exc:  # a Publisher that raises instead of signalling (rule 1.9)
            self.fail(exc)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self._outer_done:  # a second terminal signal (rule 1.7): nobody can receive it
            report_unhandled(error, "flat_map/merge: an error after the upstream had terminated")
            return
        self._outer_done = True
        self.fail(error)

    def on_complete(self) -> None:
        if self._outer_done:
            return
        self._outer_done = True
        self.drain()

    # -- downstream -> this -----------------------------------------------------------

    def request(self, n: int) -> None:
        if self._cancelled:
            return  # rule 3.6
        problem = demand.invalid(n)
        with self._lock:
            if problem is not None:
                if self._error is None:
                    self._error = problem  # signalled by the drain loop (rules 3.9, 1.3)
            else:
                self._requested = demand.add(self._requested, n)
            self._wip += 1
            if self._wip != 1:
                return
        self._drain_loop()

    def cancel(self) -> None:
        if self._cancelled:
            return  # rule 3.7
        self._cancelled = True
        self.drain()

    # -- the drain loop ---------------------------------------------------------------

    def fail(self, error: BaseException) -> None:
        """Record the first error for the drain loop; report any later one."""
        with self._lock:
            first = self._error is None and not self._cancelled
            if first:
                self._error = error
        if first:
            self.drain()
        else:
            report_unhandled(error, "flat_map/merge: an error after the stream had ended")

    def drain(self) -> None:
        with self._lock:
            self._wip += 1
            if self._wip != 1:
                return
        self._drain_loop()

    def _drain_loop(self) -> None:
        missed = 1
        emitted = 0
        while True:
            emitted = self._pass(emitted)
            with self._lock:
                if emitted and self._requested != demand.UNBOUNDED:
                    self._requested -= emitted
                emitted = 0
                self._wip -= missed
                missed = self._wip
                if missed == 0:
                    return

    def _pass(self, emitted: int) -> int:
        """Do all the work there is; return the number of elements emitted so far."""
        while True:
            if self._cancelled:
                self._clear()
                return emitted
            error = self._error
            if error is not None:
                self._cancelled = True
                self._clear()
                signal_terminal(self._downstream, error)
                return emitted
            if not self._started and self._upstream is not None:
                self._started = True
                self._upstream.request(self._max_concurrency)
                continue
            outer_done = self._outer_done  # read before the inners: on_next comes before on_complete
            inners = self._inners
            if not inners:
                if outer_done:
                    self._cancelled = True
                    signal_terminal(self._downstream, None)
                return emitted
            emitted, finished = self._serve(inners, emitted)
            if finished:
                with self._lock:
                    self._inners = tuple(inner for inner in self._inners if inner not in finished)
                if not self._outer_done and self._upstream is not None:
                    self._upstream.request(len(finished))  # room for more inners
                continue
            return emitted

    def _serve(self, inners: tuple[_Inner[R], ...], emitted: int) -> tuple[int, list[_Inner[R]]]:
        """One round over the inners: start them, emit what demand allows, find finished ones.

        The hot path: kept in one function so that an element costs no extra call.
        """
        downstream = self._downstream
        limit = self._limit
        finished: list[_Inner[R]] = []
        count = len(inners)
        start = self._index % count
        self._index = start + 1
        for k in range(count):
            inner = inners[(start + k) % count]
            subscription = inner.subscription
            if subscription is None or inner.cancelled:
                continue
            if not inner.started:
                inner.started = True
                subscription.request(self.prefetch)
            queue = inner.queue
            while queue:
                requested = self._requested
                if emitted >= requested and requested != demand.UNBOUNDED:
                    break
                item = queue.popleft()
                emitted += 1
                try:
                    downstream.on_next(item)
                except Exception as exc:  # rule 2.13: consider the subscription cancelled
                    self._cancelled = True
                    report_unhandled(exc, f"{type(downstream).__name__}.on_next")
                    return emitted, finished
                if self._cancelled or self._error is not None:
                    return emitted, finished
                inner.consumed += 1
                if inner.consumed == limit and not inner.done:
                    inner.consumed = 0
                    subscription.request(limit)
            if inner.done and not queue:  # done first: every element came before on_complete
                finished.append(inner)
        return emitted, finished

    def _clear(self) -> None:
        """Cancel the upstream and every inner, drop what is queued (rules 3.13, 4.2)."""
        with self._lock:
            inners, self._inners = self._inners, ()
        for inner in inners:
            inner.cancel()
        if not self._upstream_cancelled:
            self._upstream_cancelled = True
            if not self._outer_done and self._upstream is not None:
                self._upstream.cancel()
