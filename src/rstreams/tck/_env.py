"""The TCK's test environment: timeouts, the async-error list, and test-driven subscribers.

Theory of operation:

* A :class:`TestEnvironment` is made per TCK case. It holds three durations, in seconds:
  ``default_timeout`` (how long to wait for something expected), ``default_no_signals_timeout``
  (the window in which nothing may happen) and ``default_poll_timeout`` (the longest single
  wait while expecting an error). Defaults come from the environment variables
  ``RSTREAMS_TCK_DEFAULT_TIMEOUT_MS`` (500 ms), ``RSTREAMS_TCK_DEFAULT_NO_SIGNALS_TIMEOUT_MS``
  (100 ms) and ``RSTREAMS_TCK_DEFAULT_POLL_TIMEOUT_MS`` (10 ms), read by every constructor;
  explicit arguments win. The JVM TCK defaults to 100 ms for all three and reads its poll
  variable under a misspelt name; here the names are the documented ones, the expected-
  signal timeout is longer (Python threads and a loaded CI box are slower to answer; a
  correct publisher answers at once, so this costs nothing when it passes) and the quiet
  window is short, because every case pays it.
* Failures found on other threads (inside ``on_next`` called by a publisher's thread, say)
  cannot be raised to the test, so they are *recorded* in the environment's async-error
  list (:meth:`TestEnvironment.record_failure`); ``on_error`` received by the TCK's
  subscribers is recorded there too, as in the JVM TCK. The test thread later checks the
  list (:meth:`~TestEnvironment.verify_no_async_errors`) or pops an expected error from it
  (:meth:`~TestEnvironment.expect_error`). Checks made on the test thread record *and* raise
  (:meth:`~TestEnvironment.flop`), so a failure surfaces at once with its own message.
* Every wait is bounded and sleeps on the environment's one condition variable, which the
  signal methods notify; nothing spins. Signals may arrive on any thread, or re-entrantly
  on the test thread. A wait for progress also ends as soon as a failure is recorded, so
  the rule that broke first is reported at once instead of after a timeout.
* Containment: every subscriber the TCK makes counts the elements that reach it after the
  TCK cancelled it. Past :data:`RUNAWAY_LIMIT` such elements the stream is a runaway: a
  rule-3.12 failure with the count is recorded and ``on_next`` raises
  :class:`~rstreams.tck._registry.StreamAbandoned` to unwind the publisher's loop. When a
  case ends its subscribers are *closed* (later elements are only counted) and cancelled.
* The calls the TCK makes into the implementation are checked to return normally:
  ``subscribe`` (rule 1.9), ``request`` (3.16) and ``cancel`` (3.15); a raise is a failure
  that names the rule, the exception's type and its text.

:class:`ManualSubscriber` is the workhorse: it starts with no demand, requests only when the
test says so, keeps received elements in a bounded queue, and records every rule breach it
can see by itself (signals before ``on_subscribe``, after a terminal signal, beyond demand).
"""

from __future__ import annotations

import itertools
import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, Final, Generic, NoReturn, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.tck._registry import StreamAbandoned, TCKFailure

__all__ = [
    "DEFAULT_NO_SIGNALS_TIMEOUT_MS",
    "DEFAULT_POLL_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "RUNAWAY_LIMIT",
    "TEST_BUFFER_SIZE",
    "BlackholeSubscriber",
    "BlackholeSubscriberWithSubscriptionSupport",
    "Latch",
    "ManualSubscriber",
    "ManualSubscriberWithSubscriptionSupport",
    "Promise",
    "SubscriberBufferOverflowError",
    "TestEnvironment",
    "TestSubscriber",
]

T = TypeVar("T")
E = TypeVar("E", bound=BaseException)

DEFAULT_TIMEOUT_MS: Final = 500
DEFAULT_NO_SIGNALS_TIMEOUT_MS: Final = 100
DEFAULT_POLL_TIMEOUT_MS: Final = 10
TEST_BUFFER_SIZE: Final = 16
"""Elements a ManualSubscriber queues is twice this (32), as in the JVM TCK."""
RUNAWAY_LIMIT: Final = 10_000
"""Elements after ``cancel()`` that make a stream a runaway (rule 3.12). A correct publisher
may still deliver what was in flight when the cancel came (a batch, a socket read's worth);
it does not keep going for ten thousand elements."""
MAX_RECORDED: Final = 100
"""Recorded errors kept per case; a flood of violations is counted beyond this, not stored."""


def env_millis(name: str, default_ms: int) -> float:
    """Seconds from the environment variable ``name`` (whole milliseconds), else ``default_ms``.

    A value that is not a non-negative whole number raises :class:`ValueError` naming it.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default_ms / 1000
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be a whole number of milliseconds, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value}")
    return value / 1000


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


class SubscriberBufferOverflowError(TCKFailure):
    """Raised into a publisher's ``on_next`` when the TCK subscriber's queue is full."""


class TestEnvironment:
    """Timeouts and the thread-safe list of asynchronous errors for one TCK case."""

    __test__ = False  # not a pytest test class, despite the name

    def __init__(
        self,
        default_timeout: float | None = None,
        default_no_signals_timeout: float | None = None,
        default_poll_timeout: float | None = None,
    ) -> None:
        self.default_timeout = (
            env_millis("RSTREAMS_TCK_DEFAULT_TIMEOUT_MS", DEFAULT_TIMEOUT_MS)
            if default_timeout is None
            else default_timeout
        )
        self.default_no_signals_timeout = (
            env_millis("RSTREAMS_TCK_DEFAULT_NO_SIGNALS_TIMEOUT_MS", DEFAULT_NO_SIGNALS_TIMEOUT_MS)
            if default_no_signals_timeout is None
            else default_no_signals_timeout
        )
        self.default_poll_timeout = (
            env_millis("RSTREAMS_TCK_DEFAULT_POLL_TIMEOUT_MS", DEFAULT_POLL_TIMEOUT_MS)
            if default_poll_timeout is None
            else default_poll_timeout
        )
        for name in ("default_timeout", "default_no_signals_timeout", "default_poll_timeout"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        self.cond = threading.Condition()
        """The case's one condition: every TCK object of the case waits and notifies on it."""
        self._errors: list[BaseException] = []
        self._dropped = 0
        self._failed = False
        self._tracked: list[weakref.ref[TestSubscriber[Any]]] = []
        self.used = False
        """Set when a case ran with this environment; the runner gives the next case a fresh one."""

    def fresh(self) -> TestEnvironment:
        """A new environment with the same timeouts and nothing recorded."""
        return TestEnvironment(
            self.default_timeout, self.default_no_signals_timeout, self.default_poll_timeout
        )

    def __repr__(self) -> str:
        return (
            f"TestEnvironment(default_timeout={self.default_timeout}, "
            f"default_no_signals_timeout={self.default_no_signals_timeout}, "
            f"default_poll_timeout={self.default_poll_timeout})"
        )

    # -- asynchronous errors -------------------------------------------------------
    def record_async_error(self, error: BaseException) -> None:
        """Record ``error`` (from any thread) for the test thread to find later.

        Beyond :data:`MAX_RECORDED` errors only a count is kept.
        """
        with self.cond:
            if len(self._errors) < MAX_RECORDED:
                self._errors.append(error)
            else:
                self._dropped += 1
            self._failed = self._failed or isinstance(error, TCKFailure)
            self.cond.notify_all()

    @property
    def has_failure(self) -> bool:
        """Whether a :class:`TCKFailure` was recorded in this case."""
        return self._failed

    def first_failure(self) -> TCKFailure | None:
        """The earliest recorded :class:`TCKFailure`, or ``None``."""
        with self.cond:
            return next((e for e in self._errors if isinstance(e, TCKFailure)), None)

    def wait_for(self, predicate: Callable[[], object], timeout: float) -> bool:
        """Wait on the case's condition until ``predicate()`` or a recorded failure; whether it held."""
        with self.cond:
            return bool(self.cond.wait_for(lambda: predicate() or self._failed, timeout) and predicate())

    def record_failure(self, message: str) -> TCKFailure:
        """Record a :class:`TCKFailure` with ``message`` and return it, without raising.

        What signal methods use: raising into a publisher would only confuse it.
        """
        failure = TCKFailure(message)
        self.record_async_error(failure)
        return failure

    def flop(self, message: str) -> NoReturn:
        """Record a :class:`TCKFailure` with ``message`` and raise it on the caller's stack."""
        raise self.record_failure(message)

    @property
    def async_errors(self) -> list[BaseException]:
        """A copy of the recorded errors, oldest first."""
        with self.cond:
            return list(self._errors)

    def clear_async_errors(self) -> None:
        with self.cond:
            self._errors.clear()
            self._failed = False

    def drop_async_error(self) -> BaseException | None:
        """Remove and return the oldest recorded error, or ``None``."""
        with self.cond:
            return self._errors.pop(0) if self._errors else None

    def verify_no_async_errors_no_delay(self) -> None:
        """Raise the first recorded error now (a non-assertion one wrapped in TCKFailure)."""
        errors = self.async_errors
        if not errors:
            return
        first = errors[0]
        if len(errors) == 1 and isinstance(first, AssertionError):
            raise first
        more = "".join(f"\n  also: {_describe(e)}" for e in errors[1:5])
        if self._dropped:
            more += f"\n  ... and {self._dropped} more not kept"
        prefix = "" if isinstance(first, AssertionError) else "async error during test execution: "
        raise TCKFailure(f"{prefix}{_describe(first)}{more}") from first

    def verify_no_async_errors(self, delay: float | None = None) -> None:
        """Wait the quiet window (``delay`` or the no-signals timeout) for errors, then verify.

        Returns early with a failure as soon as an error is recorded.
        """
        window = self.default_no_signals_timeout if delay is None else delay
        with self.cond:
            self.cond.wait_for(lambda: bool(self._errors), window)
        self.verify_no_async_errors_no_delay()

    def expect_error(
        self,
        error_type: type[E],
        timeout: float | None = None,
        message_part: str | Sequence[str] | None = None,
        error_msg: str | None = None,
    ) -> E:
        """Wait for the first recorded error, remove it, and require it to be an ``error_type``.

        The wait lasts ``timeout`` (default: the default timeout) in total, waking at least
        every poll timeout. With ``message_part`` (one string or alternatives), the error's
        message must contain one of them.
        """
        total = self.default_timeout if timeout is None else timeout
        deadline = time.monotonic() + total
        with self.cond:
            while not self._errors:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self.cond.wait(min(self.default_poll_timeout or remaining, remaining))
            error = self._errors.pop(0) if self._errors else None
        name = error_type.__name__
        if error is None:
            self.flop(error_msg or f"expected on_error({name}) within {_ms(total)}, but no error arrived")
        if not isinstance(error, error_type):
            self.flop(f"expected on_error({name}) but the first error was {_describe(error)}")
        if message_part is not None:
            parts = (message_part,) if isinstance(message_part, str) else tuple(message_part)
            if not any(part in str(error) for part in parts):
                self.flop(f"expected the {name}'s message to contain one of {parts!r}, got {str(error)!r}")
        return error

    # -- subscribing -------------------------------------------------------------
    def subscribe(
        self, publisher: Publisher[T], subscriber: TestSubscriber[T], timeout: float | None = None
    ) -> None:
        """``publisher.subscribe(subscriber)``, then require ``on_subscribe`` within the timeout.

        ``subscribe`` must return normally (rule 1.9). Also verifies (without delay) that
        nothing was recorded meanwhile, so a signal before ``on_subscribe`` fails right
        here. The subscriber is closed and cancelled when the case ends.
        """
        self.call_subscribe(publisher, subscriber)
        total = self.default_timeout if timeout is None else timeout
        subscriber.subscription.expect_completion(
            total, f"rule 1.9: the publisher did not call on_subscribe within {_ms(total)} of subscribe()"
        )
        self.verify_no_async_errors_no_delay()

    def new_manual_subscriber(
        self, publisher: Publisher[T], timeout: float | None = None
    ) -> ManualSubscriber[T]:
        """A :class:`ManualSubscriber` subscribed to ``publisher``, holding its subscription."""
        subscriber: ManualSubscriber[T] = ManualSubscriber(self)
        self.subscribe(publisher, subscriber, timeout)
        return subscriber

    def new_blackhole_subscriber(
        self, publisher: Publisher[T], timeout: float | None = None
    ) -> BlackholeSubscriber[T]:
        """A :class:`BlackholeSubscriber` subscribed to ``publisher``, holding its subscription."""
        subscriber: BlackholeSubscriber[T] = BlackholeSubscriber(self)
        self.subscribe(publisher, subscriber, timeout)
        return subscriber

    def call_subscribe(self, publisher: Publisher[T], subscriber: TestSubscriber[T]) -> None:
        """Track ``subscriber``, then ``publisher.subscribe(subscriber)``, which must not raise (1.9)."""
        self.track(subscriber)
        try:
            publisher.subscribe(subscriber)
        except (TCKFailure, StreamAbandoned):
            raise
        except Exception as exc:
            self.flop(
                f"rule 1.9: subscribe() raised {_describe(exc)}; it must return normally (a publisher that"
                " cannot serve a subscriber calls on_subscribe, then on_error)"
            )

    def track(self, subscriber: TestSubscriber[Any]) -> None:
        """Close and cancel ``subscriber`` when the case ends (held weakly, see rule 3.13)."""
        self._tracked.append(weakref.ref(subscriber))

    def _subscribers(self) -> list[TestSubscriber[Any]]:
        return [s for s in (ref() for ref in self._tracked) if s is not None]

    def close(self) -> None:
        """End of the case: close every tracked subscriber and cancel its subscription."""
        tracked = self._subscribers()
        self._tracked = []
        for subscriber in tracked:
            subscriber.release()

    def abandon(self) -> None:
        """End of a case that overran: close at once, cancel from a daemon thread (never waits)."""
        tracked = self._subscribers()
        self._tracked = []
        for subscriber in tracked:
            subscriber.closed = True

        def cancel_all() -> None:
            for subscriber in tracked:
                subscriber.release()

        threading.Thread(target=cancel_all, name="rstreams-tck-abandon", daemon=True).start()

    def observation(self) -> str:
        """What the case's subscribers saw, in words: for the message of a case that overran."""
        subscribers = self._subscribers()
        elements = sum(s.arrived for s in subscribers)
        after = sum(s.after_cancel for s in subscribers)
        last = max((s.last_signal for s in subscribers if s.last_signal is not None), default=None)
        if last is None:
            return "no signal arrived at all" if not elements else f"{elements} elements arrived"
        age = time.monotonic() - last
        if after and age < self.default_timeout:
            return (
                f"rule 3.12: a runaway stream: {after} elements arrived after cancel() ({elements} in all),"
                f" the last {_ms(age)} ago"
            )
        if age < self.default_timeout:
            return f"a stream still running: {elements} elements arrived, the last {_ms(age)} ago"
        return f"the last signal arrived {_ms(age)} ago ({elements} elements in all)"


def _describe(error: BaseException) -> str:
    return str(error) if isinstance(error, TCKFailure) else f"{type(error).__name__}: {error}"


class Latch:
    """A one-shot gate the test thread waits on; ``close()`` may come from any thread."""

    def __init__(self, env: TestEnvironment) -> None:
        self._env = env
        self._closed = False

    def close(self) -> None:
        with self._env.cond:
            self._closed = True
            self._env.cond.notify_all()

    def reopen(self) -> None:
        self._closed = False

    @property
    def is_closed(self) -> bool:
        return self._closed

    def expect_close(
        self, timeout: float | None = None, error_msg: str | Callable[[], str] = "the latch was not closed"
    ) -> None:
        """Wait up to ``timeout`` (default: the default timeout); flop with ``error_msg`` if still open.

        ``error_msg`` may be a function, called at the failure so that it can say what was
        observed by then. Ends early, failing, when a failure is recorded meanwhile.
        """
        total = self._env.default_timeout if timeout is None else timeout
        if not self._env.wait_for(lambda: self._closed, total):
            message = error_msg() if callable(error_msg) else error_msg
            self._env.flop(f"{message} (waited {_ms(total)})")


class Promise(Generic[T]):
    """A value that is set once, maybe from another thread, and awaited by the test."""

    def __init__(self, env: TestEnvironment, what: str = "value") -> None:
        self._env = env
        self._what = what
        self._cond = env.cond
        self._done = False
        self._value: T | None = None

    def complete(self, value: T) -> bool:
        """Set the value; a second completion is recorded as a failure and ignored (False)."""
        if self.try_complete(value):
            return True
        self._env.record_failure(f"the {self._what} was completed twice")
        return False

    def try_complete(self, value: T) -> bool:
        """Set the value unless it is set already; whether this call set it. Records nothing."""
        with self._cond:
            if self._done:
                return False
            self._value, self._done = value, True
            self._cond.notify_all()
            return True

    @property
    def is_completed(self) -> bool:
        return self._done

    @property
    def value(self) -> T:
        """The value; flops if it has not been set."""
        with self._cond:
            if self._done:
                return self._value  # type: ignore[return-value]
        self._env.flop(f"the {self._what} was used before it was set")

    def peek(self) -> T | None:
        """The value, or ``None`` while unset; never fails."""
        return self._value

    def expect_completion(self, timeout: float | None = None, error_msg: str | None = None) -> T:
        total = self._env.default_timeout if timeout is None else timeout
        if self._env.wait_for(lambda: self._done, total):
            return self._value  # type: ignore[return-value]
        self._env.flop(error_msg or f"the {self._what} was not set within {_ms(total)}")


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
        self._runaway = False

    @property
    def after_cancel(self) -> int:
        """Elements that arrived after the TCK cancelled this subscriber's subscription."""
        return 0 if self._cancelled_at is None else self.arrived - self._cancelled_at

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
                    f"rule 3.12: {self.after_cancel} elements arrived after cancel() and they kept coming;"
                    " the TCK stopped the stream by raising StreamAbandoned from on_next"
                )
            raise StreamAbandoned(f"{self.after_cancel} elements after cancel()")
        return not self.closed

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
        except (TCKFailure, StreamAbandoned):
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

    # -- signals -------------------------------------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if not self.subscription.try_complete(subscription):
            self.env.record_failure("rule 1.9/2.5: on_subscribe was called twice for one subscribe()")
            subscription.cancel()
        with self._cond:
            self._cond.notify_all()

    def on_next(self, item: T) -> None:
        if not self._element_arrived():
            return
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
            return
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
            return
        problem = self._terminal_problem(f"on_error({_describe(error)})")
        with self._cond:
            if not self._terminated:
                self.error = error
            self._cond.notify_all()
        if problem:
            self.env.record_failure(problem)
        self.env.record_async_error(error)

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

    def _state(self) -> str:
        end = f", then {self._terminal_name}" if self._terminated else ""
        return f"{self.received} received of {self.requested} requested{end}"

    def _take(self, total: float, what: str, error_msg: str | None) -> object:
        """The next queued element or end-of-stream marker; flops on error, timeout or a failure."""
        env = self.env
        with self._cond:
            self._cond.wait_for(
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
            self.env.flop(f"{error_msg or f'expected {what}'}; stopped at a failure; {self._state()}")
        self.env.flop(
            f"{error_msg or f'expected {what}'}, but none arrived within {_ms(total)}; {self._state()}"
        )

    def next_element(self, timeout: float | None = None, error_msg: str | None = None) -> T:
        """The next element within ``timeout``; flops on timeout, completion or error."""
        total = self.env.default_timeout if timeout is None else timeout
        item = self._take(total, "an element", error_msg)
        if item is _END:
            self.env.flop(f"{error_msg or 'expected an element'}, but the stream completed; {self._state()}")
        return item  # type: ignore[return-value]

    def next_elements(self, n: int, timeout: float | None = None, error_msg: str | None = None) -> list[T]:
        """The next ``n`` elements, all within one ``timeout``; the failure says how many came."""
        total = self.env.default_timeout if timeout is None else timeout
        env = self.env

        def queued() -> int:
            return sum(1 for item in itertools.islice(self._queue, n + 1) if item is not _END)

        with self._cond:
            self._cond.wait_for(
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
            self.env.flop(f"{what}, but the stream completed after {got} of them; {self._state()}")
        if error is not None:
            self.env.flop(
                f"{what}, but got on_error({_describe(error)}) after {got} of them; {self._state()}"
            )
        if env.has_failure:
            self.env.flop(f"{what}; stopped waiting at a failure after {got} of them; {self._state()}")
        self.env.flop(f"{what}, but only {got} arrived within {_ms(total)}; {self._state()}")

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
                f"{error_msg or 'expected on_complete'}, but got the element {item!r}; {self._state()}"
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
            self._cond.wait_for(lambda: bool(self._queue) or self.error is not None, total)
            pending = self._queue[0] if self._queue else None
            error = self.error
        if pending is not None:
            got = "on_complete" if pending is _END else f"the element {pending!r}"
            self.env.flop(f"{error_msg or 'expected no signal'}, but got {got}; {self._state()}")
        if error is not None:
            self.env.flop(f"{error_msg or 'expected no signal'}, but got on_error({_describe(error)})")

    def wait_received(self, more_than: int, timeout: float) -> int:
        """Wait up to ``timeout`` until more than ``more_than`` elements arrived; the count."""
        with self._cond:
            self._cond.wait_for(lambda: self.received > more_than, timeout)
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
