"""The TCK's waits count this process's own time: a hang still fails after the timeout, a thread
that a loaded machine leaves waiting for a CPU is not taken for one."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from rstreams.api import Subscriber
from rstreams.tck import TestEnvironment, _own_time
from rstreams.tck._failures import TCKFailure
from rstreams.tck._test_subscribers import ManualSubscriber
from testkit import patience

LINUX_SCHEDSTAT = os.path.exists("/proc/thread-self/schedstat") and hasattr(os, "sched_setaffinity")


class _Silent:
    """A publisher that never calls on_subscribe: a hung peer."""

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        pass


@pytest.mark.timeout(60)
def test_a_publisher_that_never_answers_fails_after_the_timeout() -> None:
    env = TestEnvironment(default_timeout=0.3)
    said = r"^rule 1\.9: the publisher did not call on_subscribe within 300 ms"
    with pytest.raises(TCKFailure, match=said):
        env.subscribe(_Silent(), ManualSubscriber(env))


class _VirtualTime:
    """A clock and a condition that never comes: each wait on it moves the clock by its length, of
    which ``starved`` (a share) is time the process's threads waited for a CPU."""

    def __init__(self, starved: float) -> None:
        self.now, self.starved, self.waits = 0.0, starved, list[float]()

    def monotonic(self) -> float:
        return self.now

    def delays(self) -> dict[int, float]:
        return {1: round(self.now * self.starved * 1e9) / 1e9}  # (nanoseconds, as schedstat counts)

    def wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        self.waits.append(timeout)
        self.now += timeout
        return predicate()


@pytest.fixture
def virtual(monkeypatch: pytest.MonkeyPatch) -> Callable[[float], _VirtualTime]:
    def make(starved: float) -> _VirtualTime:
        clock = _VirtualTime(starved)
        monkeypatch.setattr(time, "monotonic", clock.monotonic)  # (the module reads time.monotonic)
        monkeypatch.setattr(_own_time, "_delays", clock.delays)
        return clock

    return make


@pytest.mark.parametrize(("starved", "wall"), [(0.0, 0.3), (0.5, 0.6), (1.0, 0.3 * _own_time.HARD)])
def test_a_wait_ends_after_its_own_time_or_at_the_hard_bound(
    virtual: Callable[[float], _VirtualTime], starved: float, wall: float
) -> None:
    """Idle, a wait of 0.3 s ends after 0.3 s; with half its wall time spent waiting for a CPU,
    after 0.6 s; starved all along, at the hard bound."""
    clock = virtual(starved)
    assert not _own_time.wait_for(clock, lambda: False, 0.3)  # type: ignore[arg-type]
    assert clock.now == pytest.approx(wall)
    assert max(clock.waits) <= _own_time.LOOK


def test_what_holds_at_once_costs_no_look_at_the_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    def unread() -> dict[int, float]:
        raise AssertionError("the threads were read")

    monkeypatch.setattr(_own_time, "_delays", unread)
    assert _own_time.wait_for(threading.Condition(), lambda: 7, 0.3) == 7
    event = threading.Event()
    event.set()
    assert _own_time.wait_event(event, 0.3)


@pytest.mark.skipif(not LINUX_SCHEDSTAT, reason="needs Linux's schedstat and CPU affinity")
@pytest.mark.timeout(60)
def test_a_signal_from_a_thread_starved_of_its_cpu_comes_within_a_short_timeout() -> None:
    """The signalling thread needs 0.1 s of CPU on one CPU shared with four spinning processes:
    about 0.5 s of wall time, more than the 0.3 s timeout of wall time allows; the wait, of own
    time, sees the signal."""
    cpu = min(os.sched_getaffinity(0))
    spin = f"import os; os.sched_setaffinity(0, {{{cpu}}}); print('spinning', flush=True)\nwhile True: pass"
    spinners: list[subprocess.Popen[str]] = []
    env = TestEnvironment(default_timeout=0.3)
    latch_closed, gone = threading.Event(), threading.Event()
    try:
        for _ in range(4):
            spinners.append(subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE, text=True))
            assert patience.child_line(spinners[-1], "'spinning'") == "spinning\n"

        def work() -> None:
            os.sched_setaffinity(0, {cpu})  # (this thread only)
            start = time.thread_time()
            while time.thread_time() - start < 0.1:
                pass
            with env.cond:
                latch_closed.set()
                env.cond.notify_all()
            gone.wait()  # (a thread that ended is not counted: it stays until the wait is over)

        started = time.monotonic()
        threading.Thread(target=work, daemon=True).start()
        came = env.wait_for(latch_closed.is_set, env.default_timeout)
        wall = time.monotonic() - started
    finally:
        gone.set()
        for child in spinners:
            child.kill()
            child.wait()
            assert child.stdout is not None
            child.stdout.close()
    assert came, f"no signal after {wall:.2f} s"
    assert wall > 0.3, f"the thread was not starved ({wall:.2f} s): this run proves nothing"
