"""Publishers the operator tests drive by hand, or from their own threads; no sleeps.

* :class:`ManualPublisher`: the test emits, completes and fails; it records every
  request (the total is what demand-exactness tests check) and every cancel.
* :class:`ThreadPublisher`: emits a list from its own thread as demand arrives, so
  signals reach an operator from several threads at once (rule 1.3 tests).
* :class:`ActivityProbe`: counts the inner publishers subscribed and not yet ended.
* :class:`Never`: subscribes and then says nothing, whatever is requested: an answer that
  never comes.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import report_unhandled
from rstreams.flow._flow import Flow
from testkit import patience
from testkit.recording import WAIT, RecordingSubscriber

T = TypeVar("T")


class ManualPublisher(Flow[T], Generic[T]):
    """One subscriber at a time; the test calls :meth:`emit`, :meth:`complete`, :meth:`fail`."""

    def __init__(self) -> None:
        self.subscriber: Subscriber[T] | None = None
        self.requests: list[int] = []
        self.requested = 0  # total, saturating (rule 3.17)
        self.emitted = 0
        self.cancelled = 0
        self._cond = threading.Condition()

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9")
        self.subscriber = subscriber
        subscriber.on_subscribe(_ManualSubscription(self))

    @property
    def outstanding(self) -> int:
        return demand.sub(self.requested, self.emitted)

    def emit(self, *items: T, force: bool = False) -> None:
        """Send ``items``; unless ``force``, only within the demand received (rule 1.1)."""
        for item in items:
            assert self.subscriber is not None
            assert force or self.outstanding > 0, f"test bug: no demand for {item!r}; {self.requests}"
            self.emitted += 1
            self.subscriber.on_next(item)

    def complete(self) -> None:
        assert self.subscriber is not None
        self.subscriber.on_complete()

    def fail(self, error: BaseException) -> None:
        assert self.subscriber is not None
        self.subscriber.on_error(error)

    def await_requested(self, total: int) -> None:
        with self._cond:
            if not self._cond.wait_for(lambda: self.requested >= total, WAIT):
                raise AssertionError(f"timed out waiting for {total} requested; requests={self.requests}")

    def _request(self, n: int) -> None:
        problem = demand.invalid(n)
        if problem is not None:
            assert self.subscriber is not None
            self.subscriber.on_error(problem)
            return
        with self._cond:
            self.requests.append(n)
            self.requested = demand.add(self.requested, n)
            self._cond.notify_all()


class _ManualSubscription(Subscription):
    def __init__(self, publisher: ManualPublisher[T]) -> None:
        self._publisher = publisher

    def request(self, n: int) -> None:
        if not self._publisher.cancelled:
            self._publisher._request(n)

    def cancel(self) -> None:
        self._publisher.cancelled += 1


class ThreadPublisher(Flow[T], Generic[T]):
    """Emits ``items`` from a thread of its own per subscription, as demand arrives.

    ``fail`` (an exception) is signalled after the items instead of ``on_complete``.
    ``hold`` (an Event) keeps the thread from emitting until it is set.
    """

    def __init__(
        self, items: Sequence[T], fail: BaseException | None = None, hold: threading.Event | None = None
    ) -> None:
        self.items = list(items)
        self.failure = fail
        self.hold = hold
        self.cancelled = threading.Event()
        self.threads: list[threading.Thread] = []

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9")
        subscription = _ThreadSubscription(self, subscriber)
        subscriber.on_subscribe(subscription)
        thread = threading.Thread(target=subscription.run, daemon=True)
        self.threads.append(thread)
        thread.start()


class _ThreadSubscription(Subscription, Generic[T]):
    def __init__(self, publisher: ThreadPublisher[T], subscriber: Subscriber[T]) -> None:
        self._publisher = publisher
        self._subscriber = subscriber
        self._cond = threading.Condition()
        self._demand = 0
        self._cancelled = False
        self._error: BaseException | None = None

    def request(self, n: int) -> None:
        with self._cond:
            problem = demand.invalid(n)
            if problem is not None:
                self._error = self._error or problem
            else:
                self._demand = demand.add(self._demand, n)
            self._cond.notify_all()

    def cancel(self) -> None:
        with self._cond:
            self._cancelled = True
            self._publisher.cancelled.set()
            self._cond.notify_all()

    def run(self) -> None:
        if self._publisher.hold is not None:
            patience.wait(self._publisher.hold)
        for item in self._publisher.items:
            with self._cond:
                ready = lambda: self._cancelled or self._error is not None or self._demand > 0  # noqa: E731
                if not self._cond.wait_for(ready, WAIT):
                    return  # the test forgot to request; it fails on its own timeout
                if self._cancelled:
                    return
                if self._error is not None:
                    break
                self._demand = demand.sub(self._demand, 1)
            try:
                self._subscriber.on_next(item)
            except Exception as exc:  # rule 2.13: the subscription counts as cancelled
                self.cancel()
                report_unhandled(exc, "ThreadPublisher: on_next raised")
                return
        if self._cancelled:
            return
        error = self._error or self._publisher.failure
        if error is not None:
            self._subscriber.on_error(error)
        else:
            self._subscriber.on_complete()


class Never(Flow[T], Generic[T]):
    """Calls ``on_subscribe`` and then nothing, whatever is requested or cancelled."""

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        subscriber.on_subscribe(_Silent())


class _Silent(Subscription):
    def request(self, n: int) -> None:
        pass

    def cancel(self) -> None:
        pass


class ActivityProbe:
    """Wraps publishers so that it knows how many are subscribed and not yet ended."""

    def __init__(self) -> None:
        self.active = 0
        self.max_active = 0
        self.subscribed = 0
        self._lock = threading.Lock()

    def wrap(self, publisher: Publisher[T]) -> Publisher[T]:
        probe = self

        class Probed(Flow[T]):
            def subscribe(self, subscriber: Subscriber[T]) -> None:
                publisher.subscribe(_ProbeSubscriber(probe, subscriber))

        return Probed()

    def enter(self) -> None:
        with self._lock:
            self.active += 1
            self.subscribed += 1
            self.max_active = max(self.max_active, self.active)

    def leave(self) -> None:
        with self._lock:
            self.active -= 1


class _ProbeSubscriber(Subscriber[T], Subscription, Generic[T]):
    def __init__(self, probe: ActivityProbe, downstream: Subscriber[T]) -> None:
        self._probe = probe
        self._downstream = downstream
        self._upstream: Subscription | None = None
        self._ended = False

    def _end(self) -> None:
        if not self._ended:
            self._ended = True
            self._probe.leave()

    def on_subscribe(self, subscription: Subscription) -> None:
        self._upstream = subscription
        self._probe.enter()
        self._downstream.on_subscribe(self)

    def on_next(self, item: T) -> None:
        self._downstream.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self._end()
        self._downstream.on_error(error)

    def on_complete(self) -> None:
        self._end()
        self._downstream.on_complete()

    def request(self, n: int) -> None:
        assert self._upstream is not None
        self._upstream.request(n)

    def cancel(self) -> None:
        self._end()
        assert self._upstream is not None
        self._upstream.cancel()


class SerialChecker(Subscriber[T], Generic[T]):
    """Wraps a Subscriber and counts overlapping signals (rule 1.3 says there are none)."""

    def __init__(self, inner: Subscriber[T]) -> None:
        self.inner = inner
        self.overlaps = 0
        self._busy = threading.Lock()

    def _enter(self) -> None:
        if not self._busy.acquire(blocking=False):
            self.overlaps += 1
            self._busy.acquire()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.inner.on_subscribe(subscription)

    def on_next(self, item: T) -> None:
        self._enter()
        try:
            self.inner.on_next(item)
        finally:
            self._busy.release()

    def on_error(self, error: BaseException) -> None:
        self._enter()
        try:
            self.inner.on_error(error)
        finally:
            self._busy.release()

    def on_complete(self) -> None:
        self._enter()
        try:
            self.inner.on_complete()
        finally:
            self._busy.release()


def drive(flow: Publisher[T], requests: Sequence[int]) -> RecordingSubscriber[T]:
    """Subscribe, make ``requests`` one by one checking rule 1.1 after each, then ask for the rest."""
    subscriber: RecordingSubscriber[T] = RecordingSubscriber()
    flow.subscribe(subscriber)
    total = 0
    for n in requests:
        if subscriber.done:
            break
        subscriber.request(n)
        total += n
        assert len(subscriber.items) <= total, f"rule 1.1: {len(subscriber.items)} items, {total} requested"
    if not subscriber.done:
        subscriber.request(demand.UNBOUNDED)
    subscriber.await_done()
    return subscriber


def requesting(subscriber: RecordingSubscriber[Any], n: int, times: int) -> Callable[[], None]:
    """A thread target that calls ``subscriber.request(n)`` ``times`` times."""

    def run() -> None:
        for _ in range(times):
            subscriber.request(n)

    return run
