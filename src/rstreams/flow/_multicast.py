"""``MulticastProcessor``: one upstream, many subscribers, paced by the slowest (rules 4.1, 4.2).

Theory of operation:

* The processor is a Subscriber to exactly one upstream (a second ``on_subscribe`` is
  cancelled, rule 2.5) and a Publisher to any number of subscribers, which may arrive
  before the upstream exists, while it runs, or after it ended.
* Elements go into one buffer (a list; ``_head`` is the absolute index of its first
  element). Each subscriber has a ``position``, the absolute index of the next element
  it takes, and its own demand. An element leaves the buffer once every current
  subscriber has taken it. A subscriber joins at the buffer's tail: it sees only the
  elements that arrive after it joined.
* Upstream demand: nothing is requested until some subscriber has demand. From then
  on the processor prefetches, keeping ``buffered + outstanding <= buffer_size``: it
  asks for ``buffer_size`` first, then for the free space each time at least three
  quarters of the window (``buffer_size - buffer_size // 4``) is free. Since the buffer cannot move past
  the slowest subscriber, the total requested upstream never exceeds what the slowest
  subscriber has taken plus ``buffer_size``: the slowest subscriber sets the pace, and
  a fast one runs at most ``buffer_size`` elements ahead of it.
* ``on_error`` from upstream reaches every subscriber at once, even with zero demand,
  and buffered elements are dropped (4.2), unless errors are ordered (below).
  ``on_complete`` reaches each subscriber after the buffered elements it can still take,
  or at once if none are left for it. A subscriber that arrives after the end gets
  ``on_subscribe`` and then the end.
* ``replay=n``: the buffer also keeps the last ``n`` elements every subscriber has taken,
  and a subscriber joins ``n`` elements before the tail (or at the oldest one kept), so it
  sees up to ``n`` earlier elements first, within its own demand. The replayed elements
  do not count against ``buffer_size``: the pace is still set by what the slowest
  current subscriber has not taken yet; after a completion a subscriber gets them and
  then the completion, after an error only the error (4.2).
* :meth:`Multicast.on_error` with ``ordered_errors`` (the ``replay(n)`` operator, a
  Publisher rather than a Processor to its users): the upstream's error is part of the
  history, as a completion is: each subscriber gets it after the buffered elements it can
  still take (at once if none are left for it), and one that joins after it gets the
  last ``n`` and then the error, as reactor's and RxJava's ``replay`` do. The processor's
  own errors (rule 1.1 broken upstream, ``auto_cancel``) still come at once.
* ``auto_cancel=True`` (the default): when the last subscriber cancels, the processor
  cancels its upstream (or the upstream it gets later) and ends; later subscribers get
  ``on_error(ResourceClosedError)``. With ``auto_cancel=False`` the upstream is kept;
  nothing more is requested until a subscriber with demand arrives, and elements that
  arrive meanwhile (at most ``buffer_size``) are dropped.
* Serial signals (1.3) and bounded re-entrancy (3.3): the drain loop of
  :mod:`rstreams.flow._drain`. Every event (an element, a terminal, a ``request``, a
  ``cancel``, a subscriber joining) is recorded under the loop's lock and counted;
  whoever finds the loop idle runs it on its own thread, which delivers to all
  subscribers and repeats while events were missed. The lock guards only bookkeeping;
  no user code runs while it is held. The loop alone calls the upstream's ``request`` and
  ``cancel``, so those calls are serial whichever thread decided them (2.7).
"""

from __future__ import annotations

from typing import Generic, TypeVar

from rstreams import demand
from rstreams.api import Processor, Subscriber, Subscription
from rstreams.errors import OverflowStrategyError, ResourceClosedError
from rstreams.flow._drain import DrainLoop
from rstreams.flow._signals import NONE_ITEM, report_broken, signal_subscribe, signal_terminal
from rstreams.rules import check_error, check_subscriber

__all__ = ["Multicast"]

T = TypeVar("T")


class Multicast(DrainLoop, Processor[T, T], Generic[T]):
    """The processor behind :class:`rstreams.MulticastProcessor` (which adds the Flow methods)."""

    __slots__ = (
        "_auto_cancel",
        "_buffer",
        "_buffer_size",
        "_cancelling",
        "_done",
        "_error",
        "_head",
        "_limit",
        "_ordered",
        "_ordered_errors",
        "_outstanding",
        "_replay",
        "_subscribed",
        "_subscribers",
        "_upstream",
    )

    def __init__(self, *, buffer_size: int = 256, auto_cancel: bool = True, replay: int = 0) -> None:
        for name, value in (("buffer_size", buffer_size), ("replay", replay)):
            if type(value) is not int:
                raise TypeError(f"MulticastProcessor({name}=...) needs an int, got {value!r}")
        if buffer_size <= 0:
            raise ValueError(f"MulticastProcessor(buffer_size=...) needs an int > 0, got {buffer_size!r}")
        if replay < 0:
            raise ValueError(f"MulticastProcessor(replay=...) needs an int >= 0, got {replay!r}")
        self._buffer_size = buffer_size
        self._replay = replay
        self._limit = buffer_size - buffer_size // 4
        self._auto_cancel = auto_cancel
        self.init_drain()
        self._upstream: Subscription | None = None
        self._cancelling: Subscription | None = None  # to cancel on the loop's thread (2.7)
        self._subscribed = False  # an upstream subscription was ever accepted (2.5)
        self._outstanding = 0  # requested upstream, not yet received
        self._buffer: list[T] = []
        self._head = 0  # absolute index of _buffer[0]
        self._subscribers: tuple[_MulticastSubscription[T], ...] = ()
        self._done = False  # upstream ended, failed, broke rule 1.1, or was auto-cancelled
        self._error: BaseException | None = None
        self._ordered = False  # the error waits behind the buffered elements
        self._ordered_errors = False  # set by the replay(n) operator: see the module's docstring

    @property
    def subscriber_count(self) -> int:
        """Subscribers currently attached (not cancelled, not yet terminated)."""
        return len(self._subscribers)

    # -- Publisher side ---------------------------------------------------------------

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        inner = _MulticastSubscription(self, subscriber)
        if not signal_subscribe(subscriber, inner):  # rule 2.13: consider it cancelled
            inner.downstream = None
            return
        with self.lock:
            if inner.downstream is None:
                return  # cancelled inside on_subscribe
            inner.position = max(self._head, self._head + len(self._buffer) - self._replay)
            self._subscribers += (inner,)
            if not self._enter():
                return
        self.drain_loop()

    # -- Subscriber side (upstream -> this) -------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None) is illegal; pass a Subscription")
        with self.lock:
            reject = self._subscribed or self._done
            self._subscribed = True
            if not reject:
                self._upstream = subscription
                owner = self._enter()
        if reject:
            subscription.cancel()  # rule 2.5, or the processor already ended (auto_cancel)
        elif owner:
            self.drain_loop()

    def on_next(self, item: T) -> None:
        if item is None:
            raise TypeError(NONE_ITEM)
        lock = self.lock
        lock.acquire()  # the hot path: acquire/release cost half of a with-block here
        try:
            if self._done:
                return  # late element after a cancel (3.12) or a terminal
            outstanding = self._outstanding
            if outstanding:
                self._outstanding = outstanding - 1
                self._buffer.append(item)
                self.wip += 1
                if self.wip != 1:
                    return
        finally:
            lock.release()
        if outstanding:
            self.drain_loop()
            return
        self._terminate(
            OverflowStrategyError(
                f"rule 1.1: MulticastProcessor's upstream sent {item!r} without outstanding demand"
            ),
            cancel_upstream=True,
        )

    def on_error(self, error: BaseException) -> None:
        self._terminate(check_error(error), cancel_upstream=False, ordered=self._ordered_errors)

    def on_complete(self) -> None:
        self._terminate(None, cancel_upstream=False)

    # -- internals --------------------------------------------------------------------

    def _enter(self) -> bool:
        """Under the lock: count an event; True when the caller must run the loop."""
        self.wip += 1
        return self.wip == 1

    def _terminate(
        self, error: BaseException | None, *, cancel_upstream: bool, ordered: bool = False
    ) -> None:
        with self.lock:
            if self._done:
                return
            self._done = True
            self._error = error
            self._ordered = ordered
            upstream, self._upstream = self._upstream, None
            if cancel_upstream:
                self._cancelling = upstream
            owner = self._enter()
        if owner:
            self.drain_loop()

    def _remove(self, inner: _MulticastSubscription[T], *, cancelled: bool) -> None:
        """Detach ``inner``; if it cancelled and was the last one, apply auto_cancel."""
        with self.lock:
            if inner not in self._subscribers:
                return
            self._subscribers = tuple(s for s in self._subscribers if s is not inner)
            if cancelled and self._auto_cancel and not self._subscribers and not self._done:
                self._done = True
                self._error = ResourceClosedError(
                    "MulticastProcessor cancelled its upstream when its last subscriber cancelled "
                    "(auto_cancel=True); create a new processor, or pass auto_cancel=False"
                )
                self._cancelling, self._upstream = self._upstream, None
            owner = self._enter()
        if owner:
            self.drain_loop()

    def drain_pass(self) -> bool:
        """Deliver, trim the buffer, request or cancel upstream.

        The upstream is asked while this thread still holds the loop: elements it sends
        synchronously from ``request`` are only queued, and the next pass delivers them (3.3).
        A cancel decided on another thread (the last subscriber leaving, rule 1.1 broken) is
        made here too, so calls on the upstream's Subscription never overlap (2.7).
        """
        self._deliver()
        with self.lock:
            cancelling, self._cancelling = self._cancelling, None
            upstream, n = self._trim_and_plan()
        if cancelling is not None:
            cancelling.cancel()
        elif upstream is not None:
            upstream.request(n)
        return False

    def _deliver(self) -> None:
        """One pass over the subscribers. Reads the terminal state before the tail, so that
        a completion seen here comes after every element it could see (1.3 from upstream)."""
        done, error = self._done, self._error
        at_once = error is not None and not self._ordered
        buffer = self._buffer
        head = self._head
        tail = head + len(buffer)
        for inner in self._subscribers:
            downstream = inner.downstream
            if downstream is None:
                continue
            bad = inner.bad_request
            if bad is not None or (done and at_once):
                inner.downstream = None
                self._remove(inner, cancelled=bad is not None)
                signal_terminal(downstream, bad if bad is not None else error)
                continue
            position = inner.position
            if position < tail:
                requested = inner.requested
                n = tail - position
                if requested != demand.UNBOUNDED:
                    n = min(n, requested - inner.emitted)
                if n > 0:
                    start = position - head
                    count = 0
                    for item in buffer[start : start + n]:
                        if inner.downstream is None:
                            break  # cancelled from inside on_next
                        try:
                            downstream.on_next(item)
                        except Exception as exc:  # rule 2.13: consider it cancelled
                            inner.downstream = None
                            self._remove(inner, cancelled=True)
                            report_broken(exc, downstream, "on_next")
                            break
                        count += 1
                    inner.position = position = position + count
                    inner.emitted += count
            if done and position == tail and inner.downstream is not None:
                inner.downstream = None
                self._remove(inner, cancelled=False)
                signal_terminal(downstream, error)  # a completion, or an error kept in order

    def _trim_and_plan(self) -> tuple[Subscription | None, int]:
        """Under the lock: drop what every subscriber has taken; say what to request upstream."""
        subscribers = self._subscribers
        buffer = self._buffer
        head = self._head
        tail = head + len(buffer)
        if not subscribers:
            low = tail
        elif len(subscribers) == 1:
            low = subscribers[0].position
        else:
            low = min([s.position for s in subscribers])
        keep = min(low, tail - self._replay)  # the last ``replay`` elements stay for late subscribers
        if keep > head:
            del buffer[: keep - head]
            self._head = keep
        free = self._buffer_size - (tail - low) - self._outstanding
        upstream = self._upstream
        if free < self._limit or upstream is None or self._done or not subscribers:
            return None, 0
        if not any(s.requested > s.emitted for s in subscribers):
            return None, 0  # nobody wants anything yet: do not prefetch for nobody
        self._outstanding += free
        return upstream, free


class _MulticastSubscription(Subscription, Generic[T]):
    """One subscriber's link to the processor: its demand and its place in the buffer."""

    __slots__ = ("bad_request", "downstream", "emitted", "parent", "position", "requested")

    def __init__(self, parent: Multicast[T], downstream: Subscriber[T]) -> None:
        self.parent = parent
        self.downstream: Subscriber[T] | None = downstream  # None once cancelled or ended (3.13)
        self.requested = 0  # summed, saturating (3.17); only ever grows
        self.emitted = 0  # delivered; only the drain changes it
        self.position = 0  # absolute index of the next element to take
        self.bad_request: BaseException | None = None  # rule 3.9, for the drain to deliver

    def request(self, n: int) -> None:
        if self.downstream is None:
            return  # rules 3.6 and 1.7: no-op after cancel or a terminal signal
        problem = demand.invalid(n)
        parent = self.parent
        with parent.lock:
            if problem is None:
                self.requested = demand.add(self.requested, n)
            elif self.bad_request is None:
                self.bad_request = problem
            if not parent._enter():
                return
        parent.drain_loop()

    def cancel(self) -> None:
        if self.downstream is None:
            return
        self.downstream = None
        self.parent._remove(self, cancelled=True)
