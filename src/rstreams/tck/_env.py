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
* Every wait is bounded and sleeps on a condition variable that the signal methods notify;
  nothing spins. Signals may arrive on any thread, or re-entrantly on the test thread.

:class:`ManualSubscriber` is the workhorse: it starts with no demand, requests only when the
test says so, keeps received elements in a bounded queue, and records every rule breach it
can see by itself (signals before ``on_subscribe``, after a terminal signal, beyond demand).
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from collections import deque
from collections.abc import Sequence
from typing import Any, Final, Generic, NoReturn, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.tck._registry import TCKFailure

__all__ = [
    "DEFAULT_NO_SIGNALS_TIMEOUT_MS",
    "DEFAULT_POLL_TIMEOUT_MS",
    "DEFAULT_TIMEOUT_MS",
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
        self._cond = threading.Condition()
        self._errors: list[BaseException] = []
        self._tracked: list[weakref.ref[TestSubscriber[Any]]] = []

    def __repr__(self) -> str:
        return (
            f"TestEnvironment(default_timeout={self.default_timeout}, "
            f"default_no_signals_timeout={self.default_no_signals_timeout}, "
            f"default_poll_timeout={self.default_poll_timeout})"
        )

    # -- asynchronous errors -------------------------------------------------------
    def record_async_error(self, error: BaseException) -> None:
        """Record ``error`` (from any thread) for the test thread to find later."""
        with self._cond:
            self._errors.append(error)
            self._cond.notify_all()

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
        with self._cond:
            return list(self._errors)

    def clear_async_errors(self) -> None:
        with self._cond:
            self._errors.clear()

    def drop_async_error(self) -> BaseException | None:
        """Remove and return the oldest recorded error, or ``None``."""
        with self._cond:
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
        prefix = "" if isinstance(first, AssertionError) else "async error during test execution: "
        raise TCKFailure(f"{prefix}{_describe(first)}{more}") from first

    def verify_no_async_errors(self, delay: float | None = None) -> None:
        """Wait the quiet window (``delay`` or the no-signals timeout) for errors, then verify.

        Returns early with a failure as soon as an error is recorded.
        """
        window = self.default_no_signals_timeout if delay is None else delay
        with self._cond:
            self._cond.wait_for(lambda: bool(self._errors), window)
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
        with self._cond:
            while not self._errors:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(min(self.default_poll_timeout or remaining, remaining))
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

        Also verifies (without delay) that nothing was recorded meanwhile, so a signal before
        ``on_subscribe`` fails right here. The subscriber is cancelled when the case ends.
        """
        self.track(subscriber)
        publisher.subscribe(subscriber)
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

    def track(self, subscriber: TestSubscriber[Any]) -> None:
        """Cancel ``subscriber``'s subscription when the case ends (held weakly, see rule 3.13)."""
        self._tracked.append(weakref.ref(subscriber))

    def close(self) -> None:
        """End of the case: cancel every tracked subscription that is still open."""
        tracked, self._tracked = self._tracked, []
        for ref in tracked:
            subscriber = ref()
            if subscriber is not None:
                subscriber.release()


def _describe(error: BaseException) -> str:
    return str(error) if isinstance(error, TCKFailure) else f"{type(error).__name__}: {error}"


class Latch:
    """A one-shot gate the test thread waits on; ``close()`` may come from any thread."""

    def __init__(self, env: TestEnvironment) -> None:
        self._env = env
        self._event = threading.Event()

    def close(self) -> None:
        self._event.set()

    def reopen(self) -> None:
        self._event.clear()

    @property
    def is_closed(self) -> bool:
        return self._event.is_set()

    def expect_close(self, timeout: float | None = None, error_msg: str = "the latch was not closed") -> None:
        """Wait up to ``timeout`` (default: the default timeout); flop with ``error_msg`` if still open."""
        total = self._env.default_timeout if timeout is None else timeout
        if not self._event.wait(total):
            self._env.flop(f"{error_msg} (waited {_ms(total)})")


class Promise(Generic[T]):
    """A value that is set once, maybe from another thread, and awaited by the test."""

    def __init__(self, env: TestEnvironment, what: str = "value") -> None:
        self._env = env
        self._what = what
        self._cond = threading.Condition()
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
        with self._cond:
            if self._cond.wait_for(lambda: self._done, total):
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

    def on_subscribe(self, subscription: Subscription) -> None:
        self.env.record_failure(f"unexpected on_subscribe({type(subscription).__name__})")

    def on_next(self, item: T) -> None:
        self.env.record_failure(f"unexpected on_next({item!r})")

    def on_error(self, error: BaseException) -> None:
        self.env.record_failure(f"unexpected on_error({_describe(error)})")

    def on_complete(self) -> None:
        self.env.record_failure("unexpected on_complete()")

    def request(self, n: int) -> None:
        """``request(n)`` on the subscription; flops if there is none yet."""
        self.subscription.value.request(n)

    def cancel(self) -> None:
        """``cancel()`` on the subscription; flops if there is none yet."""
        self.subscription.value.cancel()

    def release(self) -> None:
        """Cancel the subscription if there is one, ignoring errors; used at the end of a case."""
        subscription = self.subscription.peek()
        if subscription is not None:
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
        self._cond = threading.Condition()
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
        """The next queued element or end-of-stream marker; flops on error or timeout."""
        with self._cond:
            self._cond.wait_for(lambda: bool(self._queue) or self._end_taken or self.error is not None, total)
            if self._queue:
                item = self._queue.popleft()
                self._end_taken = item is _END
                return item
            if self._end_taken:
                return _END  # end-of-stream stays the answer once reached
            error = self.error
        if error is not None:
            self.env.flop(f"{error_msg or f'expected {what}'}, but got on_error({_describe(error)})")
        self.env.flop(f"{error_msg or f'expected {what}'} within {_ms(total)}; {self._state()}")

    def next_element(self, timeout: float | None = None, error_msg: str | None = None) -> T:
        """The next element within ``timeout``; flops on timeout, completion or error."""
        total = self.env.default_timeout if timeout is None else timeout
        item = self._take(total, "an element", error_msg)
        if item is _END:
            self.env.flop(f"{error_msg or 'expected an element'}, but the stream completed; {self._state()}")
        return item  # type: ignore[return-value]

    def next_elements(self, n: int, timeout: float | None = None, error_msg: str | None = None) -> list[T]:
        """The next ``n`` elements, all within one ``timeout``."""
        total = self.env.default_timeout if timeout is None else timeout
        deadline = time.monotonic() + total
        items = []
        for i in range(n):
            msg = error_msg or f"expected {n} elements, got {i}"
            items.append(self.next_element(max(0.0, deadline - time.monotonic()), msg))
        return items

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
