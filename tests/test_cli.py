"""The `rstreams` command dispatches the conformance suite and the benchmarks."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rstreams.cli import main


@pytest.mark.timeout(30)
def test_conformance_help_is_the_suites_own(capsys: pytest.CaptureFixture[str]) -> None:
    """`rstreams conformance --help` shows the conformance driver's options."""
    with pytest.raises(SystemExit) as exit_info:
        main(["conformance", "--help"])
    assert exit_info.value.code == 0
    assert "--junit" in capsys.readouterr().out


@pytest.mark.timeout(60)
def test_bench_help_runs_the_benchmarks_script() -> None:
    """`rstreams bench --help` reaches benchmarks/run.py of this checkout."""
    done = subprocess.run(
        [sys.executable, "-m", "rstreams.cli", "bench", "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=50,
    )
    assert done.returncode == 0, done.stderr
    assert "--quick" in done.stdout


@pytest.mark.timeout(30)
def test_conformance_against_nothing_listening_exits_2() -> None:
    """An unreachable endpoint is reported as such (exit 2), not as failed cases."""
    assert main(["conformance", "tcp://127.0.0.1:9", "-k", "handshake", "--timeout", "2"]) == 2
