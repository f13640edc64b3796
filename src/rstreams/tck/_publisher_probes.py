"""Hand-written subscribers that some PublisherVerification cases need.

Each records what it sees and every rule breach it can detect on the environment (never
raising into the publisher), and exposes :class:`~rstreams.tck._env.Latch` objects the
test thread waits on. All are safe to drive from any thread.
"""

from __future__ import annotations

import threading
from typing import Any

from rstreams.api import Subscription
from rstreams.demand import UNBOUNDED
from rstreams.tck._env import BlackholeSubscriber, Latch, ManualSubscriber, TestEnvironment, TestSubscriber

__all__ = [
    "DemandFlooder",
    "FailedPublisherProbe",
    "OnSubscribeFirstProbe",
    "RecursionProbe",
    "ReentrantRequester",
    "SerialSignalProbe",
]


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class OnSubscribeFirstProbe(TestSubscriber[Any]):
    """Rule 1.9: ``on_subscribe`` exactly once and before any other signal."""

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if not self.subscription.try_complete(subscription):
            self.env.record_failure("rule 1.9: on_subscribe was called twice for one subscribe()")

    def _check(self, signal: str) -> None:
        if not self.subscription.is_completed:
            self.env.record_failure(f"rule 1.9: {signal} was signalled before on_subscribe")

    def on_next(self, item: Any) -> None:
        self._check(f"on_next({item!r})")
        self.env.record_failure(f"rule 1.1: on_next({item!r}) although nothing was requested")

    def on_error(self, error: BaseException) -> None:
        self._check(f"on_error({_describe(error)})")

    def on_complete(self) -> None:
        self._check("on_complete()")


class FailedPublisherProbe(TestSubscriber[Any]):
    """Rules 1.4 and 1.9: a failed publisher signals ``on_subscribe``, then ``on_error``, once each."""

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self.subscribed = Latch(env)
        self.errored = Latch(env)

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if not self.subscription.try_complete(subscription):
            self.env.record_failure("rule 1.9: on_subscribe was called twice for one subscribe()")
        self.subscribed.close()

    def on_next(self, item: Any) -> None:
        self.env.record_failure(
            f"rule 1.4: a failed publisher signalled on_next({item!r}); expected on_error"
        )

    def on_complete(self) -> None:
        self.env.record_failure("rule 1.4: a failed publisher signalled on_complete(); expected on_error")

    def on_error(self, error: BaseException) -> None:
        if error is None:
            raise TypeError("rule 2.13: on_error(None)")
        if not self.subscribed.is_closed:
            self.env.record_failure(
                f"rule 1.9: on_error({_describe(error)}) came before on_subscribe; a publisher that "
                "rejects a subscriber must call on_subscribe first, then on_error"
            )
        if self.errored.is_closed:
            self.env.record_failure(f"rule 1.7: on_error was signalled twice (again {_describe(error)})")
        self.errored.close()


class SerialSignalProbe(TestSubscriber[Any]):
    """Rule 1.3: no two threads inside this subscriber's signal methods at the same time.

    Requests 1 in ``on_subscribe`` and 1 more inside every ``on_next`` (one more than the
    stream holds, for publishers that notice the end only when asked). Re-entry on the
    same thread is allowed; overlap between threads is recorded.
    """

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self.done = Latch(env)
        self._lock = threading.Lock()
        self._owner: int | None = None
        self._inside = ""
        self._depth = 0

    def _enter(self, signal: str) -> bool:
        me = threading.get_ident()
        with self._lock:
            if self._owner is not None and self._owner != me:
                inside = self._inside
                owner = self._owner
            else:
                self._owner, self._depth = me, self._depth + 1
                self._inside = signal
                return True
        self.env.record_failure(
            f"rule 1.3: {signal} entered on thread {me} while thread {owner} was still inside {inside};"
            " signals must be serial"
        )
        return False

    def _exit(self, owned: bool) -> None:
        if owned:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None

    def on_subscribe(self, subscription: Subscription) -> None:
        owned = self._enter("on_subscribe")
        try:
            if self.subscription.try_complete(subscription):
                subscription.request(1)
        finally:
            self._exit(owned)

    def on_next(self, item: Any) -> None:
        owned = self._enter(f"on_next({item!r})")
        try:
            self.subscription.value.request(1)
        finally:
            self._exit(owned)

    def on_complete(self) -> None:
        owned = self._enter("on_complete")
        self.done.close()
        self._exit(owned)

    def on_error(self, error: BaseException) -> None:
        owned = self._enter("on_error")
        self.env.record_async_error(error)
        self.done.close()
        self._exit(owned)


class RecursionProbe(TestSubscriber[Any]):
    """Rule 3.3: counts how deeply ``on_next`` nests on one thread via ``request`` inside it.

    The depth is thread-local, so a publisher that delivers from another thread or from an
    event loop never nests. Requests 1 at the start and 1 inside each ``on_next`` until
    ``elements`` have arrived; ``finished`` closes then, or at a terminal signal.
    """

    def __init__(self, env: TestEnvironment, bound: int, elements: int) -> None:
        super().__init__(env)
        self.bound = bound
        self.elements = elements
        self.finished = Latch(env)
        self.received = 0
        self._depth = threading.local()

    def on_subscribe(self, subscription: Subscription) -> None:
        if self.subscription.try_complete(subscription):
            subscription.request(1)

    def on_next(self, item: Any) -> None:
        depth = getattr(self._depth, "value", 0) + 1
        self._depth.value = depth
        try:
            if depth > self.bound:
                self.env.record_failure(
                    f"rule 3.3: on_next was called {depth} levels deep on one thread (allowed: {self.bound});"
                    " a publisher must not call on_next from inside request() without bound - trampoline"
                )
            self.received += 1
            if self.received >= self.elements:
                self.finished.close()
            else:
                self.subscription.value.request(1)
        finally:
            self._depth.value = depth - 1

    def on_complete(self) -> None:
        self.finished.close()

    def on_error(self, error: BaseException) -> None:
        self.env.record_async_error(error)
        self.finished.close()


class ReentrantRequester(ManualSubscriber[Any]):
    """Rule 3.2: requests 1 three times inside ``on_subscribe``, then 1 inside each ``on_next``
    until ``elements`` have been requested (so an endless publisher also stops)."""

    def __init__(self, env: TestEnvironment, elements: int) -> None:
        super().__init__(env)
        self.elements = elements

    def _request_inside(self, where: str) -> None:
        try:
            self.request(1)
        except Exception as exc:
            self.env.record_failure(
                f"rule 3.2: request(1) called synchronously from {where} raised {_describe(exc)}"
            )

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        for _ in range(3):
            self._request_inside("on_subscribe")

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        if self.requested < self.elements:
            self._request_inside("on_next")


class DemandFlooder(BlackholeSubscriber[Any]):
    """Rule 3.17: requests 1, then ``2**63 - 2`` from inside each of 10 ``on_next`` calls, then cancels."""

    floods = 10

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self.cancelled = Latch(env)
        self.calls = 0

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        self.request(1)

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        self.calls += 1
        if self.calls <= self.floods:
            self.request(UNBOUNDED - 1)
        elif not self.cancelled.is_closed:
            self.cancelled.close()
            self.cancel()
