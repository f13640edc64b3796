"""A small, honest benchmark harness: alternating runs, medians, paired ratios, a markdown table.

How it measures:

* Scenarios run in rounds, A B C A B C ..., so slow drift of the machine (frequency,
  noisy neighbours) hits every scenario alike instead of whichever ran last.
* The first ``warmup`` rounds are discarded; each of the next ``repeats`` rounds times
  every scenario once with :func:`time.perf_counter`, after a ``gc.collect()``.
* Every run's result is checked against the expected value: a fast wrong answer fails.
* Throughput is ``n / seconds``; the table shows median, min and max over the rounds.
* A ratio "A / B" is the median of the per-round ratios ``A_i / B_i``: each pair ran
  back to back, so the ratio is steadier than a ratio of two medians.
* The process can pin itself to one CPU (``os.sched_setaffinity``, like ``taskset -c``).
"""

from __future__ import annotations

import datetime
import gc
import importlib.metadata
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "Result",
    "Scenario",
    "load_average",
    "machine_info",
    "paired_ratio",
    "pin_cpu",
    "quiet_verdict",
    "render_markdown",
    "run_rounds",
    "version_of",
    "write_report",
]


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """One way of doing the work: ``run(n)`` returns the answer, checked against ``expected``."""

    name: str
    run: Callable[[int], object]
    label: str = ""
    version: str = ""


@dataclass(kw_only=True)
class Result:
    """The per-round throughputs (elements/second) of one scenario."""

    scenario: Scenario
    rates: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def low(self) -> float:
        return min(self.rates)

    @property
    def high(self) -> float:
        return max(self.rates)


def version_of(distribution: str) -> str:
    """The installed version of ``distribution``, or ``""``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return ""


def pin_cpu(cpu: int | None) -> str:
    """Pin this process to ``cpu`` (``None``: the last allowed CPU when there are several).

    Returns a description for the report; ``-1`` or a platform without affinity leaves
    the process unpinned.
    """
    if not hasattr(os, "sched_setaffinity"):
        return "not pinned (no sched_setaffinity on this platform)"
    allowed = sorted(os.sched_getaffinity(0))
    if cpu == -1:
        return f"not pinned (allowed CPUs {allowed})"
    if cpu is None:
        if len(allowed) < 2:
            return f"not pinned (only CPU {allowed})"
        cpu = allowed[-1]
    os.sched_setaffinity(0, {cpu})
    return f"pinned to CPU {cpu} (like taskset -c {cpu})"


def run_rounds(
    scenarios: Sequence[Scenario],
    n: int,
    expected: object,
    *,
    repeats: int,
    warmup: int,
    progress: Callable[[str], None] | None = None,
) -> list[Result]:
    """Time every scenario once per round, ``warmup + repeats`` rounds, in alternation."""
    results = [Result(scenario=s) for s in scenarios]
    for round_no in range(warmup + repeats):
        measured = round_no >= warmup
        for result in results:
            gc.collect()
            start = time.perf_counter()
            answer = result.scenario.run(n)
            seconds = time.perf_counter() - start
            if answer != expected:
                raise AssertionError(f"{result.scenario.name} answered {answer!r}, expected {expected!r}")
            if measured:
                result.rates.append(n / seconds)
        if progress is not None:
            kind = "round" if measured else "warm-up"
            progress(f"{kind} {round_no + 1}/{warmup + repeats} done")
    return results


def paired_ratio(a: Result, b: Result) -> tuple[float, float, float]:
    """Median, min and max of the per-round ratios ``a_i / b_i``."""
    ratios = [x / y for x, y in zip(a.rates, b.rates, strict=True)]
    return statistics.median(ratios), min(ratios), max(ratios)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(pinning: str, packages: Sequence[str], load_before: str) -> dict[str, str]:
    """What a reader needs to compare numbers across machines."""
    versions = ", ".join(f"{p} {version_of(p) or 'not installed'}" for p in packages)
    load_after = load_average()
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{_cpu_model()}, {os.cpu_count()} logical CPUs",
        "os": platform.platform(),
        "python": f"{platform.python_implementation()} {sys.version.split()[0]}",
        "packages": versions,
        "cpu": pinning,
        "load": f"before {load_before}; after {load_after} (1/5/15 min)",
        "quiet": quiet_verdict(load_before, load_after),
    }


QUIET_LOAD_PER_CPU = 1.0  # above this 1-minute load per CPU, other work skews every figure


def quiet_verdict(load_before: str, load_after: str) -> str:
    """Whether a run was taken on a quiet machine, judged by the 1-minute load before and after.

    A run above :data:`QUIET_LOAD_PER_CPU` per CPU at either end is marked not fit for the
    README: its ratios may still be read, but its figures must not be published.
    """
    cpus = os.cpu_count() or 1
    worst = 0.0
    for load in (load_before, load_after):
        first = load.split("/")[0].strip()
        try:
            worst = max(worst, float(first))
        except ValueError:
            return "unknown (no load average on this platform)"
    if worst > QUIET_LOAD_PER_CPU * cpus:
        return f"NO - load {worst:.2f} > {QUIET_LOAD_PER_CPU:.1f} per CPU x {cpus}: not fit for the README"
    return f"yes (1-minute load <= {worst:.2f}, {cpus} CPUs)"


def load_average() -> str:
    """The 1/5/15-minute load averages: other work on the machine skews every number."""
    if not hasattr(os, "getloadavg"):
        return "unknown"
    return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def _fmt(rate: float) -> str:
    return f"{rate / 1e6:.2f} M"


def render_markdown(
    title: str,
    description: str,
    info: dict[str, str],
    settings: str,
    results: Sequence[Result],
    ratios: Sequence[tuple[str, str]],
) -> str:
    """The report: machine, settings, one row per scenario, then the paired ratios."""
    lines = [f"# {title}", "", description, ""]
    lines += [f"- **{key}**: {value}" for key, value in info.items()]
    lines += [f"- **settings**: {settings}", ""]
    lines += ["| scenario | what | median elem/s | min | max |", "|---|---|---:|---:|---:|"]
    for r in sorted(results, key=lambda r: -r.median):
        what = r.scenario.label + (f" ({r.scenario.version})" if r.scenario.version else "")
        lines.append(f"| {r.scenario.name} | {what} | {_fmt(r.median)} | {_fmt(r.low)} | {_fmt(r.high)} |")
    by_name = {r.scenario.name: r for r in results}
    pairs = [(a, b) for a, b in ratios if a in by_name and b in by_name]
    if pairs:
        lines += ["", "| ratio (paired by round) | median | min | max |", "|---|---:|---:|---:|"]
        for a, b in pairs:
            median, low, high = paired_ratio(by_name[a], by_name[b])
            lines.append(f"| {a} / {b} | {median:.2f}x | {low:.2f}x | {high:.2f}x |")
    return "\n".join(lines) + "\n"


def write_report(path: Path, text: str) -> None:
    """Write the markdown report, creating its directory."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
