"""The spark scenario's plumbing, without starting Spark (that costs ~20 s per process).

``python benchmarks/run.py spark --quick`` runs it for real (about 2 minutes: four Spark starts);
it is left out of the CI smoke test for that reason.
"""

from __future__ import annotations

import json
from pathlib import Path

import run
from _scenarios import SCENARIOS, ScenarioDef
from _tables import render_scenario


def _runs(value: float) -> list[dict[str, float]]:
    return [{"steady_rows_per_s": value, "e2e_rows_per_s": value / 2, "median_batch_ms": 300.0}]


def test_spark_scenario_shape() -> None:
    for quick in (True, False):
        scenario = SCENARIOS["spark"](quick)
        names = [c.name for c in scenario.contestants]
        assert names == [
            "rstreams-arrow",
            "python-inprocess",
            "rate-micro-batch",
            "rstreams-json",
            "rstreams-msgpack",
            "rstreams-sink-json",
            "rstreams-sink-arrow",
            "rstreams-servers-1",
            "rstreams-servers-3",
        ]
        assert not scenario.pin
        assert all(c.env == "rs" and c.needs == "pyspark" for c in scenario.contestants)
        assert ("rstreams-arrow", "python-inprocess", 0.70) in scenario.targets
        assert ("rstreams-json", "rstreams-arrow", 0.5) in scenario.targets
        assert ("rstreams-msgpack", "", 1e6) in scenario.targets


def test_targets_rendered() -> None:
    scenario = SCENARIOS["spark"](False)
    runs = {
        "rstreams-arrow": 2.4e6,
        "python-inprocess": 3.0e6,
        "rate-micro-batch": 4e6,
        "rstreams-json": 1.5e6,
        "rstreams-msgpack": 1e5,
        "rstreams-sink-json": 2e5,
        "rstreams-sink-arrow": 1.2e6,
        "rstreams-servers-1": 2.0e6,
        "rstreams-servers-3": 1.5e6,
    }
    data = {
        "repeats": 1,
        "warmup": 0,
        "skipped": {},
        "contestants": [
            {"name": c.name, "label": c.label, "env": c.env, "args": c.args, "runs": _runs(runs[c.name])}
            for c in scenario.contestants
        ],
    }
    table = render_scenario(scenario, data)
    assert "| rstreams-arrow / python-inprocess >= 0.70x | 0.80x | 0.80x | 0.80x | yes |" in table
    assert "| rstreams-arrow >= 2.00 M rows/s | 2.40 M | 2.40 M | 2.40 M | yes |" in table
    assert "| rstreams-arrow | " in table
    assert "| rstreams-json >= 1.00 M rows/s | 1.50 M | 1.50 M | 1.50 M | yes |" in table
    assert "| rstreams-msgpack / rstreams-arrow >= 0.50x | 0.04x | 0.04x | 0.04x | **no** |" in table
    assert "| rstreams-sink-arrow >= 1.00 M rows/s | 1.20 M | 1.20 M | 1.20 M | yes |" in table
    assert "| rstreams-servers-3 / rstreams-servers-1 | 0.75x |" in table


def test_failed_check_skips_the_scenario_with_its_reason() -> None:
    base = SCENARIOS["spark"](True)
    scenario = ScenarioDef(
        name="spark",
        title=base.title,
        description=base.description,
        metric=base.metric,
        unit=base.unit,
        contestants=base.contestants,
        check=["no_such_check_script.py"],
    )
    said: list[str] = []
    data = run.run_scenario(scenario, repeats=1, warmup=0, peers=None, cpu=-1, say=said.append)
    assert set(data["skipped"]) == {c.name for c in base.contestants}
    assert all("no_such_check_script.py" in why for why in data["skipped"].values())
    assert any("skipped" in line for line in said)
    assert all(c["runs"] == [] for c in data["contestants"])


def test_machine_info_kept_for_scenarios_not_rerun(tmp_path: Path) -> None:
    path = tmp_path / "machine.json"
    old = {"date": "earlier", "load": "1 / 1 / 1", "scenarios run": "inprocess, spark", "packages": "x"}
    path.write_text(json.dumps(old), encoding="utf-8")
    new = {
        "date": "now",
        "load": "2 / 2 / 2",
        "scenarios run": "spark",
        "rstreams commit": "abc",
        "packages": "y",
        "cpu": "z",
        "command": "python benchmarks/run.py",
    }
    merged = run._merge_machine(path, new, ["spark"])
    assert merged["date"] == "earlier" and merged["scenarios run"] == "inprocess"
    assert merged["later runs"].startswith("spark: now, load 2 / 2 / 2")
