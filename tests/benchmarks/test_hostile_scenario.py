"""The hostile scenario (``benchmarks/net_hostile.py``): its shape, its table, and every attack runs.

No speed assertions: each attack runs once, tiny, and the test checks that the legitimate
stream and the attack both happened and that the server's RSS was sampled.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from _scenarios import SCENARIOS
from _tables import render_scenario
from net_hostile import ATTACKS

from testkit import patience

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"


def test_hostile_scenario_pairs_every_attack_with_the_stream_alone() -> None:
    for quick in (True, False):
        scenario = SCENARIOS["hostile"](quick)
        names = [c.name for c in scenario.contestants]
        assert names == [f"rstreams-{attack}" for attack in ATTACKS]
        assert all(c.env == "rs" and c.script == "net_hostile.py" for c in scenario.contestants)
        assert scenario.ratios == [(name, "rstreams-alone") for name in names[1:]]
        assert ("rstreams-subscribe-flood", "rstreams-alone", 0.5) in scenario.targets
        assert scenario.plot == "hostile"


def test_hostile_table_shows_the_ratios_and_the_memory() -> None:
    scenario = SCENARIOS["hostile"](False)
    contestants = []
    for c in scenario.contestants:
        rate = 100_000.0 if c.name == "rstreams-alone" else 25_000.0
        run: dict[str, Any] = {"rate": rate, "growth_mib": 40.0, "peak_mib": 70.0, "attack_mib": 3.0}
        contestants.append({"name": c.name, "label": c.label, "env": c.env, "args": c.args, "runs": [run]})
    table = render_scenario(scenario, {"repeats": 1, "warmup": 0, "skipped": {}, "contestants": contestants})
    assert "| rstreams-subscribe-flood / rstreams-alone | 0.25x | 0.25x | 0.25x |" in table
    assert "| rstreams-subscribe-flood / rstreams-alone >= 0.50x | 0.25x | 0.25x | 0.25x | **no** |" in table
    assert "server RSS growth (MiB)" in table and "| 40.0 |" in table


@pytest.mark.timeout(90)
@pytest.mark.parametrize("attack", ATTACKS)
def test_each_attack_runs(attack: str) -> None:
    """One tiny run per attack: it finishes, the attack happened, RSS was sampled.

    How much of the stream gets through in the 0.3 s window is measured, not asserted: on a
    loaded machine a flood can hold it at 0 for that long. Service under attack is asserted
    without a clock by tests/net/test_hostile_flood.py (the client is served during and after).
    """
    command = [sys.executable, str(BENCH / "net_hostile.py"), "client", "--attack", attack]
    command += ["--duration", "0.3", "--ramp", "0.1", "--peers", "1", "--budget", "65536"]
    command += ["--client-cpu", "-1", "--server-cpu", "-1", "--timeout", "60"]
    done = patience.run(command, 85, capture_output=True, text=True, cwd=BENCH)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["attack"] == attack and result["elements"] >= 0 and result["series"]
    if attack == "alone":
        assert result["elements"] > 0  # nothing competes with the stream: it must flow
    assert result["peak_mib"] >= result["baseline_mib"] > 0
    if attack == "alone":
        assert result["connections"] == 0
    else:
        assert result["connections"] >= 1
