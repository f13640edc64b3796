"""``IdentityProcessorVerification``: a Processor checked as a Publisher *and* as a Subscriber.

68 cases, as in the JVM TCK (rule 4.1: a Processor obeys both contracts):

* the 38 :class:`~rstreams.tck.PublisherVerification` cases, run against
  ``helper publisher -> processor``: ``create_publisher(n)`` makes a fresh processor and
  subscribes it to ``create_helper_publisher(n)``, through a pass-through that checks the
  processor's calls on its upstream subscription for overlap (rule 2.7);
* the 27 :class:`~rstreams.tck.SubscriberWhiteboxVerification` cases, run against the
  processor as Subscriber: a downstream subscriber reports to the probe and its puppet
  requests and cancels on the processor's downstream subscription. So the processor must
  accept a downstream before it has an upstream, turn downstream demand into upstream
  requests, and cancel upstream when its only downstream cancels;
* 3 cases of its own about several downstream subscribers and errors (4.2).

Beyond the JVM TCK, a processor whose upstream terminated before any subscriber arrived
must still pass the terminal signal on (rules 1.4 and 1.5 through a processor): the
delegated ``required_spec105`` case and the own ``mustImmediatelyPassOnOnError...`` case
each end by subscribing late to a processor whose upstream already completed or failed.

Each delegated case is a method of the same name that runs the case on a fresh inner
verification sharing this case's environment; the names come from the canonical lists,
and a test checks that every case of both classes has its delegate.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from rstreams import demand
from rstreams.api import Processor, Publisher, Subscriber, Subscription
from rstreams.rules import check_error, check_item
from rstreams.tck import _own_time
from rstreams.tck._env import TEST_BUFFER_SIZE, TestEnvironment
from rstreams.tck._jvm_names import PUBLISHER_VERIFICATION_RULES, snake
from rstreams.tck._publisher import PublisherVerification
from rstreams.tck._registry import (
    DEFAULT_CASE_TIMEOUT,
    CaseInfo,
    Report,
    SkipTest,
    TCKFailure,
    Verification,
    check_options,
    run_cases,
    tck_test,
    whole,
)
from rstreams.tck._subscriber import SubscriberWhiteboxVerification, _HelperPublisherMixin
from rstreams.tck._subscriber_names import SWV_CASES
from rstreams.tck._subscriber_support import (
    BlackboxProbe,
    ElementSource,
    InjectedError,
    ManualPublisher,
    SerialCalls,
    WhiteboxSubscriberProbe,
)
from rstreams.tck._test_subscribers import ManualSubscriber

__all__ = ["IdentityProcessorVerification", "verify_processor"]

_F = TypeVar("_F", bound=Callable[..., Any])


# -- the processor as Subscriber: a downstream that reports to the whitebox probe ----------


class _DownstreamPuppet:
    def __init__(self, subscription: Subscription) -> None:
        self._subscription = subscription

    def trigger_request(self, n: int) -> None:
        self._subscription.request(n)

    def signal_cancel(self) -> None:
        self._subscription.cancel()


class _ProbeForwarder(Subscriber[Any]):
    """Subscribed to the processor; forwards its signals to the whitebox probe.

    Unlike the JVM TCK's (whose guard is a no-op), a second ``on_subscribe`` is cancelled.
    """

    def __init__(self, probe: WhiteboxSubscriberProbe[Any]) -> None:
        self._probe = probe
        self._subscription: Subscription | None = None

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if self._subscription is not None:
            subscription.cancel()
            return
        self._subscription = subscription
        self._probe.register_on_subscribe(_DownstreamPuppet(subscription))

    def on_next(self, item: Any) -> None:
        self._probe.register_on_next(check_item(item))

    def on_error(self, error: BaseException) -> None:
        self._probe.register_on_error(check_error(error))

    def on_complete(self) -> None:
        self._probe.register_on_complete()


class _ProcessorAsSubscriber(SubscriberWhiteboxVerification):
    subject = "the processor"

    def __init__(self, outer: IdentityProcessorVerification) -> None:
        self._outer = outer

    def create_env(self) -> TestEnvironment:
        return self._outer.env

    def create_subscriber(self, probe: WhiteboxSubscriberProbe[Any]) -> Subscriber[Any]:
        processor = self._outer.create_processor(self._outer.processor_buffer_size())
        processor.subscribe(_ProbeForwarder(probe))
        return processor

    def create_element(self, element: int) -> Any:
        return self._outer.create_element(element)

    def create_helper_publisher(self, elements: int) -> Publisher[Any]:
        return self._outer.create_helper_publisher(elements)


# -- the processor as Publisher -------------------------------------------------------------


class _CheckedSubscription(Subscription):
    """The helper publisher's subscription as the processor sees it: its calls are checked (2.7)."""

    def __init__(self, inner: Subscription, serial: SerialCalls) -> None:
        self._inner = inner
        self._serial = serial

    def request(self, n: int) -> None:
        self._serial.guarded(f"request({n!r})", lambda: self._inner.request(n))

    def cancel(self) -> None:
        self._serial.guarded("cancel()", self._inner.cancel)


class _CheckedUpstream(Subscriber[Any]):
    """Between the helper publisher and the processor under test: passes every signal on, and
    hands the processor a subscription whose calls are checked for overlap (rule 2.7)."""

    def __init__(self, processor: Processor[Any, Any], env: TestEnvironment) -> None:
        self._processor = processor
        self.serial = SerialCalls(env, lambda: "the processor")

    def on_subscribe(self, subscription: Subscription) -> None:
        self._processor.on_subscribe(_CheckedSubscription(subscription, self.serial))

    def on_next(self, item: Any) -> None:
        self._processor.on_next(item)

    def on_error(self, error: BaseException) -> None:
        self._processor.on_error(error)

    def on_complete(self) -> None:
        self._processor.on_complete()


class _ProcessorAsPublisher(PublisherVerification):
    """A PublisherVerification over ``helper -> processor``, sharing the outer case's environment.

    The processor's calls on its upstream subscription are checked for overlap (rule 2.7);
    :meth:`run` fails the case with the first overlap when the case is over.
    """

    def __init__(self, outer: IdentityProcessorVerification) -> None:
        self._outer = outer
        self._upstreams: list[_CheckedUpstream] = []

    def run(self, name: str) -> None:
        """Run the publisher case ``name``, then check the processors' calls upstream (2.7)."""
        getattr(self, name)()
        for upstream in self._upstreams:
            upstream.serial.check()

    def create_env(self) -> TestEnvironment:
        return self._outer.env

    def create_publisher(self, elements: int) -> Publisher[Any]:
        processor = self._outer.create_processor(self._outer.processor_buffer_size())
        upstream = _CheckedUpstream(processor, self.env)
        self._upstreams.append(upstream)
        self._outer.create_helper_publisher(elements).subscribe(upstream)
        return processor

    def create_failed_publisher(self) -> Publisher[Any] | None:
        return self._outer.create_failed_publisher()

    def max_elements_from_publisher(self) -> int:
        return self._outer.max_elements_from_publisher()

    def bounded_depth_of_on_next_and_request_recursion(self) -> int:
        return self._outer.bounded_depth_of_on_next_and_request_recursion()

    def skip_stochastic_tests(self) -> bool:
        return self._outer.skip_stochastic_tests()

    def publisher_reference_gc_timeout(self) -> float:
        return self._outer.publisher_reference_gc_timeout()

    def max_supported_subscribers(self) -> int:
        return self._outer.max_supported_subscribers()


def _delegate(
    info: CaseInfo, side: Callable[[IdentityProcessorVerification], Verification]
) -> Callable[..., None]:
    def case(self: IdentityProcessorVerification) -> None:
        verification = side(self)
        if isinstance(verification, _ProcessorAsPublisher):
            verification.run(info.name)
        else:
            getattr(verification, info.name)()

    case.__name__ = case.__qualname__ = info.name
    case.__doc__ = info.doc
    case.__tck_case__ = info  # type: ignore[attr-defined]
    return case


def _delegates() -> dict[str, Any]:
    namespace: dict[str, Any] = {}
    pv = {info.name: info for info in PublisherVerification.tck_cases}
    for jvm, _rule, _category in PUBLISHER_VERIFICATION_RULES:
        info = pv[snake(jvm)]
        namespace[info.name] = _delegate(info, _ProcessorAsPublisher)
    swv = {info.name: info for info in SubscriberWhiteboxVerification.tck_cases}
    for jvm, _rule, _category in SWV_CASES:
        info = swv[snake(jvm)]
        namespace[info.name] = _delegate(info, _ProcessorAsSubscriber)
    return namespace


if TYPE_CHECKING:
    _IPVDelegates = Verification
else:  # a base class holding the 65 delegates, so the registry collects them with IPV's own
    _IPVDelegates = type("_IPVDelegates", (Verification,), _delegates())


def _same_case(verification: type[Verification], jvm: str) -> Callable[[_F], _F]:
    """Mark an override of a delegated case: it carries that case's :class:`CaseInfo`."""
    info = next(c for c in verification.tck_cases if c.jvm_name == jvm)

    def mark(fn: _F) -> _F:
        if fn.__name__ != info.name:
            raise ValueError(f"an override of {jvm!r} must be named {info.name!r}")
        fn.__tck_case__ = info  # type: ignore[attr-defined]
        return fn

    return mark


def _unprefixed_case(*, rule: str | None, jvm: str) -> Callable[[_F], _F]:
    """Mark a required case whose JVM name has no category prefix (``tck_test`` refuses those)."""

    def mark(fn: _F) -> _F:
        doc = (fn.__doc__ or "").strip()
        fn.__tck_case__ = CaseInfo(name=snake(jvm), jvm_name=jvm, rule=rule, category="required", doc=doc)  # type: ignore[attr-defined]
        return fn

    return mark


# -- the setup of IPV's own cases --------------------------------------------------------------


class _DownstreamSubscriber(Subscriber[Any]):
    """A test-driven downstream of the processor: zero demand until told; records on a probe.

    Its ``on_error`` is recorded on the probe (not as an async failure), so the test can
    require that very error object.
    """

    def __init__(self, env: TestEnvironment) -> None:
        self.env = env
        self.probe: BlackboxProbe[Any] = BlackboxProbe(env)
        self.probe.subject = "a subscriber of the processor"
        self.subscription: Subscription | None = None
        self._subscribed = threading.Event()

    def on_subscribe(self, subscription: Subscription) -> None:
        if subscription is None:
            raise TypeError("rule 2.13: on_subscribe(None)")
        if self.subscription is not None:
            self.env.record_failure(
                "rule 2.12: the processor called on_subscribe twice on one subscriber;"
                " at most once per Subscriber"
            )
            subscription.cancel()
            return
        self.subscription = subscription
        self._subscribed.set()

    def on_next(self, item: Any) -> None:
        if self.subscription is None:
            self.env.record_failure(f"rule 1.9: on_next({item!r}) before on_subscribe")
        self.probe.register_on_next(check_item(item))

    def on_error(self, error: BaseException) -> None:
        self.probe.register_on_error(check_error(error))

    def on_complete(self) -> None:
        self.probe.register_on_complete()

    def expect_subscribed(self) -> None:
        if not _own_time.wait_event(self._subscribed, self.env.default_timeout):
            raise TCKFailure(
                "rule 1.9: the processor did not call on_subscribe within"
                f" {self.env.default_timeout * 1000:.0f} ms"
            )

    def request(self, n: int) -> None:
        assert self.subscription is not None
        self.subscription.request(n)

    def cancel(self) -> None:
        if self.subscription is not None:
            self.subscription.cancel()


class _ProcessorSetup:
    """TCK upstream (a ManualPublisher) -> processor -> test downstream subscribers."""

    def __init__(self, verification: IdentityProcessorVerification) -> None:
        self.env = verification.env
        self.upstream: ManualPublisher[Any] = ManualPublisher(self.env)
        self.upstream.subject = "the processor"
        self.processor = verification.create_processor(verification.processor_buffer_size())
        self.upstream.subscribe(self.processor)
        self.tees = ElementSource(self.env, verification.create_helper_publisher(demand.UNBOUNDED))
        self.downstream: list[_DownstreamSubscriber] = []
        self._seen: list[Any] = []

    def new_subscriber(self) -> _DownstreamSubscriber:
        subscriber = _DownstreamSubscriber(self.env)
        self.downstream.append(subscriber)
        self.processor.subscribe(subscriber)
        subscriber.expect_subscribed()
        return subscriber

    def send_next_from_upstream(self) -> Any:
        """A fresh element, sent upstream; ``create_element`` must never repeat itself."""
        item = self.tees.next_element()
        if item in self._seen:
            self.env.record_failure(
                f"create_element gave {item!r} twice; the processor tests need distinct elements"
            )
        self._seen.append(item)
        self.upstream.send_next(item)
        return item

    def close(self) -> None:
        self.tees.cancel()
        for subscriber in self.downstream:
            subscriber.cancel()


class IdentityProcessorVerification(_HelperPublisherMixin, _IPVDelegates, abc.ABC):
    """The JVM ``IdentityProcessorVerification``: 38 publisher + 27 subscriber cases + 3 own.

    Subclass it and implement :meth:`create_processor` (a new identity Processor: it
    passes every element on unchanged). Override the knobs as needed: elements
    (:meth:`create_element`, which must give distinct values), :meth:`create_failed_publisher`,
    :meth:`max_elements_from_publisher`, :meth:`max_supported_subscribers` (below 2 skips
    the two multi-subscriber cases), :meth:`does_coordinated_emission` (true if the
    processor emits only when every subscriber has demand), :meth:`skip_stochastic_tests`,
    :meth:`bounded_depth_of_on_next_and_request_recursion` and :meth:`processor_buffer_size`.
    """

    # -- what the implementer supplies ------------------------------------------------
    @abc.abstractmethod
    def create_processor(self, buffer_size: int) -> Processor[Any, Any]:
        """A new identity Processor that may buffer up to ``buffer_size`` elements."""

    def create_failed_publisher(self) -> Publisher[Any] | None:
        """A Publisher that signals ``on_subscribe`` then ``on_error``; ``None`` skips those cases."""
        return None

    def max_elements_from_publisher(self) -> int:
        """The most elements the processor-as-publisher cases may ask for (default: no limit)."""
        return demand.UNBOUNDED - 1

    def bounded_depth_of_on_next_and_request_recursion(self) -> int:
        """The re-entrancy depth allowed between ``on_next`` and ``request`` (rule 3.3)."""
        return 1

    def skip_stochastic_tests(self) -> bool:
        """Skip the stochastic case (rule 1.3)."""
        return False

    def publisher_reference_gc_timeout(self) -> float:
        """Seconds the rule-3.13 case waits for a cancelled subscriber to be collected."""
        return PublisherVerification.publisher_reference_gc_timeout(self)  # type: ignore[arg-type]

    def max_supported_subscribers(self) -> int:
        """How many downstream subscribers the processor takes at once.

        Cases that need more (two of its own, and the optional rule-1.11 publisher cases,
        which need 2 or 3) skip, saying so.
        """
        return demand.UNBOUNDED

    def does_coordinated_emission(self) -> bool:
        """True if the processor emits an element only when every subscriber has demand for it."""
        return False

    def processor_buffer_size(self) -> int:
        """The ``buffer_size`` passed to :meth:`create_processor` (default 16)."""
        return TEST_BUFFER_SIZE

    # -- a terminated upstream, then a late subscriber ----------------------------------------
    def _late_subscriber(self, terminate: Callable[[ManualPublisher[Any]], None]) -> ManualSubscriber[Any]:
        """A processor whose upstream ``terminate`` ended before any subscriber; one subscribes now."""
        upstream: ManualPublisher[Any] = ManualPublisher(self.env)
        processor = self.create_processor(self.processor_buffer_size())
        upstream.subscribe(processor)
        terminate(upstream)
        sub: ManualSubscriber[Any] = ManualSubscriber(self.env)
        self.env.call_subscribe(processor, sub)
        sub.subscription.expect_completion(
            error_msg="rule 1.9: the processor did not call on_subscribe for a subscriber arriving after its"
            " upstream terminated"
        )
        return sub

    @_same_case(PublisherVerification, "required_spec105_mustSignalOnCompleteWhenFiniteStreamTerminates")
    def required_spec105_must_signal_on_complete_when_finite_stream_terminates(self) -> None:
        """Rule 1.5: a finite stream ends with on_complete, and nothing follows it.

        Beyond the JVM TCK: a processor whose upstream completed before any subscriber
        arrived passes ``on_complete`` to the subscriber that arrives later.
        """
        _ProcessorAsPublisher(self).run(
            "required_spec105_must_signal_on_complete_when_finite_stream_terminates"
        )
        sub = self._late_subscriber(lambda upstream: upstream.send_completion())
        sub.request(1)
        sub.expect_completion(
            error_msg="rule 1.5: the processor's upstream completed before any subscriber arrived;"
            " a subscriber arriving later must still get on_complete"
        )
        sub.expect_none(error_msg="rule 1.7: nothing may follow on_complete")

    # -- own cases ------------------------------------------------------------------------
    def _setup_test(self, body: Callable[[_ProcessorSetup], None], subscribers: int = 1) -> None:
        if subscribers > self.max_supported_subscribers():
            raise SkipTest(
                f"the processor supports {self.max_supported_subscribers()} subscriber(s); "
                f"this case needs {subscribers}"
            )
        setup = _ProcessorSetup(self)
        try:
            body(setup)
        finally:
            setup.close()
        setup.upstream.serial.check()  # rule 2.7: the processor's calls upstream were serial

    @tck_test(
        rule="1.04",
        category="required",
        jvm="required_spec104_mustCallOnErrorOnAllItsSubscribersIfItEncountersANonRecoverableError",
    )
    def required_spec104_must_call_on_error_on_all_its_subscribers_if_it_encounters_a_non_recoverable_error(
        self,
    ) -> None:
        """Rule 1.4: an upstream error reaches every subscriber, including one with zero demand."""

        def body(setup: _ProcessorSetup) -> None:
            sub1 = setup.new_subscriber()
            sub2 = setup.new_subscriber()
            sub1.request(1)
            if self.does_coordinated_emission():
                sub2.request(1)
            setup.upstream.expect_request()
            x = setup.send_next_from_upstream()
            sub1.probe.expect_next(x)
            if self.does_coordinated_emission():
                sub2.probe.expect_next(x)
                sub2.request(1)
            sub1.request(1)
            error = InjectedError()
            setup.upstream.send_error(error)
            sub1.probe.expect_error(error, rule="1.4")
            sub2.probe.expect_error(error, rule="1.4")
            self.env.verify_no_async_errors_no_delay()

        self._setup_test(body, subscribers=2)

    @_unprefixed_case(
        rule=None, jvm="mustImmediatelyPassOnOnErrorEventsReceivedFromItsUpstreamToItsDownstream"
    )
    def must_immediately_pass_on_on_error_events_received_from_its_upstream_to_its_downstream(self) -> None:
        """Rule 4.2: an upstream error reaches a subscriber that has requested nothing, at once.

        Beyond the JVM TCK: an upstream error that came before any subscriber reaches the
        subscriber that arrives later (rule 1.4 through a processor).
        """

        def body(setup: _ProcessorSetup) -> None:
            sub = setup.new_subscriber()
            error = InjectedError()
            setup.upstream.send_error(error)
            sub.probe.expect_error(error, rule="4.2")
            self.env.verify_no_async_errors_no_delay()

        self._setup_test(body)
        late = self._late_subscriber(lambda upstream: upstream.send_error(InjectedError()))
        late.expect_error(
            InjectedError,
            error_msg="rule 1.4: the processor's upstream failed before any subscriber arrived; a subscriber"
            " arriving later must still get on_error",
        )
        self.env.verify_no_async_errors()  # a second terminal would be recorded (rule 1.7)

    @tck_test(
        rule=None,
        category="required",
        jvm="required_mustRequestFromUpstreamForElementsThatHaveBeenRequestedLongAgo",
    )
    def required_must_request_from_upstream_for_elements_that_have_been_requested_long_ago(self) -> None:
        """Rule 2.1, two subscribers: old demand keeps being served; a late subscriber is buffered for."""

        def body(setup: _ProcessorSetup) -> None:
            coordinated = self.does_coordinated_emission()
            sub1 = setup.new_subscriber()
            sub1.request(20)
            total = setup.upstream.expect_request()
            x = setup.send_next_from_upstream()
            sub1.probe.expect_next(x)
            if total == 1:
                total += setup.upstream.expect_request()
            y = setup.send_next_from_upstream()
            sub1.probe.expect_next(y)
            if total == 2:
                total += setup.upstream.expect_request()
            sub2 = setup.new_subscriber()
            z = setup.send_next_from_upstream()
            if not coordinated:
                sub1.probe.expect_next(z)
            sub2.probe.expect_none(what="the new subscriber has not requested anything")
            sub2.request(1)
            if coordinated:
                sub1.probe.expect_next(z)
            sub2.probe.expect_next(z)
            setup.upstream.send_completion()
            sub1.probe.expect_completion()
            sub2.probe.expect_completion()
            self.env.verify_no_async_errors_no_delay()

        self._setup_test(body, subscribers=2)


def verify_processor(
    create_processor: Callable[[int], Processor[Any, Any]],
    *,
    create_element: Callable[[int], Any] = lambda i: i,
    create_failed_publisher: Callable[[], Publisher[Any] | None] | None = None,
    does_coordinated_emission: bool = False,
    buffer_size: int = TEST_BUFFER_SIZE,
    max_supported_subscribers: int = demand.UNBOUNDED,
    env: TestEnvironment | None = None,
    case_timeout: float | None = DEFAULT_CASE_TIMEOUT,
    skip_stochastic: bool = False,
    max_elements: int = demand.UNBOUNDED - 1,
) -> Report:
    """Run all 68 identity-processor cases against ``create_processor(buffer_size)``, without pytest.

    ``buffer_size`` is what :meth:`~IdentityProcessorVerification.processor_buffer_size`
    returns; with ``max_supported_subscribers`` below what a case needs (2 or 3), that case
    skips saying so. The other options are those of every ``verify_*`` function (see
    :func:`~rstreams.tck.verify_publisher`); ``skip_stochastic`` and ``max_elements`` act
    on the processor-as-publisher cases. Returns the :class:`Report`; ``report.ok`` is
    false if any case failed.
    """
    check_options(
        "verify_processor",
        case_timeout=case_timeout,
        max_elements=max_elements,
        env=env,
        skip_stochastic=skip_stochastic,
        factories={"create_processor": create_processor, "create_element=": create_element},
        optional={"create_failed_publisher": create_failed_publisher},
    )
    if not whole(buffer_size) or buffer_size < 1:
        raise ValueError(f"buffer_size must be a whole number >= 1, got {buffer_size!r}")
    if not whole(max_supported_subscribers):
        raise ValueError(
            f"max_supported_subscribers must be a whole number, got {max_supported_subscribers!r}"
        )
    if max_supported_subscribers < 1:
        raise ValueError(f"max_supported_subscribers must be >= 1, got {max_supported_subscribers}")

    class _AdHoc(IdentityProcessorVerification):
        def create_processor(self, buffer_size: int) -> Processor[Any, Any]:
            return create_processor(buffer_size)

        def create_element(self, element: int) -> Any:
            return create_element(element)

        def max_supported_subscribers(self) -> int:
            return max_supported_subscribers

        def does_coordinated_emission(self) -> bool:
            return does_coordinated_emission

        def create_failed_publisher(self) -> Publisher[Any] | None:
            return None if create_failed_publisher is None else create_failed_publisher()

        def processor_buffer_size(self) -> int:
            return buffer_size

        def skip_stochastic_tests(self) -> bool:
            return skip_stochastic

        def max_elements_from_publisher(self) -> int:
            return max_elements

        def create_env(self) -> TestEnvironment:
            return TestEnvironment() if env is None else env

    _AdHoc.case_timeout = case_timeout
    return run_cases(_AdHoc())
