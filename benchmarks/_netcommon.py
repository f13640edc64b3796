"""What every network benchmark script shares: roles, pinning, the server child, RSS, results.

Stdlib only: the same module runs in rstreams' venv and in the peers' venv.

Each network script (``net_rstreams.py``, ``net_rsocket.py``, ``net_ceiling.py``) has two
roles. ``client`` is what the harness starts (pinned to one CPU); it starts the ``server``
role of the same script as a child process pinned to another CPU (``taskset -c``, as
/work/shared/notes/python-peers.md did), reads the port the server prints, runs one
warm-up and one measured run, and prints one JSON object as its last line of output.
The server child ends when its stdin closes (the client went away), so nothing outlives
a run, and every wait is bounded.

The scripts for rstreams and rsocket-py also share their arguments (:func:`make_parser`),
their ``main`` (:func:`run_roles`) and the procedures of the modes that measure memory
(:func:`slow_consumer_memory`, :func:`connections_memory`, :func:`idle_subscriptions`) and
round trips (:func:`round_trips`): each script passes in how its library connects,
subscribes and counts, so both sides are measured by the same steps.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator, Sequence
from typing import Any, Generic, TypeVar

__all__ = [
    "RssSampler",
    "Settles",
    "SlowReader",
    "Streams",
    "add_common_args",
    "child_line",
    "connections_memory",
    "emit",
    "idle_subscriptions",
    "install_loop",
    "make_parser",
    "percentiles",
    "pin_self",
    "round_trips",
    "rss_kib",
    "run_roles",
    "serve_until_stdin_closes",
    "server_child",
    "slow_consumer_memory",
    "stop_child",
    "wait_for_stdin_eof",
]

C = TypeVar("C")  # a connection (or client) of the library under test
H = TypeVar("H")  # a handle on one idle subscription

HOST = "127.0.0.1"


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("role", choices=["client", "server"])
    parser.add_argument("--uvloop", action="store_true", help="run both processes on uvloop")
    parser.add_argument("--client-cpu", type=int, default=1, help="-1: do not pin")
    parser.add_argument("--server-cpu", type=int, default=0, help="-1: do not pin")
    parser.add_argument("--timeout", type=float, default=300.0, help="hard limit for the whole run (s)")


def make_parser(doc: str | None, modes: Sequence[str]) -> argparse.ArgumentParser:
    """The arguments of a library's script (``net_rstreams.py``, ``net_rsocket.py``)."""
    parser = argparse.ArgumentParser(description=(doc or "").splitlines()[0])
    add_common_args(parser)
    parser.add_argument("--mode", default=modes[0], choices=list(modes))
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--fanout", type=int, default=1)
    parser.add_argument("--duration", type=float, default=60.0, help="memory mode: seconds of slow reading")
    parser.add_argument("--slow-factor", type=float, default=10.0)
    parser.add_argument("--sample-interval", type=float, default=0.25)
    return parser


def run_roles(
    args: argparse.Namespace,
    script: str,
    serve: Callable[[], Coroutine[Any, Any, None]],
    client: Callable[[argparse.Namespace, int, int], Coroutine[Any, Any, dict[str, Any]]],
    *,
    impl: str,
    version: str,
) -> None:
    """Play ``args.role`` of ``script``: ``serve()``; or start the server child, run
    ``client(args, port, server_pid)`` and emit its result, all within the time limit."""
    loop_name = install_loop(args.uvloop)
    if args.role == "server":
        pin_self(args.server_cpu)
        asyncio.run(serve())
        return
    pin_self(args.client_cpu)

    def run() -> None:
        with server_child(script, ["--uvloop"] if args.uvloop else [], args.server_cpu) as (port, pid):
            result = asyncio.run(client(args, port, pid))
        result.update(impl=impl, loop=loop_name, version=version)
        emit(result)

    run_with_timeout(run, args.timeout + args.duration + 60)


def pin_self(cpu: int) -> None:
    """Pin this process to ``cpu`` if it exists (``-1``: leave it alone)."""
    if cpu < 0 or not hasattr(os, "sched_setaffinity"):
        return
    with contextlib.suppress(OSError):
        if cpu in os.sched_getaffinity(0) or cpu < (os.cpu_count() or 1):
            os.sched_setaffinity(0, {cpu})


def install_loop(use_uvloop: bool) -> str:
    if use_uvloop:
        import uvloop

        uvloop.install()
        return "uvloop"
    return "asyncio"


STARTUP_GUARD = 600.0
"""Seconds a client waits for its server child's port: a hang guard, not a start-up time to meet
(on a loaded machine, or under valgrind, a child takes long to import and listen). The child's
printed port is the readiness signal; a child that exits first ends the wait at once."""


@contextlib.contextmanager
def server_child(
    script: str, args: Sequence[str], cpu: int, timeout: float = STARTUP_GUARD
) -> Iterator[tuple[int, int]]:
    """Start ``script server *args`` pinned to ``cpu``; yields ``(port, pid)`` once the child has
    printed the port it listens on; stops it at exit."""
    command = [sys.executable, script, "server", *args]
    if cpu >= 0 and shutil.which("taskset") and (os.cpu_count() or 1) > cpu:
        command = ["taskset", "-c", str(cpu), *command]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield _await_port(child, command, timeout), child.pid
    finally:
        stop_child(child)


def _await_port(child: subprocess.Popen[str], command: Sequence[str], timeout: float) -> int:
    """The port the child prints once it listens (:func:`announce_port`)."""
    line = child_line(child, command, timeout, "its port")
    if not line.isdigit():
        child.kill()
        raise RuntimeError(f"server child ({' '.join(command)}) printed {line!r} where its port was expected")
    return int(line)


def child_line(child: subprocess.Popen[str], command: Sequence[str], timeout: float, what: str) -> str:
    """The first line ``child`` (started as ``command``) prints, stripped: the sign that it is
    ready, ``what`` in the errors. Read in a thread that ends with that line or with the child's
    stdout (its exit); a child that exits first fails at once naming its exit code, one still
    silent after ``timeout`` seconds (a hang guard, not a start-up time to meet) is killed."""
    out: list[str] = []
    assert child.stdout is not None
    stdout = child.stdout
    reader = threading.Thread(target=lambda: out.append(stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    shown = " ".join(command)
    if not out:
        child.kill()
        child.wait()
        raise TimeoutError(
            f"server child ({shown}) was still running without printing {what} after {timeout:g} s"
            " (the timeout is a hang guard)"
        )
    line = out[0].strip()
    if not line:
        raise RuntimeError(f"server child ({shown}) exited with code {child.wait()} before printing {what}")
    return line


def stop_child(child: subprocess.Popen[str], grace: float = 5.0) -> None:
    """End ``child``: close its stdin (a server child's sign to exit) and wait ``grace`` seconds,
    then terminate it and wait as long again, then kill it; close its stdout."""
    if child.stdin is not None:
        with contextlib.suppress(OSError):
            child.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            child.wait(grace)
    if child.poll() is None:
        child.terminate()
        try:
            child.wait(grace)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(grace)
    if child.stdout is not None:
        child.stdout.close()


def wait_for_stdin_eof() -> None:
    """Server side: block (in a thread) until the client closes our stdin, then exit hard."""

    def watch() -> None:
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def announce_port(port: int) -> None:
    print(port, flush=True)


async def serve_until_stdin_closes(port: int) -> None:
    """Server side, once listening on ``port``: tell the client, then serve until it goes."""
    announce_port(port)
    wait_for_stdin_eof()
    await asyncio.Event().wait()


def rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` in KiB, read from /proc (no psutil); 0 where /proc is missing."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class RssSampler:
    """Samples a process's RSS every ``interval`` seconds in a thread: ``[(t, KiB), ...]``."""

    def __init__(self, pid: int, interval: float = 0.25) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._start = time.perf_counter()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> RssSampler:
        self._start = time.perf_counter()
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append((round(time.perf_counter() - self._start, 3), rss_kib(self.pid)))
            self._stop.wait(self.interval)

    def stop(self) -> list[tuple[float, int]]:
        self._stop.set()
        self._thread.join(2)
        self.samples.append((round(time.perf_counter() - self._start, 3), rss_kib(self.pid)))
        return self.samples

    @property
    def latest(self) -> int:
        return self.samples[-1][1] if self.samples else 0


def percentiles(samples_s: list[float]) -> dict[str, float]:
    """p50/p90/p99/max of latencies given in seconds, returned in microseconds."""
    ordered = sorted(samples_s)
    n = len(ordered)

    def at(q: float) -> float:
        return ordered[min(n - 1, int(q * n))] * 1e6

    return {
        "p50_us": at(0.50),
        "p90_us": at(0.90),
        "p99_us": at(0.99),
        "max_us": ordered[-1] * 1e6,
        "mean_us": statistics.fmean(ordered) * 1e6,
    }


class Settles:
    """A Subscriber's ``on_error``/``on_complete``: settle the future ``done``, once."""

    __slots__ = ()
    done: asyncio.Future[None]

    def on_error(self, error: BaseException) -> None:
        if not self.done.done():
            self.done.set_exception(error)

    def on_complete(self) -> None:
        if not self.done.done():
            self.done.set_result(None)


class SlowReader(Settles):
    """A Subscriber that asked for everything and reads at ``rate`` elements/s (``0``: at once).

    The library's subclass calls :meth:`tick` for each element and cancels when it says the
    ``deadline`` passed. Every ``every`` elements ``tick`` sleeps until the reader is back
    on schedule; the sleep blocks the event loop, so the socket is read no faster either.
    """

    def __init__(self, rate: float, deadline: float, done: asyncio.Future[None], every: int = 64) -> None:
        self.rate = rate
        self.deadline = deadline
        self.done = done
        self.every = every
        self.count = 0
        self.slept = 0.0
        self.mark = time.perf_counter()
        self.subscription: Any = None

    def tick(self) -> bool:
        """Count one element and keep to the rate; true once the deadline has passed."""
        self.count += 1
        if self.count % self.every:
            return False
        now = time.perf_counter()
        if now >= self.deadline:
            return True
        if self.rate > 0:
            pause = self.mark + self.count / self.rate - now
            if pause > 0:
                time.sleep(pause)
                self.slept += pause
        return False


async def slow_consumer_memory(
    reader: Callable[[float, float, asyncio.Future[None]], SlowReader],
    subscribe: Callable[[SlowReader, int], None],
    warm_count: int,
    server_pid: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The memory mode: how the server's RSS grows under a reader that asked for everything.

    First an unthrottled reader (up to 5 s, ``warm_count`` elements) measures the rate; then
    ``reader(rate / slow_factor, deadline, done)`` reads ``args.count`` elements for
    ``args.duration`` s while the server's RSS is sampled. ``subscribe(reader, count)`` starts
    a stream of ``count`` elements of ``args.size`` bytes into ``reader``.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    fast = reader(0, time.perf_counter() + min(5.0, args.duration), done)
    start = time.perf_counter()
    subscribe(fast, warm_count)
    await asyncio.wait_for(done, args.timeout)
    fast_rate = fast.count / (time.perf_counter() - start)
    await asyncio.sleep(0.5)
    gc.collect()
    sampler = RssSampler(server_pid, args.sample_interval).start()
    await asyncio.sleep(0.3)
    baseline = rss_kib(server_pid)
    done = loop.create_future()
    slow = reader(fast_rate / args.slow_factor, time.perf_counter() + args.duration, done)
    start = time.perf_counter()
    subscribe(slow, args.count)
    await asyncio.wait_for(done, args.duration + args.timeout)
    seconds = time.perf_counter() - start
    samples = sampler.stop()
    peak = max(kib for _, kib in samples)
    step = max(1, len(samples) // 300)
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
        "series": [[t, kib / 1024] for t, kib in samples[::step]],
    }


async def round_trips(call: Callable[[], Awaitable[bytes]], expect: bytes, count: int) -> dict[str, Any]:
    """The rr mode: ``count`` sequential ``call()`` after up to 200 warm-up ones; rate, p50/p99."""
    for _ in range(min(200, count)):
        await call()
    gc.collect()
    times: list[float] = []
    clock = time.perf_counter
    start = clock()
    for _ in range(count):
        t0 = clock()
        answer = await call()
        times.append(clock() - t0)
    seconds = clock() - start
    if answer != expect:
        raise AssertionError(f"echo answered {answer!r}")
    return {"rate": count / seconds, "seconds": seconds, **percentiles(times)}


@dataclasses.dataclass(frozen=True)
class Streams(Generic[C]):
    """How a library's script connects and streams, for the fan-out modes below.

    ``stream(conn, count, window)`` runs one stream of ``count`` 8-byte elements with that
    window and returns how many arrived; ``barrier(conn)`` is one round trip, after which
    the server has handled every frame sent before it; ``warm_count``: the warm-up stream.
    """

    connect: Callable[[], Awaitable[C]]
    stream: Callable[[C, int, int], Awaitable[int]]
    barrier: Callable[[C], Awaitable[object]]
    close: Callable[[C], Awaitable[object]]
    warm_count: int = 20_000


async def connections_memory(lib: Streams[C], server_pid: int, args: argparse.Namespace) -> dict[str, Any]:
    """The conns mode: ``fanout`` connections (server RSS per connection), then ``count``
    elements shared among one stream per connection, all at once."""
    k = args.fanout
    conns = [await lib.connect()]
    try:
        await lib.stream(conns[0], lib.warm_count, 256)  # warm-up
        gc.collect()
        await asyncio.sleep(0.2)
        srv0 = rss_kib(server_pid)
        while len(conns) < k:
            conns += await asyncio.gather(*(lib.connect() for _ in range(min(50, k - len(conns)))))
        await asyncio.gather(*(lib.barrier(c) for c in conns))
        await asyncio.sleep(0.3)
        srv1 = rss_kib(server_pid)
        per = max(1, args.count // k)
        gc.collect()
        start = time.perf_counter()
        got = await asyncio.gather(*(lib.stream(c, per, min(args.window, per)) for c in conns))
        rate = sum(got) / (time.perf_counter() - start)
    finally:
        await asyncio.gather(*(lib.close(c) for c in conns), return_exceptions=True)
    return {"rate": rate, "server_b_per_conn": (srv1 - srv0) * 1024 / max(1, k - 1) if k > 1 else 0.0}


async def idle_subscriptions(
    lib: Streams[C],
    conn: C,
    open_idle: Callable[[C], H],
    cancel: Callable[[H], object],
    server_pid: int,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """The subs mode: ``fanout`` idle subscriptions on ``conn`` (server and client RSS per
    subscription), a ``count``-element stream beside them, then ``fanout`` streams at once
    sharing ``count`` elements. ``open_idle(conn)`` opens one subscription through which no
    element flows; ``cancel`` ends it."""
    k = args.fanout
    await lib.stream(conn, lib.warm_count, 256)  # warm-up
    gc.collect()
    await asyncio.sleep(0.2)
    srv0, cli0 = rss_kib(server_pid), rss_kib(os.getpid())
    opened = time.perf_counter()
    idle = [open_idle(conn) for _ in range(k)]
    await lib.barrier(conn)
    opened = time.perf_counter() - opened
    await asyncio.sleep(0.3)
    srv1, cli1 = rss_kib(server_pid), rss_kib(os.getpid())
    gc.collect()
    start = time.perf_counter()
    got = await lib.stream(conn, args.count, args.window)
    beside_rate = got / (time.perf_counter() - start)
    for handle in idle:
        cancel(handle)
    await lib.barrier(conn)
    per = max(1, args.count // k)
    start = time.perf_counter()
    total = sum(await asyncio.gather(*(lib.stream(conn, per, min(args.window, per)) for _ in range(k))))
    parallel_rate = total / (time.perf_counter() - start)
    return {
        "rate": beside_rate,
        "parallel_rate": parallel_rate,
        "server_b_per_sub": (srv1 - srv0) * 1024 / k,
        "client_b_per_sub": (cli1 - cli0) * 1024 / k,
        "open_s": opened,
    }


def emit(result: dict[str, Any]) -> None:
    """The client's answer: one JSON line, the last thing it prints."""
    print(json.dumps(result), flush=True)


def run_with_timeout(main: Callable[[], None], seconds: float) -> None:
    """Run ``main``; if it has not returned after ``seconds``, exit the process with status 3."""

    def expire() -> None:
        print(f"benchmark exceeded its {seconds:.0f} s limit", file=sys.stderr, flush=True)
        os._exit(3)

    timer = threading.Timer(seconds, expire)
    timer.daemon = True
    timer.start()
    try:
        main()
    finally:
        timer.cancel()
