"""The subscribers the TCK drives: every signal checked, demand only on the test's command.

* :class:`TestSubscriber` is the base: every signal is unexpected unless a subclass says
  otherwise; it holds the subscription in a :class:`~rstreams.tck._env.Promise`, checks
  that ``request`` (rule 3.16) and ``cancel`` (3.15) return normally, and counts elements
  that arrive after the TCK cancelled it (3.12). Past
  :data:`~rstreams.tck._env.RUNAWAY_LIMIT` of those the stream is a runaway: a failure
  with the count is recorded and ``on_next`` raises
  :class:`~rstreams.tck._registry.StreamAbandoned`. Once its case is over it is *closed*:
  later elements are only counted, and a stream that swallowed ``StreamAbandoned`` another
  ``RUNAWAY_LIMIT`` times is halted: the next ``on_next`` raises :class:`_StreamHalted`, a
  ``SystemExit``, which an ``except Exception`` does not catch, so that its thread ends
  (a thread ends quietly on ``SystemExit``, an executor's worker takes it as the task's
  outcome and goes on) instead of keeping a core busy and the process from exiting. A
  stream that swallows that too is parked inside ``on_next`` for good (no CPU), and says
  so on stderr: a process that waits for that thread at exit (it is not a daemon thread,
  or an executor's worker) cannot exit.
* :class:`ManualSubscriber` is the workhorse: it starts with no demand, requests only when
  the test says so, keeps received elements in a bounded queue, and records every rule
  breach it can see by itself (signals before ``on_subscribe``, after a terminal signal,
  beyond demand, and signals from two threads at once, rule 1.3: see :class:`SerialSignals`).
  Its waits end early when a failure is recorded.
* :class:`BlackholeSubscriber` counts elements but keeps none, for long or endless streams.
"""

from __future__ import annotations

import itertools
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from typing import Final, Generic, NoReturn, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.tck import _own_time
from rstreams.tck._env import RUNAWAY_LIMIT, TEST_BUFFER_SIZE, Promise, TestEnvironment, _describe, _ms
from rstreams.tck._failures import RaisedOnPurpose, StreamAbandoned, TCKFailure
from rstreams.tck._watchdog import TCK_THREADS

__all__ = [
    "GIVE_WAY_SIGNALS",
    "BlackholeSubscriber",
    "BlackholeSubscriberWithSubscriptionSupport",
    "ManualSubscriber",
    "ManualSubscriberWithSubscriptionSupport",
    "SerialSignals",
    "SubscriberBufferOverflowError",
    "TestSubscriber",
    "new_blackhole_subscriber",
    "new_manual_subscriber",
    "not_an_exception",
]

T = TypeVar("T")
E = TypeVar("E", bound=BaseException)


class _StreamHalted(SystemExit):
    """Raised from a closed TCK subscriber's ``on_next`` into a runaway stream that swallowed
    :class:`StreamAbandoned` another ``RUNAWAY_LIMIT`` times after its case ended: a
    ``SystemExit``, the way a thread is asked to end, which an ``except Exception`` lets through.
    Outside the error tree on purpose: it must not be caught as one of rstreams' errors."""


GIVE_WAY_SIGNALS: Final = 64
"""Signals per subscriber (before any cancel) during which :class:`SerialSignals` gives way."""


class SerialSignals:
    """Rule 1.3 in every case: no two threads inside one subscriber's signals at once.

    :meth:`visit` marks the calling thread as inside a signal, gives way to other threads
    (``time.sleep(0)`` releases the GIL) and leaves. A publisher that signals from two threads
    at once (an element per pool task, ``on_complete`` from another thread than the elements)
    then gets caught inside: the second thread finds the first still there. Only the first
    :data:`GIVE_WAY_SIGNALS` signals before a cancel give way, so a long or runaway stream costs
    nothing. Re-entry on the same thread is allowed (a request inside a signal may deliver at
    once). The subscriber calls it before it makes the signal visible to the case, so the case's
    thread, woken by a signal, cannot provoke an overlap by requesting more. One breach is
    reported per subscriber: a publisher that overlaps does so again and again.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._inside = ""
        self._reported = False

    def visit(self, signal: str, give_way: bool) -> str | None:
        """The rule-1.3 breach ``signal`` commits on this thread, if any (reported once)."""
        me = threading.get_ident()
        with self._lock:
            owner = self._owner
            if owner is not None and owner != me:
                if self._reported:
                    return None
                self._reported = True
                return (
                    f"rule 1.3: {signal} arrived on thread {me} while thread {owner} was still inside"
                    f" {self._inside}; signals to one subscriber must be serial"
                )
            if owner == me:
                return None
            self._owner, self._inside = me, signal
        try:
            if give_way:
                time.sleep(0)
        finally:
            with self._lock:
                self._owner = None
        return None


def not_an_exception(error: object) -> str | None:
    """Rule 1.4: the breach of an ``on_error`` that carries no exception instance, or None."""
    if isinstance(error, BaseException):
        return None
    return (
        f"rule 1.4: on_error({error!r}) carries a {type(error).__name__}, not an exception instance;"
        " a publisher signals its failure as one"
    )


class SubscriberBufferOverflowError(TCKFailure):
    """Raised into a publisher's ``on_next`` when the TCK subscriber's queue is full."""


def _halting_note() -> str:
    """For a runaway on one of the implementation's threads (which Python, or its executor, may wait
    for at exit): how the TCK ends that thread if it swallows StreamAbandoned, and when it cannot."""
    thread = threading.current_thread()
    if thread.name.startswith(TCK_THREADS) or thread is threading.main_thread():
        return ""
    kind = "a daemon thread" if thread.daemon else "not a daemon thread: Python waits for it at exit"
    return (
        f"; the stream runs on the implementation's thread {thread.name!r} ({kind}): if it swallows"
        f" StreamAbandoned {RUNAWAY_LIMIT} times more once the case is over, the TCK ends that thread with"
        " SystemExit from on_next, and if it swallows that too (a bare except), parks it there for good,"
        " and then a process that waits for it at exit (a thread that is not a daemon, an executor's"
        " worker) cannot exit"
    )


class TestSubscriber(Subscriber[T], Generic[T]):
    """A Subscriber for which every signal is unexpected unless a subclass says otherwise.

    Holds the subscription in :attr:`subscription` (a :class:`Promise`); subclasses and
    hand-written test subscribers override the signals they expect.
    """

    __test__ = False  # not a pytest test class, despite the name

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self.subscription: Promise[Subscription] = Promise(env, "subscription (on_subscribe)")
        self.arrived = 0
        """Elements that reached this subscriber, including those after cancel or close."""
        self.last_signal: float | None = None
        self.closed = False
        """Set when the case is over: later elements are only counted."""
        self._cancelled_at: int | None = None
        self._stopped_by = "cancel()"
        self._stop_rule = "3.12"
        self._runaway = False
        self._halted: set[int] = set()

    @property
    def after_cancel(self) -> int:
        """Elements that arrived after the TCK cancelled this subscriber's subscription."""
        return 0 if self._cancelled_at is None else self.arrived - self._cancelled_at

    def count_as_cancelled(self, stopped_by: str, rule: str) -> None:
        """Count later elements as arriving after a cancel: the publisher must consider the
        subscription cancelled since ``stopped_by`` (``"on_next #3 raised"``), by ``rule``."""
        if self._cancelled_at is None:
            self._cancelled_at = self.arrived
            self._stopped_by, self._stop_rule = stopped_by, rule

    def _element_arrived(self) -> bool:
        """Count an element; False when the TCK no longer wants it (the case is over).

        Past :data:`RUNAWAY_LIMIT` elements after cancel, records a rule-3.12 failure (once)
        and raises :class:`StreamAbandoned` into the publisher.
        """
        self.arrived += 1
        self.last_signal = time.monotonic()
        if self._cancelled_at is not None and self.arrived - self._cancelled_at > RUNAWAY_LIMIT:
            if not self._runaway:
                self._runaway = True
                self.env.record_failure(
                    f"rule {self._stop_rule}: {self.after_cancel} elements arrived after {self._stopped_by}"
                    " and they kept coming; the TCK stopped the stream by raising StreamAbandoned from"
                    f" on_next{_halting_note()}"
                )
            if self.closed and self.after_cancel > 2 * RUNAWAY_LIMIT:
                self._halt()
            raise StreamAbandoned(f"{self.after_cancel} elements after {self._stopped_by}")
        return not self.closed

    def _halt(self) -> NoReturn:
        """End the thread of a closed runaway that swallows StreamAbandoned: raise StreamHalted; on
        the thread that swallowed that too, park for good (it can never run the stream again)."""
        me = threading.get_ident()
        if me not in self._halted:
            self._halted.add(me)
            raise _StreamHalted(
                f"the TCK halts a runaway stream: {self.after_cancel} elements after {self._stopped_by},"
                " StreamAbandoned swallowed"
            )
        thread = threading.current_thread()
        exits = (
            "a process that waits for it at exit (an executor joins its workers) cannot exit"
            if thread.daemon
            else "not being a daemon thread, it keeps the process from exiting"
        )
        print(
            f"rstreams.tck: the runaway stream of case {self.env.case} swallowed StreamHalted (a"
            f" SystemExit) too; its thread {thread.name!r} is parked inside on_next for good, and {exits}",
            file=sys.stderr,
            flush=True,
        )
        threading.Event().wait()  # never set: a thread that will not end must at least not run
        raise AssertionError("unreachable")

    def _signal_arrived(self) -> bool:
        """Note a terminal signal; False when the case is over."""
        self.last_signal = time.monotonic()
        return not self.closed

    def on_subscribe(self, subscription: Subscription) -> None:
        self.env.record_failure(f"unexpected on_subscribe({type(subscription).__name__})")

    def on_next(self, item: T) -> None:
        self.env.record_failure(f"unexpected on_next({item!r})")

    def on_error(self, error: BaseException) -> None:
        self.env.record_failure(f"unexpected on_error({_describe(error)})")

    def on_complete(self) -> None:
        self.env.record_failure("unexpected on_complete()")

    def request(self, n: int) -> None:
        """``request(n)`` on the subscription, which must return normally (rule 3.16)."""
        subscription = self.subscription.value
        try:
            subscription.request(n)
        except (TCKFailure, StreamAbandoned, RaisedOnPurpose):
            raise
        except Exception as exc:
            self.env.flop(f"rule 3.16: request({n}) raised {_describe(exc)}; it must return normally")

    def cancel(self) -> None:
        """``cancel()`` on the subscription, which must return normally (rule 3.15).

        From here on, elements are counted as arriving after cancel (rule 3.12).
        """
        subscription = self.subscription.value
        if self._cancelled_at is None:
            self._cancelled_at = self.arrived
        try:
            subscription.cancel()
        except (TCKFailure, StreamAbandoned):
            raise
        except Exception as exc:
            self.env.flop(f"rule 3.15: cancel() raised {_describe(exc)}; it must return normally")

    def release(self) -> None:
        """Close this subscriber and cancel its subscription, ignoring errors: the end of a case."""
        self.closed = True
        subscription = self.subscription.peek()
        if subscription is not None:
            if self._cancelled_at is None:
                self._cancelled_at = self.arrived
            try:
                subscription.cancel()
            except Exception:  # rule 3.15 is not what this clean-up checks
                pass


_END: Final = object()


class ManualSubscriber(TestSubscriber[T], Generic[T]):
    """A test-driven Subscriber: no demand until the test calls :meth:`request`.

    Thread-safe; signals may come from any thread. It accepts one ``on_subscribe``, keeps up
    to 32 unconsumed elements (a 33rd is an overflow raised into the publisher's ``on_next``)
    and records, as failures, ``None`` elements and any signal that arrives before
    ``on_subscribe``, after a terminal signal, or beyond the demand it signalled (rule 1.1).
    ``on_error`` is recorded in the environment's error list, where :meth:`expect_error`
    looks for it.
    """

    capacity: int = 2 * TEST_BUFFER_SIZE

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self._cond = env.cond
        self._queue: deque[object] = deque()
        self.received = 0
        """Elements received so far (consumed or not)."""
        self.requested = 0
        """Valid demand signalled so far, saturated at 2**63 - 1."""
        self.completed = False
        self.error: BaseException | None = None
        self._end_taken = False
        self._late_reported = False
        self._serial = SerialSignals()

    # -- signals -------------------------------------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        self._check_serial("on_subscribe")
        if not self.subscription.try_complete(subscription):
            (self.env.record_late if self.closed else self.env.record_failure)(
                "rule 2.12: on_subscribe was called twice for one subscribe(); at most once per Subscriber"
            )
            subscription.cancel()
        with self._cond:
            self._cond.notify_all()

    def on_next(self, item: T) -> None:
        if not self._element_arrived():
            self._late_element(item)
            return
        self._check_serial(f"on_next({item!r})")
        problems: list[str] = []
        overflow = False
        with self._cond:
            self.received += 1
            count = self.received
            if item is None:  # type: ignore[comparison-overlap, unused-ignore]
                problems.append("rule 2.13: the publisher signalled on_next(None)")
            if not self.subscription.is_completed:
                problems.append(f"rule 1.9: on_next({item!r}) before on_subscribe")
            if self._terminated:
                problems.append(f"rule 1.7: on_next({item!r}) after {self._terminal_name}")
            if count > self.requested:
                problems.append(
                    f"rule 1.1: received element #{count} ({item!r}) but only {self.requested} were requested"
                )
            if len(self._queue) >= self.capacity:
                overflow = True
            else:
                self._store(item)
            self._cond.notify_all()
        for problem in problems:
            self.env.record_failure(problem)
        if overflow:
            failure = SubscriberBufferOverflowError(
                f"the TCK subscriber's queue of {self.capacity} elements overflowed"
            )
            self.env.record_async_error(failure)
            raise failure

    def on_complete(self) -> None:
        if not self._signal_arrived():
            self._late_terminal("on_complete()", None)
            return
        self._check_serial("on_complete()")
        problem = self._terminal_problem("on_complete()")
        with self._cond:
            if not self._terminated:
                self.completed = True
                self._queue.append(_END)
            self._cond.notify_all()
        if problem:
            self.env.record_failure(problem)

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise TypeError("rule 2.13: on_error(None)")
        if not self._signal_arrived():
            self._late_terminal(f"on_error({_describe(error)})", error)
            return
        self._check_serial(f"on_error({_describe(error)})")
        odd = not_an_exception(error)
        if odd is not None:
            self.env.record_failure(odd)
        problem = self._terminal_problem(f"on_error({_describe(error)})")
        with self._cond:
            if not self._terminated:
                self.error = error
            self._cond.notify_all()
        if problem:
            self.env.record_failure(problem)
        self.env.record_async_error(error)

    def _check_serial(self, signal: str) -> None:
        """Rule 1.3: record a signal that arrives while another thread is inside one."""
        give_way = self._cancelled_at is None and self.arrived <= GIVE_WAY_SIGNALS
        problem = self._serial.visit(signal, give_way)
        if problem is not None:
            self.env.record_failure(problem)

    # -- after the case ended: still checked, reported by a later case -------------------
    def _late_element(self, item: T) -> None:
        """An element after the case ended: rule 1.7 (after a terminal) and 1.1 still hold."""
        with self._cond:
            self.received += 1
            if self._terminated:
                problem = f"rule 1.7: on_next({item!r}) after {self._terminal_name}"
            elif self.received > self.requested:
                problem = (
                    f"rule 1.1: received element #{self.received} ({item!r})"
                    f" but only {self.requested} were requested"
                )
            else:
                return
        self._report_late(problem)

    def _late_terminal(self, signal: str, error: BaseException | None) -> None:
        """A terminal signal after the case ended: fine once (3.12 lets a stream end after
        cancel), a breach of rule 1.7 after another."""
        with self._cond:
            problem = f"rule 1.7: {signal} after {self._terminal_name}" if self._terminated else None
            if not self._terminated:
                self.completed, self.error = error is None, error
        if problem:
            self._report_late(problem)

    def _report_late(self, problem: str) -> None:
        if not self._late_reported:  # one per subscriber: a late flood is one breach
            self._late_reported = True
            self.env.record_late(problem)

    @property
    def _terminated(self) -> bool:
        return self.completed or self.error is not None

    @property
    def _terminal_name(self) -> str:
        return "on_complete" if self.completed else f"on_error({_describe(self.error)})" if self.error else ""

    def _terminal_problem(self, signal: str) -> str | None:
        if not self.subscription.is_completed:
            return f"rule 1.9: {signal} before on_subscribe"
        if self._terminated:
            return f"rule 1.7: {signal} after {self._terminal_name}"
        return None

    def _store(self, item: T) -> None:
        self._queue.append(item)

    # -- driving -------------------------------------------------------------------
    def request(self, n: int) -> None:
        """Signal demand; counted first, because a synchronous publisher delivers inside."""
        if demand.invalid(n) is None:
            with self._cond:
                self.requested = demand.add(self.requested, n)
        super().request(n)

    @property
    def is_done(self) -> bool:
        """Whether ``on_complete`` or ``on_error`` has arrived."""
        return self._terminated

    def state(self) -> str:
        """What arrived, in words: "2 received of 4 requested", then the terminal signal if any."""
        end = f", then {self._terminal_name}" if self._terminated else ""
        return f"{self.received} received of {self.requested} requested{end}"

    def _take(self, total: float, what: str, error_msg: str | None) -> object:
        """The next queued element or end-of-stream marker; flops on error, timeout or a failure."""
        env = self.env
        with self._cond:
            _own_time.wait_for(
                self._cond,
                lambda: bool(self._queue) or self._end_taken or self.error is not None or env.has_failure,
                total,
            )
            if self._queue:
                item = self._queue.popleft()
                self._end_taken = item is _END
                return item
            if self._end_taken:
                return _END  # end-of-stream stays the answer once reached
            error = self.error
        if error is not None:
            self.env.flop(f"{error_msg or f'expected {what}'}, but got on_error({_describe(error)})")
        if env.has_failure:
            self.env.flop(f"{error_msg or f'expected {what}'}; stopped at a failure; {self.state()}")
        self.env.flop(
            f"{error_msg or f'expected {what}'}, but none arrived within {_ms(total)}; {self.state()}"
        )

    def next_element(self, timeout: float | None = None, error_msg: str | None = None) -> T:
        """The next element within ``timeout``; flops on timeout, completion or error."""
        total = self.env.default_timeout if timeout is None else timeout
        item = self._take(total, "an element", error_msg)
        if item is _END:
            self.env.flop(f"{error_msg or 'expected an element'}, but the stream completed; {self.state()}")
        return item  # type: ignore[return-value]

    def next_elements(self, n: int, timeout: float | None = None, error_msg: str | None = None) -> list[T]:
        """The next ``n`` elements, all within one ``timeout``; the failure says how many came."""
        total = self.env.default_timeout if timeout is None else timeout
        env = self.env

        def queued() -> int:
            return sum(1 for item in itertools.islice(self._queue, n + 1) if item is not _END)

        with self._cond:
            _own_time.wait_for(
                self._cond,
                lambda: queued() >= n or _END in self._queue or self.error is not None or env.has_failure,
                total,
            )
            got = min(queued(), n)
            if got == n:
                return [self._queue.popleft() for _ in range(n)]  # type: ignore[misc]
            ended = _END in self._queue
            error = self.error
        what = error_msg or f"expected {n} elements"
        if ended:
            self.env.flop(f"{what}, but the stream completed after {got} of them; {self.state()}")
        if error is not None:
            self.env.flop(f"{what}, but got on_error({_describe(error)}) after {got} of them; {self.state()}")
        if env.has_failure:
            self.env.flop(f"{what}; stopped waiting at a failure after {got} of them; {self.state()}")
        self.env.flop(f"{what}, but only {got} arrived within {_ms(total)}; {self.state()}")

    def next_element_or_end_of_stream(
        self, timeout: float | None = None, error_msg: str | None = None
    ) -> T | None:
        """The next element, or ``None`` at end of stream (``None`` is never an element)."""
        total = self.env.default_timeout if timeout is None else timeout
        item = self._take(total, "an element or on_complete", error_msg)
        return None if item is _END else item  # type: ignore[return-value]

    def expect_next(self, expected: T, timeout: float | None = None) -> None:
        item = self.next_element(timeout)
        if item != expected:
            self.env.flop(f"expected element {expected!r}, got {item!r}")

    def expect_completion(self, timeout: float | None = None, error_msg: str | None = None) -> None:
        """Require ``on_complete`` as the next signal within ``timeout``."""
        total = self.env.default_timeout if timeout is None else timeout
        item = self._take(total, "on_complete", error_msg)
        if item is not _END:
            self.env.flop(
                f"{error_msg or 'expected on_complete'}, but got the element {item!r}; {self.state()}"
            )

    def expect_error(
        self,
        error_type: type[E],
        timeout: float | None = None,
        message_part: str | Sequence[str] | None = None,
        error_msg: str | None = None,
    ) -> E:
        """Require ``on_error(error_type)``: the first error recorded in the environment."""
        return self.env.expect_error(error_type, timeout, message_part, error_msg)

    def expect_none(self, timeout: float | None = None, error_msg: str | None = None) -> None:
        """Require that no element, completion or error arrives (or waits unconsumed) in the window."""
        total = self.env.default_no_signals_timeout if timeout is None else timeout
        with self._cond:
            _own_time.wait_for(self._cond, lambda: bool(self._queue) or self.error is not None, total)
            pending = self._queue[0] if self._queue else None
            error = self.error
        if pending is not None:
            got = "on_complete" if pending is _END else f"the element {pending!r}"
            self.env.flop(f"{error_msg or 'expected no signal'}, but got {got}; {self.state()}")
        if error is not None:
            self.env.flop(f"{error_msg or 'expected no signal'}, but got on_error({_describe(error)})")

    def wait_received(self, more_than: int, timeout: float) -> int:
        """Wait up to ``timeout`` until more than ``more_than`` elements arrived; the count."""
        with self._cond:
            _own_time.wait_for(self._cond, lambda: self.received > more_than, timeout)
            return self.received

    def request_next_element(self, timeout: float | None = None) -> T:
        self.request(1)
        return self.next_element(timeout)

    def request_next_elements(self, n: int, timeout: float | None = None) -> list[T]:
        self.request(n)
        return self.next_elements(n, timeout)

    def request_next_element_or_end_of_stream(self, timeout: float | None = None) -> T | None:
        self.request(1)
        return self.next_element_or_end_of_stream(timeout)

    def request_end_of_stream(self, timeout: float | None = None) -> None:
        """``request(1)`` and require ``on_complete`` (no further element)."""
        self.request(1)
        self.expect_completion(timeout)


ManualSubscriberWithSubscriptionSupport = ManualSubscriber
"""The JVM TCK's name for the subscriber its environment creates; the same class here."""


class BlackholeSubscriber(ManualSubscriber[T], Generic[T]):
    """A ManualSubscriber that counts elements but keeps none (for long or endless streams)."""

    def _store(self, item: T) -> None:
        pass

    def next_element(self, timeout: float | None = None, error_msg: str | None = None) -> T:
        self.env.flop("a BlackholeSubscriber keeps no elements; use a ManualSubscriber")


BlackholeSubscriberWithSubscriptionSupport = BlackholeSubscriber


def new_manual_subscriber(
    env: TestEnvironment, publisher: Publisher[T], timeout: float | None = None
) -> ManualSubscriber[T]:
    """A :class:`ManualSubscriber` subscribed to ``publisher``, holding its subscription."""
    subscriber: ManualSubscriber[T] = ManualSubscriber(env)
    env.subscribe(publisher, subscriber, timeout)
    return subscriber


def new_blackhole_subscriber(
    env: TestEnvironment, publisher: Publisher[T], timeout: float | None = None
) -> BlackholeSubscriber[T]:
    """A :class:`BlackholeSubscriber` subscribed to ``publisher``, holding its subscription."""
    subscriber: BlackholeSubscriber[T] = BlackholeSubscriber(env)
    env.subscribe(publisher, subscriber, timeout)
    return subscriber
