"""testkit.bound: a wait's bound counts the loop's own time, and a virtual loop's own clock."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import pytest

from testkit import bound
from testkit.bound import Bound, OwnTimeLoop, run_own_time, within
from testkit.net import run_virtual


@pytest.mark.timeout(30)
def test_within_gives_the_result_or_a_timeout_error_and_cancels_what_it_waited_for() -> None:
    async def main() -> tuple[str, bool]:
        async def answer() -> str:
            await asyncio.sleep(0)
            return "done"

        never = asyncio.ensure_future(asyncio.Event().wait())
        with pytest.raises(TimeoutError):
            await within(never, 0.1)
        return await within(answer()), never.cancelled()

    assert asyncio.run(main()) == ("done", True)


@pytest.mark.timeout(30)
def test_time_spent_waiting_for_a_cpu_is_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the thread had waited for a CPU all along: a wait far past its limit still ends."""
    monkeypatch.setattr(bound, "_run_delay", time.monotonic)

    async def main() -> str:
        async def slow() -> str:
            await asyncio.sleep(0.2)
            return "done"

        return await within(slow(), 0.02)

    assert asyncio.run(main()) == "done"


@pytest.mark.timeout(30)
def test_on_a_virtual_loop_the_bound_is_its_own_clock() -> None:
    """The loop's clock jumps to the bound's end: the wait fails at that virtual time, at once."""

    async def main() -> float:
        loop = asyncio.get_running_loop()
        with pytest.raises(TimeoutError):
            async with Bound(5.0):
                await asyncio.Event().wait()
        return loop.time()

    assert run_virtual(main) == 5.0  # (counting real time, the virtual clock would run far past it)


@pytest.mark.timeout(30)
def test_time_a_child_spent_waiting_for_a_cpu_is_not_counted_either(monkeypatch: pytest.MonkeyPatch) -> None:
    """As if the child named had waited for a CPU all along: its line, 0.3 s late, still comes
    within a 0.05 s bound; the same wait that does not name it fails."""
    monkeypatch.setattr(bound, "_delays", lambda pids, children: {1: time.monotonic()} if children else {})

    async def main() -> bytes:
        code = "import time; time.sleep(0.3); print('ready')"
        child = await asyncio.create_subprocess_exec(sys.executable, "-c", code, stdout=subprocess.PIPE)
        assert child.stdout is not None
        try:
            with pytest.raises(TimeoutError):
                await within(child.stdout.readline(), 0.05)
            return await within(child.stdout.readline(), 0.05, children=[child.pid])
        finally:
            await child.wait()

    assert asyncio.run(main()) == b"ready\n"


@pytest.mark.timeout(30)
def test_an_own_time_loop_s_timers_do_not_count_the_time_its_thread_waited_for_a_cpu() -> None:
    """As if the thread waited for a CPU half of every second: a 0.1 s sleep on the loop's clock
    lasts at least 0.2 s of wall time, and the clock never goes back."""
    started = time.monotonic()

    class HalfStarved(OwnTimeLoop):
        def _delay(self) -> float:
            return (time.monotonic() - started) / 2

    async def main() -> list[float]:
        loop = asyncio.get_running_loop()
        assert isinstance(loop, HalfStarved)
        seen = [loop.time()]
        await asyncio.sleep(0.1)
        seen.append(loop.time())
        return seen

    with asyncio.Runner(loop_factory=HalfStarved) as runner:
        seen = runner.run(main())
    assert time.monotonic() - started >= 0.2
    assert seen == sorted(seen) and seen[1] - seen[0] >= 0.1
    assert run_own_time(lambda: asyncio.sleep(0, "done")) == "done"  # (the real one: this thread's schedstat)
