"""The canonical JVM TCK test names this kit mirrors, and how they become Python names.

The JVM TCK keeps one list of test-method names per verification class (its
``PublisherVerificationRules`` interface); so does this module, for
:class:`~rstreams.tck.PublisherVerification`. Each entry is ``(jvm_name, rule, category)``:
the rule as written in the JVM TCK's tables (``"1.09"`` for rule 1.9, ``None`` for the
set-up checks) and the category taken from the name's prefix. A test pins this list
against the registry, so a case cannot go missing or be renamed by accident.

:func:`snake` turns a JVM name into the Python method name:
``required_spec109_subscribeThrowNPEOnNullSubscriber`` becomes
``required_spec109_subscribe_throw_npe_on_null_subscriber``.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["PUBLISHER_VERIFICATION_RULES", "snake"]

_LOWER_UPPER = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_ACRONYM_WORD = re.compile(r"(?<=[A-Z])(?=[A-Z][a-z])")


def snake(jvm_name: str) -> str:
    """The snake_case Python name of a JVM TCK method name (acronyms become one word)."""
    return _ACRONYM_WORD.sub("_", _LOWER_UPPER.sub("_", jvm_name)).lower()


PUBLISHER_VERIFICATION_RULES: Final[tuple[tuple[str, str | None, str], ...]] = (
    (
        "required_createPublisher1MustProduceAStreamOfExactly1Element",
        None,
        "required",
    ),
    (
        "required_createPublisher3MustProduceAStreamOfExactly3Elements",
        None,
        "required",
    ),
    (
        "required_validate_maxElementsFromPublisher",
        None,
        "required",
    ),
    (
        "required_validate_boundedDepthOfOnNextAndRequestRecursion",
        None,
        "required",
    ),
    (
        "required_spec101_subscriptionRequestMustResultInTheCorrectNumberOfProducedElements",
        "1.01",
        "required",
    ),
    (
        "required_spec102_maySignalLessThanRequestedAndTerminateSubscription",
        "1.02",
        "required",
    ),
    (
        "stochastic_spec103_mustSignalOnMethodsSequentially",
        "1.03",
        "stochastic",
    ),
    (
        "optional_spec104_mustSignalOnErrorWhenFails",
        "1.04",
        "optional",
    ),
    (
        "required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates",
        "1.05",
        "required",
    ),
    (
        "optional_spec105_emptyStreamMustTerminateBySignallingOnComplete",
        "1.05",
        "optional",
    ),
    (
        "untested_spec106_mustConsiderSubscriptionCancelledAfterOnErrorOrOnCompleteHasBeenCalled",
        "1.06",
        "untested",
    ),
    (
        "required_spec107_mustNotEmitFurtherSignalsOnceOnCompleteHasBeenSignalled",
        "1.07",
        "required",
    ),
    (
        "untested_spec107_mustNotEmitFurtherSignalsOnceOnErrorHasBeenSignalled",
        "1.07",
        "untested",
    ),
    (
        "untested_spec108_possiblyCanceledSubscriptionShouldNotReceiveOnErrorOrOnCompleteSignals",
        "1.08",
        "untested",
    ),
    (
        "untested_spec109_subscribeShouldNotThrowNonFatalThrowable",
        "1.09",
        "untested",
    ),
    (
        "required_spec109_subscribeThrowNPEOnNullSubscriber",
        "1.09",
        "required",
    ),
    (
        "required_spec109_mustIssueOnSubscribeForNonNullSubscriber",
        "1.09",
        "required",
    ),
    (
        "required_spec109_mayRejectCallsToSubscribeIfPublisherIsUnableOrUnwillingToServeThemRejectionMustTriggerOnErrorAfterOnSubscribe",
        "1.09",
        "required",
    ),
    (
        "untested_spec110_rejectASubscriptionRequestIfTheSameSubscriberSubscribesTwice",
        "1.10",
        "untested",
    ),
    (
        "optional_spec111_maySupportMultiSubscribe",
        "1.11",
        "optional",
    ),
    (
        "optional_spec111_registeredSubscribersMustReceiveOnNextOrOnCompleteSignals",
        "1.11",
        "optional",
    ),
    (
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingOneByOne",
        "1.11",
        "optional",
    ),
    (
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfront",
        "1.11",
        "optional",
    ),
    (
        "optional_spec111_multicast_mustProduceTheSameElementsInTheSameSequenceToAllOfItsSubscribersWhenRequestingManyUpfrontAndCompleteAsExpected",
        "1.11",
        "optional",
    ),
    (
        "required_spec302_mustAllowSynchronousRequestCallsFromOnNextAndOnSubscribe",
        "3.02",
        "required",
    ),
    (
        "required_spec303_mustNotAllowUnboundedRecursion",
        "3.03",
        "required",
    ),
    (
        "untested_spec304_requestShouldNotPerformHeavyComputations",
        "3.04",
        "untested",
    ),
    (
        "untested_spec305_cancelMustNotSynchronouslyPerformHeavyComputation",
        "3.05",
        "untested",
    ),
    (
        "required_spec306_afterSubscriptionIsCancelledRequestMustBeNops",
        "3.06",
        "required",
    ),
    (
        "required_spec307_afterSubscriptionIsCancelledAdditionalCancelationsMustBeNops",
        "3.07",
        "required",
    ),
    (
        "required_spec309_requestZeroMustSignalIllegalArgumentException",
        "3.09",
        "required",
    ),
    (
        "required_spec309_requestNegativeNumberMustSignalIllegalArgumentException",
        "3.09",
        "required",
    ),
    (
        "optional_spec309_requestNegativeNumberMaySignalIllegalArgumentExceptionWithSpecificMessage",
        "3.09",
        "optional",
    ),
    (
        "required_spec312_cancelMustMakeThePublisherToEventuallyStopSignaling",
        "3.12",
        "required",
    ),
    (
        "required_spec313_cancelMustMakeThePublisherEventuallyDropAllReferencesToTheSubscriber",
        "3.13",
        "required",
    ),
    (
        "required_spec317_mustSupportAPendingElementCountUpToLongMaxValue",
        "3.17",
        "required",
    ),
    (
        "required_spec317_mustSupportACumulativePendingElementCountUpToLongMaxValue",
        "3.17",
        "required",
    ),
    (
        "required_spec317_mustNotSignalOnErrorWhenPendingAboveLongMaxValue",
        "3.17",
        "required",
    ),
)
"""The 38 test methods of the JVM TCK's PublisherVerification, in its order."""
