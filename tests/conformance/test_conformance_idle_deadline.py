"""A conformance run given the endpoint's idle timeout gives the two idle cases the time they
need: ex.pings_keep_alive pings until a silent connection is closed as idle (up to
--idle-timeout + --timeout) and ex.idle_timeout waits up to --idle-timeout + --timeout,
whatever --case-timeout says (default 30 s: `--idle-timeout 60`
made both end as hangs). The server and the driver share a loop whose clock is its own time
(testkit.bound.OwnTimeLoop): the idle timeout and the pings it is kept alive by count alike."""

from __future__ import annotations

import pytest

from rstreams.conformance import Options, Outcome, conformance_publishers, run_case, select
from rstreams.net import serve
from testkit.bound import run_own_time

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("case_id", ["ex.idle_timeout", "ex.pings_keep_alive"])
def test_an_idle_case_outlives_a_shorter_case_timeout(case_id: str) -> None:
    async def main() -> Outcome:
        offer = conformance_publishers()
        server = await serve("tcp://127.0.0.1:0", offer, on_connection=offer.on_connection, idle_timeout=1.0)
        try:
            (case,) = select(case_id)
            options = Options(idle_timeout=1.0, case_timeout=0.75, timeout=1.0, quiet=0.1)
            result = await run_case(case, server.url, options, frozenset({"range"}))
            return result.outcome
        finally:
            await server.aclose()

    assert run_own_time(main) is Outcome.PASS
