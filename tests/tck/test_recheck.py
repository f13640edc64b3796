"""Report.recheck(): a breach a stream commits after the run returned still fails its case.

The run's subscribers outlive the run as long as the publisher holds them, and keep checking
what reaches them; recheck() reads what they recorded since, once the publisher has stopped.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from rstreams.api import Publisher
from rstreams.tck import PublisherVerification, TestEnvironment, run_cases, verify_publisher
from testkit import broken_publishers as bp

SPEC107 = "required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled"


class _Verification(PublisherVerification):
    publisher_type: Callable[[int], Publisher[int]] = bp.SyncPublisher

    def create_publisher(self, elements: int) -> Publisher[int]:
        return type(self).publisher_type(elements)

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(default_timeout=0.3, default_no_signals_timeout=0.03)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("broken", [True, False], ids=["completes again later", "correct"])
def test_a_breach_after_the_run_returned_fails_its_case_on_recheck(broken: bool) -> None:
    """A second on_complete signalled after run_cases returned: the report as returned cannot
    know it, recheck() fails the case whose subscriber it reached; a correct publisher stays
    passed."""
    publisher = bp.CompletesAgainLaterPublisher if broken else bp.SyncPublisher
    bp.COMPLETED_EARLIER.clear()
    cls = type("Recheck", (_Verification,), {"publisher_type": staticmethod(publisher)})
    report = run_cases(cls(), [SPEC107])
    assert report.ok, str(report)
    for subscriber in bp.COMPLETED_EARLIER:
        subscriber.on_complete()  # the run has returned: the subscriber is closed, and still checks
    bp.COMPLETED_EARLIER.clear()
    rechecked = report.recheck()
    if not broken:
        assert rechecked.ok and rechecked == report, str(rechecked)
        return
    result = rechecked.result(SPEC107)
    assert result.outcome == "failed", result
    assert result.message.startswith("rule 1.7: on_complete() after on_complete"), result.message
    assert "after its case had ended (found by recheck())" in result.message, result.message
    assert rechecked.recheck() == rechecked  # reported once


@pytest.mark.timeout(120)
def test_recheck_works_on_what_verify_publisher_returns() -> None:
    """The verify_* functions make a class per call; their report keeps that run's log."""
    bp.COMPLETED_EARLIER.clear()
    report = verify_publisher(
        bp.CompletesAgainLaterPublisher,
        env=TestEnvironment(default_timeout=0.3, default_no_signals_timeout=0.03),
        skip_stochastic=True,
    )
    assert report.ok, str(report)
    assert bp.COMPLETED_EARLIER
    bp.COMPLETED_EARLIER.pop().on_complete()
    bp.COMPLETED_EARLIER.clear()
    rechecked = report.recheck()
    assert len(rechecked.failed) == 1, str(rechecked)
    assert rechecked.failed[0].message.startswith("rule 1.7: on_complete() after on_complete")
