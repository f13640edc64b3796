"""Rule 2.7: a Subscriber's calls on its Subscription must be serial, and the TCK checks it.

The probe Subscription the subscriber verifications hand out fails a call that enters while
another is still inside. The broken subscribers below make the overlap certain, not likely:
one thread's ``request`` is held inside the probe (the probe examines ``n`` for rule 3.9
while inside, and :class:`_Held` blocks there until released), and only then does a second
thread call. Their serialised twins call from two threads at once too, under a lock, and
must pass every case.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar, Self

import pytest

from rstreams.api import Subscriber, Subscription
from rstreams.tck._registry import run_cases
from rstreams.tck._subscriber import (
    SubscriberBlackboxVerification,
    SubscriberWhiteboxVerification,
    verify_subscriber_whitebox,
)
from rstreams.tck._subscriber_support import WhiteboxSubscriberProbe, _RecordingSubscription
from testkit import patience
from testkit.broken_subscribers import BlackboxOf, ReferenceSubscriber, WhiteboxOf

WAIT = 10.0
"""A bound on each rendezvous, so that a broken test fails instead of hanging (seconds of this
process's own time: :mod:`testkit.patience`)."""


class _Held(int):
    """A request amount that holds its ``request()`` inside the probe: the first comparison
    made on it (the probe's rule-3.9 check of ``n``) says so and waits until released."""

    def __new__(cls, value: int) -> Self:
        held = super().__new__(cls, value)
        held.entered = threading.Event()
        held.released = threading.Event()
        return held

    entered: threading.Event
    released: threading.Event

    def __gt__(self, other: object) -> bool:
        if not self.entered.is_set():
            self.entered.set()
            patience.wait(self.released, WAIT)
        return int(self) > other  # type: ignore[operator]


def _overlap(subscription: Subscription | None, second: str, n: int) -> None:
    """``request(n)`` from a worker thread and, while it is certainly still inside the probe,
    ``second`` ("request" or "cancel") from this thread: no serialisation at all."""
    assert subscription is not None
    held = _Held(n)
    worker = threading.Thread(target=subscription.request, args=(held,), name="rstreams-test-worker")
    worker.start()
    try:
        assert patience.wait(held.entered, WAIT), "the worker's request never got inside"
        if second == "cancel":
            subscription.cancel()
        else:
            subscription.request(n)
    finally:
        held.released.set()
        patience.join(worker, WAIT)


class OverlappingRequests(ReferenceSubscriber):
    """Broken (2.7): requests from a worker thread and from its own, without serialising."""

    first = True

    def trigger(self, n: int) -> None:  # whitebox: the puppet's trigger_request
        _overlap(self.subscription, "request", n)

    def request_more(self) -> None:  # blackbox: from on_subscribe, then once per element
        if self.first:
            self.first = False
            _overlap(self.subscription, "request", 1)
        else:
            super().request_more()


class CancelsBesideARequest(ReferenceSubscriber):
    """Broken (2.7): cancels on its own thread while a worker's request is still inside."""

    def cancel(self) -> None:
        self.done = True
        _overlap(self.subscription, "cancel", 1)


class SerialisedRequests(ReferenceSubscriber):
    """Correct: requests from a worker thread and from its own at the same time, under a lock.

    A re-entrant one: rule 3.10 lets request() call on_next at once, which requests again on
    the same thread (the blackbox case answers the first request so).
    """

    first = True

    def __init__(self, probe: WhiteboxSubscriberProbe[Any] | None = None) -> None:
        super().__init__(probe)
        self._lock = threading.RLock()

    def _serial_request(self, n: int) -> None:
        assert self.subscription is not None
        with self._lock:
            self.subscription.request(n)

    def _from_two_threads(self, n: int) -> None:
        worker = threading.Thread(target=self._serial_request, args=(n,), name="rstreams-test-worker")
        worker.start()
        self._serial_request(n)  # at least n requested, as the puppet asks
        patience.join(worker, WAIT)

    def trigger(self, n: int) -> None:
        self._from_two_threads(n)

    def request_more(self) -> None:
        if self.first:
            self.first = False
            self._from_two_threads(1)
        else:
            self._serial_request(1)

    def cancel(self) -> None:
        self.done = True
        assert self.subscription is not None
        with self._lock:
            self.subscription.cancel()


SPEC201 = "required_spec201_must_signal_demand_via_subscription_request"
HAPPY_PATH = "required_exercise_whitebox_happy_path"
SPEC201_BLACKBOX = "required_spec201_blackbox_must_signal_demand_via_subscription_request"


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("verification", "case", "calls"),
    [
        (WhiteboxOf(OverlappingRequests), SPEC201, ("request(1) on thread 'rstreams-tck-", "its request(1)")),
        (WhiteboxOf(CancelsBesideARequest), HAPPY_PATH, ("cancel() on thread", "its request(1)")),
        (BlackboxOf(OverlappingRequests), SPEC201_BLACKBOX, ("request(1) on thread", "its request(1)")),
    ],
    ids=["whitebox requests", "whitebox cancel", "blackbox requests"],
)
def test_overlapping_calls_on_the_subscription_fail_naming_rule_2_7_and_both_calls(
    verification: SubscriberWhiteboxVerification | SubscriberBlackboxVerification,
    case: str,
    calls: tuple[str, str],
) -> None:
    """The case fails with rule 2.7 first, naming the call that entered, the one still inside
    and the threads; the same case passes for the serialised twin."""
    result = run_cases(verification, [case]).results[0]
    assert result.outcome == "failed", result
    assert result.message.startswith("rule 2.7: the Subscriber called "), result.message
    for call in calls:
        assert call in result.message, result.message
    assert "on thread 'rstreams-test-worker' was still inside" in result.message, result.message
    twin = type(verification)(SerialisedRequests)  # type: ignore[call-arg]
    assert run_cases(twin, [case]).results[0].outcome == "passed"


@pytest.mark.timeout(60)
def test_a_processor_setup_names_the_processor() -> None:
    """The message names what is verified: a processor's upstream probe says "the processor"."""

    class AsProcessor(WhiteboxOf):
        subject = "the processor"

    result = run_cases(AsProcessor(OverlappingRequests), [SPEC201]).results[0]
    assert result.message.startswith("rule 2.7: the processor called request(1)"), result.message


class TestSerialisedWhitebox(SubscriberWhiteboxVerification):
    """Calls from two threads at once, serialised by a lock: every whitebox case passes."""

    def create_subscriber(self, probe: WhiteboxSubscriberProbe[Any]) -> Subscriber[Any]:
        return SerialisedRequests(probe)


class TestSerialisedBlackbox(SubscriberBlackboxVerification):
    """The same for the blackbox cases."""

    def create_subscriber(self) -> Subscriber[Any]:
        return SerialisedRequests()


class _Remembered(ReferenceSubscriber):
    """Correct; remembers every instance, so that a test can misuse one after its case ended."""

    made: ClassVar[list[_Remembered]] = []

    def __init__(self, probe: WhiteboxSubscriberProbe[Any] | None = None) -> None:
        super().__init__(probe)
        self.made.append(self)


@pytest.mark.timeout(60)
def test_overlapping_calls_after_the_run_returned_fail_their_case_on_recheck() -> None:
    """A subscriber's thread may still call after its case ended and the run returned: the
    probe Subscription records the overlap, and report.recheck() fails the case it served."""
    _Remembered.made.clear()
    report = verify_subscriber_whitebox(_Remembered)
    assert report.ok, str(report)
    staged = [s for s in _Remembered.made if isinstance(s.subscription, _RecordingSubscription)]
    last = staged[-1]  # subscribed to the probe Subscription of the last staged case, which has ended
    _overlap(last.subscription, "request", 1)
    assert report.ok, "a report is a value: it does not change by itself"
    rechecked = report.recheck()
    assert len(rechecked.failed) == 1, str(rechecked)
    failed = rechecked.failed[0]
    assert failed.message.startswith("rule 2.7: the Subscriber called request(1)"), failed.message
    assert "after its case had ended (found by recheck())" in failed.message, failed.message
    assert failed.message.endswith("the case itself: passed"), failed.message
    assert rechecked.recheck() == rechecked  # reported once
