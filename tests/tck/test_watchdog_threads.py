"""The watchdog sees through the implementation's own threads and its decorators.

Each implementation below is broken on purpose and changes one thing in a correct twin
defined beside it:

* the deadlock happens on a thread of the implementation's own (a delivery thread that
  holds a lock while it signals, the executor a Subscriber hands its signals to), while the
  case's thread waits in the TCK for a signal that never comes: the case fails naming the
  rule, the call and that thread's frames, not with the TCK's generic "nothing arrived";
  or the case's thread blocks in ``request()`` holding a lock its executor's task waits
  for: the executor's frames follow the case's;
* the Subscription's methods are wrapped by a ``functools.wraps`` decorator (a frame named
  ``wrapper`` stands between the TCK and ``request``), and the deadlock happens inside the
  wrapper or inside the method it wraps: still named ``request()``, rule 3.2.

The waits end when a test ends (``RELEASE``, ``HELD``), so that no thread outlives the test;
one stuck on a lock it holds itself is a daemon thread.
"""

from __future__ import annotations

import concurrent.futures
import functools
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.tck._registry import Verification, run_cases
from rstreams.tck._watchdog import CaseBlocked
from testkit.broken_publishers import PublisherOf, SyncPublisher, SyncSubscription, publisher_with
from testkit.broken_subscribers import ReferenceSubscriber, WhiteboxOf
from testkit.recording import WAIT

RELEASE = threading.Event()
"""Set by the tests when they are done: every wait below then returns."""
HELD: list[threading.Lock] = []
"""Locks the tests release when they end, so that the threads waiting for them finish."""

F = TypeVar("F", bound=Callable[..., Any])


@pytest.fixture(autouse=True)
def _release_after() -> Iterator[None]:
    RELEASE.clear()
    yield
    _release()


def _release() -> None:
    """End every wait below: set RELEASE, release the locks the abandoned threads hold."""
    RELEASE.set()
    while HELD:
        lock = HELD.pop()
        if lock.locked():
            lock.release()  # the executor's task goes on; the abandoned request() then finds it free


# -- a publisher that delivers on a thread of its own --------------------------------------


class OwnThreadPublisher(Publisher[int]):
    """Correct: each subscription has a (daemon) thread of its own that signals; ``request()``
    and ``cancel()`` only change the state under a condition and wake it."""

    daemon = True

    def __init__(self, elements: int) -> None:
        self.elements = elements

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscription = self.subscription_type(self.elements, subscriber)
        threading.Thread(target=subscription.run, name="own-delivery", daemon=self.daemon).start()

    @property
    def subscription_type(self) -> type[_OwnThreadSubscription]:
        return _OwnThreadSubscription


class _OwnThreadSubscription(Subscription):
    def __init__(self, elements: int, subscriber: Subscriber[int]) -> None:
        self.elements = elements
        self.subscriber = subscriber
        self.wake = threading.Condition()
        self.demand = 0
        self.sent = 0
        self.done = False
        self.bad: int | None = None

    def request(self, n: int) -> None:
        with self.wake:
            if n <= 0:
                self.bad = n
            self.demand = min(self.demand + max(n, 0), 2**63 - 1)
            self.wake.notify()

    def cancel(self) -> None:
        with self.wake:
            self.done = True
            self.wake.notify()

    def run(self) -> None:
        try:
            self.signal()
        except Exception:  # a Subscriber that raises cancelled its subscription (rule 2.13)
            with self.wake:
                self.done = True

    def signal(self) -> None:
        self.subscriber.on_subscribe(self)
        while True:
            with self.wake:
                self.wake.wait_for(lambda: self.done or self.demand > 0 or self.bad is not None or self.full)
                if self.done:
                    return
                if self.bad is not None or self.full:
                    self.done = True
                    end: str | int = "error" if self.bad is not None else "complete"
                else:
                    self.demand -= 1
                    end, self.sent = self.sent, self.sent + 1
            if end == "error":
                rule = "rule 3.9: request(n) needs an int n > 0 (non-positive subscription request)"
                self.subscriber.on_error(ValueError(f"{rule}, got {self.bad}"))
                return
            if end == "complete":
                self.subscriber.on_complete()
                return
            assert isinstance(end, int)
            self.deliver(end)

    @property
    def full(self) -> bool:
        return self.sent >= self.elements

    def deliver(self, item: int) -> None:
        self.subscriber.on_next(item)


class _LocksWhileDelivering(_OwnThreadSubscription):
    """Holds a non-reentrant lock while it delivers on its thread, and takes it in ``request()``:
    a request from inside ``on_next`` deadlocks that thread (rule 3.2)."""

    def __init__(self, elements: int, subscriber: Subscriber[int]) -> None:
        super().__init__(elements, subscriber)
        self.lock = threading.Lock()

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def deliver(self, item: int) -> None:
        with self.lock:
            super().deliver(item)


class LocksWhileDeliveringPublisher(OwnThreadPublisher):
    @property
    def subscription_type(self) -> type[_OwnThreadSubscription]:
        return _LocksWhileDelivering


class _WaitsInRequestFromItsThread(_OwnThreadSubscription):
    """``request()`` called on the delivery thread (from inside ``on_next``) never returns."""

    def request(self, n: int) -> None:
        if threading.current_thread().name == "own-delivery":
            RELEASE.wait()
        super().request(n)


class WaitsOnANonDaemonThreadPublisher(OwnThreadPublisher):
    daemon = False

    @property
    def subscription_type(self) -> type[_OwnThreadSubscription]:
        return _WaitsInRequestFromItsThread


# -- a subscriber that hands its signals to an executor ----------------------------------


class HandsOffSignals(ReferenceSubscriber):
    """Correct: processes each signal on an executor's thread (rule 2.2), in order; the processing
    requests the next element."""

    def __init__(self, probe: Any = None) -> None:
        super().__init__(probe)
        self.executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="hands-off")
        self.inner = self.make_inner(probe)

    def make_inner(self, probe: Any) -> ReferenceSubscriber:
        return ReferenceSubscriber(probe)

    def on_subscribe(self, subscription: Subscription) -> None:
        self.executor.submit(self.inner.on_subscribe, subscription)

    def on_next(self, item: Any) -> None:
        self.executor.submit(self.inner.on_next, item)

    def on_error(self, error: BaseException) -> None:
        self.executor.submit(self.inner.on_error, error)

    def on_complete(self) -> None:
        self.executor.submit(self.inner.on_complete)


class _NeverFinishesOnNext(ReferenceSubscriber):
    def on_next(self, item: Any) -> None:
        RELEASE.wait()
        super().on_next(item)


class HandsOffToAStuckOnNext(HandsOffSignals):
    """The processing of ``on_next`` on the executor's thread never ends: no more demand (rule 2.1)."""

    def make_inner(self, probe: Any) -> ReferenceSubscriber:
        return _NeverFinishesOnNext(probe)


# -- a Subscription that waits for its executor -------------------------------------------


class _HandsRequestsToItsExecutor(SyncSubscription):
    """Correct for the case below: ``request()`` hands the demand to its executor and waits."""

    executor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="impl-executor")

    def request(self, n: int) -> None:
        self.executor.submit(self.add, n).result()

    def add(self, n: int) -> None:
        SyncSubscription.request(self, n)


class _WaitsForItsExecutorUnderItsLock(_HandsRequestsToItsExecutor):
    """``request()`` holds a lock while it waits for its executor's task, which takes that lock
    first: the case's thread blocks in ``request()`` (rule 3.4), the executor's in ``add()``."""

    def __init__(self, publisher: SyncPublisher, subscriber: Subscriber[int]) -> None:
        super().__init__(publisher, subscriber)
        self.lock = threading.Lock()
        HELD.append(self.lock)

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def add(self, n: int) -> None:
        with self.lock:
            super().add(n)


# -- decorated Subscriptions -------------------------------------------------------------


def logged(method: F) -> F:
    """A ``functools.wraps`` decorator, as a logging or metrics library writes one."""

    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return method(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def synchronized(method: F) -> F:
    """A ``functools.wraps`` decorator that runs the method under the object's non-reentrant lock."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class _Decorated(SyncSubscription):
    """Correct: the twin of the two below, its methods only logged."""

    def __init__(self, publisher: SyncPublisher, subscriber: Subscriber[int]) -> None:
        super().__init__(publisher, subscriber)
        self.lock = threading.Lock()

    @logged
    def request(self, n: int) -> None:
        super().request(n)

    @logged
    def cancel(self) -> None:
        super().cancel()


class _SynchronizedRequest(_Decorated):
    """``request()`` under the lock, which it holds while its drain signals: a request from inside
    ``on_next`` waits for the lock in the decorator's wrapper, before ``request`` runs (3.2)."""

    @synchronized
    def request(self, n: int) -> None:
        super().request(n)


class _LockInsideLoggedRequest(_Decorated):
    """A logged ``request()`` that takes the lock the drain holds while it signals (3.2)."""

    @logged
    def request(self, n: int) -> None:
        with self.lock:
            SyncSubscription.request(self, n)

    def drain(self) -> None:
        with self.lock:
            super().drain()


# -- the tests ----------------------------------------------------------------------------

SPEC302 = "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"
SPEC308_WHITEBOX = "required_spec308_request_must_register_given_number_elements_to_be_produced"
NESTED_IN_ON_NEXT = "the TCK called it from inside on_next, which the implementation was delivering from its"
BROKEN = 2.0
"""The broken implementations' default timeout, in seconds. A case whose wait for a signal runs out
is explained by a thread of the implementation's only if the watchdog, sampling every fifth of it,
saw that thread blocked a sample before the wait ended: the thread must reach its deadlock, and the
watchdog sample it, within about three fifths of this after the last signal. A loaded machine can
leave a thread unscheduled for the 180 ms that 300 ms gave; not for 1.2 s."""
TWIN = WAIT
"""The correct twins' default timeout: their signals come from threads of their own too, and the
watchdog takes a thread that sat still inside a call for this long for blocked. Only a hang trips
it; each wait ends when its signal comes."""

BLOCKING: list[
    tuple[str, Callable[[], Verification], Callable[[], Verification], str, str, tuple[str, ...]]
] = [
    (
        "own-thread-lock",
        lambda: PublisherOf(LocksWhileDeliveringPublisher, default_timeout=BROKEN),
        lambda: PublisherOf(OwnThreadPublisher, default_timeout=TWIN),
        SPEC302,
        "3.2",
        (
            "rule 3.2: the Subscription is blocked inside request(1)",
            f"{NESTED_IN_ON_NEXT} run()",
            "on the implementation's own thread 'own-delivery', not the case's",
            "test_watchdog_threads.py",
        ),
    ),
    (
        "non-daemon-thread",
        lambda: PublisherOf(WaitsOnANonDaemonThreadPublisher, default_timeout=BROKEN),
        lambda: PublisherOf(OwnThreadPublisher, default_timeout=TWIN),
        SPEC302,
        "3.2",
        (
            "rule 3.2: the Subscription is blocked inside request(1)",
            "as it is not a daemon thread, Python waits for it at exit: the process cannot exit",
        ),
    ),
    (
        "executor-signal",
        lambda: WhiteboxOf(HandsOffToAStuckOnNext, default_timeout=BROKEN),
        lambda: WhiteboxOf(HandsOffSignals, default_timeout=TWIN),
        SPEC308_WHITEBOX,
        "2.1",
        (
            "rule 2.1: the Subscriber is blocked inside on_next(0)",
            "on a thread of its own where it handed the signal",
            "own thread 'hands-off_0'",
            "then: ",
        ),
    ),
    (
        "executor-under-lock",
        lambda: PublisherOf(publisher_with(_WaitsForItsExecutorUnderItsLock), default_timeout=BROKEN),
        lambda: PublisherOf(publisher_with(_HandsRequestsToItsExecutor), default_timeout=TWIN),
        "required_spec102_may_signal_less_than_requested_and_terminate_subscription",
        "3.4",
        (
            "rule 3.4: the Subscription is blocked inside request(",
            "The case's thread is left behind",
            "Meanwhile the implementation's thread 'impl-executor_0' sat still for",
            "inside its add(), outermost first:",
            "in _WaitsForItsExecutorUnderItsLock.add: with self.lock:",
        ),
    ),
    (
        "synchronized-wrapper",
        lambda: PublisherOf(publisher_with(_SynchronizedRequest), default_timeout=BROKEN),
        lambda: PublisherOf(publisher_with(_Decorated), default_timeout=TWIN),
        SPEC302,
        "3.2",
        (
            "rule 3.2: the Subscription is blocked inside request(1)",
            f"{NESTED_IN_ON_NEXT} request()",
            "in synchronized.<locals>.wrapper: with self.lock:",
        ),
    ),
    (
        "lock-inside-logged",
        lambda: PublisherOf(publisher_with(_LockInsideLoggedRequest), default_timeout=BROKEN),
        lambda: PublisherOf(publisher_with(_Decorated), default_timeout=TWIN),
        SPEC302,
        "3.2",
        (
            "rule 3.2: the Subscription is blocked inside request(1)",
            "in _LockInsideLoggedRequest.request",
            "in logged.<locals>.wrapper",
        ),
    ),
]


@pytest.mark.timeout(60)  # well under case_timeout (120 s): only the watchdog names the rule in time
@pytest.mark.parametrize(
    ("label", "broken", "twin", "case", "rule", "fragments"), BLOCKING, ids=[b[0] for b in BLOCKING]
)
def test_a_blocked_thread_or_wrapper_of_the_implementation_fails_naming_the_rule(
    label: str,
    broken: Callable[[], Verification],
    twin: Callable[[], Verification],
    case: str,
    rule: str,
    fragments: tuple[str, ...],
) -> None:
    """The case fails with the watchdog's message: the rule, the call, the implementation's frames."""
    with pytest.raises(CaseBlocked) as caught:
        broken().run_tck_case(case)
    failure = caught.value
    assert failure.rule == rule, failure
    message = str(failure)
    for fragment in fragments:
        assert fragment in message, message
    assert "The implementation's stack, outermost first:" in message, message
    assert "wrapper(" not in message.partition("outermost first:")[0], message
    _release()  # the twin's threads must not meet the broken one's waits
    assert run_cases(twin(), [case]).results[0].outcome == "passed"


@pytest.mark.timeout(60)
def test_a_thread_stuck_since_an_earlier_case_is_not_this_cases() -> None:
    """The deadlocked delivery thread of one case stays stuck; the next case's watchdog leaves it
    alone, and that case passes or fails on its own."""
    report = run_cases(PublisherOf(LocksWhileDeliveringPublisher))
    spec302 = report.result(SPEC302)
    assert spec302.outcome == "failed" and spec302.message.startswith("rule 3.2:"), spec302
    blocked = [r for r in report.results if "own thread 'own-delivery'" in r.message]
    assert blocked, str(report)
    for result in blocked:
        assert result.message.startswith(("rule 3.2:", "rule 3.4:", "rule 3.5:")), result
