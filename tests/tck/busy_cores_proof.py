"""Proof that the TCK judges correct implementations the same when the machine is busy.

Runs the correct references of tests/testkit (the publisher, subscriber and processor twins
of the broken implementations, plus rstreams' own range, MulticastProcessor and sinks)
through every verification ``--runs`` times in a row (20 by default), while one process
per CPU spins without pause so that every core stays busy. Every run must pass:

    PYTHONPATH=src:tests python tests/tck/busy_cores_proof.py            # 20 runs, all cores busy
    PYTHONPATH=src:tests python tests/tck/busy_cores_proof.py --runs 3 --busy 0

It prints one line per run (cases passed, failed, skipped; the load average) and exits
with 1 if any case failed in any run, printing that report. It asserts nothing about
time: a slow run is fine, a failed case is not. It is a script, not a test, because it
keeps the machine saturated for minutes.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import itertools
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from typing import Any

import rstreams
from rstreams.flow._public import MulticastProcessor
from rstreams.flow._sinks import _Collect
from rstreams.tck import (
    Report,
    verify_processor,
    verify_publisher,
    verify_subscriber_blackbox,
    verify_subscriber_whitebox,
)
from testkit import broken_publishers as bp
from testkit.broken_subscribers import OneAtATimeWhiteboxSubscriber, ReferenceSubscriber, WrappedProcessor

MAX = 2**63 - 1


def _spin() -> None:  # pragma: no cover - runs in the busy processes
    while True:
        pass


def _range(n: int) -> Any:
    return rstreams.from_iterable(itertools.count()) if n == MAX else rstreams.range(n)


def verifications(pool: concurrent.futures.Executor, loop: bp.LoopThread) -> dict[str, Callable[[], Report]]:
    """Every correct reference and the verification it must pass, with default timeouts."""
    return {
        "SyncPublisher": lambda: verify_publisher(
            bp.SyncPublisher, create_failed_publisher=bp.FailedPublisher
        ),
        "ThreadedPublisher": lambda: verify_publisher(
            lambda n: bp.ThreadedPublisher(n, pool), create_failed_publisher=bp.FailedPublisher
        ),
        "LoopPublisher": lambda: verify_publisher(lambda n: bp.LoopPublisher(n, loop.loop)),
        "DelayedPublisher": lambda: verify_publisher(bp.DelayedPublisher),
        "UnicastPublisher": lambda: verify_publisher(bp.UnicastPublisher),
        "rstreams.range": lambda: verify_publisher(
            _range, create_failed_publisher=lambda: rstreams.error(RuntimeError("failed on purpose"))
        ),
        "ReferenceSubscriber (whitebox)": lambda: verify_subscriber_whitebox(ReferenceSubscriber),
        "OneAtATimeWhiteboxSubscriber": lambda: verify_subscriber_whitebox(OneAtATimeWhiteboxSubscriber),
        "ReferenceSubscriber (blackbox)": lambda: verify_subscriber_blackbox(ReferenceSubscriber),
        "collect (blackbox)": lambda: verify_subscriber_blackbox(_Collect),
        "WrappedProcessor": lambda: verify_processor(WrappedProcessor),
        "MulticastProcessor": lambda: verify_processor(lambda size: MulticastProcessor(buffer_size=size)),
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="runs in a row (default 20)")
    parser.add_argument(
        "--busy", type=int, default=os.cpu_count() or 2, help="spinning processes (default: one per CPU)"
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.busy < 0:
        parser.error("--runs must be >= 1 and --busy >= 0")
    spinners = [multiprocessing.Process(target=_spin, daemon=True) for _ in range(args.busy)]
    for spinner in spinners:
        spinner.start()
    pool = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="proof-publisher")
    loop = bp.LoopThread()
    failures = 0
    started = time.monotonic()
    try:
        print(f"{args.runs} runs, {args.busy} spinning processes on {os.cpu_count()} CPUs", flush=True)
        for run in range(1, args.runs + 1):
            counts = [0, 0, 0]
            for name, verify in verifications(pool, loop).items():
                report = verify()
                counts[0] += len(report.passed)
                counts[1] += len(report.failed) + len(report.violated)
                counts[2] += len(report.skipped)
                if not report.ok:
                    failures += 1
                    print(f"run {run}: {name} FAILED\n{report}", flush=True)
            load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
            print(
                f"run {run:2}: {counts[0]} passed, {counts[1]} failed, {counts[2]} skipped"
                f" (load {load}, {time.monotonic() - started:.0f} s so far)",
                flush=True,
            )
    finally:
        for spinner in spinners:
            spinner.terminate()
        for spinner in spinners:
            spinner.join()
        pool.shutdown(cancel_futures=True)
        loop.close()
    print("all runs passed" if not failures else f"{failures} verification run(s) failed", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
