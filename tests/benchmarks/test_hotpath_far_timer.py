"""``hotpath.py --far-timer``: one loop timer an hour away armed while measuring; what asyncio's
loop does for any armed timer shows in the counts (benchmarks/loop-timer.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testkit import patience

pytestmark = pytest.mark.timeout(150)  # (above its two children's 50 s of own time each)

ROOT = Path(__file__).resolve().parents[2]


def _builtin_calls(*arguments: str) -> float:
    command = [sys.executable, str(ROOT / "benchmarks" / "hotpath.py"), *arguments]
    done = patience.run(command, 50, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    line = done.stdout.strip().splitlines()[-1]
    assert line.split()[0] == arguments[0]
    return float(line.split("), ")[1].split()[0])


def test_a_far_timer_costs_the_ceiling_work_on_every_loop_turn() -> None:
    """The ceiling has no timer of its own: with one armed, its loop reads the clock for the
    poll's timeout on every turn (builtin calls counted exactly: one frame each way)."""
    plain = _builtin_calls("ceiling", "--count", "20")
    far = _builtin_calls("ceiling", "--count", "20", "--far-timer")
    assert far > plain
