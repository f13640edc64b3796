"""The conformance cases for resumption (rs.*) against our server: pass with resume=, skip without.
The server and the driver share a loop whose clock is its own time (testkit.bound.OwnTimeLoop),
as in tests/conformance/test_suite.py: the session's timeout and the driver's waits count alike."""

from __future__ import annotations

import pytest

from rstreams.conformance import CASES, KINDS, CaseResult, Options, Outcome, conformance_publishers, run_case
from rstreams.net import serve
from rstreams.net._resume import Resume
from testkit.bound import run_own_time

pytestmark = pytest.mark.timeout(120)  # (above a case's deadline: 50 s of the loop's own time)

OPTIONS = Options(
    quiet=0.1, timeout=30.0, case_timeout=50.0
)  # safety nets, as tests/conformance/test_suite.py
RESUME_CASES = [c for c in CASES if c.area == "rs"]


def test_there_are_resumption_cases() -> None:
    """The rs area is registered with its cases."""
    assert {c.id for c in RESUME_CASES} >= {"rs.token", "rs.unknown_token", "rs.replay_continues"}


@pytest.mark.parametrize("case", RESUME_CASES, ids=lambda c: c.id)
def test_case_passes_on_a_resumable_server(case: object) -> None:
    """Each rs.* case passes against serve(..., resume=Resume(...))."""

    async def main() -> CaseResult:
        async with await serve(
            "tcp://127.0.0.1:0", conformance_publishers(), resume=Resume(session_timeout=5.0)
        ) as server:
            return await run_case(case, server.url, OPTIONS, frozenset(KINDS))  # type: ignore[arg-type]

    result = run_own_time(main)
    assert result.outcome is Outcome.PASS, result.message


@pytest.mark.parametrize("case", RESUME_CASES, ids=lambda c: c.id)
def test_case_skips_without_resumption(case: object) -> None:
    """Against a server without resume= each rs.* case is skipped, not failed."""

    async def main() -> CaseResult:
        async with await serve("tcp://127.0.0.1:0", conformance_publishers()) as server:
            return await run_case(case, server.url, OPTIONS, frozenset(KINDS))  # type: ignore[arg-type]

    result = run_own_time(main)
    assert result.outcome is Outcome.SKIP, result.message
