"""The work-in-progress drain loop (reactor's WIP/drain), and the operators built on it.

:class:`DrainLoop` is the one loop every queueing source, boundary and operator in
:mod:`rstreams.flow` runs: the iterable sources, ``from_push``'s subscriptions,
``observe_on``, the multicast processor, and through :class:`DrainSubscriber`
``concat_map``, ``flat_map`` and ``merge``.

Theory of operation (rules 1.3, 2.7 and 3.3). A signal, from whichever thread, only
records what happened (an element into a queue, a flag, added demand) and calls
:meth:`DrainLoop.drain`, which bumps a lock-protected work counter (``wip``). Whoever
moves the counter from 0 to 1 runs the loop (:meth:`DrainLoop.drain_loop`, or on a
target of its choice: :meth:`DrainLoop.start_drain`); everybody else returns at once.
The loop makes a pass (:meth:`DrainLoop.drain_pass`: all the work there is), then, under
the lock, settles its bookkeeping (:meth:`DrainLoop.settle`) and subtracts the work it
saw; it repeats until no work was missed. So:

* every signal downstream and every call on an upstream Subscription is made by the
  thread that holds the loop, serially (rules 1.3 and 2.7);
* a ``request`` made inside ``on_next`` only adds demand: no recursion (rule 3.3);
* a pass that ends the stream for good returns ``True``: the counter is then never
  released, so nothing runs again (later signals only count);
* a loop may be created *held* (``wip`` = 1) so that nothing is delivered before
  ``on_subscribe`` has returned; :meth:`DrainLoop.leave` releases it, and also ends a
  fast path that delivered outside the loop.

:class:`DrainSubscriber` adds the operator shape of :mod:`rstreams.flow._operator`
(``downstream``, ``upstream``, ``done``) for operators with inner Publishers: ``cancel``,
an illegal ``request`` (rule 3.9) and errors are recorded and acted on by the loop; the
first error cancels everything else and is signalled once (rule 4.2); later ones go to
:func:`rstreams.errors.report_unhandled`. Two shortcuts keep an element from paying for a
whole loop pass:

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
from typing import Any, ClassVar, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.demand import accept_subscription
from rstreams.errors import report_unhandled
from rstreams.flow._signals import report_broken, signal_terminal
from rstreams.rules import check_error

__all__ = [
    "DRAIN",
    "EMIT",
    "OUTER",
    "QUEUED",
    "DrainLoop",
    "DrainSubscriber",
    "InnerSubscriber",
    "as_publisher",
    "check_prefetch",
]

T = TypeVar("T")
R = TypeVar("R")
_A = TypeVar("_A")
P = TypeVar("P", bound="DrainSubscriber[Any, Any]")

QUEUED, DRAIN, EMIT = 0, 1, 2
"""What :meth:`DrainSubscriber.offer` did with an element."""
OUTER = object()
"""``DrainSubscriber.calling`` while the drain loop calls the upstream's Subscription."""


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


class DrainLoop:
    """The work-in-progress counter and its loop (see the module docstring).

    A class using it calls :meth:`init_drain` from its ``__init__``, writes
    :meth:`drain_pass`, and may override :meth:`settle` and :meth:`start_drain`.
    """

    __slots__ = ("lock", "wip")

    settles: ClassVar[bool] = False
    """Whether the class overrides :meth:`settle`; the loop calls it only then (set per class)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.settles = cls.settle is not DrainLoop.settle

    def init_drain(self, *, held: bool = False) -> None:
        """Set up the counter; ``held`` keeps the loop from running until :meth:`leave`."""
        self.lock = threading.Lock()
        self.wip = 1 if held else 0

    def drain(self) -> None:
        """Note new work; run the loop unless another thread already does."""
        with self.lock:
            self.wip += 1
            if self.wip != 1:
                return
        self.start_drain()

    def start_drain(self) -> None:
        """Run the loop for work just noted; a boundary overrides it to run elsewhere."""
        self.drain_loop()

    def leave(self) -> None:
        """Give up a loop held outside :meth:`drain_loop` (a hold, a fast path); loop if work was missed."""
        with self.lock:
            self.wip -= 1
            if self.wip == 0:
                return
            self.wip = 1  # one pass sees everything that was missed
        self.start_drain()

    def drain_loop(self, missed: int = 1) -> None:
        """Pass, settle, subtract what was seen; repeat until nothing was missed."""
        while True:
            if self.drain_pass():
                return  # the stream ended for good: the loop stays held
            with self.lock:
                if self.settles:
                    self.settle()
                self.wip -= missed
                missed = self.wip
                if missed == 0:
                    return

    @abc.abstractmethod
    def drain_pass(self) -> bool:
        """Do all the work there is; ``True`` when the stream has ended for good."""

    def settle(self) -> None:
        """Bookkeeping after a pass, under the lock (e.g. subtract what was emitted).

        A class that needs none leaves it alone: the loop then makes no call for it.
        """


class DrainSubscriber(DrainLoop, Subscriber[T], Subscription, Generic[T, R]):
    """The operator shape plus the drain loop, for ``concat_map``, ``flat_map`` and ``merge``.

    It is the upstream's Subscriber and the downstream's Subscription. ``done`` means the
    upstream has terminated; ``cancelled`` that the downstream's stream is over (cancelled,
    failed or completed), after which the loop only cleans up. Subclasses write
    ``on_next`` (record, then :meth:`drain`), :meth:`_pass` (all the work, run only by the
    drain loop) and :meth:`_clear` (cancel and drop everything).
    """

    __slots__ = (
        "calling",
        "cancelled",
        "done",
        "downstream",
        "emitted",
        "error",
        "requested",
        "started",
        "upstream",
        "upstream_cancelled",
    )

    name = "concat_map"
    """The operator, for error reports."""

    def __init__(self, downstream: Subscriber[R]) -> None:
        self.downstream = downstream
        self.upstream: Subscription | None = None
        self.done = False  # the upstream has terminated
        self.init_drain()
        self.requested = 0  # outstanding downstream demand, minus what the loop emitted
        self.emitted = 0  # emitted by the current pass, settled under the lock
        self.error: BaseException | None = None  # the first error, for the loop to signal
        self.cancelled = False  # cancelled or terminated: the drain loop only cleans up
        self.upstream_cancelled = False
        self.started = False  # the first request upstream is made
        self.calling: object | None = None  # see call()

    # -- upstream -> this -------------------------------------------------------------

    def on_subscribe(self, subscription: Subscription) -> None:
        if not accept_subscription(self.upstream, subscription):
            return
        self.upstream = subscription
        self.downstream.on_subscribe(self)
        self.drain()  # the first request upstream is made from the drain loop (rule 2.7)

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        if self.done:  # a second terminal signal (rule 1.7): nobody can receive it
            report_unhandled(error, f"{self.name}: an error after the upstream had terminated")
            return
        self.done = True
        self.fail(error)

    def on_complete(self) -> None:
        if self.done:
            return
        self.done = True
        if self.calling is not OUTER:
            self.drain()

    # -- downstream -> this -----------------------------------------------------------

    def request(self, n: int) -> None:
        if self.cancelled:
            return  # rule 3.6
        problem = demand.invalid(n)
        with self.lock:
            if problem is not None:
                if self.error is None:
                    self.error = problem  # signalled by the drain loop (rules 3.9, 1.3)
            else:
                self.requested = demand.add(self.requested, n)
            self.wip += 1
            if self.wip != 1:
                return
        self.drain_loop()

    def cancel(self) -> None:
        if self.cancelled:
            return  # rule 3.7
        self.cancelled = True
        self.drain()

    # -- the drain loop ---------------------------------------------------------------

    def fail(self, error: BaseException) -> None:
        """Record the first error for the drain loop; report any later one."""
        with self.lock:
            first = self.error is None and not self.cancelled
            if first:
                self.error = error
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

    def offer(self, item: R, queue: deque[R]) -> int:
        """An inner's element: :data:`EMIT` it now, or queue it (:data:`QUEUED`, :data:`DRAIN`).

        The fast path (reactor's ``tryEmit``): when nobody drains, nothing is queued before
        it and there is demand, the signalling thread takes the drain and emits at once,
        then calls :meth:`after_fast`. Otherwise the element joins ``queue`` under the
        lock, so a drainer about to leave cannot miss it; :data:`DRAIN` means nobody was
        draining and the caller must run :meth:`drain_loop`.
        """
        with self.lock:
            wip = self.wip
            self.wip = wip + 1
            if not wip and not queue and self.requested > 0 and not self.cancelled and self.error is None:
                return EMIT
            queue.append(item)
            return QUEUED if wip else DRAIN

    def after_fast(self, *, loop: bool = False) -> None:
        """Leave the drain after one direct emission; run the loop if work was missed (or ``loop``)."""
        with self.lock:
            if self.requested != demand.UNBOUNDED:
                self.requested -= 1
            if not loop:
                self.wip -= 1
                if self.wip == 0:
                    return
            missed = self.wip
        self.drain_loop(missed)

    def drain_pass(self) -> bool:
        self.emitted = self._pass(self.emitted)
        return False

    def settle(self) -> None:
        if self.emitted and self.requested != demand.UNBOUNDED:
            self.requested -= self.emitted
        self.emitted = 0

    def emit(self, item: R) -> None:
        """``on_next`` downstream; a Subscriber that raises is cancelled and reported (rule 2.13)."""
        try:
            self.downstream.on_next(item)
        except Exception as exc:
            self.cancelled = True
            report_broken(exc, self.downstream, "on_next")
            self.drain()  # counted as missed work: the loop runs and cleans up

    def _stopping(self) -> bool:
        """Clean up after a cancel, or signal the first error (once what :meth:`_before_error`
        keeps ahead of it has gone out); true if the pass must end."""
        if self.cancelled:
            self._clear()
            return True
        error = self.error
        if error is not None:
            if self._before_error():
                return False
            self.cancelled = True
            self._clear()
            signal_terminal(self.downstream, error)
            return True
        return False

    def _before_error(self) -> bool:
        """Whether elements already received must go out before the pending error (the pass
        then goes on); none by default: the error cuts ahead of what is queued."""
        return False

    def _start(self, n: int) -> bool:
        """Make the first request upstream, once; true if it was made now."""
        upstream = self.upstream
        if self.started or upstream is None:
            return False
        self.started = True
        self.call(OUTER, upstream.request, n)
        return True

    def _complete(self) -> None:
        self.cancelled = True
        signal_terminal(self.downstream, None)

    def _cancel_upstream(self) -> None:
        if not self.upstream_cancelled:
            self.upstream_cancelled = True
            if not self.done and self.upstream is not None:
                self.upstream.cancel()

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

    __slots__ = ("cancelled", "done", "failure", "parent", "subscription")

    ordered: ClassVar[bool] = False
    """Whether an error waits behind the elements already queued from this inner (``failure``),
    as a completion does, instead of cutting ahead of them. For operators that ask an inner
    only for demand the downstream has granted (``concat_map``, a race's winner), so that
    what is queued goes out at once and ``concat(p)`` signals what ``p`` does."""

    def __init__(self, parent: P) -> None:
        self.parent = parent
        self.subscription: Subscription | None = None
        self.done = False
        self.cancelled = False
        self.failure: BaseException | None = None

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
        if not self.ordered:
            self.parent.fail(error)
            return
        self.failure = error  # the loop fails the stream once this inner's queue is empty
        calling = self.parent.calling
        if calling is not self and calling is not OUTER:
            self.parent.drain()

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
