"""Run the benchmarks: rstreams and its peers alternately, tables, ratios and plots.

    python benchmarks/run.py                      # every scenario, 3 measured rounds each
    python benchmarks/run.py stream-small latency --repeats 5
    python benchmarks/run.py --quick              # every scenario tiny (CI smoke, < 60 s)
    python benchmarks/run.py --quick --no-peers inprocess scale   # no peers venv needed

How it measures (see benchmarks/README.md):

* Every contestant is a fresh process (client pinned to CPU1 with ``taskset``; network
  servers are its child pinned to CPU0), which does its own warm-up run and then one
  measured run, and prints one JSON line.
* A scenario's contestants run in rounds, A B C A B C ...: the first ``--warmup`` rounds
  are discarded, then ``--repeats`` rounds are kept. The table shows median, min and max;
  a ratio A / B is the median (min, max) of the per-round ratios A_i / B_i, so the two
  numbers of every pair were measured back to back, in the same load.
* rstreams runs in rstreams' own venv (the interpreter running this script); the peers
  (rsocket-py 0.4.20, reactivex, aiostream, uvloop, matplotlib) in benchmarks/.peers-venv,
  which this script creates and fills on first use (see ``_peers.py``).

Writes benchmarks/results/<scenario>.md and .json, benchmarks/results/README.md (all
tables, the machine, versions, date, load) and PNG plots (made with matplotlib in the peers
venv). ``--quick`` writes to benchmarks/results/quick/ instead (or ``--out``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _harness import load_average, machine_info, quiet_verdict, write_report  # noqa: E402
from _peers import PEERS_VENV, ensure_peers_venv  # noqa: E402
from _scenarios import SCENARIOS, Contestant, ScenarioDef  # noqa: E402
from _tables import render_readme, render_scenario  # noqa: E402

RESULTS = HERE / "results"


def _python(env: str, peers: Path | None) -> str | None:
    if env == "rs":
        return sys.executable
    return str(peers) if peers is not None else None


def _can_pin(cpu: int) -> bool:
    """``taskset -c cpu`` works here: the CPU exists and this process may use it."""
    if cpu < 0 or not shutil.which("taskset") or not hasattr(os, "sched_getaffinity"):
        return False
    return cpu in os.sched_getaffinity(0)


def _command(contestant: Contestant, python: str, cpu: int) -> list[str]:
    command = [python, str(HERE / contestant.script), *contestant.args]
    if _can_pin(cpu):
        command = ["taskset", "-c", str(cpu), *command]
    return command


def run_one(contestant: Contestant, python: str, cpu: int, timeout: float) -> dict[str, Any]:
    """One fresh process; its last stdout line is the JSON result. Errors become ``{"error": ...}``."""
    command = _command(contestant, python, cpu)
    started = time.perf_counter()
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=HERE)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["(no stderr)"])[-1]
        return {"error": f"exit {done.returncode}: {tail[:300]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    result["wall_s"] = round(time.perf_counter() - started, 3)
    return result


def run_scenario(
    scenario: ScenarioDef,
    *,
    repeats: int,
    warmup: int,
    peers: Path | None,
    cpu: int,
    say: Callable[[str], None],
) -> dict[str, Any]:
    """Alternate the contestants for ``warmup + repeats`` rounds; the kept rounds per contestant."""
    repeats = scenario.repeats if scenario.repeats is not None else repeats
    warmup = scenario.warmup if scenario.warmup is not None else warmup
    runs: dict[str, list[dict[str, Any]]] = {c.name: [] for c in scenario.contestants}
    skipped: dict[str, str] = {}
    for contestant in scenario.contestants:
        if _python(contestant.env, peers) is None:
            skipped[contestant.name] = "peers venv not used (--no-peers)"
        elif contestant.needs and not _importable(_python(contestant.env, peers), contestant.needs):
            skipped[contestant.name] = f"{contestant.needs} is not installed in its venv"
    why = _preflight(scenario)
    if why:
        say(f"{scenario.name}: skipped: {why}")
        skipped.update({c.name: why for c in scenario.contestants if c.name not in skipped})
    if not scenario.pin:
        cpu = -1
    active = [c for c in scenario.contestants if c.name not in skipped]
    for round_no in range(warmup + repeats):
        kept = round_no >= warmup
        for contestant in active:
            python = _python(contestant.env, peers)
            assert python is not None
            result = run_one(contestant, python, cpu, scenario.timeout)
            if "error" in result:
                say(f"  {scenario.name}/{contestant.name}: {result['error']}")
            if kept:
                runs[contestant.name].append(result)
        say(f"{scenario.name}: {'round' if kept else 'warm-up'} {round_no + 1}/{warmup + repeats} done")
    return {
        "scenario": scenario.name,
        "repeats": repeats,
        "warmup": warmup,
        "contestants": [
            {"name": c.name, "label": c.label, "env": c.env, "args": c.args, "runs": runs[c.name]}
            for c in scenario.contestants
        ],
        "skipped": skipped,
    }


def _preflight(scenario: ScenarioDef) -> str:
    """Why ``scenario`` cannot run here ("" if it can): its ``check`` script, in rstreams' venv."""
    if not scenario.check:
        return ""
    command = [sys.executable, str(HERE / scenario.check[0]), *scenario.check[1:]]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=HERE)
    except subprocess.TimeoutExpired:
        return f"{scenario.check[0]} --check timed out"
    if done.returncode == 0:
        return ""
    return (done.stderr.strip().splitlines() or [f"{scenario.check[0]} exited {done.returncode}"])[-1]


_import_cache: dict[tuple[str, str], bool] = {}


def _importable(python: str | None, module: str) -> bool:
    key = (str(python), module)
    if key not in _import_cache:
        done = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, timeout=60)
        _import_cache[key] = done.returncode == 0
    return _import_cache[key]


def _peer_versions(peers: Path | None) -> str:
    if peers is None:
        return "peers venv not used"
    code = (
        "import importlib.metadata as m, sys\n"
        "names = ['rsocket', 'reactivex', 'aiostream', 'uvloop', 'matplotlib']\n"
        "print(f'Python {sys.version.split()[0]}; ' + ', '.join(f'{n} {m.version(n)}' for n in names))"
    )
    done = subprocess.run([str(peers), "-c", code], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or done.stderr.strip()[-200:]


def _rstreams_commit() -> str:
    """The commit the rstreams side ran from (rstreams is changing while we measure)."""
    root = HERE.parent
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10, cwd=root
        ).stdout.strip()
        status = ["git", "status", "--porcelain", "--", "src"]
        dirty = subprocess.run(status, capture_output=True, text=True, timeout=10, cwd=root).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{head}{' + uncommitted changes in src/' if dirty else ''}" if head else "unknown"


def make_plots(out: Path, peers: Path | None, say: Callable[[str], None]) -> None:
    """PNG plots with matplotlib, run in the peers venv (where matplotlib lives)."""
    python = str(peers) if peers is not None else sys.executable
    if not _importable(python, "matplotlib"):
        say("plots skipped: matplotlib is not installed where the plots would run")
        return
    done = subprocess.run(
        [python, str(HERE / "_plots.py"), str(out)], capture_output=True, text=True, timeout=300
    )
    if done.returncode != 0:
        say(f"plots failed: {done.stderr.strip()[-500:]}")
    elif done.stdout.strip():
        say(done.stdout.strip())


def main(argv: Sequence[str] | None = None) -> int:
    names = list(SCENARIOS)
    parser = argparse.ArgumentParser(
        prog="rstreams bench",
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="scenarios: " + ", ".join(names),
    )
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO", help="default: all")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, 1 round, no warm-up (CI smoke)")
    parser.add_argument("--repeats", type=int, default=3, help="measured rounds (default 3)")
    parser.add_argument("--warmup", type=int, default=1, help="discarded rounds first (default 1)")
    parser.add_argument("--no-peers", action="store_true", help="run only what needs no peers venv")
    parser.add_argument(
        "--no-plots",
        action="store_true",
        help="write the tables and README, not the PNG plots (made with matplotlib)",
    )
    parser.add_argument(
        "--cpu", type=int, default=1, help="CPU for the client/in-process side; -1: no pinning"
    )
    parser.add_argument("--out", type=Path, default=None, help="results directory")
    parser.add_argument(
        "--render-only", action="store_true", help="rewrite tables, README and plots from the saved JSON"
    )
    args = parser.parse_args(argv)
    unknown = [s for s in args.scenarios if s not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenario(s) {unknown}; choose from {names}")
    if args.repeats < 1:
        parser.error(f"--repeats needs an integer >= 1 (the rounds measured), got {args.repeats}")
    if args.warmup < 0:
        parser.error(f"--warmup needs an integer >= 0, got {args.warmup}")
    chosen = args.scenarios or names
    out = args.out or (RESULTS / "quick" if args.quick else RESULTS)
    if args.quick:
        args.repeats, args.warmup = 1, 0

    def say(line: str) -> None:
        print(line, file=sys.stderr, flush=True)

    if args.render_only:
        return render_only(out, None if args.no_peers else ensure_peers_venv(say), args.no_plots, say)
    peers = None if args.no_peers else ensure_peers_venv(say)
    load_before = load_average()
    pinning = (
        f"client/in-process side: taskset -c {args.cpu}; network servers: taskset -c 0"
        if _can_pin(args.cpu) and _can_pin(0)
        else "not pinned (fewer than 2 usable CPUs, no taskset, or --cpu -1)"
    )
    say(f"results go to {out}; {pinning}; peers venv: {PEERS_VENV if peers else 'not used'}")
    out.mkdir(parents=True, exist_ok=True)
    commit = _rstreams_commit()
    for name in chosen:
        scenario = SCENARIOS[name](args.quick)
        scenario_load_before = load_average()
        started = time.perf_counter()
        data = run_scenario(
            scenario, repeats=args.repeats, warmup=args.warmup, peers=peers, cpu=args.cpu, say=say
        )
        data["seconds"] = round(time.perf_counter() - started, 1)
        data["quick"] = args.quick
        scenario_load_after = load_average()
        data["quiet"] = quiet_verdict(scenario_load_before, scenario_load_after)
        data["measured"] = (
            f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load before {scenario_load_before}, "
            f"after {scenario_load_after} (1/5/15 min); quiet: {data['quiet']}; rstreams commit {commit}"
        )
        if data["quiet"].startswith("NO"):
            say(f"{name}: {data['quiet']}")
        (out / f"{name}.json").write_text(json.dumps(data, indent=1), encoding="utf-8")
        table = render_scenario(scenario, data)
        write_report(out / f"{name}.md", table)
        print(table, flush=True)
    if any(not SCENARIOS[name](args.quick).pin for name in chosen):
        pinning += "; spark: not pinned (Spark's local[2] uses both CPUs)"
    info = machine_info(pinning, ["rstreams", "uvloop", "pyspark", "pyarrow"], load_before)
    info["peers venv"] = _peer_versions(peers)
    info["rstreams commit"] = commit
    info["command"] = "python benchmarks/run.py" + (" --quick" if args.quick else "")
    info["scenarios run"] = ", ".join(chosen)
    info = _merge_machine(out / "machine.json", info, chosen)
    (out / "machine.json").write_text(json.dumps(info, indent=1), encoding="utf-8")
    return render_only(out, peers, args.no_plots, say)


def _merge_machine(path: Path, info: dict[str, str], chosen: Sequence[str]) -> dict[str, str]:
    """A run of some scenarios keeps the earlier run's date and load for the others.

    The earlier info stays; this run is added under "later runs" (each scenario's own
    section also says when it was measured), and the machine, versions and pinning are this run's.
    """
    if set(chosen) == set(SCENARIOS) or not path.exists():
        return info
    old: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    earlier = [s.strip() for s in old.get("scenarios run", "").split(",") if s.strip() not in chosen]
    if not earlier:
        return info
    merged = dict(old)
    merged["scenarios run"] = ", ".join(earlier)
    later = [
        r for r in old.get("later runs", "").split(" | ") if r and r.split(":")[0] != info["scenarios run"]
    ]
    later.append(
        f"{info['scenarios run']}: {info['date']}, load {info['load']}, rstreams commit "
        f"{info['rstreams commit']}, packages {info['packages']}, cpu {info['cpu']}"
    )
    merged["later runs"] = " | ".join(later)
    merged["command"] = info["command"]
    return merged


def render_only(out: Path, peers: Path | None, no_plots: bool, say: Callable[[str], None]) -> int:
    """Tables, README and plots from ``out``'s JSON files (what a run saved)."""
    info: dict[str, str] = json.loads((out / "machine.json").read_text(encoding="utf-8"))
    command = info.pop("command", "python benchmarks/run.py")
    names = [s for s in SCENARIOS if (out / f"{s}.json").exists()]
    for name in names:
        data = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        write_report(out / f"{name}.md", render_scenario(SCENARIOS[name](bool(data.get("quick"))), data))
    if not no_plots:
        make_plots(out, peers, say)
    write_report(out / "README.md", render_readme(out, info, command, names))
    say(f"wrote {out / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
