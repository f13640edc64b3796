"""IdentityProcessorVerification: rstreams' MulticastProcessor passes; broken processors fail.

``TestMulticastProcessor`` runs all 68 cases (38 as publisher, 27 as subscriber, 3 own)
under pytest. The parametrized tests check the TCK itself: each broken processor fails
the case for the rule it breaks, and the correct twin passes that case.
"""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.api import Processor
from rstreams.flow._public import MulticastProcessor
from rstreams.tck._processor import IdentityProcessorVerification, verify_processor
from rstreams.tck._registry import run_cases
from testkit.broken_subscribers import (
    CancelsUpstreamInOnError,
    KeepsSecondUpstream,
    KeepsUpstreamWhenDownstreamCancels,
    LosesTerminalBeforeSubscriber,
    SubscribesDownstreamTwice,
    WithholdsErrorWithoutDemand,
    WrappedProcessor,
)


class TestMulticastProcessor(IdentityProcessorVerification):
    """rstreams' MulticastProcessor, the identity processor the library ships."""

    def create_processor(self, buffer_size: int) -> Processor[Any, Any]:
        return MulticastProcessor(buffer_size=buffer_size)


class TestWrappedProcessor(IdentityProcessorVerification):
    """The correct twin of the broken processors below (MulticastProcessor behind hooks)."""

    def create_processor(self, buffer_size: int) -> Processor[Any, Any]:
        return WrappedProcessor(buffer_size)

    def create_element(self, element: int) -> Any:
        return ("element", element)


class _Ipv(IdentityProcessorVerification):
    def __init__(self, cls: type[WrappedProcessor], max_subscribers: int = 2**63 - 1) -> None:
        self.cls = cls
        self.max_subscribers = max_subscribers

    def create_processor(self, buffer_size: int) -> Processor[Any, Any]:
        return self.cls(buffer_size)

    def max_supported_subscribers(self) -> int:
        return self.max_subscribers


HAPPY = "required_exercise_whitebox_happy_path"
SPEC208 = (
    "required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel"
)
SPEC205 = (
    "required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another"
    "_on_subscribe_signal"
)
SPEC203 = "required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_error"
IMMEDIATE = "must_immediately_pass_on_on_error_events_received_from_its_upstream_to_its_downstream"
LONG_AGO = "required_must_request_from_upstream_for_elements_that_have_been_requested_long_ago"
SPEC105 = "required_spec105_must_signal_on_complete_when_finite_stream_terminates"
SPEC104 = (
    "required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error"
)

BROKEN = [
    (KeepsUpstreamWhenDownstreamCancels, HAPPY, "rule 2.6: the processor did not cancel its subscription"),
    (KeepsUpstreamWhenDownstreamCancels, SPEC208, "rule 2.6: the processor did not cancel its subscription"),
    (KeepsSecondUpstream, SPEC205, "rule 2.5"),
    (CancelsUpstreamInOnError, SPEC203, "rule 2.3"),
    (WithholdsErrorWithoutDemand, IMMEDIATE, "on_error"),
    (WithholdsErrorWithoutDemand, SPEC104, "on_error"),
    (LosesTerminalBeforeSubscriber, SPEC105, "rule 1.5: the processor's upstream completed before any"),
    (LosesTerminalBeforeSubscriber, IMMEDIATE, "rule 1.4: the processor's upstream failed before any"),
    (SubscribesDownstreamTwice, SPEC104, "rule 2.12: the processor called on_subscribe twice"),
    (SubscribesDownstreamTwice, SPEC105, "rule 2.12: on_subscribe was called twice"),
]


@pytest.mark.parametrize(
    ("broken", "case", "fragment"), BROKEN, ids=lambda v: getattr(v, "__name__", str(v)[:40])
)
def test_broken_processor_fails_its_rule(broken: type[WrappedProcessor], case: str, fragment: str) -> None:
    """The broken processor fails the named case, with a message naming the problem; the twin passes."""
    result = run_cases(_Ipv(broken), [case]).results[0]
    assert result.outcome == "failed", result
    assert fragment in result.message, result.message
    twin = run_cases(_Ipv(WrappedProcessor), [case]).results[0]
    assert twin.outcome == "passed", twin


def test_single_subscriber_processor_skips_the_multi_subscriber_cases() -> None:
    """max_supported_subscribers() < 2 turns the two multi-subscriber cases into skips."""
    report = run_cases(
        _Ipv(WrappedProcessor, max_subscribers=1),
        [
            SPEC104,
            LONG_AGO,
            IMMEDIATE,
        ],
    )
    outcomes = {r.name: r.outcome for r in report.results}
    assert outcomes[SPEC104] == outcomes[LONG_AGO] == "skipped", str(report)
    assert outcomes[IMMEDIATE] == "passed", str(report)


def test_verify_processor_runs_all_68_cases() -> None:
    """verify_processor works without pytest and reports every case."""
    report = verify_processor(lambda size: MulticastProcessor(buffer_size=size), create_element=str)
    assert report.ok, str(report)
    assert len(report.results) == 68
    assert len(report.skipped) == 22  # 20 untested + the two failed-publisher cases (none given)


def test_one_subscriber_skips_every_case_that_needs_more_saying_so() -> None:
    """max_supported_subscribers=1: multi-subscriber cases skip with that reason, not "NOT implemented"."""
    report = verify_processor(
        WrappedProcessor, max_supported_subscribers=1, skip_stochastic=True, buffer_size=4
    )
    assert report.ok, str(report)
    multi = [r for r in report.results if r.name.startswith("optional_spec111")] + [
        report.result(SPEC104),
        report.result(LONG_AGO),
    ]
    assert len(multi) == 7
    for result in multi:
        assert result.outcome == "skipped", result
        assert (
            "max_supported_subscribers() is 1" in result.message or "supports 1 subscriber" in result.message
        )
        assert "NOT implemented" not in result.message


def test_verify_functions_take_one_set_of_keyword_options() -> None:
    """All four entry points accept env, case_timeout, skip_stochastic and max_elements, keyword-only."""
    from rstreams.tck import (
        TestEnvironment,
        verify_publisher,
        verify_subscriber_blackbox,
        verify_subscriber_whitebox,
    )
    from testkit.broken_subscribers import ReferenceSubscriber

    common: dict[str, Any] = {
        "env": TestEnvironment(default_timeout=1.0),
        "case_timeout": 60.0,
        "skip_stochastic": True,
    }
    reports = [
        verify_publisher(lambda n: rstreams.range(n), max_elements=100, **common),
        verify_subscriber_whitebox(ReferenceSubscriber, max_elements=100, **common),
        verify_subscriber_blackbox(ReferenceSubscriber, max_elements=100, **common),
        verify_processor(
            WrappedProcessor, max_elements=100, buffer_size=8, max_supported_subscribers=4, **common
        ),
    ]
    assert all(report.ok for report in reports), "\n".join(map(str, reports))
    with pytest.raises(TypeError):
        verify_processor(WrappedProcessor, str)  # type: ignore[call-arg]  # options are keyword-only
    with pytest.raises(ValueError, match="case_timeout"):
        verify_subscriber_blackbox(ReferenceSubscriber, case_timeout=0)
    with pytest.raises(ValueError, match="max_elements"):
        verify_publisher(rstreams.range, max_elements=-1)
    with pytest.raises(ValueError, match="max_supported_subscribers"):
        verify_processor(WrappedProcessor, max_supported_subscribers=0)


def test_each_case_runs_in_a_fresh_copy_of_the_given_environment() -> None:
    """The env option is a template: no case inherits what an earlier one recorded."""
    from rstreams.tck import TestEnvironment

    copies: list[TestEnvironment] = []

    class Counting(TestEnvironment):
        def fresh(self) -> TestEnvironment:
            copy = super().fresh()
            copies.append(copy)
            return copy

    template = Counting(default_timeout=1.0)
    report = verify_processor(WrappedProcessor, env=template, skip_stochastic=True)
    assert report.ok and len(copies) == len(report.results) - 1  # the first case uses the template
    assert len({id(c) for c in copies}) == len(copies)
    assert all(c.default_timeout == 1.0 for c in copies)
