"""Deterministic cost of rstreams' network hot paths: Python calls and CPU instructions per operation.

The timed scenarios (``run.py``) move with the machine's load; these counts do not. Client and
server run in one process and one event loop over loopback TCP, so each figure is the work
of both ends for one operation:

  rr       one ``conn.request("echo?d=12345678")`` round trip
  rr-fresh the same with a new name every time (``echo?d=00000000``, ``echo?d=00000001``, ...):
           no subscribe repeats the last one, so neither end reuses its bytes or its frame
  rr-metadata  the same with ~100 bytes of subscribe metadata (as request-response-metadata)
  rr-metadata-fresh  the same with a new traceparent (a new dict) for every request
  latency  one element on an open stream: ``request(1)`` -> ``on_next``
  large    one 64 KiB element of a stream, window 256 (as stream-large)
  small    one 8-byte element of a stream, window 256 (as stream-small)
  refuse   one ``conn.request("missing")``: a subscribe for a name nobody offers and its
           refusal, onError (what a subscribe flood costs the server, as hostile's)
  ceiling  one round trip of the plain-asyncio ping-pong (``net_ceiling.py --mode rr``: an
           8-byte framed echo, no protocol), what the request-response and latency
           scenarios compare rstreams with
  floor-rr  one round trip of the Reactive Streams floor (``net_floor.py --mode rr``): the
           ceiling's transport plus the least a Reactive Streams request/response must signal
  floor-latency  one element on the floor's open stream (``net_floor.py --mode latency``)

Usage::

    python benchmarks/hotpath.py rr latency           # Python calls per operation
    python benchmarks/hotpath.py rr --top 25          # ... and the functions called most
    python benchmarks/hotpath.py rr --instructions    # instructions per operation (valgrind)
    python benchmarks/hotpath.py rr --opcodes --top 25  # bytecodes per operation, by function
    python benchmarks/hotpath.py rr small --metrics   # the same with the server counting metrics
    python benchmarks/hotpath.py rr --no-timers       # keepalive and idle timeout off (no loop timer)
    python benchmarks/hotpath.py rr --no-timers --far-timer --instructions  # ... and one idle loop timer
    python benchmarks/hotpath.py rr --instructions --no-gc  # the collector off while measuring
    python benchmarks/hotpath.py ceiling floor-rr floor-latency --instructions  # no rstreams code
    python benchmarks/hotpath.py rr latency ceiling --loop uvloop --instructions  # on uvloop

Calls are counted with ``sys.setprofile`` over ``--count`` operations after a warm-up:
``calls`` are Python function calls (the event loop's included: the ceiling pays those
too), ``rstreams`` those of rstreams' own code (none in ``ceiling`` and the ``floor``
modes, which ``--metrics`` and ``--no-timers`` do not change: they have neither),
``c_calls`` calls of builtins. For rr, latency and the plain modes they are exact (one
frame each way); for streams they depend a little on how the kernel splits reads.
``--instructions`` runs this script under valgrind (cachegrind, no cache simulation:
user-space instructions, deterministic) with ``--count`` and with twice as many operations
and reports the difference per operation, so start-up and warm-up cancel out. Under
valgrind a run is ~50x slower: keep ``--count`` small.

``--opcodes`` counts the bytecodes each function executes instead of its calls
(``sys.settrace`` with opcode events, over ``--count`` operations; ``--top N`` lists the
functions that execute most, ``--lines`` their lines too): where an operation's work goes,
deterministic like ``--instructions`` and in seconds rather than minutes. It counts only
Python code (a builtin's work is one bytecode), so a cut is confirmed with
``--instructions``; on these paths one bytecode is about 40 instructions.

``--far-timer`` arms one loop timer an hour away while the operations are measured (a
callback that never comes): with ``--no-timers``, or in ``ceiling``, what asyncio's loop
pays on every turn for any timer armed, however far, apart from the work of what armed it
(the keepalive's own work per read is a clock read; the rest of what ``--no-timers`` saves
is this).

``--no-gc`` turns the garbage collector off (``gc.disable()``) for the measured operations,
after the warm-up and a ``gc.collect()``, in every run, the ones under valgrind included.
Where collections fall moves an instruction count by 1-2 k per operation between otherwise
equal runs, which hides small cuts in an A/B comparison; without it the counts are what a
program with the collector on pays.

``--loop uvloop`` runs every mode of the command on uvloop's event loop instead of asyncio's
(both ends, and the runs under valgrind too; uvloop must be installed), so that rstreams' and
the ceiling's counts on that loop come from one command: uvloop's loop, transports and timers
are C, so what is left of an operation's Python work is the libraries' own.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import net_ceiling
import net_floor
from _netcommon import HOST
from net_rstreams import CONFIG, OneAtATime, WindowSubscriber, _bench, _echo, fresh_metadata_of, metadata_of

from rstreams.net import Connection, UnknownPublisherError, connect, serve

RSTREAMS_MODES = ("rr", "rr-fresh", "rr-metadata", "rr-metadata-fresh", "latency", "large", "small", "refuse")
PLAIN_MODES = ("ceiling", "floor-rr", "floor-latency")
"""Modes without rstreams: the ceiling's and the floor's client and server (stdlib only)."""
MODES = RSTREAMS_MODES + PLAIN_MODES
WARM_UP = {
    "rr": 200,
    "rr-metadata": 200,
    "rr-fresh": 200,
    "rr-metadata-fresh": 200,
    "latency": 200,
    "large": 200,
    "small": 10_000,
    "refuse": 200,
    "ceiling": 200,
    "floor-rr": 200,
    "floor-latency": 200,
}
"""Operations before measuring (fixed, so that runs of different lengths difference cleanly)."""
COUNTS = {
    "rr": 2000,
    "rr-metadata": 2000,
    "rr-fresh": 2000,
    "rr-metadata-fresh": 2000,
    "latency": 2000,
    "large": 4000,
    "small": 100_000,
    "refuse": 2000,
    "ceiling": 2000,
    "floor-rr": 2000,
    "floor-latency": 2000,
}
COUNTS_UNDER_VALGRIND = {
    "rr": 300,
    "rr-metadata": 300,
    "rr-fresh": 300,
    "rr-metadata-fresh": 300,
    "latency": 300,
    "large": 300,
    "small": 20_000,
    "refuse": 300,
    "ceiling": 300,
    "floor-rr": 300,
    "floor-latency": 300,
}
LOOPS = ("asyncio", "uvloop")
LARGE = 64 * 1024
WINDOW = 256
_RSTREAMS = str(Path(__import__("rstreams").__file__).resolve().parent)


class Opcodes:
    """A ``sys.settrace`` hook counting the bytecodes executed, by function (and by line)."""

    def __init__(self, lines: bool) -> None:
        self.by_function: collections.Counter[str] = collections.Counter()
        self.ours = 0
        self.by_line: collections.Counter[tuple[str, int]] | None = collections.Counter() if lines else None

    def __call__(self, frame: Any, event: str, arg: Any) -> Any:
        if event == "call":
            frame.f_trace_opcodes = True
            frame.f_trace_lines = False
        elif event == "opcode":
            code = frame.f_code
            if code.co_filename.startswith(_RSTREAMS):
                self.ours += 1
            where = code.co_filename.rsplit("/", 2)
            name = f"{'/'.join(where[-2:])}:{code.co_name}"
            self.by_function[name] += 1
            if self.by_line is not None:
                self.by_line[name, frame.f_lineno or 0] += 1
        return self


class Counter:
    """A ``sys.setprofile`` hook counting calls, optionally by function."""

    def __init__(self, by_function: bool) -> None:
        self.calls = 0
        self.ours = 0
        self.c_calls = 0
        self.by_function: collections.Counter[str] | None = collections.Counter() if by_function else None

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.calls += 1
            code = frame.f_code
            if code.co_filename.startswith(_RSTREAMS):
                self.ours += 1
            if self.by_function is not None:
                where = code.co_filename.rsplit("/", 2)
                self.by_function[f"{'/'.join(where[-2:])}:{code.co_name}"] += 1
        elif event == "c_call":
            self.c_calls += 1
            if self.by_function is not None:
                self.by_function[f"<c> {getattr(arg, '__qualname__', arg)}"] += 1


async def _stream(conn: Connection, count: int, size: int) -> None:
    done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    subscriber = WindowSubscriber(WINDOW, done)
    conn.publisher(f"bench?n={count}&size={size}").subscribe(subscriber)
    await asyncio.wait_for(done, 300)
    if subscriber.count != count:
        raise AssertionError(f"received {subscriber.count} of {count}")


async def _operations(conn: Connection, mode: str) -> Callable[[int], Awaitable[None]]:
    """``run(n)``: ``n`` operations of ``mode`` on ``conn``."""
    if mode == "rr":

        async def rr(n: int) -> None:
            for _ in range(n):
                if await conn.request("echo?d=12345678") != b"12345678":
                    raise AssertionError("wrong echo")

        return rr
    if mode == "rr-fresh":
        sent = 0

        async def rr_fresh(n: int) -> None:
            nonlocal sent
            names = [(f"echo?d={i:08d}", b"%08d" % i) for i in range(sent, sent + n)]  # made first
            sent += n
            for name, value in names:
                if await conn.request(name) != value:
                    raise AssertionError("wrong echo")

        return rr_fresh
    if mode == "rr-metadata":
        metadata = metadata_of(100)

        async def rr_metadata(n: int) -> None:
            for _ in range(n):
                if await conn.request("echo?d=12345678", metadata=metadata) != b"12345678":
                    raise AssertionError("wrong echo")

        return rr_metadata
    if mode == "rr-metadata-fresh":
        make = fresh_metadata_of(100)

        async def rr_metadata_fresh(n: int) -> None:
            for _ in range(n):
                if await conn.request("echo?d=12345678", metadata=make()) != b"12345678":
                    raise AssertionError("wrong echo")

        return rr_metadata_fresh
    if mode == "refuse":

        async def refuse(n: int) -> None:
            for _ in range(n):
                try:
                    await conn.request("missing")
                except UnknownPublisherError:
                    continue
                raise AssertionError("a subscribe for an unknown name was not refused")

        return refuse
    if mode == "latency":
        one = OneAtATime()
        conn.publisher("bench?n=100000000&size=8").subscribe(one)
        await one.subscribed

        async def latency(n: int) -> None:
            for _ in range(n):
                await one.next()

        return latency
    size = LARGE if mode == "large" else 8
    return lambda n: _stream(conn, n, size)


async def measure(
    mode: str,
    count: int,
    *,
    profile: bool,
    top: int,
    metrics: bool = False,
    timers: bool = True,
    collect: bool = True,
    opcodes: Opcodes | None = None,
    far_timer: bool = False,
) -> dict[str, Any]:
    """Counts of ``count`` operations of ``mode``; ``collect=False``: the collector off while measuring;
    ``opcodes``: the bytecodes counted there instead of the calls; ``far_timer``: one loop timer
    an hour away armed meanwhile."""
    if mode in PLAIN_MODES:
        return await _measure_plain(
            mode, count, profile=profile, top=top, collect=collect, opcodes=opcodes, far_timer=far_timer
        )
    offer = {"bench": _bench, "echo": _echo}
    # without timers: keepalive and idle timeout off on both ends, no loop timer armed (as the ceiling)
    off: dict[str, Any] = {} if timers else {"keepalive": None}
    server_off: dict[str, Any] = {} if timers else {"keepalive": None, "idle_timeout": None}
    server = await serve("tcp://127.0.0.1:0", offer, config=CONFIG, metrics=metrics or None, **server_off)
    try:
        async with await connect(server.url, config=CONFIG, **off) as conn:
            run = await _operations(conn, mode)
            return await _count(
                run,
                mode,
                count,
                profile=profile,
                top=top,
                collect=collect,
                opcodes=opcodes,
                far_timer=far_timer,
            )
    finally:
        server.close()
        await server.wait_closed()


def _never() -> None:
    """What the far timer would call (it never comes: it is cancelled after the operations)."""


async def _count(
    run: Callable[[int], Awaitable[None]],
    mode: str,
    count: int,
    *,
    profile: bool,
    top: int,
    collect: bool,
    opcodes: Opcodes | None = None,
    far_timer: bool = False,
) -> dict[str, Any]:
    """Warm up, then ``run(count)``, its calls counted when ``profile`` (its bytecodes instead,
    into ``opcodes``, when given), the collector off during it unless ``collect``, a loop timer
    an hour away armed during it when ``far_timer``."""
    await run(WARM_UP[mode])
    far = asyncio.get_running_loop().call_later(3600, _never) if far_timer else None
    gc.collect()
    counter = Counter(top > 0) if profile and opcodes is None else None
    if not collect:
        gc.disable()
    try:
        if counter is not None:
            sys.setprofile(counter)
        elif opcodes is not None:
            sys.settrace(opcodes)
        try:
            await run(count)
        finally:
            sys.setprofile(None)
            sys.settrace(None)
    finally:
        if not collect:
            gc.enable()
        if far is not None:
            far.cancel()
    if counter is None:
        return {}
    result: dict[str, Any] = {
        "calls": counter.calls / count,
        "rstreams": counter.ours / count,
        "c_calls": counter.c_calls / count,
    }
    if counter.by_function is not None:
        result["top"] = [(name, n / count) for name, n in counter.by_function.most_common(top)]
    return result


async def _measure_plain(
    mode: str,
    count: int,
    *,
    profile: bool,
    top: int,
    collect: bool,
    opcodes: Opcodes | None = None,
    far_timer: bool = False,
) -> dict[str, Any]:
    """The ``ceiling`` and ``floor`` modes: the stdlib scripts' own servers and clients."""
    loop = asyncio.get_running_loop()
    ceiling = mode == "ceiling"
    server = await (loop.create_server(net_ceiling.Sender, HOST, 0) if ceiling else net_floor.serve())
    port = server.sockets[0].getsockname()[1]
    try:
        if ceiling:
            receiver = await net_ceiling._open(port, net_ceiling.ECHO, 0, 8, 0)
            try:
                return await _count(
                    _ceiling_rr(receiver),
                    mode,
                    count,
                    profile=profile,
                    top=top,
                    collect=collect,
                    opcodes=opcodes,
                    far_timer=far_timer,
                )
            finally:
                receiver.transport.close()  # type: ignore[union-attr]
        client = await net_floor.connect(port)
        try:
            return await _count(
                _floor_operations(client, mode),
                mode,
                count,
                profile=profile,
                top=top,
                collect=collect,
                opcodes=opcodes,
                far_timer=far_timer,
            )
        finally:
            client.close()
    finally:
        server.close()
        await server.wait_closed()


def _ceiling_rr(receiver: net_ceiling.Receiver) -> Callable[[int], Awaitable[None]]:
    """``run(n)``: ``n`` of the ceiling's round trips, each ``net_ceiling.echo_once``'s."""
    once = net_ceiling.echo_once(receiver)

    async def ceiling(n: int) -> None:
        for _ in range(n):
            if await once() != b"12345678":
                raise AssertionError("wrong echo")

    return ceiling


def _floor_operations(client: net_floor.FloorClient, mode: str) -> Callable[[int], Awaitable[None]]:
    """``run(n)``: ``n`` of the floor's round trips (``floor-rr``) or elements (``floor-latency``)."""
    if mode == "floor-rr":

        async def floor_rr(n: int) -> None:
            for _ in range(n):
                if await client.request(net_floor.ECHO_ROUTE) != net_floor.ELEMENT:
                    raise AssertionError("wrong echo")

        return floor_rr
    one = net_floor.OneAtATime(client.loop)
    client.publisher(net_floor.REPEAT_ROUTE).subscribe(one)

    async def floor_latency(n: int) -> None:
        for _ in range(n):
            await one.next()

    return floor_latency


def instructions(
    mode: str,
    count: int,
    *,
    metrics: bool = False,
    timers: bool = True,
    collect: bool = True,
    far_timer: bool = False,
    loop: str = "asyncio",
) -> float:
    """Instructions per operation, counted by valgrind (cachegrind's ``I refs``: deterministic,
    and available where ``perf stat -e instructions:u`` is not, as on VMs without hardware
    counters): runs of ``count`` and ``2 * count`` operations, differenced."""
    flags = (["--metrics"] if metrics else []) + ([] if timers else ["--no-timers"])
    flags += ([] if collect else ["--no-gc"]) + (["--far-timer"] if far_timer else [])
    flags += [] if loop == "asyncio" else ["--loop", loop]
    runs = [[__file__, mode, "--count", str(n), "--no-profile", *flags] for n in (count, 2 * count)]
    once, twice = valgrind_instructions(runs)
    return (twice - once) / count


def valgrind_instructions(runs: list[list[str]]) -> list[int]:
    """The instructions each run (this interpreter's arguments: a script and its own) executed,
    counted by valgrind's cachegrind, every run at once in a process of its own."""
    started = []
    for arguments in runs:
        command = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
        command += [sys.executable, *arguments]
        started.append(subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=os.environ))
    totals = []
    for run in started:
        _, stderr = run.communicate()
        if run.returncode:
            raise RuntimeError(f"the run failed: {stderr[-2000:]}")
        refs = [line for line in stderr.splitlines() if "I   refs:" in line or "I refs:" in line]
        if not refs:
            raise RuntimeError(f"valgrind printed no instruction count: {stderr[-2000:]!r}")
        totals.append(int(refs[0].rsplit(":", 1)[1].replace(",", "")))
    return totals


def run_on(loop: str, main: Coroutine[Any, Any, dict[str, Any]]) -> dict[str, Any]:
    """``main`` run to its end on a new event loop of the kind ``loop`` names (``LOOPS``)."""
    if loop == "asyncio":
        return asyncio.run(main)
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("modes", nargs="+", choices=MODES)
    parser.add_argument("--count", type=int, default=0, help="operations measured (default: per mode)")
    parser.add_argument("--top", type=int, default=0, help="also list the N functions called most")
    parser.add_argument("--instructions", action="store_true", help="instructions per operation (valgrind)")
    parser.add_argument(
        "--opcodes",
        action="store_true",
        help="bytecodes per operation, not calls (by function with --top)",
    )
    parser.add_argument(
        "--lines", action="store_true", help="with --opcodes --top: each function's lines too"
    )
    parser.add_argument(
        "--metrics", action="store_true", help="the server counts metrics (serve(metrics=True))"
    )
    parser.add_argument(
        "--no-timers",
        dest="timers",
        action="store_false",
        help="keepalive and idle timeout off on both ends: no loop timer armed, as in the ceiling",
    )
    parser.add_argument(
        "--no-gc",
        dest="collect",
        action="store_false",
        help="the garbage collector off (gc.disable()) while the operations are measured, "
        "under valgrind too: steadier counts for A/B comparisons",
    )
    parser.add_argument(
        "--far-timer",
        action="store_true",
        help="one loop timer an hour away armed while measuring (with --no-timers: what any armed "
        "timer costs the loop)",
    )
    parser.add_argument(
        "--loop",
        choices=LOOPS,
        default="asyncio",
        help="the event loop every mode runs on, the runs under valgrind too (default: asyncio's own)",
    )
    parser.add_argument("--no-profile", dest="profile", action="store_false", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    defaults = COUNTS_UNDER_VALGRIND if args.instructions else COUNTS
    for mode in args.modes:
        count = args.count or defaults[mode]
        if args.instructions and args.profile:
            per_op = instructions(
                mode,
                count,
                metrics=args.metrics,
                timers=args.timers,
                collect=args.collect,
                far_timer=args.far_timer,
                loop=args.loop,
            )
            print(f"{mode:8} {per_op:12,.0f} instructions per operation ({count} vs {2 * count} operations)")
            continue
        if args.opcodes:
            _print_opcodes(mode, count, args)
            continue
        result = run_on(
            args.loop,
            measure(
                mode,
                count,
                profile=args.profile,
                top=args.top,
                metrics=args.metrics,
                timers=args.timers,
                collect=args.collect,
                far_timer=args.far_timer,
            ),
        )
        if not result:
            continue
        print(
            f"{mode:8} {result['calls']:8.1f} Python calls per operation "
            f"({result['rstreams']:.1f} in rstreams), {result['c_calls']:.1f} builtin calls"
        )
        for name, per_op in result.get("top", []):
            print(f"    {per_op:8.2f}  {name}")


def _print_opcodes(mode: str, count: int, args: argparse.Namespace) -> None:
    """``--opcodes``: the bytecodes of ``count`` operations of ``mode``, per operation."""
    opcodes = Opcodes(args.lines)
    run_on(
        args.loop,
        measure(
            mode,
            count,
            profile=True,
            top=0,
            metrics=args.metrics,
            timers=args.timers,
            collect=args.collect,
            opcodes=opcodes,
            far_timer=args.far_timer,
        ),
    )
    total = sum(opcodes.by_function.values())
    print(f"{mode:8} {total / count:8.1f} bytecodes per operation ({opcodes.ours / count:.1f} in rstreams)")
    for name, n in opcodes.by_function.most_common(args.top):
        print(f"    {n / count:8.1f}  {name}")
        if opcodes.by_line is not None:
            lines = sorted((line, k) for (where, line), k in opcodes.by_line.items() if where == name)
            for line, k in lines:
                print(f"        {k / count:8.1f}  line {line}")


if __name__ == "__main__":
    main()
