"""retry, retry_when, on_error_resume, on_error_return: demand carried over exactly, rules 2.13, 3.x.

Time (the backoff) runs on the virtual clock; nothing here sleeps.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from typing import Any, cast

import pytest

import rstreams
from rstreams.api import Subscriber
from rstreams.errors import InvalidDemandError
from testkit import patience
from testkit.clock import VirtualLoop
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber


class Flaky(rstreams.Flow[int]):
    """Each subscription emits ``items``; the first ``failures`` of them then fail, the rest complete."""

    def __init__(self, items: Sequence[int], failures: int) -> None:
        self.items = items
        self.failures = failures
        self.subscriptions = 0

    def _run(self, attempt: int) -> Iterator[int]:
        yield from self.items
        if attempt < self.failures:
            raise ConnectionError(f"attempt {attempt} failed")

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        attempt = self.subscriptions
        self.subscriptions += 1
        rstreams.from_iterable(self._run(attempt)).subscribe(subscriber)


def _collect(flow: rstreams.Flow[int], initial: int = 1_000) -> RecordingSubscriber[int]:
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=initial)
    flow.subscribe(s)
    return s


def _failed(message: str = "x") -> rstreams.Flow[int]:
    """A stream of ints that fails at once (``rstreams.error`` typed for an int stream)."""
    return rstreams.error(ValueError(message))


# -- retry ---------------------------------------------------------------------------------


def test_retry_resubscribes_until_the_source_succeeds() -> None:
    """Two failures, three attempts: every attempt's elements arrive, then on_complete."""
    source = Flaky([1, 2], failures=2)
    s = _collect(source.retry(3))
    assert s.items == [1, 2, 1, 2, 1, 2] and s.completed and s.error is None
    assert source.subscriptions == 3


def test_retry_passes_the_error_on_once_the_attempts_are_used() -> None:
    """times=2: three subscriptions in all, then the last error reaches the subscriber."""
    source = Flaky([7], failures=10)
    s = _collect(source.retry(2))
    assert source.subscriptions == 3
    assert s.items == [7, 7, 7]
    assert isinstance(s.error, ConnectionError) and "attempt 2" in str(s.error)


def test_retry_zero_is_no_retry() -> None:
    """times=0 passes the first error straight on."""
    s = _collect(Flaky([], failures=1).retry(0))
    assert isinstance(s.error, ConnectionError)


def test_demand_carries_over_exactly_to_the_next_subscription() -> None:
    """request(5), two delivered, then a failure: the new subscription is asked for 3, not 5."""
    upstream: ManualPublisher[int] = ManualPublisher()
    s: RecordingSubscriber[int] = RecordingSubscriber()
    upstream.retry(1).subscribe(s)
    s.request(5)
    upstream.emit(1, 2)
    upstream.fail(ConnectionError("dropped"))
    assert upstream.requests == [5, 3]
    upstream.emit(3, 4, 5)
    upstream.complete()
    assert s.items == [1, 2, 3, 4, 5] and s.completed


def test_a_source_failing_inside_subscribe_does_not_recurse() -> None:
    """10,000 synchronous failures in a row: a loop, not a 10,000-deep stack (rule 3.3)."""
    source = Flaky([], failures=20_000)
    s = _collect(source.retry(10_000))
    assert source.subscriptions == 10_001
    assert isinstance(s.error, ConnectionError)


def test_retry_when_asks_the_predicate() -> None:
    """Errors the predicate refuses pass on at once; accepted ones are retried."""
    refused = _collect(Flaky([1], failures=5).retry_when(lambda e: isinstance(e, TimeoutError)))
    assert refused.items == [1] and isinstance(refused.error, ConnectionError)
    source = Flaky([1], failures=2)
    accepted = _collect(source.retry_when(lambda e: isinstance(e, ConnectionError)))
    assert accepted.items == [1, 1, 1] and accepted.completed


def test_a_raising_predicate_ends_the_stream_with_its_exception() -> None:
    """Rule 2.13: the predicate's exception goes downstream, with the upstream's error as context."""

    def predicate(error: BaseException) -> bool:
        raise KeyError("predicate failed")

    s = _collect(Flaky([1], failures=1).retry_when(predicate))
    assert isinstance(s.error, KeyError)
    assert isinstance(s.error.__context__, ConnectionError)


def test_cancel_stops_retrying() -> None:
    """A cancel from inside on_next: no more subscriptions, nothing more delivered (3.12, 3.13)."""
    source = Flaky([1, 2, 3], failures=100)

    class CancelAtTwo(RecordingSubscriber[int]):
        def on_next(self, item: int) -> None:
            super().on_next(item)
            if len(self.items) == 2:
                assert self.subscription is not None
                self.subscription.cancel()

    s = CancelAtTwo(initial=100)
    source.retry(50).subscribe(s)
    assert s.items == [1, 2] and not s.completed and s.error is None
    assert source.subscriptions == 1


def test_invalid_demand_between_two_upstreams_is_signalled() -> None:
    """request(0) while no upstream is attached (waiting for a backoff) ends with rule 3.9."""
    loop = VirtualLoop()
    source = Flaky([], failures=5)
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    source.retry(3, backoff=1.0, loop=cast(asyncio.AbstractEventLoop, loop)).subscribe(s)
    s.request(0)
    assert isinstance(s.error, InvalidDemandError)
    loop.advance(10)
    assert source.subscriptions == 1  # the pending retry saw the stream end


# -- backoff on the virtual clock ------------------------------------------------------------


def test_backoff_doubles_and_is_capped() -> None:
    """backoff=1, max_backoff=3: re-subscriptions at t = 1, 1+2, 1+2+3, 1+2+3+3."""
    loop = VirtualLoop()
    source = Flaky([], failures=10)
    s = _collect(source.retry(4, backoff=1.0, max_backoff=3.0, loop=cast(asyncio.AbstractEventLoop, loop)))
    times: list[float] = []
    for _ in range(12):
        before = source.subscriptions
        loop.advance(0.5)
        if source.subscriptions != before:
            times.append(loop.now)
    assert times == [1.0, 3.0, 6.0]
    loop.advance(3.0)
    assert source.subscriptions == 5 and isinstance(s.error, ConnectionError)


def test_jitter_stays_within_its_fraction() -> None:
    """jitter=0.5 scales each wait by a factor in [0.5, 1.5]."""
    from rstreams.flow._recover import Backoff

    backoff = Backoff("retry", 2.0, 100.0, 0.5)
    for draw, expected in ((0.0, 1.0), (0.5, 2.0), (1.0, 3.0)):
        backoff.random = lambda draw=draw: draw  # type: ignore[misc]
        assert backoff.delay(1) == pytest.approx(expected)


def test_cancel_during_the_backoff_stops_the_timer() -> None:
    """After a cancel the waiting retry never subscribes."""
    loop = VirtualLoop()
    source = Flaky([], failures=10)
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    source.retry(5, backoff=1.0, loop=cast(asyncio.AbstractEventLoop, loop)).subscribe(s)
    assert source.subscriptions == 1
    assert s.subscription is not None
    s.subscription.cancel()
    loop.advance(100)
    assert source.subscriptions == 1 and s.error is None and loop.pending == 0


def test_backoff_without_a_loop_is_a_clear_error() -> None:
    """Subscribing outside a running loop with backoff > 0 and no loop= fails naming the fix."""
    s = _collect(Flaky([1], failures=1).retry(1, backoff=0.1))
    assert isinstance(s.error, RuntimeError) and "retry(..., loop=the_loop)" in str(s.error)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_backoff_on_the_running_loop() -> None:
    """On a real loop (no loop= given) the retry waits and then succeeds."""
    source = Flaky([1], failures=1)
    got = await source.retry(1, backoff=0.001).collect()
    assert got == [1, 1]


@pytest.mark.parametrize(
    ("build", "error", "text"),
    [
        (lambda f: f.retry(-1), ValueError, "retry(times) needs times >= 0"),
        (lambda f: f.retry(1.5), TypeError, "retry(times) needs an int"),
        (lambda f: f.retry(1, backoff=-1), ValueError, "retry(backoff=) needs seconds >= 0"),
        (lambda f: f.retry(1, jitter=2), ValueError, "retry(jitter=) needs a fraction"),
        (lambda f: f.retry_when("x"), TypeError, "retry_when(predicate) needs a callable"),
        (lambda f: f.on_error_resume(None), TypeError, "on_error_resume(fn) needs a callable"),
        (lambda f: f.on_error_return(None), TypeError, "None is never an element"),
    ],
)
def test_bad_arguments_fail_when_the_operator_is_built(
    build: Callable[[rstreams.Flow[int]], Any], error: type[Exception], text: str
) -> None:
    """Arguments are checked at once, with the operator and the argument named."""
    with pytest.raises(error, match=text.replace("(", r"\(").replace(")", r"\)")):
        build(rstreams.just(1))


# -- on_error_resume / on_error_return ----------------------------------------------------------


def test_on_error_resume_continues_with_the_fallback_and_carries_demand() -> None:
    """request(4), one delivered, a failure: the fallback is asked for 3."""
    upstream: ManualPublisher[int] = ManualPublisher()
    fallback: ManualPublisher[int] = ManualPublisher()
    seen: list[BaseException] = []

    def fn(error: BaseException) -> ManualPublisher[int]:
        seen.append(error)
        return fallback

    s: RecordingSubscriber[int] = RecordingSubscriber()
    upstream.on_error_resume(fn).subscribe(s)
    s.request(4)
    upstream.emit(1)
    upstream.fail(ValueError("first"))
    assert [str(e) for e in seen] == ["first"] and fallback.requests == [3]
    fallback.emit(2, 3)
    fallback.fail(ValueError("second"))
    assert s.items == [1, 2, 3] and isinstance(s.error, ValueError) and str(s.error) == "second"


def test_on_error_resume_fn_that_raises_or_returns_no_publisher() -> None:
    """Rule 2.13: the fn's own failure ends the stream; a non-Publisher is a TypeError saying so."""

    def raising(error: BaseException) -> rstreams.Flow[int]:
        raise LookupError("no fallback")

    s = _collect(_failed().on_error_resume(raising))
    assert isinstance(s.error, LookupError) and isinstance(s.error.__context__, ValueError)
    s = _collect(_failed().on_error_resume(lambda e: [1, 2]))  # type: ignore[arg-type, return-value]
    assert isinstance(s.error, TypeError) and "must return a Publisher" in str(s.error)


def test_on_error_return_waits_for_demand_then_completes() -> None:
    """The value is an element like any other: sent only once requested (rule 1.1)."""
    s: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    Flaky([0], failures=1).on_error_return(-1).subscribe(s)
    assert s.items == [0] and not s.completed and s.error is None
    s.request(1)
    assert s.items == [0, -1] and s.completed


class FailsThenEmits(rstreams.Flow[int]):
    """The first ``failures`` subscriptions fail at once; later ones emit ``range(n)``."""

    def __init__(self, n: int, failures: int) -> None:
        self.n = n
        self.failures = failures
        self.subscriptions = 0

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        self.subscriptions += 1
        if self.subscriptions <= self.failures:
            rstreams.error(ConnectionError("not yet")).subscribe(subscriber)
        else:
            rstreams.range(0, self.n).subscribe(subscriber)


@pytest.mark.parametrize("name", ["retry", "retry_when", "on_error_resume", "on_error_return"])
def test_passes_the_publisher_tck(name: str) -> None:
    """Every PublisherVerification case, over sources that fail and then recover."""
    from rstreams.tck import verify_publisher

    makers: dict[str, Callable[[int], rstreams.Flow[int]]] = {
        "retry": lambda n: FailsThenEmits(n, failures=2).retry(2),
        "retry_when": lambda n: FailsThenEmits(n, failures=1).retry_when(lambda e: True),
        "on_error_resume": lambda n: _failed().on_error_resume(lambda e: rstreams.range(0, n)),
        "on_error_return": lambda n: (
            Flaky(range(n - 1), failures=2**62).on_error_return(-1) if n else rstreams.empty()
        ),
    }
    failing: dict[str, Callable[[], rstreams.Flow[int]] | None] = {
        "retry": lambda: FailsThenEmits(1, failures=5).retry(2),
        "retry_when": lambda: FailsThenEmits(1, failures=1).retry_when(lambda e: False),
        "on_error_resume": lambda: _failed().on_error_resume(lambda e: _failed("y")),
        "on_error_return": None,  # it always recovers: the failed-publisher cases skip
    }
    report = verify_publisher(makers[name], create_failed_publisher=failing[name])
    assert report.ok, str(report)


def test_retry_result_matches_a_blocking_collect() -> None:
    """The sink sees the same as the recorder: three attempts of [5]."""
    assert patience.result(Flaky([5], failures=2).retry(2).collect()) == [5, 5, 5]
