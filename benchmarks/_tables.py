"""Markdown for one scenario (median/min/max, paired ratios) and the combined README."""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _scenarios import SCENARIOS, ScenarioDef

__all__ = ["fmt", "paired", "render_readme", "render_scenario"]


def fmt(value: float, unit: str) -> str:
    if unit in ("el/s", "rt/s", "rows/s"):
        if value >= 1e6:
            return f"{value / 1e6:.2f} M"
        if value >= 1e3:
            return f"{value / 1e3:.1f} k"
        return f"{value:.0f}"
    if unit in ("B", "el"):
        return f"{value:,.0f}"
    if unit in ("MB/s", "µs", "ms"):
        return f"{value:,.0f}" if value >= 10 else f"{value:.2f}"
    return f"{value:.1f}"


def _values(contestant: dict[str, Any], key: str) -> list[float | None]:
    return [run.get(key) if "error" not in run else None for run in contestant["runs"]]


def paired(a: dict[str, Any], b: dict[str, Any], key: str) -> list[float]:
    """Per-round ratios a_i / b_i over the rounds where both have a value."""
    return [x / y for x, y in zip(_values(a, key), _values(b, key), strict=False) if x is not None and y]


def render_scenario(scenario: ScenarioDef, data: dict[str, Any], heading: str = "#") -> str:
    by_name = {c["name"]: c for c in data["contestants"]}
    better = "higher is better" if scenario.higher_is_better else "lower is better"
    lines = [
        f"{heading} {scenario.title}",
        "",
        scenario.description,
        "",
        f"Measured rounds: {data['repeats']} after {data['warmup']} discarded; contestants alternate "
        f"within each round; {data.get('seconds', '?')} s in all. Column `{scenario.unit}`: {better}."
        + (f" Measured {data['measured']}." if data.get("measured") else ""),
        "",
    ]
    extras = [(k, h, u) for k, h, u in scenario.extras if any(_has(c, k) for c in data["contestants"])]
    header = f"| contestant | what | loop | version | median {scenario.unit} | min | max |"
    header += "".join(f" {h} ({u}) |" for _, h, u in extras)
    lines += [header, "|---|---|---|---|---:|---:|---:|" + "---:|" * len(extras)]
    missing: list[str] = []
    for contestant in data["contestants"]:
        values = [v for v in _values(contestant, scenario.metric) if v is not None]
        name = contestant["name"]
        if not values:
            why = data["skipped"].get(name) or next(
                (r["error"] for r in contestant["runs"] if "error" in r), "no runs"
            )
            missing.append(f"- `{name}`: not measured ({why})")
            continue
        first = next(r for r in contestant["runs"] if "error" not in r)
        label = contestant["label"].replace("|", "&#124;")
        row = (
            f"| {name} | {label} | {first.get('loop', '')} | {first.get('version', '')} "
            f"| {fmt(statistics.median(values), scenario.unit)} | {fmt(min(values), scenario.unit)} "
            f"| {fmt(max(values), scenario.unit)} |"
        )
        for key, _, unit in extras:
            got = [v for v in _values(contestant, key) if v is not None]
            row += f" {fmt(statistics.median(got), unit)} |" if got else " |"
        lines.append(row)
        failures = sum(1 for r in contestant["runs"] if "error" in r)
        if failures:
            missing.append(f"- `{name}`: {failures} run(s) failed")
    ratio_rows = []
    for a, b in scenario.ratios:
        if a in by_name and b in by_name:
            ratios = paired(by_name[a], by_name[b], scenario.metric)
            if ratios:
                mid, low, high = statistics.median(ratios), min(ratios), max(ratios)
                ratio_rows.append(f"| {a} / {b} | {mid:.2f}x | {low:.2f}x | {high:.2f}x |")
    if ratio_rows:
        lines += ["", f"| ratio of `{scenario.metric}`, paired by round | median | min | max |"]
        lines += ["|---|---:|---:|---:|", *ratio_rows]
    lines += _targets(scenario, by_name)
    if missing:
        lines += ["", *missing]
    return "\n".join(lines) + "\n"


def _targets(scenario: ScenarioDef, by_name: dict[str, Any]) -> list[str]:
    """Rows saying whether each target was met (by the median)."""
    rows = []
    for a, b, at_least in scenario.targets:
        if a not in by_name or (b and b not in by_name):
            continue
        if b:
            got = paired(by_name[a], by_name[b], scenario.metric)
            what, shown = f"{a} / {b} >= {at_least:.2f}x", [f"{v:.2f}x" for v in _spread(got)]
        else:
            got = [v for v in _values(by_name[a], scenario.metric) if v is not None]
            unit = scenario.unit
            what = f"{a} >= {fmt(at_least, unit)} {unit}"
            shown = [fmt(v, unit) for v in _spread(got)]
        if got:
            met = "yes" if statistics.median(got) >= at_least else "**no**"
            rows.append(f"| {what} | {' | '.join(shown)} | {met} |")
    if not rows:
        return []
    header = f"| target (`{scenario.metric}`) | median | min | max | met (median) |"
    return ["", header, "|---|---:|---:|---:|---|", *rows]


def _spread(values: list[float]) -> list[float]:
    return [statistics.median(values), min(values), max(values)] if values else []


def _has(contestant: dict[str, Any], key: str) -> bool:
    return any(key in run for run in contestant["runs"])


def render_readme(out: Path, info: dict[str, str], command: str, names: Sequence[str]) -> str:
    import json

    lines = [
        "# rstreams benchmarks: results",
        "",
        f"Regenerate everything: `{command}` (peers are installed into `benchmarks/.peers-venv` "
        "on first use). Raw per-run numbers: `<scenario>.json` beside this file.",
        "",
    ]
    lines += [f"- **{key}**: {value}" for key, value in info.items()]
    lines.append("")
    for name in names:
        data = json.loads((out / f"{name}.json").read_text(encoding="utf-8"))
        scenario = SCENARIOS[name](bool(data.get("quick")))
        lines.append(render_scenario(scenario, data, heading="##"))
        for png in sorted(out.glob(f"{name}*.png")):
            lines += [f"![{png.stem}]({png.name})", ""]
    return "\n".join(lines)
