"""The ``hostile`` scenario: a legitimate stream's throughput beside an attack, and the server's RSS.

Run by ``benchmarks/run.py`` in rstreams' own venv; by hand::

    python benchmarks/net_hostile.py client --attack alone --duration 5
    python benchmarks/net_hostile.py client --attack subscribe-flood --duration 5

Three processes. The client (pinned to CPU1 by the harness) starts the server (``server``
role, pinned to CPU0: ``rstreams.serve`` with its default limits) and, unless ``--attack
alone``, the attacker (``attack`` role, a child of the client, so on CPU1 beside it). Once
the attack is under way, the client streams 8-byte elements with a window of 256 (like
stream-small) for ``--duration`` seconds and reports the rate, while the server's RSS is
sampled from /proc, and so is the server's CPU time over the measurement (``server_cpu``:
CPU seconds per second; below 1 the server had time to spare, the stream was slowed
elsewhere), the client's (``client_cpu``: below the ``alone`` run's, the attacker beside it
on CPU1 took its share), and the system's TCP retransmits and dropped packets
(``retransmits``, ``kernel_drops``: over loopback each drop stalls a connection for a 200 ms
retransmission timeout, both ends waiting). Attacks (every peer is a raw socket; none reads
what the server sends unless said):

  slow-hellos       ``--peers`` x 125 connections that send one byte of a hello and then
                    nothing (until the handshake timeout drops them; then they reconnect)
  garbage           ``--peers`` connections in a loop: a hello, 16 KiB of random bytes, read
                    the goodbye, close, again
  subscribe-flood   ``--peers`` connections sending subscribes for an unknown name as fast
                    as they can (each gets an onError), ``--budget`` bytes each, never reading
  unbounded-demand  ``--peers`` connections subscribing with demand 2**63-1 to an endless
                    stream of 1 KiB elements, never reading
  churn             ``--peers`` / 2 loops of connect, hello, subscribe, request, cancel,
                    goodbye, read until closed; every other connection is reset instead

The attacker prints ``ready`` once every peer has started, and its counters as JSON when its
stdin closes. Each process has a hard time limit; the server ends when its stdin closes.

``count`` (no timing, so it means the same on a loaded machine): the subscribe flood in one
process and one event loop, the server, the eight flooders (raw sockets, never reading), the
legitimate client and a pipelining client together, over loopback TCP (the peers of
``benchmarks/_flood.py``, which tests/net/test_hostile_fairness.py runs too). It streams
``--elements`` elements beside the flood and reports, from the server's own ledgers, the bytes
of refusals the flooders were answered while it ran (``flood_bytes``, and per element of the
stream), the most any one flooder was answered in all, and how many flooders the server still
reads at the end. Meanwhile the pipelining client writes ``--subscribes`` subscribes for the
flood's unknown name at once, as a flooder does, but reads the refusals as they come: it
reports how many were answered while the stream ran (``pipelined_answered_during_stream``),
after how many elements of the stream all were (``pipelined_answered_after_elements``; none if
not all were while the stream ran) and after how many loop turns::

    python benchmarks/net_hostile.py count --elements 1000000

``pipeline`` (no timing either): a legitimate client alone, a raw socket in the server's
process and loop, writes ``--subscribes`` subscribes of one element each (demand 2, so that
each stream completes) at once and reads the answers; it reports the loop turns, the
process's CPU time and the wall time until every stream completed::

    python benchmarks/net_hostile.py pipeline --subscribes 20000
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import itertools
import json
import os
import select
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _flood import HELLO, Made, Pipeliner, address_of, flooding
from _netcommon import (
    HOST,
    RssSampler,
    emit,
    install_loop,
    pin_self,
    rss_kib,
    run_with_timeout,
    serve_until_stdin_closes,
    server_child,
)

import rstreams
from rstreams.api import Subscription
from rstreams.net import connect, serve
from rstreams.wire import (
    Cancel,
    Goodbye,
    Request,
    Subscribe,
    encode,
)

ATTACKS = ("alone", "slow-hellos", "garbage", "subscribe-flood", "unbounded-demand", "churn")
UNBOUNDED = 2**63 - 1


# ------------------------------------------------------------------------------ server
def _bench(params: dict[str, str]) -> rstreams.Flow[bytes]:
    element = os.urandom(int(params.get("size", "8")))
    n = params.get("n")
    source = itertools.repeat(element) if n is None else itertools.repeat(element, int(n))
    return rstreams.from_iterable(source)


async def serve_main() -> None:
    server = await serve(f"tcp://{HOST}:0", {"bench": _bench})  # every limit at its default
    await serve_until_stdin_closes(int(server.url.rsplit(":", 1)[1]))


# ------------------------------------------------------------------------------ attacker
def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _subscribes(name: str, size: int) -> bytes:
    """Subscribes to ``name`` with ids 1, 2, 3, ... (never reused: §5.3), ``size`` bytes or a little more."""
    head = encode(Subscribe(publisher=name, subscriber=0))[:-2]  # type, name; then id 0, demand 0
    assert encode(Subscribe(publisher=name, subscriber=5)) == head + b"\x05\x00"
    frames, total = [], 0
    for n in itertools.count(1):
        if total >= size:
            break
        frame = head + _varint(n) + b"\x00"
        frames.append(frame)
        total += len(frame)
    return b"".join(frames)


class Attacker:
    """The peers of one attack, each in a thread; ``stop`` ends them, the counters say what they did."""

    def __init__(self, kind: str, port: int, peers: int, budget: int) -> None:
        self.kind = kind
        self.address = (HOST, port)
        self.peers = peers
        self.budget = budget
        self.stop = threading.Event()
        self.sent = 0
        self.connections = 0
        self._lock = threading.Lock()
        self._started = threading.Semaphore(0)
        self.flood = HELLO + _subscribes("nope", budget)

    def count(self, sent: int = 0, connections: int = 0) -> None:
        with self._lock:
            self.sent += sent
            self.connections += connections

    def open(self) -> socket.socket:
        sock = socket.create_connection(self.address, timeout=10)
        self.count(connections=1)
        return sock

    def started(self) -> None:
        """A peer is connected and under way (called once per thread)."""
        self._started.release()

    def start(self) -> list[threading.Thread]:
        """Start every peer's thread and return once each has connected (or failed)."""
        target: Callable[[], None] = {
            "slow-hellos": self.slow_hellos,
            "garbage": self.garbage,
            "subscribe-flood": self.subscribe_flood,
            "unbounded-demand": self.unbounded_demand,
            "churn": self.churn,
        }[self.kind]
        loops = {"churn": max(1, self.peers // 2), "slow-hellos": 1}.get(self.kind, self.peers)
        threads = [threading.Thread(target=self._guarded, args=(target,), daemon=True) for _ in range(loops)]
        for thread in threads:
            thread.start()
        for _ in threads:
            self._started.acquire(timeout=30)
        return threads

    def _guarded(self, target: Callable[[], None]) -> None:
        try:
            target()
        except OSError:  # the server may close or refuse: the attack goes on in the other threads
            self.started()

    def send_all(self, sock: socket.socket, data: bytes) -> bool:
        """Write ``data`` unless ``stop`` comes first (checked between blocked attempts)."""
        sock.setblocking(False)
        view = memoryview(data)
        while view and not self.stop.is_set():
            _, writable, _ = select.select([], [sock], [], 0.2)
            if writable:
                n = sock.send(view)
                self.count(sent=n)
                view = view[n:]
        return not view

    def hold(self, sock: socket.socket) -> None:
        """Keep ``sock`` open, unread, until ``stop``."""
        self.stop.wait()
        sock.close()

    def slow_hellos(self) -> None:
        """``peers * 125`` connections with one byte of a hello each; reopened when dropped."""
        socks = []
        for _ in range(self.peers * 125):
            sock = self.open()
            sock.send(HELLO[:1])
            socks.append(sock)
        self.started()
        while not self.stop.is_set():
            readable, _, _ = select.select(socks, [], [], 0.2)
            for sock in readable:
                try:
                    if sock.recv(4096):  # the serverHello, or the goodbye before the close
                        continue
                except OSError:
                    pass
                socks.remove(sock)  # closed (handshake timeout): take the slot again
                sock.close()
                fresh = self.open()
                fresh.send(HELLO[:1])
                socks.append(fresh)
        for sock in socks:
            sock.close()

    def garbage(self) -> None:
        noise = os.urandom(16 * 1024)
        self.started()
        while not self.stop.is_set():
            with self.open() as sock:
                if self.send_all(sock, HELLO + b"\x0e" + noise):
                    sock.setblocking(True)
                    sock.settimeout(5)
                    with contextlib.suppress(OSError):
                        sock.recv(4096)  # the goodbye naming the broken rule

    def subscribe_flood(self) -> None:
        sock = self.open()
        self.started()
        self.send_all(sock, self.flood)
        self.hold(sock)

    def unbounded_demand(self) -> None:
        sock = self.open()
        self.started()
        subscribe = Subscribe(publisher="bench?size=1024", subscriber=1, initial_demand=UNBOUNDED)
        self.send_all(sock, HELLO + encode(subscribe))
        self.hold(sock)

    def churn(self) -> None:
        talk = HELLO + b"".join(  # the same every time: encoded once, the attacker's core is the client's
            encode(frame)
            for frame in (
                Subscribe(publisher="bench?n=100000", subscriber=1, initial_demand=16),
                Request(subscriber=1, demand=16),
                Cancel(subscriber=1),
                Goodbye(reason="churn"),
            )
        )
        self.started()
        for n in itertools.count():
            if self.stop.is_set():
                return
            sock = self.open()
            sock.sendall(talk)
            self.count(sent=len(talk))
            if n % 2:  # reset: close with unread input and SO_LINGER 0
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            else:
                sock.settimeout(5)
                with contextlib.suppress(OSError):
                    while sock.recv(65536):
                        pass
            sock.close()


def attack_main(args: argparse.Namespace) -> None:
    attacker = Attacker(args.attack, args.port, args.peers, args.budget)
    threads = attacker.start()
    print("ready", flush=True)
    sys.stdin.read()  # until the client closes our stdin
    attacker.stop.set()
    for thread in threads:
        thread.join(10)
    emit({"attack_mib": attacker.sent / 2**20, "connections": attacker.connections})


@contextlib.contextmanager
def attack_child(args: argparse.Namespace, port: int) -> Any:
    """Start the attacker (``--attack``); yields; then stops it and yields its counters into ``stats``."""
    stats: dict[str, Any] = {}
    if args.attack == "alone":
        yield stats
        return
    command = [sys.executable, __file__, "attack", "--attack", args.attack, "--port", str(port)]
    command += ["--peers", str(args.peers), "--budget", str(args.budget)]
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        ready, _, _ = select.select([child.stdout], [], [], 60)
        line = child.stdout.readline() if ready else ""
        if line.strip() != "ready":
            raise RuntimeError(f"the attacker did not start: {line!r}")
        yield stats
    finally:
        try:
            out, _ = child.communicate("", timeout=20)
        except subprocess.TimeoutExpired:
            child.kill()
            out, _ = child.communicate()
        lines = [line for line in out.splitlines() if line.startswith("{")]
        if lines:
            stats.update(json.loads(lines[-1]))


# ------------------------------------------------------------------------------ client
def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of ``pid`` so far (/proc/PID/stat), in seconds."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def kernel_counters() -> tuple[int, int]:
    """``(segments retransmitted, packets dropped)`` by the system's TCP so far: ``RetransSegs``
    of /proc/net/snmp, and the packets dropped from the kernel's input queues (the second column
    of /proc/net/softnet_stat, summed over CPUs); ``(0, 0)`` where these cannot be read. Over
    loopback a retransmission follows a drop and stalls a connection for at least the minimum
    retransmission timeout (200 ms), both processes waiting: a round slowed so shows them, and is
    told from one where the server was busy (``server_cpu``). System-wide: anything else running
    counts too (a quiet machine has none)."""
    try:
        with open("/proc/net/snmp", encoding="ascii") as snmp:
            rows = [line.split() for line in snmp if line.startswith("Tcp:")]
        retrans = int(rows[1][rows[0].index("RetransSegs")])
        with open("/proc/net/softnet_stat", encoding="ascii") as softnet:
            drops = sum(int(line.split()[1], 16) for line in softnet)
    except (OSError, IndexError, ValueError):
        return 0, 0
    return retrans, drops


class Counter:
    """Requests 256, then 128 every 128 elements (stream-small's window); counts."""

    def __init__(self) -> None:
        self.count = 0
        self.subscription: Subscription | None = None
        self.error: BaseException | None = None
        self.done = asyncio.Event()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        subscription.request(256)

    def on_next(self, item: bytes) -> None:
        self.count += 1
        if self.count % 128 == 0:
            self.subscription.request(128)  # type: ignore[union-attr]

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.done.set()

    def on_complete(self) -> None:
        self.done.set()


async def client_main(args: argparse.Namespace, port: int, server_pid: int) -> dict[str, Any]:
    conn = await connect(f"tcp://{HOST}:{port}")
    try:
        warm = Counter()
        conn.publisher("bench?n=20000").subscribe(warm)
        await asyncio.wait_for(warm.done.wait(), 60)
        gc.collect()
        baseline = rss_kib(server_pid)
        sampler = RssSampler(server_pid, args.sample_interval).start()
        with attack_child(args, port) as stats:
            await asyncio.sleep(args.ramp)
            legit = Counter()
            start, server_cpu, client_cpu = time.perf_counter(), cpu_seconds(server_pid), time.process_time()
            retrans, drops = kernel_counters()
            conn.publisher("bench").subscribe(legit)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(legit.done.wait(), args.duration)
            seconds = time.perf_counter() - start
            server_busy = (cpu_seconds(server_pid) - server_cpu) / seconds
            retrans_after, drops_after = kernel_counters()
            client_busy = (time.process_time() - client_cpu) / seconds
            received = legit.count
            if legit.subscription is not None:
                legit.subscription.cancel()
        samples = sampler.stop()
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(conn.aclose(), 10)
    if legit.error is not None:
        raise RuntimeError(f"the legitimate stream failed: {legit.error!r}")
    peak = max(kib for _, kib in samples)
    step = max(1, len(samples) // 300)
    return {
        "rate": received / seconds,
        "elements": received,
        "seconds": seconds,
        "baseline_mib": baseline / 1024,
        "peak_mib": peak / 1024,
        "growth_mib": (peak - baseline) / 1024,
        "server_cpu": server_busy,
        "client_cpu": client_busy,
        "retransmits": retrans_after - retrans,
        "kernel_drops": drops_after - drops,
        "attack_mib": stats.get("attack_mib", 0.0),
        "connections": stats.get("connections", 0),
        "series": [[t, kib / 1024] for t, kib in samples[::step]],
    }


# ------------------------------------------------------------------------------ count
class _CountingLoop(asyncio.SelectorEventLoop):
    """Counts its turns (CPython's selector loop: one ``_run_once`` per turn)."""

    turns = 0

    def _run_once(self) -> None:
        self.turns += 1
        super()._run_once()  # type: ignore[misc]


async def count_main(args: argparse.Namespace) -> dict[str, Any]:
    """The subscribe flood, the stream and the pipelining client in this process; see the module
    docstring."""
    loop = asyncio.get_running_loop()
    assert isinstance(loop, _CountingLoop)
    made = Made()
    server = await serve(f"tcp://{HOST}:0", {"bench": _bench}, on_connection=made)
    conn = await connect(server.url)
    transport: asyncio.BaseTransport | None = None
    try:
        await asyncio.wait_for(made.count(1), args.timeout)  # the stream's: made.connections[0]
        async with flooding(server.url, _subscribes("nope", args.budget), args.peers):
            await asyncio.wait_for(made.count(1 + args.peers), args.timeout)
            # The server's pumps (beneath the public API, on purpose): their reply ledgers and reading.
            flooders = [flooder._pump for flooder in made.connections[1:]]
            transport, client = await loop.create_connection(
                lambda: Pipeliner(args.subscribes), *address_of(server.url)
            )
            await asyncio.wait_for(made.count(2 + args.peers), args.timeout)
            before = sum(pump.outbox.ledger.written for pump in flooders)
            stream = Counter()
            answered: dict[str, int] = {}

            def on_answered(_: object) -> None:
                answered.update(elements=stream.count, turns=loop.turns)

            client.done.add_done_callback(on_answered)
            started, turns = time.process_time(), loop.turns
            conn.publisher(f"bench?n={args.elements}").subscribe(stream)
            client.pipeline("nope", args.subscribes)  # what a flooder sends, but its answers are read
            await asyncio.wait_for(stream.done.wait(), args.timeout)
            cpu = time.process_time() - started
            at_end, during = len(client.ended), dict(answered)
            answered_flood = [pump.outbox.ledger.written for pump in flooders]
            flood = sum(answered_flood) - before
            await asyncio.wait_for(client.done, args.timeout)  # alone now, if it was not yet answered
            return {
                "elements": stream.count,
                "flood_bytes": flood,
                "flood_bytes_per_element": flood / max(1, stream.count),
                "most_answered_one_flooder": max(answered_flood, default=0),
                "flooders_still_read": sum(not pump._backed_up for pump in flooders),
                "cpu_seconds_per_million": cpu / max(1, stream.count) * 1e6,
                "pipelined_subscribes": args.subscribes,
                "pipelined_answered_during_stream": at_end,
                "pipelined_answered_after_elements": during.get("elements"),  # None: not during the stream
                "pipelined_answered_after_turns": answered["turns"] - turns,
            }
    finally:
        if transport is not None:
            transport.close()
        await asyncio.wait_for(conn.aclose(), 10)
        server.close()


# ------------------------------------------------------------------------------ pipeline
async def pipeline_main(args: argparse.Namespace) -> dict[str, Any]:
    """A legitimate client alone that pipelines ``--subscribes`` subscribes of one element each in
    one write; see the module docstring."""
    loop = asyncio.get_running_loop()
    assert isinstance(loop, _CountingLoop)
    server = await serve(f"tcp://{HOST}:0", {"bench": _bench})
    transport, client = await loop.create_connection(
        lambda: Pipeliner(args.subscribes), *address_of(server.url)
    )
    try:
        turns, cpu, wall = loop.turns, time.process_time(), time.perf_counter()
        sent = client.pipeline("bench?n=1", args.subscribes, demand=2)
        await asyncio.wait_for(client.done, args.timeout)
        return {
            "subscribes": args.subscribes,
            "bytes_sent": sent,
            "loop_turns": loop.turns - turns,
            "cpu_seconds": round(time.process_time() - cpu, 3),
            "wall_seconds": round(time.perf_counter() - wall, 3),
        }
    finally:
        transport.close()
        server.close()
        await server.wait_closed()


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("role", choices=["client", "server", "attack", "count", "pipeline"])
    parser.add_argument("--uvloop", action="store_true", help="run the client and the server on uvloop")
    parser.add_argument("--client-cpu", type=int, default=1, help="-1: do not pin")
    parser.add_argument("--server-cpu", type=int, default=0, help="-1: do not pin")
    parser.add_argument("--timeout", type=float, default=120.0, help="hard limit for the whole run (s)")
    parser.add_argument("--attack", default="alone", choices=ATTACKS)
    parser.add_argument("--port", type=int, default=0, help="attack role: the server's port")
    parser.add_argument("--peers", type=int, default=8, help="hostile connections (slow-hellos: x125)")
    parser.add_argument("--budget", type=int, default=4 << 20, help="subscribe-flood: bytes per peer")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds the legitimate stream runs")
    parser.add_argument("--ramp", type=float, default=0.5, help="seconds between attack start and measuring")
    parser.add_argument("--sample-interval", type=float, default=0.1)
    parser.add_argument("--elements", type=int, default=1_000_000, help="count: elements streamed")
    parser.add_argument("--subscribes", type=int, default=20_000, help="pipeline: subscribes sent at once")
    args = parser.parse_args()
    if args.role in ("pipeline", "count"):
        with asyncio.Runner(loop_factory=_CountingLoop) as runner:
            emit(runner.run((pipeline_main if args.role == "pipeline" else count_main)(args)))
        return
    if args.role == "attack":
        run_with_timeout(lambda: attack_main(args), args.timeout)
        return
    loop_name = install_loop(args.uvloop)
    if args.role == "server":
        pin_self(args.server_cpu)
        asyncio.run(serve_main())
        return
    pin_self(args.client_cpu)

    def run() -> None:
        server_args = ["--uvloop"] if args.uvloop else []
        with server_child(__file__, server_args, args.server_cpu) as (port, pid):
            result = asyncio.run(client_main(args, port, pid))
        result.update(impl="rstreams", loop=loop_name, version=version("rstreams"), attack=args.attack)
        emit(result)

    run_with_timeout(run, args.timeout + args.duration + 60)


if __name__ == "__main__":
    main()
