"""RS.io throughput over TCP loopback: N elements of 8 bytes, client and server in one process.

Usage: ``python benchmarks/rsio_throughput.py [--count 200000] [--size 8] [--window 0] [--uvloop]``

``--window 0`` means the subscriber requests 2**63-1 once (``collect``); a positive window
keeps that many elements requested (``async for`` style, re-requested at half). Prints
elements/s and MB/s of payload; the numbers are for one process, one core.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import rstreams
from rstreams.net import connect, fixed_size, serve, with_codec


async def run(count: int, size: int, window: int, url: str, packed: bool = False) -> float:
    element = b"\x00" * size
    target = lambda params: rstreams.from_iterable(_repeat(element, int(params["n"])))  # noqa: E731
    offer = {"bench": with_codec(target, fixed_size(size)) if packed else target}
    async with await serve(url, offer) as server, await connect(server.url) as conn:
        flow = conn.publisher(f"bench?n={count}")
        await _consume(flow, 1000, window)  # warm-up
        flow = conn.publisher(f"bench?n={count}")
        start = time.perf_counter()
        received = await _consume(flow, count, window)
        elapsed = time.perf_counter() - start
    assert received == count, (received, count)
    return elapsed


def _repeat(element: bytes, n: int) -> list[bytes]:
    return [element] * n


async def _consume(flow: rstreams.Flow[bytes], count: int, window: int) -> int:
    if window == 0:
        return int(await flow.count())
    received = 0
    async for _ in flow.iter_async(window=window):
        received += 1
    return received


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--window", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--url", default="tcp://127.0.0.1:0")
    parser.add_argument("--uvloop", action="store_true")
    parser.add_argument("--packed", action="store_true", help="declare fixed-size elements: onNextPacked")
    args = parser.parse_args()
    if args.uvloop:
        import uvloop

        uvloop.install()
    for _ in range(args.repeat):
        cpu = time.process_time()
        elapsed = asyncio.run(run(args.count, args.size, args.window, args.url, args.packed))
        cpu = time.process_time() - cpu
        rate = args.count / elapsed
        print(
            f"{args.count} x {args.size} B{' packed' if args.packed else ''}, "
            f"window {args.window or 'unbounded'}: (process cpu {cpu:.2f} s) "
            f"{rate:,.0f} elements/s, {rate * args.size / 1e6:,.1f} MB/s payload ({elapsed:.3f} s)"
        )


if __name__ == "__main__":
    main()
