"""Sinks: collect, reduce, count, for_each and SinkResult (rules 2.3, 2.5, 2.13, 3.12, 3.17)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import operator
import threading
from collections.abc import Callable
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscriber, Subscription
from rstreams.errors import BlockingInLoopError
from rstreams.flow import _sinks
from rstreams.flow._sinks import collect, count, for_each, reduce
from rstreams.tck._subscriber import verify_subscriber_blackbox
from testkit import patience
from testkit.bound import within
from testkit.broken_subscribers import PassThrough


class ManualPublisher(rstreams.Flow[Any]):
    """One subscriber; the test emits by hand and sees every request and cancel."""

    def __init__(self) -> None:
        self.subscriber: Subscriber[Any] | None = None
        self.requests: list[int] = []
        self.cancelled = threading.Event()
        self.subscribed = threading.Event()

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        self.subscriber = subscriber
        publisher = self

        class _Subscription(Subscription):
            def request(self, n: int) -> None:
                publisher.requests.append(n)

            def cancel(self) -> None:
                publisher.cancelled.set()

        subscriber.on_subscribe(_Subscription())
        self.subscribed.set()

    def emit(self, *items: object) -> None:
        assert self.subscriber is not None
        for item in items:
            self.subscriber.on_next(item)

    def complete(self) -> None:
        assert self.subscriber is not None
        self.subscriber.on_complete()


def threaded_range(n: int) -> rstreams.Flow[int]:
    """A source that emits from its own thread (an asynchronous Publisher)."""
    publisher = ManualPublisher()

    def run() -> None:
        patience.wait(publisher.subscribed)
        publisher.emit(*range(n))
        publisher.complete()

    threading.Thread(target=run, daemon=True).start()
    return publisher


def test_collect_reduce_count_on_a_sync_source() -> None:
    """The sinks give the same answers as Python's builtins."""
    flow = rstreams.range(0, 100)
    assert patience.result(flow.collect()) == list(range(100))
    assert patience.result(flow.reduce(operator.add, 0)) == sum(range(100))
    assert patience.result(flow.reduce(lambda acc, x: acc * 2 + x, 1)) > 0
    assert patience.result(flow.count()) == 100
    assert patience.result(rstreams.empty().collect()) == []
    assert patience.result(rstreams.empty().count()) == 0


def test_sinks_request_unbounded_once() -> None:
    """Rule 3.17: a sink asks for everything in one request."""
    for sink in (collect, count, lambda p: reduce(p, operator.add, 0)):
        publisher = ManualPublisher()
        result = sink(publisher)
        assert publisher.requests == [rstreams.UNBOUNDED]
        publisher.emit(1, 2, 3)
        publisher.complete()
        assert patience.result(result) in ([1, 2, 3], 3, 6)


@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
def test_sinks_on_a_threaded_source_block_until_done() -> None:
    """``result()`` waits for a publisher signalling from another thread."""
    assert patience.result(collect(threaded_range(1000))) == list(range(1000))
    assert patience.result(reduce(threaded_range(1000), operator.add, 0)) == sum(range(1000))
    assert patience.result(count(threaded_range(10))) == 10


@pytest.mark.asyncio
@pytest.mark.timeout(10)
async def test_sink_result_is_awaitable() -> None:
    """``await flow.collect()`` works for sync sources and for sources on other threads."""
    assert await rstreams.range(0, 5).collect() == [0, 1, 2, 3, 4]
    assert await reduce(threaded_range(1000), operator.add, 0) == sum(range(1000))
    result = rstreams.range(0, 3).count()
    assert await result == 3 and await result == 3  # awaitable more than once


def test_source_error_fails_the_result() -> None:
    """The stream's on_error becomes the result's exception."""
    boom = RuntimeError("boom")
    failing: rstreams.Flow[int] = rstreams.error(boom)
    result = failing.collect()
    with pytest.raises(RuntimeError, match="boom"):
        patience.result(result)
    assert patience.exception(result) is boom and result.done()


@pytest.mark.asyncio
async def test_source_error_raises_from_await() -> None:
    """Awaiting a failed sink raises the stream's error."""
    with pytest.raises(ZeroDivisionError):
        await rstreams.range(0, 5).map(lambda x: 1 // (x - 3)).collect()


def test_user_function_raising_cancels_and_fails() -> None:
    """A raising reduce fn / for_each callback cancels upstream; the result carries the error."""
    publisher = ManualPublisher()

    def bad(acc: int, x: int) -> int:
        if x == 2:
            raise ValueError("bad element 2")
        return acc + x

    result = reduce(publisher, bad, 0)
    publisher.emit(1, 2, 3)  # 3 arrives late, after the cancel: ignored (rule 3.12)
    publisher.complete()  # also late: ignored
    assert publisher.cancelled.is_set()
    with pytest.raises(ValueError, match="bad element 2"):
        patience.result(result)

    publisher = ManualPublisher()
    seen: list[int] = []

    def callback(x: int) -> None:
        seen.append(x)
        if x == 1:
            raise KeyError(x)

    result2 = for_each(publisher, callback)
    publisher.emit(0, 1, 2)
    assert publisher.cancelled.is_set() and seen == [0, 1]
    assert isinstance(patience.exception(result2), KeyError)


def test_add_specialisation_fails_like_the_general_reduce() -> None:
    """reduce(operator.add) on mixed types raises TypeError through the result."""
    result = rstreams.just(1, "a").reduce(operator.add, 0)
    with pytest.raises(TypeError):
        patience.result(result)
    assert patience.result(rstreams.just("a", "b").reduce(operator.add, "")) == "ab"


def test_cancel_cancels_the_subscription() -> None:
    """SinkResult.cancel() cancels upstream; result() raises CancelledError; idempotent."""
    publisher = ManualPublisher()
    result = collect(publisher)
    assert result.cancel() and publisher.cancelled.is_set()
    assert result.cancel() in (True, False)
    publisher.emit(1)  # late: ignored
    publisher.complete()
    with pytest.raises(concurrent.futures.CancelledError):
        patience.result(result)
    assert "cancelled" in repr(result)
    done = rstreams.range(0, 2).collect()
    assert not done.cancel() and patience.result(done) == [0, 1]


@pytest.mark.asyncio
async def test_cancelling_the_awaiting_task_cancels_the_subscription() -> None:
    """A cancelled ``await flow.collect()`` does not leave the source running."""
    publisher = ManualPublisher()
    awaiting = asyncio.Event()

    async def consume() -> Any:
        result = collect(publisher)
        awaiting.set()  # the await below runs in this same step of the task
        return await result

    task = asyncio.ensure_future(consume())
    await within(awaiting.wait())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert patience.wait(publisher.cancelled)


def test_for_each_window_keeps_demand_bounded() -> None:
    """for_each(window=4): requests 4, then 2 after every 2 elements; never more outstanding."""
    publisher = ManualPublisher()
    seen: list[int] = []
    result = for_each(publisher, seen.append, window=4)
    assert publisher.requests == [4]
    publisher.emit(0)
    assert publisher.requests == [4]
    publisher.emit(1)
    assert publisher.requests == [4, 2]
    publisher.emit(2, 3, 4, 5)
    assert publisher.requests == [4, 2, 2, 2] and sum(publisher.requests) - 6 <= 4
    publisher.complete()
    assert patience.result(result) is None and seen == [0, 1, 2, 3, 4, 5]
    assert patience.result(rstreams.range(0, 1000).for_each(lambda x: None, window=1)) is None


def test_second_subscription_is_cancelled() -> None:
    """Rule 2.5: a sink already subscribed cancels any further subscription."""
    publisher = ManualPublisher()
    collect(publisher)
    sink = publisher.subscriber
    assert sink is not None
    other = ManualPublisher()
    other.subscribe(sink)
    assert other.cancelled.is_set() and not publisher.cancelled.is_set()


def test_none_arguments_raise_type_error() -> None:
    """Rule 2.13: on_subscribe/on_next/on_error with None raise TypeError synchronously."""
    publisher = ManualPublisher()
    collect(publisher)
    sink = publisher.subscriber
    assert sink is not None
    with pytest.raises(TypeError, match=r"2\.13"):
        sink.on_next(None)
    with pytest.raises(TypeError, match=r"2\.13"):
        sink.on_error(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"2\.13"):
        sink.on_subscribe(None)  # type: ignore[arg-type]


def test_bad_arguments_are_refused_when_built() -> None:
    """You called me wrong: TypeError/ValueError at once, naming the argument."""
    with pytest.raises(TypeError, match="callable"):
        rstreams.range(0, 1).reduce(3, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="callable"):
        rstreams.range(0, 1).for_each(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"3\.9"):
        rstreams.range(0, 1).for_each(print, window=0)
    with pytest.raises(TypeError, match="Publisher"):
        collect(None)  # type: ignore[arg-type]


def test_result_timeout() -> None:
    """result(timeout) raises TimeoutError and leaves the subscription running."""
    publisher = ManualPublisher()
    result = collect(publisher)
    with pytest.raises(TimeoutError):
        result.result(0.01)
    assert not publisher.cancelled.is_set() and "pending" in repr(result)
    publisher.complete()
    assert patience.result(result) == []


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "make",
    [
        _sinks._Collect,
        _sinks._Count,
        lambda: _sinks._Sum(operator.add, 0),
        lambda: _sinks._Reduce(max, 0),
        lambda: _sinks._ForEach(lambda x: None, None),
        lambda: _sinks._ForEach(lambda x: None, 4),
    ],
    ids=["collect", "count", "sum", "reduce", "for_each", "for_each_window"],
)
def test_sink_subscribers_pass_the_tck(make: Callable[[], Subscriber[Any]]) -> None:
    """The TCK's blackbox Subscriber verification passes for every sink subscriber."""
    report = verify_subscriber_blackbox(make)
    assert report.ok, str(report)


@pytest.mark.asyncio
async def test_awaiting_a_finished_or_cancelled_result() -> None:
    """A finished result is returned without a loop round trip; a cancelled one raises."""
    publisher = ManualPublisher()
    result = collect(publisher)
    result.cancel()
    with pytest.raises(asyncio.CancelledError):
        await result
    failed: rstreams.Flow[int] = rstreams.error(KeyError("k"))
    with pytest.raises(KeyError):
        await failed.count()


def test_reduce_with_add_never_mutates_the_callers_initial() -> None:
    """``reduce(operator.add, init)`` builds new accumulators: ``init`` is left as it was."""
    initial = [0]
    for flow in (rstreams.just([1], [2]), rstreams.from_publisher(rstreams.just([1], [2]))):
        assert patience.result(flow.reduce(operator.add, initial)) == [0, 1, 2]
        assert initial == [0]


@pytest.mark.parametrize("fn", [operator.add, lambda a, b: a + b])
def test_reduce_with_add_refuses_what_operator_add_refuses(fn: Callable[[Any, Any], Any]) -> None:
    """``[0] + (1,)`` is a TypeError (``+=`` would accept it): the result fails with it."""
    result = rstreams.just((1,)).reduce(fn, [0])
    with pytest.raises(TypeError):
        patience.result(result)


def test_result_on_the_running_loops_thread_raises_at_once() -> None:
    """Blocking inside the loop would stop the stream's own source: BlockingInLoopError (a
    RuntimeError) at once, whose message says to await."""
    never: rstreams.PushSource[int] = rstreams.PushSource(overflow=rstreams.OverflowStrategy.DROP)

    async def main() -> BlockingInLoopError | None:
        pending = never.collect()
        try:
            patience.result(pending)
        except BlockingInLoopError as error:
            return error
        finally:
            pending.cancel()
        return None

    error = asyncio.run(main())
    assert isinstance(error, RuntimeError)
    assert str(error).startswith(
        "SinkResult.result() was called on the thread of a running asyncio event loop"
    )
    assert "`await flow.collect()`" in str(error)


def test_result_on_the_loops_thread_returns_a_value_that_is_already_there() -> None:
    """A synchronous source has finished before ``result()``: nothing would block, so it returns."""

    async def main() -> list[int]:
        return rstreams.range(0, 3).collect().result()

    assert asyncio.run(main()) == [0, 1, 2]


def test_batched_and_per_element_delivery_give_the_same_reduce() -> None:
    """The internal batch signal changes nothing visible: same fold, same order."""
    items = [[i] for i in range(300)]
    empty: list[int] = []
    batched = patience.result(rstreams.from_iterable(items).reduce(operator.add, empty))
    per_element = patience.result(rstreams.from_publisher(ManualFlow(items)).reduce(operator.add, empty))
    assert batched == per_element == list(range(300))


class ManualFlow(rstreams.Flow[Any]):
    """A Publisher from outside rstreams' batch signal: per-element ``on_next`` only."""

    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        rstreams.from_iterable(self.items).subscribe(PassThrough(subscriber))  # it has no on_next_many


def test_result_timeout_says_the_subscription_runs_on() -> None:
    result = collect(ManualPublisher())
    with pytest.raises(TimeoutError, match=r"did not end within timeout=0\.01 s; its subscription is still"):
        result.result(0.01)
    result.cancel()
