"""share(): one upstream subscription for many subscribers, counted (rules 1.1, 2.5, 3.13)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import rstreams
from testkit import patience
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber

Make = Callable[[rstreams.Flow[int]], rstreams.Flow[int]]


class _Counting(ManualPublisher[int]):
    """A ManualPublisher that counts how often it was subscribed."""

    def __init__(self) -> None:
        super().__init__()
        self.subscriptions = 0

    def subscribe(self, subscriber: Any) -> None:
        self.subscriptions += 1
        self.requests, self.requested, self.emitted, self.cancelled = [], 0, 0, 0
        super().subscribe(subscriber)


def test_subscribers_share_one_upstream_paced_by_the_slowest() -> None:
    """One subscription upstream; each element to every subscriber present, at its own demand."""
    source = _Counting()
    shared = source.share(buffer_size=4)
    a: RecordingSubscriber[int] = RecordingSubscriber()
    b: RecordingSubscriber[int] = RecordingSubscriber()
    shared.subscribe(a)
    shared.subscribe(b)
    assert source.subscriptions == 1 and source.requests == [] and shared.publisher.subscriber_count == 2  # type: ignore[attr-defined]
    a.request(10)
    b.request(1)
    assert source.requested == 4  # buffer_size ahead of the slowest
    source.emit(1, 2, 3, 4)
    assert a.items == [1, 2, 3, 4] and b.items == [1]
    assert source.outstanding == 0


def test_the_last_one_leaving_cancels_and_the_next_starts_over() -> None:
    """Reference count: cancel of the last member cancels upstream; a new subscriber resubscribes."""
    source = _Counting()
    shared = source.share()
    a: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    b: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    shared.subscribe(a)
    shared.subscribe(b)
    a.cancel()
    assert source.cancelled == 0
    b.cancel()
    assert source.cancelled == 1
    c: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    shared.subscribe(c)
    assert source.subscriptions == 2
    source.emit(7)
    assert c.items == [7] and a.items == [] and b.items == []


def test_after_completion_a_new_subscriber_gets_a_fresh_run() -> None:
    """A cold source shared: each generation sees it from the start."""
    shared = rstreams.range(0, 3).share()
    assert patience.result(shared.collect()) == [0, 1, 2]
    assert patience.result(shared.collect()) == [0, 1, 2]


def test_an_error_reaches_every_member() -> None:
    """Rule 4.2 through the processor: everybody gets the error, even without demand."""
    source = _Counting()
    shared = source.share()
    a: RecordingSubscriber[int] = RecordingSubscriber()
    b: RecordingSubscriber[int] = RecordingSubscriber(initial=2)
    shared.subscribe(a)
    shared.subscribe(b)
    source.fail(KeyError("up"))
    assert isinstance(a.error, KeyError) and isinstance(b.error, KeyError)
    assert shared.publisher.subscriber_count == 0  # type: ignore[attr-defined]


def test_bad_buffer_size_is_refused() -> None:
    """share(buffer_size=0) fails when built, naming the operator."""
    import pytest

    with pytest.raises(ValueError, match="share"):
        rstreams.range(0, 1).share(buffer_size=0)


def test_passes_the_publisher_tck() -> None:
    """Every PublisherVerification case, one subscriber at a time."""
    from rstreams.tck import verify_publisher

    report = verify_publisher(
        lambda n: rstreams.range(0, n).share(buffer_size=8),
        create_failed_publisher=lambda: rstreams.error(RuntimeError("failed")).share(),
        max_elements=1000,
    )
    assert report.ok, str(report)


def test_replay_gives_a_late_subscriber_the_last_n_first() -> None:
    """replay(2): b joins after 1, 2, 3 went by and gets 2, 3 (within its demand), then live ones."""
    source = _Counting()
    replayed = source.replay(2, buffer_size=8)
    a: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    replayed.subscribe(a)
    source.emit(1, 2, 3)
    b: RecordingSubscriber[int] = RecordingSubscriber()
    replayed.subscribe(b)
    assert b.items == [] and source.subscriptions == 1  # nothing before it asks
    b.request(1)
    assert b.items == [2]
    b.request(5)
    source.emit(4)
    assert a.items == [1, 2, 3, 4] and b.items == [2, 3, 4]


def test_replay_zero_is_share_and_keeps_the_pace() -> None:
    """replay(0) replays nothing; the kept elements do not hold back the upstream's demand."""
    source = _Counting()
    replayed = source.replay(0, buffer_size=4)
    a: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    replayed.subscribe(a)
    source.emit(1, 2, 3, 4)
    b: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
    replayed.subscribe(b)
    source.emit(5)
    assert b.items == [5]

    def asked(n: int) -> int:
        kept = _Counting()
        with_history = kept.replay(n, buffer_size=4)
        c: RecordingSubscriber[int] = RecordingSubscriber(initial=100)
        with_history.subscribe(c)
        kept.emit(1, 2, 3, 4)
        return kept.requested

    assert asked(3) == asked(0) == 7  # the 3 kept elements take no room from the prefetch


def test_replay_argument_errors_name_the_operator() -> None:
    """replay(-1), replay('2'), replay(1, buffer_size=0) fail when built."""
    import pytest

    with pytest.raises(ValueError, match=r"replay\(n\) needs n >= 0"):
        rstreams.range(0, 1).replay(-1)
    with pytest.raises(TypeError, match=r"replay\(n\) needs an int"):
        rstreams.range(0, 1).replay("2")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"replay\(buffer_size=\)"):
        rstreams.range(0, 1).replay(1, buffer_size=0)
    with pytest.raises(ValueError, match=r"ref_count\(buffer_size=\)"):
        rstreams.range(0, 1).ref_count(buffer_size=0)


def test_ref_count_is_share() -> None:
    """ref_count(): one upstream subscription while any subscriber is there."""
    source = _Counting()
    counted = source.ref_count()
    a: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    b: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    counted.subscribe(a)
    counted.subscribe(b)
    source.emit(9)
    assert source.subscriptions == 1 and a.items == [9] and b.items == [9]
    a.cancel()
    b.cancel()
    assert source.cancelled == 1


def test_a_replaying_processor_replays_after_completion() -> None:
    """MulticastProcessor(replay=2): a subscriber after on_complete gets the last 2, then the end;
    after an error only the error (rule 4.2: it is a Processor)."""
    processor: rstreams.MulticastProcessor[int] = rstreams.MulticastProcessor(replay=2, auto_cancel=False)
    early: RecordingSubscriber[int] = RecordingSubscriber(initial=10)
    processor.subscribe(early)
    rstreams.range(0, 5).subscribe(processor)
    late: RecordingSubscriber[int] = RecordingSubscriber()
    processor.subscribe(late)
    assert (late.items, late.completed) == ([], False)
    late.request(5)
    assert early.items == [0, 1, 2, 3, 4] and late.items == [3, 4] and late.completed
    failed: rstreams.MulticastProcessor[int] = rstreams.MulticastProcessor(replay=2)
    rstreams.error(KeyError("x")).subscribe(failed)
    after: RecordingSubscriber[int] = RecordingSubscriber(initial=5)
    failed.subscribe(after)
    assert after.items == [] and isinstance(after.error, KeyError)


def test_replay_passes_the_publisher_tck() -> None:
    """Every PublisherVerification case for replay(3) and ref_count()."""
    from rstreams.tck import verify_publisher

    makers: list[Make] = [
        lambda f: f.replay(3, buffer_size=8),
        lambda f: f.ref_count(buffer_size=8),
    ]
    for make in makers:

        def create(n: int, make: Make = make) -> rstreams.Flow[int]:
            return make(rstreams.range(0, n))

        def failed(make: Make = make) -> rstreams.Flow[int]:
            return make(rstreams.error(RuntimeError("failed")))

        report = verify_publisher(create, create_failed_publisher=failed, max_elements=1000)
        assert report.ok, str(report)


def test_replay_keeps_an_error_behind_the_elements() -> None:
    """As reactor's and RxJava's replay: each subscriber gets the upstream's error after what
    it had still to take (at once, without demand, when nothing is left for it), and one
    joining after the error (while the upstream subscription is still shared) gets the last
    n and then the error. share keeps it immediate, and so does the MulticastProcessor."""
    boom = RuntimeError("upstream")
    source: ManualPublisher[int] = ManualPublisher()
    replayed = source.replay(2)
    slow: RecordingSubscriber[int] = RecordingSubscriber(initial=1)
    fast: RecordingSubscriber[int] = RecordingSubscriber(initial=3)
    replayed.subscribe(slow)
    replayed.subscribe(fast)
    source.emit(1, 2, 3)
    source.fail(boom)
    assert fast.items == [1, 2, 3] and fast.error is boom
    assert slow.items == [1] and not slow.done
    late: RecordingSubscriber[int] = RecordingSubscriber()
    replayed.subscribe(late)
    assert late.signals == ["on_subscribe"]
    late.request(5)
    assert late.items == [2, 3] and late.error is boom and late.signals.count("on_error") == 1
    slow.request(1)
    assert slow.items == [1, 2] and not slow.done
    slow.request(5)
    assert slow.items == [1, 2, 3] and slow.error is boom
