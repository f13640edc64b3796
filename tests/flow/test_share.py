"""share(): one upstream subscription for many subscribers, counted (rules 1.1, 2.5, 3.13)."""

from __future__ import annotations

from typing import Any

import rstreams
from testkit.publishers import ManualPublisher
from testkit.recording import WAIT, RecordingSubscriber


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
    assert shared.collect().result(WAIT) == [0, 1, 2]
    assert shared.collect().result(WAIT) == [0, 1, 2]


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
