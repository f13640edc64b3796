"""interval / timer: clocks that cannot be slowed down, on a virtual and a real loop (rule 1.1)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import cast

import pytest

from rstreams.api import Subscription
from rstreams.demand import UNBOUNDED
from rstreams.errors import InvalidDemandError, LoopClosedError, NoEventLoopError, OverflowStrategyError
from rstreams.flow._flow import Flow
from rstreams.flow._public import interval, timer
from rstreams.flow._push import OverflowStrategy
from testkit import patience
from testkit.bound import Bound
from testkit.clock import VirtualLoop
from testkit.recording import RecordingSubscriber
from testkit.shapes import patient_env


@pytest.fixture
def vloop() -> VirtualLoop:
    return VirtualLoop()


def on(vloop: VirtualLoop) -> asyncio.AbstractEventLoop:
    return cast(asyncio.AbstractEventLoop, vloop)


class Timed(RecordingSubscriber[int]):
    """Records the virtual time of each element."""

    def __init__(self, clock: VirtualLoop, initial: int = 0) -> None:
        super().__init__(initial)
        self.clock = clock
        self.times: list[float] = []

    def on_next(self, item: int) -> None:
        self.times.append(self.clock.now)
        super().on_next(item)


def test_interval_ticks_every_period_after_the_initial_delay(vloop: VirtualLoop) -> None:
    s = Timed(vloop, initial=10)
    interval(1.0, loop=on(vloop)).subscribe(s)
    vloop.advance(3.5)
    assert s.items == [0, 1, 2] and s.times == [1.0, 2.0, 3.0]
    s2 = Timed(vloop, initial=10)
    interval(1.0, loop=on(vloop), initial_delay=0).subscribe(s2)
    vloop.advance(2.0)
    assert s2.items == [0, 1, 2] and s2.times == [3.5, 4.5, 5.5]


def test_interval_does_not_drift(vloop: VirtualLoop) -> None:
    """Tick n is due at origin + n * period, computed, never accumulated."""
    s = Timed(vloop, initial=2000)
    interval(0.1, loop=on(vloop)).subscribe(s)
    vloop.advance(100.05)
    assert len(s.items) == 1000
    assert s.times == [0.1 + n * 0.1 for n in range(1000)]


def test_tick_without_demand_fails_by_default_and_stops_the_clock(vloop: VirtualLoop) -> None:
    """Rule 1.1, overflow=ERROR (RxJava's MissingBackpressureException): on_error, clock stops."""
    s = Timed(vloop, initial=2)
    interval(1.0, loop=on(vloop)).subscribe(s)
    vloop.advance(10)
    assert s.items == [0, 1] and isinstance(s.error, OverflowStrategyError)
    assert "interval: tick 2 arrived without demand" in str(s.error) and "rule 1.1" in str(s.error)
    assert vloop.pending == 0


def test_drop_skips_ticks_nobody_asked_for(vloop: VirtualLoop) -> None:
    """overflow=DROP: tick numbers keep counting, so the gap shows."""
    s = Timed(vloop, initial=2)
    interval(1.0, loop=on(vloop), overflow=OverflowStrategy.DROP).subscribe(s)
    vloop.advance(5)
    s.request(2)
    vloop.advance(2)
    assert s.items == [0, 1, 5, 6] and s.error is None
    s.cancel()
    vloop.advance(0)  # the cancel was handed to the loop, as from a foreign thread
    assert vloop.pending == 0


def test_latest_keeps_the_newest_tick_for_the_next_request(vloop: VirtualLoop) -> None:
    s = Timed(vloop)
    interval(1.0, loop=on(vloop), overflow=OverflowStrategy.LATEST).subscribe(s)
    vloop.advance(5)
    s.request(1)  # delivered by this request, on this thread
    assert s.items == [4]
    s.request(1)
    vloop.advance(1)
    assert s.items == [4, 5]


def test_buffer_holds_capacity_ticks_then_fails_after_them(vloop: VirtualLoop) -> None:
    s = Timed(vloop)
    interval(1.0, loop=on(vloop), overflow=OverflowStrategy.BUFFER, capacity=2).subscribe(s)
    vloop.advance(3)
    assert s.items == [] and not s.done and vloop.pending == 0
    s.request(5)
    assert s.items == [0, 1] and isinstance(s.error, OverflowStrategyError)


def test_cancel_stops_the_clock_even_from_on_next(vloop: VirtualLoop) -> None:
    """Rules 3.5, 3.7: a cancel inside on_next cancels the next scheduled tick."""

    class TakeThree(Timed):
        def on_next(self, item: int) -> None:
            super().on_next(item)
            if item == 2:
                self.cancel()
                self.cancel()

    s = TakeThree(vloop, initial=100)
    interval(1.0, loop=on(vloop)).subscribe(s)
    vloop.advance(10)
    assert s.items == [0, 1, 2] and not s.done and vloop.pending == 0


def test_invalid_request_fails_and_stops_the_clock(vloop: VirtualLoop) -> None:
    """Rule 3.9: on_error(InvalidDemandError), never raised; no tick afterwards."""
    s = Timed(vloop, initial=1)
    interval(1.0, loop=on(vloop)).subscribe(s)
    vloop.advance(1)
    s.request(-1)
    assert isinstance(s.error, InvalidDemandError) and "-1" in str(s.error)
    vloop.advance(5)
    assert s.items == [0] and vloop.pending == 0


def test_reentrant_request_keeps_the_clock_going(vloop: VirtualLoop) -> None:
    """Rule 3.3: request(1) inside on_next just adds demand for the next tick."""

    class OneByOne(Timed):
        def on_next(self, item: int) -> None:
            super().on_next(item)
            self.request(1)

    s = OneByOne(vloop, initial=1)
    interval(0.5, loop=on(vloop)).subscribe(s)
    vloop.advance(50)
    assert s.items == list(range(100)) and s.error is None


def test_timer_emits_zero_then_completes(vloop: VirtualLoop) -> None:
    s = Timed(vloop, initial=1)
    timer(2.5, loop=on(vloop)).subscribe(s)
    vloop.advance(2.4)
    assert s.items == []
    vloop.advance(0.1)
    assert s.items == [0] and s.times == [2.5] and s.completed


@pytest.mark.parametrize(
    ("overflow", "signals"),
    [
        (OverflowStrategy.ERROR, ["on_subscribe", "on_error"]),
        (OverflowStrategy.DROP, ["on_subscribe", "on_complete"]),
        (OverflowStrategy.BUFFER, ["on_subscribe"]),
        (OverflowStrategy.LATEST, ["on_subscribe"]),
    ],
)
def test_timer_without_demand_follows_the_overflow_strategy(
    vloop: VirtualLoop, overflow: OverflowStrategy, signals: list[str]
) -> None:
    """Rule 1.4/1.5 without demand; BUFFER and LATEST hold the 0 until it is requested."""
    s = Timed(vloop)
    timer(1.0, loop=on(vloop), overflow=overflow).subscribe(s)
    vloop.advance(1)
    assert s.signals == signals
    if signals == ["on_subscribe"]:
        s.request(1)
        assert s.items == [0] and s.completed


def test_bad_arguments_are_refused_when_built() -> None:
    for bad_period in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="interval"):
            interval(bad_period)
    with pytest.raises(TypeError, match="seconds"):
        interval(True)
    with pytest.raises(ValueError, match="initial_delay"):
        interval(1, initial_delay=-1)
    with pytest.raises(ValueError, match="timer"):
        timer(-0.5)
    with pytest.raises(ValueError, match="overflow=BUFFER"):
        interval(1, overflow=OverflowStrategy.ERROR, capacity=4)


def test_without_a_loop_the_subscriber_is_told_to_pass_loop() -> None:
    """Rule 1.9 then 1.4; and subscribe(None) raises (rule 1.9)."""
    flow: Flow[int] = interval(1)
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    flow.subscribe(s)
    assert s.signals == ["on_subscribe", "on_error"] and "loop=" in str(s.error)
    assert isinstance(s.error, NoEventLoopError)  # the docstring of interval names it
    with pytest.raises(TypeError, match=r"rule 1\.9"):
        flow.subscribe(None)  # type: ignore[arg-type]


class LoopRecorder(RecordingSubscriber[int]):
    """Awaitable on the loop that delivers the signals."""

    def __init__(self, initial: int = 0) -> None:
        super().__init__(initial)
        self.changed = asyncio.Event()
        self.threads: set[int] = set()

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        self.changed.set()

    def on_next(self, item: int) -> None:
        self.threads.add(threading.get_ident())
        super().on_next(item)
        self.changed.set()

    def on_error(self, error: BaseException) -> None:
        super().on_error(error)
        self.changed.set()

    def on_complete(self) -> None:
        super().on_complete()
        self.changed.set()

    async def until(self, predicate: Callable[[], bool]) -> None:
        async with Bound():
            while not predicate():
                self.changed.clear()
                await self.changed.wait()


@pytest.mark.asyncio
async def test_interval_and_timer_on_a_real_loop() -> None:
    """A few-millisecond period on the running loop; elements arrive on the loop's thread."""
    s = LoopRecorder(initial=5)
    interval(0.002).subscribe(s)
    await s.until(lambda: len(s.items) >= 5)
    s.cancel()
    assert s.items == [0, 1, 2, 3, 4] and s.threads == {threading.get_ident()}

    t = LoopRecorder(initial=1)
    timer(0.001).subscribe(t)
    await t.until(lambda: t.done)
    assert t.items == [0] and t.completed


@pytest.mark.parametrize("clock", ["interval", "timer"])
def test_a_clock_on_a_closed_loop_fails_with_loop_closed_error(clock: str) -> None:
    """A clock whose loop= is closed can never tick: on_subscribe, then LoopClosedError (still a
    RuntimeError) naming interval/timer, the loop's own error as its cause, rather than silence."""
    loop = asyncio.new_event_loop()
    loop.close()
    flow = interval(1.0, loop=loop) if clock == "interval" else timer(1.0, loop=loop)
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    flow.subscribe(s)
    assert isinstance(s.error, LoopClosedError) and isinstance(s.error.__cause__, RuntimeError)
    assert str(s.error).startswith("interval/timer: its event loop is closed, the clock can never tick")
    assert s.items == []


@pytest.mark.timeout(20)
def test_cancel_from_a_foreign_thread_stops_a_clock_on_a_loop_thread() -> None:
    """request/cancel from this thread; the timer handle is cancelled on the loop's thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever)
    thread.start()
    try:
        s: RecordingSubscriber[int] = RecordingSubscriber()
        interval(0.001, loop=loop, overflow=OverflowStrategy.DROP).subscribe(s)
        s.request(3)
        first = s.await_items(3)[0]  # ticks before the request arrived were dropped
        assert s.items == [first, first + 1, first + 2]
        s.cancel()

        async def timers() -> int:  # the loop's pending timers, read on its own thread
            scheduled: list[asyncio.TimerHandle] = loop._scheduled  # type: ignore[attr-defined]
            return sum(not handle.cancelled() for handle in scheduled)

        assert patience.result(asyncio.run_coroutine_threadsafe(timers(), loop)) == 0
        assert len(s.items) == 3 and not s.done
    finally:
        loop.call_soon_threadsafe(loop.stop)
        patience.join(thread)
        loop.close()


@pytest.mark.timeout(60)
def test_interval_and_timer_pass_the_publisher_tck() -> None:
    """PublisherVerification on a loop thread: interval(...).take(n) with a buffer, and timer
    (one element), requested and cancelled from this thread (rules 1.x, 3.x)."""
    from rstreams.tck import verify_publisher

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever)
    thread.start()
    try:

        def clock(n: int) -> Flow[int]:
            endless = interval(
                0.0005, initial_delay=0, loop=loop, overflow=OverflowStrategy.BUFFER, capacity=1 << 16
            )
            return endless if n == UNBOUNDED else endless.take(n)

        report = verify_publisher(clock, max_elements=1000, env=patient_env())
        assert report.ok, str(report)
        assert len(report.passed) >= 28

        def one(n: int) -> Flow[int]:
            return timer(0.0005, loop=loop, overflow=OverflowStrategy.BUFFER)

        report = verify_publisher(one, max_elements=1, env=patient_env())
        assert report.ok, str(report)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        patience.join(thread)
        loop.close()
