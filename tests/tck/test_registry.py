"""The TCK's registry and environment: names pinned to the JVM TCK, categories, pytest wiring.

The 38 PublisherVerification entries below are copied from the JVM TCK's method list
(reactive-streams-jvm v1.0.4, ``PublisherVerificationRules``) as literals, so this test
needs nothing beside the repository.
"""

from __future__ import annotations

import sys
import textwrap
import threading
import unittest
from pathlib import Path
from typing import Any

import pytest

from rstreams.api import Subscription
from rstreams.tck import CaseResult, PublisherVerification, Report, SkipTest, TCKFailure, TestEnvironment
from rstreams.tck._env import Latch, Promise, env_millis
from rstreams.tck._jvm_names import PUBLISHER_VERIFICATION_RULES, snake
from rstreams.tck._registry import HardFailure, Verification, run_cases, tck_test
from rstreams.tck._test_subscribers import TestSubscriber
from testkit import patience

JVM_PUBLISHER_VERIFICATION = [
    ("required_createPublisher1MustProduceAStreamOfExactly1Element", None, "required"),
    ("required_createPublisher3MustProduceAStreamOfExactly3Elements", None, "required"),
    ("required_validate_maxElementsFromPublisher", None, "required"),
    ("required_validate_boundedDepthOfOnNextAndRequestRecursion", None, "required"),
    (
        "required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements",
        "1.01",
        "required",
    ),
    ("required_spec102_maySignalLessThanRequestedAndTerminateSubscription", "1.02", "required"),
    ("stochastic_spec103_mustSignalOnMethodsSequentially", "1.03", "stochastic"),
    ("optional_spec104_mustSignalOnErrorWhenFails", "1.04", "optional"),
    ("required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates", "1.05", "required"),
    ("optional_spec105_emptyStreamMustTerminateBySignallingOnComplete", "1.05", "optional"),
    (
        "untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled",
        "1.06",
        "untested",
    ),
    ("required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled", "1.07", "required"),
    ("untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled", "1.07", "untested"),
    (
        "untested_spec108_possiblyCanceledSubscriptionShouldNotReceiveOnErrorOrOnCompleteSignals",
        "1.08",
        "untested",
    ),
    ("untested_spec109_subscribeShouldNotThrowNonFatalThrowable", "1.09", "untested"),
    ("required_spec109_subscribeThrowNPEOnNullSubscriber", "1.09", "required"),
    ("required_spec109_mustIssueOnSubscribeForNonNullSubscriber", "1.09", "required"),
    (
        "required_spec109_mayRejectCallsToSubscribeIfPublisherIsUnableOrUnwillingToServeThem"
        "RejectionMustTriggerOnErrorAfterOnSubscribe",
        "1.09",
        "required",
    ),
    ("untested_spec110_rejectASubscriptionRequestIfTheSameSubscriberSubscribesTwice", "1.10", "untested"),
    ("optional_spec111_maySupportMultiSubscribe", "1.11", "optional"),
    ("optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals", "1.11", "optional"),
    (
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingOneByOne",
        "1.11",
        "optional",
    ),
    (
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingManyUpfront",
        "1.11",
        "optional",
    ),
    (
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingManyUpfrontAndCompleteAsExpected",
        "1.11",
        "optional",
    ),
    ("required_spec302_mustAllowSynchronousRequestCallsFromOnNextAndOnSubscribe", "3.02", "required"),
    ("required_spec303_mustNotAllowUnboundedRecursion", "3.03", "required"),
    ("untested_spec304_requestShouldNotPerformHeavyComputations", "3.04", "untested"),
    ("untested_spec305_cancelMustNotSynchronouslyPerformHeavyComputation", "3.05", "untested"),
    ("required_spec306_afterSubscriptionIsCancelledRequestMustBeNops", "3.06", "required"),
    ("required_spec307_afterSubscriptionIsCancelledAdditionalCancelationsMustBeNops", "3.07", "required"),
    ("required_spec309_requestZeroMustSignalIllegalArgumentException", "3.09", "required"),
    ("required_spec309_requestNegativeNumberMustSignalIllegalArgumentException", "3.09", "required"),
    (
        "optional_spec309_requestNegativeNumberMaySignalIllegalArgumentExceptionWithSpecificMessage",
        "3.09",
        "optional",
    ),
    ("required_spec312_cancelMustMakeThePublisherToEventuallyStopSignaling", "3.12", "required"),
    (
        "required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber",
        "3.13",
        "required",
    ),
    ("required_spec317_mustSupportAPendingElementCountUpToLongMaxValue", "3.17", "required"),
    ("required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue", "3.17", "required"),
    ("required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue", "3.17", "required"),
]

TSV = Path(__file__).resolve().parents[3] / "shared" / "tck" / "jvm_tck_tests.tsv"


# -- the names ----------------------------------------------------------------------------


def test_publisher_verification_has_exactly_the_38_jvm_cases_in_order() -> None:
    cases = [(c.jvm_name, c.rule, c.category) for c in PublisherVerification.tck_cases]
    assert cases == JVM_PUBLISHER_VERIFICATION
    assert list(PUBLISHER_VERIFICATION_RULES) == JVM_PUBLISHER_VERIFICATION


def test_category_counts_match_the_jvm_tck() -> None:
    categories = [c.category for c in PublisherVerification.tck_cases]
    counts = {k: categories.count(k) for k in ("required", "optional", "stochastic", "untested")}
    assert counts == {"required": 22, "optional": 8, "stochastic": 1, "untested": 7}


def test_every_case_is_a_snake_case_method_with_a_pytest_alias() -> None:
    for case in PublisherVerification.tck_cases:
        assert case.name == snake(case.jvm_name)
        assert callable(getattr(PublisherVerification, case.name))
        alias = getattr(PublisherVerification, f"test_{case.name}")
        assert alias.__name__ == f"test_{case.name}" and case.category in (alias.__doc__ or "")
        assert case.doc, f"{case.name} has no docstring"


@pytest.mark.skipif(not TSV.exists(), reason="the shared JVM TCK table is not beside the repository")
def test_literals_agree_with_the_shared_tsv() -> None:
    rows = [line.split("\t") for line in TSV.read_text(encoding="utf-8").splitlines()[1:] if line]
    from_tsv = [(r[1], None if r[2] == "-" else r[2], r[3]) for r in rows if r[0] == "PublisherVerification"]
    assert from_tsv == JVM_PUBLISHER_VERIFICATION


@pytest.mark.parametrize(
    ("jvm", "python"),
    [
        (
            "required_spec109_subscribeThrowNPEOnNullSubscriber",
            "required_spec109_subscribe_throw_npe_on_null_subscriber",
        ),
        (
            "required_createPublisher1MustProduceAStreamOfExactly1Element",
            "required_create_publisher1_must_produce_a_stream_of_exactly1_element",
        ),
        ("required_validate_maxElementsFromPublisher", "required_validate_max_elements_from_publisher"),
        (
            "required_spec317_mustSupportAPendingElementCountUpToLongMaxValue",
            "required_spec317_must_support_a_pending_element_count_up_to_long_max_value",
        ),
    ],
)
def test_snake(jvm: str, python: str) -> None:
    assert snake(jvm) == python


# -- the decorator and the base class ----------------------------------------------------------


def test_tck_test_rejects_a_mismatched_name_or_category() -> None:
    with pytest.raises(ValueError, match="must be named 'required_spec101_x_y'"):

        @tck_test(rule="1.01", category="required", jvm="required_spec101_xY")
        def wrong_name() -> None: ...

    with pytest.raises(ValueError, match="does not start with its category"):
        tck_test(rule="1.01", category="optional", jvm="required_spec101_xY")
    with pytest.raises(ValueError, match="category must be one of"):
        tck_test(rule="1.01", category="mandatory", jvm="mandatory_x")  # type: ignore[arg-type]


class Toy(Verification):
    """One case per outcome; records the environments it was given."""

    envs: list[TestEnvironment]
    tracked: TestSubscriber[int]

    def create_env(self) -> TestEnvironment:
        env = TestEnvironment(default_timeout=0.05, default_no_signals_timeout=0.01)
        self.envs.append(env)
        return env

    @tck_test(rule="1.01", category="required", jvm="required_spec101_passes")
    def required_spec101_passes(self) -> None:
        """Passes."""
        self.env.track(self.tracked)

    @tck_test(rule="1.02", category="required", jvm="required_spec102_fails")
    def required_spec102_fails(self) -> None:
        """Fails, with an earlier recorded error."""
        self.env.record_failure("recorded first")
        self.env.flop("rule 1.2: broken")

    @tck_test(rule="1.03", category="optional", jvm="optional_spec103_fails")
    def optional_spec103_fails(self) -> None:
        """An optional failure."""
        raise ValueError("not supported")

    @tck_test(rule="1.04", category="optional", jvm="optional_spec104_failsHard")
    def optional_spec104_fails_hard(self) -> None:
        """An optional case that fails anyway."""
        raise HardFailure("rule 1.4: hard")

    @tck_test(rule="1.05", category="untested", jvm="untested_spec105_notChecked")
    def untested_spec105_not_checked(self) -> None:
        """Never runs."""
        raise AssertionError("untested cases must not run")

    @tck_test(rule=None, category="stochastic", jvm="stochastic_skips")
    def stochastic_skips(self) -> None:
        """Skips itself."""
        raise SkipTest("not today")


def make_toy() -> Toy:
    toy = Toy()
    toy.envs = []
    toy.tracked = TestSubscriber(TestEnvironment())
    return toy


def test_run_cases_applies_each_category() -> None:
    toy = make_toy()
    report = run_cases(toy)
    outcome = {r.name: r.outcome for r in report.results}
    assert outcome == {
        "required_spec101_passes": "passed",
        "required_spec102_fails": "failed",
        "optional_spec103_fails": "skipped",
        "optional_spec104_fails_hard": "failed",
        "untested_spec105_not_checked": "skipped",
        "stochastic_skips": "skipped",
    }
    assert not report.ok and [r.name for r in report.passed] == ["required_spec101_passes"]
    message = {r.name: r.message for r in report.results}
    # the failure recorded first leads; the one the case raised afterwards follows
    assert message["required_spec102_fails"].startswith("recorded first")
    assert "then: rule 1.2: broken" in message["required_spec102_fails"]
    assert message["optional_spec103_fails"].startswith("OPTIONAL rule 1.3 FAILED")
    assert "ValueError: not supported" in message["optional_spec103_fails"]
    assert message["untested_spec105_not_checked"] == "Not verified by this TCK."
    assert len(toy.envs) == 6 and len({id(e) for e in toy.envs}) == 6  # a fresh env per case


def test_run_cases_selects_by_python_or_jvm_name() -> None:
    report = run_cases(make_toy(), ["required_spec101_passes", "optional_spec104_failsHard"])
    assert [r.name for r in report.results] == ["required_spec101_passes", "optional_spec104_fails_hard"]
    with pytest.raises(KeyError):
        run_cases(make_toy(), ["no_such_case"])


def test_report_str_and_lookup() -> None:
    report = Report(
        (
            CaseResult("a_case", "aCase", "1.01", "required", "passed", ""),
            CaseResult("b_case", "bCase", None, "optional", "skipped", "because\nsecond line"),
        )
    )
    text = str(report)
    assert (
        "PASSED   1.1   required   a_case" in text
    )  # the specification's numbering and "because" in text and "second line" not in text
    assert text.endswith("1 passed, 0 failed, 1 skipped of 2 cases")
    assert report.ok and report.result("bCase").name == "b_case"


def test_skip_and_failure_types() -> None:
    assert issubclass(SkipTest, unittest.SkipTest)
    assert issubclass(TCKFailure, AssertionError) and issubclass(HardFailure, TCKFailure)


@pytest.mark.timeout(240)  # (above its child's 120 s of own time)
def test_subclasses_inherit_cases_and_overrides_run(tmp_path: Path) -> None:
    """Under real pytest: 38 tests per subclass, untested ones reported as skips."""
    module = tmp_path / "test_user_publisher.py"
    module.write_text(
        textwrap.dedent(
            """
            import rstreams
            from rstreams.tck import PublisherVerification, TestEnvironment

            class TestUserPublisher(PublisherVerification):
                def create_publisher(self, elements):
                    return rstreams.range(elements)

                def max_elements_from_publisher(self):
                    return 100

                def skip_stochastic_tests(self):
                    return True

                def create_env(self):
                    return TestEnvironment(default_no_signals_timeout=0.02)
            """
        )
    )
    run = patience.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", str(module)],
        120,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    # 38 cases: 7 untested, 2 without a failed publisher, 1 stochastic, 1 needing 2**31-1 elements
    assert "27 passed, 11 skipped" in run.stdout, run.stdout


# -- the environment ----------------------------------------------------------------------


def test_env_defaults_and_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TIMEOUT", "NO_SIGNALS_TIMEOUT", "POLL_TIMEOUT"):
        monkeypatch.delenv(f"RSTREAMS_TCK_DEFAULT_{name}_MS", raising=False)
    env = TestEnvironment()
    assert (env.default_timeout, env.default_no_signals_timeout, env.default_poll_timeout) == (0.5, 0.1, 0.01)
    monkeypatch.setenv("RSTREAMS_TCK_DEFAULT_TIMEOUT_MS", "250")
    monkeypatch.setenv("RSTREAMS_TCK_DEFAULT_NO_SIGNALS_TIMEOUT_MS", "40")
    monkeypatch.setenv("RSTREAMS_TCK_DEFAULT_POLL_TIMEOUT_MS", "5")
    env = TestEnvironment()
    assert (env.default_timeout, env.default_no_signals_timeout, env.default_poll_timeout) == (
        0.25,
        0.04,
        0.005,
    )
    assert TestEnvironment(default_timeout=2.0).default_timeout == 2.0  # explicit beats the environment
    monkeypatch.setenv("RSTREAMS_TCK_DEFAULT_POLL_TIMEOUT_MS", "soon")
    with pytest.raises(ValueError, match="RSTREAMS_TCK_DEFAULT_POLL_TIMEOUT_MS must be a whole number"):
        TestEnvironment()
    monkeypatch.setenv("RSTREAMS_TCK_PUBLISHER_REFERENCE_GC_TIMEOUT_MS", "-1")
    with pytest.raises(ValueError, match="must not be negative"):
        env_millis("RSTREAMS_TCK_PUBLISHER_REFERENCE_GC_TIMEOUT_MS", 300)


def test_expect_error_keeps_waiting_over_many_polls() -> None:
    """The JVM TCK 1.0.4 gave up after the first poll; the total timeout must count."""
    env = TestEnvironment(default_timeout=2.0, default_poll_timeout=0.01)
    timer = threading.Timer(0.1, lambda: env.record_async_error(ValueError("rule 3.9: late")))
    timer.start()
    try:
        error = env.expect_error(ValueError, message_part=("nothing", "3.9"))
    finally:
        timer.join()
    assert str(error) == "rule 3.9: late" and env.async_errors == []


def test_expect_error_failures() -> None:
    env = TestEnvironment(default_timeout=0.02, default_poll_timeout=0.005)
    with pytest.raises(TCKFailure, match=r"expected on_error\(ValueError\) within 20 ms"):
        env.expect_error(ValueError)
    env.clear_async_errors()
    env.record_async_error(RuntimeError("other"))
    with pytest.raises(TCKFailure, match="the first error was RuntimeError: other"):
        env.expect_error(ValueError)
    env.clear_async_errors()
    env.record_async_error(ValueError("vague"))
    with pytest.raises(TCKFailure, match="to contain one of"):
        env.expect_error(ValueError, message_part="3.9")


def test_verify_no_async_errors() -> None:
    env = TestEnvironment(default_no_signals_timeout=0.01)
    env.verify_no_async_errors()
    env.record_async_error(KeyError("x"))
    with pytest.raises(TCKFailure, match="async error during test execution: KeyError"):
        env.verify_no_async_errors_no_delay()
    assert isinstance(env.drop_async_error(), KeyError) and env.drop_async_error() is None
    failure = env.record_failure("rule 9.9: recorded")
    with pytest.raises(TCKFailure) as raised:
        env.verify_no_async_errors()
    assert raised.value is failure


def test_latch_and_promise() -> None:
    env = TestEnvironment(default_timeout=0.02)
    latch = Latch(env)
    with pytest.raises(TCKFailure, match="never closed"):
        latch.expect_close(error_msg="never closed")
    env.clear_async_errors()  # a recorded failure ends every later wait at once
    threading.Timer(0.01, latch.close).start()
    latch.expect_close(timeout=2.0)
    promise: Promise[int] = Promise(env, "answer")
    with pytest.raises(TCKFailure, match="the answer was used before it was set"):
        _ = promise.value
    env.clear_async_errors()
    assert promise.complete(42) and promise.expect_completion() == 42
    assert not promise.complete(43) and promise.value == 42
    assert [str(e) for e in env.async_errors] == ["the answer was completed twice"]


def test_an_overrun_case_says_what_its_streams_did() -> None:
    """The observation in a case_timeout message: no signal, a stream still running, a runaway."""

    class Nothing(Subscription):
        def request(self, n: int) -> None:
            pass

        def cancel(self) -> None:
            pass

    env = TestEnvironment(default_timeout=60.0)
    assert env.observation() == "no signal arrived at all"
    sub: TestSubscriber[int] = TestSubscriber(env)
    env.track(sub)
    sub.subscription.complete(Nothing())
    for _ in range(3):
        sub._element_arrived()
    assert env.observation().startswith("a stream still running: 3 elements arrived, the last")
    sub.cancel()
    for _ in range(2):
        sub._element_arrived()
    assert env.observation().startswith(
        "rule 3.12: a runaway stream: 2 elements arrived after cancel() (5 in all)"
    )
    env.close()
    assert sub.closed and not sub._element_arrived()  # closed: counted, not delivered


def _verify_calls() -> list[tuple[str, Any, type[Exception], str]]:
    import rstreams
    import rstreams.tck

    tck: Any = rstreams.tck  # the calls below are wrong on purpose
    verify_processor = tck.verify_processor
    verify_publisher = tck.verify_publisher
    verify_subscriber_blackbox = tck.verify_subscriber_blackbox
    verify_subscriber_whitebox = tck.verify_subscriber_whitebox

    def processor(n: int) -> Any:
        return rstreams.MulticastProcessor(buffer_size=n)

    return [
        ("publisher 3", lambda: verify_publisher(3), TypeError,
         "verify_publisher(create_publisher) needs a callable, got 3"),
        ("failed 3", lambda: verify_publisher(rstreams.range, create_failed_publisher=3), TypeError,
         "verify_publisher(create_failed_publisher=) needs a callable or None, got 3"),
        ("env 3", lambda: verify_publisher(rstreams.range, env=3), ValueError,
         "env must be a TestEnvironment or None, got 3"),
        ("stochastic x", lambda: verify_publisher(rstreams.range, skip_stochastic="x"), ValueError,
         "skip_stochastic must be True or False, got 'x'"),
        ("timeout x", lambda: verify_publisher(rstreams.range, case_timeout="x"), ValueError,
         "case_timeout must be a positive number of seconds or None, got 'x'"),
        ("processor None", lambda: verify_processor(None), TypeError,
         "verify_processor(create_processor) needs a callable"),
        ("element 3", lambda: verify_processor(processor, create_element=3), TypeError,
         "verify_processor(create_element=) needs a callable, got 3"),
        ("whitebox 3", lambda: verify_subscriber_whitebox(3), TypeError,
         "verify_subscriber_whitebox(create_subscriber) needs a callable, got 3"),
        ("blackbox 3", lambda: verify_subscriber_blackbox(3), TypeError,
         "verify_subscriber_blackbox(create_subscriber) needs a callable, got 3"),
        ("trigger 3", lambda: verify_subscriber_blackbox(object, trigger_request=3), TypeError,
         "verify_subscriber_blackbox(trigger_request=) needs a callable or None, got 3"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "call", "kind", "message"),
    _verify_calls(),
    ids=lambda v: v if isinstance(v, str) and " " in v and len(v) < 20 else "",
)
def test_a_verify_function_refuses_a_bad_argument_before_running_a_case(
    name: str, call: Any, kind: type[Exception], message: str
) -> None:
    """Not 38 failed cases that each say "'int' object is not callable": one error, at the call."""
    with pytest.raises(kind) as caught:
        call()
    assert type(caught.value) is kind and str(caught.value).startswith(message), caught.value


def test_a_test_environment_refuses_a_timeout_that_is_not_a_number() -> None:
    from rstreams.tck import TestEnvironment

    with pytest.raises(TypeError, match=r"^default_timeout must be a number of seconds, got 'x'$"):
        TestEnvironment(default_timeout="x")  # type: ignore[arg-type]
