"""from_async_iterable: demand-driven pulling on an event loop (rules 1.x, 2.13, 3.x)."""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

import pytest

import rstreams
from rstreams.api import Subscription
from rstreams.errors import (
    AlreadySubscribedError,
    InvalidDemandError,
    LoopClosedError,
    NoEventLoopError,
    NoneElementError,
    set_unhandled_error_hook,
)
from rstreams.flow._flow import Flow
from rstreams.flow._public import from_async_iterable
from testkit import patience
from testkit.bound import Bound, within
from testkit.recording import RecordingSubscriber
from testkit.shapes import patient_env

T = TypeVar("T")


class AsyncRecorder(RecordingSubscriber[T]):
    """A RecordingSubscriber whose waits are awaitable on the loop that delivers the signals."""

    def __init__(self, initial: int = 0) -> None:
        super().__init__(initial)
        self.changed = asyncio.Event()
        self.threads: set[int] = set()

    def _note(self) -> None:
        self.threads.add(threading.get_ident())
        self.changed.set()

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        self._note()

    def on_next(self, item: T) -> None:
        super().on_next(item)
        self._note()

    def on_error(self, error: BaseException) -> None:
        super().on_error(error)
        self._note()

    def on_complete(self) -> None:
        super().on_complete()
        self._note()

    async def until(self, predicate: Callable[[], bool], what: str) -> None:
        async with Bound():
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

    async def items_(self, n: int) -> list[T]:
        await self.until(lambda: len(self.items) >= n or self.done, f"{n} items")
        return list(self.items)

    async def done_(self) -> None:
        await self.until(lambda: self.done, "a terminal signal")


class Probe:
    """An async generator function that records what it was asked for and whether it closed."""

    def __init__(self, n: int | None = None) -> None:
        self.n = n
        self.pulled: list[int] = []
        self.closed = asyncio.Event()

    async def __call__(self) -> AsyncIterator[int]:
        try:
            i = 0
            while self.n is None or i < self.n:
                self.pulled.append(i)
                yield i
                i += 1
        finally:
            self.closed.set()


@pytest.mark.asyncio
async def test_pulls_only_what_was_requested() -> None:
    """Rule 1.1 and laziness: __anext__ is awaited once per requested element, no more."""
    probe = Probe()
    s: AsyncRecorder[int] = AsyncRecorder()
    from_async_iterable(probe).subscribe(s)
    assert s.signals == ["on_subscribe"]
    s.request(2)
    assert await s.items_(2) == [0, 1]
    for _ in range(5):
        await asyncio.sleep(0)
    assert probe.pulled == [0, 1] and s.items == [0, 1]
    s.request(3)
    assert await s.items_(5) == [0, 1, 2, 3, 4] and probe.pulled == [0, 1, 2, 3, 4]
    s.cancel()


@pytest.mark.asyncio
async def test_completes_and_each_subscription_gets_a_fresh_generator() -> None:
    """A generator function is cold: every subscriber sees the whole sequence, then on_complete."""
    probe = Probe(3)
    flow = from_async_iterable(probe)
    a: AsyncRecorder[int] = AsyncRecorder(initial=10)
    b: AsyncRecorder[int] = AsyncRecorder(initial=rstreams.UNBOUNDED)
    flow.subscribe(a)
    flow.subscribe(b)
    await a.done_()
    await b.done_()
    assert a.items == b.items == [0, 1, 2] and a.completed and b.completed


@pytest.mark.asyncio
async def test_a_whole_batch_is_pulled_without_a_loop_hop_per_element() -> None:
    """While demand remains, elements flow in one task step: only __anext__ is awaited."""
    s: AsyncRecorder[int] = AsyncRecorder()
    from_async_iterable(Probe()).subscribe(s)
    s.request(100)
    await asyncio.sleep(0)  # one loop iteration: the pulling task's first step runs
    assert s.items == list(range(100))
    s.cancel()


@pytest.mark.asyncio
async def test_async_generator_object_can_be_consumed_once() -> None:
    """Like from_iterable with an iterator: the second subscriber is told why it got nothing."""
    probe = Probe(2)
    flow = from_async_iterable(probe())
    first: AsyncRecorder[int] = AsyncRecorder(initial=5)
    flow.subscribe(first)
    second: AsyncRecorder[int] = AsyncRecorder(initial=5)
    flow.subscribe(second)
    await first.done_()
    assert first.items == [0, 1] and first.completed
    assert isinstance(second.error, AlreadySubscribedError) and "once" in str(second.error)


@pytest.mark.asyncio
async def test_reiterable_async_iterable_is_iterated_anew() -> None:
    class Countdown:
        def __aiter__(self) -> AsyncIterator[int]:
            return Probe(2)()

    flow = from_async_iterable(Countdown())
    for _ in range(2):
        s: AsyncRecorder[int] = AsyncRecorder(initial=5)
        flow.subscribe(s)
        await s.done_()
        assert s.items == [0, 1] and s.completed


@pytest.mark.asyncio
async def test_cancel_closes_the_generator_so_finally_runs() -> None:
    """Rules 3.5, 3.13: cancel stops pulling and aclose()s the generator, waiting or mid-await."""
    probe = Probe()
    s: AsyncRecorder[int] = AsyncRecorder(initial=3)
    from_async_iterable(probe).subscribe(s)
    await s.items_(3)
    s.cancel()
    s.cancel()
    await within(probe.closed.wait())
    s.request(5)
    assert s.items == [0, 1, 2] and not s.done and probe.pulled == [0, 1, 2]

    closed = asyncio.Event()
    started = asyncio.Event()

    async def blocked() -> AsyncIterator[int]:
        try:
            started.set()
            await asyncio.Event().wait()  # never set: cancel must interrupt it
            yield 1
        finally:
            closed.set()

    s2: AsyncRecorder[int] = AsyncRecorder(initial=1)
    from_async_iterable(blocked).subscribe(s2)
    await within(started.wait())
    s2.cancel()
    await within(closed.wait())
    assert s2.signals == ["on_subscribe"]


@pytest.mark.asyncio
async def test_generator_errors_arrive_as_on_error() -> None:
    """Rule 1.4: a failing source ends the stream with its exception."""
    boom = ValueError("bad row")

    async def failing() -> AsyncIterator[int]:
        yield 1
        raise boom

    s: AsyncRecorder[int] = AsyncRecorder(initial=5)
    from_async_iterable(failing).subscribe(s)
    await s.done_()
    assert s.items == [1] and s.error is boom


@pytest.mark.asyncio
async def test_none_element_and_coroutine_factory_are_errors() -> None:
    """Rule 2.13: None is never an element; a coroutine is not an async iterable (no warning)."""

    async def with_none() -> AsyncIterator[int | None]:
        yield 1
        yield None

    s: AsyncRecorder[int | None] = AsyncRecorder(initial=5)
    from_async_iterable(with_none).subscribe(s)
    await s.done_()
    assert s.items == [1] and isinstance(s.error, NoneElementError) and "2.13" in str(s.error)

    async def not_a_generator() -> int:
        return 1

    s2: AsyncRecorder[int] = AsyncRecorder(initial=1)
    from_async_iterable(not_a_generator).subscribe(s2)  # type: ignore[arg-type]
    await s2.done_()
    assert isinstance(s2.error, TypeError) and "coroutine" in str(s2.error)
    with pytest.raises(TypeError, match="async iterable"):
        from_async_iterable(42)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_invalid_request_signals_on_error_and_closes_the_generator() -> None:
    """Rules 3.9, 3.16: request(0) never raises; on_error(InvalidDemandError), then aclose."""
    for bad in (0, -3, False):
        probe = Probe()
        s: AsyncRecorder[int] = AsyncRecorder(initial=1)
        from_async_iterable(probe).subscribe(s)
        await s.items_(1)
        s.request(bad)
        await s.done_()
        assert isinstance(s.error, InvalidDemandError) and repr(bad) in str(s.error)
        await within(probe.closed.wait())


@pytest.mark.asyncio
async def test_reentrant_request_does_not_recurse() -> None:
    """Rule 3.3: request(1) inside on_next only adds demand; depth stays 1."""
    depth = max_depth = 0

    class Reentrant(AsyncRecorder[int]):
        def on_next(self, item: int) -> None:
            nonlocal depth, max_depth
            depth += 1
            max_depth = max(max_depth, depth)
            super().on_next(item)
            self.request(1)
            depth -= 1

    s = Reentrant(initial=1)
    from_async_iterable(Probe(5000)).subscribe(s)
    await s.done_()
    assert s.completed and s.items == list(range(5000)) and max_depth == 1


@pytest.mark.asyncio
async def test_raising_on_next_cancels_reports_and_closes() -> None:
    """Rule 2.13: the subscriber is considered cancelled; the error goes to the hook."""
    reported: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append((e, where)))
    try:
        probe = Probe()

        class Broken(AsyncRecorder[int]):
            def on_next(self, item: int) -> None:
                super().on_next(item)
                raise ValueError("user bug")

        s = Broken(initial=5)
        from_async_iterable(probe).subscribe(s)
        await within(probe.closed.wait())
        assert s.items == [0] and not s.done
        assert len(reported) == 1 and "on_next" in reported[0][1]
    finally:
        set_unhandled_error_hook(previous)


def test_a_closed_loop_fails_the_subscriber_with_loop_closed_error() -> None:
    """Rule 1.9 then 1.4: a loop= that is closed gives on_subscribe, then LoopClosedError (a
    RuntimeError) with the loop's own error as its cause."""
    loop = asyncio.new_event_loop()
    loop.close()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    from_async_iterable(Probe(), loop=loop).subscribe(s)
    assert s.signals == ["on_subscribe", "on_error"]
    assert isinstance(s.error, LoopClosedError) and isinstance(s.error.__cause__, RuntimeError)


def test_without_a_loop_the_subscriber_is_told_to_pass_loop() -> None:
    """Rule 1.9 then 1.4: no running loop and no loop= gives on_subscribe, then on_error."""
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    from_async_iterable(Probe()).subscribe(s)
    assert s.signals == ["on_subscribe", "on_error"]
    assert isinstance(s.error, NoEventLoopError) and "loop=" in str(s.error)
    s.request(1)
    s.cancel()
    with pytest.raises(TypeError, match=r"rule 1\.9"):
        from_async_iterable(Probe()).subscribe(None)  # type: ignore[arg-type]


@pytest.fixture
def loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    """An event loop running in its own thread, stopped and closed afterwards."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-loop")
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        patience.join(thread)
        loop.close()


def _run(loop: asyncio.AbstractEventLoop, fn: Callable[[], Any]) -> Any:
    """Call ``fn`` on the loop's thread and return its result."""

    async def call() -> Any:
        return fn()

    return patience.result(asyncio.run_coroutine_threadsafe(call(), loop))


@pytest.mark.timeout(20)
def test_requests_and_cancel_from_a_foreign_thread(loop_thread: asyncio.AbstractEventLoop) -> None:
    """Rule 1.3: request()/cancel() from this thread; every signal comes from the loop's thread."""
    probe = Probe()
    signal_threads: set[str] = set()

    class Where(RecordingSubscriber[int]):
        def on_subscribe(self, subscription: Subscription) -> None:
            signal_threads.add(threading.current_thread().name)
            super().on_subscribe(subscription)

        def on_next(self, item: int) -> None:
            signal_threads.add(threading.current_thread().name)
            super().on_next(item)

    s = Where()
    from_async_iterable(probe, loop=loop_thread).subscribe(s)
    s.await_subscribed()
    for _ in range(50):
        s.request(2)
    assert s.await_items(100) == list(range(100))
    assert signal_threads == {"test-loop"}
    s.cancel()
    _run(loop_thread, lambda: None)  # the cancel hand-over has run
    closed = asyncio.run_coroutine_threadsafe(within(probe.closed.wait()), loop_thread)
    patience.result(closed)
    assert len(probe.pulled) == 100

    s2: RecordingSubscriber[int] = RecordingSubscriber()
    from_async_iterable(Probe(3), loop=loop_thread).subscribe(s2)
    s2.await_subscribed()
    s2.request(0)
    s2.await_done()
    assert isinstance(s2.error, InvalidDemandError)


def test_a_closed_loop_is_reported_not_raised() -> None:
    """Rule 1.9: subscribing with a closed loop= gives on_subscribe then on_error."""
    loop = asyncio.new_event_loop()
    loop.close()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    from_async_iterable(Probe(), loop=loop).subscribe(s)
    assert s.signals == ["on_subscribe", "on_error"] and "loop" in str(s.error)


def test_loop_shutdown_ends_the_stream_with_an_error() -> None:
    """Rule 1.4: when asyncio.run() cancels the pulling task at exit, the subscriber hears why."""
    closed: list[bool] = []

    async def forever() -> AsyncIterator[int]:
        try:
            yield 0
            await asyncio.Event().wait()
            yield 1
        finally:
            closed.append(True)

    s: RecordingSubscriber[int] = RecordingSubscriber(initial=2)

    async def main() -> None:
        from_async_iterable(forever).subscribe(s)
        await asyncio.sleep(0)

    asyncio.run(main())
    assert s.items == [0] and isinstance(s.error, LoopClosedError) and "cancelled" in str(s.error)
    assert closed == [True]


@pytest.mark.timeout(60)
def test_passes_the_publisher_tck(loop_thread: asyncio.AbstractEventLoop) -> None:
    """Every PublisherVerification case (rules 1.x, 3.x), driven from this thread."""
    from rstreams.tck import verify_publisher

    def numbers(n: int) -> Flow[int]:
        async def gen() -> AsyncIterator[int]:
            for i in itertools.count() if n == rstreams.UNBOUNDED else range(n):
                yield i

        return from_async_iterable(gen, loop=loop_thread)

    def failed() -> Flow[int]:
        def factory() -> AsyncIterator[int]:
            raise RuntimeError("cannot open the source")

        return from_async_iterable(factory, loop=loop_thread)

    report = verify_publisher(numbers, create_failed_publisher=failed, env=patient_env())
    assert report.ok, str(report)
    assert len(report.passed) >= 30
