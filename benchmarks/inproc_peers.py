"""The in-process peers of ``inprocess.py``: range(N) -> map(x + 1) -> filter(even) -> sum.

Runs in the peers' venv (no rstreams import). ``--one NAME`` runs one warm-up (N/10) and
one timed run of that pipeline and prints ``{"rate": ...}`` as JSON; run.py alternates
these processes with the rstreams ones.

  gen_plain   generator expressions, no library
  reactivex   reactivex.from_iterable(range(N)).pipe(ops.map, ops.filter, ops.sum())
  aiostream   stream.iterate(range(N)) | pipe.map | pipe.filter | pipe.reduce, in asyncio.run
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import operator
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any


def expected(n: int) -> int:
    return sum(y for y in range(1, n + 1) if y % 2 == 0)


def run_gen_plain(n: int) -> int:
    return sum(y for y in (x + 1 for x in range(n)) if y % 2 == 0)


def run_reactivex(n: int) -> Any:
    import reactivex
    from reactivex import operators as ops

    out: list[Any] = []
    reactivex.from_iterable(range(n)).pipe(
        ops.map(lambda x: x + 1),
        ops.filter(lambda x: x % 2 == 0),
        ops.sum(),
    ).subscribe(on_next=out.append)
    return out[-1]


def run_aiostream(n: int) -> Any:
    from aiostream import pipe, stream

    async def main() -> Any:
        xs = (
            stream.iterate(range(n))
            | pipe.map(lambda x: x + 1)
            | pipe.filter(lambda x: x % 2 == 0)
            | pipe.reduce(operator.add, initializer=0)
        )
        return await xs

    return asyncio.run(main())


RUNS: dict[str, tuple[Callable[[int], Any], str]] = {
    "gen_plain": (run_gen_plain, ""),
    "reactivex": (run_reactivex, "reactivex"),
    "aiostream": (run_aiostream, "aiostream"),
}


def timed(run: Callable[[int], Any], n: int) -> float:
    """One warm-up at n/10, then one timed run checked against the right answer: elements/s."""
    if run(max(1, n // 10)) != expected(max(1, n // 10)):
        raise AssertionError("wrong answer in warm-up")
    gc.collect()
    start = time.perf_counter()
    answer = run(n)
    seconds = time.perf_counter() - start
    if answer != expected(n):
        raise AssertionError(f"answered {answer!r}, expected {expected(n)!r}")
    return n / seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--one", required=True, choices=sorted(RUNS))
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args(argv)
    run, dist = RUNS[args.one]
    rate = timed(run, args.n)
    print(json.dumps({"rate": rate, "impl": args.one, "version": version(dist) if dist else ""}))


if __name__ == "__main__":
    main()
