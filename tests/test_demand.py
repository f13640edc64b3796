"""The demand module: rule 3.9 validation, rule 3.17 saturation, rule 2.5 acceptance."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rstreams import demand
from rstreams.errors import InvalidDemandError

U = demand.UNBOUNDED
amounts = st.integers(min_value=0, max_value=2**70)


def test_unbounded_is_java_long_max() -> None:
    """Rule 3.17: 2**63-1 is "effectively unbounded"."""
    assert U == 2**63 - 1


@given(st.integers(min_value=1, max_value=2**80))
def test_positive_ints_are_legal(n: int) -> None:
    """Rule 3.9: any n > 0 is legal, even above 2**63-1 (it just means unbounded)."""
    assert demand.invalid(n) is None


@given(st.one_of(st.integers(max_value=0), st.booleans(), st.floats(), st.text(), st.none()))
def test_illegal_requests_give_a_rule_3_9_error(n: object) -> None:
    """Rule 3.9: n <= 0, bools and non-ints are illegal; the error names the rule and value."""
    problem = demand.invalid(n)
    assert isinstance(problem, InvalidDemandError)
    assert isinstance(problem, ValueError)
    assert "3.9" in str(problem)
    assert repr(n) in str(problem)
    assert problem.n is n


@given(st.integers(min_value=0, max_value=U), amounts)
def test_add_saturates_and_never_exceeds_unbounded(current: int, n: int) -> None:
    """Rule 3.17: demand sums and is capped at 2**63-1."""
    total = demand.add(current, n)
    assert total == min(current + n, U)


def test_cumulative_half_max_plus_one_is_exactly_max() -> None:
    """The TCK's 3.17 off-by-one: MAX//2 + MAX//2 + 1 == MAX, neither rejected nor wrapped."""
    assert demand.add(demand.add(U // 2, U // 2), 1) == U


@given(st.integers(min_value=0, max_value=U), st.integers(min_value=0, max_value=U))
def test_sub_floors_at_zero_and_keeps_unbounded(current: int, n: int) -> None:
    """Delivered elements come off demand; unbounded stays unbounded; never negative."""
    rest = demand.sub(current, n)
    assert rest == (U if current == U else max(current - n, 0))
    assert rest >= 0


class _Sub:
    def __init__(self) -> None:
        self.cancelled = 0

    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        self.cancelled += 1


def test_accept_subscription_cancels_a_second_one() -> None:
    """Rule 2.5: a Subscriber with an active subscription cancels a new one."""
    first, second = _Sub(), _Sub()
    assert demand.accept_subscription(None, first) is True
    assert demand.accept_subscription(first, second) is False
    assert second.cancelled == 1
    assert first.cancelled == 0


def test_accept_subscription_checks_none_before_duplicates() -> None:
    """Rule 2.13 before 2.5: None raises TypeError even when a subscription is held."""
    with pytest.raises(TypeError, match=r"2\.13"):
        demand.accept_subscription(_Sub(), None)
