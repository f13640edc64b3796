"""Smoke test: the benchmarks still run (``run.py --quick --no-peers``). No speed assertions.

Only scenarios and contestants that need no peers venv run here, so CI never downloads
rsocket-py; the network ones start real loopback servers in child processes.

The quick run's work is fixed (tiny sizes, one round): 17 fresh contestant processes (the
network ones with a server child), each pinned to one CPU, about 15 s of CPU in all. On a quiet
machine it ends within a minute; at load 30 on 2 cores it took 4 min 20 s. Its time limit is a
hang guard only, far above both.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from testkit import patience

ROOT = Path(__file__).resolve().parents[2]
HANG = 900.0
"""Seconds after which the quick run counts as hung (not as slow: no speed is checked)."""


@pytest.mark.timeout(HANG + 60)
def test_quick_run_without_peers(tmp_path: Path) -> None:
    out = tmp_path / "results"
    command = [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--no-peers", "--no-plots"]
    command += ["--out", str(out), "inprocess", "stream-small", "request-response", "scale"]
    done = patience.run(command, HANG, capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    readme = (out / "README.md").read_text(encoding="utf-8")
    for name in ("inprocess", "stream-small", "request-response", "scale"):
        data = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        measured = [c for c in data["contestants"] if c["env"] == "rs" and c["name"] not in data["skipped"]]
        assert measured, name
        for contestant in measured:
            errors = [run["error"] for run in contestant["runs"] if "error" in run]
            assert not errors, (name, contestant["name"], errors)
            assert contestant["runs"], (name, contestant["name"])
        assert f"{name}" in readme or data["scenario"] == name
    assert "peers venv not used" in readme


def test_a_loaded_run_is_marked_unfit_for_the_readme() -> None:
    """The harness marks a run above 1.0 load per CPU (before or after) as not for publication."""
    from _harness import QUIET_LOAD_PER_CPU, quiet_verdict

    cpus = os.cpu_count() or 1
    busy = f"{QUIET_LOAD_PER_CPU * cpus + 0.5:.2f} / 0.00 / 0.00"
    calm = f"{QUIET_LOAD_PER_CPU * cpus - 0.5:.2f} / 0.00 / 0.00"
    assert quiet_verdict(calm, calm).startswith("yes")
    assert quiet_verdict(calm, busy).startswith("NO")
    assert quiet_verdict(busy, calm).startswith("NO")
