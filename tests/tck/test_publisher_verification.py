"""PublisherVerification against rstreams' own publishers, and the TCK tested by broken ones.

* ``Test*Publisher`` classes subclass PublisherVerification exactly as a user would, so
  pytest runs the 38 cases on rstreams.range, from_iterable, just, and on correct
  synchronous, threaded and asyncio-loop publishers.
* ``verify_publisher`` runs the same cases without pytest.
* Each broken publisher in ``broken_publishers.py`` must make the named case FAIL (or,
  for optional rules, SKIP saying it failed), while its correct twin passes it.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.tck import (
    PublisherVerification,
    Report,
    SkipTest,
    TCKFailure,
    TestEnvironment,
    verify_publisher,
)
from rstreams.tck._publisher import PUBLISHER_UNABLE_TO_SIGNAL_ON_COMPLETE
from rstreams.tck._registry import run_cases
from rstreams.tck._test_subscribers import ManualSubscriber, new_manual_subscriber
from testkit import broken_publishers as bp
from testkit import patience
from testkit.recording import WAIT

MAX = 2**63 - 1
FAST_ENV = {"default_timeout": 1.0, "default_no_signals_timeout": 0.03, "default_poll_timeout": 0.01}


def fast_env() -> TestEnvironment:
    return TestEnvironment(**FAST_ENV)


def patient_env() -> TestEnvironment:
    """fast_env() for correct publishers signalling from other threads: a loaded CI box may not
    schedule them within a second, so each expected signal may take up to WAIT (only a hang
    trips it); the windows in which nothing may happen stay those of fast_env()."""
    return TestEnvironment(**{**FAST_ENV, "default_timeout": WAIT})


def range_publisher(elements: int) -> Publisher[int]:
    if elements == MAX:
        return rstreams.from_iterable(itertools.count())
    return rstreams.range(elements)


_executor: concurrent.futures.ThreadPoolExecutor | None = None
_loop: bp.LoopThread | None = None
_lock = threading.Lock()


def executor() -> concurrent.futures.Executor:
    global _executor
    with _lock:
        if _executor is None:
            _executor = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="tck-publisher")
        return _executor


def loop_thread() -> bp.LoopThread:
    global _loop
    with _lock:
        if _loop is None:
            _loop = bp.LoopThread()
        return _loop


@pytest.fixture(autouse=True, scope="module")
def _shut_down_workers() -> Iterator[None]:
    global _executor, _loop
    yield
    if _executor is not None:
        _executor.shutdown(wait=True, cancel_futures=True)
        _executor = None
    if _loop is not None:
        _loop.close()
        _loop = None


# -- the verification, used the way a user would ----------------------------------------------


class TestRangePublisher(PublisherVerification):
    """rstreams.range with the environment's default timeouts."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        return range_publisher(elements)

    def create_failed_publisher(self) -> Publisher[int]:
        return rstreams.error(RuntimeError("failed on purpose"))


class TestFromIterablePublisher(PublisherVerification):
    def create_publisher(self, elements: int) -> Publisher[int]:
        if elements == MAX:
            return rstreams.from_iterable(itertools.count())
        return rstreams.from_iterable(range(elements)).map(lambda x: x * 2)

    def create_failed_publisher(self) -> Publisher[int]:
        return rstreams.error(ValueError("nothing to read"))

    def create_env(self) -> TestEnvironment:
        return fast_env()


class TestJustPublisher(PublisherVerification):
    """rstreams.just holds its elements, so it is limited to small streams."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        return rstreams.just(*range(elements))

    def max_elements_from_publisher(self) -> int:
        return 1000

    def create_env(self) -> TestEnvironment:
        return fast_env()


class TestSyncPublisher(PublisherVerification):
    """The correct twin of the broken publishers."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        return bp.SyncPublisher(elements)

    def create_failed_publisher(self) -> Publisher[int]:
        return bp.FailedPublisher()

    def create_env(self) -> TestEnvironment:
        return fast_env()


class TestThreadedPublisher(PublisherVerification):
    """Asynchronous: signals come from executor threads, never from the caller's."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        return bp.ThreadedPublisher(elements, executor())

    def create_failed_publisher(self) -> Publisher[int]:
        return bp.FailedPublisher()

    def create_env(self) -> TestEnvironment:
        return patient_env()


class TestLoopPublisher(PublisherVerification):
    """Asynchronous: signals come from an asyncio loop running in another thread."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        return bp.LoopPublisher(elements, loop_thread().loop)

    def create_env(self) -> TestEnvironment:
        return patient_env()


class TestEndlessPublisher(PublisherVerification):
    """An endless publisher: every case that needs on_complete skips."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        return rstreams.from_iterable(itertools.count())

    def max_elements_from_publisher(self) -> int:
        return PUBLISHER_UNABLE_TO_SIGNAL_ON_COMPLETE

    def create_env(self) -> TestEnvironment:
        return fast_env()


# -- without pytest ---------------------------------------------------------------------------


def assert_required_pass(report: Report) -> None:
    assert report.ok, str(report)
    required = [r for r in report.results if r.category == "required"]
    assert len(required) == 22
    not_passed = [r.name for r in required if r.outcome != "passed"]
    assert not not_passed, str(report)


def test_verify_publisher_on_range_passes_every_required_case() -> None:
    report = verify_publisher(
        range_publisher, create_failed_publisher=lambda: rstreams.error(RuntimeError("boom")), env=fast_env()
    )
    assert_required_pass(report)
    assert len(report.results) == 38
    assert {r.name for r in report.skipped} == {r.name for r in report.results if r.category == "untested"}
    assert len(report.passed) == 31


def test_verify_publisher_on_from_iterable_and_skips() -> None:
    report = verify_publisher(
        lambda n: rstreams.from_iterable(list(range(n))),
        max_elements=100,
        skip_stochastic=True,
        env=fast_env(),
    )
    assert report.ok, str(report)
    skipped = {r.name: r.message for r in report.skipped}
    assert (
        "create_failed_publisher() returned None"
        in skipped["optional_spec104_must_signal_on_error_when_fails"]
    )
    assert "skip_stochastic_tests()" in skipped["stochastic_spec103_must_signal_on_methods_sequentially"]
    assert (
        "2147483647" in skipped["required_spec317_must_not_signal_on_error_when_pending_above_long_max_value"]
    )


def test_verify_publisher_on_threaded_publisher() -> None:
    report = verify_publisher(
        lambda n: bp.ThreadedPublisher(n, executor()),
        create_failed_publisher=bp.FailedPublisher,
        env=patient_env(),
    )
    assert_required_pass(report)


def test_report_reads_as_a_table() -> None:
    report = verify_publisher(range_publisher, env=fast_env(), skip_stochastic=True)
    text = str(report)
    assert "PASSED" in text and "SKIPPED" in text and "Not verified by this TCK." in text
    assert (
        text.splitlines()[-1]
        == f"{len(report.passed)} passed, 0 failed, {len(report.skipped)} skipped of 38 cases"
    )
    assert report.result("required_spec109_subscribeThrowNPEOnNullSubscriber").outcome == "passed"


def test_the_package_does_not_import_pytest() -> None:
    code = "import sys, rstreams.tck; assert 'pytest' not in sys.modules and '_pytest' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_the_whole_default_run_passes_with_the_default_environment() -> None:
    """The default timeouts (no test-made environment) judge a correct publisher correctly."""
    report = verify_publisher(
        range_publisher, create_failed_publisher=lambda: rstreams.error(RuntimeError("boom"))
    )
    assert_required_pass(report)


# -- broken publishers: the named case must fail ---------------------------------------------


class Broken(PublisherVerification):
    publisher_type: Callable[[int], Publisher[int]] = bp.SyncPublisher
    failed_type: Callable[[], Publisher[int]] | None = None

    def create_publisher(self, elements: int) -> Publisher[int]:
        return type(self).publisher_type(elements)

    def create_failed_publisher(self) -> Publisher[int] | None:
        failed = type(self).failed_type
        return None if failed is None else failed()

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(
            default_timeout=0.3, default_no_signals_timeout=0.03, default_poll_timeout=0.01
        )


def run_one(case: str, publisher: Callable[[int], Publisher[int]] = bp.SyncPublisher, **attrs: Any) -> Any:
    verification = type("BrokenCase", (Broken,), {"publisher_type": staticmethod(publisher), **attrs})()
    return run_cases(verification, [case]).results[0]


BROKEN: list[tuple[str, Callable[[int], Publisher[int]], str]] = [
    ("required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements",
     bp.OverDeliveringPublisher, "rule 1.1"),
    ("required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements",
     bp.EagerPublisher, "rule 1.1"),
    ("required_spec102_may_signal_less_than_requested_and_terminate_subscription",
     bp.NeverCompletesPublisher, "rule 1.2"),
    ("required_spec105_must_signal_on_complete_when_finite_stream_terminates",
     bp.NeverCompletesPublisher, "rule 1.5"),
    ("required_create_publisher1_must_produce_a_stream_of_exactly1_element",
     bp.NeverCompletesPublisher, "must complete"),
    ("required_create_publisher3_must_produce_a_stream_of_exactly3_elements",
     bp.OverDeliveringPublisher, "rule 1.1"),
    ("required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled",
     bp.SignalsAfterCompletePublisher, "rule 1.7"),
    ("required_spec109_subscribe_throw_npe_on_null_subscriber", bp.AcceptsNonePublisher, "returned normally"),
    ("required_spec109_subscribe_throw_npe_on_null_subscriber",
     bp.AttributeErrorOnNonePublisher, "AttributeError"),
    ("required_spec109_must_issue_on_subscribe_for_non_null_subscriber",
     bp.CompletesFirstPublisher, "before on_subscribe"),
    ("required_spec109_must_issue_on_subscribe_for_non_null_subscriber",
     bp.DoubleOnSubscribePublisher, "rule 2.12: on_subscribe was called twice"),
    ("required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements",
     bp.DoubleOnSubscribePublisher, "rule 2.12: on_subscribe was called twice"),
    ("required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe",
     bp.RejectsReentrantRequestPublisher, "rule 3.2"),
    ("required_spec303_must_not_allow_unbounded_recursion", bp.RecursivePublisher, "rule 3.3"),
    ("required_spec306_after_subscription_is_cancelled_request_must_be_nops",
     bp.IgnoresCancelPublisher, "rule 3.6"),
    ("required_spec307_after_subscription_is_cancelled_additional_cancelations_must_be_nops",
     bp.CancelTwiceRaisesPublisher, "rule 3.15"),
    ("required_spec309_request_zero_must_signal_illegal_argument_exception",
     bp.AcceptsZeroPublisher, "rule 3.9"),
    ("required_spec309_request_negative_number_must_signal_illegal_argument_exception",
     bp.AcceptsZeroPublisher, "rule 3.9"),
    ("required_spec309_request_zero_must_signal_illegal_argument_exception",
     bp.RaisesOnBadRequestPublisher, "raised ValueError"),
    ("required_spec309_request_zero_must_signal_illegal_argument_exception",
     bp.WrongErrorTypePublisher, "RuntimeError"),
    ("required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",
     bp.FlushesOnCancelPublisher, "rule 3.12"),
    ("required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber",
     bp.KeepsSubscribersPublisher, "rule 3.13"),
    ("required_spec317_must_support_a_pending_element_count_up_to_long_max_value",
     bp.OffByOneCapPublisher, "ArithmeticError"),
    ("required_spec317_must_support_a_cumulative_pending_element_count_up_to_long_max_value",
     bp.DelayedOffByOnePublisher, "ArithmeticError"),
    ("required_spec317_must_not_signal_on_error_when_pending_above_long_max_value",
     bp.OverflowErrorPublisher, "ArithmeticError"),
    ("stochastic_spec103_must_signal_on_methods_sequentially", bp.ConcurrentPublisher, "rule 1.3"),
    # the gaps a naive port misses: each is caught by a required case citing the rule
    ("required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe",
     bp.ReplacesDemandPublisher, "rule 3.8: requests must add up"),
    ("required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe",
     bp.DropsReentrantRequestPublisher, "rule 3.2: requests made inside on_subscribe/on_next must be served"),
    ("stochastic_spec103_must_signal_on_methods_sequentially",
     bp.DropsReentrantRequestPublisher, "rule 3.2: the stream stalled (run 1 of 100)"),
    ("required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",
     bp.LosesCancelInOnNextPublisher, "elements arrived after cancel()"),
    ("required_spec317_must_not_signal_on_error_when_pending_above_long_max_value",
     bp.LosesCancelInOnNextPublisher, "elements arrived after cancel()"),
    ("required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",
     bp.SetsUpAfterOnSubscribePublisher, "elements arrived after cancel()"),
    ("required_spec109_must_issue_on_subscribe_for_non_null_subscriber",
     bp.CompletesTwiceWhenEmptyPublisher, "rule 1.7: on_complete() after on_complete()"),
    ("required_spec109_must_issue_on_subscribe_for_non_null_subscriber",
     bp.SecondSubscribeRaisesPublisher, "rule 1.9: subscribe() raised RuntimeError: this publisher serves"),
    ("required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled",
     bp.CancelRaisesAfterCompletePublisher, "rule 3.15: cancel() raised RuntimeError: already completed"),
    # a stream that ends early says so, instead of only counting what arrived
    ("required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",
     bp.CompletesOnHugeDemandPublisher, "; 0 received of 9223372036854775807 requested, then on_complete"),
    ("required_spec317_must_not_signal_on_error_when_pending_above_long_max_value",
     bp.CompletesOnHugeDemandPublisher, "1 received of 9223372036854775807 requested, then on_complete"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "publisher", "message"), BROKEN, ids=[b[1].__name__ for b in BROKEN])
def test_broken_publisher_fails_the_named_case(
    case: str, publisher: Callable[[int], Publisher[int]], message: str
) -> None:
    result = run_one(case, publisher)
    assert result.outcome == "failed", result
    assert message in result.message, result.message
    twin = run_one(case, bp.SyncPublisher)
    assert twin.outcome == "passed", twin


def test_the_overflow_publisher_still_passes_the_exact_maximum() -> None:
    """Rule 3.17's off-by-one: MAX//2 + MAX//2 + 1 is exactly MAX and must be accepted."""
    case = "required_spec317_must_support_a_cumulative_pending_element_count_up_to_long_max_value"
    assert run_one(case, bp.OverflowErrorPublisher).outcome == "passed"
    assert run_one(case, bp.DelayedPublisher).outcome == "passed"


@pytest.mark.timeout(120)
def test_signals_from_two_threads_at_once_fail_the_required_cases_too() -> None:
    """Rule 1.3 beyond the stochastic case: a publisher that runs each signal as its own pool
    task fails required cases with the stochastic one skipped, because every TCK subscriber
    checks that no two threads are inside its signals at once. Endless streams are left out
    (max_elements): that twin would submit tasks without end."""
    report = verify_publisher(
        bp.PerElementTaskPublisher, env=fast_env(), skip_stochastic=True, max_elements=1000
    )
    overlapping = [r.name for r in report.failed if r.message.startswith("rule 1.3: ")]
    assert overlapping, str(report)
    assert all(r.category == "required" for r in report.failed if r.name in overlapping)
    correct = verify_publisher(bp.SyncPublisher, env=fast_env(), skip_stochastic=True, max_elements=1000)
    assert correct.ok, str(correct)


class TestDelayedPublisher(PublisherVerification):
    """Asynchronous with a delay: demand accumulates before anything is delivered."""

    def create_publisher(self, elements: int) -> Publisher[int]:
        return bp.DelayedPublisher(elements)

    def create_env(self) -> TestEnvironment:
        return fast_env()


FAILED_BROKEN: list[tuple[Callable[[], Publisher[int]], str]] = [
    (bp.ErrorWithoutOnSubscribePublisher, "before on_subscribe"),
    (bp.RaisingFailedPublisher, "RuntimeError"),
    (bp.SilentFailedPublisher, "did not signal on_error"),
    (
        bp.MessageNotExceptionFailedPublisher,
        "rule 1.4: on_error('this publisher always fails') carries a str",
    ),
]

MAY_REJECT = (
    "required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them"
    "_rejection_must_trigger_on_error_after_on_subscribe"
)


@pytest.mark.parametrize(("failed", "message"), FAILED_BROKEN, ids=[f[0].__name__ for f in FAILED_BROKEN])
def test_broken_failed_publisher_fails_rule_1_9_and_optional_1_4(
    failed: Callable[[], Publisher[int]], message: str
) -> None:
    result = run_one(MAY_REJECT, failed_type=staticmethod(failed))
    assert result.outcome == "failed" and message in result.message, result
    hard = run_one("optional_spec104_must_signal_on_error_when_fails", failed_type=staticmethod(failed))
    assert hard.outcome == "failed" and "rule 1.4" in hard.message, hard
    for case in (MAY_REJECT, "optional_spec104_must_signal_on_error_when_fails"):
        twin = run_one(case, failed_type=staticmethod(bp.FailedPublisher))
        assert twin.outcome == "passed", twin


def test_without_failed_publisher_those_cases_skip() -> None:
    for case in (MAY_REJECT, "optional_spec104_must_signal_on_error_when_fails"):
        result = run_one(case)
        assert result.outcome == "skipped" and "create_failed_publisher() returned None" in result.message


def test_optional_failure_is_a_skip_that_says_it_failed() -> None:
    case = (
        "optional_spec309_request_negative_number_may_signal_illegal_argument_exception_with_specific_message"
    )
    result = run_one(case, bp.UnhelpfulMessagePublisher)
    assert result.outcome == "skipped"
    assert "OPTIONAL rule 3.9 FAILED" in result.message and "'nope'" in result.message
    assert run_one(case, bp.SyncPublisher).outcome == "passed"


def test_optional_failure_raises_skip_under_pytest_too() -> None:
    case = (
        "optional_spec309_request_negative_number_may_signal_illegal_argument_exception_with_specific_message"
    )
    verification = type(
        "BrokenCase", (Broken,), {"publisher_type": staticmethod(bp.UnhelpfulMessagePublisher)}
    )()
    with pytest.raises(SkipTest, match="FAILED"):
        verification.run_tck_case(case)


def test_a_failure_also_lists_the_other_recorded_errors() -> None:
    """An over-eager publisher: the case fails on the unexpected element and names the rule-1.1 breach."""
    result = run_one(
        "required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements",
        bp.EagerPublisher,
    )
    assert "received element #1 (0) but only 0 were requested" in result.message


def test_cases_run_against_a_cancelled_endless_publisher_cancel_it_afterwards() -> None:
    """The environment cancels every subscription a case left open. The case drops its two
    subscribers, and the environment holds them weakly (rule 3.13): the test holds their
    subscriptions (and so them), or a cyclic collection during the case could take both, and
    there would be nothing left open to cancel."""
    opened: list[Watched] = []
    cancelled: list[Watched] = []

    class Watched(bp.SyncSubscription):
        def start(self) -> None:
            opened.append(self)
            super().start()

        def cancel(self) -> None:
            cancelled.append(self)
            super().cancel()

    class WatchedPublisher(bp.SyncPublisher):
        @property
        def subscription_type(self) -> type[bp.SyncSubscription]:
            return Watched

    result = run_one("optional_spec111_may_support_multi_subscribe", WatchedPublisher)
    assert result.outcome == "passed"
    assert len(opened) == 2 and set(map(id, cancelled)) == set(map(id, opened)), (opened, cancelled)


def test_manual_subscriber_waits_for_signals_from_another_thread() -> None:
    env = fast_env()
    sub: ManualSubscriber[int] = new_manual_subscriber(env, bp.ThreadedPublisher(3, executor()))
    assert sub.request_next_elements(3) == [0, 1, 2]
    sub.expect_completion()
    sub.expect_none()
    env.verify_no_async_errors_no_delay()


def test_manual_subscriber_timeouts_fail_with_the_state() -> None:
    env = TestEnvironment(default_timeout=0.05, default_no_signals_timeout=0.02)
    sub: ManualSubscriber[int] = new_manual_subscriber(env, rstreams.range(5))
    with pytest.raises(TCKFailure, match="0 received of 0 requested"):
        sub.next_element()
    sub.request(1)
    with pytest.raises(TCKFailure, match="got the element 0"):
        sub.expect_none()
    with pytest.raises(TCKFailure, match="expected on_complete, but got the element 0"):
        sub.expect_completion()
    env.clear_async_errors()  # a recorded failure ends every later wait at once
    sub.request(2)
    with pytest.raises(
        TCKFailure, match=r"expected 3 elements, but only 2 arrived within 50 ms; 3 received of 3"
    ):
        sub.next_elements(3)


def test_a_blocking_publisher_fails_by_case_timeout_instead_of_hanging() -> None:
    verification = type(
        "BlockingCase", (Broken,), {"publisher_type": staticmethod(bp.BlockingPublisher), "case_timeout": 0.3}
    )()
    try:
        report = run_cases(
            verification, ["required_spec102_may_signal_less_than_requested_and_terminate_subscription"]
        )
    finally:
        bp.BlockingSubscription.release.set()  # let the abandoned thread finish
    result = report.results[0]
    assert result.outcome == "failed" and "did not finish within 0.3 s" in result.message, result
    assert "blocked inside BlockingSubscription.request()" in result.message, result.message


# -- the rule gaps: what a naive TCK lets through ----------------------------------------------


def test_a_unicast_publisher_that_rejects_by_on_error_passes() -> None:
    """Rule 1.9 allows one subscriber only, if later ones get on_subscribe then on_error."""
    report = verify_publisher(bp.UnicastPublisher, env=fast_env(), skip_stochastic=True)
    assert report.ok, str(report)
    assert report.result("required_spec109_mustIssueOnSubscribeForNonNullSubscriber").outcome == "passed"
    assert report.result("optional_spec111_maySupportMultiSubscribe").outcome == "skipped"


def test_a_raising_subscribe_in_an_optional_case_is_a_violation_not_a_skip() -> None:
    """Rule 1.9 is required: the optional multi-subscribe case reports it as ``violated``."""
    result = run_one("optional_spec111_may_support_multi_subscribe", bp.SecondSubscribeRaisesPublisher)
    assert result.outcome == "violated", result
    assert result.message.startswith("REQUIRED rule 1.9 broken during the optional case for rule 1.11")
    assert "RuntimeError: this publisher serves one subscriber only" in result.message
    report = Report((result,))
    assert not report.ok and "1 violated" in str(report)


def test_the_rule_that_broke_first_is_reported_first() -> None:
    """A request refused inside on_next is rule 3.2, reported at once by the rule-1.3 case too."""
    result = run_one(
        "stochastic_spec103_must_signal_on_methods_sequentially", bp.RejectsReentrantRequestPublisher
    )
    assert result.outcome == "failed" and result.message.startswith("rule 3.2: request(1) called"), result
    assert "RuntimeError: re-entrant request() is not supported" in result.message
    assert "rule 1.3" not in result.message  # the stall it causes is not reported as a 1.3 breach


def test_a_runaway_after_cancel_is_stopped_and_counted() -> None:
    """A lost cancel floods; the TCK's subscriber stops it past the runaway limit and reports the count."""
    case = "required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling"
    result = run_one(case, bp.LosesCancelInOnNextPublisher)
    assert result.outcome == "failed"
    assert result.message.startswith("rule 3.12: 10001 elements arrived after cancel()"), result.message
    assert "StreamAbandoned" in result.message


def test_a_second_completion_of_an_empty_stream_is_a_violation_in_the_optional_case() -> None:
    """Rule 1.7 is required: the optional empty-stream case that sees it reports ``violated``."""
    case = "optional_spec105_empty_stream_must_terminate_by_signalling_on_complete"
    result = run_one(case, bp.SignalsAfterCompletePublisher)
    assert result.outcome == "violated", result
    assert "rule 1.7: on_complete() after on_complete" in result.message
    assert run_one(case, bp.SyncPublisher).outcome == "passed"


@pytest.mark.parametrize(
    "case",
    [
        "required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling",
        "required_spec317_must_not_signal_on_error_when_pending_above_long_max_value",
    ],
)
def test_a_publisher_thread_that_ignores_cancel_is_stopped_within_its_case(case: str) -> None:
    """A flood from the publisher's own thread after cancel: the case fails citing 3.12 with the
    count, and the TCK's subscriber raises until the thread ends, so no runaway outlives the case.

    The flood comes from a thread of its own, which a loaded machine may leave unscheduled for
    longer than Broken's 300 ms (its first 11 elements did not arrive in time: rule 3.17 failed
    first) or its 30 ms quiet window (a window without an element: the case took the stream for
    stopped and passed). Each wait ends as soon as what it awaits comes, and the flood ends every
    quiet window early, so the longer bounds cost nothing but the full window the 15 requested
    elements of spec312 leave."""
    before = len(bp.RunawayThreadPublisher.all_threads)
    result = run_one(case, bp.RunawayThreadPublisher, create_env=_patient_flood_env)
    assert result.outcome == "failed", result
    assert "rule 3.12" in result.message and "elements arrived after" in result.message, result.message
    threads = bp.RunawayThreadPublisher.all_threads[before:]
    assert threads
    for thread in threads:
        patience.join(thread, WAIT)  # a bound for a liveness check (own time), not a speed assertion
        assert not thread.is_alive(), "a runaway delivery thread survived its case"


def _patient_flood_env(_: Broken) -> TestEnvironment:
    """Broken's environment for a flood from another thread: WAIT for each expected signal and a
    quiet window of a second; only a hang, or a thread starved for a second, trips them."""
    return TestEnvironment(default_timeout=WAIT, default_no_signals_timeout=1.0, default_poll_timeout=0.01)


def test_a_signal_after_the_end_of_its_case_fails_a_later_case_naming_the_first() -> None:
    """A second on_complete that comes only after its case ended is not lost with the case: the
    next case of the same verification fails on it, naming the case whose stream it was."""
    spec107 = "required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled"
    spec302 = "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"
    for publisher, broken in ((bp.CompletesAgainLaterPublisher, True), (bp.SyncPublisher, False)):
        bp.COMPLETED_EARLIER.clear()
        verification = type("LateCase", (Broken,), {"publisher_type": staticmethod(publisher)})()
        assert run_cases(verification, [spec107]).results[0].outcome == "passed"
        assert len(bp.COMPLETED_EARLIER) == (1 if broken else 0)
        for subscriber in bp.COMPLETED_EARLIER:
            subscriber.on_complete()  # the case is over: its subscriber is closed
        later = run_cases(verification, [spec302]).results[0]
        if not broken:
            assert later.outcome == "passed", later
            continue
        assert later.outcome == "failed", later
        assert later.message.startswith("rule 1.7: on_complete() after on_complete"), later.message
        assert f"after the case {spec107} had ended" in later.message, later.message


def test_a_late_second_completion_of_an_empty_stream_fails_a_later_case() -> None:
    """The same for the empty stream's probes (rule 1.9's case subscribes two to create_publisher(0))."""
    spec109 = "required_spec109_must_issue_on_subscribe_for_non_null_subscriber"
    spec302 = "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"
    bp.COMPLETED_EARLIER.clear()
    verification = type(
        "LateEmpty", (Broken,), {"publisher_type": staticmethod(bp.CompletesAgainLaterPublisher)}
    )()
    assert run_cases(verification, [spec109]).results[0].outcome == "passed"
    assert len(bp.COMPLETED_EARLIER) == 2
    for subscriber in bp.COMPLETED_EARLIER:
        subscriber.on_complete()
    bp.COMPLETED_EARLIER.clear()
    later = run_cases(verification, [spec302]).results[0]
    assert later.outcome == "failed", later
    assert later.message.startswith("rule 1.7: on_complete() after on_complete()"), later.message
    assert f"after the case {spec109} had ended" in later.message, later.message


@pytest.mark.parametrize(
    ("failed", "message"),
    [
        (bp.FailsAgainOnRequestPublisher, "rule 1.7: on_error was signalled twice"),
        (bp.RaisesOnRequestFailedPublisher, "rule 3.16: request(10) after on_error raised RuntimeError"),
        (bp.CancelRaisesFailedPublisher, "rule 3.15: cancel() after on_error raised RuntimeError"),
    ],
    ids=["fails again", "raises", "cancel raises"],
)
def test_a_failed_publisher_must_take_a_request_after_its_error_as_a_no_op(
    failed: Callable[[], Publisher[int]], message: str
) -> None:
    """After on_error the subscription counts as cancelled (1.6): request(10) returns normally
    (3.6, 3.16) and signals nothing (1.7), as spec107 checks after on_complete."""
    result = run_one(MAY_REJECT, failed_type=staticmethod(failed))
    assert result.outcome == "failed", result
    assert result.message.startswith(message), result.message


def test_a_signal_after_the_end_of_the_last_case_fails_that_case() -> None:
    """The run's last case has no next case: a breach its stream commits once the case ended
    (here while the TCK cancels at the end of the case) fails that case when the run ends."""
    spec302 = "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"
    for publisher, broken in ((bp.CompletesAgainOnCancelPublisher, True), (bp.SyncPublisher, False)):
        verification = type("LastCase", (Broken,), {"publisher_type": staticmethod(publisher)})()
        result = run_cases(verification, [spec302]).results[0]
        if not broken:
            assert result.outcome == "passed", result
            continue
        assert result.outcome == "failed", result
        assert result.message.startswith("rule 1.7: on_complete() after on_complete"), result.message
        assert "after its case had ended" in result.message, result.message
        assert result.message.endswith("the case itself: passed"), result.message


def test_under_pytest_a_breach_after_the_last_case_fails_the_class_teardown() -> None:
    """pytest calls teardown_class after a class's last case: the late breach of that case
    fails there, naming it; a correct publisher's class tears down quietly."""
    spec302 = "required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe"
    for publisher, broken in ((bp.CompletesAgainOnCancelPublisher, True), (bp.SyncPublisher, False)):
        cls: type[Broken] = type("LastPytestCase", (Broken,), {"publisher_type": staticmethod(publisher)})
        cls().run_tck_case(spec302)
        if not broken:
            cls.teardown_class()
            continue
        with pytest.raises(TCKFailure, match=rf"^rule 1\.7: on_complete\(\) after on_complete.*{spec302}"):
            cls.teardown_class()
        cls.teardown_class()  # reported once
