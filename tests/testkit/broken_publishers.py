"""Publishers for testing the TCK itself: correct twins, and ones broken on purpose.

:class:`SyncPublisher` is a small correct synchronous publisher (a trampolined drain loop).
Each ``Broken*`` class changes exactly one thing in it so that one rule breaks; the
tests in ``test_publisher_verification.py`` check that the named TCK case fails for it
while it passes for the twin. :class:`ThreadedPublisher` and :class:`LoopPublisher` are
correct *asynchronous* publishers (an executor; an asyncio loop in another thread), to
show the TCK never assumes synchronous delivery.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import report_unhandled
from rstreams.tck import PublisherVerification, TestEnvironment
from testkit import patience

MAX = 2**63 - 1


def _illegal(n: object) -> bool:
    return not isinstance(n, int) or isinstance(n, bool) or n <= 0


class SyncPublisher(Publisher[int]):
    """Correct: emits 0..elements-1 lazily on the caller's thread; ``elements == MAX`` is endless."""

    def __init__(self, elements: int) -> None:
        self.elements = elements

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        self.subscription_type(self, subscriber).start()

    @property
    def subscription_type(self) -> type[SyncSubscription]:
        return SyncSubscription


class SyncSubscription(Subscription):
    """One subscription of a :class:`SyncPublisher`; each method is a hook a broken twin overrides."""

    def __init__(self, publisher: SyncPublisher, subscriber: Subscriber[int]) -> None:
        self.publisher = publisher
        self.subscriber: Subscriber[int] | None = subscriber
        self.next = 0
        self.demand = 0
        self.draining = False
        self.done = False
        self.error: BaseException | None = None

    def start(self) -> None:
        assert self.subscriber is not None
        self.subscriber.on_subscribe(self)
        if self.publisher.elements == 0 and not self.done:
            self.complete()

    def add_demand(self, n: int) -> None:
        self.demand = min(self.demand + n, MAX)

    def request(self, n: int) -> None:
        if self.done:
            return
        if _illegal(n):
            self.error = ValueError(f"rule 3.9: non-positive subscription request: {n}")
        else:
            self.add_demand(n)
        if not self.draining:
            self.drain()

    def drain(self) -> None:
        self.draining = True
        try:
            while not self.done:
                if self.error is not None:
                    self.fail(self.error)
                    return
                if self.demand == 0:
                    return
                if self.demand != MAX:
                    self.demand -= 1
                self.emit()
        finally:
            self.draining = False

    def emit(self) -> None:
        item, self.next = self.next, self.next + 1
        assert self.subscriber is not None
        self.subscriber.on_next(item)
        if self.next == self.publisher.elements and not self.done:
            self.complete()

    def complete(self) -> None:
        subscriber, self.subscriber, self.done = self.subscriber, None, True
        if subscriber is not None:
            subscriber.on_complete()

    def fail(self, error: BaseException) -> None:
        subscriber, self.subscriber, self.done = self.subscriber, None, True
        if subscriber is not None:
            subscriber.on_error(error)

    def cancel(self) -> None:
        self.done = True
        self.subscriber = None


class FailedPublisher(Publisher[int]):
    """Correct failed publisher: ``on_subscribe``, then ``on_error``."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscription = SyncSubscription(SyncPublisher(0), subscriber)
        subscriber.on_subscribe(subscription)
        subscription.fail(RuntimeError("this publisher always fails"))


# -- broken on purpose, one rule each ------------------------------------------------------


def _publisher_with(subscription: type[SyncSubscription]) -> type[SyncPublisher]:
    class Broken(SyncPublisher):
        @property
        def subscription_type(self) -> type[SyncSubscription]:
            return subscription

    Broken.__name__ = Broken.__qualname__ = subscription.__name__.replace("Subscription", "Publisher")
    return Broken


class OverDeliveringSubscription(SyncSubscription):
    """Rule 1.1: sends one element more than requested."""

    def add_demand(self, n: int) -> None:
        super().add_demand(n + 1)


class EagerSubscription(SyncSubscription):
    """Rule 1.1: sends an element as soon as it subscribes, without a request."""

    def start(self) -> None:
        super().start()
        if not self.done:
            self.emit()


class SignalsAfterCompleteSubscription(SyncSubscription):
    """Rule 1.7: a request after on_complete signals on_complete again."""

    def complete(self) -> None:
        self.done = True
        if self.subscriber is not None:
            self.subscriber.on_complete()  # keeps the subscriber

    def request(self, n: int) -> None:
        if self.done and self.subscriber is not None:
            self.subscriber.on_complete()
            return
        super().request(n)


class NeverCompletesSubscription(SyncSubscription):
    """Rules 1.2/1.5: after the last element it goes quiet instead of signalling on_complete."""

    def emit(self) -> None:
        if self.next >= self.publisher.elements:
            self.demand = 0
        else:
            super().emit()

    def complete(self) -> None:
        pass


class AcceptsZeroSubscription(SyncSubscription):
    """Rule 3.9: ignores request(0) and negative requests."""

    def request(self, n: int) -> None:
        if not _illegal(n):
            super().request(n)


class RaisesOnBadRequestSubscription(SyncSubscription):
    """Rules 3.9/3.16: raises from request(0) instead of signalling on_error."""

    def request(self, n: int) -> None:
        if _illegal(n):
            raise ValueError("rule 3.9: non-positive subscription request")
        super().request(n)


class WrongErrorTypeSubscription(SyncSubscription):
    """Rule 3.9: signals RuntimeError instead of ValueError for request(0)."""

    def request(self, n: int) -> None:
        if _illegal(n) and not self.done:
            self.fail(RuntimeError("bad request"))
            return
        super().request(n)


class UnhelpfulMessageSubscription(SyncSubscription):
    """Rule 3.9 (optional part): a ValueError whose message does not say what was wrong."""

    def request(self, n: int) -> None:
        if _illegal(n) and not self.done:
            self.fail(ValueError("nope"))
            return
        super().request(n)


class RecursiveSubscription(SyncSubscription):
    """Rule 3.3: no trampoline; request() inside on_next emits recursively."""

    def request(self, n: int) -> None:
        if self.done:
            return
        self.add_demand(n)
        while self.demand > 0 and not self.done:
            self.demand -= 1
            self.emit()


class RejectsReentrantRequestSubscription(SyncSubscription):
    """Rule 3.2: request() from inside a signal raises."""

    def request(self, n: int) -> None:
        if self.draining:
            raise RuntimeError("re-entrant request() is not supported")
        super().request(n)


class OverflowErrorSubscription(SyncSubscription):
    """Rule 3.17: demand adding up beyond 2**63 - 1 is an error instead of saturating.

    (It sums every request ever made, so the sum grows whether or not a synchronous
    publisher has already delivered.)
    """

    total = 0

    def overflows(self, total: int) -> bool:
        return total > MAX

    def add_demand(self, n: int) -> None:
        self.total += n
        if self.overflows(self.total):
            self.error = ArithmeticError(f"demand overflow: {self.total} requested in total")
        else:
            super().add_demand(n)


class OffByOneCapSubscription(OverflowErrorSubscription):
    """Rule 3.17: demand adding up to exactly 2**63 - 1 is taken as an overflow."""

    def overflows(self, total: int) -> bool:
        return total >= MAX


class IgnoresCancelSubscription(SyncSubscription):
    """Rule 3.6: cancel() does nothing; later requests still deliver."""

    def cancel(self) -> None:
        pass


class FlushesOnCancelSubscription(SyncSubscription):
    """Rule 3.12: cancel() sends all remaining elements, regardless of demand."""

    def cancel(self) -> None:
        while not self.done and self.next < self.publisher.elements:
            self.emit()
        super().cancel()


class CancelTwiceRaisesSubscription(SyncSubscription):
    """Rule 3.7: a second cancel() raises."""

    def cancel(self) -> None:
        if getattr(self, "cancelled", False):
            raise RuntimeError("already cancelled")
        self.cancelled = True
        super().cancel()


class DoubleOnSubscribeSubscription(SyncSubscription):
    """Rule 2.12: calls on_subscribe twice."""

    def start(self) -> None:
        assert self.subscriber is not None
        self.subscriber.on_subscribe(self)
        super().start()


class CompletesFirstSubscription(SyncSubscription):
    """Rule 1.9: an empty stream signals on_complete before on_subscribe."""

    def start(self) -> None:
        subscriber = self.subscriber
        assert subscriber is not None
        if self.publisher.elements == 0:
            subscriber.on_complete()
        self.done = True
        subscriber.on_subscribe(self)


class BlockingSubscription(SyncSubscription):
    """Rule 3.4 gone wrong: request() blocks (a deadlock) until ``release`` is set."""

    release = threading.Event()

    def request(self, n: int) -> None:
        self.release.wait()
        super().request(n)


OverDeliveringPublisher = _publisher_with(OverDeliveringSubscription)
BlockingPublisher = _publisher_with(BlockingSubscription)
EagerPublisher = _publisher_with(EagerSubscription)
SignalsAfterCompletePublisher = _publisher_with(SignalsAfterCompleteSubscription)
NeverCompletesPublisher = _publisher_with(NeverCompletesSubscription)
AcceptsZeroPublisher = _publisher_with(AcceptsZeroSubscription)
RaisesOnBadRequestPublisher = _publisher_with(RaisesOnBadRequestSubscription)
WrongErrorTypePublisher = _publisher_with(WrongErrorTypeSubscription)
UnhelpfulMessagePublisher = _publisher_with(UnhelpfulMessageSubscription)
RecursivePublisher = _publisher_with(RecursiveSubscription)
RejectsReentrantRequestPublisher = _publisher_with(RejectsReentrantRequestSubscription)
OverflowErrorPublisher = _publisher_with(OverflowErrorSubscription)
OffByOneCapPublisher = _publisher_with(OffByOneCapSubscription)
IgnoresCancelPublisher = _publisher_with(IgnoresCancelSubscription)
FlushesOnCancelPublisher = _publisher_with(FlushesOnCancelSubscription)
CancelTwiceRaisesPublisher = _publisher_with(CancelTwiceRaisesSubscription)
DoubleOnSubscribePublisher = _publisher_with(DoubleOnSubscribeSubscription)
CompletesFirstPublisher = _publisher_with(CompletesFirstSubscription)


class AcceptsNonePublisher(SyncPublisher):
    """Rule 1.9: subscribe(None) returns normally."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is not None:
            super().subscribe(subscriber)


class AttributeErrorOnNonePublisher(SyncPublisher):
    """Rule 1.9: subscribe(None) fails with AttributeError instead of TypeError."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_subscribe(SyncSubscription(self, subscriber))


class KeepsSubscribersPublisher(SyncPublisher):
    """Rule 3.13: remembers every subscriber forever."""

    def __init__(self, elements: int) -> None:
        super().__init__(elements)
        self.seen: list[Subscriber[int]] = []

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        self.seen.append(subscriber)
        super().subscribe(subscriber)


class ErrorWithoutOnSubscribePublisher(Publisher[int]):
    """Rules 1.9/1.4: a failed publisher that calls on_error without on_subscribe."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscriber.on_error(RuntimeError("this publisher always fails"))


class RaisingFailedPublisher(Publisher[int]):
    """Rules 1.9/1.4: a failed publisher that raises from subscribe()."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        raise RuntimeError("this publisher always fails, loudly")


class SilentFailedPublisher(Publisher[int]):
    """Rule 1.4: a failed publisher that calls on_subscribe and then never on_error."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscriber.on_subscribe(SyncSubscription(SyncPublisher(0), subscriber))


class ConcurrentPublisher(Publisher[int]):
    """Rule 1.3: every requested element is delivered from a new thread, which request()
    joins, so the next on_next runs while the previous one is still on the stack."""

    def __init__(self, elements: int) -> None:
        self.elements = elements

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        state = {"next": 0}
        elements = self.elements

        class _Subscription(Subscription):
            def request(self, n: int) -> None:
                def deliver() -> None:
                    if state["next"] < elements:
                        state["next"] += 1
                        subscriber.on_next(state["next"] - 1)
                    elif state["next"] == elements:
                        state["next"] += 1
                        subscriber.on_complete()

                worker = threading.Thread(target=deliver)
                worker.start()
                worker.join()

            def cancel(self) -> None:
                state["next"] = elements + 1

        subscriber.on_subscribe(_Subscription())


# -- correct asynchronous twins --------------------------------------------------------------


class ThreadedPublisher(Publisher[int]):
    """Correct and asynchronous: each subscription is an actor run by an executor's threads.

    Signals go into a queue; one executor task at a time processes it (rule 1.3), so
    ``request`` from inside ``on_next`` never recurses (3.3).
    """

    def __init__(self, elements: int, executor: concurrent.futures.Executor) -> None:
        self.elements = elements
        self.executor = executor

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        _Actor(self.elements, self.executor, subscriber).post(("subscribe", 0))


class _Actor(Subscription):
    def __init__(
        self, elements: int, executor: concurrent.futures.Executor, subscriber: Subscriber[int]
    ) -> None:
        self.elements = elements
        self.executor = executor
        self.subscriber: Subscriber[int] | None = subscriber
        self.inbox: deque[tuple[str, Any]] = deque()
        self.lock = threading.Lock()
        self.running = False
        self.done = False
        self.demand = 0
        self.next = 0

    def post(self, signal: tuple[str, Any]) -> None:
        with self.lock:
            self.inbox.append(signal)
            if self.running:
                return
            self.running = True
        self.executor.submit(self.run)

    def request(self, n: int) -> None:
        self.post(("request", n))

    def cancel(self) -> None:
        self.done = True
        self.post(("cancel", None))

    def run(self) -> None:
        while True:
            with self.lock:
                if not self.inbox:
                    self.running = False
                    return
                kind, value = self.inbox.popleft()
            self.handle(kind, value)

    def handle(self, kind: str, value: Any) -> None:
        subscriber = self.subscriber
        if subscriber is None:
            return
        if kind == "cancel":
            self.subscriber = None
        elif kind == "subscribe":
            subscriber.on_subscribe(self)
            if self.elements == 0:
                self.terminate(None)
        elif not self.done:
            if _illegal(value):
                self.terminate(ValueError(f"rule 3.9: non-positive subscription request: {value}"))
                return
            self.demand = min(self.demand + value, MAX)
            while self.demand > 0 and not self.done:
                self.demand -= 1
                self.next += 1
                subscriber.on_next(self.next - 1)
                if self.next == self.elements:
                    self.terminate(None)

    def terminate(self, error: BaseException | None) -> None:
        subscriber, self.subscriber, self.done = self.subscriber, None, True
        if subscriber is None:
            return
        if error is None:
            subscriber.on_complete()
        else:
            subscriber.on_error(error)


class LoopThread:
    """An asyncio event loop running in a daemon thread, for :class:`LoopPublisher`."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="tck-loop", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(5)
        self.loop.close()


class LoopPublisher(Publisher[int]):
    """Correct and asynchronous: every signal is sent from an asyncio loop in another thread."""

    def __init__(self, elements: int, loop: asyncio.AbstractEventLoop) -> None:
        self.elements = elements
        self.loop = loop

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscription = _LoopSubscription(self.elements, self.loop, subscriber)
        self.loop.call_soon_threadsafe(subscription.start)


class _LoopSubscription(Subscription):
    def __init__(self, elements: int, loop: asyncio.AbstractEventLoop, subscriber: Subscriber[int]) -> None:
        self.elements = elements
        self.loop = loop
        self.subscriber: Subscriber[int] | None = subscriber
        self.demand = 0
        self.next = 0

    def start(self) -> None:
        if self.subscriber is not None:
            self.subscriber.on_subscribe(self)
            if self.elements == 0:
                self.terminate(None)

    def request(self, n: int) -> None:
        self.loop.call_soon_threadsafe(self._request, n)

    def cancel(self) -> None:
        self.subscriber = None  # dropped at once; pending callbacks find nobody (rule 3.13)

    def _request(self, n: int) -> None:
        if self.subscriber is None:
            return
        if _illegal(n):
            self.terminate(ValueError(f"rule 3.9: non-positive subscription request: {n}"))
            return
        self.demand = min(self.demand + n, MAX)
        self._emit()

    def _emit(self) -> None:
        budget = 64  # then yield to the loop, so one endless stream cannot starve others
        while self.demand > 0 and self.subscriber is not None and budget:
            budget -= 1
            self.demand -= 1
            self.next += 1
            self.subscriber.on_next(self.next - 1)
            if self.next == self.elements:
                self.terminate(None)
        if self.demand > 0 and self.subscriber is not None:
            self.loop.call_soon(self._emit)

    def terminate(self, error: BaseException | None) -> None:
        subscriber, self.subscriber = self.subscriber, None
        if subscriber is None:
            return
        if error is None:
            subscriber.on_complete()
        else:
            subscriber.on_error(error)


class DelayedPublisher(Publisher[int]):
    """Correct: adds demand on the caller's thread and delivers 20 ms later from a timer thread.

    Requests made in quick succession therefore accumulate before anything is delivered,
    which is what the rule-3.17 cumulative case needs to see a broken demand counter.
    """

    delay = 0.02

    def __init__(self, elements: int) -> None:
        self.elements = elements

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscription = _DelayedSubscription(self, subscriber)
        subscriber.on_subscribe(subscription)
        subscription.open()  # only now may the timer thread signal (rule 1.3)

    def overflows(self, demand: int) -> bool:
        return False


class _DelayedSubscription(Subscription):
    def __init__(self, publisher: DelayedPublisher, subscriber: Subscriber[int]) -> None:
        self.publisher = publisher
        self.subscriber: Subscriber[int] | None = subscriber
        self.lock = threading.Lock()
        self.demand = 0
        self.next = 0
        self.error: BaseException | None = None
        self.scheduled = False
        self.opened = False

    def open(self) -> None:
        """on_subscribe has returned: deliver what was requested meanwhile, or an empty stream's end."""
        with self.lock:
            self.opened = True
            due = self.demand > 0 or self.error is not None or self.publisher.elements == 0
        if due:
            self.schedule()

    def request(self, n: int) -> None:
        with self.lock:
            if self.subscriber is None:
                return
            if _illegal(n):
                self.error = ValueError(f"rule 3.9: non-positive subscription request: {n}")
            elif self.publisher.overflows(self.demand + n):
                self.error = ArithmeticError(f"demand overflow: {self.demand} + {n}")
            else:
                self.demand = min(self.demand + n, MAX)
        self.schedule()

    def schedule(self) -> None:
        with self.lock:
            if self.scheduled or not self.opened:
                return
            self.scheduled = True
        timer = threading.Timer(self.publisher.delay, self.deliver)
        timer.daemon = True
        timer.start()

    def cancel(self) -> None:
        with self.lock:
            self.subscriber = None

    def deliver(self) -> None:
        while True:
            with self.lock:
                subscriber = self.subscriber
                if subscriber is None:
                    return
                if self.error is not None or self.next == self.publisher.elements:
                    self.subscriber = None
                elif self.demand == 0:
                    self.scheduled = False
                    return
                else:
                    self.demand -= 1
                    self.next += 1
            if self.subscriber is None:
                if self.error is not None:
                    subscriber.on_error(self.error)
                else:
                    subscriber.on_complete()
                return
            try:
                subscriber.on_next(self.next - 1)
            except Exception as exc:  # rule 2.13: the subscription counts as cancelled
                self.cancel()
                report_unhandled(exc, "DelayedPublisher: on_next raised")
                return


class DelayedOffByOnePublisher(DelayedPublisher):
    """Rule 3.17: outstanding demand reaching exactly 2**63 - 1 is taken as an overflow."""

    def overflows(self, demand: int) -> bool:
        return demand >= MAX


# -- the rule gaps a naive TCK misses --------------------------------------------------------


class ReplacesDemandSubscription(SyncSubscription):
    """Rule 3.8: a request *replaces* the outstanding demand instead of adding to it."""

    def add_demand(self, n: int) -> None:
        self.demand = min(n, MAX)


class LosesCancelInOnNextSubscription(SyncSubscription):
    """Rules 3.12/1.8: a cancel made inside on_next (while draining) is lost; the stream floods on."""

    def cancel(self) -> None:
        if not self.draining:
            super().cancel()


class CompletesTwiceWhenEmptySubscription(SyncSubscription):
    """Rule 1.7: an empty stream signals on_complete twice, right after on_subscribe."""

    def complete(self) -> None:
        subscriber = self.subscriber
        super().complete()
        if self.publisher.elements == 0 and subscriber is not None:
            subscriber.on_complete()


class DropsReentrantRequestSubscription(SyncSubscription):
    """Rule 3.2: a request made inside on_next (while draining) is silently dropped; the stream stalls."""

    def request(self, n: int) -> None:
        if not self.draining:
            super().request(n)


ReplacesDemandPublisher = _publisher_with(ReplacesDemandSubscription)
DropsReentrantRequestPublisher = _publisher_with(DropsReentrantRequestSubscription)
LosesCancelInOnNextPublisher = _publisher_with(LosesCancelInOnNextSubscription)
CompletesTwiceWhenEmptyPublisher = _publisher_with(CompletesTwiceWhenEmptySubscription)


class UnicastPublisher(SyncPublisher):
    """Correct: serves its first subscriber only; later ones get on_subscribe, then on_error (1.9)."""

    def __init__(self, elements: int) -> None:
        super().__init__(elements)
        self.taken = False

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        if self.taken:
            self.reject(subscriber)
            return
        self.taken = True
        super().subscribe(subscriber)

    def reject(self, subscriber: Subscriber[int]) -> None:
        FailedPublisher().subscribe(subscriber)


class SecondSubscribeRaisesPublisher(UnicastPublisher):
    """Rule 1.9: a second subscriber makes subscribe() raise instead of signalling on_error."""

    def reject(self, subscriber: Subscriber[int]) -> None:
        raise RuntimeError("this publisher serves one subscriber only")


class RunawayThreadPublisher(Publisher[int]):
    """Rules 3.12/1.8: delivers from a thread of its own and ignores cancel.

    It stops only when ``on_next`` raises, which is how the TCK contains it; ``threads``
    lets a test see that every delivery thread ended.
    """

    def __init__(self, elements: int) -> None:
        self.elements = elements
        self.threads: list[threading.Thread] = []

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscription = _RunawaySubscription()
        thread = threading.Thread(
            target=subscription.run, args=(subscriber, self.elements), name="runaway", daemon=True
        )
        self.threads.append(thread)
        RunawayThreadPublisher.all_threads.append(thread)
        thread.start()

    all_threads: list[threading.Thread] = []  # noqa: RUF012  # shared on purpose: the test's view


class _RunawaySubscription(Subscription):
    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.demand = 0

    def request(self, n: int) -> None:
        with self.cond:
            self.demand = min(self.demand + n, MAX) if n > 0 else self.demand
            self.cond.notify_all()

    def cancel(self) -> None:
        pass  # the bug

    def run(self, subscriber: Subscriber[int], elements: int) -> None:
        subscriber.on_subscribe(self)
        for i in range(elements):
            with self.cond:
                if not patience.wait_for(self.cond, lambda: self.demand > 0, 0.5):
                    return  # nobody asks any more (0.5 s of own time): end quietly
                if self.demand != MAX:
                    self.demand -= 1
            try:
                subscriber.on_next(i)
            except Exception:
                return  # rule 2.13: a subscriber that raises is cancelled; the only exit
        subscriber.on_complete()


class CompletesAgainLaterPublisher(SyncPublisher):
    """Rule 1.7, late: remembers every subscriber it completed in :data:`COMPLETED_EARLIER`, for a
    test to signal ``on_complete`` to once more after the case that made it has ended."""

    @property
    def subscription_type(self) -> type[SyncSubscription]:
        return _RemembersCompleted


COMPLETED_EARLIER: list[Subscriber[int]] = []


class _RemembersCompleted(SyncSubscription):
    def complete(self) -> None:
        if self.subscriber is not None:
            COMPLETED_EARLIER.append(self.subscriber)
        super().complete()


class CompletesOnHugeDemandSubscription(SyncSubscription):
    """Rule 3.17: takes a request of 2**62 or more as 'everything' and completes at once."""

    def request(self, n: int) -> None:
        if not self.done and not _illegal(n) and n >= 2**62:
            self.complete()
            return
        super().request(n)


CompletesOnHugeDemandPublisher = _publisher_with(CompletesOnHugeDemandSubscription)


class FailsAgainOnRequestPublisher(Publisher[int]):
    """Rule 1.7 (1.6): a failed publisher whose subscription signals on_error again on each request."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        error = RuntimeError("this publisher always fails")

        class Again(Subscription):
            def request(self, n: int) -> None:
                subscriber.on_error(error)

            def cancel(self) -> None:
                pass

        subscriber.on_subscribe(Again())
        subscriber.on_error(error)


class RaisesOnRequestFailedPublisher(Publisher[int]):
    """Rule 3.16 (3.6): a failed publisher whose subscription raises when asked for elements."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")

        class Refuses(Subscription):
            def request(self, n: int) -> None:
                raise RuntimeError("this publisher has failed")

            def cancel(self) -> None:
                pass

        subscriber.on_subscribe(Refuses())
        subscriber.on_error(RuntimeError("this publisher always fails"))


class CancelRaisesAfterCompleteSubscription(SyncSubscription):
    """Rules 3.15 and 3.7: once it has completed, cancel() raises instead of being a no-op."""

    ended = False

    def complete(self) -> None:
        self.ended = True
        super().complete()

    def cancel(self) -> None:
        if self.ended:
            raise RuntimeError("already completed")
        super().cancel()


CancelRaisesAfterCompletePublisher = _publisher_with(CancelRaisesAfterCompleteSubscription)


class CancelRaisesFailedPublisher(Publisher[int]):
    """Rule 3.15 (3.7): a failed publisher whose subscription raises on cancel() after on_error."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")

        class Ended(Subscription):
            def request(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                raise RuntimeError("already failed")

        subscriber.on_subscribe(Ended())
        subscriber.on_error(RuntimeError("this publisher always fails"))


class CompletesAgainOnCancelPublisher(SyncPublisher):
    """Rules 1.7 and 3.7: a ``cancel()`` after the stream completed signals ``on_complete`` again.

    The TCK cancels every subscription when a case ends, so the second ``on_complete`` comes
    at a point the run fixes, after the case stopped watching: the late breach of the last
    case of a run, with no timer.
    """

    @property
    def subscription_type(self) -> type[SyncSubscription]:
        return _CompletesAgainOnCancel


class _CompletesAgainOnCancel(SyncSubscription):
    completed: Subscriber[int] | None = None

    def complete(self) -> None:
        self.completed = self.subscriber
        super().complete()

    def cancel(self) -> None:
        super().cancel()
        if self.completed is not None:
            self.completed.on_complete()


class PerElementTaskPublisher(SyncPublisher):
    """Rule 1.3: each signal is its own task on a pool of four threads, so signals overlap.

    Demand is counted correctly (under a lock) and the tasks are submitted in order; only the
    serialisation is missing, the classic way an executor-based publisher goes wrong. The
    stochastic case seldom sees it (it asks for one element at a time, from inside on_next);
    the other cases do, because the TCK's subscribers check rule 1.3 themselves. An endless
    stream (``elements == 2**63 - 1``) submits tasks without end: give it a bounded one.
    """

    @property
    def subscription_type(self) -> type[SyncSubscription]:
        return _TaskPerSignal


_SIGNAL_TASKS = concurrent.futures.ThreadPoolExecutor(4, thread_name_prefix="signal-task")


class _TaskPerSignal(SyncSubscription):
    def __init__(self, publisher: SyncPublisher, subscriber: Subscriber[int]) -> None:
        super().__init__(publisher, subscriber)
        self.lock = threading.RLock()

    def request(self, n: int) -> None:
        with self.lock:
            super().request(n)

    def cancel(self) -> None:
        with self.lock:
            super().cancel()

    def emit(self) -> None:
        item, self.next = self.next, self.next + 1
        assert self.subscriber is not None
        _SIGNAL_TASKS.submit(self.subscriber.on_next, item)
        if self.next == self.publisher.elements and not self.done:
            self.complete()

    def complete(self) -> None:
        subscriber, self.subscriber, self.done = self.subscriber, None, True
        if subscriber is not None:
            _SIGNAL_TASKS.submit(subscriber.on_complete)

    def fail(self, error: BaseException) -> None:
        subscriber, self.subscriber, self.done = self.subscriber, None, True
        if subscriber is not None:
            _SIGNAL_TASKS.submit(subscriber.on_error, error)


class SetsUpAfterOnSubscribeSubscription(SyncSubscription):
    """Rules 3.12/1.8: holds delivery while ``on_subscribe`` runs, then sets its state up afresh,
    so a ``cancel()`` made inside ``on_subscribe`` is forgotten and the requested stream floods."""

    def start(self) -> None:
        subscriber = self.subscriber
        assert subscriber is not None
        self.draining = True  # nothing is delivered until on_subscribe has returned
        subscriber.on_subscribe(self)
        self.draining = False
        self.done, self.subscriber = False, subscriber  # the "set-up": what cancel() did is undone
        if self.publisher.elements == 0:
            self.complete()
        elif self.demand:
            self.drain()


SetsUpAfterOnSubscribePublisher = _publisher_with(SetsUpAfterOnSubscribeSubscription)


class MessageNotExceptionFailedPublisher(Publisher[int]):
    """Rule 1.4: a failed publisher that signals on_error with a message string, not an exception."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        subscription = SyncSubscription(SyncPublisher(0), subscriber)
        subscription.done = True
        subscriber.on_subscribe(subscription)
        subscriber.on_error("this publisher always fails")  # type: ignore[arg-type]


# -- verifications of a Publisher class ------------------------------------------------------


class PublisherOf(PublisherVerification):
    """The publisher verification of ``cls`` with a 300 ms default timeout, or ``default_timeout``
    seconds (no failed publisher)."""

    def __init__(self, cls: Callable[[int], Publisher[int]], *, default_timeout: float = 0.3) -> None:
        self.cls = cls
        self.default_timeout = default_timeout

    def create_publisher(self, elements: int) -> Publisher[int]:
        return self.cls(elements)

    def create_failed_publisher(self) -> Publisher[int] | None:
        return None

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(default_timeout=self.default_timeout, default_no_signals_timeout=0.03)


def publisher_with(subscription: type[SyncSubscription]) -> type[SyncPublisher]:
    """A SyncPublisher with ``subscription`` subscriptions, named after it (``_Foo``: ``FooPublisher``)."""

    class Made(SyncPublisher):
        @property
        def subscription_type(self) -> type[SyncSubscription]:
            return subscription

    Made.__name__ = Made.__qualname__ = subscription.__name__.lstrip("_") + "Publisher"
    return Made
