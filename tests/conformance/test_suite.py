"""The conformance suite against our own server, over TCP and WebSocket: every case must pass.

Each case is one test per transport, so a failure names its case and rule. A case that
fails because of a real bug in rstreams.net/wire is kept and marked ``xfail(strict=True)``
in :data:`KNOWN_BUGS` with the bug described; fixing the bug turns it into an XPASS, which
fails the run until the mark is removed.
"""

from __future__ import annotations

import pytest

from rstreams.conformance import CASES, Case, Options, Outcome, conformance_publishers, run_case
from rstreams.net import serve

OPTIONS = Options(quiet=0.1, timeout=5.0, case_timeout=30.0)
ALL_KINDS = frozenset({"range", "fixed", "large", "error", "never", "infinite", "stats"})

KNOWN_BUGS: dict[str, str] = {}

URLS = {"tcp": "tcp://127.0.0.1:0", "ws": "ws://127.0.0.1:0/rsio"}


def _params() -> list[object]:
    params: list[object] = []
    for transport in URLS:
        for case in CASES:
            marks = []
            if case.id in KNOWN_BUGS:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[case.id]))
            params.append(pytest.param(transport, case, id=f"{transport}-{case.id}", marks=marks))
    return params


@pytest.mark.asyncio
@pytest.mark.timeout(60)
@pytest.mark.parametrize(("transport", "case"), _params())
async def test_case(transport: str, case: Case) -> None:
    """The case passes against rstreams.net.serve offering the conformance publishers."""
    server = await serve(URLS[transport], conformance_publishers())
    try:
        result = await run_case(case, server.url, OPTIONS, ALL_KINDS)
    finally:
        await server.aclose()
    assert result.outcome is Outcome.PASS, f"{case.cite}: {case.text}\n{result.message}"
