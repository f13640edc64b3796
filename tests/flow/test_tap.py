"""tap and do_on_next / do_on_error / do_on_complete / do_on_cancel / do_on_request (rule 2.13)."""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.errors import set_unhandled_error_hook
from testkit import patience
from testkit.publishers import ManualPublisher, drive
from testkit.recording import RecordingSubscriber


def _raise(*_: object) -> None:
    raise ValueError("hook failed")


def test_hooks_see_every_signal_in_order_and_change_nothing() -> None:
    """Each hook runs before its signal goes on; elements and demand pass untouched."""
    seen: list[object] = []
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    source.tap(
        lambda x: seen.append(("next", x)),
        on_complete=lambda: seen.append("complete"),
        on_request=lambda n: seen.append(("request", n)),
    ).subscribe(s)
    s.request(2)
    source.emit(1, 2)
    source.complete()
    assert seen == [("request", 2), ("next", 1), ("next", 2), "complete"]
    assert s.items == [1, 2] and s.completed and source.requests == [2]


@pytest.mark.parametrize(
    "build",
    [
        lambda f: f.do_on_next(_raise),
        lambda f: f.tap(on_next=_raise),
        lambda f: f.do_on_request(_raise),
    ],
)
def test_a_raising_next_or_request_hook_cancels_upstream_and_signals_once(build: Any) -> None:
    """Rule 2.13 for operators: the hook's error goes downstream once, upstream is cancelled."""
    source: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=3)
    build(source).subscribe(s)
    source.emit(1, force=True)
    source.emit(2, force=True)
    assert s.items == [] and str(s.error) == "hook failed"
    assert source.cancelled == 1 and s.signals.count("on_error") == 1


def test_a_raising_error_hook_signals_its_error_chained_to_the_original() -> None:
    """The downstream learns about both: the hook's error, with the stream's as its context."""
    original = RuntimeError("stream failed")
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    rstreams.error(original).do_on_error(_raise).subscribe(s)
    assert isinstance(s.error, ValueError) and s.error.__context__ is original


def test_do_on_error_sees_the_error() -> None:
    """The hook gets the very exception the upstream signalled, which then goes on."""
    original = RuntimeError("stream failed")
    got: list[BaseException] = []
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    rstreams.error(original).do_on_error(got.append).subscribe(s)
    assert got == [original] and s.error is original


def test_a_raising_complete_hook_turns_completion_into_its_error() -> None:
    """The upstream is done, so nothing is cancelled; the downstream gets on_error."""
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    rstreams.just(1).do_on_complete(_raise).subscribe(s)
    assert s.items == [1] and str(s.error) == "hook failed" and not s.completed


def test_do_on_cancel_runs_once_and_a_raise_is_reported_but_cancels_anyway() -> None:
    """A cancel hook's error has nobody to go to: reported; the upstream is cancelled still."""
    reported: list[str] = []
    previous = set_unhandled_error_hook(lambda error, where: reported.append(str(error)))
    try:
        source: ManualPublisher[int] = ManualPublisher()
        calls: list[str] = []

        def hook() -> None:
            calls.append("cancel")
            raise ValueError("hook failed")

        s: RecordingSubscriber[int] = RecordingSubscriber()
        source.do_on_cancel(hook).subscribe(s)
        s.cancel()
        s.cancel()
        assert calls == ["cancel"] and reported == ["hook failed"] and source.cancelled == 1
    finally:
        set_unhandled_error_hook(previous)


def test_do_on_cancel_is_not_called_after_completion() -> None:
    """Rule 3.7: a cancel after the end is a no-op, and no hook runs for it."""
    calls: list[str] = []
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    rstreams.just(1).do_on_cancel(lambda: calls.append("cancel")).subscribe(s)
    s.cancel()
    assert s.completed and calls == []


def test_bad_hooks_are_refused_when_built() -> None:
    """Hooks must be callables; the message names the operator."""
    flow = rstreams.range(0, 1)
    with pytest.raises(TypeError, match="do_on_next"):
        flow.do_on_next(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="do_on_complete"):
        flow.do_on_complete(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"tap\(on_error=\)"):
        flow.tap(on_error=3)  # type: ignore[arg-type]


def test_demand_passes_through_exactly() -> None:
    """Never more than requested (rule 1.1), whatever the pattern."""
    assert drive(rstreams.range(0, 30).tap(lambda _: None), [1, 2, 3, 4]).items == list(range(30))


@pytest.mark.parametrize("name", ["tap", "do_on_next", "do_on_request", "do_on_cancel", "do_on_complete"])
def test_passes_the_publisher_tck(name: str) -> None:
    """Every PublisherVerification case (rules 1.x-3.x)."""
    from rstreams.tck import verify_publisher

    def build(flow: rstreams.Flow[int]) -> rstreams.Flow[int]:
        if name == "tap":
            return flow.tap(lambda _: None, on_error=lambda _: None, on_complete=lambda: None)
        method = getattr(flow, name)
        return method(lambda *_: None)  # type: ignore[no-any-return]

    report = verify_publisher(
        lambda n: build(rstreams.range(0, n)),
        create_failed_publisher=lambda: build(rstreams.error(RuntimeError("failed"))),
    )
    assert report.ok, str(report)
    assert patience.result(build(rstreams.range(0, 3)).collect()) == [0, 1, 2]


@pytest.mark.parametrize("where", ["on_subscribe", "on_next"])
def test_a_downstream_that_raises_has_cancelled_and_on_cancel_runs_once(where: str) -> None:
    """Rule 2.13: the raise counts as the downstream's cancel, so the hook runs (once); the
    source cancels the upstream and reports the raise."""
    calls: list[str] = []

    class Raising(RecordingSubscriber[int]):
        def on_subscribe(self, subscription: Any) -> None:
            super().on_subscribe(subscription)
            subscription.request(5)
            if where == "on_subscribe":
                raise RuntimeError("broke")

        def on_next(self, item: int) -> None:
            super().on_next(item)
            raise RuntimeError("broke")

    reported: list[str] = []
    previous = set_unhandled_error_hook(lambda error, context: reported.append(context))
    try:
        rstreams.range(0, 3).do_on_cancel(lambda: calls.append("cancel")).subscribe(Raising())
    finally:
        set_unhandled_error_hook(previous)
    assert calls == ["cancel"] and reported == [f"Raising.{where}"]
