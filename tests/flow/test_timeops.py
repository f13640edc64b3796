"""debounce, throttle_first, throttle_latest, sample, delay, timeout: on the virtual clock."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import rstreams
from rstreams.errors import InvalidDemandError
from rstreams.flow._timeops import StreamTimeoutError
from testkit import patience
from testkit.clock import Stepped, clock_and_loop
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber
from testkit.shapes import SHAPES, loop_thread, patient_env, upstreams


def _subscribe(flow: rstreams.Flow[Any], initial: int = 0) -> RecordingSubscriber[Any]:
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=initial)
    flow.subscribe(s)
    return s


def test_debounce_emits_after_quiet_and_re_requests_what_it_replaces() -> None:
    """A newer element replaces the pending one (one more is asked upstream); quiet time emits."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.debounce(1.0, loop=loop))
    assert source.requests == []
    s.request(3)
    assert source.requests == [3]
    source.emit(1)
    clock.advance(0.5)
    source.emit(2)
    assert source.requests == [3, 1]
    clock.advance(0.9)
    assert s.items == []
    clock.advance(0.2)
    assert s.items == [2]
    source.emit(3)
    source.complete()  # the pending element goes on at completion
    clock.advance(0)  # calls handed to the loop's thread run
    assert s.items == [2, 3] and s.completed and clock.pending == 0


def test_throttle_first_passes_the_first_of_each_window() -> None:
    """Elements inside the window are dropped and asked for again."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.throttle_first(1.0, loop=loop), initial=2)
    source.emit(1)
    clock.advance(0.5)
    source.emit(2)
    assert s.items == [1] and source.requests == [2, 1]
    clock.advance(0.5)
    source.emit(3)
    assert s.items == [1, 3]


def test_throttle_latest_sends_the_latest_at_the_end_of_each_window() -> None:
    """First at once; at the window's end the latest held one; a quiet window closes."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.throttle_latest(1.0, loop=loop), initial=10)
    source.emit(1)
    assert s.items == [1]
    clock.advance(0.3)
    source.emit(2, 3)
    clock.advance(0.69)
    assert s.items == [1]
    clock.advance(0.01)
    assert s.items == [1, 3]
    clock.advance(1.0)  # a window with nothing in it closes
    source.emit(4)
    assert s.items == [1, 3, 4]


def test_sample_emits_the_latest_per_tick_and_waits_for_demand() -> None:
    """Each tick sends the latest element since the previous one; none without demand."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.sample(1.0, loop=loop))
    s.request(2)
    source.emit(1, 2)
    clock.advance(1.0)
    assert s.items == [2] and source.requests == [2, 1]
    clock.advance(1.0)  # nothing new: no element
    assert s.items == [2]
    source.emit(3)
    source.complete()
    clock.advance(0)
    assert s.items == [2, 3] and s.completed and clock.pending == 0


def test_delay_shifts_every_element_and_completes_after_the_last() -> None:
    """Each element comes ``seconds`` after it arrived; completion waits for the last."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.delay(1.0, loop=loop), initial=5)
    source.emit(1)
    clock.advance(0.5)
    source.emit(2)
    source.complete()
    clock.advance(0.5)
    assert s.items == [1] and not s.done
    clock.advance(0.5)
    assert s.items == [1, 2] and s.completed


def test_delay_holds_at_most_max_pending() -> None:
    """Under unbounded demand, upstream is asked for max_pending, topped up as they go out."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.delay(1.0, max_pending=4, loop=loop), initial=rstreams.UNBOUNDED)
    assert source.requests == [4]
    source.emit(1, 2, 3, 4)
    assert source.outstanding == 0
    clock.advance(1.0)
    assert s.items == [1, 2, 3, 4] and source.requests == [4, 3]  # topped up at three quarters


def test_buffer_time_cuts_at_max_size_or_at_a_tick_whichever_first() -> None:
    """Count-or-time: a full list goes at once; a tick cuts a partial one when a list is wanted."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.buffer_time(1.0, max_size=3, loop=loop))
    assert source.requests == []
    s.request(2)
    assert source.requests == [6]  # max_size elements per list asked for
    source.emit(1, 2, 3)
    assert s.items == [[1, 2, 3]]
    source.emit(4)
    clock.advance(1.0)
    assert s.items == [[1, 2, 3], [4]] and source.outstanding == 2
    source.emit(5, 6)  # no list wanted: the ticks let it grow, none is cut
    clock.advance(3.0)
    assert len(s.items) == 2
    s.request(1)
    source.complete()  # the partial list goes at completion
    assert s.items == [[1, 2, 3], [4], [5, 6]] and s.completed


@given(st.lists(st.integers(), max_size=40), st.integers(1, 5))
def test_buffer_time_then_flatten_is_the_identity(items: list[int], size: int) -> None:
    """The law of buffering: concatenating the lists gives the stream back."""
    _, loop = clock_and_loop()
    lists = patience.result(
        rstreams.from_iterable(items).buffer_time(1.0, max_size=size, loop=loop).collect()
    )
    assert [x for batch in lists for x in batch] == items and all(0 < len(b) <= size for b in lists)


def test_timeout_counts_only_while_the_upstream_owes_elements() -> None:
    """No demand, no timeout; then a silent upstream fails the stream and is cancelled."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.timeout(1.0, loop=loop))
    clock.advance(100)
    assert not s.done
    s.request(2)
    clock.advance(0.8)
    source.emit(1)
    clock.advance(0.8)  # the previous element restarted the clock
    assert s.items == [1] and not s.done
    clock.advance(0.2)
    assert isinstance(s.error, StreamTimeoutError) and isinstance(s.error, TimeoutError)
    assert s.error.seconds == 1.0 and source.cancelled == 1


def test_timeout_total_and_fallback_with_demand_carried_over() -> None:
    """``total`` limits the whole stream; ``fallback`` continues, asked for what is left."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    fallback: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.timeout(None, total=5.0, fallback=fallback, loop=loop), initial=3)
    source.emit(1)
    clock.advance(5.0)
    assert source.cancelled == 1 and fallback.requests == [2]
    fallback.emit(8, 9)
    fallback.complete()
    assert s.items == [1, 8, 9] and s.completed


def test_timeout_fallback_is_not_used_for_other_errors() -> None:
    """An upstream error is not a timeout: it goes on."""
    _, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.timeout(1.0, fallback=rstreams.just(0), loop=loop), initial=1)
    source.fail(KeyError("k"))
    assert isinstance(s.error, KeyError)


def test_cancel_stops_the_timer_and_the_upstream() -> None:
    """Rule 3.13: after cancel no timer stays armed on the loop."""
    timed: list[Callable[[rstreams.Flow[int], asyncio.AbstractEventLoop], rstreams.Flow[int]]] = [
        lambda f, loop: f.debounce(1.0, loop=loop),
        lambda f, loop: f.sample(1.0, loop=loop),
        lambda f, loop: f.delay(1.0, loop=loop),
        lambda f, loop: f.timeout(1.0, total=9.0, loop=loop),
    ]
    for build in timed:
        clock, loop = clock_and_loop()
        source: ManualPublisher[int] = ManualPublisher()
        s = _subscribe(build(source, loop), initial=1)
        source.emit(1)
        s.cancel()
        clock.advance(0)  # a cancel from off the loop's thread is handed to the loop
        assert clock.pending == 0 and source.cancelled == 1


def test_errors_go_on_at_once_dropping_what_is_held() -> None:
    """An upstream error is not delayed behind held elements."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.delay(1.0, loop=loop), initial=2)
    source.emit(1)
    source.fail(ValueError("up"))
    assert isinstance(s.error, ValueError) and s.items == []
    clock.advance(2)
    assert s.items == []


def test_illegal_request_is_signalled() -> None:
    """Rule 3.9 for each clocked operator."""
    for name in (
        "debounce",
        "throttle_first",
        "throttle_latest",
        "sample",
        "delay",
        "timeout",
        "buffer_time",
    ):
        _, loop = clock_and_loop()
        s = _subscribe(getattr(rstreams.range(0, 3), name)(1.0, loop=loop))
        s.request(0)
        s.await_done()
        assert isinstance(s.error, InvalidDemandError), name


def test_without_a_loop_the_subscriber_gets_an_error() -> None:
    """Subscribed outside a running loop and without loop=: on_subscribe, then on_error."""
    s = _subscribe(rstreams.range(0, 3).debounce(1.0))
    assert isinstance(s.error, RuntimeError) and "debounce" in str(s.error)


def test_bad_arguments_are_refused_when_built() -> None:
    """Negative or non-numeric seconds, zero periods, bad fallbacks fail at once, naming the operator."""
    flow = rstreams.range(0, 1)
    calls: list[tuple[Callable[[], object], type[Exception], str]] = [
        (lambda: flow.debounce(-1), ValueError, r"debounce\(seconds\)"),
        (lambda: flow.throttle_first("1"), TypeError, r"throttle_first\(seconds\)"),  # type: ignore[arg-type]
        (lambda: flow.throttle_latest(0), ValueError, r"throttle_latest\(seconds\)"),
        (lambda: flow.sample(0), ValueError, r"sample\(period\)"),
        (lambda: flow.buffer_time(1, max_size=0), ValueError, "buffer_time: max_size"),
        (lambda: flow.delay(1, max_pending=0), ValueError, "delay: max_pending"),
        (lambda: flow.timeout(None), ValueError, "timeout"),
        (lambda: flow.timeout(1, fallback=3), TypeError, r"timeout\(fallback=\)"),  # type: ignore[arg-type]
        (lambda: flow.timeout(1, total=float("nan")), ValueError, r"timeout\(total=\)"),
    ]
    for call, kind, message in calls:
        with pytest.raises(kind, match=message):
            call()


@given(gaps=st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=1, max_size=20))
def test_debounce_keeps_exactly_the_elements_followed_by_a_quiet_gap(gaps: list[float]) -> None:
    """The law of debounce: element i survives iff the gap after it is >= the quiet time (or it is last)."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.debounce(1.0, loop=loop), initial=rstreams.UNBOUNDED)
    for i, gap in enumerate(gaps):
        source.emit(i)
        clock.advance(gap)
    source.complete()
    expected = [i for i, gap in enumerate(gaps) if gap >= 1.0 or i == len(gaps) - 1]
    assert s.items == expected and s.completed


@given(gaps=st.lists(st.sampled_from([0.25, 0.5, 1.0]), min_size=1, max_size=20))
def test_throttle_first_law(gaps: list[float]) -> None:
    """An element passes iff at least the window has passed since the last one that passed."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    s = _subscribe(source.throttle_first(1.0, loop=loop), initial=rstreams.UNBOUNDED)
    expected, opened, now = [], float("-inf"), 0.0
    for i, gap in enumerate(gaps):
        source.emit(i)
        if now >= opened + 1.0:
            expected.append(i)
            opened = now
        clock.advance(gap)
        now += gap
    assert s.items == expected


# -- the TCK ----------------------------------------------------------------------------


def test_buffer_time_passes_the_publisher_tck() -> None:
    """With max_size=1 every element is a list of its own: n in, n lists out."""
    from rstreams.tck import verify_publisher

    def make(n: int) -> rstreams.Flow[list[int]]:
        clock, loop = clock_and_loop()
        return rstreams.from_publisher(Stepped(n, clock, 1.0)).buffer_time(1.0, max_size=1, loop=loop)

    report = verify_publisher(
        make,
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).buffer_time(
            1.0, loop=clock_and_loop()[1]
        ),
        max_elements=1000,
    )
    assert report.ok, str(report)


@pytest.mark.parametrize("name", ["debounce", "throttle_latest", "sample"])
def test_clock_filters_pass_the_publisher_tck(name: str) -> None:
    """With the clock moved a whole window after each element, every element survives: n in, n out."""
    from rstreams.tck import verify_publisher

    def make(n: int) -> rstreams.Flow[int]:
        clock, loop = clock_and_loop()
        return getattr(rstreams.from_publisher(Stepped(n, clock, 1.0)), name)(1.0, loop=loop)  # type: ignore[no-any-return]

    def failed() -> rstreams.Flow[int]:
        _, loop = clock_and_loop()
        return getattr(rstreams.error(RuntimeError("failed")), name)(1.0, loop=loop)  # type: ignore[no-any-return]

    report = verify_publisher(make, create_failed_publisher=failed, max_elements=1000)
    assert report.ok, str(report)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    with loop_thread("timeops-loop") as event_loop:
        yield event_loop


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("name", ["throttle_first", "delay", "timeout", "buffer_time"])
def test_on_a_real_loop_passes_the_publisher_tck_over_each_upstream_shape(
    name: str, shape: str, loop: asyncio.AbstractEventLoop
) -> None:
    """throttle_first(0), delay, timeout(60), buffer_time(max_size=1): every element, on a running loop."""
    from rstreams.tck import verify_publisher

    shapes = upstreams(loop)
    ops: dict[str, Callable[[rstreams.Flow[int]], rstreams.Flow[Any]]] = {
        "throttle_first": lambda f: f.throttle_first(0, loop=loop),
        "delay": lambda f: f.delay(0.001, max_pending=8, loop=loop),
        "timeout": lambda f: f.timeout(60, total=600, loop=loop),
        "buffer_time": lambda f: f.buffer_time(60, max_size=1, loop=loop),
    }
    op, up = ops[name], shapes[shape]
    report = verify_publisher(
        lambda n: op(up(n)),
        create_failed_publisher=lambda: op(rstreams.error(RuntimeError("failed"))),
        max_elements=1000,
        env=patient_env(),
    )
    assert report.ok, str(report)


@pytest.mark.parametrize(
    ("build", "who"),
    [
        (lambda loop: rstreams.range(3).debounce(1, loop=loop), "debounce"),
        (lambda loop: rstreams.range(3).throttle_first(1, loop=loop), "throttle_first"),
        (lambda loop: rstreams.range(3).throttle_latest(1, loop=loop), "throttle_latest"),
        (lambda loop: rstreams.range(3).sample(1, loop=loop), "sample"),
        (lambda loop: rstreams.range(3).delay(1, loop=loop), "delay"),
        (lambda loop: rstreams.range(3).buffer_time(1, loop=loop), "buffer_time"),
        (lambda loop: rstreams.range(3).timeout(1, loop=loop), "timeout"),
        (lambda loop: rstreams.range(3).window_time(1, loop=loop), "window_time"),
        (lambda loop: rstreams.range(3).retry(1, loop=loop), "retry"),
        (lambda loop: rstreams.range(3).retry_when(bool, loop=loop), "retry_when"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_a_loop_that_is_not_one_is_refused_when_built(
    build: Callable[[object], rstreams.Flow[Any]], who: str
) -> None:
    """loop=3 is a TypeError naming the operator and loop=, at the call, not an on_error later."""
    with pytest.raises(TypeError, match=rf"^{who}\(loop=\) needs an asyncio event loop, got 3$"):
        build(3)
    _, loop = clock_and_loop()
    build(loop)  # the test's virtual loop has what a clock uses
