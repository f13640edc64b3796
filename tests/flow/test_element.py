"""first, last, element_at: as Flows and as sinks (rules 1.1, 1.4, 2.13, 3.x)."""

from __future__ import annotations

import asyncio
import math
from typing import Any

import pytest

import rstreams
from rstreams.errors import InvalidDemandError, ReactiveStreamsError
from rstreams.flow._element import NoSuchElementError
from testkit import patience
from testkit.publishers import ManualPublisher
from testkit.recording import WAIT, RecordingSubscriber


def test_as_sinks_result_and_await() -> None:
    """``.result()`` blocks for the element; ``await`` gives the same."""
    flow = rstreams.range(0, 10)
    assert (flow.first().result(WAIT), flow.last().result(WAIT), flow.element_at(3).result(WAIT)) == (0, 9, 3)

    async def main() -> tuple[int, int]:
        return await flow.first(), await flow.element_at(7)

    assert asyncio.run(main()) == (0, 7)


def test_as_flows_they_chain() -> None:
    """Each is a Flow of one element: operators and sinks go on from it."""
    assert patience.result(rstreams.range(0, 10).last().map(str).collect()) == ["9"]


def test_element_at_asks_for_exactly_index_plus_one_then_cancels() -> None:
    """Rule 1.1 from upstream: i + 1 requested, nothing before the downstream asks."""
    source: ManualPublisher[str] = ManualPublisher()
    s: RecordingSubscriber[str] = RecordingSubscriber()
    source.element_at(2).subscribe(s)
    assert source.requests == []
    s.request(5)
    s.request(5)
    assert source.requests == [3]
    source.emit("a", "b", "c")
    assert s.items == ["c"] and s.completed and source.cancelled == 1


def test_last_asks_for_everything_only_once_requested() -> None:
    """last() needs the whole stream: UNBOUNDED (3.17), after the first downstream request."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.last().subscribe(s)
    assert source.requests == []
    s.request(1)
    source.emit(1, 2, 3)
    assert s.items == []
    source.complete()
    assert source.requests == [rstreams.UNBOUNDED] and s.items == [3] and s.completed


@pytest.mark.parametrize("build", [lambda f: f.first(), lambda f: f.last(), lambda f: f.element_at(4)])
def test_too_short_a_stream_fails_without_demand(build: Any) -> None:
    """NoSuchElementError (a LookupError under ReactiveStreamsError); it needs no demand (1.4)."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    build(rstreams.empty()).subscribe(s)
    assert isinstance(s.error, NoSuchElementError)
    assert issubclass(NoSuchElementError, LookupError) and issubclass(
        NoSuchElementError, ReactiveStreamsError
    )
    assert "default=" in str(s.error)


def test_default_waits_for_demand_then_completes() -> None:
    """An empty stream with default=: the default is an element, so it waits for request."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.empty().first(default=42).subscribe(s)
    assert s.signals == ["on_subscribe"]
    s.request(1)
    assert s.items == [42] and s.completed
    assert rstreams.range(0, 2).element_at(5, default=-1).result(WAIT) == -1


def test_illegal_request_after_the_upstream_ended_is_still_signalled() -> None:
    """Rule 3.9 holds while the default waits for demand."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.empty().last(default=1).subscribe(s)
    s.request(0)
    assert isinstance(s.error, InvalidDemandError)


def test_errors_pass_through() -> None:
    """The upstream's error goes on, whatever was seen before."""
    failure = RuntimeError("upstream failed")
    with pytest.raises(RuntimeError, match="upstream failed"):
        rstreams.error(failure).last().result(WAIT)


def test_last_drops_its_element_at_an_upstream_error() -> None:
    """Nothing after the error (rule 1.7): a request that follows it does not bring out the
    element ``last()`` held, nor a completion."""
    source: ManualPublisher[int] = ManualPublisher()
    s = RecordingSubscriber[int](initial=1)
    source.last().subscribe(s)
    source.emit(1, 2)
    failure = RuntimeError("upstream failed")
    source.fail(failure)
    s.request(10)
    assert s.signals == ["on_subscribe", "on_error"] and s.error is failure


def test_bad_index_and_default_are_refused_when_built() -> None:
    """element_at needs an int >= 0, and no default may be None (rule 2.13), checked at once."""
    with pytest.raises(TypeError, match=r"2\.13"):
        rstreams.range(0, 1).first(default=None)
    with pytest.raises(ValueError, match="element_at"):
        rstreams.range(0, 1).element_at(-1)
    with pytest.raises(TypeError, match="element_at"):
        rstreams.range(0, 1).element_at("1")  # type: ignore[arg-type]


@pytest.mark.parametrize("name", ["first", "last", "element_at"])
def test_passes_the_publisher_tck(name: str) -> None:
    """PublisherVerification with publishers of at most one element (max_elements=1)."""
    from rstreams.tck import verify_publisher

    def build(flow: rstreams.Flow[int]) -> rstreams.Flow[int]:
        return flow.first() if name == "first" else flow.last() if name == "last" else flow.element_at(2)

    def make(n: int) -> rstreams.Flow[int]:  # the cases of 0 elements get an empty stream
        return build(rstreams.range(0, 3)) if n == 1 else rstreams.empty().first(default=0).take(n)

    report = verify_publisher(
        make, create_failed_publisher=lambda: build(rstreams.error(RuntimeError("failed"))), max_elements=1
    )
    assert report.ok, str(report)


@pytest.mark.parametrize("batched", [True, False])
def test_indexes_across_batches(batched: bool) -> None:
    """element_at and last find the right element whether it arrives in a batch or alone."""
    source: rstreams.Flow[int] = (
        rstreams.range(0, 1000) if batched else rstreams.from_iterable(iter(range(1000)))
    )
    assert source.element_at(517).result(WAIT) == 517
    source = rstreams.range(0, 1000) if batched else rstreams.from_iterable(iter(range(1000)))
    assert source.last().result(WAIT) == 999


@pytest.mark.parametrize("name", ["first", "last", "element_at"])
def test_result_that_times_out_cancels_the_subscription_nobody_else_holds(name: str) -> None:
    """``flow.first().result(t)`` subscribes itself: when the wait ends without the element,
    the subscription it made is cancelled (the caller has no handle to do it), and the
    ``TimeoutError`` says what timed out."""
    publisher: ManualPublisher[int] = ManualPublisher()
    make = {"first": publisher.first, "last": publisher.last, "element_at": lambda: publisher.element_at(0)}
    with pytest.raises(TimeoutError, match=r"no element within timeout=0\.01 s; its subscription was cancel"):
        make[name]().result(0.01)
    assert publisher.cancelled == 1


def test_result_refused_on_the_loops_thread_cancels_what_it_subscribed() -> None:
    publisher: ManualPublisher[int] = ManualPublisher()

    async def main() -> None:
        publisher.first().result(1)

    with pytest.raises(RuntimeError, match=r"SinkResult\.result"):
        asyncio.run(main())
    assert publisher.cancelled == 1


@pytest.mark.parametrize(
    ("timeout", "kind", "message"),
    [
        (-1, ValueError, "first().result(timeout=) needs a number of seconds >= 0 or None, got -1"),
        (math.nan, ValueError, "first().result(timeout=) needs a number of seconds >= 0 or None, got nan"),
        ("1", TypeError, "first().result(timeout=) needs a number of seconds >= 0 or None, got '1'"),
        (True, TypeError, "first().result(timeout=) needs a number of seconds >= 0 or None, got True"),
    ],
)
def test_a_bad_result_timeout_is_refused_before_subscribing(
    timeout: Any, kind: type[Exception], message: str
) -> None:
    publisher: ManualPublisher[int] = ManualPublisher()
    with pytest.raises(kind) as caught:
        publisher.first().result(timeout)
    assert str(caught.value) == message
    assert publisher.subscriber is None
    pending = publisher.collect()
    with pytest.raises(kind, match=r"^SinkResult\.result"):
        pending.result(timeout)
    pending.cancel()
