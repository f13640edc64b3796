"""The client conformance suite, run for real: rstreams' own client passes, broken ones fail.

Each case starts the adapter as a real process and plays the server on loopback; nothing is
mocked. The broken adapter (tests/conformance/broken_client.py) proves that the suite catches
the rules it claims to check, with the section in the message.

Every wait in these cases ends at an event: the adapter's connection or exit, a frame, the end
of its input. The suite's deadlines are hang guards of own time (its defaults, on
``rstreams.conformance._own_time.OwnTimeLoop`` as the command runs it: the seconds this process
and the adapter waited for a CPU do not count), and each test's own timeout bounds the whole;
the one test that judges by a deadline waits for a frame that never comes.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shlex
import sys
from pathlib import Path

import pytest

from rstreams.conformance._own_time import OwnTimeLoop
from rstreams.conformance._runner import CaseResult, Outcome
from rstreams.conformance.clients import CLIENT_CASES, Options, main, run_clients

HERE = Path(__file__).resolve().parent
PYTHON_ADAPTER = f"{sys.executable} -m rstreams.conformance.adapter {{url}} {{publisher}} {{script}}"
PATIENT = Options()


def run_suite(command: str, options: Options, pattern: str | None = None) -> list[CaseResult]:
    """``run_clients`` on the loop the command runs it on (deadlines of own time)."""
    with asyncio.Runner(loop_factory=OwnTimeLoop) as runner:
        return runner.run(run_clients(command, options, pattern=pattern))


def _broken(mode: str) -> str:
    return f"{sys.executable} {HERE / 'broken_client.py'} {mode} {{url}} {{publisher}} {{script}}"


@pytest.mark.timeout(600)  # 13 adapter processes: about 8 s each to start on a machine loaded 6-fold
def test_rstreams_client_passes_every_case() -> None:
    """rstreams' own client, through its adapter, passes all client cases over TCP."""
    results = run_suite(PYTHON_ADAPTER, PATIENT)
    failed = [f"{r.case.id}: {r.message}" for r in results if r.outcome is not Outcome.PASS]
    assert len(results) == len(CLIENT_CASES) >= 13
    assert not failed, failed


@pytest.mark.timeout(300)
def test_rstreams_client_passes_over_websocket() -> None:
    """The same cases with the scripted server speaking WebSocket (a sample, to keep it short)."""
    results = run_suite(PYTHON_ADAPTER, dataclasses.replace(PATIENT, transport="ws"), pattern="client.s*")
    assert len(results) >= 3
    failed = [f"{r.case.id}: {r.message}" for r in results if r.outcome is not Outcome.PASS]
    assert not failed, failed


@pytest.mark.timeout(60)
def test_a_greedy_client_fails_the_demand_case() -> None:
    """A client that grants 10 when its subscriber asked for 3 fails client.demand_adds_up, citing §6.1."""
    (result,) = run_suite(_broken("greedy"), PATIENT, pattern="client.demand_adds_up")
    assert result.outcome is Outcome.FAIL
    assert "§6.1" in result.message and "granted 10" in result.message


@pytest.mark.timeout(60)
def test_a_deaf_client_fails_the_goodbye_and_demand_cases() -> None:
    """A client that ignores goodbyes and accepts elements beyond demand fails those cases."""
    results = run_suite(_broken("deaf"), PATIENT, pattern="client.[bs]e*")
    by_id = {r.case.id: r for r in results}
    assert sorted(by_id) == ["client.beyond_demand_is_refused", "client.server_goodbye"]
    beyond, goodbye = by_id["client.beyond_demand_is_refused"], by_id["client.server_goodbye"]
    assert beyond.outcome is Outcome.FAIL and goodbye.outcome is Outcome.FAIL
    assert "closed without a goodbye (the second element was beyond demand)" in beyond.message
    assert "closed without a goodbye (answer to the server's goodbye)" in goodbye.message


@pytest.mark.timeout(60)
def test_an_adapter_that_exits_before_connecting_fails_at_once() -> None:
    """Its exit ends the wait for its connection (no deadline is waited out), its stderr in the message."""
    crash = shlex.join([sys.executable, "-c", "import sys; sys.exit('no client here')"])
    options = dataclasses.replace(PATIENT, start_timeout=3600.0)
    (result,) = run_suite(f"{crash} {{url}} {{publisher}} {{script}}", options, pattern="client.packed*")
    assert result.outcome is Outcome.FAIL
    assert "the adapter exited with 1 before its connection was accepted: no client here" in result.message


@pytest.mark.timeout(60)
def test_the_adapters_start_up_is_not_judged_by_the_frame_deadline() -> None:
    """An adapter slower to start than the frame deadline is waited for; then its silence fails.

    The deadline of a frame (0.1 s here) starts at the connection: the slow-mute adapter
    connects at least 0.5 s after its start and then sends nothing, so the case fails waiting
    for its clientHello, never for its connection.
    """
    options = dataclasses.replace(PATIENT, timeout=0.1)
    (result,) = run_suite(_broken("slow-mute"), options, pattern="client.packed*")
    assert result.outcome is Outcome.FAIL
    assert result.message.startswith("timed out waiting for the clientHello from the client"), result.message


@pytest.mark.timeout(120)
def test_command_line_writes_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`python -m rstreams.conformance.clients --client ... --junit F` reports per case and exits 0."""
    junit = tmp_path / "clients.xml"
    status = main(["--client", PYTHON_ADAPTER, "--junit", str(junit), "-k", "client.packed*"])
    assert status == 0
    assert "1 of 1 client cases passed" in capsys.readouterr().out
    assert 'name="client.packed_elements"' in junit.read_text()


def test_command_line_refuses_a_client_without_url() -> None:
    """An adapter command without {url} is a usage error naming the placeholder (one without
    {publisher} or {script} too: a parametrised case of the one-line usage errors below)."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--client", "my-adapter {publisher} {script}"])
    assert exit_info.value.code == 2


CLIENTS = "python -m rstreams.conformance.clients"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "the following arguments are required: --client"),
        (["--client", PYTHON_ADAPTER, "--zzz"], "unrecognized arguments: --zzz"),
        (
            ["--client", PYTHON_ADAPTER, "--start-timout", "9"],
            "unrecognized arguments: --start-timout 9; did you mean --start-timeout?",
        ),
        (["--client", PYTHON_ADAPTER, "--timeout", "x"], "argument --timeout: invalid float value: 'x'"),
        (
            ["--client", "my-adapter {publisher}"],
            "--client must contain {url}, {publisher} and {script}, filled in per case; "
            "{url} and {script} missing",
        ),
        (
            ["--client", "my-adapter {url} {script}"],
            "--client must contain {url}, {publisher} and {script}, filled in per case; {publisher} missing",
        ),
        (["--client", PYTHON_ADAPTER, "--case-timeout", "0"], "--case-timeout needs seconds > 0, got 0.0"),
    ],
)
def test_a_usage_error_is_one_line(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    """As `rstreams conformance`: the error, a near option, where the usage is; not the usage block."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"{CLIENTS}: {says} (see {CLIENTS} --help)\n"


def test_list_needs_no_client(capsys: pytest.CaptureFixture[str]) -> None:
    """`--list` runs nothing, so it needs no adapter command (docs/conformance.md names it as
    an option of its own)."""
    assert main(["--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == [case.id for case in CLIENT_CASES]


def test_the_help_states_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())
    for option, metavar, default in [
        ("--transport", "{tcp,ws}", "tcp"),
        ("--timeout", "TIMEOUT", str(Options.timeout)),
        ("--start-timeout", "START_TIMEOUT", str(Options.start_timeout)),
        ("--case-timeout", "CASE_TIMEOUT", str(Options.case_timeout)),
    ]:
        after = shown.partition(f"{option} {metavar} ")[2]
        assert after.partition("(default: ")[2].startswith(default + ")"), (option, after[:120])
