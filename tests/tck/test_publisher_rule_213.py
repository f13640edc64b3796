"""Rule 2.13 on the Publisher's side: a Subscriber whose ``on_next`` raises counts as cancelled.

The spec312 case makes on_next #3 raise with unbounded demand left; the publisher must stop
(elements may trail, as after a cancel) and signal nothing more to that Subscriber. The
publishers below are broken on purpose, each changing one thing in the correct
:class:`SyncPublisher` (which lets the raise travel back out of ``request()``: allowed).
"""

from __future__ import annotations

import threading
from contextlib import nullcontext
from typing import ClassVar

import pytest

from rstreams.api import Subscription
from rstreams.tck import StreamAbandoned, TestEnvironment
from rstreams.tck._env import RUNAWAY_LIMIT
from rstreams.tck._registry import run_cases
from rstreams.tck._test_subscribers import TestSubscriber
from testkit.broken_publishers import PublisherOf, SyncSubscription, publisher_with

SPEC312 = "required_spec312_cancel_must_make_the_publisher_to_eventually_stop_signaling"


class _SwallowsRaises(SyncSubscription):
    """Catches what ``on_next`` raises and delivers on: the raise is lost (rule 2.13)."""

    def emit(self) -> None:
        try:
            super().emit()
        except Exception:
            pass  # broken: the subscription is not considered cancelled


class _FailsTheRaiser(SyncSubscription):
    """Takes the raise as a cancel and hands the error to the Subscriber that raised: a terminal
    signal may trail like an element (rule 1.8), so this passes."""

    def emit(self) -> None:
        try:
            super().emit()
        except Exception as exc:
            self.fail(exc)


class _CatchesAndStops(SyncSubscription):
    """Correct: takes the raise as a cancel and reports it by other means."""

    reported: ClassVar[list[BaseException]] = []

    def emit(self) -> None:
        try:
            super().emit()
        except Exception as exc:
            self.cancel()
            self.reported.append(exc)


@pytest.mark.timeout(60)  # well under case_timeout (120 s)
@pytest.mark.parametrize(
    ("subscription", "fragment"),
    [
        (
            _SwallowsRaises,
            "rule 2.13: 10001 elements arrived after on_next #3 raised and they kept coming",
        ),
    ],
    ids=["swallows"],
)
def test_a_publisher_that_does_not_take_a_raise_as_a_cancel_fails_spec312(
    subscription: type[SyncSubscription], fragment: str
) -> None:
    result = run_cases(PublisherOf(publisher_with(subscription)), [SPEC312]).results[0]
    assert result.outcome == "failed", result
    assert result.message.startswith(fragment), result.message


@pytest.mark.parametrize(
    "subscription",
    [SyncSubscription, _CatchesAndStops, _FailsTheRaiser],
    ids=["propagates", "catches", "fails-the-raiser"],
)
def test_a_publisher_that_stops_after_the_raise_passes(subscription: type[SyncSubscription]) -> None:
    """Letting the raise travel back out of request(), catching it and cancelling, or even ending the
    stream with on_error: all pass."""
    result = run_cases(PublisherOf(publisher_with(subscription)), [SPEC312]).results[0]
    assert result.outcome == "passed", result


class _Parked(Exception):
    """What the test's stand-in for ``threading.Event().wait()`` raises instead of waiting for good."""


class _NeverSetEvent:
    def wait(self, timeout: float | None = None) -> bool:
        raise _Parked


def test_a_closed_runaway_that_swallows_stream_abandoned_is_halted(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Past twice the runaway limit after its cancel, a closed subscriber raises a SystemExit (which
    ``except Exception`` lets through) instead of StreamAbandoned; the thread that swallows that too
    is parked for good, and says on stderr that, not being a daemon thread, it blocks the exit."""
    env = TestEnvironment(default_timeout=60.0)
    env.case = "the_case"
    sub: TestSubscriber[int] = TestSubscriber(env)
    sub.subscription.complete(_Nothing())
    sub.cancel()
    sub.closed = True
    for _ in range(2 * RUNAWAY_LIMIT):
        with pytest.raises(StreamAbandoned) if sub.after_cancel >= RUNAWAY_LIMIT else nullcontext():
            sub._element_arrived()
    with pytest.raises(SystemExit) as halted:
        sub._element_arrived()
    assert not isinstance(halted.value, Exception)
    assert "the TCK halts a runaway stream: 20001 elements after cancel()" in str(halted.value)
    monkeypatch.setattr(threading, "Event", _NeverSetEvent)
    with pytest.raises(_Parked):
        sub._element_arrived()  # this (main, not daemon) thread swallowed the SystemExit
    err = capsys.readouterr().err
    assert "case the_case swallowed StreamHalted (a SystemExit) too; its thread 'MainThread' is parked" in err
    assert "not being a daemon thread, it keeps the process from exiting" in err


class _Nothing(Subscription):
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass
