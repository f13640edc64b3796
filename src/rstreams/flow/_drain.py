"""The drain loop that ``concat_map``, ``flat_map`` and ``merge`` share (reactor's WIP/drain).

Theory of operation (rules 1.3, 2.7 and 3.3). Signals come from the upstream, from inner
Publishers (possibly on other threads) and from the downstream's ``request``/``cancel``.
Each only records what happened (an element into a deque, a flag, added demand) and
calls :meth:`DrainSubscriber.drain`, which bumps a lock-protected work counter. Whoever
moves the counter from 0 to 1 runs the drain loop; everybody else returns at once, and
the loop repeats until the counter shows no missed work. So:

* every signal to the downstream and every call on the upstream's or an inner's
  Subscription is made by the drain loop, serially (rules 1.3 and 2.7);
* a ``request`` made inside ``on_next`` only adds demand: no recursion (rule 3.3);
* ``cancel``, an illegal ``request`` (rule 3.9) and errors are recorded too, and acted on
  by the loop: the first error cancels everything else and is signalled once (rule 4.2);
  later ones go to :func:`rstreams.errors.report_unhandled`.

Two shortcuts keep an element from paying for a whole loop pass:

* :meth:`DrainSubscriber.call`: while the loop calls a source's ``request`` (or an inner
  Publisher's ``subscribe``), that source's synchronous signals only record; the loop
  looks at the source right after the call returns.
* :meth:`DrainSubscriber.offer` (reactor's ``tryEmit``): an element that arrives when
  nobody drains, nothing is queued before it and there is demand, is emitted at once by
  the thread that brought it, holding the work counter like the loop would.

Each inner Publisher's Subscriber is an :class:`InnerSubscriber`: it records its signals
for the loop and wakes it, except from inside a call the loop makes (see ``call``).
"""

from __future__ import annotations

import abc
import threading
from collections import deque
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.errors import report_unhandled
from rstreams.rules import check_error

__all__ = [
    "DRAIN",
    "EMIT",
    "NONE_ITEM",
    "OUTER",
    "QUEUED",
    "DrainSubscriber",
    "InnerSubscriber",
    "as_publisher",
    "check_prefetch",
    "signal_terminal",
]

T = TypeVar("T")
R = TypeVar("R")
_A = TypeVar("_A")
P = TypeVar("P", bound="DrainSubscriber[Any, Any]")

QUEUED, DRAIN, EMIT = 0, 1, 2
"""What :meth:`DrainSubscriber.offer` did with an element."""
OUTER = object()
"""``DrainSubscriber.calling`` while the drain loop calls the upstream's Subscription."""

NONE_ITEM = "rule 2.13: on_next(None) is illegal; None is never a stream element"


def check_prefetch(operator: str, name: str, value: object) -> int:
    """``value`` as a positive int, or ``TypeError``/``ValueError`` naming the operator."""
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{operator}: {name} needs an int, got {value!r}")
    if value < 1:
        raise ValueError(f"{operator}: {name} needs an int >= 1, got {value}")
    return value


def as_publisher(operator: str, value: object, item: object) -> Publisher[R]:
    """``fn(item)``'s result, checked to be a Publisher (anything with ``subscribe``)."""
    if value is None or not callable(getattr(value, "subscribe", None)):
        raise TypeError(f"{operator}: fn({item!r}) must return a Publisher, got {value!r}")
    return value  # type: ignore[return-value]


class DrainSubscriber(Subscriber[T], Subscription, Generic[T, R]):
    """The drain machinery ``concat_map`` and ``flat_map`` share (see the module docstring).

    It is the upstream's Subscriber and the downstream's Subscription. Subclasses write
    ``on_next`` (record, then :meth:`drain`), :meth:`_pass` (all the work, run only by
    the drain loop) and :meth:`_clear` (cancel and drop everything).
    """

    __slots__ = (
        "_cancelled",
        "_downstream",
        "_error",
        "_lock",
        "_outer_done",
        "_requested",
        "_started",
        "_upstream",
        "_upstream_cancelled",
        "_wip",
        "calling",
    )

    name = "concat_map"
    """The operator, for error reports."""

    def __init__(self, downstream: Subscriber[R]) -> None:
        self._downstream = downstream
        self._upstream: Subscription | None = None
        self._lock = threading.Lock()
        self._wip = 0  # work in progress: > 0 while a thread runs the drain loop
        self._requested = 0  # outstanding downstream demand, minus what the loop emitted
        self._outer_done = False
        self._error: BaseException | None = None  # the first error, for the loop to signal
        self._cancelled = False  # cancelled or terminated: the drain loop only cleans up
        self._upstream_cancelled = False
        self._started = False  # the first request upstream is made
        self.calling: object | None = None  # see call()

    # -- upstream -> this -------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self._upstream, subscription):
            return
        self._upstream = subscription
        self._downstream.on_subscribe(self)
        self.drain()  # the first request upstream is made from the drain loop (rule 2.7)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self._outer_done:  # a second terminal signal (rule 1.7): nobody can receive it
            report_unhandled(error, f"{self.name}: an error after the upstream had terminated")
            return
        self._outer_done = True
        self.fail(error)

    def on_complete(self) -> None:
        if self._outer_done:
            return
        self._outer_done = True
        if self.calling is not OUTER:
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
        self.drain_loop()

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
            report_unhandled(error, f"{self.name}: an error after the stream had ended")

    def call(self, who: object, method: Callable[[_A], object], arg: _A) -> None:
        """``method(arg)`` from the drain loop, ``who`` being the source it calls.

        A synchronous source signals from inside that call; ``who``'s signals then only
        record their news and skip :meth:`drain` (a lock round trip), because the loop
        looks at everything ``who`` can change right after the call returns. The
        signaller writes before it reads ``calling``; the loop clears ``calling`` before
        it looks, so a signal from another thread is never missed.
        """
        self.calling = who
        try:
            method(arg)
        finally:
            self.calling = None

    def drain(self) -> None:
        """Note new work; run the drain loop unless another thread already does."""
        with self._lock:
            self._wip += 1
            if self._wip != 1:
                return
        self.drain_loop()

    def offer(self, item: R, queue: deque[R]) -> int:
        """An inner's element: :data:`EMIT` it now, or queue it (:data:`QUEUED`, :data:`DRAIN`).

        The fast path (reactor's ``tryEmit``): when nobody drains, nothing is queued before
        it and there is demand, the signalling thread takes the drain and emits at once,
        then calls :meth:`after_fast`. Otherwise the element joins ``queue`` under the
        lock, so a drainer about to leave cannot miss it; :data:`DRAIN` means nobody was
        draining and the caller must run :meth:`drain_loop`.
        """
        with self._lock:
            wip = self._wip
            self._wip = wip + 1
            if not wip and not queue and self._requested > 0 and not self._cancelled and self._error is None:
                return EMIT
            queue.append(item)
            return QUEUED if wip else DRAIN

    def after_fast(self, *, loop: bool = False) -> None:
        """Leave the drain after one direct emission; run the loop if work was missed (or ``loop``)."""
        with self._lock:
            if self._requested != demand.UNBOUNDED:
                self._requested -= 1
            if not loop:
                self._wip -= 1
                if self._wip == 0:
                    return
            missed = self._wip
        self.drain_loop(missed)

    def drain_loop(self, missed: int = 1) -> None:
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

    def emit(self, item: R) -> None:
        """``on_next`` downstream; a Subscriber that raises is cancelled and reported (rule 2.13)."""
        try:
            self._downstream.on_next(item)
        except Exception as exc:
            self._cancelled = True
            report_unhandled(exc, f"{type(self._downstream).__name__}.on_next")
            self.drain()  # counted as missed work: the loop runs and cleans up

    def _stopping(self) -> bool:
        """Clean up after a cancel, or signal the first error; true if the pass must end."""
        if self._cancelled:
            self._clear()
            return True
        error = self._error
        if error is not None:
            self._cancelled = True
            self._clear()
            signal_terminal(self._downstream, error)
            return True
        return False

    def _start(self, n: int) -> bool:
        """Make the first request upstream, once; true if it was made now."""
        upstream = self._upstream
        if self._started or upstream is None:
            return False
        self._started = True
        self.call(OUTER, upstream.request, n)
        return True

    def _complete(self) -> None:
        self._cancelled = True
        signal_terminal(self._downstream, None)

    def _cancel_upstream(self) -> None:
        if not self._upstream_cancelled:
            self._upstream_cancelled = True
            if not self._outer_done and self._upstream is not None:
                self._upstream.cancel()

    @abc.abstractmethod
    def _pass(self, emitted: int) -> int:
        """Do all the work there is; return the number of elements emitted so far."""

    @abc.abstractmethod
    def _clear(self) -> None:
        """Cancel the upstream and the inners, drop what is queued (rules 3.13, 4.2)."""


class InnerSubscriber(Subscriber[R], Generic[R, P]):
    """Subscriber to one inner Publisher of a drain operator (``concat_map``, ``flat_map``).

    It records signals for the ``parent``'s drain loop and wakes the loop, except from
    inside a call the loop makes: the loop looks at everything right after such a call
    returns (see :meth:`DrainSubscriber.call`). What every such inner does the same way
    lives here: ``on_subscribe``, ``on_error``, ``on_complete`` and ``cancel``. Subclasses
    write ``on_next``: how an element is queued or emitted.
    """

    __slots__ = ("cancelled", "done", "parent", "subscription")

    def __init__(self, parent: P) -> None:
        self.parent = parent
        self.subscription: Subscription | None = None
        self.done = False
        self.cancelled = False

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.subscription, subscription):
            return
        self.subscription = subscription
        if self.cancelled:  # the parent ended while this inner was being subscribed
            subscription.cancel()
            return
        calling = self.parent.calling
        if calling is not self and calling is not OUTER:  # see DrainSubscriber.call
            self.parent.drain()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:  # late, after a cancel (rule 3.12): nobody can receive it
            report_unhandled(error, f"{self.parent.name}: an inner Publisher's error after it was cancelled")
            return
        self.done = True
        self.parent.fail(error)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        calling = self.parent.calling
        if calling is not self and calling is not OUTER:
            self.parent.drain()

    def cancel(self) -> None:
        """Called by the parent's drain loop: stop this inner, once."""
        was_done, self.done = self.done, True
        self.cancelled = True
        subscription = self.subscription
        if subscription is not None and not was_done:
            subscription.cancel()


def signal_terminal(subscriber: Subscriber[Any], error: BaseException | None) -> None:
    """``on_error(error)``, or ``on_complete()`` for ``None``; a raise is reported (rule 2.13)."""
    try:
        if error is None:
            subscriber.on_complete()
        else:
            subscriber.on_error(error)
    except Exception as exc:
        where = "on_complete" if error is None else "on_error"
        report_unhandled(exc, f"{type(subscriber).__name__}.{where}")
