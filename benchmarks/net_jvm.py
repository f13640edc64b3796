"""The JVM rows: rstreams-java and rsocket-java over loopback TCP (rstreams' venv, a JDK and Maven).

Run by ``benchmarks/run.py`` (scenarios ``jvm`` and ``jvm-memory``); by hand::

    python benchmarks/net_jvm.py --check       # build java/bench if needed; say why it cannot run
    python benchmarks/net_jvm.py client --impl rstreams --server java --size 8 --count 2000000
    python benchmarks/net_jvm.py client --impl rsocket --server java --size 65536 --count 20000
    python benchmarks/net_jvm.py client --impl rstreams --server python --size 8 --count 200000
    python benchmarks/net_jvm.py client --impl rstreams --mode memory --size 1024 --duration 60

The Java side is ``io.rstreams.bench.JvmBench`` in ``java/bench`` (a Maven project of its own:
rsocket-java 1.1.5 is its dependency, never the binding's). ``--check`` builds it with
``mvn package`` when its jar is missing or older than a source of the binding or of the bench
(``run.py`` runs it once before the scenario; the client role builds only a missing jar), so
the first run needs Maven Central (later ones run offline).

The client (this script, pinned to CPU1 by run.py) starts the server as a child pinned to CPU0:
``JvmBench server --impl IMPL`` in a JVM, or with ``--server python`` rstreams' Python
benchmark server (``net_rstreams.py server``, the name ``bench?size=S&n=N``); then it runs
``JvmBench client`` (a JVM on this CPU), which does a warm-up stream of N/10 and the measured
one on one connection, and passes on its JSON line.

Modes:
  stream   ``count`` elements of ``size`` bytes; the subscriber requests ``window``, then
           ``window/2`` each time that many arrived (never more than ``window`` outstanding).
  memory   first an unthrottled stream (up to 5 s, at most ``--warm-count`` elements) measures
           the rate; then the client requests Long.MAX_VALUE (rsocket-java: the same, which it
           calls unbounded) and reads at a tenth of that rate for ``--duration`` s, sleeping on
           its I/O thread, while this script samples the server JVM's RSS from /proc and asks
           it twice for its heap in use after a full GC: once before the slow stream, once near
           its end (the backlog a server keeps for a slow reader is live heap or direct memory
           then). Both server JVMs run with ``-Xmx1g``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import _netcommon as common  # noqa: E402

JAVA_DIR = HERE.parent / "java"
BENCH_DIR = JAVA_DIR / "bench"
JAR = BENCH_DIR / "target" / "rstreams-java-bench.jar"
CLASSPATH = BENCH_DIR / "target" / "classpath.txt"
MAIN = "io.rstreams.bench.JvmBench"
SERVER_JVM = ["-Xmx1g"]
CLIENT_JVM = ["-Xmx1g"]


# ------------------------------------------------------------------------------ build
def _sources() -> Iterator[Path]:
    yield JAVA_DIR / "pom.xml"
    yield BENCH_DIR / "pom.xml"
    for root in (JAVA_DIR / "src" / "main", BENCH_DIR / "src"):
        yield from root.rglob("*.java")


def stale() -> bool:
    """The bench jar is missing, or a source of the binding or of the bench is newer."""
    if not JAR.exists() or not CLASSPATH.exists():
        return True
    built = min(JAR.stat().st_mtime, CLASSPATH.stat().st_mtime)
    return any(path.stat().st_mtime > built for path in _sources())


def check() -> int:
    """Exit 0 if the JVM rows can run (building the bench first if needed), else 1 saying why."""
    for tool in ("java", "mvn"):
        if not shutil.which(tool):
            print(f"{tool} is not on PATH: the JVM rows need a JDK 17+ and Maven", file=sys.stderr)
            return 1
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    words = (done.stderr.splitlines() or [""])[0].split('"')
    feature = words[1].split(".")[0] if len(words) > 1 else "0"
    if not feature.isdigit() or int(feature) < 17:
        print(
            f"the JVM rows need Java 17+, `java -version` says {words[1:2] or done.stderr[:80]}",
            file=sys.stderr,
        )
        return 1
    if stale():
        print(f"building {JAR.relative_to(HERE.parent)} with mvn package", file=sys.stderr, flush=True)
        command = ["mvn", "-B", "-ntp", "-q", "-f", str(BENCH_DIR / "pom.xml"), "package"]
        try:
            built = subprocess.run(command, capture_output=True, text=True, timeout=900)
        except subprocess.TimeoutExpired:
            print("mvn package of java/bench took over 900 s", file=sys.stderr)
            return 1
        if built.returncode != 0:
            tail = (built.stdout + built.stderr).strip().splitlines()[-5:]
            print(f"mvn package of java/bench failed: {' | '.join(tail)[-400:]}", file=sys.stderr)
            return 1
    return 0


def _java(jvm: list[str], role: str, *args: str) -> list[str]:
    classpath = f"{JAR}{os.pathsep}{CLASSPATH.read_text(encoding='utf-8').strip()}"
    return ["java", *jvm, "-cp", classpath, MAIN, role, *args]


def _pinned(command: list[str], cpu: int) -> list[str]:
    if cpu >= 0 and shutil.which("taskset") and (os.cpu_count() or 1) > cpu:
        return ["taskset", "-c", str(cpu), *command]
    return command


# ------------------------------------------------------------------------------ roles
class Lines:
    """A child's stdout, line by line, read in a thread so that every wait has a timeout."""

    def __init__(self, stream: IO[str]) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._pump, args=(stream,), daemon=True).start()

    def _pump(self, stream: IO[str]) -> None:
        for line in stream:
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    def next(self, timeout: float) -> str:
        try:
            line = self._queue.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no line from the child within {timeout:.0f} s") from None
        if line is None:
            raise EOFError("the child closed its output")
        return line


@contextlib.contextmanager
def java_server(impl: str, cpu: int) -> Iterator[tuple[int, int, subprocess.Popen[str], Lines]]:
    """``JvmBench server`` pinned to ``cpu``: yields (port, pid, process, its output lines)."""
    command = _pinned(_java(SERVER_JVM, "server", "--impl", impl), cpu)
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    lines = Lines(child.stdout)
    try:
        port = lines.next(60)
        if not port.strip().isdigit():
            raise RuntimeError(f"the Java server did not report a port: {port!r}")
        yield int(port), child.pid, child, lines
    finally:
        with contextlib.suppress(OSError):
            child.stdin.close()  # type: ignore[union-attr]
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(5)


def heap_mib(server: subprocess.Popen[str], lines: Lines) -> float:
    """The Java server's heap in use after a full GC, in MiB (it answers the stdin line ``heap``)."""
    assert server.stdin is not None
    server.stdin.write("heap\n")
    server.stdin.flush()
    answer: float = json.loads(lines.next(60))["heap_mib"]
    return answer


def run_client(args: argparse.Namespace, port: int, on_slow: Any = None) -> dict[str, Any]:
    """Run ``JvmBench client`` against ``port``; its JSON line (``on_slow()`` at its line "slow")."""
    options = ["--impl", args.impl, "--port", str(port), "--mode", args.mode, "--size", str(args.size)]
    options += ["--count", str(args.count), "--window", str(args.window), "--timeout", str(int(args.timeout))]
    options += ["--duration", str(int(args.duration)), "--slow-factor", str(args.slow_factor)]
    options += ["--warm-count", str(args.warm_count)]
    command = _pinned(_java(CLIENT_JVM, "client", *options), args.client_cpu)
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    lines = Lines(child.stdout)
    extra: dict[str, Any] = {}
    try:
        while True:
            line = lines.next(args.timeout + args.duration)
            if line == "slow" and on_slow is not None:
                extra = on_slow()
            elif line.startswith("{"):
                result: dict[str, Any] = json.loads(line)
                break
    finally:
        try:
            child.wait(30)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(5)
    if child.returncode != 0:
        raise RuntimeError(f"the Java client exited {child.returncode}")
    return {**result, **extra}


def stream_against_python(args: argparse.Namespace) -> dict[str, Any]:
    script = str(HERE / "net_rstreams.py")
    with common.server_child(script, [], args.server_cpu) as (port, _pid):
        result = run_client(args, port)
    result["impl"] = "rstreams-java client, Python server"
    return result


def memory(args: argparse.Namespace) -> dict[str, Any]:
    """The memory mode: RSS and live heap of the server JVM under a slow reader."""
    with java_server(args.impl, args.server_cpu) as (port, pid, server, lines):
        state: dict[str, Any] = {}

        def on_slow() -> dict[str, Any]:
            state["heap_before"] = heap_mib(server, lines)
            time.sleep(0.3)
            state["baseline"] = common.rss_kib(pid)
            state["sampler"] = common.RssSampler(pid, args.sample_interval).start()
            timer = threading.Timer(
                args.duration * 0.9, lambda: state.update(heap_late=heap_mib(server, lines))
            )
            timer.daemon = True
            timer.start()
            state["timer"] = timer
            return {}

        result = run_client(args, port, on_slow)
        state["timer"].join(args.timeout)
        samples = state["sampler"].stop()
    baseline = state["baseline"]
    peak = max(kib for _, kib in samples)
    step = max(1, len(samples) // 300)
    heap_late = state.get("heap_late", float("nan"))
    result.update(
        growth_mib=(peak - baseline) / 1024,
        baseline_mib=baseline / 1024,
        peak_mib=peak / 1024,
        final_growth_mib=(samples[-1][1] - baseline) / 1024,
        heap_before_mib=state["heap_before"],
        heap_late_mib=heap_late,
        heap_growth_mib=heap_late - state["heap_before"],
        series=[[t, kib / 1024] for t, kib in samples[::step]],
    )
    return result


def client(args: argparse.Namespace) -> dict[str, Any]:
    if args.mode == "memory":
        return memory(args)
    if args.server == "python":
        return stream_against_python(args)
    with java_server(args.impl, args.server_cpu) as (port, _pid, _server, _lines):
        return run_client(args, port)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("role", nargs="?", choices=["client"], default=None)
    parser.add_argument(
        "--check", action="store_true", help="build java/bench if needed; exit 1 saying why not"
    )
    parser.add_argument("--impl", choices=["rstreams", "rsocket"], default="rstreams")
    parser.add_argument("--server", choices=["java", "python"], default="java")
    parser.add_argument("--mode", choices=["stream", "memory"], default="stream")
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--window", type=int, default=256)
    parser.add_argument("--duration", type=float, default=60.0, help="memory mode: seconds of slow reading")
    parser.add_argument("--slow-factor", type=float, default=10.0)
    parser.add_argument("--warm-count", type=int, default=300_000, help="memory mode: the unthrottled stream")
    parser.add_argument("--sample-interval", type=float, default=0.25)
    parser.add_argument("--client-cpu", type=int, default=1, help="-1: do not pin")
    parser.add_argument("--server-cpu", type=int, default=0, help="-1: do not pin")
    parser.add_argument("--timeout", type=float, default=300.0, help="hard limit for the whole run (s)")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    if args.role != "client":
        parser.error("give the role client, or --check")
    if args.server == "python" and (args.impl != "rstreams" or args.mode != "stream"):
        parser.error("--server python takes --impl rstreams --mode stream")
    if (not JAR.exists() or not CLASSPATH.exists()) and check() != 0:
        return 1  # a stale jar is rebuilt by --check, once per scenario, never between two rows
    common.pin_self(args.client_cpu)

    def run() -> None:
        common.emit(client(args))

    common.run_with_timeout(run, args.timeout + args.duration + 120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
