"""Blocking iteration for threads: bounded demand, producers on other threads, timeout, close."""

from __future__ import annotations

import gc
import threading
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscriber, Subscription
from rstreams.flow._blocking import _Receiver, iter_blocking
from rstreams.tck._subscriber import verify_subscriber_blackbox
from testkit import patience
from testkit.recording import WAIT


class ManualPublisher(rstreams.Flow[int]):
    """Records requests and cancels; the test (or a thread) emits by hand."""

    def __init__(self) -> None:
        self.subscriber: Subscriber[int] | None = None
        self.requests: list[int] = []
        self.cancelled = threading.Event()
        self.subscribed = threading.Event()
        self.demand = threading.Semaphore(0)

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        publisher = self

        class _Subscription(Subscription):
            def request(self, n: int) -> None:
                publisher.requests.append(n)
                for _ in range(n):
                    publisher.demand.release()

            def cancel(self) -> None:
                publisher.cancelled.set()

        self.subscriber = subscriber
        subscriber.on_subscribe(_Subscription())
        self.subscribed.set()

    def produce(self, n: int, *, error: BaseException | None = None) -> threading.Thread:
        """Emit 0..n-1 from a new thread, each only after demand for it, then terminate."""

        def run() -> None:
            assert patience.wait(self.subscribed)
            assert self.subscriber is not None
            for i in range(n):
                if not self.demand.acquire(timeout=WAIT) or self.cancelled.is_set():
                    return
                self.subscriber.on_next(i)
            if error is None:
                self.subscriber.on_complete()
            else:
                self.subscriber.on_error(error)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


def test_iterates_a_sync_source() -> None:
    """All elements, in order; an empty source ends at once."""
    assert list(rstreams.range(0, 1000).iter_blocking()) == list(range(1000))
    assert list(iter_blocking(rstreams.empty())) == []


@pytest.mark.timeout(60)  # (above its waits' 10 s bounds of own time on other threads)
def test_producer_on_another_thread_and_bounded_demand() -> None:
    """A consumer thread and a producer thread; demand outstanding never exceeds the window."""
    publisher = ManualPublisher()
    got: list[int] = []
    consumer = threading.Thread(target=lambda: got.extend(iter_blocking(publisher, window=8)))
    consumer.start()
    assert patience.wait(publisher.subscribed)
    producer = publisher.produce(10_000)
    patience.join(consumer)
    patience.join(producer)
    assert got == list(range(10_000))
    assert publisher.requests[0] == 8 and set(publisher.requests[1:]) == {4}
    assert sum(publisher.requests) <= 10_000 + 8


def test_subscription_is_lazy_and_close_cancels() -> None:
    """Nothing happens before the first next(); close() cancels."""
    publisher = ManualPublisher()
    iterator: Any = iter_blocking(publisher, window=4)
    assert publisher.requests == []
    publisher.produce(100)
    assert next(iterator) == 0 and publisher.requests == [4]
    iterator.close()
    assert publisher.cancelled.is_set()


def test_break_cancels_at_once() -> None:
    """Leaving a for loop early cancels, by reference counting alone."""
    publisher = ManualPublisher()
    publisher.produce(1000)
    gc.disable()
    try:
        for x in iter_blocking(publisher, window=16):
            if x == 3:
                break
        assert publisher.cancelled.is_set()
    finally:
        gc.enable()


@pytest.mark.timeout(10)
def test_timeout_raises_and_cancels() -> None:
    """No element within ``timeout``: StreamTimeoutError (a TimeoutError) naming it, and the
    subscription is cancelled."""
    publisher = ManualPublisher()
    iterator = iter_blocking(publisher, timeout=0.05)
    with pytest.raises(
        rstreams.StreamTimeoutError, match=r"^iter_blocking: .* within timeout=0\.05"
    ) as raised:
        next(iterator)
    assert raised.value.seconds == 0.05
    assert publisher.cancelled.is_set()


@pytest.mark.timeout(10)
def test_error_after_the_elements() -> None:
    """Elements first, then the stream's error from next()."""
    publisher = ManualPublisher()
    publisher.produce(5, error=RuntimeError("boom"))
    got: list[int] = []
    with pytest.raises(RuntimeError, match="boom"):
        got.extend(iter_blocking(publisher, window=2))
    assert got == [0, 1, 2, 3, 4] and not publisher.cancelled.is_set()


def test_error_of_a_sync_source() -> None:
    """A failing map raises from the iteration."""
    with pytest.raises(ZeroDivisionError):
        list(rstreams.range(0, 5).map(lambda x: 1 // (x - 2)).iter_blocking())


def test_bad_arguments() -> None:
    """window must be a positive int; timeout positive or None."""
    with pytest.raises(ValueError, match=r"3\.9"):
        iter_blocking(rstreams.range(0, 1), window=0)
    with pytest.raises(ValueError, match="timeout"):
        iter_blocking(rstreams.range(0, 1), timeout=0)
    with pytest.raises(TypeError, match="Publisher"):
        iter_blocking(None)  # type: ignore[arg-type]


@pytest.mark.timeout(30)
def test_receiver_passes_the_tck() -> None:
    """The TCK's blackbox Subscriber verification passes for the blocking iterator's receiver."""
    report = verify_subscriber_blackbox(lambda: _Receiver(8))
    assert report.ok, str(report)
