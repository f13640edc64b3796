"""RS.io over TCP loopback: the issue-5 scenarios, quick to run by hand (for A/B comparisons).

Usage::

    python benchmarks/rsio_throughput.py SCENARIO [--count N] [--size S] [--window W]
                                         [--repeat R] [--uvloop] [--one-process]

Scenarios (the server runs in a child process pinned to CPU 0, the client on CPU 1,
unless ``--one-process``):

* ``window``: ``count`` elements of ``size`` bytes (default 8); the subscriber requests
  ``window`` (default 256) and then ``window/2`` each time that many arrived.
* ``packed``: the same with 8-byte elements served with ``fixed_size(8)``: they travel in
  ``onNextPacked`` frames, but each reaches the subscriber in its own ``on_next``.
* ``batched``: 8-byte ints served by a batched publisher (``with_codec(..., INT64,
  batched=True)`` emitting lists of ints) and read with
  ``conn.publisher(name, codec=INT64, batched=True)``: one ``on_next(list)`` per frame;
  demand counted in elements (``--window``, default 1 Mi).
* ``big``: 64 KiB elements (``--size``), window 256 (``--window``): MB/s.
* ``rr``: ``count`` sequential ``await conn.request(name)`` round trips.

Prints one line per repeat: elements (or round trips) per second, payload MB/s and the
CPU seconds each process spent (the machine may be shared: CPU seconds per element are
steadier than wall-clock rates).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import time
from typing import Any

import rstreams
from rstreams.api import Subscription
from rstreams.net import INT64, Connection, connect, fixed_size, serve, with_codec

HOST = "127.0.0.1"
UNBOUNDED = 2**63 - 1


# -- server -----------------------------------------------------------------------------
def offer() -> dict[str, Any]:
    def bench(params: dict[str, str]) -> rstreams.Flow[bytes]:
        element = b"\x01" * int(params.get("size", "8"))
        return rstreams.from_iterable([element] * int(params["n"]))

    def ints(params: dict[str, str]) -> rstreams.Flow[list[int]]:
        n, chunk = int(params["n"]), 8192
        block = list(range(chunk))
        return rstreams.from_iterable([block] * (n // chunk) + ([block[: n % chunk]] if n % chunk else []))

    def echo(params: dict[str, str]) -> rstreams.Flow[bytes]:
        return rstreams.just(params.get("d", "x").encode())

    out: dict[str, Any] = {"bench": bench, "packed": with_codec(bench, fixed_size(8)), "echo": echo}
    try:
        out["ints"] = with_codec(ints, INT64, batched=True)
    except TypeError:  # an older rstreams without batched publishers
        pass
    return out


async def serve_forever() -> None:
    async with await serve(f"tcp://{HOST}:0", offer()) as server:
        print(server.url, flush=True)
        loop = asyncio.get_running_loop()
        while await loop.run_in_executor(None, sys.stdin.readline):  # a line per repeat, until EOF
            print(f"{time.process_time():.2f}", flush=True)  # CPU seconds so far


# -- client -------------------------------------------------------------------------------
class WindowSubscriber:
    """Requests ``window``, then ``window // 2`` each time that many arrived (counted in elements)."""

    def __init__(self, window: int, done: asyncio.Future[None], batched: bool = False) -> None:
        self.window = window
        self.half = max(1, window // 2)
        self.since = 0
        self.count = 0
        self.nbytes = 0
        self.batched = batched
        self.done = done
        self.subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.request(self.window)

    def on_next(self, item: Any) -> None:
        n = len(item) if self.batched else 1
        self.count += n
        self.nbytes += 8 * n if self.batched else len(item)
        self.since += n
        if self.since >= self.half:
            self.subscription.request(self.since)  # type: ignore[union-attr]
            self.since = 0

    def on_error(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)

    def on_complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def stream(conn: Connection, args: argparse.Namespace, count: int) -> tuple[int, int]:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    batched = args.scenario == "batched"
    subscriber = WindowSubscriber(args.window, done, batched)
    if batched:
        conn.publisher(f"ints?n={count}", codec=INT64, batched=True).subscribe(subscriber)
    else:
        source = "packed" if args.scenario == "packed" else "bench"
        conn.publisher(f"{source}?n={count}&size={args.size}").subscribe(subscriber)
    await done
    return subscriber.count, subscriber.nbytes


async def measure(url: str, args: argparse.Namespace) -> tuple[float, int, int, float]:
    """Returns wall seconds, elements, payload bytes and CPU seconds of the measured run."""
    async with await connect(url) as conn:
        if args.scenario == "rr":
            for _ in range(200):
                await conn.request("echo?d=12345678")
            cpu = time.process_time()
            start = time.perf_counter()
            for _ in range(args.count):
                await conn.request("echo?d=12345678")
            return time.perf_counter() - start, args.count, 0, time.process_time() - cpu
        await stream(conn, args, max(1, args.count // 10))  # warm-up
        cpu = time.process_time()
        start = time.perf_counter()
        received, nbytes = await stream(conn, args, args.count)
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
    assert received == args.count, (received, args.count)
    return elapsed, received, nbytes, cpu


async def one_process(args: argparse.Namespace) -> tuple[float, int, int, float]:
    async with await serve(f"tcp://{HOST}:0", offer()) as server:
        return await measure(server.url, args)


class _Counter:
    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def on_next(self, item: object) -> None:
        self.count += 1


def calibrate() -> float:
    """ns per pre-bound ``on_next`` call doing ``self.count += 1``: 60.7 ns on this machine when
    idle (notes/machine-limits.md); a larger value means a loaded machine (scale rates by it)."""
    on_next = _Counter().on_next
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        for _ in range(300_000):
            on_next(None)
        best = min(best, (time.process_time() - start) / 300_000 * 1e9)
    return best


def _server_cpu(child: subprocess.Popen[str] | None) -> float:
    if child is None:
        return 0.0
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write("\n")
    child.stdin.flush()
    return float(child.stdout.readline())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("scenario", choices=["window", "packed", "batched", "big", "rr"])
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--size", type=int, default=0)
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--one-process", action="store_true", help="client and server share one loop")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the child's role
    args = parser.parse_args()
    defaults = {
        "window": (200_000, 8, 256),
        "packed": (1_000_000, 8, 256),
        "batched": (10_000_000, 8, 1 << 20),
    }
    count, size, window = defaults.get(
        args.scenario, (20_000, 65536, 256) if args.scenario == "big" else (5000, 8, 1)
    )
    args.count, args.size, args.window = args.count or count, args.size or size, args.window or window
    if args.uvloop:
        import uvloop

        uvloop.install()
    if args.serve:
        asyncio.run(serve_forever())
        return
    print(f"calibration: {calibrate():.1f} ns per on_next call (60.7 on an idle machine)", flush=True)
    child = None
    if not args.one_process:
        command = ["taskset", "-c", "0", sys.executable, __file__, args.scenario, "--serve"]
        command += ["--uvloop"] * args.uvloop
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        url = child.stdout.readline().strip()
        os.sched_setaffinity(0, {1})
    try:
        for _ in range(args.repeat):
            server_cpu = _server_cpu(child)
            if child is None:
                elapsed, n, nbytes, cpu = asyncio.run(one_process(args))
            else:
                elapsed, n, nbytes, cpu = asyncio.run(measure(url, args))
            server_cpu = _server_cpu(child) - server_cpu
            what = "round trips" if args.scenario == "rr" else "elements"
            print(
                f"{args.scenario} {args.count} x {args.size} B window {args.window}, "
                f"{'2 processes' if child else '1 process'}{', uvloop' if args.uvloop else ''}: "
                f"{n / elapsed:,.0f} {what}/s, {nbytes / elapsed / 1e6:,.1f} MB/s ({elapsed:.3f} s); "
                + (
                    f"cpu: client {cpu * 1e6 / n:.2f} us/{what[:-1]}, server {server_cpu:.2f} s incl. warm-up"
                    if child
                    else f"cpu: {cpu * 1e6 / n:.2f} us/{what[:-1]} (both sides)"
                ),
                flush=True,
            )
    finally:
        if child is not None:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(10)


if __name__ == "__main__":
    main()
