"""The tools the subscriber and processor verifications drive a Subscriber with.

* :class:`ManualPublisher` is the test's upstream: it accepts one Subscriber, hands it a
  Subscription that only *records* ``request``/``cancel``, and sends exactly what the test
  says, when it says (it never checks demand; the test waits for a request first).
* :class:`BlackboxProbe` records the signals a Subscriber received; the whitebox
  :class:`WhiteboxSubscriberProbe` also receives the :class:`SubscriberPuppet` through
  which the test makes the Subscriber request and cancel.
* :class:`BlackboxSubscriberProxy` records on a probe and forwards to the real Subscriber.
* :class:`HelperPublisher` is the default source of element values (and the upstream of a
  processor under test as publisher): asynchronous, one executor task at a time per
  subscription, like the JVM TCK's ``AsyncIterablePublisher``. :class:`ElementSource`
  pulls fresh values from it one at a time.
* :class:`TerminalGuardSubscription` catches calls made *during* ``on_complete`` /
  ``on_error`` (rule 2.3) with a per-thread "inside a terminal signal" flag.
* :class:`SerialCalls` catches a Subscriber whose calls on the probe Subscription overlap
  (rule 2.7): both probe Subscriptions above pass every ``request``/``cancel`` through it.

Every wait is bounded by the environment's timeouts and blocks on a condition; nothing
polls with ``sleep``. Failures the test is waiting for raise :class:`TCKFailure` at once;
protocol breaches noticed on another thread are recorded on the environment (``flop``).
"""

from __future__ import annotations

import concurrent.futures
import itertools
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Final, Generic, Protocol, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import ReactiveStreamsError, report_unhandled
from rstreams.rules import check_error, check_item, check_subscriber
from rstreams.tck import _own_time
from rstreams.tck._env import TestEnvironment
from rstreams.tck._registry import TCKFailure

__all__ = [
    "SERIAL_EARLY_CALLS",
    "SERIAL_WINDOW",
    "BlackboxProbe",
    "BlackboxSubscriberProxy",
    "ElementSource",
    "HelperPublisher",
    "InjectedError",
    "ManualPublisher",
    "SerialCalls",
    "SubscriberProbe",
    "SubscriberPuppet",
    "SubscriberPuppeteer",
    "TerminalGuardSubscription",
    "WhiteboxSubscriberProbe",
    "shared_helper_executor",
]

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)


class InjectedError(ReactiveStreamsError):
    """The error the TCK sends with ``on_error`` (the JVM's ``TestException``)."""

    def __init__(self) -> None:
        super().__init__("Test Exception: Boom!")


def _fail(message: str) -> TCKFailure:
    return TCKFailure(message)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _rule(rule: str | None) -> str:
    """The message prefix citing ``rule`` (``"rule 2.9: "``), or nothing."""
    return f"rule {rule}: " if rule else ""


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


# -- rule 2.7: serial calls on a Subscription ------------------------------------------------

SERIAL_WINDOW: Final = 0.001
"""Seconds a call on a probe Subscription stays inside after its work (see :class:`SerialCalls`),
so that an unserialised call from another thread meets it there."""
SERIAL_EARLY_CALLS: Final = 16
"""The first calls on a probe Subscription that stay inside :data:`SERIAL_WINDOW` even while
only one thread has called: a second thread's first call is likely to come early."""


class SerialCalls:
    """Rule 2.7: catches a call on a Subscription that enters while another is still inside.

    A probe Subscription runs each ``request``/``cancel`` through :meth:`guarded`, which
    keeps the calls inside in a list under a lock; a call that enters
    while another thread's call is inside records a rule-2.7 failure naming both (the
    first overlap only: a broken Subscriber overlaps again and again) and keeps it as
    :attr:`breach`, which the case raises when it ends (:meth:`check`); after the case
    ended it is a late breach, reported by a later case. A Subscriber that serialises its
    calls (one thread, or a lock) is never reported.

    Overlaps are made likely to be seen: a call stays inside :data:`SERIAL_WINDOW` longer
    (releasing the GIL) if it is one of the first :data:`SERIAL_EARLY_CALLS` or once the
    Subscriber has called from more than one thread. A Subscriber that calls from one
    thread only pays the window on its first calls. A call nested in another on the same
    thread is not an overlap: a Subscription whose ``request`` signals ``on_next`` at once
    may see the Subscriber request again from there (rule 3.3 bounds that recursion).
    """

    def __init__(self, env: TestEnvironment, subject: Callable[[], str]) -> None:
        self._env = env
        self._subject = subject
        self._lock = threading.Lock()
        self._inside: list[tuple[str, str, int | None]] = []
        self._threads: set[int | None] = set()
        self._calls = 0
        self.breach: TCKFailure | None = None
        """The first overlap seen, recorded on the environment too; None while calls were serial."""

    def guarded(self, call: str, body: Callable[[], None]) -> None:
        """``body()`` as the call ``call`` (``"request(1)"``): checked for overlap on the way
        in, then kept inside the window if the class's policy says so."""
        thread = threading.current_thread()
        entry = (call, thread.name, thread.ident)
        with self._lock:
            other = next((e for e in self._inside if e[2] != thread.ident), None)
            if other is not None and self.breach is None:
                inside, where, _ = other
                self.breach = self._env.record_failure(
                    f"rule 2.7: {self._subject()} called {call} on thread {thread.name!r} while its {inside}"
                    f" on thread {where!r} was still inside; calls on a Subscription must be serial"
                    " (make them from one thread, or serialise them with a lock)"
                )
            self._inside.append(entry)
            self._threads.add(thread.ident)
            self._calls += 1
            linger = self._calls <= SERIAL_EARLY_CALLS or len(self._threads) > 1
        try:
            body()
            if linger:
                time.sleep(SERIAL_WINDOW)  # a window for an unserialised call to meet this one
        finally:
            with self._lock:
                self._inside.remove(entry)  # equal entries are interchangeable

    def check(self) -> None:
        """Raise the rule-2.7 breach, if one was seen (the case ends with this)."""
        if self.breach is not None:
            raise self.breach


# -- the test's upstream ----------------------------------------------------------------


class _RecordingSubscription(Subscription):
    """Records ``request(n)`` and ``cancel()``, each checked for overlap (rule 2.7)."""

    def __init__(self, publisher: ManualPublisher[object]) -> None:
        self._publisher = publisher

    def request(self, n: int) -> None:
        # n is examined (rule 3.9) inside the guarded call
        self._publisher.serial.guarded(f"request({n!r})", lambda: self._publisher._record_request(n))

    def cancel(self) -> None:
        self._publisher.serial.guarded("cancel()", self._publisher._record_cancel)


class ManualPublisher(Publisher[T], Generic[T]):
    """A Publisher the test drives by hand; ``on_subscribe`` is synchronous in ``subscribe``.

    ``send_next``/``send_completion``/``send_error`` call the Subscriber directly, without
    looking at demand: the test's logic waits for :meth:`expect_request` first (the
    promise the TCK makes to a whitebox Subscriber's puppet).
    """

    subject = "the Subscriber"
    """How messages name what is subscribed (a processor's setup says "the processor")."""

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self.subscriber: Subscriber[T] | None = None
        self._requests: deque[int] = deque()
        self._cancelled = False
        self._cond = threading.Condition()
        self._at_once: Callable[[int], None] | None = None
        self._answering = 0
        self.serial = SerialCalls(env, lambda: self.subject)
        """Rule 2.7: the Subscriber's calls on its subscription must not overlap."""

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        if self.subscriber is not None:
            self.env.record_failure(
                "ManualPublisher accepts only one Subscriber; subscribe() was called again"
            )
            return
        self.subscriber = subscriber
        subscriber.on_subscribe(_RecordingSubscription(self))  # type: ignore[arg-type]

    # -- what the Subscriber calls ---------------------------------------------------
    def answer_first_request(self, answer: Callable[[int], None]) -> None:
        """Run ``answer(n)`` inside the Subscriber's first valid ``request(n)``, on its stack.

        Rule 3.10 lets a Subscription call ``on_next`` from inside ``request``; the test
        thread's :meth:`expect_request` waits until ``answer`` has returned, so nothing the
        test sends next overlaps it (1.3).
        """
        self._at_once = answer

    def _record_request(self, n: int) -> None:
        valid = demand.invalid(n) is None
        if not valid:  # every request, not only those a case waits for
            self.env.record_failure(f"rule 3.9: {self.subject} called request({n!r}); only n > 0 is legal")
        with self._cond:
            self._requests.append(n)
            answer = self._at_once if valid else None
            if answer is not None:
                self._at_once = None
                self._answering += 1
            self._cond.notify_all()
        if answer is None:
            return
        try:
            answer(n)
        finally:
            with self._cond:
                self._answering -= 1
                self._cond.notify_all()

    def _record_cancel(self) -> None:
        with self._cond:
            self._cancelled = True
            self._cond.notify_all()

    # -- what the test calls -----------------------------------------------------------
    def _target(self) -> Subscriber[T]:
        if self.subscriber is None:
            raise _fail("ManualPublisher: nothing subscribed yet")
        return self.subscriber

    def _signal(self, what: str, call: Callable[[], None]) -> None:
        """Deliver one signal; it must return normally (rule 2.13)."""
        try:
            call()
        except TCKFailure:
            raise
        except Exception as exc:
            raise _fail(
                f"rule 2.13: {self.subject}'s {what} raised {_describe(exc)}; a Subscriber's signal methods"
                " must return normally"
            ) from exc

    def send_next(self, item: T) -> None:
        """Signal ``on_next(item)`` to the Subscriber (demand is the test's business)."""
        target = self._target()
        self._signal(f"on_next({item!r})", lambda: target.on_next(item))

    def send_completion(self) -> None:
        """Signal ``on_complete()``."""
        target = self._target()
        self._signal("on_complete()", target.on_complete)

    def send_error(self, error: BaseException) -> None:
        """Signal ``on_error(error)``."""
        target = self._target()
        self._signal(f"on_error({_describe(error)})", lambda: target.on_error(error))

    def expect_request(self, timeout: float | None = None, what: str = "", rule: str | None = "2.1") -> int:
        """The next ``n`` the Subscriber requested; fails at once on a timeout or on ``n <= 0``.

        The timeout's message cites ``rule`` and adds ``what`` (the context).
        """
        wait = self.env.default_timeout if timeout is None else timeout
        with self._cond:
            if not _own_time.wait_for(self._cond, lambda: bool(self._requests) and not self._answering, wait):
                raise _fail(what or f"{_rule(rule)}{self.subject} did not call request() within {_ms(wait)}")
            n = self._requests.popleft()
        if demand.invalid(n) is not None:
            raise _fail(f"rule 3.9: {self.subject} called request({n!r}); only n > 0 is legal")
        return n

    def expect_exact_request(self, expected: int, timeout: float | None = None) -> None:
        """The next request must be exactly ``expected``."""
        n = self.expect_request(timeout)
        if n != expected:
            raise _fail(f"{self.subject} called request({n}), expected request({expected})")

    def expect_no_request(self, timeout: float | None = None, what: str = "") -> None:
        """No request may arrive within ``timeout`` (default: the no-signals window)."""
        wait = self.env.default_no_signals_timeout if timeout is None else timeout
        with self._cond:
            if _own_time.wait_for(self._cond, lambda: bool(self._requests), wait):
                raise _fail(
                    f"{what or 'expected no request'}, but {self.subject} called request({self._requests[0]})"
                )

    def expect_cancelling(
        self, timeout: float | None = None, what: str = "", rule: str | None = None
    ) -> None:
        """``cancel()`` must be called within ``timeout``; the message cites ``rule`` and ``what``."""
        wait = self.env.default_timeout if timeout is None else timeout
        with self._cond:
            if not _own_time.wait_for(self._cond, lambda: self._cancelled, wait):
                raise _fail(
                    f"{_rule(rule)}{self.subject} did not cancel its subscription within {_ms(wait)}{what}"
                )

    @property
    def is_cancelled(self) -> bool:
        return self._cancelled


# -- probes --------------------------------------------------------------------------------


class SubscriberPuppet(Protocol):
    """Implemented by the user, driven by the TCK: how the test asks a Subscriber for demand.

    ``trigger_request(n)``: make sure at least ``n`` more elements are eventually requested
    (split into smaller requests, or delayed until earlier demand is met, as the Subscriber
    likes). ``signal_cancel()``: cancel the subscription (pending requests may be dropped).
    In return, the TCK never sends an element it has not seen requested.
    """

    def trigger_request(self, n: int) -> None: ...

    def signal_cancel(self) -> None: ...


class SubscriberProbe(Protocol[T_contra]):
    """What a whitebox Subscriber reports to from ``on_next``/``on_complete``/``on_error``."""

    def register_on_next(self, item: T_contra) -> None: ...

    def register_on_complete(self) -> None: ...

    def register_on_error(self, error: BaseException) -> None: ...


class SubscriberPuppeteer(Protocol):
    """What a whitebox Subscriber hands its puppet to, from ``on_subscribe``."""

    def register_on_subscribe(self, puppet: SubscriberPuppet) -> None: ...


class BlackboxProbe(Generic[T]):
    """Records elements and the terminal signal; a second terminal is a rule-1.7 breach."""

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self._items: deque[T] = deque()
        self._completed = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()

    def register_on_next(self, item: T) -> None:
        with self._cond:
            ended = self._completed or self._error is not None
            self._items.append(item)
            self._cond.notify_all()
        if ended:
            self.env.record_failure(f"rule 1.7: on_next({item!r}) registered after a terminal signal")

    def register_on_complete(self) -> None:
        with self._cond:
            if self._completed or self._error is not None:
                self.env.record_failure(
                    "rule 1.7: on_complete after a terminal signal was already registered"
                )
            self._completed = True
            self._cond.notify_all()

    def register_on_error(self, error: BaseException) -> None:
        with self._cond:
            if self._completed or self._error is not None:
                self.env.record_failure(
                    f"rule 1.7: on_error({error!r}) after a terminal signal was already registered"
                )
            else:
                self._error = error
            self._cond.notify_all()

    def _timeout(self, timeout: float | None) -> float:
        return self.env.default_timeout if timeout is None else timeout

    subject = "the Subscriber"
    """How messages name the subscriber that registers here."""

    def expect_next(self, expected: T, timeout: float | None = None, rule: str | None = None) -> None:
        """The next registered element must equal ``expected``; messages cite ``rule``."""
        wait = self._timeout(timeout)
        with self._cond:
            if not _own_time.wait_for(self._cond, lambda: bool(self._items), wait):
                ended = " (the stream ended)" if self._completed or self._error is not None else ""
                raise _fail(
                    f"{_rule(rule)}{self.subject} did not register on_next({expected!r})"
                    f" within {_ms(wait)}{ended}"
                )
            item = self._items.popleft()
        if item != expected:
            raise _fail(
                f"{_rule(rule)}{self.subject} registered on_next({item!r}), expected on_next({expected!r})"
            )

    def expect_completion(
        self, timeout: float | None = None, what: str = "", rule: str | None = None
    ) -> None:
        """``on_complete`` must be registered within ``timeout``; the message cites ``rule``."""
        wait = self._timeout(timeout)
        with self._cond:
            if not _own_time.wait_for(self._cond, lambda: self._completed, wait):
                raise _fail(
                    what or f"{_rule(rule)}{self.subject} did not register on_complete within {_ms(wait)}"
                )

    def expect_error(
        self,
        expected: type[BaseException] | BaseException,
        timeout: float | None = None,
        rule: str | None = None,
    ) -> None:
        """An error must be registered: an instance of a class, or that very object (rule 2.10)."""
        wait = self._timeout(timeout)
        with self._cond:
            if not _own_time.wait_for(self._cond, lambda: self._error is not None, wait):
                raise _fail(f"{_rule(rule)}{self.subject} did not register on_error within {_ms(wait)}")
            error = self._error
        if isinstance(expected, BaseException):
            if error is not expected:
                raise _fail(
                    f"{_rule(rule)}{self.subject} registered on_error({error!r}); expected that very object"
                    f" {expected!r}"
                )
        elif not isinstance(error, expected):
            raise _fail(
                f"{_rule(rule)}{self.subject} registered on_error({error!r}); expected a {expected.__name__}"
            )

    def expect_none(self, timeout: float | None = None, what: str = "") -> None:
        """Nothing may be registered during the no-signals window."""
        wait = self.env.default_no_signals_timeout if timeout is None else timeout
        with self._cond:
            arrived = _own_time.wait_for(
                self._cond, lambda: bool(self._items) or self._completed or self._error is not None, wait
            )
            if arrived:
                seen = f"on_next({self._items[0]!r})" if self._items else "a terminal signal"
                raise _fail(f"{what or 'expected no signal'}, but {self.subject} registered {seen}")


class WhiteboxSubscriberProbe(BlackboxProbe[T]):
    """A :class:`BlackboxProbe` that also receives the Subscriber's puppet (first one wins)."""

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self._puppet: SubscriberPuppet | None = None

    def register_on_subscribe(self, puppet: SubscriberPuppet) -> None:
        with self._cond:
            if self._puppet is None:  # later registrations are ignored, as in the JVM TCK
                self._puppet = puppet
                self._cond.notify_all()

    def puppet(self, timeout: float | None = None) -> SubscriberPuppet:
        """The registered puppet, waiting up to ``timeout`` for ``register_on_subscribe``."""
        wait = self._timeout(timeout)
        with self._cond:
            if not _own_time.wait_for(self._cond, lambda: self._puppet is not None, wait):
                raise _fail(
                    f"the Subscriber did not registerOnSubscribe within {_ms(wait)}: call"
                    " probe.register_on_subscribe(puppet) from on_subscribe"
                )
            assert self._puppet is not None
            return self._puppet


class BlackboxSubscriberProxy(Subscriber[T], Generic[T]):
    """Records every signal on ``probe``, then forwards it to ``target``."""

    def __init__(self, probe: BlackboxProbe[T], target: Subscriber[T]) -> None:
        self.probe = probe
        self.target = target

    def on_subscribe(self, subscription: Subscription) -> None:
        self.target.on_subscribe(subscription)

    def on_next(self, item: T) -> None:
        self.probe.register_on_next(item)
        self.target.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self.probe.register_on_error(error)
        self.target.on_error(error)

    def on_complete(self) -> None:
        self.probe.register_on_complete()
        self.target.on_complete()


class TerminalGuardSubscription(Subscription):
    """A Subscription that flops when used *during* a terminal signal (rule 2.3).

    :meth:`deliver_complete` / :meth:`deliver_error` set a per-thread flag around the call,
    so only synchronous calls made from inside the signal are caught; requests made from
    ``on_subscribe`` or from other threads are fine (the JVM walks the stack instead).
    """

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self._inside = threading.local()
        self.serial = SerialCalls(env, lambda: "the Subscriber")
        """Rule 2.7, as for the ManualPublisher's subscription."""

    def _current(self) -> str | None:
        return getattr(self._inside, "signal", None)

    def request(self, n: int) -> None:
        self.serial.guarded(f"request({n!r})", lambda: self._check(f"request({n!r})"))

    def cancel(self) -> None:
        self.serial.guarded("cancel()", lambda: self._check("cancel()"))

    def _check(self, call: str) -> None:
        signal = self._current()
        if signal is not None:
            self.env.record_failure(f"rule 2.3: Subscription.{call} was called inside {signal}")

    def deliver_complete(self, subscriber: Subscriber[object]) -> None:
        self._deliver("on_complete", "on_complete()", subscriber.on_complete)

    def deliver_error(self, subscriber: Subscriber[object], error: BaseException) -> None:
        self._deliver("on_error", f"on_error({_describe(error)})", lambda: subscriber.on_error(error))

    def _deliver(self, signal: str, what: str, call: Callable[[], None]) -> None:
        """``call()`` marked as inside ``signal``; it must return normally (rule 2.13)."""
        self._inside.signal = signal
        try:
            call()
        except TCKFailure:
            raise
        except Exception as exc:
            raise _fail(
                f"rule 2.13: the Subscriber's {what} raised {_describe(exc)}; a Subscriber's signal methods"
                " must return normally"
            ) from exc
        finally:
            self._inside.signal = None


# -- the helper publisher ------------------------------------------------------------------

_executor_lock = threading.Lock()
_executor: concurrent.futures.ThreadPoolExecutor | None = None


def shared_helper_executor() -> concurrent.futures.Executor:
    """The 4-thread pool helper publishers run on by default (created on first use)."""
    global _executor
    with _executor_lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="rstreams-tck-helper")
        return _executor


_BATCH = 1024
"""Elements sent per executor task before the subscription yields its thread."""


class HelperPublisher(Publisher[T], Generic[T]):
    """``create_element(i)`` for ``i`` in ``range(count)`` (``count=None``: endless), asynchronously.

    Each subscription is a small actor: its signals go into a queue and at most one
    executor task handles them at a time, so the Subscriber's methods are called serially
    (1.3) and never on the caller's stack. ``on_subscribe`` is delivered asynchronously.
    Completion follows the last element at once (without another request), and an empty
    publisher completes right after ``on_subscribe``. ``request(n <= 0)`` gives
    ``on_error`` (3.9), demand saturates at ``2**63 - 1`` (3.17), and an element factory
    that raises ends the stream with that error. :meth:`stop` ends every subscription
    without a further signal: the TCK calls it when the case that made the publisher ends.
    """

    def __init__(
        self,
        create_element: Callable[[int], T],
        count: int | None,
        executor: concurrent.futures.Executor | None = None,
    ) -> None:
        if count is not None and count < 0:
            raise ValueError(f"HelperPublisher needs count >= 0 or None, got {count}")
        self._create_element = create_element
        self._count = count
        self._executor = shared_helper_executor() if executor is None else executor
        self._subscriptions: weakref.WeakSet[_HelperSubscription[T]] = weakref.WeakSet()
        self._stopped = False

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        check_subscriber(subscriber)
        indices: Iterator[int] = itertools.count() if self._count is None else iter(range(self._count))
        subscription = _HelperSubscription(
            subscriber, self._create_element, indices, self._count, self._executor
        )
        if self._stopped:
            return  # the case that made this publisher is over: nothing more is delivered
        self._subscriptions.add(subscription)
        subscription.start()

    def stop(self) -> None:
        """Stop delivering to every subscriber, now and later (the case is over)."""
        self._stopped = True
        for subscription in list(self._subscriptions):
            subscription.stop()


class _HelperSubscription(Subscription, Generic[T]):
    def __init__(
        self,
        subscriber: Subscriber[T],
        create_element: Callable[[int], T],
        indices: Iterator[int],
        count: int | None,
        executor: concurrent.futures.Executor,
    ) -> None:
        self._subscriber: Subscriber[T] | None = subscriber
        self._create_element = create_element
        self._indices = indices
        self._remaining = count  # None: endless
        self._executor = executor
        self._demand = 0
        self._signals: deque[tuple[str, int]] = deque()
        self._running = False
        self._lock = threading.Lock()

    def start(self) -> None:
        self._signal("subscribe", 0)

    def stop(self) -> None:
        """No further signal to the subscriber; pending work finds nobody."""
        self._subscriber = None

    def request(self, n: int) -> None:
        self._signal("request", n)

    def cancel(self) -> None:
        self._signal("cancel", 0)

    def _signal(self, kind: str, n: int) -> None:
        with self._lock:
            self._signals.append((kind, n))
            if self._running:
                return
            self._running = True
        self._schedule()

    def _schedule(self) -> None:
        try:
            self._executor.submit(self._run)
        except RuntimeError as exc:  # the executor was shut down
            self._terminate(exc)

    def _run(self) -> None:
        for _ in range(16):  # then yield the thread to other subscriptions
            with self._lock:
                if not self._signals:
                    self._running = False
                    return
                kind, n = self._signals.popleft()
            self._handle(kind, n)
        self._schedule()

    def _handle(self, kind: str, n: int) -> None:
        subscriber = self._subscriber
        if subscriber is None:
            return  # cancelled or terminated: every signal is a no-op (3.6, 3.7)
        if kind == "subscribe":
            if not self._call(subscriber.on_subscribe, self):
                return
            if self._remaining == 0:
                self._complete()
        elif kind == "request":
            problem = demand.invalid(n)
            if problem is not None:
                self._terminate(problem)
                return
            had_demand = self._demand > 0
            self._demand = demand.add(self._demand, n)
            if not had_demand:
                with self._lock:
                    self._signals.append(("send", 0))
        elif kind == "send":
            self._send_batch()
        else:  # cancel
            self._subscriber = None

    def _send_batch(self) -> None:
        for _ in range(_BATCH):
            if self._subscriber is None or self._demand == 0:
                return
            subscriber = self._subscriber
            index = next(self._indices)
            try:
                item = self._create_element(index)
            except Exception as exc:
                self._terminate(exc)
                return
            self._demand = demand.sub(self._demand, 1)
            if self._remaining is not None:
                self._remaining -= 1
            if not self._call(subscriber.on_next, item):
                return
            if self._remaining == 0:
                self._complete()
                return
        if self._demand > 0:
            with self._lock:
                self._signals.append(("send", 0))

    def _call(self, signal: Callable[[Any], None], argument: Any) -> bool:
        try:
            signal(argument)
        except Exception as exc:  # rule 2.13: a Subscriber that raises is considered cancelled
            report_unhandled(exc, f"HelperPublisher: Subscriber.{signal.__name__}")
            self._subscriber = None
            return False
        return True

    def _complete(self) -> None:
        subscriber, self._subscriber = self._subscriber, None
        if subscriber is not None:
            try:
                subscriber.on_complete()
            except Exception as exc:
                report_unhandled(exc, "HelperPublisher: Subscriber.on_complete")

    def _terminate(self, error: BaseException) -> None:
        subscriber, self._subscriber = self._subscriber, None
        if subscriber is not None:
            try:
                subscriber.on_error(error)
            except Exception as exc:
                report_unhandled(exc, "HelperPublisher: Subscriber.on_error")


class ElementSource(Subscriber[T], Generic[T]):
    """Pulls fresh element values from a publisher one at a time (the JVM stage's ``tees``)."""

    def __init__(self, env: TestEnvironment, publisher: Publisher[T]) -> None:
        self.env = env
        self._subscription: Subscription | None = None
        self._items: deque[T] = deque()
        self._end: str | None = None
        self._cond = threading.Condition()
        publisher.subscribe(self)

    def on_subscribe(self, subscription: Subscription) -> None:
        with self._cond:
            if self._subscription is not None:
                subscription.cancel()
                return
            self._subscription = subscription
            self._cond.notify_all()

    def on_next(self, item: T) -> None:
        check_item(item)
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        with self._cond:
            self._end = f"the element source failed: {error!r}"
            self._cond.notify_all()

    def on_complete(self) -> None:
        with self._cond:
            self._end = "the element source completed"
            self._cond.notify_all()

    def next_element(self) -> T:
        """Request one element and wait for it (up to the default timeout)."""
        wait = self.env.default_timeout
        with self._cond:
            if not _own_time.wait_for(
                self._cond, lambda: self._subscription is not None or self._end is not None, wait
            ):
                raise _fail(f"the helper publisher did not call on_subscribe within {_ms(wait)}")
            subscription = self._subscription
        if subscription is not None:
            subscription.request(1)
        with self._cond:
            if not _own_time.wait_for(self._cond, lambda: bool(self._items) or self._end is not None, wait):
                raise _fail(f"the helper publisher did not deliver an element within {_ms(wait)}")
            if not self._items:
                raise _fail(f"expected an element from the helper publisher, but {self._end}")
            return self._items.popleft()

    def cancel(self) -> None:
        with self._cond:
            subscription, self._subscription = self._subscription, None
            self._end = self._end or "the element source was cancelled"
        if subscription is not None:
            subscription.cancel()
