"""``async for`` over a Flow: bounded demand, cross-thread signals, cancellation, errors."""

from __future__ import annotations

import asyncio
import gc
import threading
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscriber, Subscription
from rstreams.flow._aiter import _Receiver, iter_async
from rstreams.tck._subscriber import verify_subscriber_blackbox
from testkit import patience
from testkit.bound import within
from testkit.recording import WAIT
from testkit.shapes import patient_env


class RecordingPublisher(rstreams.Flow[int]):
    """Emits 0, 1, 2, ... synchronously inside request(n) while it has demand, and checks
    that outstanding demand never exceeds ``limit``; counts up to ``n`` then completes."""

    def __init__(self, n: int, limit: int) -> None:
        self.n = n
        self.limit = limit
        self.max_outstanding = 0
        self.requests: list[int] = []
        self.cancelled = False

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        publisher = self
        state = {"next": 0, "outstanding": 0, "emitting": False}

        class _Subscription(Subscription):
            def request(self, k: int) -> None:
                publisher.requests.append(k)
                state["outstanding"] += k
                publisher.max_outstanding = max(publisher.max_outstanding, state["outstanding"])
                assert state["outstanding"] <= publisher.limit, state
                if state["emitting"]:
                    return  # rule 3.3: trampoline
                state["emitting"] = True
                while state["outstanding"] and state["next"] < publisher.n and not publisher.cancelled:
                    state["outstanding"] -= 1
                    state["next"] += 1
                    subscriber.on_next(state["next"] - 1)
                state["emitting"] = False
                if state["next"] == publisher.n and not publisher.cancelled:
                    publisher.cancelled = True
                    subscriber.on_complete()

            def cancel(self) -> None:
                publisher.cancelled = True

        subscriber.on_subscribe(_Subscription())


class ThreadPublisher(rstreams.Flow[int]):
    """Emits from a thread of its own, waiting for demand on a condition."""

    def __init__(self, n: int, error: BaseException | None = None) -> None:
        self.n = n
        self.error = error
        self.cancelled = threading.Event()
        self.finished = threading.Event()

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        cond = threading.Condition()
        outstanding = [0]
        publisher = self

        class _Subscription(Subscription):
            def request(self, k: int) -> None:
                with cond:
                    outstanding[0] += k
                    cond.notify()

            def cancel(self) -> None:
                publisher.cancelled.set()
                with cond:
                    cond.notify()

        def run() -> None:
            subscriber.on_subscribe(_Subscription())
            for i in range(self.n):
                with cond:
                    if not cond.wait_for(lambda: outstanding[0] > 0 or self.cancelled.is_set(), WAIT):
                        raise AssertionError("no demand")
                    if self.cancelled.is_set():
                        self.finished.set()
                        return
                    outstanding[0] -= 1
                subscriber.on_next(i)
            if self.error is not None:
                subscriber.on_error(self.error)
            else:
                subscriber.on_complete()
            self.finished.set()

        threading.Thread(target=run, daemon=True).start()


@pytest.mark.asyncio
async def test_async_for_over_a_sync_source() -> None:
    """Every element in order, then the loop ends."""
    assert [x async for x in rstreams.range(0, 1000)] == list(range(1000))
    nothing: rstreams.Flow[int] = rstreams.empty()
    assert [x async for x in nothing] == []


@pytest.mark.asyncio
async def test_outstanding_demand_never_exceeds_the_window() -> None:
    """Window 8: request(8), then 4 each time 4 were taken; the publisher asserts the bound."""
    publisher = RecordingPublisher(100, limit=8)
    got = [x async for x in iter_async(publisher, window=8)]
    assert got == list(range(100))
    assert publisher.requests[0] == 8 and set(publisher.requests[1:]) == {4}
    assert publisher.max_outstanding <= 8
    one = RecordingPublisher(5, limit=1)
    assert [x async for x in iter_async(one, window=1)] == list(range(5))


@pytest.mark.asyncio
async def test_subscription_is_lazy() -> None:
    """Nothing is requested before the first __anext__."""
    publisher = RecordingPublisher(10, limit=4)
    iterator = iter_async(publisher, window=4)
    assert publisher.requests == []
    assert await iterator.__anext__() == 0
    assert publisher.requests == [4]
    await iterator.aclose()  # type: ignore[attr-defined]


@pytest.mark.asyncio
async def test_break_cancels_the_subscription() -> None:
    """Leaving ``async for`` early cancels at once (no garbage collection needed)."""
    publisher = RecordingPublisher(1000, limit=16)
    gc.disable()  # prove it is reference counting, not the cycle collector, that cancels
    try:
        async for x in iter_async(publisher, window=16):
            if x == 3:
                break
        assert publisher.cancelled
    finally:
        gc.enable()


@pytest.mark.asyncio
async def test_exception_in_the_body_cancels() -> None:
    """An exception out of the loop body cancels the subscription."""
    publisher = RecordingPublisher(1000, limit=16)

    async def consume() -> None:
        async for x in iter_async(publisher, window=16):
            if x == 5:
                raise KeyError(x)

    with pytest.raises(KeyError):
        await consume()
    assert publisher.cancelled


@pytest.mark.asyncio
async def test_aclose_cancels_and_exhausts() -> None:
    """aclose() cancels; the iterator then ends; aclose before the first __anext__ too."""
    publisher = RecordingPublisher(1000, limit=16)
    iterator: Any = iter_async(publisher, window=16)
    assert await iterator.__anext__() == 0
    await iterator.aclose()
    await iterator.aclose()
    assert publisher.cancelled
    with pytest.raises(StopAsyncIteration):
        await iterator.__anext__()
    untouched = RecordingPublisher(10, limit=16)
    iterator = iter_async(untouched, window=16)
    await iterator.aclose()
    with pytest.raises(StopAsyncIteration):
        await iterator.__anext__()
    assert untouched.requests == []


@pytest.mark.asyncio
@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
async def test_signals_from_another_thread() -> None:
    """A publisher on its own thread: elements arrive in order, demand flows back."""
    publisher = ThreadPublisher(5000)
    got = [x async for x in iter_async(publisher, window=32)]
    assert got == list(range(5000))
    assert patience.wait(publisher.finished)


@pytest.mark.asyncio
@pytest.mark.timeout(10)
async def test_error_from_another_thread_raises_after_the_elements() -> None:
    """Buffered elements first, then the stream's error from __anext__; then exhausted."""
    boom = RuntimeError("boom")
    iterator: Any = iter_async(ThreadPublisher(10, error=boom), window=4)
    got: list[int] = []

    async def consume() -> None:
        async for x in iterator:
            got.append(x)  # noqa: PERF401 - the elements before the error must be kept

    with pytest.raises(RuntimeError, match="boom"):
        await consume()
    assert got == list(range(10))
    with pytest.raises(StopAsyncIteration):
        await iterator.__anext__()


@pytest.mark.asyncio
@pytest.mark.timeout(10)
async def test_break_cancels_a_threaded_publisher() -> None:
    """The producer thread sees the cancel and stops."""
    publisher = ThreadPublisher(1_000_000)
    async for x in iter_async(publisher, window=8):
        if x == 100:
            break
    assert publisher.cancelled.is_set()
    assert await asyncio.to_thread(publisher.finished.wait, WAIT)


@pytest.mark.asyncio
async def test_error_of_a_sync_source() -> None:
    """A failing map raises from the async for."""
    with pytest.raises(ZeroDivisionError):
        async for _ in rstreams.range(0, 5).map(lambda x: 1 // (x - 2)):
            pass


def test_bad_window_is_refused() -> None:
    """window must be a positive int (rule 3.9 applied upfront)."""
    for bad in (0, -1):
        with pytest.raises(ValueError, match=r"3\.9"):
            iter_async(rstreams.range(0, 1), window=bad)
    for wrong in (1.5, True):
        with pytest.raises(TypeError, match=r"iter_async\(window=...\) needs an int"):
            iter_async(rstreams.range(0, 1), window=wrong)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Publisher"):
        iter_async(None)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_receiver_follows_rules_2_5_and_2_13() -> None:
    """The receiver cancels a second subscription and refuses None arguments."""
    publisher = RecordingPublisher(10, limit=4)
    iterator: Any = iter_async(publisher, window=4)
    await iterator.__anext__()
    receiver = iterator._receiver
    second = RecordingPublisher(10, limit=4)
    second.subscribe(receiver)
    assert second.cancelled and not publisher.cancelled
    with pytest.raises(TypeError, match=r"2\.13"):
        receiver.on_next(None)
    with pytest.raises(TypeError, match=r"2\.13"):
        receiver.on_error(None)
    with pytest.raises(TypeError, match=r"2\.13"):
        receiver.on_subscribe(None)
    await iterator.aclose()


@pytest.mark.timeout(30)
def test_receiver_passes_the_tck() -> None:
    """The TCK's blackbox Subscriber verification passes for the async iterator's receiver."""
    loop = asyncio.new_event_loop()
    try:
        report = verify_subscriber_blackbox(lambda: _Receiver(8, loop), env=patient_env())
    finally:
        loop.close()
    assert report.ok, str(report)


@pytest.mark.asyncio
@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
async def test_aclose_wakes_a_parked_consumer() -> None:
    """aclose() from elsewhere ends an __anext__ that is waiting for an element."""
    iterator: Any = iter_async(_Silent(), window=4)
    waiting = asyncio.ensure_future(iterator.__anext__())
    for _ in range(10):  # a bounded number of loop steps until the consumer is parked
        if iterator._receiver is not None and iterator._receiver.waiter is not None:
            break
        await asyncio.sleep(0)
    assert iterator._receiver.waiter is not None and not waiting.done()
    await iterator.aclose()
    with pytest.raises(StopAsyncIteration):
        await within(waiting)


class _Silent(rstreams.Flow[int]):
    """Accepts requests and never signals anything."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        class _Subscription(Subscription):
            def request(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                pass

        subscriber.on_subscribe(_Subscription())
