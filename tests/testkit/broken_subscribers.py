"""Subscribers for the TCK's own tests: correct references, and twins broken in one way each.

Each broken class subclasses its correct twin and changes exactly one behaviour, so a
test can assert that the verification case for that rule fails and the twin passes.
"""

from __future__ import annotations

import threading
from typing import Any

from rstreams.api import Processor, Subscriber, Subscription
from rstreams.flow._public import MulticastProcessor
from rstreams.rules import check_error, check_item
from rstreams.tck import TestEnvironment
from rstreams.tck._subscriber import SubscriberBlackboxVerification, SubscriberWhiteboxVerification
from rstreams.tck._subscriber_support import SubscriberPuppet, WhiteboxSubscriberProbe

# -- verifications of a Subscriber class ---------------------------------------------------


class WhiteboxOf(SubscriberWhiteboxVerification):
    """The whitebox verification of ``cls``, made with the probe (a ReferenceSubscriber or a twin);
    ``default_timeout`` in seconds, else the TCK's."""

    def __init__(self, cls: type[ReferenceSubscriber], *, default_timeout: float | None = None) -> None:
        self.cls = cls
        self.default_timeout = default_timeout

    def create_subscriber(self, probe: WhiteboxSubscriberProbe[Any]) -> Subscriber[Any]:
        return self.cls(probe)

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(default_timeout=self.default_timeout)


class BlackboxOf(SubscriberBlackboxVerification):
    """The blackbox verification of ``cls``, made without a probe."""

    def __init__(self, cls: type[ReferenceSubscriber]) -> None:
        self.cls = cls

    def create_subscriber(self) -> Subscriber[Any]:
        return self.cls()


# -- correct references ------------------------------------------------------------------


class ReferenceSubscriber(Subscriber[Any]):
    """A correct synchronous Subscriber; blackbox use: requests one element at a time.

    With a ``probe`` it is a whitebox Subscriber: it registers every signal and requests
    only when the TCK's puppet asks (``trigger_request``), as much as asked at once.
    """

    def __init__(self, probe: WhiteboxSubscriberProbe[Any] | None = None) -> None:
        self.probe = probe
        self.subscription: Subscription | None = None
        self.done = False
        self.received: list[Any] = []

    # -- Subscriber ---------------------------------------------------------------------
    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:  # rule 2.13, checked first
            raise TypeError("rule 2.13: on_subscribe(None)")
        if self.subscription is not None:  # rule 2.5
            self.reject_second(subscription)
            return
        self.subscription = subscription
        if self.probe is not None:
            self.probe.register_on_subscribe(self.make_puppet())
        else:
            self.request_more()

    def on_next(self, item: Any) -> None:
        check_item(item)
        if self.done:
            return  # rule 2.8: late elements after cancel are fine
        self.received.append(item)
        if self.probe is not None:
            self.probe.register_on_next(item)
        else:
            self.request_more()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        self.done = True
        if self.probe is not None:
            self.probe.register_on_error(error)

    def on_complete(self) -> None:
        self.done = True
        if self.probe is not None:
            self.probe.register_on_complete()

    # -- hooks the broken twins override -------------------------------------------------
    def reject_second(self, subscription: Subscription) -> None:
        subscription.cancel()

    def request_more(self) -> None:
        assert self.subscription is not None
        self.subscription.request(1)

    def make_puppet(self) -> SubscriberPuppet:
        return _Puppet(self)

    def trigger(self, n: int) -> None:
        assert self.subscription is not None
        self.subscription.request(n)

    def cancel(self) -> None:
        self.done = True
        assert self.subscription is not None
        self.subscription.cancel()


class _Puppet:
    def __init__(self, subscriber: ReferenceSubscriber) -> None:
        self._subscriber = subscriber

    def trigger_request(self, n: int) -> None:
        self._subscriber.trigger(n)

    def signal_cancel(self) -> None:
        self._subscriber.cancel()


class OneAtATimeWhiteboxSubscriber(ReferenceSubscriber):
    """Correct, and stingy: however much the puppet asks for, it requests one at a time.

    Proves the TCK waits for each actual request before sending (the puppet contract).
    """

    def __init__(self, probe: WhiteboxSubscriberProbe[Any] | None = None) -> None:
        super().__init__(probe)
        self._lock = threading.Lock()
        self._wanted = 0
        self._outstanding = 0

    def trigger(self, n: int) -> None:
        with self._lock:
            self._wanted += n
        self._pump()

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        with self._lock:
            self._outstanding = max(0, self._outstanding - 1)
        self._pump()

    def _pump(self) -> None:
        with self._lock:
            if self._outstanding or not self._wanted or self.done:
                return
            self._wanted -= 1
            self._outstanding = 1
        assert self.subscription is not None
        self.subscription.request(1)


# -- broken twins --------------------------------------------------------------------------


class NeverRequests(ReferenceSubscriber):
    """Breaks 2.1: never signals demand (blackbox and whitebox)."""

    def request_more(self) -> None:
        pass

    def trigger(self, n: int) -> None:
        pass


class AsksForZeroLater(ReferenceSubscriber):
    """Misuses 3.9 (blackbox): asks for 1 first, then request(0) after each element, which any
    publisher answers with on_error."""

    def request_more(self) -> None:
        assert self.subscription is not None
        self.subscription.request(0 if self.received else 1)


class RequestsOnlyOnce(ReferenceSubscriber):
    """Breaks 3.8 (whitebox): the puppet's demand for n is honoured with a single request(1)."""

    asked = False

    def trigger(self, n: int) -> None:
        if not self.asked:
            self.asked = True
            super().trigger(1)


class CancelsInOnError(ReferenceSubscriber):
    """Breaks 2.3: "cleans up" by cancelling its subscription inside on_error."""

    def on_error(self, error: BaseException) -> None:
        super().on_error(error)
        assert self.subscription is not None
        self.subscription.cancel()


class RequestsInOnComplete(ReferenceSubscriber):
    """Breaks 2.3: requests more inside on_complete."""

    def on_complete(self) -> None:
        super().on_complete()
        assert self.subscription is not None
        self.subscription.request(1)


class KeepsSecondSubscription(ReferenceSubscriber):
    """Breaks 2.5: ignores a second subscription instead of cancelling it."""

    def reject_second(self, subscription: Subscription) -> None:
        pass


class RequestsFromSecondSubscription(ReferenceSubscriber):
    """Breaks 2.5 (blackbox): requests from the second subscription before cancelling it."""

    def reject_second(self, subscription: Subscription) -> None:
        subscription.request(1)
        subscription.cancel()


class CancelsBothSubscriptions(ReferenceSubscriber):
    """Breaks 2.5: cancels the new subscription, but the original one too."""

    def reject_second(self, subscription: Subscription) -> None:
        subscription.cancel()
        assert self.subscription is not None
        self.subscription.cancel()


class RaisesOnLateElement(ReferenceSubscriber):
    """Breaks 2.8: raises when an element arrives after it cancelled."""

    def on_next(self, item: Any) -> None:
        if self.done:
            raise RuntimeError("element after cancel")
        super().on_next(item)


class LosesEarlyCompletion(ReferenceSubscriber):
    """Breaks 2.9: ignores on_complete unless an element was received first."""

    def on_complete(self) -> None:
        if self.received:
            super().on_complete()


class WrapsErrors(ReferenceSubscriber):
    """Breaks 2.10 (whitebox): registers a wrapper instead of the error it received."""

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        super().on_error(RuntimeError(f"wrapped: {error}"))


class RaisesOnErrorWithoutDemand(ReferenceSubscriber):
    """Breaks 2.10 (blackbox): on_error before any element raises back into the publisher."""

    def on_error(self, error: BaseException) -> None:
        super().on_error(error)
        if not self.received:
            raise RuntimeError("on_error before any element")


class RaisesInOnComplete(ReferenceSubscriber):
    """Breaks 2.13: on_complete raises back into the publisher."""

    def on_complete(self) -> None:
        super().on_complete()
        raise RuntimeError("on_complete raised")


class AcceptsNoneElement(ReferenceSubscriber):
    """Breaks 2.13: accepts on_next(None) silently."""

    def on_next(self, item: Any) -> None:
        if item is None:
            return
        super().on_next(item)


class AcceptsNoneError(ReferenceSubscriber):
    """Breaks 2.13: accepts on_error(None) silently."""

    def on_error(self, error: BaseException | None) -> None:
        if error is None:
            return
        super().on_error(error)


class ChecksNoneAfterDuplicate(ReferenceSubscriber):
    """Breaks 2.13 (whitebox): the duplicate check runs first, so on_subscribe(None) -> AttributeError."""

    def on_subscribe(self, subscription: Subscription) -> None:
        if self.subscription is not None:
            subscription.cancel()
            return
        super().on_subscribe(subscription)


class NeverRegisters(ReferenceSubscriber):
    """Breaks the whitebox wiring: never calls probe.register_on_subscribe."""

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription


class IgnoresCancelSignal(ReferenceSubscriber):
    """Breaks the whitebox happy path: the puppet's signal_cancel does nothing."""

    def cancel(self) -> None:
        self.done = True


class PassThrough(Subscriber[Any], Subscription):
    """A correct link between a Publisher and ``downstream``: every signal goes on unchanged,
    and the downstream's requests and cancel go to the upstream through it. Subclasses
    change one step (a test's own link, or a broken twin below)."""

    def __init__(self, downstream: Subscriber[Any]) -> None:
        self.downstream = downstream
        self.upstream: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        self.upstream = subscription
        self.downstream.on_subscribe(self)

    def on_next(self, item: Any) -> None:
        self.downstream.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self.downstream.on_error(error)

    def on_complete(self) -> None:
        self.downstream.on_complete()

    def request(self, n: int) -> None:
        assert self.upstream is not None
        self.upstream.request(n)

    def cancel(self) -> None:
        assert self.upstream is not None
        self.upstream.cancel()


# -- processors: rstreams' MulticastProcessor is the correct twin ---------------------------


class WrappedProcessor(Processor[Any, Any]):
    """A correct identity processor: a MulticastProcessor behind hooks the broken twins override."""

    def __init__(self, buffer_size: int) -> None:
        self.inner: MulticastProcessor[Any] = MulticastProcessor(buffer_size=buffer_size)
        self.upstream: Subscription | None = None

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        self.inner.subscribe(self.wrap_downstream(subscriber))

    def on_subscribe(self, subscription: Subscription | None) -> None:
        if subscription is not None and self.upstream is None:
            self.upstream = subscription
        self.inner.on_subscribe(subscription)  # type: ignore[arg-type]  # None: 2.13 is the inner's job

    def on_next(self, item: Any) -> None:
        self.inner.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self.inner.on_error(error)

    def on_complete(self) -> None:
        self.inner.on_complete()

    def wrap_downstream(self, subscriber: Subscriber[Any]) -> Subscriber[Any]:
        return subscriber


class KeepsUpstreamWhenDownstreamCancels(WrappedProcessor):
    """Breaks the IPV whitebox wiring (2.8, happy path): never cancels upstream."""

    def __init__(self, buffer_size: int) -> None:
        self.inner = MulticastProcessor(buffer_size=buffer_size, auto_cancel=False)
        self.upstream = None


class KeepsSecondUpstream(WrappedProcessor):
    """Breaks 2.5 as a subscriber: a second upstream subscription is neither used nor cancelled."""

    def on_subscribe(self, subscription: Subscription | None) -> None:
        if subscription is not None and self.upstream is not None:
            return
        super().on_subscribe(subscription)


class CancelsUpstreamInOnError(WrappedProcessor):
    """Breaks 2.3 as a subscriber: cancels its upstream inside on_error."""

    def on_error(self, error: BaseException) -> None:
        if self.upstream is not None:
            self.upstream.cancel()
        super().on_error(error)


class WithholdsErrorWithoutDemand(WrappedProcessor):
    """Breaks 4.2 (and 1.4): a downstream with no demand gets the error only once it requests."""

    def wrap_downstream(self, subscriber: Subscriber[Any]) -> Subscriber[Any]:
        return _ErrorWaitsForDemand(subscriber)


class _ErrorWaitsForDemand(PassThrough):
    def __init__(self, downstream: Subscriber[Any]) -> None:
        super().__init__(downstream)
        self.requested = False
        self.pending: BaseException | None = None

    def on_error(self, error: BaseException) -> None:
        if self.requested:
            self.downstream.on_error(error)
        else:
            self.pending = error

    def request(self, n: int) -> None:
        self.requested = True
        if self.pending is not None:
            error, self.pending = self.pending, None
            self.downstream.on_error(error)
            return
        super().request(n)


class LosesTerminalBeforeSubscriber(WrappedProcessor):
    """Breaks 1.4/1.5 through a processor: an upstream terminal before any subscriber is dropped,
    so a subscriber that arrives later waits forever."""

    def __init__(self, buffer_size: int) -> None:
        super().__init__(buffer_size)
        self.has_subscriber = False

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        self.has_subscriber = True
        super().subscribe(subscriber)

    def on_error(self, error: BaseException) -> None:
        if self.has_subscriber:
            super().on_error(error)

    def on_complete(self) -> None:
        if self.has_subscriber:
            super().on_complete()


class SubscribesDownstreamTwice(WrappedProcessor):
    """Breaks 2.12 as a publisher: calls each subscriber's on_subscribe twice."""

    def wrap_downstream(self, subscriber: Subscriber[Any]) -> Subscriber[Any]:
        return _OnSubscribeTwice(subscriber)


class _OnSubscribeTwice(PassThrough):
    def on_subscribe(self, subscription: Subscription) -> None:
        self.downstream.on_subscribe(subscription)
        self.downstream.on_subscribe(subscription)


class StoresSubscriptionAfterRequesting(ReferenceSubscriber):
    """Breaks 2.13 when a request is answered at once (rule 3.10 allows it): asks for its first
    element before it stores the subscription, so an on_next inside that request finds none."""

    def on_subscribe(self, subscription: Subscription) -> None:
        if self.subscription is not None or self.probe is not None:
            super().on_subscribe(subscription)
            return
        subscription.request(1)
        self.subscription = subscription


class CountsDemandAfterRequesting(ReferenceSubscriber):
    """Breaks 2.13 when a request is answered at once (rule 3.10 allows it): counts what it
    asked for only after request() returns, and takes an element beyond that count as a bug."""

    outstanding = 0

    def request_more(self) -> None:
        super().request_more()
        self.outstanding += 1

    def trigger(self, n: int) -> None:
        super().trigger(n)
        self.outstanding += n

    def on_next(self, item: Any) -> None:
        if not self.done:
            if self.outstanding == 0:
                raise RuntimeError(f"element {item!r} arrived without outstanding demand")
            self.outstanding -= 1
        super().on_next(item)
