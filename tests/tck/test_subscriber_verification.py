"""The subscriber verifications: reference subscribers and rstreams' own pass, broken ones fail.

The pytest-collected classes below run every case of the whitebox (27) and blackbox (26)
verifications against correct subscribers. The parametrized tests then check the TCK
itself: each deliberately broken subscriber must fail the case for the rule it breaks,
with a message naming it, while its correct twin passes that same case.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

from rstreams.api import Subscriber
from rstreams.tck._env import TestEnvironment
from rstreams.tck._registry import run_cases
from rstreams.tck._subscriber import (
    SubscriberBlackboxVerification,
    SubscriberWhiteboxVerification,
    verify_subscriber_blackbox,
    verify_subscriber_whitebox,
)
from rstreams.tck._subscriber_support import HelperPublisher, WhiteboxSubscriberProbe
from testkit.broken_subscribers import (
    AcceptsNoneElement,
    AcceptsNoneError,
    AsksForZeroLater,
    BlackboxOf,
    CancelsBothSubscriptions,
    CancelsInOnError,
    ChecksNoneAfterDuplicate,
    CountsDemandAfterRequesting,
    IgnoresCancelSignal,
    KeepsSecondSubscription,
    LosesEarlyCompletion,
    NeverRegisters,
    NeverRequests,
    OneAtATimeWhiteboxSubscriber,
    RaisesInOnComplete,
    RaisesOnErrorWithoutDemand,
    RaisesOnLateElement,
    ReferenceSubscriber,
    RequestsFromSecondSubscription,
    RequestsInOnComplete,
    RequestsOnlyOnce,
    StoresSubscriptionAfterRequesting,
    WhiteboxOf,
    WrapsErrors,
)

# -- correct subscribers pass everything (collected by pytest) -----------------------------


class TestReferenceWhitebox(SubscriberWhiteboxVerification):
    """A synchronous subscriber that requests exactly what the puppet asks for."""

    def create_subscriber(self, probe: WhiteboxSubscriberProbe[Any]) -> Subscriber[Any]:
        return ReferenceSubscriber(probe)


class TestOneAtATimeWhitebox(SubscriberWhiteboxVerification):
    """A subscriber that requests one element at a time: the TCK must wait for each request."""

    def create_subscriber(self, probe: WhiteboxSubscriberProbe[Any]) -> Subscriber[Any]:
        return OneAtATimeWhiteboxSubscriber(probe)

    def create_element(self, element: int) -> Any:
        return f"element-{element}"


class TestReferenceBlackbox(SubscriberBlackboxVerification):
    """A synchronous subscriber that requests one element at a time."""

    def create_subscriber(self) -> Subscriber[Any]:
        return ReferenceSubscriber()


class _TriggeredSubscriber(ReferenceSubscriber):
    """Requests nothing by itself; only when the test's trigger_request hook nudges it."""

    def on_subscribe(self, subscription: Any) -> None:
        if subscription is None:
            raise TypeError("rule 2.13")
        if self.subscription is not None:
            subscription.cancel()
            return
        self.subscription = subscription

    def on_next(self, item: Any) -> None:
        if item is None:
            raise TypeError("rule 2.13")


class TestTriggeredBlackbox(SubscriberBlackboxVerification):
    """The trigger_request hook is called before every case that waits for a request."""

    def create_subscriber(self) -> Subscriber[Any]:
        return _TriggeredSubscriber()

    def trigger_request(self, subscriber: Subscriber[Any]) -> None:
        assert isinstance(subscriber, _TriggeredSubscriber) and subscriber.subscription is not None
        subscriber.subscription.request(1)


def test_triggered_subscriber_fails_without_the_hook() -> None:
    """Without trigger_request the same subscriber never requests, and rule 2.1 fails."""
    report = verify_subscriber_blackbox(_TriggeredSubscriber)
    assert (
        report.result("required_spec201_blackbox_must_signal_demand_via_subscription_request").outcome
        == "failed"
    )


def test_functional_entry_points_report_every_case() -> None:
    """verify_subscriber_whitebox/blackbox run every case without pytest and return a Report."""
    white = verify_subscriber_whitebox(ReferenceSubscriber, create_element=lambda i: i * 10)
    black = verify_subscriber_blackbox(ReferenceSubscriber, env=TestEnvironment(default_timeout=1.0))
    assert white.ok and len(white.results) == 27 and len(white.passed) == 14, str(white)
    assert black.ok and len(black.results) == 26 and len(black.passed) == 11, str(black)


# -- broken subscribers fail the case for their rule ------------------------------------------

WHITEBOX_BROKEN = [
    (NeverRequests, "required_spec201_must_signal_demand_via_subscription_request", "request"),
    (
        CountsDemandAfterRequesting,
        "required_spec201_must_signal_demand_via_subscription_request",
        "rule 2.13: the Subscriber's on_next(0) raised RuntimeError: element 0 arrived without outstanding"
        " demand; it was sent from inside its request(1)",
    ),
    (
        RequestsOnlyOnce,
        "required_spec308_request_must_register_given_number_elements_to_be_produced",
        "request",
    ),
    (IgnoresCancelSignal, "required_exercise_whitebox_happy_path", "rule 2.6: the Subscriber did not cancel"),
    (
        RequestsInOnComplete,
        "required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
        "2.3",
    ),
    (
        CancelsInOnError,
        "required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_error",
        "2.3",
    ),
    (
        KeepsSecondSubscription,
        "required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal",
        "2.5",
    ),
    (
        CancelsBothSubscriptions,
        "required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal",
        "original",
    ),
    (
        RaisesOnLateElement,
        "required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel",
        "element after cancel",
    ),
    (
        LosesEarlyCompletion,
        "required_spec209_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call",
        "on_complete",
    ),
    (
        WrapsErrors,
        "required_spec210_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call",
        "that very object",
    ),
    (
        ChecksNoneAfterDuplicate,
        "required_spec213_on_subscribe_must_throw_null_pointer_exception_when_parameters_are_null",
        "AttributeError",
    ),
    (
        RaisesInOnComplete,
        "required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
        "rule 2.13: the Subscriber's on_complete() raised RuntimeError: on_complete raised",
    ),
    (
        AcceptsNoneElement,
        "required_spec213_on_next_must_throw_null_pointer_exception_when_parameters_are_null",
        "returned normally",
    ),
    (
        AcceptsNoneError,
        "required_spec213_on_error_must_throw_null_pointer_exception_when_parameters_are_null",
        "returned normally",
    ),
]

BLACKBOX_BROKEN = [
    (NeverRequests, "required_spec201_blackbox_must_signal_demand_via_subscription_request", "request"),
    # rule 3.10 lets request() call on_next on the Subscriber's stack: spec201 answers the first
    # request that way, and a Subscriber not ready for it breaks rule 2.13
    (
        StoresSubscriptionAfterRequesting,
        "required_spec201_blackbox_must_signal_demand_via_subscription_request",
        "rule 2.13: the Subscriber's on_next(0) raised AssertionError",
    ),
    (
        CountsDemandAfterRequesting,
        "required_spec201_blackbox_must_signal_demand_via_subscription_request",
        "rule 2.13: the Subscriber's on_next(0) raised RuntimeError: element 0 arrived without outstanding"
        " demand; it was sent from inside its request(1), on its stack, which rule 3.10 allows",
    ),
    (
        AsksForZeroLater,
        "required_spec201_blackbox_must_signal_demand_via_subscription_request",
        "rule 3.9: the Subscriber called request(0); only n > 0 is legal",
    ),
    (
        RequestsInOnComplete,
        "required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
        "2.3",
    ),
    (
        CancelsInOnError,
        "required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error",
        "2.3",
    ),
    (
        KeepsSecondSubscription,
        "required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal",
        "2.5",
    ),
    (
        RequestsFromSecondSubscription,
        "required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal",
        "duplicate",
    ),
    (
        NeverRequests,
        "required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call",
        "request",
    ),
    (
        RaisesOnErrorWithoutDemand,
        "required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call",
        "rule 2.13: the Subscriber's on_error(InjectedError: Test Exception: Boom!) raised RuntimeError:"
        " on_error before any element",
    ),
    (
        RaisesInOnComplete,
        "required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete",
        "rule 2.13: the Subscriber's on_complete() raised RuntimeError: on_complete raised",
    ),
    (
        RaisesOnErrorWithoutDemand,
        "required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error",
        "rule 2.13: the Subscriber's on_error(InjectedError: Test Exception: Boom!) raised RuntimeError:",
    ),
    (
        AcceptsNoneElement,
        "required_spec213_blackbox_on_next_must_throw_null_pointer_exception_when_parameters_are_null",
        "returned normally",
    ),
    (
        AcceptsNoneError,
        "required_spec213_blackbox_on_error_must_throw_null_pointer_exception_when_parameters_are_null",
        "returned normally",
    ),
]


@pytest.mark.parametrize(
    ("broken", "case", "fragment"), WHITEBOX_BROKEN, ids=lambda v: getattr(v, "__name__", "")
)
def test_broken_whitebox_subscriber_fails_its_rule(
    broken: type[ReferenceSubscriber], case: str, fragment: str
) -> None:
    """The broken subscriber fails the named whitebox case; the correct twin passes it."""
    result = run_cases(WhiteboxOf(broken), [case]).results[0]
    assert result.outcome == "failed", result
    assert fragment in result.message, result.message
    twin = run_cases(WhiteboxOf(ReferenceSubscriber), [case]).results[0]
    assert twin.outcome == "passed", twin


@pytest.mark.parametrize(
    ("broken", "case", "fragment"), BLACKBOX_BROKEN, ids=lambda v: getattr(v, "__name__", "")
)
def test_broken_blackbox_subscriber_fails_its_rule(
    broken: type[ReferenceSubscriber], case: str, fragment: str
) -> None:
    """The broken subscriber fails the named blackbox case; the correct twin passes it."""
    result = run_cases(BlackboxOf(broken), [case]).results[0]
    assert result.outcome == "failed", result
    assert fragment in result.message, result.message
    twin = run_cases(BlackboxOf(ReferenceSubscriber), [case]).results[0]
    assert twin.outcome == "passed", twin


def test_whitebox_subscriber_that_never_registers_fails_every_staged_case() -> None:
    """Forgetting probe.register_on_subscribe fails each case that builds a stage, saying so."""
    report = run_cases(WhiteboxOf(NeverRegisters))
    failed = {r.name for r in report.failed}
    assert len(failed) == 12, str(report)  # 14 executable cases minus the two rule-2.3 cases
    assert all("registerOnSubscribe" in r.message for r in report.failed)


def test_every_required_rule_has_a_broken_subscriber() -> None:
    """Each executable subscriber rule is shown to catch at least one broken subscriber."""
    white_rules = {WhiteboxOf(ReferenceSubscriber).tck_case(case).rule for _, case, _ in WHITEBOX_BROKEN}
    black_rules = {BlackboxOf(ReferenceSubscriber).tck_case(case).rule for _, case, _ in BLACKBOX_BROKEN}
    required_white = {c.rule for c in SubscriberWhiteboxVerification.tck_cases if c.category == "required"}
    required_black = {c.rule for c in SubscriberBlackboxVerification.tck_cases if c.category == "required"}
    assert required_white - {None} <= white_rules
    assert required_black <= black_rules


# -- rstreams' own subscribers -----------------------------------------------------------------


def _sink_factories() -> list[tuple[str, Any]]:
    from rstreams.flow import _blocking, _sinks

    return [
        ("collect", _sinks._Collect),
        ("count", _sinks._Count),
        ("reduce", lambda: _sinks._Reduce(lambda a, b: a + b, 0)),
        ("for_each", lambda: _sinks._ForEach(lambda x: None, None)),
        ("for_each_window", lambda: _sinks._ForEach(lambda x: None, 4)),
        ("iter_blocking", lambda: _blocking._Receiver(8)),
    ]


@pytest.mark.parametrize(("name", "factory"), _sink_factories(), ids=[n for n, _ in _sink_factories()])
def test_rstreams_sinks_pass_the_blackbox_verification(name: str, factory: Any) -> None:
    """Every subscriber rstreams ships at the end of a chain passes all blackbox cases."""
    report = verify_subscriber_blackbox(factory)
    assert report.ok, f"{name}:\n{report}"


class _ManualExecutor(concurrent.futures.Executor):
    """Runs submitted work only when the test says so: deterministic helper-publisher tests."""

    def __init__(self) -> None:
        self.work: list[Any] = []

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        self.work.append(lambda: fn(*args, **kwargs))
        return concurrent.futures.Future()

    def run_all(self) -> None:
        while self.work:
            self.work.pop(0)()


def test_the_helper_publisher_stops_delivering_when_its_case_ends() -> None:
    """Containment of the TCK's own publisher: after stop(), an unbounded subscriber gets nothing more."""
    executor = _ManualExecutor()
    helper = HelperPublisher(lambda i: i, None, executor)
    received: list[Any] = []

    class Greedy(ReferenceSubscriber):
        def on_subscribe(self, subscription: Any) -> None:
            self.subscription = subscription
            subscription.request(2**63 - 1)

        def on_next(self, item: Any) -> None:
            received.append(item)
            if len(received) == 5:
                helper.stop()

    helper.subscribe(Greedy())
    executor.run_all()
    assert received == [0, 1, 2, 3, 4]
    helper.subscribe(Greedy())  # a subscriber arriving after the stop gets nothing at all
    executor.run_all()
    assert received == [0, 1, 2, 3, 4]


def test_a_verification_stops_its_helper_publishers_when_the_case_ends() -> None:
    """create_helper_publisher registers the publisher with the case's environment."""
    verification = BlackboxOf(ReferenceSubscriber)
    env = verification.env
    helper = verification.create_helper_publisher(10)
    assert isinstance(helper, HelperPublisher) and not helper._stopped
    env.close()
    assert helper._stopped
