"""rstreams over RS.io on loopback TCP: the rstreams side of every network scenario.

Run by ``benchmarks/run.py`` in rstreams' own venv; by hand::

    python benchmarks/net_rstreams.py client --mode stream --count 200000 --size 8 --window 256
    python benchmarks/net_rstreams.py client --mode stream --count 200000 --size 8 --packed
    python benchmarks/net_rstreams.py client --mode rr --count 5000
    python benchmarks/net_rstreams.py client --mode latency --count 5000
    python benchmarks/net_rstreams.py client --mode memory --duration 60 --size 1024
    python benchmarks/net_rstreams.py client --mode subs --fanout 10000
    python benchmarks/net_rstreams.py client --mode conns --fanout 1000

The client (pinned to CPU1) starts the server (``server`` role, pinned to CPU0) as a child,
does one warm-up run on the connection, then the measured run, and prints one JSON line.

Modes:
  stream   ``count`` elements of ``size`` bytes; the client's Subscriber requests ``window``
           (``0``: 2**63-1 once; ``--async-for``: ``async for`` over ``iter_async(window)``)
           and then ``window/2`` every ``window/2`` elements (at most ``window`` outstanding:
           the shape the notes used for rsocket-py). ``--packed`` serves them with a
           fixed-size codec, so they travel in onNextPacked frames.
  rr       ``count`` sequential ``conn.request("echo?d=12345678")`` round trips (subscribe with
           demand 1, one onNext, onComplete). Also per-round-trip p50/p99.
  latency  one long-lived stream; per element: ``request(1)`` then wait for the ``on_next``.
  memory   first an unthrottled run for up to 5 s measures the production rate; then the
           client requests 2**63-1 and reads at a tenth of that rate (``--slow-factor``) for
           ``--duration`` s while the server's RSS is sampled from /proc.
  subs     ``fanout`` idle subscriptions on one connection (server and client RSS per
           subscription), then a 200k x 8 B stream beside them, then ``fanout`` streams at
           once sharing ``count`` elements.
  conns    ``fanout`` connections (server RSS per connection), then ``count`` elements
           shared among streams on all of them at once.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _netcommon import (
    HOST,
    RssSampler,
    add_common_args,
    announce_port,
    emit,
    install_loop,
    percentiles,
    pin_self,
    rss_kib,
    run_with_timeout,
    server_child,
    wait_for_stdin_eof,
)

import rstreams
from rstreams.api import Subscription
from rstreams.net import Connection, connect, fixed_size, serve, with_codec
from rstreams.wire import ConnectionConfig

UNBOUNDED = 2**63 - 1
CONFIG = ConnectionConfig(max_subscriptions=20_000)  # the default (1024) refuses the 10,000 scenario


# ------------------------------------------------------------------------------ server
def _bench(params: dict[str, str]) -> rstreams.Flow[bytes]:
    size = int(params.get("size", "8"))
    element = os.urandom(size)
    return rstreams.from_iterable(itertools.repeat(element, int(params["n"])))


def _echo(params: dict[str, str]) -> rstreams.Flow[bytes]:
    return rstreams.just(params.get("d", "x").encode())


async def serve_main() -> None:
    offer: dict[str, Any] = {"bench": _bench, "packed8": with_codec(_bench, fixed_size(8)), "echo": _echo}
    server = await serve(f"tcp://{HOST}:0", offer, config=CONFIG)
    announce_port(int(server.url.rsplit(":", 1)[1]))
    wait_for_stdin_eof()
    await asyncio.Event().wait()


# ------------------------------------------------------------------------------ client
class WindowSubscriber:
    """Requests ``window``, then ``window // 2`` each time that many arrived; counts bytes."""

    __slots__ = ("count", "done", "half", "nbytes", "since", "subscription", "window")

    def __init__(self, window: int, done: asyncio.Future[None]) -> None:
        self.window = window
        self.half = max(1, window // 2)
        self.since = 0
        self.count = 0
        self.nbytes = 0
        self.done = done
        self.subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.request(self.window)

    def on_next(self, item: bytes) -> None:
        self.count += 1
        self.nbytes += len(item)
        self.since += 1
        if self.since == self.half:
            self.since = 0
            self.subscription.request(self.half)  # type: ignore[union-attr]

    def on_error(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)

    def on_complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class IdleSubscriber:
    """Subscribes and never requests: an idle subscription."""

    __slots__ = ("subscription",)

    def __init__(self) -> None:
        self.subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription

    def on_next(self, item: bytes) -> None:  # pragma: no cover - never requested
        pass

    def on_error(self, error: BaseException) -> None:
        pass

    def on_complete(self) -> None:
        pass


class SlowSubscriber:
    """Requests 2**63-1, then reads at ``rate`` elements/s (``0``: as fast as it can).

    Every ``every`` elements it sleeps until it is back on schedule; the sleep blocks the
    event loop, so the socket is read no faster than ``rate``: a slow consumer that asked
    for everything.
    """

    def __init__(self, rate: float, deadline: float, done: asyncio.Future[None], every: int = 64) -> None:
        self.rate = rate
        self.deadline = deadline
        self.done = done
        self.every = every
        self.count = 0
        self.nbytes = 0
        self.slept = 0.0
        self.mark = time.perf_counter()
        self.subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.mark = time.perf_counter()
        subscription.request(UNBOUNDED)

    def on_next(self, item: bytes) -> None:
        self.count += 1
        self.nbytes += len(item)
        if self.count % self.every:
            return
        now = time.perf_counter()
        if now >= self.deadline:
            self.subscription.cancel()  # type: ignore[union-attr]
            self.on_complete()
            return
        if self.rate > 0:
            pause = self.mark + self.count / self.rate - now
            if pause > 0:
                time.sleep(pause)
                self.slept += pause

    def on_error(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)

    def on_complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def _stream(conn: Connection, name: str, window: int, limit: float) -> WindowSubscriber:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    subscriber = WindowSubscriber(window, done)
    conn.publisher(name).subscribe(subscriber)
    await asyncio.wait_for(done, limit)
    return subscriber


async def _async_for(conn: Connection, name: str, window: int) -> tuple[int, int]:
    count = nbytes = 0
    async for element in conn.publisher(name).iter_async(window=window):
        count += 1
        nbytes += len(element)
    return count, nbytes


async def mode_stream(conn: Connection, args: argparse.Namespace) -> dict[str, Any]:
    source = "packed8" if args.packed else "bench"
    if args.packed and args.size != 8:
        raise SystemExit("--packed is served for 8-byte elements only")
    window = args.window if args.window > 0 else UNBOUNDED

    async def once(n: int) -> tuple[int, int]:
        name = f"{source}?n={n}&size={args.size}"
        if args.async_for:
            return await asyncio.wait_for(_async_for(conn, name, window), args.timeout)
        got = await _stream(conn, name, window, args.timeout)
        return got.count, got.nbytes

    await once(max(1, args.count // 10))
    gc.collect()
    start = time.perf_counter()
    cpu = time.process_time()
    count, nbytes = await once(args.count)
    seconds = time.perf_counter() - start
    cpu = time.process_time() - cpu
    if count != args.count:
        raise AssertionError(f"received {count} of {args.count}")
    return {
        "rate": args.count / seconds,
        "mbps": nbytes / seconds / 1e6,
        "seconds": seconds,
        "client_cpu_s": cpu,
    }


async def mode_rr(conn: Connection, args: argparse.Namespace) -> dict[str, Any]:
    name = "echo?d=12345678"
    for _ in range(min(200, args.count)):
        await conn.request(name)
    gc.collect()
    times: list[float] = []
    clock = time.perf_counter
    start = clock()
    for _ in range(args.count):
        t0 = clock()
        answer = await conn.request(name)
        times.append(clock() - t0)
    seconds = clock() - start
    if answer != b"12345678":
        raise AssertionError(f"echo answered {answer!r}")
    return {"rate": args.count / seconds, "seconds": seconds, **percentiles(times)}


class OneAtATime:
    """Requests one element at a time on a long-lived stream; ``next()`` awaits it."""

    def __init__(self) -> None:
        self.subscription: Subscription | None = None
        self.waiter: asyncio.Future[bytes] | None = None
        self.subscribed = asyncio.get_running_loop().create_future()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.subscribed.set_result(None)

    def on_next(self, item: bytes) -> None:
        waiter = self.waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(item)

    def on_error(self, error: BaseException) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(error)

    def on_complete(self) -> None:
        self.on_error(EOFError("stream completed"))

    async def next(self) -> bytes:
        self.waiter = asyncio.get_running_loop().create_future()
        self.subscription.request(1)  # type: ignore[union-attr]
        return await self.waiter


async def mode_latency(conn: Connection, args: argparse.Namespace) -> dict[str, Any]:
    one = OneAtATime()
    conn.publisher(f"bench?n={args.count * 2 + 1000}&size=8").subscribe(one)
    await one.subscribed
    for _ in range(min(200, args.count)):
        await one.next()
    gc.collect()
    times: list[float] = []
    clock = time.perf_counter
    start = clock()
    for _ in range(args.count):
        t0 = clock()
        await one.next()
        times.append(clock() - t0)
    seconds = clock() - start
    one.subscription.cancel()  # type: ignore[union-attr]
    return {"rate": args.count / seconds, **percentiles(times)}


async def mode_memory(conn: Connection, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    name = f"bench?n={args.count}&size={args.size}"
    # Unthrottled reference: how fast this pair moves these elements when the consumer keeps up.
    done: asyncio.Future[None] = loop.create_future()
    fast = SlowSubscriber(0, time.perf_counter() + min(5.0, args.duration), done)
    start = time.perf_counter()
    conn.publisher(name).subscribe(fast)
    await asyncio.wait_for(done, args.timeout)
    fast_rate = fast.count / (time.perf_counter() - start)
    await asyncio.sleep(0.5)
    gc.collect()
    sampler = RssSampler(server_pid, args.sample_interval).start()
    await asyncio.sleep(0.3)
    baseline = rss_kib(server_pid)
    done = loop.create_future()
    slow = SlowSubscriber(fast_rate / args.slow_factor, time.perf_counter() + args.duration, done)
    start = time.perf_counter()
    conn.publisher(name).subscribe(slow)
    await asyncio.wait_for(done, args.duration + args.timeout)
    seconds = time.perf_counter() - start
    samples = sampler.stop()
    peak = max(kib for _, kib in samples)
    return {
        "growth_mib": (peak - baseline) / 1024,
        "baseline_mib": baseline / 1024,
        "peak_mib": peak / 1024,
        "final_growth_mib": (samples[-1][1] - baseline) / 1024,
        "received": slow.count,
        "slow_rate": slow.count / seconds,
        "fast_rate": fast_rate,
        "slowdown": fast_rate / max(1e-9, slow.count / seconds),
        "slept_fraction": slow.slept / seconds,
        "series": _thin(samples),
    }


def _thin(samples: list[tuple[float, int]], keep: int = 300) -> list[list[float]]:
    step = max(1, len(samples) // keep)
    return [[t, kib / 1024] for t, kib in samples[::step]]


async def _barrier(conn: Connection) -> None:
    """One round trip: every frame sent before it has been handled by the server."""
    await conn.request("echo?d=barrier")


async def mode_subs(conn: Connection, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    k = args.fanout
    await _stream(conn, "bench?n=20000&size=8", 256, args.timeout)  # warm-up
    gc.collect()
    await asyncio.sleep(0.2)
    srv0, cli0 = rss_kib(server_pid), rss_kib(os.getpid())
    idle = [IdleSubscriber() for _ in range(k)]
    idle_flow = conn.publisher("bench?n=1000000&size=8")
    for subscriber in idle:
        idle_flow.subscribe(subscriber)
    await _barrier(conn)
    await asyncio.sleep(0.3)
    srv1, cli1 = rss_kib(server_pid), rss_kib(os.getpid())
    gc.collect()
    start = time.perf_counter()
    got = await _stream(conn, f"bench?n={args.count}&size=8", args.window, args.timeout)
    beside_rate = got.count / (time.perf_counter() - start)
    for subscriber in idle:
        subscriber.subscription.cancel()  # type: ignore[union-attr]
    await _barrier(conn)
    # k streams at once, sharing args.count elements
    per = max(1, args.count // k)
    start = time.perf_counter()
    subs = [_stream(conn, f"bench?n={per}&size=8", min(args.window, per), args.timeout) for _ in range(k)]
    total = sum(s.count for s in await asyncio.gather(*subs))
    parallel_rate = total / (time.perf_counter() - start)
    return {
        "rate": beside_rate,
        "parallel_rate": parallel_rate,
        "server_b_per_sub": (srv1 - srv0) * 1024 / k,
        "client_b_per_sub": (cli1 - cli0) * 1024 / k,
    }


async def mode_conns(port: int, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    k = args.fanout
    url = f"tcp://{HOST}:{port}"
    first = await connect(url, config=CONFIG)
    await _stream(first, "bench?n=20000&size=8", 256, args.timeout)  # warm-up
    gc.collect()
    await asyncio.sleep(0.2)
    srv0 = rss_kib(server_pid)
    conns = [first]
    for _ in range(0, k - 1, 50):
        batch = min(50, k - len(conns))
        conns += await asyncio.gather(*(connect(url, config=CONFIG) for _ in range(batch)))
    await asyncio.gather(*(_barrier(c) for c in conns))
    await asyncio.sleep(0.3)
    srv1 = rss_kib(server_pid)
    per = max(1, args.count // k)
    gc.collect()
    start = time.perf_counter()
    got = await asyncio.gather(
        *(_stream(c, f"bench?n={per}&size=8", min(args.window, per), args.timeout) for c in conns)
    )
    rate = sum(s.count for s in got) / (time.perf_counter() - start)
    await asyncio.gather(*(c.aclose() for c in conns), return_exceptions=True)
    return {"rate": rate, "server_b_per_conn": (srv1 - srv0) * 1024 / max(1, k - 1) if k > 1 else 0.0}


async def client_main(args: argparse.Namespace, port: int, server_pid: int) -> dict[str, Any]:
    if args.mode == "conns":
        return await mode_conns(port, args, server_pid)
    async with await connect(f"tcp://{HOST}:{port}", config=CONFIG) as conn:
        if args.mode == "stream":
            return await mode_stream(conn, args)
        if args.mode == "rr":
            return await mode_rr(conn, args)
        if args.mode == "latency":
            return await mode_latency(conn, args)
        if args.mode == "memory":
            return await mode_memory(conn, args, server_pid)
        if args.mode == "subs":
            return await mode_subs(conn, args, server_pid)
    raise SystemExit(f"unknown mode {args.mode}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    add_common_args(parser)
    parser.add_argument(
        "--mode", default="stream", choices=["stream", "rr", "latency", "memory", "subs", "conns"]
    )
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--packed", action="store_true")
    parser.add_argument("--async-for", action="store_true", help="stream mode: consume with async for")
    parser.add_argument("--fanout", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0, help="memory mode: seconds of slow reading")
    parser.add_argument("--slow-factor", type=float, default=10.0)
    parser.add_argument("--sample-interval", type=float, default=0.25)
    args = parser.parse_args(argv)
    loop_name = install_loop(args.uvloop)
    if args.role == "server":
        pin_self(args.server_cpu)
        asyncio.run(serve_main())
        return
    pin_self(args.client_cpu)
    server_args = ["--uvloop"] if args.uvloop else []

    def run() -> None:
        with server_child(__file__, server_args, args.server_cpu) as (port, pid):
            result = asyncio.run(client_main(args, port, pid))
        result.update(impl="rstreams", loop=loop_name, version=rstreams_version())
        emit(result)

    run_with_timeout(run, args.timeout + args.duration + 60)


def rstreams_version() -> str:
    from importlib.metadata import version

    return version("rstreams")


if __name__ == "__main__":
    main()
