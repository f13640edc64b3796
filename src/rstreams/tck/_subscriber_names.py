"""The canonical names of the subscriber and processor TCK cases (JVM TCK v1.0.4).

One list per verification class, in the JVM's declaration order, as
``(jvm_method_name, rule, category)``: ``rule`` is the specification rule written
``"X.YY"`` (``None`` where the JVM name carries no rule) and ``category`` is one of
``"required"``, ``"optional"``, ``"stochastic"`` and ``"untested"``. The JVM keeps the same
lists in its ``SubscriberWhiteboxVerificationRules`` and ``SubscriberBlackboxVerificationRules``
interfaces; here a test (``tests/tck/test_subscriber_registry.py``) checks that every
verification class implements exactly its list, with Python names from :func:`python_name`
(the same conversion as :func:`rstreams.tck._jvm_names.snake`).
"""

from __future__ import annotations

from rstreams.tck._jvm_names import snake as python_name

__all__ = ["IPV_OWN_CASES", "SBV_CASES", "SWV_CASES", "CaseName", "python_name"]

CaseName = tuple[str, str | None, str]
"""``(jvm_method_name, rule or None, category)``."""


SWV_CASES: tuple[CaseName, ...] = (
    ("required_exerciseWhiteboxHappyPath", None, "required"),
    ("required_spec201_mustSignalDemandViaSubscriptionRequest", "2.01", "required"),
    ("untested_spec202_shouldAsynchronouslyDispatch", "2.02", "untested"),
    ("required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete", "2.03", "required"),
    ("required_spec203_mustNotCallMethodsOnSubscriptionOrPublisherInOnError", "2.03", "required"),
    (
        "untested_spec204_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError",
        "2.04",
        "untested",
    ),
    (
        "required_spec205_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal",
        "2.05",
        "required",
    ),
    ("untested_spec206_mustCallSubscriptionCancelIfItIsNoLongerValid", "2.06", "untested"),
    (
        "untested_spec207_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization",
        "2.07",
        "untested",
    ),
    (
        "required_spec208_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel",
        "2.08",
        "required",
    ),
    (
        "required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall",
        "2.09",
        "required",
    ),
    (
        "required_spec209_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall",
        "2.09",
        "required",
    ),
    ("required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall", "2.10", "required"),
    (
        "required_spec210_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall",
        "2.10",
        "required",
    ),
    (
        "untested_spec211_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents",
        "2.11",
        "untested",
    ),
    (
        "untested_spec212_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality_specViolation",
        "2.12",
        "untested",
    ),
    ("untested_spec213_failingOnSignalInvocation", "2.13", "untested"),
    ("required_spec213_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13", "required"),
    ("required_spec213_onNext_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13", "required"),
    ("required_spec213_onError_mustThrowNullPointerExceptionWhenParametersAreNull", "2.13", "required"),
    ("untested_spec301_mustNotBeCalledOutsideSubscriberContext", "3.01", "untested"),
    ("required_spec308_requestMustRegisterGivenNumberElementsToBeProduced", "3.08", "required"),
    ("untested_spec310_requestMaySynchronouslyCallOnNextOnSubscriber", "3.10", "untested"),
    ("untested_spec311_requestMaySynchronouslyCallOnCompleteOrOnError", "3.11", "untested"),
    ("untested_spec314_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists", "3.14", "untested"),
    ("untested_spec315_cancelMustNotThrowExceptionAndMustSignalOnError", "3.15", "untested"),
    ("untested_spec316_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber", "3.16", "untested"),
)
"""The 27 cases of ``SubscriberWhiteboxVerification`` (14 required, 13 untested)."""

SBV_CASES: tuple[CaseName, ...] = (
    ("required_spec201_blackbox_mustSignalDemandViaSubscriptionRequest", "2.01", "required"),
    ("untested_spec202_blackbox_shouldAsynchronouslyDispatch", "2.02", "untested"),
    ("required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnComplete", "2.03", "required"),
    ("required_spec203_blackbox_mustNotCallMethodsOnSubscriptionOrPublisherInOnError", "2.03", "required"),
    (
        "untested_spec204_blackbox_mustConsiderTheSubscriptionAsCancelledInAfterRecievingOnCompleteOrOnError",
        "2.04",
        "untested",
    ),
    (
        "required_spec205_blackbox_mustCallSubscriptionCancelIfItAlreadyHasAnSubscriptionAndReceivesAnotherOnSubscribeSignal",
        "2.05",
        "required",
    ),
    ("untested_spec206_blackbox_mustCallSubscriptionCancelIfItIsNoLongerValid", "2.06", "untested"),
    (
        "untested_spec207_blackbox_mustEnsureAllCallsOnItsSubscriptionTakePlaceFromTheSameThreadOrTakeCareOfSynchronization",
        "2.07",
        "untested",
    ),
    (
        "untested_spec208_blackbox_mustBePreparedToReceiveOnNextSignalsAfterHavingCalledSubscriptionCancel",
        "2.08",
        "untested",
    ),
    (
        "required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithPrecedingRequestCall",
        "2.09",
        "required",
    ),
    (
        "required_spec209_blackbox_mustBePreparedToReceiveAnOnCompleteSignalWithoutPrecedingRequestCall",
        "2.09",
        "required",
    ),
    (
        "required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithPrecedingRequestCall",
        "2.10",
        "required",
    ),
    (
        "required_spec210_blackbox_mustBePreparedToReceiveAnOnErrorSignalWithoutPrecedingRequestCall",
        "2.10",
        "required",
    ),
    (
        "untested_spec211_blackbox_mustMakeSureThatAllCallsOnItsMethodsHappenBeforeTheProcessingOfTheRespectiveEvents",
        "2.11",
        "untested",
    ),
    ("untested_spec212_blackbox_mustNotCallOnSubscribeMoreThanOnceBasedOnObjectEquality", "2.12", "untested"),
    ("untested_spec213_blackbox_failingOnSignalInvocation", "2.13", "untested"),
    (
        "required_spec213_blackbox_onSubscribe_mustThrowNullPointerExceptionWhenParametersAreNull",
        "2.13",
        "required",
    ),
    (
        "required_spec213_blackbox_onNext_mustThrowNullPointerExceptionWhenParametersAreNull",
        "2.13",
        "required",
    ),
    (
        "required_spec213_blackbox_onError_mustThrowNullPointerExceptionWhenParametersAreNull",
        "2.13",
        "required",
    ),
    ("untested_spec301_blackbox_mustNotBeCalledOutsideSubscriberContext", "3.01", "untested"),
    ("untested_spec308_blackbox_requestMustRegisterGivenNumberElementsToBeProduced", "3.08", "untested"),
    ("untested_spec310_blackbox_requestMaySynchronouslyCallOnNextOnSubscriber", "3.10", "untested"),
    ("untested_spec311_blackbox_requestMaySynchronouslyCallOnCompleteOrOnError", "3.11", "untested"),
    (
        "untested_spec314_blackbox_cancelMayCauseThePublisherToShutdownIfNoOtherSubscriptionExists",
        "3.14",
        "untested",
    ),
    ("untested_spec315_blackbox_cancelMustNotThrowExceptionAndMustSignalOnError", "3.15", "untested"),
    ("untested_spec316_blackbox_requestMustNotThrowExceptionAndMustOnErrorTheSubscriber", "3.16", "untested"),
)
"""The 26 cases of ``SubscriberBlackboxVerification`` (11 required, 15 untested)."""

IPV_OWN_CASES: tuple[CaseName, ...] = (
    (
        "required_spec104_mustCallOnErrorOnAllItsSubscribersIfItEncountersANonRecoverableError",
        "1.04",
        "required",
    ),
    ("mustImmediatelyPassOnOnErrorEventsReceivedFromItsUpstreamToItsDownstream", None, "required"),
    ("required_mustRequestFromUpstreamForElementsThatHaveBeenRequestedLongAgo", None, "required"),
)
"""The 3 cases ``IdentityProcessorVerification`` declares itself (all required)."""
