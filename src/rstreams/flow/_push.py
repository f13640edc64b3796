"""Sources that cannot be slowed down: :class:`PushSource`, :func:`from_push`, overflow strategies.

A producer such as a clock, a sensor or a GUI callback calls ``push(item)`` whenever it
likes, from any thread; rule 1.1 still forbids sending more than was requested, so the
specification leaves two choices, "buffer or drop". :class:`OverflowStrategy` names them:

* ``DROP``: hold up to ``capacity`` undelivered elements (default 0), drop the newest.
* ``LATEST``: hold up to ``capacity`` (default 1), drop the oldest: the latest survive.
* ``BUFFER``: hold up to ``capacity`` (default 256); one more fails that subscriber's
  stream with :class:`~rstreams.errors.OverflowStrategyError` (RxJava's default).
* ``ERROR``: ``BUFFER`` with capacity 0: an element that finds no demand is an error.

Elements already covered by demand never count against ``capacity``. Every element a
strategy throws away, including the one that overflowed, adds one to ``dropped``. An
error (``fail`` or an overflow) and ``complete`` arrive after the elements buffered
before them, so nothing accepted is lost; rule 1.4 lets them arrive without demand.

Theory of operation (:class:`BufferedSubscription`): the drain loop of
:mod:`rstreams.flow._drain` (rules 1.3 and 3.3); its lock guards the queue and the demand
too. ``offer`` with demand, an empty queue and the loop idle delivers on the producer's
thread at once, holding the loop (the fast path); otherwise it queues or applies the
strategy. Whoever finds the loop idle with work to do (``offer``, ``request``,
``finish``) runs it and emits outside the lock until demand or queue run out; everyone
else only updates the bookkeeping and returns. So signals are serial, ``request``
inside ``on_next`` never recurses, and the lock is never held in user code.
"""

from __future__ import annotations

import enum
import reprlib
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import OverflowStrategyError, ResourceClosedError, report_unhandled
from rstreams.flow._drain import DrainLoop
from rstreams.flow._signals import report_broken, signal_subscribe, signal_terminal
from rstreams.rules import check_item, check_subscriber

__all__ = ["BufferedSubscription", "OverflowStrategy", "PushHub", "from_push", "resolve_capacity"]

T = TypeVar("T")
H = TypeVar("H", bound="PushHub[Any]")


class OverflowStrategy(enum.Enum):
    """What to do with an element that finds neither demand nor buffer room (rule 1.1)."""

    DROP = "drop"
    LATEST = "latest"
    BUFFER = "buffer"
    ERROR = "error"


_DEFAULT_CAPACITY = {
    OverflowStrategy.DROP: 0,
    OverflowStrategy.LATEST: 1,
    OverflowStrategy.BUFFER: 256,
    OverflowStrategy.ERROR: 0,
}


def resolve_capacity(overflow: OverflowStrategy, capacity: int | None, who: str) -> int:
    """Check ``overflow``/``capacity`` when ``who`` (a source or operator) is built; ``None``
    means the default. The errors name ``who`` and the argument."""
    if not isinstance(overflow, OverflowStrategy):
        raise TypeError(
            f"{who}(overflow=) needs an OverflowStrategy (e.g. OverflowStrategy.DROP), got {overflow!r}"
        )
    if capacity is None:
        return _DEFAULT_CAPACITY[overflow]
    if type(capacity) is not int or capacity < 0:
        raise ValueError(f"{who}(capacity=) needs an int >= 0, got {capacity!r}")
    if overflow is OverflowStrategy.LATEST and capacity < 1:
        raise ValueError(
            f"{who}(overflow=LATEST) keeps the latest elements, so it needs capacity >= 1, got 0"
        )
    if overflow is OverflowStrategy.ERROR and capacity:
        raise ValueError(
            f"{who}(overflow=ERROR) buffers nothing; use overflow=BUFFER with capacity={capacity}"
        )
    return capacity


class BufferedSubscription(DrainLoop, Subscription, Generic[T]):
    """One subscriber's demand, buffer and overflow strategy; fed by ``offer``/``finish``.

    ``on_detach`` is called once, outside the lock, when this subscription stops accepting
    elements for good (cancelled, terminated, overflowed, or its subscriber broke a rule).
    ``name`` and ``what`` word the overflow error: "interval: tick 3 arrived without demand".
    """

    __slots__ = (
        "_capacity",
        "_detached",
        "_error",
        "_finished",
        "_name",
        "_on_detach",
        "_queue",
        "_requested",
        "_stopped",
        "_strategy",
        "_subscriber",
        "_terminal",
        "_what",
        "dropped",
    )

    def __init__(
        self,
        subscriber: Subscriber[T],
        overflow: OverflowStrategy,
        capacity: int,
        name: str,
        on_detach: Callable[[BufferedSubscription[T]], object] | None = None,
        what: str = "element",
    ) -> None:
        self._subscriber: Subscriber[T] | None = subscriber
        self._what = what
        self._strategy = overflow
        self._capacity = capacity
        self._name = name
        self._on_detach = on_detach
        self._detached = False
        self.init_drain(held=True)  # nobody may emit before on_subscribe has returned (1.3)
        self._queue: deque[T] = deque()
        self._requested = 0
        self._stopped = False  # cancelled or terminal signal sent: emit nothing more
        self._finished = False  # the producer ended; ``_terminal`` says how
        self._terminal: BaseException | None = None
        self._error: BaseException | None = None  # a rule 3.9 error to deliver first
        self.dropped = 0

    # -- the subscriber's side ------------------------------------------------------

    def start(self) -> None:
        """Signal ``on_subscribe`` (rule 1.9), then emit whatever is already due."""
        subscriber = self._subscriber
        assert subscriber is not None
        if not signal_subscribe(subscriber, self):  # rule 2.13: consider it cancelled
            self.cancel()
            return
        self.leave()

    def request(self, n: int) -> None:
        """Add demand (rule 3.17) or record a rule 3.9 error; emit if nobody is emitting."""
        if self._stopped:
            return  # rule 3.6: a no-op after cancel or a terminal signal
        problem = demand.invalid(n)
        with self.lock:
            if problem is not None:
                if self._error is None:
                    self._error = problem
            else:
                self._requested = demand.add(self._requested, n)
            if not self._note_work():
                return
        self.drain_loop()

    def cancel(self) -> None:
        """Stop, drop the subscriber (rule 3.13) and the buffer; idempotent (rule 3.7)."""
        with self.lock:
            if self._stopped:
                return
            self._stop()
        self._detach()

    # -- the producer's side --------------------------------------------------------

    def offer(self, item: T) -> None:
        """One element from the producer: deliver, queue, or apply the overflow strategy."""
        overflowed = drain = False
        with self.lock:
            if self._finished or self._stopped:
                return
            queue = self._queue
            requested = self._requested
            if requested and not queue and not self.wip:  # the fast path: deliver here
                self.wip = 1
                if requested != demand.UNBOUNDED:
                    self._requested = requested - 1
                subscriber = self._subscriber
            else:
                subscriber = None
                if len(queue) - requested < self._capacity:  # room beyond the demand
                    queue.append(item)
                elif self._strategy is OverflowStrategy.DROP:
                    self.dropped += 1
                    return
                elif self._strategy is OverflowStrategy.LATEST:
                    del queue[requested]  # the oldest element that no demand covers
                    queue.append(item)
                    self.dropped += 1
                    return
                else:  # BUFFER or ERROR: this subscriber's stream fails after its buffer
                    self.dropped += 1
                    self._finished = True
                    self._terminal = self._overflow_error(item)
                    overflowed = True
                drain = self._note_work()
        if subscriber is None:
            if overflowed:
                self._detach()
            if drain:
                self.drain_loop()
            return
        try:
            subscriber.on_next(item)
        except Exception as exc:  # rule 2.13: consider the subscription cancelled
            self.cancel()
            report_broken(exc, subscriber, "on_next")
            return
        self.leave()

    def finish(self, error: BaseException | None, *, at_once: bool = False) -> None:
        """The producer ended: ``complete`` (``None``) or ``error``, after the buffered
        elements; with ``at_once`` an error goes ahead of them, and they are dropped."""
        with self.lock:
            if self._finished or self._stopped:
                return
            self._finished = True
            self._terminal = error
            if at_once and self._error is None:
                self._error = error  # delivered first, as a rule 3.9 error is
            if not self._note_work():
                return
        self.drain_loop()

    # -- internals ------------------------------------------------------------------

    def _overflow_error(self, item: T) -> OverflowStrategyError:
        try:
            shown = reprlib.repr(item)  # bounded: the element may be large
        except Exception:
            shown = f"<{type(item).__name__}>"
        return OverflowStrategyError(
            f"{self._name}: {self._what} {shown} arrived without demand and the buffer is full "
            f"(capacity={self._capacity}); rule 1.1 forbids sending it and "
            f"overflow={self._strategy.name} fails the stream. Request sooner, or pass "
            "overflow=OverflowStrategy.DROP or LATEST, or a larger capacity"
        )

    def _has_work(self) -> bool:  # call with the lock held
        return (
            self._error is not None
            or (bool(self._queue) and self._requested > 0)
            or (self._finished and not self._queue)
        )

    def _note_work(self) -> bool:  # call with the lock held; true: the caller runs the loop
        if not self.wip and not self._has_work():
            return False  # idle and nothing to do: no pass needed
        self.wip += 1
        return self.wip == 1

    def _stop(self) -> None:  # call with the lock held
        self._stopped = True
        self._subscriber = None  # rule 3.13
        self._queue.clear()

    def _detach(self) -> None:
        with self.lock:
            if self._detached:
                return
            self._detached = True
        if self._on_detach is not None:
            self._on_detach(self)

    def drain_pass(self) -> bool:
        """Emit while there is demand; the only place batches and terminal signals are sent."""
        subscriber = self._subscriber
        while subscriber is not None:
            terminal: BaseException | None = None
            batch: list[T] | None = None
            with self.lock:
                if self._stopped:
                    return True
                if self._error is not None:
                    terminal = self._error
                    self._stop()
                elif self._queue and self._requested:
                    queue = self._queue
                    n = min(self._requested, len(queue))
                    if n == len(queue):
                        batch = list(queue)
                        queue.clear()
                    else:
                        batch = [queue.popleft() for _ in range(n)]
                    if self._requested != demand.UNBOUNDED:
                        self._requested -= n
                elif self._finished and not self._queue:
                    terminal = self._terminal
                    self._stop()
                else:
                    return False
            if batch is None:
                self._detach()
                signal_terminal(subscriber, terminal)
                return True
            for item in batch:
                if self._subscriber is None:
                    return True  # cancelled meanwhile (rule 3.12 allows stopping mid-batch)
                try:
                    subscriber.on_next(item)
                except Exception as exc:  # rule 2.13: consider the subscription cancelled
                    self.cancel()
                    report_broken(exc, subscriber, "on_next")
                    return True
        return True


class PushHub(Publisher[T]):
    """The hot multicast core of :class:`rstreams.PushSource` (which adds the Flow methods)."""

    __slots__ = (
        "_capacity",
        "_closed",
        "_dispose",
        "_error",
        "_lock",
        "_overflow",
        "_retired",
        "_subscriptions",
    )

    def __init__(self, *, overflow: OverflowStrategy, capacity: int | None = None) -> None:
        self._capacity = resolve_capacity(overflow, capacity, type(self).__name__)
        self._overflow = overflow
        self._lock = threading.Lock()
        self._subscriptions: tuple[BufferedSubscription[T], ...] = ()
        self._closed = False
        self._error: BaseException | None = None
        self._retired = 0  # ``dropped`` of subscriptions no longer attached
        self._dispose: Callable[[], object] | None = None

    @property
    def dropped(self) -> int:
        """Elements thrown away by the overflow strategy, summed over all subscribers."""
        with self._lock:
            return self._retired + sum(s.dropped for s in self._subscriptions)

    @property
    def subscriber_count(self) -> int:
        """How many subscribers currently receive pushed elements."""
        return len(self._subscriptions)

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        subscription = BufferedSubscription(
            subscriber, self._overflow, self._capacity, "PushSource", self._detach
        )
        with self._lock:
            closed = self._closed
            if not closed:  # attached before on_subscribe: nothing pushed meanwhile is missed
                self._subscriptions = (*self._subscriptions, subscription)
        if closed:
            subscription.finish(self._error)
        subscription.start()

    def push(self, item: T) -> None:
        """Offer ``item`` to every subscriber; raises ``TypeError`` for ``None`` (rule 2.13)
        and :class:`~rstreams.errors.ResourceClosedError` after ``complete``/``fail``."""
        if item is None:
            check_item(item)  # raises the rule 2.13 TypeError
        if self._closed:
            raise ResourceClosedError(
                f"PushSource.push({item!r}) after complete() or fail(); the stream has ended"
            )
        for subscription in self._subscriptions:
            subscription.offer(item)

    def complete(self) -> None:
        """End the stream normally; subscribers get ``on_complete`` after their buffers.
        Idempotent: after the first ``complete``/``fail`` it does nothing."""
        self._close(None)

    def fail(self, error: BaseException) -> None:
        """End the stream with ``error``, delivered after the buffered elements (rule 1.4)."""
        if not isinstance(error, BaseException):
            raise TypeError(f"rule 2.13: fail() needs an exception instance, got {error!r}")
        self._close(error)

    def _close(self, error: BaseException | None) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._error = error
            subscriptions, self._subscriptions = self._subscriptions, ()
        for subscription in subscriptions:
            subscription.finish(error)
        with self._lock:  # finished subscriptions drop nothing more: count them now
            self._retired += sum(s.dropped for s in subscriptions)
        self._run_dispose()

    def _detach(self, subscription: BufferedSubscription[T]) -> None:
        with self._lock:
            subscriptions = self._subscriptions
            if subscription not in subscriptions:
                return
            self._subscriptions = tuple(s for s in subscriptions if s is not subscription)
            self._retired += subscription.dropped
            idle = not self._subscriptions
        if idle:
            self._run_dispose()

    def _set_dispose(self, dispose: Callable[[], object]) -> None:
        """For :func:`from_push`: run ``dispose`` once the source is closed or left alone."""
        with self._lock:
            if not self._closed and self._subscriptions:
                self._dispose = dispose
                return
        dispose()

    def _run_dispose(self) -> None:
        with self._lock:
            dispose, self._dispose = self._dispose, None
        if dispose is not None:
            try:
                dispose()
            except Exception as exc:
                report_unhandled(exc, "from_push: the cleanup callable")


class _PushFlow(Publisher[T], Generic[T, H]):
    __slots__ = ("_capacity", "_make", "_overflow", "_register")

    def __init__(
        self,
        register: Callable[[H], Callable[[], object] | None],
        overflow: OverflowStrategy,
        capacity: int | None,
        make: Callable[..., H],
    ) -> None:
        self._register = register
        self._overflow = overflow
        self._capacity = capacity
        self._make = make

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        source = self._make(overflow=self._overflow, capacity=self._capacity)
        source.subscribe(subscriber)
        try:
            dispose = self._register(source)
        except Exception as exc:
            source.fail(exc)
            return
        if dispose is not None:
            source._set_dispose(dispose)


def from_push(
    register: Callable[[H], Callable[[], object] | None],
    *,
    overflow: OverflowStrategy,
    capacity: int | None = None,
    make: Callable[..., H],
    who: str = "from_push",
) -> Publisher[T]:
    """The publisher behind :func:`rstreams.from_push`; ``make`` builds each subscription's hub
    (``who`` names the public function in the errors about ``overflow``/``capacity``)."""
    if not callable(register):
        raise TypeError(f"from_push(register) needs a callable taking the PushSource, got {register!r}")
    resolve_capacity(overflow, capacity, who)
    return _PushFlow(register, overflow, capacity, make)
