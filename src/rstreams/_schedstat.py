"""How long threads have waited for a CPU, for the waits that count own time instead of wall time
(the TCK's, the client conformance suite's, the tests').

Linux keeps, per thread, the nanoseconds it has spent runnable but not running
(``/proc/PID/task/TID/schedstat``, its second field). Wall time less that is the time a thread
had a CPU or waited for what it awaits: on an idle machine wall time itself, under load the
seconds other processes took from it left out. Where ``/proc`` does not say, nothing is found and
a caller counts wall time.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

__all__ = ["cpu_waits"]


def _read(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def cpu_waits(pids: Iterable[int] = (), families: Iterable[int] = ()) -> dict[int, float]:
    """Thread id -> seconds it has spent waiting for a CPU, for every thread of ``pids`` and of
    ``families`` with their descendants (``/proc/PID/task/TID/children``, walked once); empty
    where ``/proc`` does not say. A thread that ended is not found."""
    found: dict[int, float] = {}
    family = set(families)
    todo, seen = [*family, *pids], set[int]()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            task = f"/proc/{pid}/task/{tid}"
            try:
                found[int(tid)] = int((_read(f"{task}/schedstat") or b"").split()[1]) / 1e9
            except (IndexError, ValueError):
                pass
            if pid in family:
                try:
                    kids = [int(kid) for kid in (_read(f"{task}/children") or b"").split()]
                except ValueError:
                    continue
                family.update(kids)
                todo += kids
    return found
