"""limit_rate, on_backpressure_buffer/_drop/_latest, subscribe_on, publish_on (rules 1.1, 2.7, 2.13, 3.9)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import InvalidDemandError, LoopClosedError, OverflowStrategyError
from testkit import patience
from testkit.publishers import ManualPublisher, drive
from testkit.recording import RecordingSubscriber
from testkit.shapes import SHAPES, loop_thread, patient_env, upstreams

Strategy = rstreams.OverflowStrategy


def _subscribe(flow: rstreams.Flow[Any], initial: int = 0) -> RecordingSubscriber[Any]:
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=initial)
    flow.subscribe(s)
    return s


RATE_OPERATORS: list[Callable[[rstreams.Flow[int]], rstreams.Flow[int]]] = [
    lambda f: f.limit_rate(4),
    lambda f: f.on_backpressure_buffer(4),
    lambda f: f.on_backpressure_drop(),
    lambda f: f.on_backpressure_latest(),
]


def test_limit_rate_caps_what_the_upstream_owes_and_replenishes_at_low() -> None:
    """Unbounded demand becomes request(high), then request(low) each time low arrived."""
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.limit_rate(8, low=4), initial=rstreams.UNBOUNDED)
    assert source.requests == [8]
    source.emit(1, 2, 3)
    assert source.requests == [8]
    source.emit(4)
    assert source.requests == [8, 4] and source.outstanding == 8
    assert s.items == [1, 2, 3, 4]


def test_limit_rate_never_asks_more_than_the_downstream_wants() -> None:
    """Small requests pass as they are; nothing is asked before the downstream asks."""
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.limit_rate(100))
    assert source.requests == []
    s.request(3)
    assert source.requests == [3]
    s.request(200)  # at most high owed: 97 more
    assert source.requests == [3, 97]
    source.emit(*range(74))
    assert source.outstanding == 26  # low (75) has not arrived yet
    source.emit(74)
    assert source.requests == [3, 97, 75] and source.outstanding == 100


@given(requests=st.lists(st.integers(1, 40), max_size=10), high=st.integers(1, 16))
def test_limit_rate_changes_no_element(requests: list[int], high: int) -> None:
    """Whatever the requests and the bound: the same elements, never more than requested."""
    assert drive(rstreams.range(0, 50).limit_rate(high), requests).items == list(range(50))


def test_on_backpressure_buffer_holds_n_then_fails_after_them() -> None:
    """ERROR (default): past n the stream fails after the held elements; upstream cancelled."""
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.on_backpressure_buffer(2))
    assert source.requests == [rstreams.UNBOUNDED]
    source.emit(1, 2)
    source.emit(3)
    assert source.cancelled == 1 and s.items == []
    s.request(5)
    assert s.items == [1, 2] and isinstance(s.error, OverflowStrategyError)


def test_on_backpressure_buffer_drop_and_latest() -> None:
    """DROP drops the newest past n; LATEST drops the oldest."""
    for overflow, expected in ((Strategy.DROP, [1, 2]), (Strategy.LATEST, [3, 4])):
        source: ManualPublisher[int] = ManualPublisher()
        s = _subscribe(source.on_backpressure_buffer(2, overflow=overflow))
        source.emit(1, 2, 3, 4)
        s.request(10)
        source.complete()
        assert s.items == expected and s.completed and source.cancelled == 0


def test_on_backpressure_drop_hands_each_drop_to_on_drop() -> None:
    """Elements without demand are dropped and passed to on_drop; demanded ones go on."""
    dropped: list[int] = []
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.on_backpressure_drop(dropped.append))
    source.emit(1)
    s.request(1)
    source.emit(2, 3)
    assert s.items == [2] and dropped == [1, 3]


def test_on_backpressure_drop_hook_raising_ends_the_stream() -> None:
    """Rule 2.13: on_drop's error cancels upstream and goes downstream."""

    def boom(item: int) -> None:
        raise ValueError(f"on_drop failed at {item}")

    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.on_backpressure_drop(boom))
    source.emit(1)
    assert isinstance(s.error, ValueError) and source.cancelled == 1
    source.emit(2, force=True)
    assert s.signals.count("on_error") == 1


def test_on_backpressure_latest_keeps_only_the_newest() -> None:
    """One element held, the newest; demand then delivers it."""
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.on_backpressure_latest())
    source.emit(1, 2, 3)
    s.request(2)
    source.emit(4)
    assert s.items == [3, 4]


@pytest.mark.parametrize("ending", ["complete", "error"])
def test_on_backpressure_latest_sends_what_it_holds_at_completion_not_at_an_error(ending: str) -> None:
    """As reactor's and RxJava's onBackpressureLatest: the element nobody asked for yet goes
    out once asked after a completion; an error goes on at once, without demand, and drops it."""
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.on_backpressure_latest())
    source.emit(1, 2)
    if ending == "complete":
        source.complete()
        assert s.signals == ["on_subscribe"]
        s.request(5)
        assert s.items == [2] and s.completed
    else:
        boom = RuntimeError("upstream")
        source.fail(boom)
        assert s.signals == ["on_subscribe", "on_error"] and s.error is boom
        s.request(5)
        assert s.items == []


def test_cancel_cancels_the_upstream() -> None:
    """For every operator here, cancel reaches the upstream once."""
    for build in RATE_OPERATORS:
        source: ManualPublisher[int] = ManualPublisher()
        s = _subscribe(build(source), initial=1)
        s.cancel()
        s.cancel()
        assert source.cancelled == 1


def test_illegal_request_is_signalled() -> None:
    """Rule 3.9: request(0) ends in on_error(InvalidDemandError)."""
    for build in RATE_OPERATORS:
        source: ManualPublisher[int] = ManualPublisher()
        s = _subscribe(build(source))
        s.request(0)
        s.await_done()
        assert isinstance(s.error, InvalidDemandError)


def test_subscribe_on_subscribes_on_the_executors_thread() -> None:
    """The source's subscribe runs on the executor's thread; elements follow as usual."""
    seen: list[str] = []

    class Where(rstreams.Flow[int]):
        def subscribe(self, subscriber: Any) -> None:
            seen.append(threading.current_thread().name)
            rstreams.range(0, 3).subscribe(subscriber)

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="sub-on") as pool:
        assert patience.result(Where().subscribe_on(pool).collect()) == [0, 1, 2]
    assert seen[0].startswith("sub-on")


def test_subscribe_on_a_shut_down_executor_signals_an_error() -> None:
    """Rule 1.9 then 1.4: on_subscribe, then on_error(LoopClosedError) naming subscribe_on (still
    a RuntimeError), the executor's own error as its cause; so for a closed loop."""
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.shutdown()
    loop = asyncio.new_event_loop()
    loop.close()
    for target in (pool, loop):
        s = _subscribe(rstreams.range(0, 3).subscribe_on(target))
        assert s.signals[0] == "on_subscribe" and isinstance(s.error, LoopClosedError)
        assert isinstance(s.error.__cause__, RuntimeError)
        assert str(s.error).startswith(f"subscribe_on: cannot use {target!r}, it is closed or shut down: ")


def test_publish_on_is_observe_on() -> None:
    """publish_on delivers on the target, like observe_on."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        assert patience.result(rstreams.range(0, 5).publish_on(pool, buffer_size=2).collect()) == list(
            range(5)
        )


def test_bad_arguments_are_refused_when_built() -> None:
    """Bad bounds, strategies, hooks and targets fail at once, naming the operator."""
    flow = rstreams.range(0, 1)
    calls: list[tuple[Callable[[], object], type[Exception], str]] = [
        (lambda: flow.limit_rate(0), ValueError, "limit_rate: high"),
        (lambda: flow.limit_rate(4, low=5), ValueError, "limit_rate: low="),
        (lambda: flow.on_backpressure_buffer(0), ValueError, "on_backpressure_buffer: n"),
        (lambda: flow.on_backpressure_buffer(2, overflow="drop"), TypeError, "OverflowStrategy"),  # type: ignore[arg-type]
        (lambda: flow.on_backpressure_drop(3), TypeError, r"on_backpressure_drop\(on_drop=\)"),  # type: ignore[arg-type]
        (lambda: flow.subscribe_on(3), TypeError, r"subscribe_on\(target\)"),  # type: ignore[arg-type]
    ]
    for call, kind, message in calls:
        with pytest.raises(kind, match=message):
            call()


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    with loop_thread("rate-loop") as event_loop:
        yield event_loop


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ["limit_rate", "on_backpressure_buffer", "subscribe_on"])
def test_passes_the_publisher_tck_over_each_upstream_shape(
    name: str, shape: str, loop: asyncio.AbstractEventLoop
) -> None:
    """Rules 1.x-3.x whatever thread or loop the upstream signals from."""
    from rstreams.tck import verify_publisher

    shapes = upstreams(loop)
    ops: dict[str, Callable[[rstreams.Flow[int]], rstreams.Flow[int]]] = {
        "limit_rate": lambda f: f.limit_rate(4, low=2),
        # a source that waits for demand never overflows; the bound covers the TCK's n
        "on_backpressure_buffer": lambda f: f.on_backpressure_buffer(1024),
        "subscribe_on": lambda f: f.subscribe_on(loop),
    }
    op, up = ops[name], shapes[shape]
    report = verify_publisher(
        lambda n: op(up(n)),
        create_failed_publisher=lambda: op(rstreams.error(RuntimeError("failed"))),
        max_elements=1000,
        env=patient_env(),
    )
    assert report.ok, str(report)
