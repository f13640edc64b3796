"""A case whose thread blocks inside the implementation under test fails within the default timeout.

The implementations below are broken on purpose, each by blocking inside one call the TCK
makes, on a lock it already holds or on an event nobody sets; each changes one thing in a
correct twin of ``testkit`` (:class:`ReferenceSubscriber`, :class:`SyncPublisher`). The TCK's
watchdog must fail the case naming the rule, the call and the implementation's frames,
instead of letting it overrun ``case_timeout`` (120 s here, so a test that waited for it
would be stopped by its own timeout first). The event is set when a test ends so that the
threads left behind finish; a thread stuck on a lock it holds itself stays until the
process exits, as it would in a real run.
"""

from __future__ import annotations

import os
import sys
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from rstreams.api import Publisher, Subscriber
from rstreams.tck._registry import Verification, run_cases
from rstreams.tck._watchdog import CaseBlocked
from testkit import patience
from testkit.broken_publishers import PublisherOf, SyncPublisher, SyncSubscription, publisher_with
from testkit.broken_subscribers import BlackboxOf, ReferenceSubscriber, WhiteboxOf

ROOT = Path(__file__).resolve().parents[2]

RELEASE = threading.Event()
"""Set by the tests when they are done: every wait below then returns."""


class LocksAroundRequest(ReferenceSubscriber):
    """Holds a non-reentrant lock around ``request()`` and takes it in ``on_next``: a synchronous
    Publisher's ``on_next`` from inside ``request()`` deadlocks (rules 2.2, 3.10)."""

    def __init__(self, probe: Any = None) -> None:
        super().__init__(probe)
        self.lock = threading.Lock()
        self.count = 0

    def request_more(self) -> None:
        with self.lock:
            super().request_more()

    def trigger(self, n: int) -> None:
        with self.lock:
            super().trigger(n)

    def on_next(self, item: Any) -> None:
        with self.lock:
            self.count += 1
        super().on_next(item)


class WaitsInOnComplete(ReferenceSubscriber):
    """Blocks inside ``on_complete`` until the test ends, holding up its Publisher (rule 2.2)."""

    def on_complete(self) -> None:
        RELEASE.wait()
        super().on_complete()


class WaitsInSubscribe(SyncPublisher):
    """``subscribe()`` never returns (rule 1.9)."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        RELEASE.wait()
        super().subscribe(subscriber)


class LocksAroundOnSubscribe(SyncPublisher):
    """Holds a non-reentrant lock around ``on_subscribe`` that ``request()`` takes too: a request
    from inside ``on_subscribe`` deadlocks (rule 3.2)."""

    def __init__(self, elements: int) -> None:
        super().__init__(elements)
        self.lock = threading.Lock()

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        with self.lock:
            super().subscribe(subscriber)

    @property
    def subscription_type(self) -> type[SyncSubscription]:
        publisher = self

        class Locked(SyncSubscription):
            def request(self, n: int) -> None:
                with publisher.lock:
                    super().request(n)

        return Locked


class _LocksWhileSignalling(SyncSubscription):
    """Holds a non-reentrant lock while it delivers: a ``request()`` from inside ``on_next``
    deadlocks (rule 3.2)."""

    def __init__(self, publisher: SyncPublisher, subscriber: Subscriber[int]) -> None:
        super().__init__(publisher, subscriber)
        self.lock = threading.Lock()

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)


class _CancelsUnderItsLock(SyncSubscription):
    """Holds a non-reentrant lock while it delivers and takes it in ``cancel()``: a cancel from
    inside ``on_next`` deadlocks (rule 3.5)."""

    def __init__(self, publisher: SyncPublisher, subscriber: Subscriber[int]) -> None:
        super().__init__(publisher, subscriber)
        self.lock = threading.Lock()

    def drain(self) -> None:
        with self.lock:
            super().drain()

    def cancel(self) -> None:
        with self.lock:
            super().cancel()


class _WaitsInRequest(SyncSubscription):
    """``request()`` never returns (rule 3.4)."""

    def request(self, n: int) -> None:
        RELEASE.wait()
        super().request(n)


class _WaitsInCancel(SyncSubscription):
    """``cancel()`` never returns (rule 3.5)."""

    def cancel(self) -> None:
        RELEASE.wait()
        super().cancel()


LocksWhileSignallingPublisher = publisher_with(_LocksWhileSignalling)
CancelsUnderItsLockPublisher = publisher_with(_CancelsUnderItsLock)
WaitsInRequestPublisher = publisher_with(_WaitsInRequest)
WaitsInCancelPublisher = publisher_with(_WaitsInCancel)

# -- the tests ----------------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _release_after() -> Iterator[None]:
    RELEASE.clear()
    yield
    RELEASE.set()  # the threads left waiting finish


SPEC201_BLACKBOX = "required_spec201_blackbox_must_signal_demand_via_subscription_request"
SPEC201_WHITEBOX = "required_spec201_must_signal_demand_via_subscription_request"
SPEC209_BLACKBOX = (
    "required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call"
)
REENTRANT = (
    "from inside the Subscriber's own request(1), on its stack (rules 3.3 and 3.10 allow that recursion)"
)

BLOCKING: list[tuple[Callable[[], Verification], Callable[[], Verification], str, str, tuple[str, ...]]] = [
    (
        lambda: BlackboxOf(LocksAroundRequest),
        lambda: BlackboxOf(ReferenceSubscriber),
        SPEC201_BLACKBOX,
        "2.2",
        ("the Subscriber is blocked inside on_next(0)", REENTRANT, "called from its on_subscribe()"),
    ),
    (
        lambda: WhiteboxOf(LocksAroundRequest),
        lambda: WhiteboxOf(ReferenceSubscriber),
        SPEC201_WHITEBOX,
        "2.2",
        ("the Subscriber is blocked inside on_next(0)", REENTRANT, "called from its trigger_request()"),
    ),
    (
        lambda: BlackboxOf(WaitsInOnComplete),
        lambda: BlackboxOf(ReferenceSubscriber),
        SPEC209_BLACKBOX,
        "2.2",
        (
            "the Subscriber is blocked inside on_complete()",
            "processing a signal must not block the Publisher",
        ),
    ),
    (
        lambda: PublisherOf(WaitsInSubscribe),
        lambda: PublisherOf(SyncPublisher),
        "required_spec109_must_issue_on_subscribe_for_non_null_subscriber",
        "1.9",
        ("the Publisher is blocked inside subscribe(", "must call on_subscribe and return normally"),
    ),
    (
        lambda: PublisherOf(LocksWhileSignallingPublisher),
        lambda: PublisherOf(SyncPublisher),
        "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe",
        "3.2",
        ("the Subscription is blocked inside request(", "the TCK called it from inside on_next"),
    ),
    (
        lambda: PublisherOf(LocksAroundOnSubscribe),
        lambda: PublisherOf(SyncPublisher),
        "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe",
        "3.2",
        (
            "the Subscription is blocked inside request(",
            "the TCK called it from inside on_subscribe, which the implementation was delivering from its"
            " subscribe()",
        ),
    ),
    (
        lambda: PublisherOf(CancelsUnderItsLockPublisher),
        lambda: PublisherOf(SyncPublisher),
        "required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",
        "3.5",
        ("the Subscription is blocked inside cancel()", "the TCK called it from inside on_next"),
    ),
    (
        lambda: PublisherOf(WaitsInRequestPublisher),
        lambda: PublisherOf(SyncPublisher),
        "required_spec102_may_signal_less_than_requested_and_terminate_subscription",
        "3.4",
        ("the Subscription is blocked inside request(", "request() must return in a timely manner"),
    ),
    (
        lambda: PublisherOf(WaitsInCancelPublisher),
        lambda: PublisherOf(SyncPublisher),
        "required_spec306_after_subscription_is_cancelled_request_must_be_nops",
        "3.5",
        ("the Subscription is blocked inside cancel()", "cancel() must return in a timely manner"),
    ),
]


@pytest.mark.timeout(60)  # well under case_timeout (120 s): only the watchdog can end these cases in time
@pytest.mark.parametrize(
    ("broken", "twin", "case", "rule", "fragments"), BLOCKING, ids=[b[2][:40] + "-" + b[3] for b in BLOCKING]
)
def test_a_blocked_implementation_fails_its_case_naming_the_rule(
    broken: Callable[[], Verification],
    twin: Callable[[], Verification],
    case: str,
    rule: str,
    fragments: tuple[str, ...],
) -> None:
    """The case fails with the watchdog's message: the rule, the call, the implementation's frames."""
    verification = broken()
    with pytest.raises(CaseBlocked) as caught:
        verification.run_tck_case(case)
    failure = caught.value
    assert failure.rule == rule, failure
    message = str(failure)
    for fragment in fragments:
        assert fragment in message, message
    assert "The implementation's stack, outermost first:" in message, message
    assert "test_watchdog.py" in message and "_registry.py" not in message, message
    assert run_cases(twin(), [case]).results[0].outcome == "passed"


def test_the_report_says_failed_and_the_run_goes_on() -> None:
    """Under run_cases the blocked case is one failed result; the cases after it run as usual."""
    report = run_cases(BlackboxOf(LocksAroundRequest))
    result = report.result(SPEC201_BLACKBOX)
    assert result.outcome == "failed" and result.message.startswith("rule 2.2:"), result
    assert len(report.results) == 26 and len(report.failed) == 1, str(report)


SCRIPT = """
import threading
from rstreams.tck import verify_subscriber_blackbox

class Deadlocks:
    def __init__(self):
        self.lock = threading.Lock()
        self.subscription = None

    def on_subscribe(self, subscription):
        self.subscription = subscription
        with self.lock:
            subscription.request(1)

    def on_next(self, item):
        with self.lock:
            pass

    def on_error(self, error):
        pass

    def on_complete(self):
        pass

report = verify_subscriber_blackbox(Deadlocks)
print(report)
"""


@pytest.mark.timeout(60)
def test_a_process_with_a_deadlocked_case_ends() -> None:
    """The stuck thread is a daemon: the run reports the failure and the process exits at once."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    result = patience.run(
        [sys.executable, "-c", textwrap.dedent(SCRIPT)],
        50,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    assert "FAILED   2.1   required   required_spec201_blackbox" in result.stdout, result.stdout
    assert "rule 2.2: the Subscriber is blocked inside on_next(0)" in result.stdout, result.stdout


class _SlowFactory(PublisherOf):
    """Takes a second to build each publisher, as one that starts a server may."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        RELEASE.wait(1.0)  # never set during the test: the full second
        return super().create_publisher(elements)


def test_a_factory_slow_to_build_is_not_a_deadlock() -> None:
    """Only calls of the interfaces' methods are watched: a slow create_publisher is left alone."""
    report = run_cases(
        _SlowFactory(SyncPublisher), ["required_spec109_must_issue_on_subscribe_for_non_null_subscriber"]
    )
    assert report.results[0].outcome == "passed", report.results[0]
