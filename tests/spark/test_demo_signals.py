"""``rstreams demo`` signalled as a whole process group (``timeout(1)``, a shell's Ctrl-C) or as
every process it has (a service manager's stop), in a process of its own with a stand-in for
Spark (tests/spark/demo_signals_child.py): no JVM starts. The same with Spark for real:
tests/spark/test_demo.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from testkit import patience
from testkit.spark import kill_group

CHILD = Path(__file__).with_name("demo_signals_child.py")


def _demo(mode: str, tmp_path: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(CHILD), mode, str(tmp_path / "out")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, signalled as a whole below
    )


def _lines_until(demo: subprocess.Popen[str], start: str) -> list[str]:
    """The demo's lines up to the first that starts with ``start`` (bounded: it fails otherwise)."""
    lines: list[str] = []
    while not lines or not lines[-1].startswith(start):
        lines.append(patience.child_line(demo, repr(start)))
    return lines


@pytest.mark.timeout(120)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_spark_starts_is_announced_at_once(signum: int, tmp_path: Path) -> None:
    """SIGTERM or SIGINT to the group while Spark's session starts: a line says at once that the
    demo stops once Spark has started; it then stops as for any signal, with exit status 128 +
    the signal's number."""
    name = signal.Signals(signum).name
    demo = _demo("held", tmp_path)
    try:
        _lines_until(demo, "starting Spark's session")
        os.killpg(demo.pid, signum)
        said = _lines_until(demo, f"{name}: ")[-1]
        assert said.startswith(f"{name}: the demo stops once Spark has started (a second {name}"), said
        out, err = patience.communicate(demo, 60, given="\n")  # the session is up
    finally:
        kill_group(demo)
    assert demo.returncode == 128 + signum, (out, err)
    assert f"\n{name}: stopping the demo\n" in out and "nothing saved" in out, out
    assert err == "", err


@pytest.mark.timeout(120)
def test_a_second_signal_while_spark_starts_ends_the_demo_at_once(tmp_path: Path) -> None:
    demo = _demo("held", tmp_path)
    try:
        _lines_until(demo, "starting Spark's session")
        os.killpg(demo.pid, signal.SIGTERM)
        _lines_until(demo, "SIGTERM: ")
        os.killpg(demo.pid, signal.SIGINT)  # the session never comes up
        out, err = patience.communicate(demo, 60)
    finally:
        kill_group(demo)
    assert demo.returncode == 143, (out, err)
    assert err == "rstreams demo: SIGINT again: stopped at once\n", err


@pytest.mark.timeout(120)
def test_a_sigterm_that_ends_the_jvm_too_stops_the_demo_cleanly(tmp_path: Path) -> None:
    """SIGTERM reaches the "JVM" too, inside a call into it, which then fails as Py4J's does
    (connection refused): the demo says the JVM has ended, asks nothing more of Spark, and
    exits with 143, not with the call's error and status 1. (The JVM ignores SIGINT.)"""
    demo = _demo("failing", tmp_path)
    try:
        _lines_until(demo, "starting the query")
        os.killpg(demo.pid, signal.SIGTERM)
        out, err = patience.communicate(demo, 60)
    finally:
        kill_group(demo)
    assert demo.returncode == 143, (out, err)
    assert "\nSIGTERM: stopping the demo\n(Spark's JVM has ended: the SIGTERM reached it too" in out, out
    assert "nothing saved" in out and "Connection refused" not in out + err, (out, err)
    assert err == "", err
