"""Under pytest, a breach a stream commits after its class was torn down fails the session.

teardown_class reads the class's log of late breaches once; a publisher that signals again
later (from a thread still running, or, as here, when a later test stops it) must still fail
the run, naming the class, the case and the rule. These tests run pytest in a subprocess on
a generated module, because the failure belongs to the end of that session.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from testkit import patience

ROOT = Path(__file__).resolve().parents[2]
PLUGINS_OFF = ("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:asyncio")
SPEC107 = "required_spec107_must_not_emit_further_signals_once_on_complete_has_been_signalled"

MODULE = """
from rstreams.tck import PublisherVerification, TestEnvironment
from testkit import broken_publishers as bp


class TestLateCompleter(PublisherVerification):
    def create_publisher(self, elements):
        return bp.{publisher}(elements)

    def skip_stochastic_tests(self):
        return True

    def create_env(self):
        return TestEnvironment(default_timeout=0.3, default_no_signals_timeout=0.02)


def test_later_the_publisher_is_stopped():
    # the class was torn down; its publisher now completes, once more, every subscriber it had
    for subscriber in bp.COMPLETED_EARLIER:
        subscriber.on_complete()
    bp.COMPLETED_EARLIER.clear()
"""


def run_pytest(tmp_path: Path, publisher: str) -> subprocess.CompletedProcess[str]:
    module = tmp_path / "test_late_completer.py"
    module.write_text(textwrap.dedent(MODULE.format(publisher=publisher)), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    return patience.run(
        [sys.executable, "-m", "pytest", "-q", *PLUGINS_OFF, "-k", "spec107 or later", str(module)],
        100,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )


@pytest.mark.timeout(120)
def test_a_breach_after_teardown_class_fails_the_session_naming_class_case_and_rule(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "CompletesAgainLaterPublisher")
    out = run.stdout + run.stderr
    assert run.returncode == 1, out
    assert "2 passed" in out and "1 error" in out and "warning" not in out, out
    assert "rule 1.7: on_complete() after on_complete" in out, out
    assert f"TestLateCompleter.{SPEC107}" in out, out
    assert "after the class TestLateCompleter was torn down" in out, out


@pytest.mark.timeout(120)
def test_a_correct_publisher_ends_the_session_quietly(tmp_path: Path) -> None:
    run = run_pytest(tmp_path, "SyncPublisher")
    out = run.stdout + run.stderr
    assert run.returncode == 0, out
    assert "2 passed" in out and "error" not in out and "warning" not in out, out
