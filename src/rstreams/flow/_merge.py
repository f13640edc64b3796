"""``merge(*publishers)`` and ``flat_map(fn)``: elements of many Publishers, as they arrive.

Built on :class:`rstreams.flow._drain.DrainSubscriber` (the drain loop; its module tells
the theory of operation), with many inner Publishers at once. Inners may signal from
different threads at the same time; each has its own deque (at most ``prefetch``
elements, since that is all it is ever asked for), and only the thread holding the
drain signals the downstream or calls ``request``/``cancel`` on any Subscription
(rules 1.3 and 2.7). ``fn`` runs in the upstream's ``on_next``, on its thread.

* Demand: the downstream's outstanding demand is honoured exactly (rule 1.1). Each inner
  is asked for ``prefetch`` elements once subscribed and replenished in batches of
  ``prefetch - prefetch // 4`` as its elements go downstream.
* Concurrency: the upstream is asked for ``max_concurrency`` elements, then for one more
  each time an inner has completed and its queue is empty, so no more than
  ``max_concurrency`` inners are ever subscribed at once.
* Termination: complete when the upstream and every inner are done; the first error,
  wherever from, cancels every other Subscription and is signalled once (rule 4.2),
  dropping the elements queued (reactor's and RxJava's ``flatMap``/``merge`` do the same).
* ``delay_error=True`` (reactor's ``flatMapDelayError``/``mergeDelayError``, RxJava's
  ``delayErrors``): an error from the upstream or from an inner ends only that Publisher;
  the others run on, every queued element goes out, and the error comes instead of the
  completion: the one error itself, or a ``BaseExceptionGroup`` of all of them in the order
  they came. ``fn`` raising, an inner sending more than it was asked (rule 1.1) and an
  illegal ``request`` (rule 3.9) still end the stream at once.

``merge`` is ``flat_map`` over the static list of its Publishers, all subscribed at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber
from rstreams.errors import OverflowStrategyError, report_unhandled
from rstreams.flow._drain import (
    DRAIN,
    EMIT,
    OUTER,
    QUEUED,
    DrainSubscriber,
    InnerSubscriber,
    as_publisher,
    check_prefetch,
)
from rstreams.flow._iterable import empty, from_iterable
from rstreams.flow._operator import OperatorFlow, check_callable, check_publishers
from rstreams.flow._signals import NONE_ITEM, NextMany, next_many, report_broken, signal_terminal
from rstreams.rules import check_error

__all__ = ["FlatMapFlow", "merge"]

T = TypeVar("T")
R = TypeVar("R")


class FlatMapFlow(OperatorFlow[T, R]):
    """``source.flat_map(fn, ...)``; see :meth:`rstreams.Flow.flat_map`."""

    __slots__ = ("delay_error", "fn", "max_concurrency", "name", "prefetch")

    def __init__(
        self,
        source: Publisher[T],
        fn: Callable[[T], Publisher[R]],
        max_concurrency: int = 16,
        prefetch: int = 32,
        delay_error: bool = False,
        name: str = "flat_map",
    ) -> None:
        super().__init__(source)
        self.fn = check_callable(name, fn)
        self.max_concurrency = check_prefetch(name, "max_concurrency", max_concurrency)
        self.prefetch = check_prefetch(name, "prefetch", prefetch)
        self.delay_error = check_flag(name, "delay_error", delay_error)
        self.name = name

    def subscriber(self, downstream: Subscriber[R]) -> Subscriber[T]:
        return _FlatMapSubscriber(
            downstream, self.fn, self.max_concurrency, self.prefetch, self.delay_error, self.name
        )


def check_flag(operator: str, name: str, value: object) -> bool:
    """``value`` if it is a bool, else ``TypeError`` naming the operator and the option."""
    if not isinstance(value, bool):
        raise TypeError(f"{operator}({name}=...) needs True or False, got {value!r}")
    return value


def _identity(publisher: Publisher[T]) -> Publisher[T]:
    return publisher


def merge(
    *publishers: Publisher[T], prefetch: int = 32, delay_error: bool = False, name: str = "merge"
) -> Publisher[T]:
    """The publisher behind :func:`rstreams.merge` (``name``: the operator errors name)."""
    check_publishers(name, publishers)
    check_prefetch(name, "prefetch", prefetch)
    check_flag(name, "delay_error", delay_error)
    if not publishers:
        return empty()
    return FlatMapFlow(
        from_iterable(publishers),
        _identity,
        max_concurrency=len(publishers),
        prefetch=prefetch,
        delay_error=delay_error,
        name=name,
    )


class _Inner(InnerSubscriber[R, "_FlatMapSubscriber[Any, R]"]):
    """Subscriber to one inner Publisher: a bounded queue the parent's drain loop empties.

    ``started`` and ``consumed`` (elements passed on since the last replenishing
    request) belong to the drain loop.
    """

    __slots__ = ("consumed", "queue", "started")

    def __init__(self, parent: _FlatMapSubscriber[Any, R]) -> None:
        InnerSubscriber.__init__(self, parent)  # not super(): 0.1 µs more, per inner
        self.queue: deque[R] = deque()
        self.started = False
        self.consumed = 0

    def on_next(self, item: R) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.done:
            return
        parent = self.parent
        queue = self.queue
        calling = parent.calling
        if calling is self or calling is OUTER:  # see DrainSubscriber.call
            queue.append(item)
            how = QUEUED
        else:
            how = parent.offer(item, queue)
            if how == EMIT:
                parent.emit(item)
                self.consumed += 1
                parent.after_fast(loop=self.consumed >= parent.limit)  # the loop replenishes
                return
        if len(queue) > parent.prefetch:
            self.done = True
            parent.fail(
                OverflowStrategyError(
                    f"rule 1.1: an inner Publisher sent more than the {parent.prefetch} "
                    f"elements requested of it ({type(self.subscription).__name__})"
                )
            )
        if how == DRAIN:
            parent.drain_loop()

    def on_next_many(self, items: list[R]) -> None:
        """The batch signal (from ``group_by``'s groups). The fast path of :meth:`on_next`
        for a batch: when nobody drains, nothing of this inner is queued and there is demand,
        this thread takes the drain and hands what the demand allows downstream in one
        batch; the rest is queued for the loop. Otherwise the batch is queued under one lock."""
        if self.done:
            return
        parent = self.parent
        queue = self.queue
        calling = parent.calling
        if calling is self or calling is OUTER:  # see DrainSubscriber.call
            queue.extend(items)
            self._check_overflow()
            return
        many = parent.many
        with parent.lock:
            wip = parent.wip
            parent.wip = wip + 1
            requested = parent.requested
            fast = not wip and not queue and requested > 0 and many is not None
            fast = fast and not parent.cancelled and parent.error is None
            if not fast:
                queue.extend(items)
        if not fast:
            self._check_overflow()
            if not wip:
                parent.drain_loop()
            return
        assert many is not None
        n = len(items) if requested == demand.UNBOUNDED else min(len(items), requested)
        try:
            many(items if n == len(items) else items[:n])
        except Exception as exc:  # rule 2.13: consider the subscription cancelled
            parent.cancelled = True
            report_broken(exc, parent.downstream, "on_next_many")
        self.consumed += n
        with parent.lock:
            if parent.requested != demand.UNBOUNDED:
                parent.requested -= n
            if n < len(items):
                queue.extend(items[n:])
            if n == len(items) and self.consumed < parent.limit and not parent.cancelled:
                parent.wip -= 1
                if parent.wip == 0:
                    return
            missed = parent.wip
        parent.drain_loop(missed)  # the loop queues, replenishes or cleans up what is left

    def _check_overflow(self) -> None:
        if len(self.queue) > self.parent.prefetch:
            self.done = True
            self.parent.fail(
                OverflowStrategyError(
                    f"rule 1.1: an inner Publisher sent more than the {self.parent.prefetch} "
                    f"elements requested of it ({type(self.subscription).__name__})"
                )
            )

    def on_error(self, error: BaseException) -> None:
        parent = self.parent
        if not parent.delay_error:
            super().on_error(error)
            return
        check_error(error)
        if self.done:  # late, after a cancel (rule 3.12): nobody can receive it
            report_unhandled(error, f"{parent.name}: an inner Publisher's error after it was cancelled")
            return
        self.done = True  # like a completion: its queue still goes out
        parent.defer(error)

    def cancel(self) -> None:
        super().cancel()
        self.queue.clear()


class _FlatMapSubscriber(DrainSubscriber[T, R]):
    __slots__ = (
        "_fn",
        "_index",
        "_inners",
        "_max_concurrency",
        "delay_error",
        "delayed",
        "limit",
        "many",
        "name",
        "prefetch",
    )

    def __init__(
        self,
        downstream: Subscriber[R],
        fn: Callable[[T], Publisher[R]],
        max_concurrency: int,
        prefetch: int,
        delay_error: bool = False,
        name: str = "flat_map",
    ) -> None:
        super().__init__(downstream)
        self.name = name  # the operator (flat_map, merge, merge_with), for error reports
        self.delay_error = delay_error
        self.delayed: list[BaseException] = []  # delay_error: the errors waiting for the end
        self._fn = fn
        self._max_concurrency = max_concurrency
        self.prefetch = prefetch
        self.limit = prefetch - (prefetch >> 2)
        self._inners: tuple[_Inner[R], ...] = ()  # copy-on-write, replaced under the lock
        self._index = 0  # where the next round starts, so no inner is always served last
        self.many: NextMany | None = next_many(downstream)
        """``downstream.on_next_many`` when the downstream takes batches (rstreams' own stages)."""

    def on_error(self, error: BaseException) -> None:
        if not self.delay_error:
            super().on_error(error)
            return
        check_error(error)
        if self.done:  # a second terminal signal (rule 1.7): nobody can receive it
            report_unhandled(error, f"{self.name}: an error after the upstream had terminated")
            return
        self.done = True  # like a completion: the inners run on
        self.defer(error)

    def defer(self, error: BaseException) -> None:
        """``delay_error``: keep ``error`` for the end of the stream; report it if that is past."""
        with self.lock:
            late = self.cancelled
            if not late:
                self.delayed.append(error)
        if late:
            report_unhandled(error, f"{self.name}: an error after the stream had ended")
        else:
            self.drain()

    def _complete(self) -> None:
        """Everything has ended: complete, or signal the delayed errors instead."""
        delayed = self.delayed
        if not delayed:
            super()._complete()
            return
        self.cancelled = True
        self.delayed = []
        error = delayed[0]
        if len(delayed) > 1:
            error = BaseExceptionGroup(
                f"{self.name}(delay_error=True): {len(delayed)} Publishers failed", delayed
            )
        signal_terminal(self.downstream, error)

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        if self.cancelled or self.done or self.error is not None:
            return  # rule 3.12: late signals after cancel
        try:
            publisher: Publisher[R] = as_publisher("flat_map", self._fn(item), item)
        except Exception as exc:
            self.fail(exc)
            return
        inner: _Inner[R] = _Inner(self)
        with self.lock:
            self._inners = (*self._inners, inner)
        try:
            publisher.subscribe(inner)
        except Exception as exc:  # a Publisher that raises instead of signalling (rule 1.9)
            self.fail(exc)

    def _pass(self, emitted: int) -> int:
        """Do all the work there is; return the number of elements emitted so far."""
        while True:
            if self._stopping():
                return emitted
            if self._start(self._max_concurrency):
                continue
            outer_done = self.done  # read before the inners: on_next comes before on_complete
            inners = self._inners
            if not inners:
                if outer_done:
                    self._complete()
                return emitted
            emitted, finished = self._serve(inners, emitted)
            if finished:
                with self.lock:
                    self._inners = tuple(inner for inner in self._inners if inner not in finished)
                if not self.done and self.upstream is not None:
                    self.call(OUTER, self.upstream.request, len(finished))  # room for more inners
                continue
            return emitted

    def _serve(self, inners: tuple[_Inner[R], ...], emitted: int) -> tuple[int, list[_Inner[R]]]:
        """One round over the inners: start them, emit what demand allows, find finished ones.

        The hot path: kept in one function so that an element costs no extra call.
        """
        downstream = self.downstream
        limit = self.limit
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
                self.call(inner, subscription.request, self.prefetch)
            queue = inner.queue
            while True:
                if self.many is not None and len(queue) > 1:
                    emitted = self._serve_batch(inner, emitted)
                    if self.cancelled or self.error is not None:
                        return emitted, finished
                while queue:
                    requested = self.requested
                    if emitted >= requested and requested != demand.UNBOUNDED:
                        break
                    item = queue.popleft()
                    emitted += 1
                    try:
                        downstream.on_next(item)
                    except Exception as exc:  # rule 2.13: consider the subscription cancelled
                        self.cancelled = True
                        report_broken(exc, downstream, "on_next")
                    if self.cancelled or self.error is not None:
                        return emitted, finished
                    inner.consumed += 1
                if inner.consumed >= limit and not inner.done:  # replenish what was used
                    used, inner.consumed = inner.consumed, 0
                    self.call(inner, subscription.request, used)
                    continue  # a synchronous inner has delivered into the queue
                break
            if inner.done and not queue:  # done first: every element came before on_complete
                finished.append(inner)
        return emitted, finished

    def _serve_batch(self, inner: _Inner[R], emitted: int) -> int:
        """What the demand allows of ``inner``'s queue, in one batch signal downstream."""
        queue = inner.queue
        requested = self.requested
        want = len(queue) if requested == demand.UNBOUNDED else min(len(queue), requested - emitted)
        if want <= 0:
            return emitted
        if want == len(queue):
            batch = list(queue)
            queue.clear()
        else:
            batch = [queue.popleft() for _ in range(want)]
        assert self.many is not None
        try:
            self.many(batch)
        except Exception as exc:  # rule 2.13: consider the subscription cancelled
            self.cancelled = True
            report_broken(exc, self.downstream, "on_next_many")
        inner.consumed += want
        return emitted + want

    def _clear(self) -> None:
        """Cancel the upstream and every inner, drop what is queued (rules 3.13, 4.2); the
        errors ``delay_error`` kept can no longer be signalled, so they are reported."""
        with self.lock:
            inners, self._inners = self._inners, ()
            delayed, self.delayed = self.delayed, []
        for inner in inners:
            inner.cancel()
        self._cancel_upstream()
        for error in delayed:
            report_unhandled(
                error, f"{self.name}: an error delay_error kept, the stream having ended otherwise"
            )
