"""Subscriber verifications: whitebox (27 cases) and blackbox (26 cases), as in the JVM TCK.

*Whitebox*: the Subscriber under test reports what it receives to a probe and hands the
TCK a :class:`~rstreams.tck._subscriber_support.SubscriberPuppet`, through which the
test makes it request and cancel. *Blackbox*: the TCK only sees the Subscriber from the
outside, through a recording proxy and the requests it makes.

Each case is one method named after the JVM test in snake_case and marked with its rule
and category. Every case that needs it builds a *stage* first: a
:class:`~rstreams.tck._subscriber_support.ManualPublisher` the Subscriber is subscribed
to, plus a source of fresh element values (the helper publisher). The rule-2.3 cases and
the blackbox 2.13 cases use a fresh Subscriber without a stage.

Where this port departs from the JVM TCK on purpose (its known defects), the case's
docstring says so; the list is collected in ``docs/tck.md``.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from typing import Any

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.tck._env import TestEnvironment, _describe
from rstreams.tck._registry import (
    DEFAULT_CASE_TIMEOUT,
    Report,
    TCKFailure,
    Verification,
    check_options,
    run_cases,
    tck_test,
    untested,
)
from rstreams.tck._subscriber_support import (
    BlackboxProbe,
    BlackboxSubscriberProxy,
    ElementSource,
    HelperPublisher,
    InjectedError,
    ManualPublisher,
    TerminalGuardSubscription,
    WhiteboxSubscriberProbe,
)

__all__ = [
    "SubscriberBlackboxVerification",
    "SubscriberWhiteboxVerification",
    "verify_subscriber_blackbox",
    "verify_subscriber_whitebox",
]

_NOT_VERIFIED = "Not verified using this TCK."
_AFTER_SIGNAL_CANCEL = (
    " of the puppet's signal_cancel() (a processor must cancel its upstream when its only subscriber cancels)"
)


def _identity(i: int) -> Any:
    return i


def _expect_type_error(call: Callable[[], object], what: str) -> None:
    """Rule 2.13: ``call()`` (a signal with ``None``) must raise ``TypeError`` synchronously."""
    try:
        call()
    except TypeError:
        return
    except Exception as exc:
        raise TCKFailure(f"rule 2.13: {what} must raise TypeError, but raised {exc!r}") from exc
    raise TCKFailure(f"rule 2.13: {what} must raise TypeError, but returned normally")


class _NoopSubscription(Subscription):
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


class _SecondSubscription(Subscription):
    """The duplicate subscription of the rule-2.5 cases: it must be cancelled, never used."""

    def __init__(self, env: TestEnvironment, forbid_requests: bool) -> None:
        self.owner = ManualPublisher[object](env)  # only its cancel latch is used
        self._env = env
        self._forbid_requests = forbid_requests

    def request(self, n: int) -> None:
        if self._forbid_requests:
            self._env.record_failure(
                f"rule 2.5: the Subscriber called request({n!r}) on a second, duplicate subscription; "
                "it must only cancel it"
            )

    def cancel(self) -> None:
        self.owner._record_cancel()

    def expect_cancelled(self) -> None:
        try:
            self.owner.expect_cancelling()
        except TCKFailure as failure:
            raise TCKFailure(
                "rule 2.5: the Subscriber did not cancel a second subscription it received while "
                f"already holding one ({failure})"
            ) from None


class _HelperPublisherMixin:
    """The knobs SWV, SBV and IPV share: element values and the helper publisher."""

    def create_element(self, element: int) -> Any:
        """The element with index ``element``; must never be ``None``, may run on any thread.

        Defaults to ``element`` itself. Distinct indices must give distinct values (IPV
        flags duplicates).
        """
        return element

    def create_helper_publisher(self, elements: int) -> Publisher[Any]:
        """A publisher of ``create_element(0) ... create_element(elements - 1)``.

        ``elements >= 2**63 - 1`` means endless. The default is asynchronous (a
        :class:`~rstreams.tck._subscriber_support.HelperPublisher` on a shared 4-thread
        pool), like the JVM TCK's ``AsyncIterablePublisher``.
        """
        count = None if elements >= demand.UNBOUNDED else elements
        helper = HelperPublisher(self.create_element, count)
        env = getattr(self, "env", None)  # the case's environment, when mixed into a Verification
        if isinstance(env, TestEnvironment):
            env.on_close(helper.stop)  # containment: it stops delivering when its case ends
        return helper


class _Stage(ManualPublisher[Any]):
    """A ManualPublisher the Subscriber under test is subscribed to, plus fresh element values."""

    def __init__(self, env: TestEnvironment, helper: Publisher[Any]) -> None:
        super().__init__(env)
        self.tees = ElementSource(env, helper)
        self.last_t: Any = None

        self.answered_at_once = False
        """Whether the first element went out inside the Subscriber's first request."""

    def signal_next(self) -> Any:
        """Send the next fresh element downstream; it is remembered as ``last_t``."""
        self.last_t = self.tees.next_element()
        self.send_next(self.last_t)
        return self.last_t

    def answer_at_once(self) -> None:
        """Send a fresh element from inside the Subscriber's first request (rule 3.10 allows it);
        a Subscriber that is not ready for that (it counts its demand or stores its
        subscription only after request() returns) raises, which breaks rule 2.13. Call it
        before subscribing."""
        item = self.tees.next_element()

        def answer(n: int) -> None:
            self.answered_at_once, self.last_t = True, item
            try:
                self._target().on_next(item)
            except Exception as exc:
                self.env.record_failure(
                    f"rule 2.13: {self.subject}'s on_next({item!r}) raised {_describe(exc)}; it was sent"
                    f" from inside its request({n}), on its stack, which rule 3.10 allows: a Subscriber"
                    " must be ready for that"
                )

        self.answer_first_request(answer)


class _WhiteboxStage(_Stage):
    def __init__(self, verification: SubscriberWhiteboxVerification, at_once: bool = False) -> None:
        env = verification.env
        super().__init__(env, verification.create_helper_publisher(demand.UNBOUNDED))
        self.subject = verification.subject
        self.probe: WhiteboxSubscriberProbe[Any] = WhiteboxSubscriberProbe(env)
        self.probe.subject = verification.subject
        self.sub = verification.create_subscriber(self.probe)
        if at_once:
            self.answer_at_once()
        self.subscribe(self.sub)
        self.puppet = self.probe.puppet()
        env.verify_no_async_errors_no_delay()


class _BlackboxStage(_Stage):
    def __init__(self, verification: SubscriberBlackboxVerification, at_once: bool = False) -> None:
        env = verification.env
        super().__init__(env, verification.create_helper_publisher(demand.UNBOUNDED))
        self.probe: BlackboxProbe[Any] = BlackboxProbe(env)
        self.sub = verification.create_subscriber()
        if at_once:
            self.answer_at_once()
        self.subscribe(BlackboxSubscriberProxy(self.probe, self.sub))


class SubscriberWhiteboxVerification(_HelperPublisherMixin, Verification, abc.ABC):
    """The JVM ``SubscriberWhiteboxVerification``: 27 cases, 14 of them executable.

    Subclass it and implement :meth:`create_subscriber`: the Subscriber must call
    ``probe.register_on_subscribe(puppet)`` from ``on_subscribe`` and
    ``probe.register_on_next/on_complete/on_error`` from the other signals. The puppet's
    ``trigger_request(n)`` makes it request (at least) ``n`` more, ``signal_cancel()``
    makes it cancel. Optionally override :meth:`create_element` and
    :meth:`create_helper_publisher`.
    """

    not_verified_message = _NOT_VERIFIED
    subject = "the Subscriber"
    """How failure messages name what is verified."""

    @abc.abstractmethod
    def create_subscriber(self, probe: WhiteboxSubscriberProbe[Any]) -> Subscriber[Any]:
        """A new Subscriber under test, wired to ``probe``."""

    # -- runners ----------------------------------------------------------------------
    def _stage_test(self, body: Callable[[_WhiteboxStage], None], at_once: bool = False) -> None:
        stage = _WhiteboxStage(self, at_once)
        try:
            body(stage)
        finally:
            stage.tees.cancel()
        stage.serial.check()  # rule 2.7, in every staged case

    def _terminal_guard_test(
        self, deliver: Callable[[TerminalGuardSubscription, Subscriber[Any]], None]
    ) -> None:
        subscriber = self.create_subscriber(WhiteboxSubscriberProbe(self.env))
        guard = TerminalGuardSubscription(self.env)
        subscriber.on_subscribe(guard)
        deliver(guard, subscriber)
        guard.serial.check()
        self.env.verify_no_async_errors_no_delay()

    # -- cases --------------------------------------------------------------------------
    @tck_test(rule=None, category="required", jvm="required_exerciseWhiteboxHappyPath")
    def required_exercise_whitebox_happy_path(self) -> None:
        """The probe/puppet wiring works: two elements requested and received, then a cancel."""

        def body(stage: _WhiteboxStage) -> None:
            stage.puppet.trigger_request(1)
            stage.puppet.trigger_request(1)
            n = stage.expect_request()
            stage.signal_next()
            stage.probe.expect_next(stage.last_t)
            stage.puppet.trigger_request(1)
            if n == 1:
                stage.expect_request()
            stage.signal_next()
            stage.probe.expect_next(stage.last_t)
            stage.puppet.signal_cancel()
            stage.expect_cancelling(rule="2.6", what=_AFTER_SIGNAL_CANCEL)
            self.env.verify_no_async_errors()

        self._stage_test(body)

    @tck_test(rule="2.01", category="required", jvm="required_spec201_mustSignalDemandViaSubscriptionRequest")
    def required_spec201_must_signal_demand_via_subscription_request(self) -> None:
        """Rule 2.1: demand triggered through the puppet reaches ``Subscription.request``.

        Beyond the JVM TCK, the element answering it goes out from inside that ``request``, on
        the Subscriber's stack (rule 3.10 allows it): a Subscriber whose ``on_next`` then raises
        breaks rule 2.13.
        """

        def body(stage: _WhiteboxStage) -> None:
            stage.puppet.trigger_request(1)
            stage.expect_request()
            if not stage.answered_at_once:
                stage.signal_next()
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body, at_once=True)

    untested_spec202_should_asynchronously_dispatch = untested(
        "untested_spec202_shouldAsynchronouslyDispatch", "Rule 2.2: not verifiable from outside."
    )

    @tck_test(
        rule="2.03",
        category="required",
        jvm="required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete",
    )
    def required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_complete(self) -> None:
        """Rule 2.3: no ``request``/``cancel`` from inside ``on_complete`` (synchronous calls only)."""
        self._terminal_guard_test(lambda guard, sub: guard.deliver_complete(sub))

    @tck_test(
        rule="2.03",
        category="required",
        jvm="required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnError",
    )
    def required_spec203_must_not_call_methods_on_subscription_or_publisher_in_on_error(self) -> None:
        """Rule 2.3: no ``request``/``cancel`` from inside ``on_error`` (synchronous calls only)."""
        self._terminal_guard_test(lambda guard, sub: guard.deliver_error(sub, InjectedError()))

    untested_spec204_must_consider_the_subscription_as_cancelled_in_after_recieving_on_complete_or_on_error = untested(  # noqa: E501
        "untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError",
        "Rule 2.4: not verifiable from outside.",
    )

    @tck_test(
        rule="2.05",
        category="required",
        jvm="required_spec205_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal",
    )
    def required_spec205_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal(  # noqa: E501
        self,
    ) -> None:
        """Rule 2.5: a second ``on_subscribe`` is answered by cancelling the *new* subscription.

        Beyond the JVM TCK: cancelling the original subscription instead also fails.
        """

        def body(stage: _WhiteboxStage) -> None:
            second = _SecondSubscription(self.env, forbid_requests=False)
            stage.sub.on_subscribe(second)
            second.expect_cancelled()
            if stage.is_cancelled:
                raise TCKFailure(
                    "rule 2.5: the Subscriber cancelled its original subscription, not the new one"
                )
            self.env.verify_no_async_errors()

        self._stage_test(body)

    untested_spec206_must_call_subscription_cancel_if_it_is_no_longer_valid = untested(
        "untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid",
        "Rule 2.6: not verifiable from outside.",
    )

    untested_spec207_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization = untested(  # noqa: E501
        "untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization",
        "Rule 2.7: checked in every staged case instead: the probe Subscription fails a call that"
        " enters while another is still inside (a case of its own would prove no more).",
    )

    @tck_test(
        rule="2.08",
        category="required",
        jvm="required_spec208_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel",
    )
    def required_spec208_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel(
        self,
    ) -> None:
        """Rule 2.8: an element arriving after ``cancel`` (and requests after it) cause no error."""

        def body(stage: _WhiteboxStage) -> None:
            stage.puppet.trigger_request(1)
            stage.expect_request()
            stage.puppet.signal_cancel()
            stage.expect_cancelling(rule="2.6", what=_AFTER_SIGNAL_CANCEL)
            stage.signal_next()
            stage.puppet.trigger_request(1)
            stage.puppet.trigger_request(1)
            self.env.verify_no_async_errors()

        self._stage_test(body)

    @tck_test(
        rule="2.09",
        category="required",
        jvm="required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall",
    )
    def required_spec209_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call(
        self,
    ) -> None:
        """Rule 2.9: ``on_complete`` right after a request is registered."""

        def body(stage: _WhiteboxStage) -> None:
            stage.puppet.trigger_request(1)
            stage.send_completion()
            stage.probe.expect_completion(rule="2.9")
            self.env.verify_no_async_errors()

        self._stage_test(body)

    @tck_test(
        rule="2.09",
        category="required",
        jvm="required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall",
    )
    def required_spec209_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call(
        self,
    ) -> None:
        """Rule 2.9: ``on_complete`` without any demand is registered."""

        def body(stage: _WhiteboxStage) -> None:
            stage.send_completion()
            stage.probe.expect_completion(rule="2.9")
            self.env.verify_no_async_errors()

        self._stage_test(body)

    @tck_test(
        rule="2.10",
        category="required",
        jvm="required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall",
    )
    def required_spec210_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call(
        self,
    ) -> None:
        """Rule 2.10: ``on_error`` after requests is registered with that very exception object."""

        def body(stage: _WhiteboxStage) -> None:
            stage.puppet.trigger_request(1)
            stage.puppet.trigger_request(1)
            error = InjectedError()
            stage.send_error(error)
            stage.probe.expect_error(error, rule="2.10")
            self.env.verify_no_async_errors()

        self._stage_test(body)

    @tck_test(
        rule="2.10",
        category="required",
        jvm="required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall",
    )
    def required_spec210_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call(
        self,
    ) -> None:
        """Rule 2.10: ``on_error`` without demand is registered with that very exception object."""

        def body(stage: _WhiteboxStage) -> None:
            error = InjectedError()
            stage.send_error(error)
            stage.probe.expect_error(error, rule="2.10")
            self.env.verify_no_async_errors()

        self._stage_test(body)

    untested_spec211_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events = untested(  # noqa: E501
        "untested_spec211_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents",
        "Rule 2.11: not verifiable from outside.",
    )

    untested_spec212_must_not_call_on_subscribe_more_than_once_based_on_object_equality_spec_violation = (
        untested(
            "untested_spec212_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality_specViolation",
            "Rule 2.12: a rule for publishers; not verified here.",
        )
    )

    untested_spec213_failing_on_signal_invocation = untested(
        "untested_spec213_failingOnSignalInvocation",
        "Rule 2.13 (failing signal methods): not verifiable from outside.",
    )

    @tck_test(
        rule="2.13",
        category="required",
        jvm="required_spec213_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull",
    )
    def required_spec213_on_subscribe_must_throw_null_pointer_exception_when_parameters_are_null(
        self,
    ) -> None:
        """Rule 2.13: ``on_subscribe(None)`` raises ``TypeError``, even while holding a subscription.

        So the ``None`` check must come before the "already subscribed: cancel the new
        one" branch (which would otherwise call ``None.cancel()``).
        """

        def body(stage: _WhiteboxStage) -> None:
            _expect_type_error(lambda: stage.sub.on_subscribe(None), "on_subscribe(None)")  # type: ignore[arg-type]
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body)

    @tck_test(
        rule="2.13",
        category="required",
        jvm="required_spec213_onNext_mustThrowNullPointerExceptionWhenParametersAreNull",
    )
    def required_spec213_on_next_must_throw_null_pointer_exception_when_parameters_are_null(self) -> None:
        """Rule 2.13: ``on_next(None)`` raises ``TypeError`` on the caller's stack."""

        def body(stage: _WhiteboxStage) -> None:
            _expect_type_error(lambda: stage.sub.on_next(None), "on_next(None)")
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body)

    @tck_test(
        rule="2.13",
        category="required",
        jvm="required_spec213_onError_mustThrowNullPointerExceptionWhenParametersAreNull",
    )
    def required_spec213_on_error_must_throw_null_pointer_exception_when_parameters_are_null(self) -> None:
        """Rule 2.13: ``on_error(None)`` raises ``TypeError`` on the caller's stack."""

        def body(stage: _WhiteboxStage) -> None:
            _expect_type_error(lambda: stage.sub.on_error(None), "on_error(None)")  # type: ignore[arg-type]
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body)

    untested_spec301_must_not_be_called_outside_subscriber_context = untested(
        "untested_spec301_mustNotBeCalledOutsideSubscriberContext", "Rule 3.1: not verifiable from outside."
    )

    @tck_test(
        rule="3.08",
        category="required",
        jvm="required_spec308_requestMustRegisterGivenNumberElementsToBeProduced",
    )
    def required_spec308_request_must_register_given_number_elements_to_be_produced(self) -> None:
        """Rule 3.8: a request for 2 gets 2 elements (one-at-a-time requesting is fine), then no more."""

        def body(stage: _WhiteboxStage) -> None:
            stage.puppet.trigger_request(2)
            n = stage.expect_request()
            stage.signal_next()
            stage.probe.expect_next(stage.last_t, rule="3.8")
            if n < 2:
                stage.expect_request(rule="3.8")
            stage.signal_next()
            stage.probe.expect_next(stage.last_t, rule="3.8")
            stage.probe.expect_none(what="rule 3.8: only 2 elements were sent")
            stage.puppet.trigger_request(3)
            self.env.verify_no_async_errors()

        self._stage_test(body)

    untested_spec310_request_may_synchronously_call_on_next_on_subscriber = untested(
        "untested_spec310_requestMaySynchronouslyCallOnNextOnSubscriber", "Rule 3.10: not verified here."
    )

    untested_spec311_request_may_synchronously_call_on_complete_or_on_error = untested(
        "untested_spec311_requestMaySynchronouslyCallOnCompleteOrOnError", "Rule 3.11: not verified here."
    )

    untested_spec314_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists = untested(
        "untested_spec314_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists",
        "Rule 3.14: not verified here.",
    )

    untested_spec315_cancel_must_not_throw_exception_and_must_signal_on_error = untested(
        "untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError", "Rule 3.15: not verified here."
    )

    untested_spec316_request_must_not_throw_exception_and_must_on_error_the_subscriber = untested(
        "untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber",
        "Rule 3.16: not verified here.",
    )


class SubscriberBlackboxVerification(_HelperPublisherMixin, Verification, abc.ABC):
    """The JVM ``SubscriberBlackboxVerification``: 26 cases, 11 of them executable.

    Subclass it and implement :meth:`create_subscriber`. A Subscriber that only requests
    after an outside nudge overrides :meth:`trigger_request` to give it.
    """

    not_verified_message = _NOT_VERIFIED

    @abc.abstractmethod
    def create_subscriber(self) -> Subscriber[Any]:
        """A new Subscriber under test."""

    def trigger_request(self, subscriber: Subscriber[Any]) -> None:
        """Make ``subscriber`` request, if it needs a nudge to; does nothing by default."""

    # -- runners ----------------------------------------------------------------------
    def _stage_test(self, body: Callable[[_BlackboxStage], None], at_once: bool = False) -> None:
        stage = _BlackboxStage(self, at_once)
        try:
            body(stage)
        finally:
            stage.tees.cancel()
        stage.serial.check()  # rule 2.7, in every staged case

    def _terminal_guard_test(
        self, deliver: Callable[[TerminalGuardSubscription, Subscriber[Any]], None]
    ) -> None:
        subscriber = self.create_subscriber()
        guard = TerminalGuardSubscription(self.env)
        subscriber.on_subscribe(guard)
        deliver(guard, subscriber)
        guard.serial.check()
        self.env.verify_no_async_errors_no_delay()

    # -- cases --------------------------------------------------------------------------
    @tck_test(
        rule="2.01",
        category="required",
        jvm="required_spec201_blackbox_mustSignalDemandViaSubscriptionRequest",
    )
    def required_spec201_blackbox_must_signal_demand_via_subscription_request(self) -> None:
        """Rule 2.1: the Subscriber requests, then receives what it asked for (up to 512) and completion.

        Fixes a JVM defect: there the send loop's cancellation check is inverted, so no
        element is ever sent. Here up to ``min(n, 512)`` elements go out while the
        subscription is not cancelled. Beyond the JVM TCK, the first goes out from inside the
        Subscriber's first ``request``, on its stack (rule 3.10 allows it): a Subscriber whose
        ``on_next`` then raises breaks rule 2.13.
        """

        def body(stage: _BlackboxStage) -> None:
            self.trigger_request(stage.sub)
            n = stage.expect_request()
            for _ in range(min(n, 512) - int(stage.answered_at_once)):
                if stage.is_cancelled:
                    break
                stage.signal_next()
            if not stage.is_cancelled:
                stage.send_completion()
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body, at_once=True)

    untested_spec202_blackbox_should_asynchronously_dispatch = untested(
        "untested_spec202_blackbox_shouldAsynchronouslyDispatch", "Rule 2.2: not verifiable from outside."
    )

    @tck_test(
        rule="2.03",
        category="required",
        jvm="required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete",
    )
    def required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_complete(
        self,
    ) -> None:
        """Rule 2.3: no ``request``/``cancel`` from inside ``on_complete`` (synchronous calls only)."""
        self._terminal_guard_test(lambda guard, sub: guard.deliver_complete(sub))

    @tck_test(
        rule="2.03",
        category="required",
        jvm="required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnError",
    )
    def required_spec203_blackbox_must_not_call_methods_on_subscription_or_publisher_in_on_error(
        self,
    ) -> None:
        """Rule 2.3: no ``request``/``cancel`` from inside ``on_error`` (synchronous calls only)."""
        self._terminal_guard_test(lambda guard, sub: guard.deliver_error(sub, InjectedError()))

    untested_spec204_blackbox_must_consider_the_subscription_as_cancelled_in_after_recieving_on_complete_or_on_error = untested(  # noqa: E501
        "untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError",
        "Rule 2.4: not verifiable from outside.",
    )

    @tck_test(
        rule="2.05",
        category="required",
        jvm="required_spec205_blackbox_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal",
    )
    def required_spec205_blackbox_must_call_subscription_cancel_if_it_already_has_an_subscription_and_receives_another_on_subscribe_signal(  # noqa: E501
        self,
    ) -> None:
        """Rule 2.5: the second subscription is cancelled and never requested from.

        A Subscriber that requests first and checks for duplicates afterwards fails.
        Beyond the JVM TCK: cancelling the original subscription instead also fails.
        """

        def body(stage: _BlackboxStage) -> None:
            second = _SecondSubscription(self.env, forbid_requests=True)
            stage.sub.on_subscribe(second)
            second.expect_cancelled()
            if stage.is_cancelled:
                raise TCKFailure(
                    "rule 2.5: the Subscriber cancelled its original subscription, not the new one"
                )
            self.env.verify_no_async_errors()
            stage.send_completion()

        self._stage_test(body)

    untested_spec206_blackbox_must_call_subscription_cancel_if_it_is_no_longer_valid = untested(
        "untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid",
        "Rule 2.6: not verifiable from outside.",
    )

    untested_spec207_blackbox_must_ensure_all_calls_on_its_subscription_take_place_from_the_same_thread_or_take_care_of_synchronization = untested(  # noqa: E501
        "untested_spec207_blackbox_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization",
        "Rule 2.7: checked in every staged case instead: the probe Subscription fails a call that"
        " enters while another is still inside (a case of its own would prove no more).",
    )

    untested_spec208_blackbox_must_be_prepared_to_receive_on_next_signals_after_having_called_subscription_cancel = untested(  # noqa: E501
        "untested_spec208_blackbox_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel",
        "Rule 2.8: exercised by the whitebox verification only.",
    )

    @tck_test(
        rule="2.09",
        category="required",
        jvm="required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall",
    )
    def required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_with_preceding_request_call(  # noqa: E501
        self,
    ) -> None:
        """Rule 2.9: ``on_complete`` after a request returns normally and raises nothing later.

        Beyond the JVM TCK, which has no final check: no asynchronous error may be recorded.
        """

        def body(stage: _BlackboxStage) -> None:
            self.trigger_request(stage.sub)
            stage.expect_request()
            stage.send_completion()
            stage.probe.expect_completion(rule="2.9")
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body)

    @tck_test(
        rule="2.09",
        category="required",
        jvm="required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall",
    )
    def required_spec209_blackbox_must_be_prepared_to_receive_an_on_complete_signal_without_preceding_request_call(  # noqa: E501
        self,
    ) -> None:
        """Rule 2.9: ``on_complete`` without demand returns normally."""

        def body(stage: _BlackboxStage) -> None:
            stage.send_completion()
            stage.probe.expect_completion(rule="2.9")
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body)

    @tck_test(
        rule="2.10",
        category="required",
        jvm="required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall",
    )
    def required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_with_preceding_request_call(
        self,
    ) -> None:
        """Rule 2.10: ``on_error`` after a request returns normally."""

        def body(stage: _BlackboxStage) -> None:
            self.trigger_request(stage.sub)
            stage.expect_request()
            stage.send_error(InjectedError())
            stage.probe.expect_error(BaseException, rule="2.10")
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body)

    @tck_test(
        rule="2.10",
        category="required",
        jvm="required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall",
    )
    def required_spec210_blackbox_must_be_prepared_to_receive_an_on_error_signal_without_preceding_request_call(  # noqa: E501
        self,
    ) -> None:
        """Rule 2.10: ``on_error`` without demand returns normally."""

        def body(stage: _BlackboxStage) -> None:
            stage.send_error(InjectedError())
            stage.probe.expect_error(BaseException, rule="2.10")
            self.env.verify_no_async_errors_no_delay()

        self._stage_test(body)

    untested_spec211_blackbox_must_make_sure_that_all_calls_on_its_methods_happen_before_the_processing_of_the_respective_events = untested(  # noqa: E501
        "untested_spec211_blackbox_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents",
        "Rule 2.11: not verifiable from outside.",
    )

    untested_spec212_blackbox_must_not_call_on_subscribe_more_than_once_based_on_object_equality = untested(
        "untested_spec212_blackbox_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality",
        "Rule 2.12: a rule for publishers; not verified here.",
    )

    untested_spec213_blackbox_failing_on_signal_invocation = untested(
        "untested_spec213_blackbox_failingOnSignalInvocation",
        "Rule 2.13 (failing signal methods): not verifiable from outside.",
    )

    @tck_test(
        rule="2.13",
        category="required",
        jvm="required_spec213_blackbox_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull",
    )
    def required_spec213_blackbox_on_subscribe_must_throw_null_pointer_exception_when_parameters_are_null(
        self,
    ) -> None:
        """Rule 2.13: a fresh Subscriber's ``on_subscribe(None)`` raises ``TypeError``."""
        subscriber = self.create_subscriber()
        _expect_type_error(lambda: subscriber.on_subscribe(None), "on_subscribe(None)")  # type: ignore[arg-type]
        self.env.verify_no_async_errors_no_delay()

    @tck_test(
        rule="2.13",
        category="required",
        jvm="required_spec213_blackbox_onNext_mustThrowNullPointerExceptionWhenParametersAreNull",
    )
    def required_spec213_blackbox_on_next_must_throw_null_pointer_exception_when_parameters_are_null(
        self,
    ) -> None:
        """Rule 2.13: ``on_next(None)`` raises ``TypeError`` on the caller's stack."""
        subscriber = self.create_subscriber()
        subscriber.on_subscribe(_NoopSubscription())
        _expect_type_error(lambda: subscriber.on_next(None), "on_next(None)")
        self.env.verify_no_async_errors_no_delay()

    @tck_test(
        rule="2.13",
        category="required",
        jvm="required_spec213_blackbox_onError_mustThrowNullPointerExceptionWhenParametersAreNull",
    )
    def required_spec213_blackbox_on_error_must_throw_null_pointer_exception_when_parameters_are_null(
        self,
    ) -> None:
        """Rule 2.13: ``on_error(None)`` raises ``TypeError`` on the caller's stack."""
        subscriber = self.create_subscriber()
        subscriber.on_subscribe(_NoopSubscription())
        _expect_type_error(lambda: subscriber.on_error(None), "on_error(None)")  # type: ignore[arg-type]
        self.env.verify_no_async_errors_no_delay()

    untested_spec301_blackbox_must_not_be_called_outside_subscriber_context = untested(
        "untested_spec301_blackbox_mustNotBeCalledOutsideSubscriberContext",
        "Rule 3.1: not verifiable from outside.",
    )

    untested_spec308_blackbox_request_must_register_given_number_elements_to_be_produced = untested(
        "untested_spec308_blackbox_requestMustRegisterGivenNumberElementsToBeProduced",
        "Rule 3.8: exercised by the whitebox verification only.",
    )

    untested_spec310_blackbox_request_may_synchronously_call_on_next_on_subscriber = untested(
        "untested_spec310_blackbox_requestMaySynchronouslyCallOnNextOnSubscriber",
        "Rule 3.10: not verified here.",
    )

    untested_spec311_blackbox_request_may_synchronously_call_on_complete_or_on_error = untested(
        "untested_spec311_blackbox_requestMaySynchronouslyCallOnCompleteOrOnError",
        "Rule 3.11: not verified here.",
    )

    untested_spec314_blackbox_cancel_may_cause_the_publisher_to_shutdown_if_no_other_subscription_exists = (
        untested(
            "untested_spec314_blackbox_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists",
            "Rule 3.14: not verified here.",
        )
    )

    untested_spec315_blackbox_cancel_must_not_throw_exception_and_must_signal_on_error = untested(
        "untested_spec315_blackbox_cancelMustNotThrowExceptionAndMustSignalOnError",
        "Rule 3.15: not verified here.",
    )

    untested_spec316_blackbox_request_must_not_throw_exception_and_must_on_error_the_subscriber = untested(
        "untested_spec316_blackbox_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber",
        "Rule 3.16: not verified here.",
    )


def verify_subscriber_whitebox(
    create_subscriber: Callable[[WhiteboxSubscriberProbe[Any]], Subscriber[Any]],
    *,
    create_element: Callable[[int], Any] = _identity,
    env: TestEnvironment | None = None,
    case_timeout: float | None = DEFAULT_CASE_TIMEOUT,
    skip_stochastic: bool = False,
    max_elements: int = demand.UNBOUNDED - 1,
) -> Report:
    """Run every whitebox case against ``create_subscriber(probe)``, without pytest.

    Takes the options of every ``verify_*`` function (see :func:`~rstreams.tck.verify_publisher`);
    no subscriber case is stochastic or sized by a publisher's length, so
    ``skip_stochastic`` and ``max_elements`` are checked and change nothing here. Returns
    the :class:`Report`; ``report.ok`` is false if any case failed.
    """
    check_options(
        "verify_subscriber_whitebox",
        case_timeout=case_timeout,
        max_elements=max_elements,
        env=env,
        skip_stochastic=skip_stochastic,
        factories={"create_subscriber": create_subscriber, "create_element=": create_element},
    )

    class _AdHoc(SubscriberWhiteboxVerification):
        def create_subscriber(self, probe: WhiteboxSubscriberProbe[Any]) -> Subscriber[Any]:
            return create_subscriber(probe)

        def create_element(self, element: int) -> Any:
            return create_element(element)

        def create_env(self) -> TestEnvironment:
            return TestEnvironment() if env is None else env

    _AdHoc.case_timeout = case_timeout
    return run_cases(_AdHoc())


def verify_subscriber_blackbox(
    create_subscriber: Callable[[], Subscriber[Any]],
    *,
    create_element: Callable[[int], Any] = _identity,
    trigger_request: Callable[[Subscriber[Any]], None] | None = None,
    env: TestEnvironment | None = None,
    case_timeout: float | None = DEFAULT_CASE_TIMEOUT,
    skip_stochastic: bool = False,
    max_elements: int = demand.UNBOUNDED - 1,
) -> Report:
    """Run every blackbox case against ``create_subscriber()``, without pytest.

    ``trigger_request(subscriber)``, if given, nudges a Subscriber that does not request
    on its own. The other options are those of every ``verify_*`` function (see
    :func:`verify_subscriber_whitebox`). Returns the :class:`Report`; ``report.ok`` is
    false if any case failed.
    """
    check_options(
        "verify_subscriber_blackbox",
        case_timeout=case_timeout,
        max_elements=max_elements,
        env=env,
        skip_stochastic=skip_stochastic,
        factories={"create_subscriber": create_subscriber, "create_element=": create_element},
        optional={"trigger_request": trigger_request},
    )

    class _AdHoc(SubscriberBlackboxVerification):
        def create_subscriber(self) -> Subscriber[Any]:
            return create_subscriber()

        def create_element(self, element: int) -> Any:
            return create_element(element)

        def trigger_request(self, subscriber: Subscriber[Any]) -> None:
            if trigger_request is not None:
                trigger_request(subscriber)

        def create_env(self) -> TestEnvironment:
            return TestEnvironment() if env is None else env

    _AdHoc.case_timeout = case_timeout
    return run_cases(_AdHoc())
