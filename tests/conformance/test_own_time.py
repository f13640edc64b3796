"""The client suite's clock (rstreams.conformance._own_time.OwnTimeLoop): wall time less what this
process and its descendants waited for a CPU, read every REFRESH at most, never backwards; a
client that hangs still fails its deadline on it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time

import pytest

from rstreams.conformance import _own_time
from rstreams.conformance._own_time import REFRESH, OwnTimeLoop, starved
from testkit import patience


def test_the_clock_leaves_out_the_time_spent_waiting_for_a_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    now, waited = [100.0], [0.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])  # (the module reads time.monotonic)
    monkeypatch.setattr(_own_time, "starved", lambda pid: {1: waited[0], 2: 0.0})
    loop = OwnTimeLoop()
    try:
        start = loop.time()
        now[0] += 1.0
        waited[0] = 0.6  # 0.6 s of the last second spent waiting for a CPU
        assert loop.time() - start == pytest.approx(0.4)
        now[0] += REFRESH * 0.4  # not read again yet: the clock runs as wall time meanwhile
        waited[0] = 2.0
        assert loop.time() - start == pytest.approx(0.4 + REFRESH * 0.4)
        now[0] += REFRESH * 0.7  # read: 2 s starved in 1.11 s of wall time, and the clock stays put
        assert loop.time() - start == pytest.approx(0.4 + REFRESH * 0.4)
    finally:
        loop.close()


@pytest.mark.skipif(not os.path.exists("/proc/thread-self/schedstat"), reason="needs Linux's schedstat")
@pytest.mark.timeout(60)
def test_the_threads_of_this_process_and_of_a_child_are_read() -> None:
    code = "import time; print('ready', flush=True); time.sleep(60)"
    sleeper = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert patience.child_line(sleeper, "'ready'") == "ready\n"
        threads = starved(os.getpid())
        ours = {thread.native_id for thread in threading.enumerate()}
        assert sleeper.pid in threads and ours <= set(threads), (sleeper.pid, ours, threads)
    finally:
        patience.stop_child(sleeper)


@pytest.mark.timeout(60)
def test_a_wait_that_never_ends_times_out_on_it() -> None:
    async def main() -> None:
        async with asyncio.timeout(0.2):
            await asyncio.Event().wait()

    with asyncio.Runner(loop_factory=OwnTimeLoop) as runner, pytest.raises(TimeoutError):
        runner.run(main())
