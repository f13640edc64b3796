"""The bound of a wait in this process's event loop: the loop's own time, not the machine's load.

A test's server, client and peers share one loop, so a loaded machine slows all of them
together; a wall-time bound then fails correct code. :class:`Bound` counts only the seconds the
loop's thread had a CPU or waited for what it awaits (wall time less the time it waited for a
CPU), and stops at :data:`HARD` times its limit in wall time whatever the load. A hang is the
loop waiting for what never comes, on its own time: it fails after the limit as on an idle
machine. A wait on another process (a JVM, Node, Spark) names it (``children``): the time its
threads waited for a CPU does not count either.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, Self, TypeVar

from rstreams._schedstat import cpu_waits

WAIT = 10.0
"""Seconds of the loop's own time any one wait may take: longer is a hang."""
HARD = 30
"""How many times its own-time limit in wall seconds any one wait may take, however loaded the
machine: the bound that nothing passes (300 s for ``WAIT``)."""

LOOK = 1.0
"""The longest wall time between two looks at the awaited processes' threads: a descendant that
comes and goes between two looks (a test runner's process per file) is not counted, so a bound
on such a family looks often enough to see most of them live."""

T = TypeVar("T")

_SCHEDSTAT = Path("/proc/thread-self/schedstat")


def _run_delay() -> float:
    """Seconds this thread has spent runnable but waiting for a CPU (Linux's schedstat, its
    second field); 0 where the system does not say (then a bound counts wall time)."""
    try:
        return int(_SCHEDSTAT.read_text().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


def _delays(pids: Iterable[int], children: Iterable[int]) -> dict[int, float]:
    """Thread id -> seconds it has spent waiting for a CPU, for every thread of ``pids`` and of
    ``children`` and their descendants (:func:`rstreams._schedstat.cpu_waits`)."""
    return cpu_waits(pids, children)


def family() -> tuple[int]:
    """``children`` for a wait on whatever this process started, directly or not (a server, a JVM
    and its workers): this process, whose descendants a bound counts with it."""
    return (os.getpid(),)


class Starved:
    """Seconds the threads of ``pids`` and of ``children`` (with their descendants) have waited
    for a CPU since this was made, summed over the threads; a thread that ended is counted up to
    when it was last looked at (``read``). The first look, at the first ``read``, is the start."""

    def __init__(self, pids: Iterable[int], children: Iterable[int]) -> None:
        self._pids, self._children = tuple(pids), tuple(children)
        self._base: dict[int, float] | None = None
        self._seen: dict[int, float] = {}

    def read(self) -> float:
        delays = _delays(self._pids, self._children)
        if self._base is None:
            self._base = delays
        self._seen.update(delays)
        base = self._base
        return sum(max(seen - base.get(tid, 0.0), 0.0) for tid, seen in self._seen.items())


def _own_clock(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether ``loop`` keeps a clock of its own (a virtual one) instead of the monotonic clock."""
    return type(loop).time is not asyncio.BaseEventLoop.time


class Bound:
    """A hang guard on what its block awaits: ``TimeoutError`` once the loop's thread has spent
    ``limit`` seconds of its own time on it (wall time less the time the thread waited for a
    CPU), or ``HARD`` times ``limit`` wall seconds, whichever comes first.

    ``children``: processes whose work the block awaits too (a server or client child): the time
    their threads (and their descendants') waited for a CPU is not counted either.

    On a loop with a clock of its own (``testkit.net.VirtualTimeLoop``) the load never shows:
    the block is bounded by ``limit`` seconds of that clock, as ``asyncio.timeout`` would."""

    def __init__(self, limit: float = WAIT, children: Iterable[int] = ()) -> None:
        self.limit = limit
        self._handle: asyncio.TimerHandle | None = None
        self._children = Starved((), children) if children else None

    async def __aenter__(self) -> Self:
        loop = asyncio.get_running_loop()
        self._start, self._delay = time.monotonic(), _run_delay()
        if self._children is not None:
            self._children.read()
        if _own_clock(loop):
            self._scope = asyncio.timeout(self.limit)
            await self._scope.__aenter__()
            return self
        self._scope = asyncio.timeout(None)
        await self._scope.__aenter__()
        self._check(loop)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._handle is not None:
            self._handle.cancel()
        await self._scope.__aexit__(kind, error, trace)  # (a cancel of its own: TimeoutError)

    def spent(self) -> tuple[float, float]:
        """Seconds of the thread's own time and wall seconds since the block began."""
        wall = time.monotonic() - self._start
        theirs = 0.0 if self._children is None else self._children.read()
        return wall - (_run_delay() - self._delay) - theirs, wall

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        own, wall = self.spent()
        left = min(self.limit - own, HARD * self.limit - wall)
        if left > 0:
            self._handle = loop.call_later(min(left, LOOK), self._check, loop)
        else:
            self._scope.reschedule(loop.time())  # now: what the block awaits is cancelled

    def said(self) -> str:
        """How long the block waited, for a failure's message."""
        own, wall = self.spent()
        return f"{self.limit:g} s of the loop's own time ({own:.1f} s; {wall:.1f} s in all)"


async def within(awaitable: Awaitable[T], limit: float = WAIT, children: Iterable[int] = ()) -> T:
    """``awaitable``'s result, or ``TimeoutError`` (and ``awaitable`` cancelled) once it took
    ``limit`` seconds of the loop's own time (:class:`Bound`, over ``children`` too):
    ``asyncio.wait_for`` for waits in this process's loop."""
    async with Bound(limit, children):
        return await awaitable


class OwnTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock is its thread's own time: the monotonic clock less the time the
    thread waited for a CPU (Linux's schedstat; where the system does not say, the monotonic
    clock itself). Run it on the thread that made it (:func:`run_own_time`).

    Where a server and its peer share one loop (the conformance suite against our own server),
    every timer of either side (an idle timeout, a keepalive, a wait's deadline, a case's) then
    counts only the seconds the loop had a CPU or waited for I/O: a loaded machine delays them
    all alike instead of firing one side's timeout while the other side's bytes sit unread. A
    :class:`Bound` on it is bounded by this clock, as on a virtual one."""

    def __init__(self) -> None:
        super().__init__()
        try:
            self._schedstat: int | None = os.open(
                f"/proc/self/task/{threading.get_native_id()}/schedstat", os.O_RDONLY
            )
        except OSError:
            self._schedstat = None
        self._last = 0.0

    def _delay(self) -> float:
        if self._schedstat is None:
            return 0.0
        try:
            return int(os.pread(self._schedstat, 128, 0).split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            return 0.0

    def time(self) -> float:
        self._last = now = max(time.monotonic() - self._delay(), self._last)  # (never backwards)
        return now

    def close(self) -> None:
        super().close()
        if self._schedstat is not None:
            os.close(self._schedstat)
            self._schedstat = None


def run_own_time(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run ``main()`` on a fresh :class:`OwnTimeLoop` in this thread, as ``asyncio.run`` would."""
    with asyncio.Runner(loop_factory=OwnTimeLoop) as runner:
        return runner.run(main())
