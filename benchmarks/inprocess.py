"""In-process pipeline benchmark: range(N) -> map(x + 1) -> filter(even) -> sum.

The scenario of /work/shared/notes/python-peers.md section 2, side by side:

  gen_plain          sum(y for y in (x + 1 for x in range(N)) if y % 2 == 0)
  rstreams_fused     rstreams.range(0, N).map(...).filter(...).reduce(operator.add, 0).result():
                     the default chain (the name is historical: nothing is fused any more;
                     MapFlow and FilterFlow run as real operators, and rstreams' own stages
                     pass elements in batches of up to 128 within the demand)
  rstreams_unfused   the same operators behind a Publisher that is not a Flow
  rstreams_async_for the default chain consumed with ``async for`` (window 256) in asyncio.run
  reactivex          reactivex.from_iterable(range(N)).pipe(ops.map, ops.filter, ops.sum())

``benchmarks/run.py inprocess`` runs this file with ``--one NAME`` (one warm-up at N/10 and
one timed run in a fresh process, printed as JSON), alternating with the peers of
``inproc_peers.py`` (reactivex, aiostream, generators) in the peers' venv.

Standalone, all in this process (reactivex from this venv, if installed):
Usage: python benchmarks/inprocess.py [--n 1000000] [--repeats 7] [--warmup 1] [--cpu K]
       python benchmarks/inprocess.py --quick      # tiny N, one round, no report file (CI smoke)
       add --check to exit 1 when rstreams_fused is not at least --target times reactivex.
Writes benchmarks/results/inprocess.md (unless --quick, or --out says elsewhere).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import operator
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _harness import (
    Scenario,
    load_average,
    machine_info,
    paired_ratio,
    pin_cpu,
    render_markdown,
    run_rounds,
    version_of,
    write_report,
)
from inproc_peers import timed

import rstreams
from rstreams.api import Subscriber

RESULTS = Path(__file__).resolve().parent / "results" / "inprocess.md"
TARGET = 2.0  # the target: rstreams at least twice reactivex, same run


def expected(n: int) -> int:
    return sum(y for y in range(1, n + 1) if y % 2 == 0)


def run_gen_plain(n: int) -> int:
    return sum(y for y in (x + 1 for x in range(n)) if y % 2 == 0)


def run_rstreams_fused(n: int) -> int:
    return (
        rstreams.range(0, n)
        .map(lambda x: x + 1)
        .filter(lambda x: x % 2 == 0)
        .reduce(operator.add, 0)
        .result()
    )


class _NotAFlow:
    """A plain Publisher (not a Flow, so nothing can fuse into it) over rstreams.range."""

    def __init__(self, n: int) -> None:
        self._source = rstreams.range(0, n)

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        self._source.subscribe(subscriber)


def run_rstreams_unfused(n: int) -> int:
    flow = rstreams.from_publisher(_NotAFlow(n))
    return flow.map(lambda x: x + 1).filter(lambda x: x % 2 == 0).reduce(operator.add, 0).result()


def run_rstreams_async_for(n: int) -> int:
    async def main() -> int:
        total = 0
        async for x in rstreams.range(0, n).map(lambda x: x + 1).filter(lambda x: x % 2 == 0):
            total += x
        return total

    return asyncio.run(main())


def run_reactivex(n: int) -> Any:
    import reactivex
    from reactivex import operators as ops

    out: list[Any] = []
    rx: Any = reactivex  # reactivex's generic operator signatures defeat inference on lambdas
    rx.from_iterable(range(n)).pipe(
        ops.map(lambda x: x + 1),  # type: ignore[operator]
        ops.filter(lambda x: x % 2 == 0),  # type: ignore[operator]
        ops.sum(),
    ).subscribe(on_next=out.append)
    return out[-1]


def _unfused_available() -> bool:
    try:
        from rstreams.flow._filter import FilterFlow  # noqa: F401
    except ImportError:
        return False
    return True


def scenarios() -> list[Scenario]:
    rs = version_of("rstreams")
    chosen = [
        Scenario(name="gen_plain", run=run_gen_plain, label="generator expressions, no library"),
        Scenario(name="rstreams_fused", run=run_rstreams_fused, label="default chain", version=rs),
    ]
    if _unfused_available():
        chosen.append(
            Scenario(
                name="rstreams_unfused",
                run=run_rstreams_unfused,
                label="MapFlow + FilterFlow operators",
                version=rs,
            )
        )
    else:
        print("rstreams_unfused: skipped (rstreams.flow._filter is not there yet)")
    chosen.append(
        Scenario(
            name="rstreams_async_for", run=run_rstreams_async_for, label="async for, window 256", version=rs
        )
    )
    rx = version_of("reactivex")
    if rx:
        chosen.append(Scenario(name="reactivex", run=run_reactivex, label="from_iterable + ops", version=rx))
    else:
        print("reactivex: skipped (not installed)")
    return chosen


RATIOS = [
    ("rstreams_fused", "reactivex"),
    ("rstreams_unfused", "reactivex"),
    ("rstreams_async_for", "reactivex"),
    ("gen_plain", "rstreams_fused"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--n", type=int, default=1_000_000, help="elements per run (default 1,000,000)")
    parser.add_argument("--repeats", type=int, default=7, help="measured rounds (default 7)")
    parser.add_argument("--warmup", type=int, default=1, help="discarded rounds first (default 1)")
    parser.add_argument(
        "--cpu", type=int, default=None, help="pin to this CPU; -1: do not pin (default: last CPU)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run: n=10,000, 1 round, no warm-up, no file"
    )
    parser.add_argument("--out", type=Path, default=None, help=f"report path (default {RESULTS})")
    parser.add_argument("--check", action="store_true", help="exit 1 if rstreams_fused < target x reactivex")
    parser.add_argument("--target", type=float, default=TARGET, help=f"ratio for --check (default {TARGET})")
    parser.add_argument(
        "--one", default=None, help="run only this scenario once (after a warm-up); print JSON"
    )
    args = parser.parse_args(argv)
    if args.one is not None:
        one = {s.name: s for s in scenarios()}[args.one]
        print(json.dumps({"rate": timed(one.run, args.n), "impl": one.name, "version": one.version}))
        return 0
    if args.quick:
        args.n, args.repeats, args.warmup = 10_000, 1, 0

    load_before = load_average()
    pinning = pin_cpu(args.cpu)
    chosen = scenarios()
    say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)  # noqa: E731
    say(f"n={args.n:,} repeats={args.repeats} warmup={args.warmup}; {pinning}")
    results = run_rounds(
        chosen, args.n, expected(args.n), repeats=args.repeats, warmup=args.warmup, progress=say
    )

    info = machine_info(pinning, ["rstreams", "reactivex"], load_before)
    settings = (
        f"n={args.n:,}, {args.repeats} measured rounds after {args.warmup} warm-up, scenarios alternate"
    )
    report = render_markdown(
        "In-process pipeline: range(N) -> map(x + 1) -> filter(even) -> sum",
        "Throughput is input elements per second (N / wall time). Produced by `benchmarks/inprocess.py`.",
        info,
        settings,
        results,
        RATIOS,
    )
    print(report)
    by_name = {r.scenario.name: r for r in results}
    status = 0
    if "rstreams_fused" in by_name and "reactivex" in by_name:
        ratio = paired_ratio(by_name["rstreams_fused"], by_name["reactivex"])[0]
        verdict = "meets" if ratio >= args.target else "MISSES"
        print(f"rstreams_fused / reactivex = {ratio:.2f}x ({verdict} the {args.target:g}x target)")
        if args.check and ratio < args.target:
            status = 1
    out = args.out if args.out is not None else (None if args.quick else RESULTS)
    if out is not None:
        write_report(out, report)
        print(f"wrote {out}")
    return status


if __name__ == "__main__":
    sys.exit(main())
