"""Sources over iterables: laziness, demand, completion, errors, threads (rules 1.x, 3.x)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams
from rstreams.errors import (
    AlreadySubscribedError,
    InvalidDemandError,
    NoneElementError,
    set_unhandled_error_hook,
)
from rstreams.flow._iterable import puller
from testkit.recording import RecordingSubscriber


def test_range_delivers_exactly_what_was_requested() -> None:
    """Rule 1.1: never more than requested; completes right after the last element."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 5).subscribe(s)
    assert s.items == [] and s.signals == ["on_subscribe"]
    s.request(2)
    assert s.items == [0, 1]
    s.request(3)
    assert s.items == [0, 1, 2, 3, 4] and s.completed


def test_from_iterable_is_lazy_over_an_infinite_iterator() -> None:
    """Only requested elements are pulled: itertools.count() works."""
    pulled: list[int] = []

    def numbers() -> Iterator[int]:
        for x in itertools.count():
            pulled.append(x)
            yield x

    source = rstreams.from_iterable(numbers())
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.subscribe(s)
    s.request(3)
    assert s.items == [0, 1, 2]
    assert pulled == [0, 1, 2]
    s.cancel()


def test_request_zero_signals_on_error_naming_rule_3_9() -> None:
    """Rules 3.9, 3.16: request(0) is signalled as on_error(ValueError), not raised."""
    for bad in (0, -1, True, 1.5, "3"):
        s: RecordingSubscriber[int] = RecordingSubscriber()
        rstreams.range(0, 5).subscribe(s)
        s.request(bad)  # type: ignore[arg-type]
        assert isinstance(s.error, InvalidDemandError) and isinstance(s.error, ValueError)
        assert "3.9" in str(s.error) and repr(bad) in str(s.error)


def test_unbounded_demand_saturates() -> None:
    """Rule 3.17: demand sums and saturates at 2**63-1 without error."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 10).subscribe(s)
    s.request(rstreams.UNBOUNDED)
    s.request(rstreams.UNBOUNDED)
    assert s.items == list(range(10)) and s.completed and s.error is None


def test_reentrant_request_is_trampolined() -> None:
    """Rule 3.3: request inside on_next does not recurse into on_next."""
    depth = 0
    max_depth = 0

    class Reentrant(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            nonlocal depth, max_depth
            depth += 1
            max_depth = max(max_depth, depth)
            super().on_next(item)
            self.request(1)
            depth -= 1

    s = Reentrant(initial=1)
    rstreams.range(0, 10_000).subscribe(s)
    assert s.completed and len(s.items) == 10_000 and max_depth == 1


def test_empty_and_error_terminate_without_request() -> None:
    """Rule 1.9 then 1.4/1.5: an empty or failed source ends right after on_subscribe."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.empty().subscribe(s)
    assert s.signals == ["on_subscribe", "on_complete"]
    boom = RuntimeError("boom")
    s2: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.error(boom).subscribe(s2)
    assert s2.signals == ["on_subscribe", "on_error"] and s2.error is boom


def test_subscribe_none_raises_type_error() -> None:
    """Rule 1.9."""
    with pytest.raises(TypeError, match=r"rule 1\.9"):
        rstreams.range(0, 1).subscribe(None)  # type: ignore[arg-type]


def test_cancel_stops_and_later_requests_are_noops() -> None:
    """Rules 3.5-3.7: cancel is idempotent, requests after it do nothing."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 10).subscribe(s)
    s.request(2)
    s.cancel()
    s.cancel()
    s.request(5)
    s.request(0)
    assert s.items == [0, 1] and not s.done


def test_one_shot_iterator_refuses_second_subscription() -> None:
    """A generator can be consumed once; the second subscriber is told why."""
    flow = rstreams.from_iterable(iter([1, 2]))
    first: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    flow.subscribe(first)
    second: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    flow.subscribe(second)
    assert first.items == [1, 2] and first.completed
    assert isinstance(second.error, AlreadySubscribedError) and "once" in str(second.error)
    assert isinstance(second.error, RuntimeError)  # its stdlib base, for code that catches that


def test_raising_on_next_cancels_and_reports() -> None:
    """Rule 2.13: a Subscriber that raises is cancelled; the error is reported, not swallowed."""
    reported: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda e, where: reported.append((e, where)))
    try:

        class Broken(RecordingSubscriber[int]):
            def on_next(self, item: int) -> None:
                super().on_next(item)
                raise ValueError("user bug")

        s = Broken(initial=5)
        rstreams.range(0, 5).subscribe(s)
        assert s.items == [0] and not s.done
        assert len(reported) == 1 and isinstance(reported[0][0], ValueError)
        assert "on_next" in reported[0][1]
    finally:
        set_unhandled_error_hook(previous)


def test_requests_from_many_threads_deliver_serially() -> None:
    """Rule 1.3: concurrent requests never make on_next overlap; every element arrives once."""
    overlap = threading.Lock()
    violations = 0

    class Serial(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            nonlocal violations
            if not overlap.acquire(blocking=False):
                violations += 1
                return
            try:
                super().on_next(item)
            finally:
                overlap.release()

    s = Serial()
    n = 20_000
    rstreams.range(0, n).subscribe(s)

    def request_one_at_a_time() -> None:
        for _ in range(n // 4):
            s.request(1)

    threads = [threading.Thread(target=request_one_at_a_time) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    s.await_done()
    assert violations == 0 and s.items == list(range(n)) and s.completed


def test_fused_map_and_filter_match_plain_python() -> None:
    """map/filter fused into an iterable source give the same elements as the builtins."""
    got = []
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1000)
    rstreams.range(0, 100).map(lambda x: x * 3).filter(lambda x: x % 2 == 0).subscribe(s)
    got = s.items
    assert got == [x * 3 for x in range(100) if (x * 3) % 2 == 0] and s.completed


def test_map_returning_none_fails_the_stream() -> None:
    """Rule 2.13: None is never an element, even when a map function returns it."""
    s: RecordingSubscriber[object] = RecordingSubscriber(initial=10)
    rstreams.range(0, 3).map(lambda x: None if x == 1 else x).subscribe(s)
    assert s.items == [0] and isinstance(s.error, NoneElementError)


@pytest.mark.parametrize("source", [[0, None, 2], iter([0, None, 2])], ids=["list", "iterator"])
def test_a_source_yielding_none_fails_with_none_element_error(source: Any) -> None:
    """Rule 2.13: an iterable that yields None ends the stream with NoneElementError (a
    TypeError) after the elements before it, on the exact (list) and the pulled (iterator) paths."""
    for initial in (1, 10):
        s: RecordingSubscriber[object] = RecordingSubscriber(initial=initial)
        rstreams.from_iterable(list(source) if isinstance(source, list) else iter([0, None, 2])).subscribe(s)
        if initial == 1:
            s.request(5)
        assert s.items == [0] and isinstance(s.error, NoneElementError), (initial, s.signals)
        assert str(s.error) == "rule 2.13: the source produced None; None is never a stream element"


def test_bounded_then_unbounded_demand_delivers_everything() -> None:
    """Rule 3.17: demand added after a bounded pass, past 2**63-1 in all, is unbounded."""
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.from_iterable(iter(range(10))).subscribe(s)  # not exact: ends on a pull
    s.request(3)
    assert s.items == [0, 1, 2] and "on_complete" not in s.signals
    s.request(rstreams.UNBOUNDED)
    assert s.items == list(range(10)) and s.completed and s.error is None


def test_drain_loop_calls_settle_only_when_overridden() -> None:
    """DrainLoop skips the no-op settle; a class that overrides it is settled after each pass."""
    from rstreams.flow._drain import DrainLoop

    class Plain(DrainLoop):
        passes = 0

        def drain_pass(self) -> bool:
            self.passes += 1
            return False

    class Settling(Plain):
        settled = 0

        def settle(self) -> None:
            self.settled += 1

    plain, settling = Plain(), Settling()
    for loop in (plain, settling):
        loop.init_drain()
        loop.drain()
        loop.drain()
    assert (Plain.settles, Settling.settles) == (False, True)
    assert plain.passes == 2 and settling.passes == 2 and settling.settled == 2


def test_just_holds_what_the_iterable_flow_it_stands_for_holds() -> None:
    """``Just`` sets IterableFlow's fields itself (one call per request/response answer): the
    same fields, the same values, and it subscribes as the IterableFlow over its items would."""
    from rstreams.flow._flow import JustFlow, known_elements
    from rstreams.flow._iterable import IterableFlow

    items = (1, "two", 3.0)
    twin = IterableFlow(items.__iter__, items)
    # Every field IterableFlow has (a new one fails here until Just sets it too) ...
    assert IterableFlow.__slots__ == ("_factory", "known")

    def fields(flow: IterableFlow[object]) -> tuple[object, ...]:  # ... and what each holds
        factory = flow._factory
        return (factory.__self__, factory.__name__, flow.known)  # type: ignore[attr-defined]

    for made in (JustFlow(items), rstreams.just(*items)):
        assert type(made) is JustFlow and isinstance(made, IterableFlow)
        assert fields(made) == fields(twin)
        assert known_elements(made) == items
        s: RecordingSubscriber[object] = RecordingSubscriber(initial=3)
        made.subscribe(s)
        assert s.items == list(items) and s.completed
    with pytest.raises(TypeError, match=r"rule 2\.13"):
        rstreams.just(1, None)


def _sources() -> dict[str, Callable[[], rstreams.Flow[Any]]]:
    """Iterable sources whose pulled and requested outcomes must agree (exact and not; ends
    at a step's edge and inside it; a failure and a None after some elements)."""

    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise ValueError("boom")

    def with_none() -> Iterator[int | None]:
        yield 1
        yield None
        yield 3

    return {
        "range": lambda: rstreams.range(0, 6),
        "list": lambda: rstreams.from_iterable([b"a", b"b", b"c", b"d"]),
        "repeat at an edge": lambda: rstreams.from_iterable(itertools.repeat(b"x", 4)),
        "repeat inside a step": lambda: rstreams.from_iterable(itertools.repeat(b"x", 5)),
        "empty": rstreams.empty,
        "failing": lambda: rstreams.from_iterable(failing()),
        "none": lambda: rstreams.from_iterable(with_none()),
    }


@pytest.mark.parametrize("name", list(_sources()))
@pytest.mark.parametrize("step", [1, 2, 4])
def test_pulling_gives_what_requesting_delivers(name: str, step: int) -> None:
    """A consumer that pulls (puller: the serving side's refill) gets the elements, then the
    completion or the error, exactly as a Subscriber requesting the same amounts does: the
    completion as soon as the end is known (rule 1.5), the elements before a failure first."""
    requested: RecordingSubscriber[Any] = RecordingSubscriber()
    _sources()[name]().subscribe(requested)
    pulling: RecordingSubscriber[Any] = RecordingSubscriber()
    _sources()[name]().subscribe(pulling)
    assert pulling.subscription is not None
    pull = puller(pulling.subscription)
    assert pull is not None or name == "empty"  # empty() completed within subscribe
    pulled: list[Any] = []
    end: bool | BaseException = bool(pulling.completed)
    for _ in range(10):
        if end is not False or pull is None:
            break
        requested.request(step)
        items, end = pull(step)
        pulled += items
        assert pulled == requested.items
        assert (end is True) == requested.completed
        if isinstance(end, BaseException):
            assert (type(end), str(end)) == (type(requested.error), str(requested.error))
        else:
            assert requested.error is None
    assert end is not False and pulled == requested.items
    assert pulling.signals == ["on_subscribe"] + (["on_complete"] if name == "empty" else [])


def test_puller_is_only_for_iterable_sources_and_stops_on_cancel() -> None:
    s: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 5).map(lambda x: x + 1).subscribe(s)
    assert s.subscription is not None and puller(s.subscription) is None
    t: RecordingSubscriber[int] = RecordingSubscriber()
    rstreams.range(0, 5).subscribe(t)
    assert t.subscription is not None
    pull = puller(t.subscription)
    assert pull is not None and pull(2) == ([0, 1], False)
    t.subscription.cancel()
    assert pull(2) == ([], False)  # cancelled: nothing more, and no signal
    assert t.signals == ["on_subscribe"]
