"""Operators that accumulate, combine or group, in one process: rstreams beside reactivex,
same pipeline.

  scan            range(N) -> scan(a + x, 0) -> last
  distinct        range(N) -> distinct(key=x % 64) -> sum   (64 pass, the rest are dropped;
                  reactivex looks a key up by a linear search of the keys seen, so more keys
                  would only widen the gap)
  buffer          range(N) -> buffer(16) (buffer_with_count) -> len -> sum
  zip             zip(range(N), range(N)) -> a + b -> sum
  combine_latest  combine_latest(range(N), range(N)) -> a + b -> count   (the interleaving of
                  two synchronous sources differs between the libraries, so the answer is
                  checked to lie between N and 2N - 1 tuples)
  group_by        range(N) -> group_by(x % 16) -> every group merged back -> sum

Rates count input elements per second (2N for zip and combine_latest, N for the others).
rstreams keeps backpressure through all of them (bounded prefetch per source or group);
reactivex has none. ``run.py operators`` runs this file with ``--one NAME`` in each venv
(the peers' venv has no rstreams: rstreams is imported only by its own rows).

Standalone, all rows alternating in this process (reactivex from this venv):
Usage: python benchmarks/inproc_ops.py [--n 200000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

GROUPS = 16
SIZE = 16
"""``buffer``'s list size."""
KEYS = 64
"""``distinct``'s number of keys."""


def _rs() -> Any:
    import rstreams

    return rstreams


def rs_scan(n: int) -> int:
    rs = _rs()
    return int(rs.range(0, n).scan(_add, 0).last().result())


def rx_scan(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    out: list[int] = []
    reactivex.from_iterable(range(n)).pipe(ops.scan(_add, 0), ops.last()).subscribe(on_next=out.append)
    return out[-1]


def rs_distinct(n: int) -> int:
    rs = _rs()
    return int(rs.range(0, n).distinct(_key).reduce(_add, 0).result())


def rx_distinct(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    out: list[int] = []
    reactivex.from_iterable(range(n)).pipe(ops.distinct(_key), ops.sum()).subscribe(on_next=out.append)
    return out[-1]


def rs_buffer(n: int) -> int:
    rs = _rs()
    return int(rs.range(0, n).buffer(SIZE).map(len).reduce(_add, 0).result())


def rx_buffer(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    out: list[int] = []
    reactivex.from_iterable(range(n)).pipe(ops.buffer_with_count(SIZE), ops.map(len), ops.sum()).subscribe(
        on_next=out.append
    )
    return out[-1]


def rs_zip(n: int) -> int:
    rs = _rs()
    return int(rs.zip(rs.range(0, n), rs.range(0, n)).map(lambda t: t[0] + t[1]).reduce(_add, 0).result())


def rx_zip(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    out: list[int] = []
    reactivex.zip(reactivex.from_iterable(range(n)), reactivex.from_iterable(range(n))).pipe(
        ops.map(lambda t: t[0] + t[1]), ops.sum()
    ).subscribe(on_next=out.append)
    return out[-1]


def rs_combine_latest(n: int) -> int:
    rs = _rs()
    return int(rs.combine_latest(rs.range(0, n), rs.range(0, n)).map(lambda t: t[0] + t[1]).count().result())


def rx_combine_latest(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    out: list[int] = []
    reactivex.combine_latest(reactivex.from_iterable(range(n)), reactivex.from_iterable(range(n))).pipe(
        ops.map(lambda t: t[0] + t[1]), ops.count()
    ).subscribe(on_next=out.append)
    return out[-1]


def rs_group_by(n: int) -> int:
    rs = _rs()
    grouped = rs.range(0, n).group_by(lambda x: x % GROUPS).flat_map(lambda g: g, max_concurrency=GROUPS)
    return int(grouped.reduce(_add, 0).result())


def rx_group_by(n: int) -> int:
    import reactivex
    from reactivex import operators as ops

    out: list[int] = []
    reactivex.from_iterable(range(n)).pipe(
        ops.group_by(lambda x: x % GROUPS), ops.merge_all(), ops.sum()
    ).subscribe(on_next=out.append)
    return out[-1]


def _add(a: int, b: int) -> int:
    return a + b


def _key(x: int) -> int:
    return x % KEYS


def _check(name: str, n: int, answer: int) -> None:
    op = name[3:]
    if op == "zip":
        ok = answer == n * (n - 1)
    elif op == "combine_latest":
        ok = n <= answer <= 2 * n - 1
    elif op == "distinct":
        ok = answer == sum(range(min(n, KEYS)))
    elif op == "buffer":
        ok = answer == n
    else:
        ok = answer == n * (n - 1) // 2
    if not ok:
        raise AssertionError(f"{name}: answered {answer!r} for n={n}")


RUNS: dict[str, tuple[Callable[[int], int], int]] = {
    "rs_scan": (rs_scan, 1),
    "rx_scan": (rx_scan, 1),
    "rs_distinct": (rs_distinct, 1),
    "rx_distinct": (rx_distinct, 1),
    "rs_buffer": (rs_buffer, 1),
    "rx_buffer": (rx_buffer, 1),
    "rs_zip": (rs_zip, 2),
    "rx_zip": (rx_zip, 2),
    "rs_combine_latest": (rs_combine_latest, 2),
    "rx_combine_latest": (rx_combine_latest, 2),
    "rs_group_by": (rs_group_by, 1),
    "rx_group_by": (rx_group_by, 1),
}
"""Each row: its pipeline, and input elements per ``n``."""

OPERATORS = ("scan", "distinct", "buffer", "zip", "combine_latest", "group_by")


def timed(name: str, n: int) -> float:
    """One checked warm-up at n/10, then one checked timed run: input elements per second."""
    run, inputs = RUNS[name]
    _check(name, max(2, n // 10), run(max(2, n // 10)))
    gc.collect()
    start = time.perf_counter()
    answer = run(n)
    seconds = time.perf_counter() - start
    _check(name, n, answer)
    return inputs * n / seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--one", choices=sorted(RUNS), default=None, help="run one row; print JSON")
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    if args.one is not None:
        print(json.dumps({"rate": timed(args.one, args.n), "impl": args.one, "version": ""}))
        return 0
    load = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    rates: dict[str, list[float]] = {name: [] for name in RUNS}
    for _ in range(args.repeats):  # rows alternate, so a load change hits every row alike
        for name in RUNS:
            rates[name].append(timed(name, args.n))
    after = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"n={args.n:,}, {args.repeats} rounds, load before {load}, after {after}")
    print("| operator | rstreams el/s | reactivex el/s | rstreams / reactivex (median of paired ratios) |")
    print("|---|---|---|---|")
    for op in OPERATORS:
        ours, theirs = rates[f"rs_{op}"], rates[f"rx_{op}"]
        ratio = statistics.median(a / b for a, b in zip(ours, theirs, strict=True))
        print(
            f"| `{op}` | {statistics.median(ours):,.0f} | {statistics.median(theirs):,.0f} | {ratio:.2f}x |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
