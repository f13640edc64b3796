"""Elements an operator has received but not yet delivered when an upstream error comes:
delivered before the error, or dropped (rules 1.4, 4.2).

One test per row of docs/operators.md's table "Errors and what is already received", and a
check that the table says what :data:`POLICY` says. In every case the downstream has asked
for less than the operator holds, the upstream fails, and then the downstream asks for
exactly what it has not asked for yet: ``after`` means the held elements go out and then
the error (no spare demand needed), ``immediate`` that the error goes on as soon as it
comes and they are dropped.
"""

from __future__ import annotations

import concurrent.futures
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

import rstreams
from rstreams.errors import set_unhandled_error_hook
from rstreams.flow._flow import Flow
from testkit.clock import clock_and_loop
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")

DOC = Path(__file__).resolve().parents[2] / "docs" / "operators.md"

POLICY = {
    "merge": "immediate",
    "merge with delay_error=True": "after",
    "flat_map": "immediate",
    "flat_map with delay_error=True": "after",
    "concat_map": "after",
    "switch_map": "after",
    "zip": "immediate",
    "combine_latest": "immediate",
    "group_by": "immediate",
    "window": "immediate",
    "window_time": "immediate",
    "share": "immediate",
    "replay": "after",
    "buffer": "immediate",
    "last": "immediate",
    "buffer_time": "immediate",
    "debounce": "immediate",
    "sample": "immediate",
    "throttle_latest": "immediate",
    "delay": "immediate",
    "observe_on": "immediate",
    "publish_on": "after",
    "on_backpressure_buffer": "after",
    "on_backpressure_latest": "immediate",
}
"""Operator -> whether elements received before an upstream error are delivered before it."""

BOOM = RuntimeError("upstream failed")


class _Inline(concurrent.futures.Executor):
    """An executor that runs each task at once, on the caller's thread."""

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        future.set_result(fn(*args, **kwargs))
        return future


def _held(
    build: Callable[[Flow[int]], Flow[Any]], *, asked: int = 0, sent: int = 2
) -> RecordingSubscriber[Any]:
    """``build(source)`` asked for ``asked``; the source sends ``sent`` elements (within what
    the operator asked of it), fails, and then the downstream asks for the ``sent - asked``
    it has not asked for yet and no more: an error behind held elements needs no spare
    demand to follow them."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=asked)
    build(source).subscribe(s)
    source.emit(*range(1, sent + 1))
    source.fail(BOOM)
    if sent > asked:
        s.request(sent - asked)
    assert s.error is BOOM and s.signals.count("on_error") == 1
    return s


def _policy(items: list[Any], held: list[Any]) -> str:
    """``after`` if every one of ``held`` was delivered (in any order: flat_map serves its
    inners in turn), ``immediate`` if some were dropped (those delivered before the error,
    within the demand, are fine)."""
    if sorted(items) == sorted(held):
        return "after"
    assert all(item in held for item in items), items
    return "immediate"


def test_merge() -> None:
    """Reactor's merge and RxJava's merge: the error cuts ahead of what is queued."""
    other: ManualPublisher[int] = ManualPublisher()
    assert _policy(_held(lambda src: rstreams.merge(src, other)).items, [1, 2]) == POLICY["merge"]
    assert other.cancelled == 1


def test_merge_delay_error() -> None:
    """Reactor's mergeDelayError, RxJava's mergeDelayError: the others run on, everything
    queued goes out, then the error instead of the completion."""
    other: ManualPublisher[int] = ManualPublisher()
    s = RecordingSubscriber[int]()
    source: ManualPublisher[int] = ManualPublisher()
    rstreams.merge(source, other, delay_error=True).subscribe(s)
    source.emit(1, 2)
    source.fail(BOOM)
    s.request(10)
    assert s.items == [1, 2] and not s.done and other.cancelled == 0
    other.emit(3)
    other.complete()
    assert s.items == [1, 2, 3] and s.error is BOOM
    assert POLICY["merge with delay_error=True"] == "after"


def test_merge_with_delay_error() -> None:
    """The method passes ``delay_error`` on, whichever side fails: this Flow's error waits
    for the other's elements and end, the other's for this Flow's; several come as one
    group, in the order they came."""
    this: ManualPublisher[int] = ManualPublisher()
    other: ManualPublisher[int] = ManualPublisher()
    s = RecordingSubscriber[int]()
    this.merge_with(other, delay_error=True).subscribe(s)
    this.emit(1)
    other.emit(2)
    other.fail(BOOM)
    assert s.items == [] and not s.done and this.cancelled == 0
    s.request(10)
    this.emit(3)
    assert s.items == [1, 2, 3] and not s.done
    second = KeyError("this")
    this.fail(second)
    assert isinstance(s.error, BaseExceptionGroup) and list(s.error.exceptions) == [BOOM, second]
    assert "merge_with" in str(s.error)
    with pytest.raises(TypeError, match=r"merge_with\(delay_error=...\) needs True or False"):
        rstreams.just(1).merge_with(rstreams.just(2), delay_error=None)  # type: ignore[arg-type]


def test_flat_map() -> None:
    """An upstream error drops the inners' queued elements (reactor's and RxJava's flatMap)."""
    items = _held(lambda src: src.flat_map(rstreams.just)).items
    assert _policy(items, [1, 2]) == POLICY["flat_map"]
    inner = _held(lambda src: rstreams.just(0).flat_map(lambda _: src)).items  # an inner's error too
    assert _policy(inner, [1, 2]) == POLICY["flat_map"]


def test_flat_map_delay_error() -> None:
    """Reactor's flatMapDelayError, RxJava's flatMap(delayErrors): an upstream or an inner
    error waits for the inners still running and for what is queued."""
    items = _held(lambda src: src.flat_map(rstreams.just, delay_error=True)).items
    assert _policy(items, [1, 2]) == POLICY["flat_map with delay_error=True"]
    inner = _held(lambda src: rstreams.just(0).flat_map(lambda _: src, delay_error=True)).items
    assert _policy(inner, [1, 2]) == POLICY["flat_map with delay_error=True"]


def test_concat_map() -> None:
    """Reactor's concatMap (IMMEDIATE): what the inner already sent goes out before the
    upstream's error (see test_concat_map for the inner's queue); an inner's error comes after
    its elements."""
    items = _held(lambda src: rstreams.just(0).concat_map(lambda _: src), asked=2).items
    assert _policy(items, [1, 2]) == POLICY["concat_map"]


class _Meanwhile(RecordingSubscriber[int]):
    """Calls ``then`` inside its first ``on_next``: signals that come while the operator is
    busy delivering, so that they wait in its queues."""

    def __init__(self, then: Callable[[], None], initial: int) -> None:
        super().__init__(initial=initial)
        self.then: Callable[[], None] | None = then

    def on_next(self, item: int) -> None:
        super().on_next(item)
        then, self.then = self.then, None
        if then is not None:
            then()


@pytest.mark.parametrize("failing", ["upstream", "inner", "fn"])
def test_switch_map(failing: str) -> None:
    """As concat_map: the current inner is asked only within the demand, so what it sent
    goes out before an upstream's or its own error (reactor's switchMap hands it straight on;
    RxJava's drops the queue it prefetched); a Publisher mapped meanwhile is never subscribed;
    ``fn`` raising is immediate. Here element 2 waits while 1 is delivered."""
    source: ManualPublisher[int] = ManualPublisher()
    inner: ManualPublisher[int] = ManualPublisher()
    late: ManualPublisher[int] = ManualPublisher()

    def fn(x: int) -> ManualPublisher[int]:
        if x == 2:
            raise BOOM
        return inner if x == 0 else late

    def meanwhile() -> None:
        inner.emit(2)
        if failing == "upstream":
            source.emit(1)  # mapped to ``late``, then the error
            source.fail(BOOM)
        elif failing == "inner":
            inner.fail(BOOM)
        else:
            source.emit(2)  # fn raises

    s = _Meanwhile(meanwhile, initial=5)
    source.switch_map(fn).subscribe(s)
    source.emit(0)
    inner.emit(1)
    assert s.error is BOOM and s.signals.count("on_error") == 1 and late.subscriber is None
    expected = "immediate" if failing == "fn" else POLICY["switch_map"]
    assert _policy(s.items, [1, 2]) == expected
    cancelled = {"upstream": (1, 0), "inner": (0, 1), "fn": (1, 1)}[failing]
    assert (inner.cancelled, source.cancelled) == cancelled


def test_zip() -> None:
    """Reactor's and RxJava's zip: elements waiting for their partners are dropped."""
    other: ManualPublisher[str] = ManualPublisher()
    s = _held(lambda src: rstreams.zip(src, other), asked=2)
    assert _policy(s.items, [(1, "x"), (2, "y")]) == POLICY["zip"] and other.cancelled == 1


def test_combine_latest() -> None:
    """Reactor's combineLatest: the latest values held for a tuple are dropped."""
    other: ManualPublisher[str] = ManualPublisher()
    s = _held(lambda src: rstreams.combine_latest(src, other), asked=2)
    assert _policy(s.items, [(2, "x")]) == POLICY["combine_latest"] and other.cancelled == 1


def test_group_by() -> None:
    """Every group and the outer get the error at once; what a group holds is dropped (as
    RxJava's groupBy; reactor's groups deliver it first). A group is never complete before
    the upstream is: another element of its key may always come."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = RecordingSubscriber[Any](initial=10)
    source.group_by(lambda x: x % 2).subscribe(outer)
    source.emit(1, 2, 3)
    groups = [RecordingSubscriber[int]() for _ in outer.items]
    for group, s in zip(outer.items, groups, strict=True):
        group.subscribe(s)
    source.fail(BOOM)
    for s in groups:
        s.request(10)
    assert len(groups) == 2 and outer.error is BOOM
    assert all(s.error is BOOM for s in groups)
    held = ([1, 3], [2])
    assert {_policy(s.items, h) for s, h in zip(groups, held, strict=True)} == {POLICY["group_by"]}


def _windows_at_an_error(outer: RecordingSubscriber[Any]) -> list[RecordingSubscriber[int]]:
    """Subscribes to each window the outer got, asking nothing; the caller fails the source."""
    windows = [RecordingSubscriber[int]() for _ in outer.items]
    for window, s in zip(outer.items, windows, strict=True):
        window.subscribe(s)
    return windows


def test_window() -> None:
    """The open window and the outer get the error at once, what the window holds dropped;
    a window already cut (its count-th element came) is complete: what it holds, then its
    completion (reactor's and RxJava's windows, completed when cut; reactor's open window
    delivers what it holds first)."""
    source: ManualPublisher[int] = ManualPublisher()
    outer = RecordingSubscriber[Any](initial=10)
    source.window(2).subscribe(outer)
    source.emit(1, 2, 3)
    cut, open_ = _windows_at_an_error(outer)
    source.fail(BOOM)
    assert outer.error is BOOM and open_.error is BOOM and cut.signals == ["on_subscribe"]
    cut.request(1)
    assert cut.items == [1] and not cut.done
    cut.request(10)
    open_.request(10)
    assert cut.items == [1, 2] and cut.completed and cut.error is None
    assert _policy(open_.items, [3]) == POLICY["window"]
    assert source.cancelled == 0  # the upstream failed: nothing to cancel


def test_window_time() -> None:
    """As window: the window of the current period and the outer get the error at once; a
    window its clock already cut, not yet taken, delivers what it holds and completes
    (reactor's and RxJava's timed windows; both deliver the open window's elements first)."""
    clock, loop = clock_and_loop()
    source: ManualPublisher[int] = ManualPublisher()
    outer = RecordingSubscriber[Any](initial=10)
    source.window_time(1.0, loop=loop).subscribe(outer)
    source.emit(1, 2)
    clock.advance(1.0)  # the first window is cut
    source.emit(3)
    cut, open_ = _windows_at_an_error(outer)
    source.fail(BOOM)
    assert outer.error is BOOM and open_.error is BOOM and not cut.done
    cut.request(10)
    open_.request(10)
    clock.advance(10.0)
    assert cut.items == [1, 2] and cut.completed
    assert _policy(open_.items, [3]) == POLICY["window_time"]
    assert clock.pending == 0


@pytest.mark.parametrize(
    ("operator", "asked", "sent", "held"),
    [
        ("debounce", 1, 1, [1]),
        ("sample", 1, 1, [1]),
        ("throttle_latest", 2, 2, [1, 2]),  # 1 goes out at once, 2 waits for the window's end
        ("delay", 2, 2, [1, 2]),
        ("buffer_time", 1, 2, [[1, 2]]),
    ],
)
def test_clocked(operator: str, asked: int, sent: int, held: list[Any]) -> None:
    """What waits for the clock is dropped, and the timer with it: RxJava's debounce, sample,
    throttleLatest, delay (delayError false) and buffer(time, count); reactor's sampleTimeout,
    sample, delayElements and bufferTimeout. Completion, not an error, sends the pending one."""
    clock, loop = clock_and_loop()
    s = _held(lambda src: getattr(src, operator)(1.0, loop=loop), asked=asked, sent=sent)
    clock.advance(10.0)
    assert _policy(s.items, held) == POLICY[operator] and s.signals[-1] == "on_error"
    assert clock.pending == 0


@pytest.mark.parametrize("operator", ["share", "replay"])
def test_multicast(operator: str) -> None:
    """share, as reactor's (publish): the error cuts ahead of what is queued. replay, as
    reactor's and RxJava's: the error is the end of the history, after what the subscriber
    had still to take."""
    build: Callable[[Flow[int]], Flow[int]] = (
        (lambda src: src.share()) if operator == "share" else (lambda src: src.replay(2))
    )
    assert _policy(_held(build, asked=1).items, [1, 2]) == POLICY[operator]


def test_buffer() -> None:
    """Reactor's buffer: the partial list is dropped."""
    assert _policy(_held(lambda src: src.buffer(3), asked=1).items, [[1, 2]]) == POLICY["buffer"]


def test_last() -> None:
    """Reactor's last and RxJava's lastElement: the element held is dropped (and a request
    after the error brings out nothing, rule 1.7)."""
    s = _held(lambda src: src.last(), asked=1)
    assert _policy(s.items, [2]) == POLICY["last"] and s.signals[-1] == "on_error"


@pytest.mark.parametrize("operator", ["observe_on", "publish_on"])
def test_boundaries(operator: str) -> None:
    """RxJava's observeOn drops the queue; reactor's publishOn delivers it first."""
    items = _held(lambda src: getattr(src, operator)(_Inline())).items
    assert _policy(items, [1, 2]) == POLICY[operator]


@pytest.mark.parametrize("operator", ["on_backpressure_buffer", "on_backpressure_latest"])
def test_backpressure(operator: str) -> None:
    """on_backpressure_buffer, as reactor's: the held elements, then the error.
    on_backpressure_latest, as reactor's and RxJava's: the error drops the element held."""
    build: Callable[[Flow[int]], Flow[int]] = (
        (lambda src: src.on_backpressure_buffer(8))
        if operator == "on_backpressure_buffer"
        else (lambda src: src.on_backpressure_latest())
    )
    items = _held(build).items
    assert _policy(items, [1, 2] if operator == "on_backpressure_buffer" else [2]) == POLICY[operator]


def test_the_docs_table_says_what_the_tests_pin() -> None:
    """docs/operators.md's table has one row per entry of POLICY, with the same answer."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Errors and what is already received", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(
        r"^\| `([^`]+)`( with `delay_error=True`)?[^|]*\| \*\*(immediate|after)\*\*", section, re.M
    )
    assert {name + option.replace("`", ""): policy for name, option, policy in rows} == POLICY


# -- delay_error in detail -------------------------------------------------------------


def test_delay_error_gathers_several_errors_in_order() -> None:
    """Several failed Publishers: one BaseExceptionGroup, in the order the errors came."""
    a: ManualPublisher[int] = ManualPublisher()
    b: ManualPublisher[int] = ManualPublisher()
    s = RecordingSubscriber[int](initial=10)
    rstreams.merge(a, b, delay_error=True).subscribe(s)
    first, second = ValueError("a"), KeyError("b")
    a.emit(1)
    b.fail(second)
    a.fail(first)
    assert s.items == [1] and isinstance(s.error, BaseExceptionGroup)
    assert list(s.error.exceptions) == [second, first] and "delay_error=True" in str(s.error)


def test_delay_error_keeps_fn_raising_and_bad_requests_immediate() -> None:
    """Your code raising (rule 2.13's treatment of every operator) and rule 3.9 end the stream at once."""
    source: ManualPublisher[int] = ManualPublisher()
    s = RecordingSubscriber[int]()
    boom = ValueError("fn")

    def fn(x: int) -> Flow[int]:
        if x == 2:
            raise boom
        return rstreams.just(x)

    source.flat_map(fn, delay_error=True).subscribe(s)
    source.emit(1, 2)
    assert s.error is boom and s.items == [] and source.cancelled == 1
    bad = RecordingSubscriber[int]()
    rstreams.merge(ManualPublisher[int](), delay_error=True).subscribe(bad)
    bad.request(0)
    assert "3.9" in str(bad.error)


def test_a_cancel_reports_the_errors_delay_error_kept() -> None:
    """Nobody can receive them any more: they go to the unhandled-error hook, never lost."""
    reported: list[BaseException] = []
    previous = set_unhandled_error_hook(lambda error, where: reported.append(error))
    try:
        a: ManualPublisher[int] = ManualPublisher()
        b: ManualPublisher[int] = ManualPublisher()
        s = RecordingSubscriber[int](initial=1)
        rstreams.merge(a, b, delay_error=True).subscribe(s)
        a.fail(BOOM)
        s.cancel()
        assert reported == [BOOM] and s.error is None and b.cancelled == 1
    finally:
        set_unhandled_error_hook(previous)


def test_delay_error_must_be_a_bool() -> None:
    """Checked when built, naming the operator."""
    with pytest.raises(TypeError, match=r"merge\(delay_error=...\) needs True or False"):
        rstreams.merge(rstreams.just(1), delay_error=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"flat_map\(delay_error=...\)"):
        rstreams.just(1).flat_map(rstreams.just, delay_error="yes")  # type: ignore[arg-type]
