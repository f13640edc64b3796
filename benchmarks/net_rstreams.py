"""rstreams over RS.io on loopback TCP: the rstreams side of every network scenario.

Run by ``benchmarks/run.py`` in rstreams' own venv; by hand::

    python benchmarks/net_rstreams.py client --mode stream --count 200000 --size 8 --window 256
    python benchmarks/net_rstreams.py client --mode stream --count 200000 --size 8 --packed
    python benchmarks/net_rstreams.py client --mode stream --count 20000000 --window 0 --batched
    python benchmarks/net_rstreams.py client --mode rr --count 5000
    python benchmarks/net_rstreams.py client --mode rr --count 5000 --metadata 100
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
           demand 1, one onNext, onComplete). Also per-round-trip p50/p99. ``--metadata N``:
           every subscribe carries about N bytes of metadata (a W3C traceparent and a
           padding entry, PROTOCOL.md §18), passed to each ``conn.request`` call;
           ``--fresh-traceparent``: a new dict with a new trace id for every request, as a
           traced client sends (nothing a cache could remember).
  latency  one long-lived stream; per element: ``request(1)`` then wait for the ``on_next``.
  ``--no-timers`` (rr, latency): keepalive and idle timeout off on both ends, so that no loop
           timer is armed, like the plain-asyncio ceiling (which has none).
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
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _netcommon import (
    HOST,
    Settles,
    SlowReader,
    Streams,
    connections_memory,
    idle_subscriptions,
    make_parser,
    percentiles,
    round_trips,
    run_roles,
    serve_until_stdin_closes,
    slow_consumer_memory,
)

import rstreams
from rstreams.api import Subscription
from rstreams.net import INT64, Connection, connect, fixed_size, serve, with_codec
from rstreams.wire import ConnectionConfig

UNBOUNDED = 2**63 - 1
CONFIG = ConnectionConfig(max_subscriptions=20_000)  # the default (1024) refuses the 10,000 scenario


# ------------------------------------------------------------------------------ server
def _bench(params: dict[str, str]) -> rstreams.Flow[bytes]:
    size = int(params.get("size", "8"))
    element = os.urandom(size)
    return rstreams.from_iterable(itertools.repeat(element, int(params["n"])))


def _ints(params: dict[str, str]) -> rstreams.Flow[list[int]]:
    """``n`` ints as lists of up to 8,192: served with ``with_codec(..., INT64, batched=True)``."""
    n, chunk = int(params["n"]), 8192
    block = list(range(chunk))
    return rstreams.from_iterable([block] * (n // chunk) + ([block[: n % chunk]] if n % chunk else []))


def _echo(params: dict[str, str]) -> rstreams.Flow[bytes]:
    return rstreams.just(params.get("d", "x").encode())


async def serve_main() -> None:
    offer: dict[str, Any] = {
        "bench": _bench,
        "packed8": with_codec(_bench, fixed_size(8)),
        "ints": with_codec(_ints, INT64, batched=True),
        "echo": _echo,
    }
    # --metrics reaches the server child through the environment (it is started with --uvloop only)
    metrics = os.environ.get(METRICS_ENV) == "1"
    timers = {} if os.environ.get(NO_TIMERS_ENV) != "1" else {"keepalive": None, "idle_timeout": None}
    server = await serve(f"tcp://{HOST}:0", offer, config=CONFIG, metrics=True if metrics else None, **timers)
    await serve_until_stdin_closes(int(server.url.rsplit(":", 1)[1]))


METRICS_ENV = "RSTREAMS_BENCH_METRICS"
"""Set to ``1`` (by ``--metrics``) for the server child: it then serves with ``metrics=True``."""

NO_TIMERS_ENV = "RSTREAMS_BENCH_NO_TIMERS"
"""Set to ``1`` (by ``--no-timers``) for the server child: it then serves with ``keepalive=None,
idle_timeout=None``, and the client connects with ``keepalive=None``: no loop timer is armed,
as in the plain-asyncio ceiling (an armed timer, however far away, costs asyncio's loop a
clock read and a heap check on every turn)."""


# ------------------------------------------------------------------------------ client
class WindowSubscriber(Settles):
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


class BatchCounter(Settles):
    """Requests everything and counts the ints of each packed frame (``batched=True``: a list)."""

    __slots__ = ("count", "done", "nbytes")

    def __init__(self, done: asyncio.Future[None]) -> None:
        self.count = 0
        self.nbytes = 0
        self.done = done

    def on_subscribe(self, subscription: Subscription) -> None:
        subscription.request(UNBOUNDED)

    def on_next(self, item: list[int]) -> None:
        self.count += len(item)
        self.nbytes += 8 * len(item)


async def _stream_batched(conn: Connection, name: str, limit: float) -> BatchCounter:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    subscriber = BatchCounter(done)
    conn.publisher(name, codec=INT64, batched=True).subscribe(subscriber)
    await asyncio.wait_for(done, limit)
    return subscriber


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


class SlowSubscriber(SlowReader):
    """Requests 2**63-1, then reads at ``rate`` elements/s: a slow consumer that asked for everything."""

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self.mark = time.perf_counter()
        subscription.request(UNBOUNDED)

    def on_next(self, item: bytes) -> None:
        if self.tick():
            self.subscription.cancel()
            self.on_complete()


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
    source = "ints" if args.batched else "packed8" if args.packed else "bench"
    if (args.packed or args.batched) and args.size != 8:
        raise SystemExit("--packed and --batched are served for 8-byte elements only")
    if args.batched and args.window > 0:
        raise SystemExit("--batched requests everything: use --window 0")
    window = args.window if args.window > 0 else UNBOUNDED

    async def once(n: int) -> tuple[int, int]:
        name = f"{source}?n={n}&size={args.size}"
        if args.batched:
            counted = await _stream_batched(conn, name, args.timeout)
            return counted.count, counted.nbytes
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


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def metadata_of(size: int) -> dict[str, str]:
    """Subscribe metadata of about ``size`` encoded bytes: a traceparent (55 bytes + 14 of key
    and lengths), then ``x-pad`` filling the rest."""
    pad = max(0, size - 69 - 7)
    return {"traceparent": TRACEPARENT, "x-pad": "p" * pad}


def fresh_metadata_of(size: int) -> Callable[[], dict[str, str]]:
    """Like :func:`metadata_of`, but each call makes a new dict whose traceparent has a new
    trace id (same length), as a traced client does for every request."""
    pad = "p" * max(0, size - 69 - 7)
    trace_ids = itertools.count(1)

    def make() -> dict[str, str]:
        return {"traceparent": f"00-{next(trace_ids):032x}-00f067aa0ba902b7-01", "x-pad": pad}

    return make


async def mode_rr(conn: Connection, args: argparse.Namespace) -> dict[str, Any]:
    if args.metadata and args.fresh_traceparent:
        make = fresh_metadata_of(args.metadata)
        return await round_trips(
            lambda: conn.request("echo?d=12345678", metadata=make()), b"12345678", args.count
        )
    if args.metadata:
        metadata = metadata_of(args.metadata)
        return await round_trips(
            lambda: conn.request("echo?d=12345678", metadata=metadata), b"12345678", args.count
        )
    return await round_trips(lambda: conn.request("echo?d=12345678"), b"12345678", args.count)


class OneAtATime:
    """Requests one element at a time on a long-lived stream; ``next()`` awaits it."""

    def __init__(self) -> None:
        self.subscription: Subscription | None = None
        self.waiter: asyncio.Future[bytes] | None = None
        self.loop = asyncio.get_running_loop()  # once: as the ceiling's client (a getpid() per call on 3.11)
        self.subscribed = self.loop.create_future()

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
        self.waiter = self.loop.create_future()
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
    def subscribe(reader: SlowReader, count: int) -> None:
        conn.publisher(f"bench?n={count}&size={args.size}").subscribe(reader)  # type: ignore[arg-type]

    return await slow_consumer_memory(SlowSubscriber, subscribe, args.count, server_pid, args)


def _streams(port: int, args: argparse.Namespace) -> Streams[Connection]:
    async def stream(conn: Connection, count: int, window: int) -> int:
        return (await _stream(conn, f"bench?n={count}&size=8", window, args.timeout)).count

    return Streams(
        connect=lambda: connect(f"tcp://{HOST}:{port}", config=CONFIG),
        stream=stream,
        barrier=lambda conn: conn.request("echo?d=barrier"),
        close=lambda conn: conn.aclose(),
    )


async def mode_subs(conn: Connection, port: int, args: argparse.Namespace, server_pid: int) -> dict[str, Any]:
    idle_flow = conn.publisher("bench?n=1000000&size=8")

    def open_idle(conn: Connection) -> IdleSubscriber:
        subscriber = IdleSubscriber()
        idle_flow.subscribe(subscriber)
        return subscriber

    def cancel(subscriber: IdleSubscriber) -> None:
        subscriber.subscription.cancel()  # type: ignore[union-attr]

    return await idle_subscriptions(_streams(port, args), conn, open_idle, cancel, server_pid, args)


async def client_main(args: argparse.Namespace, port: int, server_pid: int) -> dict[str, Any]:
    if args.mode == "conns":
        return await connections_memory(_streams(port, args), server_pid, args)
    timers = {"keepalive": None} if args.no_timers else {}
    async with await connect(f"tcp://{HOST}:{port}", config=CONFIG, **timers) as conn:
        if args.mode == "stream":
            return await mode_stream(conn, args)
        if args.mode == "rr":
            return await mode_rr(conn, args)
        if args.mode == "latency":
            return await mode_latency(conn, args)
        if args.mode == "memory":
            return await mode_memory(conn, args, server_pid)
        if args.mode == "subs":
            return await mode_subs(conn, port, args, server_pid)
    raise SystemExit(f"unknown mode {args.mode}")


def main(argv: list[str] | None = None) -> None:
    parser = make_parser(__doc__, ["stream", "rr", "latency", "memory", "subs", "conns"])
    parser.add_argument("--packed", action="store_true")
    parser.add_argument(
        "--batched", action="store_true", help="stream mode: INT64 lists both ends (batched=True), --window 0"
    )
    parser.add_argument("--async-for", action="store_true", help="stream mode: consume with async for")
    parser.add_argument("--metrics", action="store_true", help="the server counts (serve(..., metrics=True))")
    parser.add_argument(
        "--metadata", type=int, default=0, help="rr mode: about this many bytes of metadata per subscribe"
    )
    parser.add_argument(
        "--fresh-traceparent",
        action="store_true",
        help="rr mode with --metadata: a new traceparent (a new dict) for every request",
    )
    parser.add_argument(
        "--no-timers",
        action="store_true",
        help="keepalive and idle timeout off on both ends (no loop timer armed, as in the ceiling)",
    )
    args = parser.parse_args(argv)
    if args.metrics:
        os.environ[METRICS_ENV] = "1"
    if args.no_timers:
        os.environ[NO_TIMERS_ENV] = "1"
    run_roles(args, __file__, serve_main, client_main, impl="rstreams", version=version("rstreams"))


if __name__ == "__main__":
    main()
