"""The clock of the TCK's waits: this process's own time, not the machine's load.

Theory of operation:

* A wait of the TCK (a signal that must come, a window in which none may) awaits the threads of
  this process: the implementation's and the TCK's own. On a loaded machine those threads sit
  runnable but unscheduled while other processes have the CPUs; a bound of wall time then fails
  a correct implementation that was only served late.
* :class:`OwnTime` counts wall time less the time this process's threads spent waiting for a
  CPU since it began (Linux's ``/proc/self/task/TID/schedstat``, its second field), summed over
  the threads. On an idle machine that is wall time: a hang fails after the timeout, as before.
  Under load the seconds other processes took from this one do not count. Whatever the load, a
  wait ends after :data:`HARD` times its timeout in wall time. Where the system does not say,
  the count is wall time.
* The sum over threads counts two starved threads twice, so under load a hang is reported
  later (never past the hard bound); a thread that ended before the bound looked at it is not
  counted, which only shortens a wait towards wall time.
* :func:`wait_for` is ``threading.Condition.wait_for`` on that clock: it looks at the clock only
  when the predicate does not hold at once, and then at most every :data:`LOOK` seconds, so a
  signal that comes ends the wait as soon as the condition is notified.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Final, TypeVar

from rstreams._schedstat import cpu_waits

__all__ = ["HARD", "LOOK", "OwnTime", "wait_event", "wait_for"]

T = TypeVar("T")

HARD: Final = 20
"""How many times its timeout in wall time any one wait may take, however loaded the machine."""
LOOK: Final = 1.0
"""The longest wall time between two looks at the clock during one wait."""


def _delays() -> dict[int, float]:
    """Thread id -> seconds it has spent waiting for a CPU, for this process's threads."""
    return cpu_waits((os.getpid(),))


class OwnTime:
    """Seconds of this process's own time since it was made: wall time less what its threads
    spent waiting for a CPU meanwhile."""

    def __init__(self) -> None:
        self._start = time.monotonic()
        self._base = _delays()
        self._seen = dict(self._base)

    def spent(self) -> tuple[float, float]:
        """Own seconds and wall seconds since the start."""
        self._seen.update(_delays())
        base = self._base
        starved = sum(max(seen - base.get(tid, 0.0), 0.0) for tid, seen in self._seen.items())
        wall = time.monotonic() - self._start
        return max(wall - starved, 0.0), wall

    def left(self, limit: float) -> float:
        """Seconds a wait of ``limit`` may still take before it looks again; 0 or less: over.
        Before ``limit`` of wall time has passed the threads are not read: own time is no more
        than wall time, so what is left of the wall time is the least that is left."""
        wall = time.monotonic() - self._start
        if wall < limit:
            return limit - wall
        own, wall = self.spent()
        return min(limit - own, HARD * limit - wall)


def wait_for(
    condition: threading.Condition, predicate: Callable[[], T], timeout: float, step: float = LOOK
) -> T:
    """``condition.wait_for(predicate, timeout)`` with ``timeout`` in seconds of own time (at
    most :data:`HARD` times it of wall time): the predicate's last value. Call it holding
    ``condition``, as ``wait_for``. ``step``: the longest single wait on the condition (a poll
    interval; at most :data:`LOOK`)."""
    result = predicate()
    if result or timeout <= 0:
        return result
    clock = OwnTime()
    left = timeout
    while True:
        result = condition.wait_for(predicate, min(left, step or LOOK, LOOK))
        if result:
            return result
        left = clock.left(timeout)
        if left <= 0:
            return result


def wait_event(event: threading.Event, timeout: float) -> bool:
    """``event.wait(timeout)`` with ``timeout`` in seconds of own time: whether it was set."""
    if event.is_set() or timeout <= 0:
        return event.is_set()
    clock = OwnTime()
    left = timeout
    while not event.wait(min(left, LOOK)):
        left = clock.left(timeout)
        if left <= 0:
            return False
    return True
