"""What every network benchmark script shares: roles, pinning, the server child, RSS, results.

Stdlib only: the same module runs in rstreams' venv and in the peers' venv.

Each network script (``net_rstreams.py``, ``net_rsocket.py``, ``net_ceiling.py``) has two
roles. ``client`` is what the harness starts (pinned to one CPU); it starts the ``server``
role of the same script as a child process pinned to another CPU (``taskset -c``, as
/work/shared/notes/python-peers.md did), reads the port the server prints, runs one
warm-up and one measured run, and prints one JSON object as its last line of output.
The server child ends when its stdin closes (the client went away), so nothing outlives
a run, and every wait is bounded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

__all__ = [
    "RssSampler",
    "add_common_args",
    "emit",
    "install_loop",
    "percentiles",
    "pin_self",
    "rss_kib",
    "server_child",
    "wait_for_stdin_eof",
]

HOST = "127.0.0.1"


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("role", choices=["client", "server"])
    parser.add_argument("--uvloop", action="store_true", help="run both processes on uvloop")
    parser.add_argument("--client-cpu", type=int, default=1, help="-1: do not pin")
    parser.add_argument("--server-cpu", type=int, default=0, help="-1: do not pin")
    parser.add_argument("--timeout", type=float, default=300.0, help="hard limit for the whole run (s)")


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


@contextlib.contextmanager
def server_child(
    script: str, args: Sequence[str], cpu: int, timeout: float = 30.0
) -> Iterator[tuple[int, int]]:
    """Start ``script server *args`` pinned to ``cpu``; yields ``(port, pid)``; stops it at exit."""
    command = [sys.executable, script, "server", *args]
    if cpu >= 0 and shutil.which("taskset") and (os.cpu_count() or 1) > cpu:
        command = ["taskset", "-c", str(cpu), *command]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = _readline(child, timeout)
        if not line.strip().isdigit():
            raise RuntimeError(f"server child did not report a port: {line!r}")
        yield int(line), child.pid
    finally:
        if child.stdin is not None:
            with contextlib.suppress(OSError):
                child.stdin.close()
        try:
            child.wait(5)
        except subprocess.TimeoutExpired:
            child.terminate()
            try:
                child.wait(5)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait(5)


def _readline(child: subprocess.Popen[str], timeout: float) -> str:
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(child.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    reader.start()
    reader.join(timeout)
    if not out:
        child.kill()
        raise TimeoutError(f"server child gave no port within {timeout} s")
    return out[0]


def wait_for_stdin_eof() -> None:
    """Server side: block (in a thread) until the client closes our stdin, then exit hard."""

    def watch() -> None:
        sys.stdin.read()
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def announce_port(port: int) -> None:
    print(port, flush=True)


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
