"""PublisherVerification: the 38 Publisher cases of the JVM TCK, in Python (rules 1.x and 3.x).

Use it from pytest by subclassing (a class whose name starts with ``Test``)::

    class TestMyPublisher(PublisherVerification):
        def create_publisher(self, elements: int) -> Publisher[int]:
            return my_publisher(elements)        # exactly ``elements`` items, then on_complete

        def create_failed_publisher(self) -> Publisher[int] | None:
            return my_failing_publisher()        # on_subscribe, then on_error; None skips

or without pytest with :func:`verify_publisher`. Each case is a method named like the
JVM TCK's (in snake_case) and runs with the same category meaning (see
:mod:`rstreams.tck._registry`).

How Java maps onto Python here: ``null`` is ``None`` and its NullPointerException is
``TypeError``; IllegalArgumentException (rule 3.9) is ``ValueError``; Long.MAX_VALUE is
``2**63 - 1``, which as an element count means an endless stream.

Differences from the JVM TCK, on purpose (the full list, with the reasons, is
``rstreams.tck._stricter`` and docs/tck.md):

* Publishers may deliver from any thread or event loop; nothing assumes synchronous
  delivery, and the rule-3.3 depth counts only nesting on one thread.
* The TCK's subscribers record elements beyond the demand they signalled (rule 1.1),
  signals after a terminal one (1.7) and elements after their cancel (3.12), in every case.
* Demand from overlapping requests must add up (3.8, in the 3.2 case); a cancel made inside
  ``on_next`` must stop the stream (3.12, in the 3.12 and 3.17 cases); two subscribers
  subscribe in the 1.9 case and ``subscribe`` must not raise for either.
* An optional case that finds a required rule broken is ``violated``, not skipped.
* ``required_spec302`` also requires the six elements to arrive; ``required_spec313``
  forces ``gc.collect()`` and passes as soon as the subscriber is gone.
"""

from __future__ import annotations

import abc
import gc
import random
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

from rstreams.api import Publisher
from rstreams.demand import UNBOUNDED
from rstreams.errors import UnhandledErrorHook, set_unhandled_error_hook
from rstreams.tck import _own_time
from rstreams.tck._env import TestEnvironment, env_millis
from rstreams.tck._failures import RaisedOnPurpose
from rstreams.tck._publisher_probes import (
    CancelInsideOnNext,
    CancelInsideOnSubscribe,
    DemandFlooder,
    FailedPublisherProbe,
    OnSubscribeFirstProbe,
    OverlappingRequester,
    RaiseInsideOnNext,
    RecursionProbe,
    ReentrantRequester,
    SerialSignalProbe,
)
from rstreams.tck._registry import (
    DEFAULT_CASE_TIMEOUT,
    HardFailure,
    Report,
    SkipTest,
    TCKFailure,
    Verification,
    check_options,
    run_cases,
    tck_test,
    untested,
)
from rstreams.tck._test_subscribers import (
    ManualSubscriber,
    TestSubscriber,
    new_manual_subscriber,
)

__all__ = ["PUBLISHER_UNABLE_TO_SIGNAL_ON_COMPLETE", "PublisherVerification", "verify_publisher"]

PUBLISHER_UNABLE_TO_SIGNAL_ON_COMPLETE: Final = UNBOUNDED
"""Return this from ``max_elements_from_publisher`` for an endless publisher: every case
that needs ``on_complete`` is then skipped."""

DEFAULT_GC_TIMEOUT_MS: Final = 300
_MESSAGE_PARTS_3_9: Final = ("3.9", "non-positive subscription request", "negative subscription request")


@contextmanager
def _muted_raise_reports() -> Iterator[None]:
    """While the case makes a Subscriber raise on purpose, rstreams' own report of that raise
    (:func:`rstreams.errors.report_unhandled`, which a correct rstreams publisher calls) is
    dropped; every other error still reaches the hook that was set."""
    previous: list[UnhandledErrorHook] = []

    def hook(error: BaseException, context: str) -> None:
        if not isinstance(error, RaisedOnPurpose):
            previous[0](error, context)

    previous.append(set_unhandled_error_hook(hook))
    try:
        yield
    finally:
        set_unhandled_error_hook(previous[0])


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


class PublisherVerification(Verification, abc.ABC):
    """Verifies a Publisher against rules 1.1-1.11 and 3.1-3.17 (38 cases, as the JVM TCK).

    Override :meth:`create_publisher` (required) and, to run the failure cases,
    :meth:`create_failed_publisher`. The other methods are knobs with defaults.
    """

    # -- what the implementer supplies -------------------------------------------
    @abc.abstractmethod
    def create_publisher(self, elements: int) -> Publisher[Any]:
        """A publisher of exactly ``elements`` elements followed by ``on_complete``.

        ``elements == 2**63 - 1`` asks for an endless stream. Called once per case (more
        for the stochastic one), with counts up to 2**31 - 1: create elements lazily.
        """

    def create_failed_publisher(self) -> Publisher[Any] | None:
        """A publisher that signals ``on_subscribe`` then ``on_error``; ``None`` skips those cases."""
        return None

    def max_elements_from_publisher(self) -> int:
        """The most elements :meth:`create_publisher` can produce; cases needing more skip.

        Return :data:`PUBLISHER_UNABLE_TO_SIGNAL_ON_COMPLETE` if it never completes.
        """
        return UNBOUNDED - 1

    def bounded_depth_of_on_next_and_request_recursion(self) -> int:
        """How deeply ``on_next -> request -> on_next`` may nest on one thread (rule 3.3); >= 1."""
        return 1

    def skip_stochastic_tests(self) -> bool:
        """Return True to skip the stochastic case (rule 1.3, 100 runs)."""
        return False

    def publisher_reference_gc_timeout(self) -> float:
        """Seconds the rule-3.13 case waits for a cancelled subscriber to be collected.

        Default: ``RSTREAMS_TCK_PUBLISHER_REFERENCE_GC_TIMEOUT_MS``, else 300 ms.
        """
        return env_millis("RSTREAMS_TCK_PUBLISHER_REFERENCE_GC_TIMEOUT_MS", DEFAULT_GC_TIMEOUT_MS)

    def max_supported_subscribers(self) -> int:
        """How many subscribers the publisher serves at once; the optional rule-1.11 cases that
        need more skip, saying so. Default: no limit."""
        return UNBOUNDED

    def _needs_subscribers(self, n: int) -> None:
        supported = self.max_supported_subscribers()
        if n > supported:
            raise SkipTest(f"needs {n} subscribers, but max_supported_subscribers() is {supported}")

    # -- runners -----------------------------------------------------------------
    @contextmanager
    def active_publisher(self, elements: int, *, completion_required: bool) -> Iterator[Publisher[Any]]:
        """``create_publisher(elements)`` for the block, then no recorded error may remain.

        Skips when ``elements`` exceeds :meth:`max_elements_from_publisher`, or when the
        case needs ``on_complete`` from a publisher that cannot signal it.
        """
        limit = self.max_elements_from_publisher()
        if elements > limit:
            raise SkipTest(
                f"needs a publisher of {elements} elements, but max_elements_from_publisher() is {limit}"
            )
        if completion_required and limit == PUBLISHER_UNABLE_TO_SIGNAL_ON_COMPLETE:
            raise SkipTest("needs on_complete, but the publisher cannot signal it (max_elements == 2**63-1)")
        yield self.create_publisher(elements)
        self.env.verify_no_async_errors_no_delay()

    def failed_publisher(self) -> Publisher[Any]:
        """:meth:`create_failed_publisher`, or a skip when it returns ``None``."""
        publisher = self.create_failed_publisher()
        if publisher is None:
            raise SkipTest("create_failed_publisher() returned None: no failed publisher to verify")
        return publisher

    def stochastic(self, runs: int, body: Callable[[int], None]) -> None:
        """Run ``body(i)`` ``runs`` times, all of which must pass; skipped on request."""
        if self.skip_stochastic_tests():
            raise SkipTest("skip_stochastic_tests() returned True")
        for run in range(runs):
            body(run)

    def _no_raise(self, what: str, action: Callable[[], object], rule: str = "3.16") -> None:
        """``action()`` (a call into the publisher) must return normally, by ``rule``."""
        try:
            action()
        except TCKFailure:
            raise
        except Exception as exc:
            self.env.flop(f"rule {rule}: {what} raised {_describe(exc)}; it must return normally")

    def _raise_inside_on_next(self) -> None:
        """Rules 2.13 and 1.8: an ``on_next`` that raises, with unbounded demand left, stops the stream.

        The publisher must consider the subscription cancelled: elements may trail, as after a
        cancel (and a terminal signal, which is not checked), but stop. The raise may come back out of
        the ``request()`` that delivered the element (a synchronous publisher that does not
        catch it); one that catches it and delivers on floods, and past the runaway limit the
        TCK stops it (the watchdog ends a flood that swallows that too).
        """
        elements = min(self.max_elements_from_publisher(), 2**31 - 1)
        if elements == 0:
            return
        at = min(3, elements)
        with _muted_raise_reports(), self.active_publisher(elements, completion_required=False) as publisher:
            sub = RaiseInsideOnNext(self.env, at)
            self.env.subscribe(publisher, sub)
            try:
                sub.request(UNBOUNDED)
            except RaisedOnPurpose:
                pass  # the Subscriber's own raise, travelling back through a synchronous request()
            sub.raised.expect_close(
                error_msg=lambda: f"rule 1.1: request(2**63-1) must produce {at} elements; {sub.state()}"
            )
            self._stops_after_cancel(sub, f"on_next #{at} raised", rule="2.13")

    def _stops_after_cancel(self, sub: TestSubscriber[Any], where: str, rule: str = "3.12") -> None:
        """Rule 3.12: after ``sub`` cancelled (inside ``where``), signals may trail but must stop.

        Waits quiet windows until one passes without an element, for at most the default
        timeout; a stream still flowing then fails with the count after the cancel.
        """
        env = self.env
        clock = _own_time.OwnTime()
        seen = sub.arrived
        while True:

            def moved(before: int = seen) -> bool:
                return sub.arrived > before

            env.wait_for(moved, env.default_no_signals_timeout)
            env.verify_no_async_errors_no_delay()
            if sub.arrived == seen:
                return
            seen = sub.arrived
            if clock.left(env.default_timeout) < 0:
                raised = rule == "2.13"
                since, event = (where, "the raise") if raised else (f"cancel() inside {where}", "the cancel")
                env.flop(
                    f"rule {rule}: after {since} the publisher kept signalling: {sub.after_cancel} elements"
                    f" arrived after {event} within {env.default_timeout * 1000:.0f} ms and more were"
                    " still coming"
                )

    def _await_progress(self, sub: SerialSignalProbe, run: str) -> None:
        """Wait for ``sub``'s stream to end, for as long as it makes progress (each step one timeout).

        A stream that stalls is reported by the rule its stall breaks, not as a hang.
        """
        env = self.env
        while not sub.done.is_closed:
            seen = sub.received

            def progressed(before: int = seen) -> bool:
                return sub.done.is_closed or sub.received > before

            if not env.wait_for(progressed, env.default_timeout):
                env.verify_no_async_errors_no_delay()
                if sub.received < sub.requested:
                    env.flop(
                        f"rule 3.2: the stream stalled ({run}): {sub.requested} elements requested, 1 inside"
                        f" on_subscribe and the others inside on_next, but only {sub.received} arrived within"
                        f" {env.default_timeout * 1000:.0f} ms"
                    )
                env.flop(
                    f"rule 1.5: all {sub.received} elements arrived ({run}), but on_complete did not within"
                    f" {env.default_timeout * 1000:.0f} ms"
                )

    # -- set-up checks -----------------------------------------------------------
    @tck_test(
        rule=None, category="required", jvm="required_createPublisher1MustProduceAStreamOfExactly1Element"
    )
    def required_create_publisher1_must_produce_a_stream_of_exactly1_element(self) -> None:
        """create_publisher(1) gives one element, then on_complete (after at most one more request)."""
        with self.active_publisher(1, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.request(1)
            sub.next_element(error_msg="create_publisher(1) must produce an element after request(1)")
            sub.request(1)
            sub.expect_completion(error_msg="create_publisher(1) must complete after its one element")

    @tck_test(
        rule=None, category="required", jvm="required_createPublisher3MustProduceAStreamOfExactly3Elements"
    )
    def required_create_publisher3_must_produce_a_stream_of_exactly3_elements(self) -> None:
        """create_publisher(3) gives three elements one request(1) at a time, then on_complete."""
        with self.active_publisher(3, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            for i in range(3):
                sub.request(1)
                sub.next_element(
                    error_msg=f"create_publisher(3) must produce element #{i + 1} after request(1)"
                )
            sub.request(1)
            sub.expect_completion(error_msg="create_publisher(3) must complete after its three elements")

    @tck_test(rule=None, category="required", jvm="required_validate_maxElementsFromPublisher")
    def required_validate_max_elements_from_publisher(self) -> None:
        """max_elements_from_publisher() must not be negative."""
        limit = self.max_elements_from_publisher()
        if limit < 0:
            self.env.flop(f"max_elements_from_publisher() must be >= 0, got {limit}")

    @tck_test(rule=None, category="required", jvm="required_validate_boundedDepthOfOnNextAndRequestRecursion")
    def required_validate_bounded_depth_of_on_next_and_request_recursion(self) -> None:
        """bounded_depth_of_on_next_and_request_recursion() must be at least 1."""
        depth = self.bounded_depth_of_on_next_and_request_recursion()
        if depth < 1:
            self.env.flop(f"bounded_depth_of_on_next_and_request_recursion() must be >= 1, got {depth}")

    # -- rule 1 ------------------------------------------------------------------
    @tck_test(
        rule="1.01",
        category="required",
        jvm="required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements",
    )
    def required_spec101_subscription_request_must_result_in_the_correct_number_of_produced_elements(
        self,
    ) -> None:
        """Rule 1.1: nothing before a request, exactly what was requested, demand adds up."""
        with self.active_publisher(5, completion_required=False) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.expect_none(error_msg="rule 1.1: nothing may be signalled before the first request")
            sub.request(1)
            sub.next_element(error_msg="rule 1.1: request(1) must produce an element")
            sub.expect_none(error_msg="rule 1.1: request(1) must produce exactly one element")
            sub.request(1)
            sub.request(2)
            sub.next_elements(3, error_msg="rule 3.8: request(1) then request(2) must produce 3 elements")
            sub.expect_none(error_msg="rule 1.1: no more elements than requested")
            sub.cancel()

    @tck_test(
        rule="1.02",
        category="required",
        jvm="required_spec102_maySignalLessThanRequestedAndTerminateSubscription",
    )
    def required_spec102_may_signal_less_than_requested_and_terminate_subscription(self) -> None:
        """Rule 1.2: request(10) of a 3-element stream gives 3 elements and then on_complete."""
        with self.active_publisher(3, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.request(10)
            sub.next_elements(
                3, error_msg="rule 1.2: request(10) of a 3-element stream must produce 3 elements"
            )
            sub.expect_completion(
                error_msg="rule 1.2: the publisher must complete after its last element, despite demand left"
            )

    @tck_test(rule="1.03", category="stochastic", jvm="stochastic_spec103_mustSignalOnMethodsSequentially")
    def stochastic_spec103_must_signal_on_methods_sequentially(self) -> None:
        """Rule 1.3: signals never overlap across threads (100 runs of a 10-element stream)."""

        def run(i: int) -> None:
            with self.active_publisher(10, completion_required=True) as publisher:
                sub = SerialSignalProbe(self.env)
                self.env.call_subscribe(publisher, sub)
                self._await_progress(sub, f"run {i + 1} of 100")

        self.stochastic(100, run)

    @tck_test(rule="1.04", category="optional", jvm="optional_spec104_mustSignalOnErrorWhenFails")
    def optional_spec104_must_signal_on_error_when_fails(self) -> None:
        """Rule 1.4: the failed publisher signals on_subscribe, then on_error.

        As in the JVM TCK this optional case FAILS (not skips) once a failed publisher is
        supplied: optional is only the need for create_failed_publisher().
        """
        publisher = self.failed_publisher()
        try:
            sub = FailedPublisherProbe(self.env)
            self.env.track(sub)
            publisher.subscribe(sub)
            sub.subscribed.expect_close(error_msg="rule 1.9: the failed publisher did not call on_subscribe")
            sub.errored.expect_close(error_msg="rule 1.4: the failed publisher did not signal on_error")
            self.env.verify_no_async_errors()
        except SkipTest:
            raise
        except Exception as exc:
            raise HardFailure(f"rule 1.4: the failed publisher did not fail by the rules: {exc}") from exc

    @tck_test(
        rule="1.05",
        category="required",
        jvm="required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates",
    )
    def required_spec105_must_signal_on_complete_when_finite_stream_terminates(self) -> None:
        """Rule 1.5: a finite stream ends with on_complete, and nothing follows it."""
        with self.active_publisher(3, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            for _ in range(3):
                sub.request_next_element()
            sub.request(1)
            sub.expect_completion(error_msg="rule 1.5: a finite stream must end with on_complete")
            sub.expect_none(error_msg="rule 1.7: nothing may follow on_complete")

    @tck_test(
        rule="1.05",
        category="optional",
        jvm="optional_spec105_emptyStreamMustTerminateBySignallingOnComplete",
    )
    def optional_spec105_empty_stream_must_terminate_by_signalling_on_complete(self) -> None:
        """Rule 1.5: an empty stream signals on_subscribe, then on_complete."""
        with self.active_publisher(0, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.request(1)
            sub.expect_completion(error_msg="rule 1.5: an empty stream must signal on_complete")
            sub.expect_none(error_msg="rule 1.7: nothing may follow on_complete")

    untested_spec106_must_consider_subscription_cancelled_after_on_error_or_on_complete_has_been_called = (
        untested(
            "untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled",
            "Rule 1.6: not verified by this TCK.",
        )
    )

    @tck_test(
        rule="1.07",
        category="required",
        jvm="required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled",
    )
    def required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled(self) -> None:
        """Rule 1.7: after on_complete, a further request(10) is a no-op: no signal, no error.

        Beyond the JVM TCK: a cancel() then returns normally too (3.15; the subscription
        counts as cancelled, 1.6, so it is a no-op, 3.7).
        """
        with self.active_publisher(1, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.request(10)
            sub.next_element()
            sub.expect_completion(error_msg="rule 1.2: a 1-element stream must complete after its element")
            self._no_raise("request(10) after on_complete", lambda: sub.request(10))
            sub.expect_none(error_msg="rule 1.7: after on_complete, request(10) must produce no signal")
            sub.cancel()  # flops citing 3.15 if it raises

    untested_spec107_must_not_emit_further_signals_once_on_error_has_been_signalled = untested(
        "untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled",
        "Rule 1.7 (after on_error): not verified by this TCK.",
    )

    untested_spec108_possibly_canceled_subscription_should_not_receive_on_error_or_on_complete_signals = (
        untested(
            "untested_spec108_possiblyCanceledSubscriptionShouldNotReceiveOnErrorOrOnCompleteSignals",
            "Rule 1.8: not verified by this TCK.",
        )
    )

    untested_spec109_subscribe_should_not_throw_non_fatal_throwable = untested(
        "untested_spec109_subscribeShouldNotThrowNonFatalThrowable",
        "Rule 1.9 (subscribe must not raise): not verified by this TCK.",
    )

    @tck_test(rule="1.09", category="required", jvm="required_spec109_subscribeThrowNPEOnNullSubscriber")
    def required_spec109_subscribe_throw_npe_on_null_subscriber(self) -> None:
        """Rule 1.9: subscribe(None) raises TypeError synchronously (Java's NullPointerException)."""
        with self.active_publisher(0, completion_required=False) as publisher:
            try:
                publisher.subscribe(None)  # type: ignore[arg-type]
            except TypeError:
                pass
            except Exception as exc:
                self.env.flop(f"rule 1.9: subscribe(None) must raise TypeError, but raised {_describe(exc)}")
            else:
                self.env.flop("rule 1.9: subscribe(None) returned normally; it must raise TypeError")

    @tck_test(
        rule="1.09", category="required", jvm="required_spec109_mustIssueOnSubscribeForNonNullSubscriber"
    )
    def required_spec109_must_issue_on_subscribe_for_non_null_subscriber(self) -> None:
        """Rule 1.9: on_subscribe exactly once, before any other signal (an empty stream may
        complete right after it).

        Beyond the JVM TCK: two subscribers subscribe, and ``subscribe`` must return normally
        for both (a publisher that serves one subscriber only rejects the second with
        ``on_subscribe`` then ``on_error``), and no signal may follow a terminal one (rule
        1.7), on this empty stream too.
        """
        with self.active_publisher(0, completion_required=False) as publisher:
            subs = [OnSubscribeFirstProbe(self.env) for _ in range(2)]
            for i, sub in enumerate(subs):
                self.env.call_subscribe(publisher, sub)
                sub.subscription.expect_completion(
                    error_msg=f"rule 1.9: the publisher did not call on_subscribe after subscribe() #{i + 1}"
                )
            self.env.verify_no_async_errors()

    @tck_test(
        rule="1.09",
        category="required",
        jvm="required_spec109_mayRejectCallsToSubscribeIfPublisherIsUnableOrUnwillingToServeThem"
        "RejectionMustTriggerOnErrorAfterOnSubscribe",
    )
    def required_spec109_may_reject_calls_to_subscribe_if_publisher_is_unable_or_unwilling_to_serve_them_rejection_must_trigger_on_error_after_on_subscribe(  # noqa: E501
        self,
    ) -> None:
        """Rule 1.9: a rejecting (failed) publisher calls on_subscribe, then on_error; it does not raise.

        Beyond the JVM TCK: a request(10) and a cancel() after on_error then return normally
        and signal nothing (rules 1.6, 3.6, 3.7, 3.15, 3.16, 1.7). Skipped when
        create_failed_publisher() returns None.
        """
        publisher = self.failed_publisher()
        sub = FailedPublisherProbe(self.env)
        self.env.track(sub)
        self._no_raise(
            "subscribe() on the failed publisher (reject with on_subscribe, then on_error)",
            lambda: publisher.subscribe(sub),
            rule="1.9",
        )
        sub.subscribed.expect_close(error_msg="rule 1.9: the failed publisher did not call on_subscribe")
        sub.errored.expect_close(
            error_msg="rule 1.9: the failed publisher did not signal on_error after on_subscribe"
        )
        # beyond the JVM TCK: after on_error the subscription counts as cancelled (1.6), so a
        # request is a no-op (3.6) that returns normally (3.16) and signals nothing (1.7)
        subscription = sub.subscription.value
        self._no_raise("request(10) after on_error", lambda: subscription.request(10))
        self._no_raise("cancel() after on_error", subscription.cancel, rule="3.15")
        self.env.verify_no_async_errors()

    untested_spec110_reject_a_subscription_request_if_the_same_subscriber_subscribes_twice = untested(
        "untested_spec110_rejectASubscriptionRequestIfTheSameSubscriberSubscribesTwice",
        "Rule 1.10: not verified by this TCK.",
    )

    @tck_test(rule="1.11", category="optional", jvm="optional_spec111_maySupportMultiSubscribe")
    def optional_spec111_may_support_multi_subscribe(self) -> None:
        """Rule 1.11: two subscribers of one publisher both get on_subscribe, and no error."""
        self._needs_subscribers(2)
        with self.active_publisher(1, completion_required=False) as publisher:
            new_manual_subscriber(self.env, publisher)
            new_manual_subscriber(self.env, publisher)
            self.env.verify_no_async_errors()

    @tck_test(
        rule="1.11",
        category="optional",
        jvm="optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals",
    )
    def optional_spec111_registered_subscribers_must_receive_on_next_or_on_complete_signals(self) -> None:
        """Rule 1.11: each of two subscribers gets an element or on_complete after request(1)."""
        self._needs_subscribers(2)
        with self.active_publisher(1, completion_required=False) as publisher:
            subs = [new_manual_subscriber(self.env, publisher) for _ in range(2)]
            for sub in subs:
                sub.request(1)
            for i, sub in enumerate(subs):
                sub.next_element_or_end_of_stream(error_msg=f"rule 1.11: subscriber #{i + 1} got no signal")
            self.env.verify_no_async_errors()

    @tck_test(
        rule="1.11",
        category="optional",
        jvm="optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingOneByOne",
    )
    def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_one_by_one(  # noqa: E501
        self,
    ) -> None:
        """Rule 1.11: three subscribers requesting in an interleaved order see the same 5 elements."""
        self._needs_subscribers(3)
        with self.active_publisher(5, completion_required=True) as publisher:
            subs = [new_manual_subscriber(self.env, publisher) for _ in range(3)]
            seen: list[list[Any]] = [[], [], []]
            for who, n in ((0, 1), (1, 2), (0, 1), (2, 3), (2, 1), (2, 1), (1, 3), (0, 2), (0, 1)):
                seen[who].extend(subs[who].request_next_elements(n))
            for sub in subs:
                sub.request_end_of_stream()
            self._same_sequences(seen)

    @tck_test(
        rule="1.11",
        category="optional",
        jvm="optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingManyUpfront",
    )
    def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_many_upfront(  # noqa: E501
        self,
    ) -> None:
        """Rule 1.11: three subscribers requesting 4 each see the same 3 elements."""
        with self.active_publisher(3, completion_required=False) as publisher:
            self._same_sequences(self._three_upfront(publisher, completion=False))

    @tck_test(
        rule="1.11",
        category="optional",
        jvm="optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribers"
        "WhenRequestingManyUpfrontAndCompleteAsExpected",
    )
    def optional_spec111_multicast_must_produce_the_same_elements_in_the_same_sequence_to_all_of_its_subscribers_when_requesting_many_upfront_and_complete_as_expected(  # noqa: E501
        self,
    ) -> None:
        """Rule 1.11: as the upfront case, and each subscriber then gets on_complete."""
        with self.active_publisher(3, completion_required=True) as publisher:
            self._same_sequences(self._three_upfront(publisher, completion=True))

    def _three_upfront(self, publisher: Publisher[Any], *, completion: bool) -> list[list[Any]]:
        self._needs_subscribers(3)
        subs = [new_manual_subscriber(self.env, publisher) for _ in range(3)]
        for sub in subs:
            sub.request(4)
        seen = [sub.next_elements(3) for sub in subs]
        if completion:
            for sub in subs:
                sub.expect_completion()
        return seen

    def _same_sequences(self, seen: list[list[Any]]) -> None:
        if any(s != seen[0] for s in seen):
            self.env.flop(f"rule 1.11: the subscribers saw different sequences: {seen}")

    # -- rule 3 ------------------------------------------------------------------
    @tck_test(
        rule="3.02",
        category="required",
        jvm="required_spec302_mustAllowSynchronousRequestCallsFromOnNextAndOnSubscribe",
    )
    def required_spec302_must_allow_synchronous_request_calls_from_on_next_and_on_subscribe(self) -> None:
        """Rule 3.2: request() called synchronously in on_subscribe and on_next works.

        Beyond the JVM TCK, rule 3.8 with overlapping demand: a second subscriber requests
        1 then 2 inside ``on_subscribe`` and again inside its first ``on_next``; all 6 must
        arrive, so a publisher that replaces outstanding demand instead of adding fails.
        """
        with self.active_publisher(6, completion_required=False) as publisher:
            sub = ReentrantRequester(self.env, 6)
            self.env.subscribe(publisher, sub)
            sub.next_elements(
                6, error_msg="rule 3.2: requests made inside on_subscribe/on_next must be served"
            )
        with self.active_publisher(OverlappingRequester.TOTAL, completion_required=False) as publisher:
            adder = OverlappingRequester(self.env)
            self.env.subscribe(publisher, adder)
            adder.next_elements(
                OverlappingRequester.TOTAL,
                error_msg=f"rule 3.8: requests must add up, also while demand is outstanding:"
                f" {OverlappingRequester.TOTAL} requested ({OverlappingRequester.PLAN})",
            )
            self.env.verify_no_async_errors()

    @tck_test(rule="3.03", category="required", jvm="required_spec303_mustNotAllowUnboundedRecursion")
    def required_spec303_must_not_allow_unbounded_recursion(self) -> None:
        """Rule 3.3: on_next -> request -> on_next nests at most the configured depth on one thread."""
        bound = self.bounded_depth_of_on_next_and_request_recursion()
        with self.active_publisher(bound + 1, completion_required=False) as publisher:
            sub = RecursionProbe(self.env, bound, bound + 1)
            self.env.track(sub)
            publisher.subscribe(sub)
            sub.finished.expect_close(
                error_msg=lambda: (
                    f"rule 3.3: expected {bound + 1} elements, each requested inside on_next, or a"
                    f" terminal signal; {sub.received} arrived"
                )
            )

    untested_spec304_request_should_not_perform_heavy_computations = untested(
        "untested_spec304_requestShouldNotPerformHeavyComputations", "Rule 3.4: not verified by this TCK."
    )

    untested_spec305_cancel_must_not_synchronously_perform_heavy_computation = untested(
        "untested_spec305_cancelMustNotSynchronouslyPerformHeavyComputation",
        "Rule 3.5: not verified by this TCK.",
    )

    @tck_test(
        rule="3.06", category="required", jvm="required_spec306_afterSubscriptionIsCancelledRequestMustBeNops"
    )
    def required_spec306_after_subscription_is_cancelled_request_must_be_nops(self) -> None:
        """Rule 3.6: request() after cancel() is a no-op: no element, no completion, no error."""
        with self.active_publisher(3, completion_required=False) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.cancel()
            for _ in range(3):
                self._no_raise("request(1) after cancel()", lambda: sub.request(1))
            sub.expect_none(error_msg="rule 3.6: request() after cancel() must be a no-op")

    @tck_test(
        rule="3.07",
        category="required",
        jvm="required_spec307_afterSubscriptionIsCancelledAdditionalCancelationsMustBeNops",
    )
    def required_spec307_after_subscription_is_cancelled_additional_cancelations_must_be_nops(self) -> None:
        """Rule 3.7: cancel() three times: no exception, no signal."""
        with self.active_publisher(1, completion_required=False) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            for i in range(3):
                self._no_raise(f"cancel() call #{i + 1}", sub.cancel)
            sub.expect_none(error_msg="rule 3.7: cancel() after cancel() must be a no-op")

    def _expect_illegal_request(self, n: int, message_part: tuple[str, ...] | None = None) -> None:
        with self.active_publisher(10, completion_required=False) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            self._no_raise(f"request({n})", lambda: sub.request(n))
            sub.expect_error(
                ValueError,
                message_part=message_part,
                error_msg=f"rule 3.9: request({n}) must signal on_error(ValueError)",
            )

    @tck_test(
        rule="3.09", category="required", jvm="required_spec309_requestZeroMustSignalIllegalArgumentException"
    )
    def required_spec309_request_zero_must_signal_illegal_argument_exception(self) -> None:
        """Rule 3.9: request(0) signals on_error(ValueError) (Java's IllegalArgumentException)."""
        self._expect_illegal_request(0)

    @tck_test(
        rule="3.09",
        category="required",
        jvm="required_spec309_requestNegativeNumberMustSignalIllegalArgumentException",
    )
    def required_spec309_request_negative_number_must_signal_illegal_argument_exception(self) -> None:
        """Rule 3.9: request(n < 0) signals on_error(ValueError)."""
        self._expect_illegal_request(-random.randint(1, 2**31 - 1))

    @tck_test(
        rule="3.09",
        category="optional",
        jvm="optional_spec309_requestNegativeNumberMaySignalIllegalArgumentExceptionWithSpecificMessage",
    )
    def optional_spec309_request_negative_number_may_signal_illegal_argument_exception_with_specific_message(
        self,
    ) -> None:
        """Rule 3.9: the ValueError's message says "3.9" or "non-positive/negative subscription request"."""
        self._expect_illegal_request(-random.randint(1, 2**31 - 1), _MESSAGE_PARTS_3_9)

    @tck_test(
        rule="3.12",
        category="required",
        jvm="required_spec312_cancelMustMakeThePublisherToEventuallyStopSignaling",
    )
    def required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling(self) -> None:
        """Rule 3.12: after cancel() signals stop; in total never more than the 15 requested.

        Beyond the JVM TCK: a cancel made *inside* ``on_next`` or ``on_subscribe`` with
        unbounded demand left must stop the stream too (rules 3.12 and 1.8), and so must an
        ``on_next`` that raises, which the publisher must take as a cancel (rule 2.13).
        """
        with self.active_publisher(20, completion_required=False) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.request(10)
            sub.request(5)
            sub.next_element(error_msg="rule 1.1: request(10) and request(5) must produce elements")
            sub.cancel()
            seen = sub.received
            for _ in range(16):  # each quiet-window wait ends early when an element arrives
                now = sub.wait_received(seen, self.env.default_no_signals_timeout)
                if now > 15:
                    self.env.flop(
                        f"rule 3.12: after cancel() the publisher kept signalling: {now} elements,"
                        " 15 requested"
                    )
                if now == seen:
                    break
                seen = now
        self._cancel_inside_on_next()
        self._cancel_inside_on_subscribe()
        self._raise_inside_on_next()

    def _cancel_inside_on_next(self) -> None:
        """Rules 3.12 and 1.8: a cancel made inside ``on_next``, with unbounded demand left, stops the stream.

        Runs on the longest stream allowed, up to 2**31 - 1 elements, so a publisher that
        loses such a cancel floods; past the runaway limit the TCK stops it.
        """
        elements = min(self.max_elements_from_publisher(), 2**31 - 1)
        if elements == 0:
            return
        at = min(3, elements)
        with self.active_publisher(elements, completion_required=False) as publisher:
            sub = CancelInsideOnNext(self.env, at)
            self.env.subscribe(publisher, sub)
            sub.request(UNBOUNDED)
            sub.cancelled.expect_close(
                error_msg=lambda: f"rule 1.1: request(2**63-1) must produce {at} elements; {sub.state()}"
            )
            self._stops_after_cancel(sub, f"on_next #{at}")

    def _cancel_inside_on_subscribe(self) -> None:
        """Rules 3.12 and 1.8: ``request(2**63 - 1)`` then ``cancel()``, both inside ``on_subscribe``.

        A publisher that sets its subscription up only after ``on_subscribe`` returned, and so
        forgets a cancel made inside it, floods; past the runaway limit the TCK stops it.
        """
        elements = min(self.max_elements_from_publisher(), 2**31 - 1)
        if elements == 0:
            return
        with self.active_publisher(elements, completion_required=False) as publisher:
            sub = CancelInsideOnSubscribe(self.env)
            self.env.subscribe(publisher, sub)
            sub.cancelled.expect_close(
                error_msg=lambda: f"rule 1.9: the subscriber did not get on_subscribe; {sub.state()}"
            )
            self._stops_after_cancel(sub, "on_subscribe")

    @tck_test(
        rule="3.13",
        category="required",
        jvm="required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber",
    )
    def required_spec313_cancel_must_make_the_publisher_eventually_drop_all_references_to_the_subscriber(
        self,
    ) -> None:
        """Rule 3.13: once cancelled, the subscriber can be garbage collected while the publisher lives."""
        with self.active_publisher(3, completion_required=False) as publisher:
            ref, gone = self._take_one_and_cancel(publisher)
            timeout = self.publisher_reference_gc_timeout() + 0.1
            waited = 0.0
            gc.collect()
            while not gone.is_set() and waited < timeout:
                gone.wait(0.02)
                waited += 0.02
                gc.collect()
            if not gone.is_set():
                holders = self._referrer_names(ref)
                self.env.flop(
                    f"rule 3.13: {waited * 1000:.0f} ms after cancel() the publisher still references the"
                    f" subscriber (held by: {holders})"
                )

    def _take_one_and_cancel(self, publisher: Publisher[Any]) -> tuple[weakref.ref[Any], threading.Event]:
        """Everything that touches the subscriber strongly lives in this frame only."""
        sub: ManualSubscriber[Any] = ManualSubscriber(self.env)
        gone = threading.Event()
        weakref.finalize(sub, gone.set)
        self.env.subscribe(publisher, sub)
        sub.request(1)
        sub.next_element(error_msg="rule 1.1: request(1) must produce an element")
        sub.cancel()
        return weakref.ref(sub), gone

    @staticmethod
    def _referrer_names(ref: weakref.ref[Any]) -> str:
        target = ref()
        if target is None:
            return "nothing any more"
        names = sorted({type(r).__name__ for r in gc.get_referrers(target)} - {"frame"})
        del target
        return ", ".join(names) or "unknown"

    @tck_test(
        rule="3.17",
        category="required",
        jvm="required_spec317_mustSupportAPendingElementCountUpToLongMaxValue",
    )
    def required_spec317_must_support_a_pending_element_count_up_to_long_max_value(self) -> None:
        """Rule 3.17: one request(2**63 - 1) gives all elements, then on_complete."""
        with self.active_publisher(3, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.request(UNBOUNDED)
            sub.next_elements(3, error_msg="rule 3.17: request(2**63-1) must be served")
            sub.expect_completion(error_msg="rule 3.17: after request(2**63-1) the stream must complete")

    @tck_test(
        rule="3.17",
        category="required",
        jvm="required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue",
    )
    def required_spec317_must_support_a_cumulative_pending_element_count_up_to_long_max_value(self) -> None:
        """Rule 3.17: demand adding up to exactly 2**63 - 1 (MAX//2 + MAX//2 + 1) is legal."""
        with self.active_publisher(3, completion_required=True) as publisher:
            sub = new_manual_subscriber(self.env, publisher)
            sub.request(UNBOUNDED // 2)
            sub.request(UNBOUNDED // 2)
            sub.request(1)
            sub.next_elements(3, error_msg="rule 3.17: cumulative demand of exactly 2**63-1 must be served")
            sub.expect_completion(error_msg="rule 3.17: after demand of 2**63-1 the stream must complete")

    @tck_test(
        rule="3.17",
        category="required",
        jvm="required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue",
    )
    def required_spec317_must_not_signal_on_error_when_pending_above_long_max_value(self) -> None:
        """Rule 3.17: demand beyond 2**63 - 1 saturates ("effectively unbounded"); never on_error."""
        with self.active_publisher(2**31 - 1, completion_required=False) as publisher:
            sub = DemandFlooder(self.env)
            self.env.subscribe(publisher, sub)
            sub.cancelled.expect_close(
                error_msg=lambda: (
                    f"rule 3.17: expected 11 elements while demand was raised past 2**63-1; {sub.state()}"
                )
            )
            self._stops_after_cancel(sub, "on_next #11")


def verify_publisher(
    create_publisher: Callable[[int], Publisher[Any]],
    *,
    create_failed_publisher: Callable[[], Publisher[Any] | None] | None = None,
    env: TestEnvironment | None = None,
    case_timeout: float | None = DEFAULT_CASE_TIMEOUT,
    skip_stochastic: bool = False,
    max_elements: int = UNBOUNDED - 1,
) -> Report:
    """Run every PublisherVerification case against ``create_publisher``; no pytest needed.

    ``create_publisher(n)`` makes a publisher of exactly ``n`` elements;
    ``create_failed_publisher()`` one that fails (without it those cases skip). The other
    options are those of every ``verify_*`` function: ``env`` gives the timeouts (each
    case runs in a fresh copy of it), ``case_timeout`` the seconds one case may run
    (``None``: no watchdog), ``skip_stochastic`` skips the rule-1.3 case and
    ``max_elements`` is ``max_elements_from_publisher()``. Returns a :class:`Report`;
    ``report.ok`` tells whether any case failed.
    """
    check_options(
        "verify_publisher",
        case_timeout=case_timeout,
        max_elements=max_elements,
        env=env,
        skip_stochastic=skip_stochastic,
        factories={"create_publisher": create_publisher},
        optional={"create_failed_publisher": create_failed_publisher},
    )

    class _Verification(PublisherVerification):
        def create_publisher(self, elements: int) -> Publisher[Any]:
            return create_publisher(elements)

        def create_failed_publisher(self) -> Publisher[Any] | None:
            return None if create_failed_publisher is None else create_failed_publisher()

        def max_elements_from_publisher(self) -> int:
            return max_elements

        def skip_stochastic_tests(self) -> bool:
            return skip_stochastic

        def create_env(self) -> TestEnvironment:
            return TestEnvironment() if env is None else env

    _Verification.case_timeout = case_timeout
    return run_cases(_Verification())
