"""The subscriber and processor verifications implement exactly the JVM TCK's case lists."""

from __future__ import annotations

from rstreams.tck._jvm_names import PUBLISHER_VERIFICATION_RULES
from rstreams.tck._processor import IdentityProcessorVerification
from rstreams.tck._publisher import PublisherVerification
from rstreams.tck._registry import CaseInfo
from rstreams.tck._subscriber import SubscriberBlackboxVerification, SubscriberWhiteboxVerification
from rstreams.tck._subscriber_names import IPV_OWN_CASES, SBV_CASES, SWV_CASES, CaseName, python_name


def _as_names(cases: tuple[CaseInfo, ...]) -> list[CaseName]:
    return [(c.jvm_name, c.rule, c.category) for c in cases]


def _counts(cases: tuple[CaseName, ...] | list[CaseName]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for _, _, category in cases:
        counts[category] = counts.get(category, 0) + 1
    return counts


def test_canonical_lists_have_the_jvm_counts() -> None:
    """27 whitebox (14 required), 26 blackbox (11 required), 3 own IPV cases (all required)."""
    assert _counts(SWV_CASES) == {"required": 14, "untested": 13}
    assert _counts(SBV_CASES) == {"required": 11, "untested": 15}
    assert _counts(IPV_OWN_CASES) == {"required": 3}
    assert all("_blackbox_" in jvm for jvm, _, _ in SBV_CASES)


def test_whitebox_verification_implements_its_list_in_order() -> None:
    """Names, rules and categories match the JVM list exactly, in the JVM's order."""
    assert _as_names(SubscriberWhiteboxVerification.tck_cases) == list(SWV_CASES)


def test_blackbox_verification_implements_its_list_in_order() -> None:
    """Names, rules and categories match the JVM list exactly, in the JVM's order."""
    assert _as_names(SubscriberBlackboxVerification.tck_cases) == list(SBV_CASES)


def test_processor_verification_delegates_every_publisher_and_whitebox_case() -> None:
    """IPV = the 38 publisher cases, the 27 whitebox cases and its 3 own: 68, none missing."""
    cases = _as_names(IdentityProcessorVerification.tck_cases)
    assert cases == list(PUBLISHER_VERIFICATION_RULES) + list(SWV_CASES) + list(IPV_OWN_CASES)
    assert len(cases) == 68
    pv = {c.name for c in PublisherVerification.tck_cases}
    swv = {c.name for c in SubscriberWhiteboxVerification.tck_cases}
    ipv = {c.name for c in IdentityProcessorVerification.tck_cases}
    assert pv | swv <= ipv
    assert _counts(cases) == {"required": 39, "optional": 8, "stochastic": 1, "untested": 20}


def test_every_case_has_a_pytest_alias_and_a_snake_case_name() -> None:
    """Each case is collected by pytest as test_<snake name>, and the snake name is derived from the JVM's."""
    for cls in (
        SubscriberWhiteboxVerification,
        SubscriberBlackboxVerification,
        IdentityProcessorVerification,
    ):
        for case in cls.tck_cases:
            assert case.name == python_name(case.jvm_name)
            assert callable(getattr(cls, f"test_{case.name}"))
            assert callable(getattr(cls, case.name))


def test_the_unprefixed_jvm_case_is_required() -> None:
    """The one JVM name without a category prefix runs (and fails) as a required case."""
    case = IdentityProcessorVerification.tck_cases[-2]
    assert case.jvm_name == "mustImmediatelyPassOnOnErrorEventsReceivedFromItsUpstreamToItsDownstream"
    assert (case.rule, case.category) == (None, "required")
