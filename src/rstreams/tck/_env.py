"""The TCK's test environment: timeouts, the async-error list, latches and promises.

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
  signal methods notify; nothing spins. The bounds are seconds of this process's own time
  (:mod:`rstreams.tck._own_time`: wall time less what its threads waited for a CPU), so a
  loaded machine that serves the implementation's threads late does not fail it. Signals
  may arrive on any thread, or re-entrantly on the test thread. A wait for progress also
  ends as soon as a failure is recorded, so the rule that broke first is reported at once
  instead of after a timeout.
* Containment: every subscriber the TCK makes counts the elements that reach it after the
  TCK cancelled it. Past :data:`RUNAWAY_LIMIT` such elements the stream is a runaway: a
  rule-3.12 failure with the count is recorded and ``on_next`` raises
  :class:`~rstreams.tck._registry.StreamAbandoned` to unwind the publisher's loop. When a
  case ends its subscribers are *closed* (later elements are only counted) and cancelled.
* The calls the TCK makes into the implementation are checked to return normally:
  ``subscribe`` (rule 1.9), ``request`` (3.16) and ``cancel`` (3.15); a raise is a failure
  that names the rule, the exception's type and its text.

The subscribers the TCK drives (:class:`~rstreams.tck._test_subscribers.ManualSubscriber`
and its kin) live in :mod:`rstreams.tck._test_subscribers`.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final, Generic, NoReturn, Protocol, TypeVar

from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.tck import _own_time
from rstreams.tck._failures import StreamAbandoned, TCKFailure

__all__ = [
    "DEFAULT_NO_SIGNALS_TIMEOUT_MS",
    "DEFAULT_POLL_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
    "MAX_RECORDED",
    "RUNAWAY_LIMIT",
    "TEST_BUFFER_SIZE",
    "Latch",
    "Promise",
    "TestEnvironment",
    "env_millis",
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


class TrackedSubscriber(Subscriber[Any], Protocol):
    """What the environment needs of the TCK's subscribers (rstreams.tck._test_subscribers):
    their subscription promise, what arrived, and a way to release them at the end of a case."""

    subscription: Promise[Subscription]
    arrived: int
    closed: bool
    last_signal: float | None

    @property
    def after_cancel(self) -> int: ...

    def release(self) -> None: ...


class LateBreaches:
    """Rule breaches a stream commits after its case ended, kept for a later case to report.

    One per verification class: the runner hands it to each case's environment, and a case
    that finds breaches of earlier cases' streams in it fails, naming the case.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: list[tuple[str, str]] = []

    def add(self, case: str, message: str) -> None:
        with self._lock:
            if len(self._items) < MAX_RECORDED:
                self._items.append((case, message))

    def take(self) -> list[tuple[str, str]]:
        """The breaches recorded so far, oldest first; the log is empty afterwards."""
        with self._lock:
            items, self._items = self._items, []
        return items


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
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise TypeError(f"{name} must be a number of seconds, got {value!r}")
            if value < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        self.cond = threading.Condition()
        """The case's one condition: every TCK object of the case waits and notifies on it."""
        self._errors: list[BaseException] = []
        self._dropped = 0
        self._failed = False
        self._tracked: list[weakref.ref[TrackedSubscriber]] = []
        self._on_close: list[Callable[[], None]] = []
        self.used = False
        """Set when a case ran with this environment; the runner gives the next case a fresh one."""
        self.case = ""
        """The name of the case this environment serves (set by the runner)."""
        self.late: LateBreaches | None = None
        """Where breaches seen after the case ended go (set by the runner); None: dropped."""
        self._ended = False

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
            return bool(
                _own_time.wait_for(self.cond, lambda: predicate() or self._failed, timeout) and predicate()
            )

    def record_failure(self, message: str) -> TCKFailure:
        """Record a :class:`TCKFailure` with ``message`` and return it, without raising.

        What signal methods use: raising into a publisher would only confuse it. After
        :meth:`close` nobody looks here any more: the failure goes to :meth:`record_late`.
        """
        failure = TCKFailure(message)
        if self._ended:
            self.record_late(message)
            return failure
        self.record_async_error(failure)
        return failure

    def record_late(self, message: str) -> None:
        """Keep a breach a subscriber saw after this case ended, for a later case to report."""
        if self.late is not None:
            self.late.add(self.case, message)

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
            _own_time.wait_for(self.cond, lambda: bool(self._errors), window)
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
        with self.cond:
            _own_time.wait_for(self.cond, lambda: bool(self._errors), total, self.default_poll_timeout)
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
        self, publisher: Publisher[T], subscriber: TrackedSubscriber, timeout: float | None = None
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

    def call_subscribe(self, publisher: Publisher[T], subscriber: TrackedSubscriber) -> None:
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

    def track(self, subscriber: TrackedSubscriber) -> None:
        """Close and cancel ``subscriber`` when the case ends (held weakly, see rule 3.13)."""
        self._tracked.append(weakref.ref(subscriber))

    def on_close(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` when the case ends (the TCK's own publishers stop delivering then)."""
        self._on_close.append(callback)

    def _run_on_close(self) -> None:
        callbacks, self._on_close = self._on_close, []
        for callback in callbacks:
            callback()

    def _subscribers(self) -> list[TrackedSubscriber]:
        return [s for s in (ref() for ref in self._tracked) if s is not None]

    def close(self) -> None:
        """End of the case: stop the TCK's own publishers, close every tracked subscriber and
        cancel its subscription. Failures recorded from now on are late breaches."""
        self._ended = True
        self._run_on_close()
        tracked = self._subscribers()
        self._tracked = []
        for subscriber in tracked:
            subscriber.release()

    def abandon(self) -> None:
        """End of a case that overran: close at once, cancel from a daemon thread (never waits)."""
        self._run_on_close()
        tracked = self._subscribers()
        self._tracked = []
        for subscriber in tracked:
            subscriber.closed = True

        def cancel_all() -> None:
            for subscriber in tracked:
                subscriber.release()

        threading.Thread(target=cancel_all, name="rstreams-tck-abandon", daemon=True).start()

    def latest_signal(self) -> float | None:
        """When the last signal reached one of the case's subscribers (``time.monotonic()``), or None."""
        return max((s.last_signal for s in self._subscribers() if s.last_signal is not None), default=None)

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
