"""Hostile peers for the flood tests: a real server process, raw-socket flooders, a legitimate client.

Theory of operation. The server under attack is a separate process (``rstreams serve``, or
:func:`serve_main` below when a test needs a limit the command line does not expose), so its
memory can be read from ``/proc/PID/status`` without the test's own allocations in the figure.
Each :class:`Flooder` is a raw socket in its own thread: it sends a prologue (the hello and
whatever the attack needs first), then one pre-encoded block over and over, and never reads.
A flooder ends in one of three ways, all bounded:

* it has written its byte ``budget``;
* no flooder of its flood got a byte out for ``stall`` seconds: the server stopped reading
  them (what input backpressure does);
* the socket failed (the server said goodbye and closed it).

:class:`Legit` is an ordinary rstreams client streaming ``counter`` on its own connection;
the tests check that it keeps receiving elements while the flooders write and after they
stop. :class:`RssWatch` samples the server's RSS in a thread and keeps the peak; it can also
stop the flooders early once the peak passes a bound (the test then fails on the figure
instead of waiting for the budget to run out).

Run ``PYTHONPATH=src:tests python -m testkit.hostile serve URL --max-subscriptions N`` for a server like
``rstreams serve URL`` (the built-in ``counter``) whose per-connection subscription limit is
``N`` (``--admission-share S``: whose admission budget is ``S``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, Self

import rstreams
from rstreams.wire import ClientHello, Frame, encode
from testkit import patience
from testkit.bound import HARD, Starved, family, within

MiB = 1024 * 1024
RCVBUF = 16 * 1024
"""A flooder's receive buffer: small, so that the kernel holds little of what the server sends it."""
STALL = 3.0
"""A flood ends once none of its flooders got a byte out for this long of the own time of this
process and its descendants (:class:`Progress`): the server stopped reading them. (Today's
server, busy parsing, still reads one of eight every few tenths of a second.)"""
STARVED = 10.0
"""Seconds without the legitimate client's next elements after which it counts as starved
(a failure detector, not a speed target: served, it takes milliseconds)."""
STARTUP = 30.0
"""Seconds a server process has to print its address."""


def rss_kib(pid: int) -> int:
    """VmRSS of ``pid`` in KiB, from /proc; 0 once the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def frames(*items: Frame) -> bytes:
    return b"".join(encode(item) for item in items)


def hello(*extensions: int) -> bytes:
    return encode(ClientHello(extensions=tuple(extensions)))


def repeat_to(block: bytes, size: int) -> bytes:
    """``block`` repeated to at least ``size`` bytes (whole copies only: frames stay whole)."""
    return block * max(1, -(-size // len(block)))


def varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def numbered(size: int, *makes: Callable[[int], Frame], first: int = 1) -> bytes:
    """For n = first, first + 1, ...: the frames ``make(n)`` of every ``make``, to at least ``size`` bytes.

    Each subscriber id is used once: a peer that never reads cannot know when the server has
    ended a subscription, so it may not reuse its id (PROTOCOL.md §5.3). Each ``make`` is
    called twice, and the frames in between are built from its bytes (no encoder per frame).
    """
    templates = [_template(make, first) for make in makes]
    out: list[bytes] = []
    total, n = 0, first
    while total < size:
        number = varint(n)
        for head, tail in templates:
            out.append(head + number + tail)
            total += len(head) + len(number) + len(tail)
        n += 1
    return b"".join(out)


def _template(make: Callable[[int], Frame], n: int) -> tuple[bytes, bytes]:
    """``(head, tail)`` such that ``encode(make(m)) == head + varint(m) + tail`` for any id ``m``."""
    a, b = encode(make(n)), encode(make(n + 1))
    ida, idb = varint(n), varint(n + 1)
    for cut in range(len(a)):
        head, tail = a[:cut], a[cut + len(ida) :]
        if a[cut : cut + len(ida)] == ida and b == head + idb + tail:
            return head, tail
    raise ValueError("numbered() needs frames that differ only in their subscriber id")


# -- the server process -------------------------------------------------------------------
@dataclasses.dataclass
class ServerProcess:
    """A server running in a child process: its ``url``, socket ``address`` and ``pid``."""

    process: subprocess.Popen[str]
    url: str

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def address(self) -> str | tuple[str, int]:
        """What a raw socket connects to: a path (``unix://``) or ``(host, port)`` (``tcp://``)."""
        return address_of(self.url)

    def rss_kib(self) -> int:
        return rss_kib(self.pid)


def address_of(url: str) -> str | tuple[str, int]:
    if url.startswith("unix://"):
        return url.removeprefix("unix://")
    host, _, port = url.removeprefix("tcp://").rpartition(":")
    return host, int(port)


def listen_url(transport: str, directory: str) -> str:
    """Where a test server listens: ``tcp`` on a free loopback port, ``unix`` in ``directory``."""
    return "tcp://127.0.0.1:0" if transport == "tcp" else f"unix://{directory}/rsio.sock"


def child_env() -> dict[str, str]:
    """The environment of a child: this rstreams and this testkit first on its path."""
    src = str(Path(rstreams.__file__).resolve().parents[1])
    tests = str(Path(__file__).resolve().parents[1])
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": os.pathsep.join([src, tests, *([path] if path else [])])}


@contextlib.contextmanager
def server_process(
    url: str, *options: str, max_subscriptions: int | None = None, admission_share: float | None = None
) -> Iterator[ServerProcess]:
    """``rstreams serve URL *options`` in a child process, stopped (SIGTERM) at exit.

    With ``max_subscriptions`` or ``admission_share`` the child is :func:`serve_main` instead:
    the same built-in publishers with that per-connection limit or admission budget.
    """
    if max_subscriptions is None and admission_share is None:
        command = [sys.executable, "-m", "rstreams.cli", "serve", url, *options]
    else:
        command = [sys.executable, "-m", "testkit.hostile", "serve", url]
        if max_subscriptions is not None:
            command += ["--max-subscriptions", str(max_subscriptions)]
        if admission_share is not None:
            command += ["--admission-share", str(admission_share)]
    child = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=child_env()
    )
    try:
        try:  # (bounded by the child's own time and ours: a loaded machine starts it late, not never)
            line = patience.child_line(child, "'serving ... on URL'", STARTUP)
        except (RuntimeError, TimeoutError) as error:
            line = str(error)
        if " on " not in line:
            child.kill()
            _, err = patience.communicate(child, 10)
            raise RuntimeError(f"the server did not start: {line!r} {err[-2000:]}")
        yield ServerProcess(child, line.strip().rpartition(" on ")[2])
    finally:
        stop_process(child)


def stop_process(child: subprocess.Popen[str]) -> None:
    """SIGTERM, then SIGKILL if it does not end; close its pipes."""
    patience.stop_child(child, 10)


# -- flooders -----------------------------------------------------------------------------
class Progress:
    """How long since any flooder of a flood last got a byte into its socket, in the own time of
    the processes whose reading it awaits: wall time less the time their threads waited for a
    CPU (:class:`~testkit.bound.Starved`; by default this process and its descendants, the peer
    under test among them), so that a peer the machine's load starves is not taken for one
    that stopped reading. Whatever the load, a stall is over after
    :data:`~testkit.bound.HARD` times as much wall time."""

    LOOK = 0.25
    """Seconds between two looks at the threads' delays while stalled (the flooders ask every
    0.1 s each)."""

    def __init__(self, children: Iterable[int] | None = None) -> None:
        self._children = tuple(family() if children is None else children)
        self._lock = threading.Lock()
        self.made()

    def made(self) -> None:
        self.last = time.monotonic()
        self._starved: Starved | None = None  # (counted from the first look after this byte)
        self._seen = (self.last, 0.0)

    def stalled_for(self) -> float:
        now = time.monotonic()
        wall = now - self.last
        with self._lock:
            looked, delay = self._seen
            if self._starved is None:
                self._starved = Starved((), self._children)
                self._starved.read()
                self._seen = (now, 0.0)
            elif now - looked >= self.LOOK:
                self._seen = (now, self._starved.read())
            delay = self._seen[1]
        return max(wall - delay, wall / HARD)


@dataclasses.dataclass
class Flooder:
    """One raw-socket peer: sends ``prologue``, then ``block`` repeatedly; never reads.

    ``run()`` returns when the budget is written, no flooder of the flood got a byte out for
    ``stall`` seconds, the socket failed, or ``stop`` was set. The socket stays open (unread)
    until :meth:`close`, so whatever the server holds for it is still held when the test
    measures.
    """

    address: str | tuple[str, int]
    prologue: bytes
    block: bytes
    budget: int
    stall: float
    stop: threading.Event
    progress: Progress
    sent: int = 0
    ended: str = ""
    sock: socket.socket | None = None

    def run(self) -> None:
        try:
            family = socket.AF_UNIX if isinstance(self.address, str) else socket.AF_INET
            self.sock = sock = socket.socket(family, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF)
            sock.settimeout(10)
            sock.connect(self.address)
        except OSError as error:
            self.ended = f"connect failed: {error}"
            return
        self.ended = self.pump(sock)

    def pump(self, sock: socket.socket) -> str:
        """Write the prologue, then the block, into the connected ``sock``; say why it ended."""
        sock.setblocking(False)
        view, block = memoryview(self.prologue), memoryview(self.block)
        while not self.stop.is_set():
            if not view:
                if self.sent >= self.budget:
                    return "budget"
                view = block
            _, writable, _ = select.select([], [sock], [], 0.1)
            if not writable:
                if self.progress.stalled_for() >= self.stall:
                    return "stalled"
                continue
            try:
                n = sock.send(view)
            except BlockingIOError:
                continue
            except OSError as error:
                return f"socket error: {error.strerror or error}"
            self.sent += n
            self.progress.made()
            view = view[n:]
        return "stopped"

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()


@dataclasses.dataclass
class Flood:
    """Flooders sharing one ``stop`` event and one :class:`Progress`; each runs in a thread."""

    flooders: list[Flooder]
    stop: threading.Event
    threads: list[threading.Thread] = dataclasses.field(default_factory=list)

    @classmethod
    def of(
        cls,
        address: str | tuple[str, int],
        prologue: bytes,
        block: bytes,
        *,
        count: int = 8,
        budget: int = 8 * MiB,
        stall: float = STALL,
        children: Iterable[int] | None = None,
    ) -> Flood:
        """``count`` flooders of ``address``. Their stall counts the own time of ``children``
        (process ids) when given: a server process alone, whose reading the flood waits for, so
        that this process's threads (the flooders, an ordinary client) waiting for a CPU do not
        hold it off; by default this process and its descendants (:class:`Progress`)."""
        stop, progress = threading.Event(), Progress(children)
        flooders = [Flooder(address, prologue, block, budget, stall, stop, progress) for _ in range(count)]
        return cls(flooders, stop)

    def start(self) -> None:
        self.threads = [threading.Thread(target=f.run, daemon=True) for f in self.flooders]
        for thread in self.threads:
            thread.start()

    async def wait(self) -> None:
        """Until every flooder has ended (each one's end is bounded, see :class:`Flooder`)."""
        await asyncio.to_thread(self._join)

    def _join(self) -> None:
        for thread in self.threads:
            thread.join()

    @property
    def sent(self) -> int:
        return sum(f.sent for f in self.flooders)

    def endings(self) -> list[str]:
        return [f.ended for f in self.flooders]

    def close(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(10)
        for flooder in self.flooders:
            flooder.close()


# -- memory -------------------------------------------------------------------------------
class RssWatch:
    """Samples ``pid``'s RSS every ``interval`` s in a thread; ``peak_kib``; optional early stop.

    With ``limit_kib`` and ``stop``: once the growth over ``baseline_kib`` passes the limit,
    ``stop`` is set (the flooders end; the test fails on the figure).
    """

    def __init__(
        self,
        pid: int,
        baseline_kib: int,
        *,
        limit_kib: int | None = None,
        stop: threading.Event | None = None,
        interval: float = 0.05,
    ) -> None:
        self.pid = pid
        self.baseline_kib = baseline_kib
        self.peak_kib = baseline_kib
        self.samples: list[int] = []
        self._limit = limit_kib
        self._stop_flood = stop
        self._interval = interval
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(5)
        self._sample()

    def _sample(self) -> None:
        kib = rss_kib(self.pid)
        self.samples.append(kib)
        self.peak_kib = max(self.peak_kib, kib)
        if self._limit is not None and self._stop_flood is not None and self.growth_kib > self._limit:
            self._stop_flood.set()

    def _run(self) -> None:
        while not self._done.is_set():
            self._sample()
            self._done.wait(self._interval)

    @property
    def growth_kib(self) -> int:
        return self.peak_kib - self.baseline_kib

    @property
    def growth_mib(self) -> float:
        return self.growth_kib / 1024


# -- the legitimate client ----------------------------------------------------------------
class Legit:
    """An ordinary client streaming ``counter`` with a window of 256, counting what arrives."""

    def __init__(self) -> None:
        self.received = 0
        self.error: BaseException | None = None
        self.subscription: Any = None
        self._arrived = asyncio.Event()

    def on_subscribe(self, subscription: Any) -> None:
        self.subscription = subscription
        subscription.request(256)

    def on_next(self, item: object) -> None:
        self.received += 1
        if self.received % 128 == 0:
            self.subscription.request(128)
        self._arrived.set()

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self._arrived.set()

    def on_complete(self) -> None:
        self._arrived.set()

    async def more_than(self, count: int, patience: float = STARVED) -> bool:
        """Wait until more than ``count`` elements have arrived: True, or False after ``patience``
        seconds of the loop's own time (:class:`~testkit.bound.Bound`) without that (the client
        was starved) or if the stream failed."""

        async def wait() -> None:
            while self.received <= count and self.error is None:
                self._arrived.clear()
                await self._arrived.wait()

        try:
            await within(wait(), patience)
        except TimeoutError:
            return False
        return self.error is None


# -- the server of the tests that need a lower limit ---------------------------------------
def serve_main(argv: Sequence[str]) -> int:
    """``serve URL [--max-subscriptions N] [--admission-share S]``: ``rstreams serve URL``'s
    built-ins with that limit or admission budget."""
    from rstreams._cli_publishers import builtin_publishers
    from rstreams.net import serve
    from rstreams.net._admission import DEFAULT_ADMISSION_SHARE
    from rstreams.wire import ConnectionConfig

    parser = argparse.ArgumentParser(description="serve counter with a lower subscription limit")
    parser.add_argument("command", choices=["serve"])
    parser.add_argument("url")
    parser.add_argument("--max-subscriptions", type=int, default=ConnectionConfig().max_subscriptions)
    parser.add_argument("--admission-share", type=float, default=DEFAULT_ADMISSION_SHARE)
    args = parser.parse_args(argv)

    async def run() -> None:
        config = ConnectionConfig(max_subscriptions=args.max_subscriptions)
        server = await serve(
            args.url, builtin_publishers("utf8"), config=config, admission_share=args.admission_share
        )
        print(f"serving counter on {server.url}", flush=True)
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await server.aclose()

    asyncio.run(run())
    return 0


if __name__ == "__main__":
    sys.exit(serve_main(sys.argv[1:]))
