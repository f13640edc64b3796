"""Hand-written subscribers that some PublisherVerification cases need.

Each records what it sees and every rule breach it can detect on the environment (never
raising into the publisher), and exposes :class:`~rstreams.tck._env.Latch` objects the
test thread waits on. All are safe to drive from any thread. Every one notices a signal
after a terminal one (rule 1.7) and counts elements after its own cancel (rule 3.12); a
``request`` it makes from inside a signal that raises is recorded as a rule-3.2 failure.
"""

from __future__ import annotations

import threading
from typing import Any

from rstreams.api import Subscription
from rstreams.demand import UNBOUNDED
from rstreams.tck._env import Latch, TestEnvironment
from rstreams.tck._failures import RaisedOnPurpose
from rstreams.tck._registry import StreamAbandoned, TCKFailure
from rstreams.tck._test_subscribers import (
    BlackholeSubscriber,
    ManualSubscriber,
    TestSubscriber,
    not_an_exception,
)

__all__ = [
    "CancelInsideOnNext",
    "CancelInsideOnSubscribe",
    "DemandFlooder",
    "FailedPublisherProbe",
    "OnSubscribeFirstProbe",
    "OverlappingRequester",
    "RaiseInsideOnNext",
    "RecursionProbe",
    "ReentrantRequester",
    "SerialSignalProbe",
]


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class _Terminals:
    """Rule 1.7 for the probes: remembers the first terminal signal and reports any signal after it."""

    def __init__(self, env: TestEnvironment) -> None:
        self._env = env
        self.first: str | None = None

    def signal(self, signal: str, *, terminal: bool) -> None:
        if self.first is not None:
            self._env.record_failure(f"rule 1.7: {signal} after {self.first}")
        elif terminal:
            self.first = signal


def request_inside(subscriber: TestSubscriber[Any], n: int, where: str) -> bool:
    """``subscriber.request(n)`` from inside a signal; a raise is recorded (rule 3.2).

    Returns whether the call returned normally.
    """
    try:
        subscriber.subscription.value.request(n)
    except (TCKFailure, StreamAbandoned):
        raise
    except Exception as exc:
        subscriber.env.record_failure(
            f"rule 3.2: request({n}) called synchronously from inside {where} raised {_describe(exc)};"
            " a publisher must allow it"
        )
        return False
    return True


class OnSubscribeFirstProbe(TestSubscriber[Any]):
    """Rule 1.9: ``on_subscribe`` exactly once and before any other signal; nothing after a terminal (1.7)."""

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self.terminals = _Terminals(env)

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if not self.subscription.try_complete(subscription):
            self.env.record_failure(
                "rule 2.12: on_subscribe was called twice for one subscribe(); at most once per Subscriber"
            )

    def _check(self, signal: str, *, terminal: bool) -> None:
        if not self.subscription.is_completed:
            self.env.record_failure(f"rule 1.9: {signal} was signalled before on_subscribe")
        self.terminals.signal(signal, terminal=terminal)

    # after the case ended too: what is recorded then is a late breach (TestEnvironment.close)
    def on_next(self, item: Any) -> None:
        self._element_arrived()
        self._check(f"on_next({item!r})", terminal=False)
        self.env.record_failure(f"rule 1.1: on_next({item!r}) from an empty stream")

    def on_error(self, error: BaseException) -> None:
        self._signal_arrived()
        self._check(f"on_error({_describe(error)})", terminal=True)

    def on_complete(self) -> None:
        self._signal_arrived()
        self._check("on_complete()", terminal=True)


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
            self.env.record_failure(
                "rule 2.12: on_subscribe was called twice for one subscribe(); at most once per Subscriber"
            )
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
        odd = not_an_exception(error)
        if odd is not None:
            self.env.record_failure(odd)
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
        self.terminals = _Terminals(env)
        self.requested = 0
        self.received = 0
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
                self.requested += 1
                request_inside(self, 1, "on_subscribe")
        finally:
            self._exit(owned)

    def on_next(self, item: Any) -> None:
        if not self._element_arrived():
            return
        owned = self._enter(f"on_next({item!r})")
        try:
            self.received += 1
            self.terminals.signal(f"on_next({item!r})", terminal=False)
            self.requested += 1
            request_inside(self, 1, f"on_next #{self.received}")
        finally:
            self._exit(owned)

    def on_complete(self) -> None:
        if not self._signal_arrived():
            return
        owned = self._enter("on_complete")
        self.terminals.signal("on_complete()", terminal=True)
        self.done.close()
        self._exit(owned)

    def on_error(self, error: BaseException) -> None:
        if not self._signal_arrived():
            return
        owned = self._enter("on_error")
        self.terminals.signal(f"on_error({_describe(error)})", terminal=True)
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
        self.terminals = _Terminals(env)
        self._depth = threading.local()

    def on_subscribe(self, subscription: Subscription) -> None:
        if self.subscription.try_complete(subscription):
            request_inside(self, 1, "on_subscribe")

    def on_next(self, item: Any) -> None:
        if not self._element_arrived():
            return
        self.terminals.signal(f"on_next({item!r})", terminal=False)
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
                request_inside(self, 1, f"on_next #{self.received}")
        finally:
            self._depth.value = depth - 1

    def on_complete(self) -> None:
        if self._signal_arrived():
            self.terminals.signal("on_complete()", terminal=True)
            self.finished.close()

    def on_error(self, error: BaseException) -> None:
        if self._signal_arrived():
            self.terminals.signal(f"on_error({_describe(error)})", terminal=True)
            self.env.record_async_error(error)
            self.finished.close()


class ReentrantRequester(ManualSubscriber[Any]):
    """Rule 3.2: requests 1 three times inside ``on_subscribe``, then 1 inside each ``on_next``
    until ``elements`` have been requested (so an endless publisher also stops)."""

    def __init__(self, env: TestEnvironment, elements: int) -> None:
        super().__init__(env)
        self.elements = elements

    def _request_inside(self, where: str) -> None:
        with self._cond:
            self.requested += 1
        request_inside(self, 1, where)

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        for _ in range(3):
            self._request_inside("on_subscribe")

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        if self.requested < self.elements and not self.closed:
            self._request_inside(f"on_next #{self.received}")


class OverlappingRequester(ManualSubscriber[Any]):
    """Rules 3.2 and 3.8: requests that overlap outstanding demand must add up.

    Inside ``on_subscribe`` it requests 1 and then 2; inside its first ``on_next`` 1 and
    then 2 again: 6 in all. However a publisher delivers (synchronously inside the first
    request, or later from another thread), at least one request of each pair arrives
    while demand is still outstanding, so a publisher that *replaces* its outstanding
    demand instead of adding to it delivers fewer than 6.
    """

    PLAN = "1 then 2 inside on_subscribe, 1 then 2 inside on_next #1"
    TOTAL = 6

    def _requests(self, where: str) -> None:
        for n in (1, 2):
            with self._cond:
                self.requested += n
            request_inside(self, n, where)

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        self._requests("on_subscribe")

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        if self.received == 1 and not self.closed:
            self._requests("on_next #1")


class CancelInsideOnNext(BlackholeSubscriber[Any]):
    """Rules 3.12/1.8: cancels from inside on_next #``at`` with (effectively) unbounded demand left.

    ``cancelled`` closes at that moment; what arrives afterwards is counted in
    :attr:`after_cancel`.
    """

    def __init__(self, env: TestEnvironment, at: int) -> None:
        super().__init__(env)
        self.at = at
        self.cancelled = Latch(env)

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        if self.received == self.at and not self.cancelled.is_closed:
            self.cancelled.close()
            self.cancel()


class RaiseInsideOnNext(BlackholeSubscriber[Any]):
    """Rules 2.13/1.8: raises from inside on_next #``at`` with (effectively) unbounded demand left.

    A Subscriber whose signal raises breaks rule 2.13, and the publisher must then consider
    its subscription cancelled: ``raised`` closes at that moment and what arrives afterwards
    is counted in :attr:`after_cancel`, as after a cancel. A terminal signal after the raise
    may trail like an element (the JVM TCK lists "a cancelled subscription should not receive
    on_error or on_complete" as untested, a SHOULD): it is noted, not checked.
    """

    def __init__(self, env: TestEnvironment, at: int) -> None:
        super().__init__(env)
        self.at = at
        self.raised = Latch(env)

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        if self.received == self.at and not self.raised.is_closed:
            self.count_as_cancelled(f"on_next #{self.at} raised", "2.13")
            self.raised.close()
            raise RaisedOnPurpose(f"on_next #{self.at} raised on purpose (a Subscriber breaking rule 2.13)")

    def on_error(self, error: BaseException) -> None:
        if self.raised.is_closed:
            self._signal_arrived()  # rule 1.8 lets one terminal signal trail, like an element
            return
        super().on_error(error)

    def on_complete(self) -> None:
        if self.raised.is_closed:
            self._signal_arrived()
            return
        super().on_complete()


class CancelInsideOnSubscribe(BlackholeSubscriber[Any]):
    """Rules 3.12/1.8: requests ``2**63 - 1`` inside on_subscribe and cancels before it returns.

    A publisher that delivers inside that request gets the cancel from inside the first
    ``on_next`` instead. ``cancelled`` closes at the cancel; what arrives afterwards is
    counted in :attr:`after_cancel`.
    """

    def __init__(self, env: TestEnvironment) -> None:
        super().__init__(env)
        self.cancelled = Latch(env)

    def on_subscribe(self, subscription: Subscription) -> None:
        super().on_subscribe(subscription)
        if self.subscription.peek() is not subscription:
            return  # a second on_subscribe: recorded (2.12) and cancelled above
        self.request(UNBOUNDED)
        self._cancel_once()

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        self._cancel_once()

    def _cancel_once(self) -> None:
        if not self.cancelled.is_closed and not self.closed:
            self.cancelled.close()
            self.cancel()


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
        if self.closed:
            return
        self.calls += 1
        if self.calls <= self.floods:
            with self._cond:
                self.requested = UNBOUNDED
            request_inside(self, UNBOUNDED - 1, f"on_next #{self.calls}")
        elif not self.cancelled.is_closed:
            self.cancelled.close()
            self.cancel()
