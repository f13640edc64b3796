"""The JVM scenarios (``benchmarks/net_jvm.py``): their shape, their tables and when the bench jar is rebuilt.

``python benchmarks/run.py jvm jvm-memory --quick`` runs them for real (about 2 minutes, a Maven
build the first time); they need a JDK and Maven, so the CI smoke test leaves them out.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import net_jvm
import pytest
from _scenarios import SCENARIOS
from _tables import render_scenario


def test_every_rstreams_java_row_has_its_rsocket_java_row_and_target() -> None:
    for quick in (True, False):
        scenario = SCENARIOS["jvm"](quick)
        by_name = {c.name: c for c in scenario.contestants}
        for size in ("w256", "64k"):
            ours, theirs = by_name[f"rstreams-java-{size}"], by_name[f"rsocket-java-{size}"]
            assert (ours.name, theirs.name, 1.0) in scenario.targets
            assert (ours.name, theirs.name) in scenario.ratios
            # the same element size, count and window on both sides, only the library differs
            assert [a for a in theirs.args if a not in ("--impl", "rsocket")] == ours.args
            assert "--server" in by_name[f"rstreams-java-python-{size}"].args
        assert all(c.env == "rs" for c in scenario.contestants)
        assert scenario.check == ["net_jvm.py", "--check"]
        memory = SCENARIOS["jvm-memory"](quick)
        assert [c.name for c in memory.contestants] == ["rstreams-java", "rsocket-java"]
        assert memory.check == scenario.check and not memory.higher_is_better


def test_the_jvm_table_says_whether_the_targets_were_met() -> None:
    scenario = SCENARIOS["jvm"](False)
    rates = {"rstreams-java-w256": 900e3, "rsocket-java-w256": 300e3, "rstreams-java-64k": 9e3}
    rates["rsocket-java-64k"] = 10e3
    contestants: list[dict[str, Any]] = []
    for c in scenario.contestants:
        run = {"rate": rates.get(c.name, 100e3), "mbps": 1.0}
        contestants.append({"name": c.name, "label": c.label, "env": c.env, "args": c.args, "runs": [run]})
    table = render_scenario(scenario, {"repeats": 1, "warmup": 0, "skipped": {}, "contestants": contestants})
    assert "| rstreams-java-w256 / rsocket-java-w256 >= 1.00x | 3.00x | 3.00x | 3.00x | yes |" in table
    assert "| rstreams-java-64k / rsocket-java-64k >= 1.00x | 0.90x | 0.90x | 0.90x | **no** |" in table


def test_the_bench_jar_is_rebuilt_when_a_source_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    java = tmp_path / "java"
    source = java / "src" / "main" / "Binding.java"
    bench = java / "bench"
    jar = bench / "target" / "rstreams-java-bench.jar"
    classpath = bench / "target" / "classpath.txt"
    for path in (java / "pom.xml", bench / "pom.xml", source, bench / "src" / "Main.java"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x", encoding="utf-8")
        os.utime(path, (1_000, 1_000))
    monkeypatch.setattr(net_jvm, "JAVA_DIR", java)
    monkeypatch.setattr(net_jvm, "BENCH_DIR", bench)
    monkeypatch.setattr(net_jvm, "JAR", jar)
    monkeypatch.setattr(net_jvm, "CLASSPATH", classpath)
    assert net_jvm.stale()  # no jar yet
    for path in (jar, classpath):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x", encoding="utf-8")
        os.utime(path, (2_000, 2_000))
    assert not net_jvm.stale()
    os.utime(source, (3_000, 3_000))  # the binding changed after the build
    assert net_jvm.stale()
