"""The client conformance suite, run for real: rstreams' own client passes, broken ones fail.

Each case starts the adapter as a real process and plays the server on loopback; nothing is
mocked. The broken adapter (tests/conformance/broken_client.py) proves that the suite catches
the rules it claims to check, with the section in the message.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rstreams.conformance._runner import Outcome
from rstreams.conformance.clients import CLIENT_CASES, Options, main, run_clients

HERE = Path(__file__).resolve().parent
PYTHON_ADAPTER = f"{sys.executable} -m rstreams.conformance.adapter {{url}} {{publisher}} {{script}}"


def _broken(mode: str) -> str:
    return f"{sys.executable} {HERE / 'broken_client.py'} {mode} {{url}} {{publisher}} {{script}}"


@pytest.mark.asyncio
@pytest.mark.timeout(120)
async def test_rstreams_client_passes_every_case() -> None:
    """rstreams' own client, through its adapter, passes all client cases over TCP."""
    results = await run_clients(PYTHON_ADAPTER)
    failed = [f"{r.case.id}: {r.message}" for r in results if r.outcome is not Outcome.PASS]
    assert len(results) == len(CLIENT_CASES) >= 13
    assert not failed, failed


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_rstreams_client_passes_over_websocket() -> None:
    """The same cases with the scripted server speaking WebSocket (a sample, to keep it short)."""
    results = await run_clients(PYTHON_ADAPTER, Options(transport="ws"), pattern="client.s*")
    assert len(results) >= 3
    failed = [f"{r.case.id}: {r.message}" for r in results if r.outcome is not Outcome.PASS]
    assert not failed, failed


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_a_greedy_client_fails_the_demand_case() -> None:
    """A client that grants 10 when its subscriber asked for 3 fails client.demand_adds_up, citing §6.1."""
    (result,) = await run_clients(_broken("greedy"), Options(timeout=2), pattern="client.demand_adds_up")
    assert result.outcome is Outcome.FAIL
    assert "§6.1" in result.message and "granted 10" in result.message


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_a_deaf_client_fails_the_goodbye_and_demand_cases() -> None:
    """A client that ignores goodbyes and accepts elements beyond demand fails those cases."""
    results = await run_clients(_broken("deaf"), Options(timeout=1), pattern="client.[bs]*_*[de]")
    by_id = {r.case.id: r for r in results}
    assert by_id["client.beyond_demand_is_refused"].outcome is Outcome.FAIL
    assert "goodbye" in by_id["client.beyond_demand_is_refused"].message
    assert by_id["client.server_goodbye"].outcome is Outcome.FAIL


@pytest.mark.timeout(120)
def test_command_line_writes_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m rstreams.conformance.clients --client ... --junit F` reports per case and exits 0."""
    junit = tmp_path / "clients.xml"
    status = main(["--client", PYTHON_ADAPTER, "--junit", str(junit), "-k", "client.packed*"])
    assert status == 0
    assert "1 of 1 client cases passed" in capsys.readouterr().out
    assert 'name="client.packed_elements"' in junit.read_text()


def test_command_line_refuses_a_client_without_url() -> None:
    """An adapter command without {url} is a usage error naming the placeholder."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--client", "my-adapter {publisher} {script}"])
    assert exit_info.value.code == 2
