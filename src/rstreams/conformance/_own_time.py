"""The client suite's clock: the own time of the suite and the client it runs, not the machine's load.

Theory of operation:

* The client suite (:mod:`rstreams.conformance.clients`) plays the server in this process and
  runs the client's adapter as a child process. Its deadlines (a frame from the client, a case,
  the adapter's start and exit) are timers of the event loop. On a loaded machine both sides sit
  runnable but unscheduled while other processes have the CPUs; deadlines of wall time then fail
  a correct client that was only served late.
* :class:`OwnTimeLoop` is an event loop whose clock is wall time less the time the threads of
  this process and of its descendants (the adapter, a JVM and its threads) spent waiting for a
  CPU (Linux's ``/proc/PID/task/TID/schedstat``, its second field), summed over the threads.
  On an idle machine that is wall time: a client that hangs fails after the deadline. Under load
  the seconds other processes took from the suite and the client do not count. Where the
  system does not say, the clock is the monotonic clock.
* The threads are read at most every :data:`REFRESH` seconds of wall time (the loop asks its
  clock at every turn); between two reads the clock runs as wall time, and it never goes back.
  The sum over threads counts two starved threads twice, so under load a hang is reported
  later; a thread that ended is counted up to when it was last read.
"""

from __future__ import annotations

import asyncio
import os
import time
from typing import Final

from rstreams._schedstat import cpu_waits

__all__ = ["REFRESH", "OwnTimeLoop", "starved"]

REFRESH: Final = 0.1
"""The longest wall time between two reads of the threads' waits for a CPU."""


def starved(pid: int) -> dict[int, float]:
    """Thread id -> seconds it has spent waiting for a CPU, for every thread of ``pid`` and its
    descendants; empty where ``/proc`` does not say."""
    return cpu_waits((), (pid,))


class OwnTimeLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock does not count the time this process and its descendants
    waited for a CPU (the module's docstring). Made and run on one thread, as any loop."""

    def __init__(self) -> None:
        super().__init__()
        self._base = starved(os.getpid())
        self._seen = dict(self._base)
        self._starved = 0.0
        self._read_at = time.monotonic()
        self._last = 0.0

    def time(self) -> float:
        now = time.monotonic()
        if now - self._read_at >= REFRESH:
            self._read_at = now
            self._seen.update(starved(os.getpid()))
            base = self._base
            self._starved = sum(max(waited - base.get(tid, 0.0), 0.0) for tid, waited in self._seen.items())
        self._last = max(now - self._starved, self._last)  # (never backwards)
        return self._last
