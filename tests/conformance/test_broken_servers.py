"""The server suite fails deliberately broken servers, in the case that checks the broken rule and
naming its section: rstreams' own server behind a relay that breaks one rule
(tests/conformance/broken_servers.py). tests/conformance/test_driver.py's sloppy endpoint covers
ignoring demand; these cover what it does not.

The server, the relay and the driver share one loop whose clock is its own time
(testkit.bound.OwnTimeLoop), so the server's idle timeout and the driver's waits count alike."""

from __future__ import annotations

from types import ModuleType

import pytest

from rstreams.conformance import KINDS, CaseResult, Options, Outcome, conformance_publishers, run_case, select
from rstreams.net import serve
from testkit.bound import run_own_time
from testkit.scripts import load_script

broken: ModuleType = load_script("tests/conformance/broken_servers.py")

pytestmark = pytest.mark.timeout(60)

ALL = frozenset(KINDS)
IDLE = 0.6
OPTIONS = Options(quiet=0.1, timeout=5.0, idle_timeout=IDLE)
"""Every failing run here ends at an event (a goodbye, the end of input); the deadline only bounds a hang."""


def _run(case_id: str, *modes: str, options: Options = OPTIONS) -> CaseResult:
    """``case_id`` against rstreams' server (idle timeout :data:`IDLE`) behind a relay breaking ``modes``."""

    async def main() -> CaseResult:
        offer = conformance_publishers()
        server = await serve("tcp://127.0.0.1:0", offer, on_connection=offer.on_connection, idle_timeout=IDLE)
        tamper = await broken.Tamper(server.url, *modes).start()
        try:
            (case,) = select(case_id)
            return await run_case(case, tamper.url, options, ALL)
        finally:
            await tamper.aclose()
            await server.aclose()

    return run_own_time(main)


def test_pings_keep_alive_fails_a_server_whose_idle_clock_does_not_hear_pings() -> None:
    """A server that answers pings but closes the pinging peer as idle fails ex.pings_keep_alive,
    citing §14.2, at about the idle timeout (it used to be judged after twice that)."""
    result = _run("ex.pings_keep_alive", "deaf-to-pings")
    assert result.outcome is Outcome.FAIL, result.message
    said = result.message
    assert said.startswith("a peer sending pings was closed as idle (goodbye 'idle timeout"), said
    assert "PROTOCOL.md §14.2" in result.message


def test_pings_keep_alive_fails_a_server_that_drops_the_pinging_peer_without_a_goodbye() -> None:
    """The same server closing the pinging peer without its goodbye fails too (the case looked for
    a goodbye only: an end of input passed it)."""
    result = _run("ex.pings_keep_alive", "deaf-to-pings", "no-goodbye")
    assert result.outcome is Outcome.FAIL, result.message
    assert "its input ended without a goodbye" in result.message and "§14.2" in result.message


def test_the_relay_alone_breaks_nothing() -> None:
    """Through a relay whose mode touches no frame of the case, the case passes: what fails above is
    the mode, not the relay."""
    assert _run("ex.pings_keep_alive", "ignores-cancel").outcome is Outcome.PASS
