"""RS.io throughput over TCP loopback: N elements of S bytes from a server to a client.

Usage::

    python benchmarks/rsio_throughput.py [--count 200000] [--size 8] [--window 0]
                                         [--packed] [--two-process] [--uvloop]

``--window 0`` means the subscriber requests 2**63-1 once (``count()``); a positive window
keeps that many elements requested (``async for`` style, re-requested at half).
``--packed`` declares fixed-size elements (``fixed_size(S)``), so they travel in
``onNextPacked`` frames. ``--two-process`` runs the server in a child process (one core
each); otherwise client and server share one event loop. Prints elements/s, MB/s of
payload, and the CPU seconds of this process.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time

import rstreams
from rstreams.net import connect, fixed_size, serve, with_codec


def offer(size: int, packed: bool) -> dict[str, object]:
    element = b"\x00" * size

    def bench(params: dict[str, str]) -> rstreams.Flow[bytes]:
        return rstreams.from_iterable([element] * int(params["n"]))

    return {"bench": with_codec(bench, fixed_size(size)) if packed else bench}


async def measure(url: str, count: int, window: int) -> float:
    async with await connect(url) as conn:
        await _consume(conn.publisher("bench?n=1000"), window)  # warm-up
        start = time.perf_counter()
        received = await _consume(conn.publisher(f"bench?n={count}"), window)
        elapsed = time.perf_counter() - start
    assert received == count, (received, count)
    return elapsed


async def one_process(count: int, size: int, window: int, packed: bool) -> float:
    async with await serve("tcp://127.0.0.1:0", offer(size, packed)) as server:
        return await measure(server.url, count, window)


async def serve_forever(size: int, packed: bool) -> None:
    async with await serve("tcp://127.0.0.1:0", offer(size, packed)) as server:
        print(server.url, flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)  # until the parent ends


async def _consume(flow: rstreams.Flow[bytes], window: int) -> int:
    if window == 0:
        return int(await flow.count())
    received = 0
    async for _ in flow.iter_async(window=window):
        received += 1
    return received


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--packed", action="store_true", help="declare fixed-size elements: onNextPacked")
    parser.add_argument("--two-process", action="store_true", help="run the server in a child process")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)  # the child's role
    args = parser.parse_args()
    if args.uvloop:
        import uvloop

        uvloop.install()
    if args.serve:
        asyncio.run(serve_forever(args.size, args.packed))
        return
    child = None
    if args.two_process:
        command = [sys.executable, __file__, "--serve", "--size", str(args.size)]
        command += ["--packed"] * args.packed + ["--uvloop"] * args.uvloop
        child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert child.stdout is not None
        url = child.stdout.readline().strip()
    try:
        for _ in range(args.repeat):
            cpu = time.process_time()
            if child is None:
                elapsed = asyncio.run(one_process(args.count, args.size, args.window, args.packed))
            else:
                elapsed = asyncio.run(measure(url, args.count, args.window))
            cpu = time.process_time() - cpu
            rate = args.count / elapsed
            print(
                f"{args.count} x {args.size} B{' packed' if args.packed else ''}, "
                f"window {args.window or 'unbounded'}, {'2 processes' if child else '1 process'}"
                f"{', uvloop' if args.uvloop else ''}: {rate:,.0f} elements/s, "
                f"{rate * args.size / 1e6:,.1f} MB/s payload ({elapsed:.3f} s; client cpu {cpu:.2f} s)"
            )
    finally:
        if child is not None:
            assert child.stdin is not None
            child.stdin.close()
            child.wait(10)


if __name__ == "__main__":
    main()
