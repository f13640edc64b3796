"""PNG plots of benchmarks/results/*.json with matplotlib (run in the peers venv by run.py).

Usage: python benchmarks/_plots.py benchmarks/results
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path
from typing import Any

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _scenarios import SCENARIOS

COLOURS = {
    "rstreams": "#1f77b4",
    "rsocket-py": "#d62728",
    "ceiling": "#7f7f7f",
    "python-inprocess": "#7f7f7f",
    "rate-micro-batch": "#9467bd",
}


def _colour(name: str) -> str:
    for prefix, colour in COLOURS.items():
        if name.startswith(prefix):
            return colour
    return "#2ca02c"


def _values(contestant: dict[str, Any], key: str) -> list[float]:
    return [run[key] for run in contestant["runs"] if "error" not in run and key in run]


def bars(
    data: dict[str, Any],
    key: str,
    unit: str,
    title: str,
    path: Path,
    higher: bool,
    lines: list[tuple[float, str]] | None = None,
) -> None:
    rows = [(c["name"], _values(c, key)) for c in data["contestants"]]
    rows = [(n, v) for n, v in rows if v]
    if not rows:
        return
    rows.sort(key=lambda r: statistics.median(r[1]), reverse=not higher)
    names = [n for n, _ in rows]
    med = [statistics.median(v) for _, v in rows]
    low = [m - min(v) for m, (_, v) in zip(med, rows, strict=True)]
    high = [max(v) - m for m, (_, v) in zip(med, rows, strict=True)]
    fig, ax = plt.subplots(figsize=(8, 0.45 * len(rows) + 1.4))
    ax.barh(names, med, xerr=[low, high], color=[_colour(n) for n in names], capsize=3)
    ax.invert_yaxis()
    log = max(med) / max(min(med), 1e-9) > 50
    if log:
        ax.set_xscale("log")
    ax.set_xlabel(
        f"{unit} (median, whiskers min..max{', log scale' if log else ''}; "
        f"{'higher' if higher else 'lower'} is better)"
    )
    for value, text in lines or []:
        ax.axvline(value, color="black", linestyle="--", linewidth=0.8, label=text)
    if lines:
        ax.legend(fontsize=8, loc="upper right")
    ax.set_title(title, fontsize=10)
    for y, m in enumerate(med):
        ax.text(m, y, f" {m:,.0f}" if m >= 10 else f" {m:.2f}", va="center", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def latency(data: dict[str, Any], title: str, path: Path) -> None:
    rows = [(c["name"], _values(c, "p50_us"), _values(c, "p99_us")) for c in data["contestants"]]
    rows = [r for r in rows if r[1] and r[2]]
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.4))
    ys = range(len(rows))
    ax.barh([y - 0.2 for y in ys], [statistics.median(r[1]) for r in rows], height=0.4, label="p50")
    ax.barh([y + 0.2 for y in ys], [statistics.median(r[2]) for r in rows], height=0.4, label="p99")
    ax.set_yticks(list(ys), [r[0] for r in rows])
    ax.invert_yaxis()
    ax.set_xlabel("µs per round trip (median over rounds; lower is better)")
    ax.set_title(title, fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def memory(data: dict[str, Any], title: str, path: Path) -> None:
    fig, ax = plt.subplots(figsize=(8, 4))
    for contestant in data["contestants"]:
        for run in contestant["runs"]:
            if "series" in run:
                base = run["baseline_mib"]
                ax.plot(
                    [t for t, _ in run["series"]],
                    [m - base for _, m in run["series"]],
                    label=contestant["name"],
                    color=_colour(contestant["name"]),
                )
                break
    ax.axhline(32, color="black", linestyle="--", linewidth=0.8, label="target 32 MiB")
    ax.set_xlabel("seconds since subscribe")
    ax.set_ylabel("server RSS growth (MiB)")
    ax.set_title(title, fontsize=10)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def scale(data: dict[str, Any], title: str, path: Path) -> None:
    # names are <impl>-<subs|conns>-<K>
    groups: dict[str, dict[str, list[tuple[int, dict[str, Any]]]]] = {"subs": {}, "conns": {}}
    for contestant in data["contestants"]:
        impl, kind, k = contestant["name"].rsplit("-", 2)
        if _values(contestant, "rate"):
            groups[kind].setdefault(impl, []).append((int(k), contestant))
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, (kind, impls) in zip(axes, groups.items(), strict=True):
        twin = ax.twinx()
        key = "server_b_per_sub" if kind == "subs" else "server_b_per_conn"
        for offset, (impl, rows) in enumerate(impls.items()):
            ks = [k for k, _ in rows]
            colour = _colour(impl)
            rates = [statistics.median(_values(c, "rate")) for _, c in rows]
            ax.plot(ks, rates, "o-", color=colour, label=f"{impl}: el/s")
            if kind == "subs":
                par = [statistics.median(_values(c, "parallel_rate") or [0]) for _, c in rows]
                ax.plot(ks, par, "s--", color=colour, alpha=0.6, label=f"{impl}: K streams at once")
            mem = [statistics.median(_values(c, key) or [0]) / 1024 for _, c in rows]
            shift = 1.25 if offset else 0.8
            twin.bar([k * shift for k in ks], mem, width=[k * 0.3 for k in ks], alpha=0.3, color=colour)
        ax.set_xscale("log")
        ax.set_xlabel(f"K ({'subscriptions on one connection' if kind == 'subs' else 'connections'})")
        ax.set_ylabel("elements/s (median; lines)")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=7, loc="upper right")
        twin.set_ylabel(f"server KiB per {'subscription' if kind == 'subs' else 'connection'} (bars)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def hostile(data: dict[str, Any], title: str, path: Path) -> None:
    """Left: the legitimate stream's rate beside each attack; right: the server's RSS growth."""
    rows = [(c["name"].removeprefix("rstreams-"), _values(c, "rate")) for c in data["contestants"]]
    rows = [(n, v) for n, v in rows if v]
    if not rows:
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    med = [statistics.median(v) for _, v in rows]
    low = [m - min(v) for m, (_, v) in zip(med, rows, strict=True)]
    high = [max(v) - m for m, (_, v) in zip(med, rows, strict=True)]
    left.barh([n for n, _ in rows], med, xerr=[low, high], capsize=3, color="#1f77b4")
    left.invert_yaxis()
    left.set_xlabel("legitimate stream, el/s (median, whiskers min..max)")
    left.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v / 1e3:,.0f} k"))
    for y, m in enumerate(med):
        left.text(m, y, f" {m:,.0f}", va="center", fontsize=8)
    for contestant in data["contestants"]:
        run = next((r for r in contestant["runs"] if "series" in r), None)
        if run is not None:
            base = run["baseline_mib"]
            times = [t for t, _ in run["series"]]
            growth = [m - base for _, m in run["series"]]
            right.plot(times, growth, label=contestant["name"].removeprefix("rstreams-"))
    right.axhline(16, color="black", linestyle="--", linewidth=0.8, label="issue 18: 16 MiB")
    right.set_xlabel("seconds since the attacker was started (first kept run)")
    right.set_ylabel("server RSS growth (MiB)")
    right.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main(out: Path) -> None:
    made = []
    for name, factory in SCENARIOS.items():
        source = out / f"{name}.json"
        if not source.exists():
            continue
        data = json.loads(source.read_text(encoding="utf-8"))
        scenario = factory(bool(data.get("quick")))
        path = out / f"{name}.png"
        if scenario.plot == "memory":
            memory(data, scenario.title, path)
        elif scenario.plot == "latency":
            latency(data, scenario.title, path)
        elif scenario.plot == "scale":
            scale(data, scenario.title, path)
        elif scenario.plot == "hostile":
            hostile(data, scenario.title, path)
        else:
            targets = [
                (v, f"target: {a} >= {v:,.0f} {scenario.unit}") for a, b, v in scenario.targets if not b
            ]
            bars(
                data, scenario.metric, scenario.unit, scenario.title, path, scenario.higher_is_better, targets
            )
        if path.exists():
            made.append(path.name)
    print(f"plots: {', '.join(made) or 'none'}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
