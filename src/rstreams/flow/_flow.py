"""``Flow``: a Publisher with a fluent chain of operators and sinks.

Every Publisher rstreams hands to users is a :class:`Flow`; :func:`from_publisher` wraps
anyone else's. The methods only assemble: each returns a new Flow (or a sink's result)
and nothing runs until something subscribes.

Composition, not inheritance: the operators are plain Publishers (on the
:class:`~rstreams.flow._operator.OperatorFlow` base, one private module per operator
family) that do not know Flow. This module sits above them all and imports them; each
method builds the operator over the Publisher under this Flow and wraps the result in a
Flow (:class:`_Wrapped`). Wrapping costs one call per ``subscribe`` and nothing per
element: the wrapper hands the subscriber straight to the operator, and an operator is
built over the unwrapped Publisher, so the chain of subscribers is the operators' alone.
Classes users make that are Flows themselves (``MulticastProcessor``, ``PushSource``, and
the ``Publisher`` subclasses of :mod:`rstreams.net` and :mod:`rstreams.replay`) subclass
Flow; it has no state of its own (``__slots__ = ()``). So does ``just(...)``
(:class:`JustFlow`, often built per request): the source is the Flow, with no wrapper.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from rstreams.api import Publisher, Subscriber
from rstreams.flow._aiter import iter_async
from rstreams.flow._blocking import iter_blocking
from rstreams.flow._buffer import BufferFlow
from rstreams.flow._combine import combine_latest, concat, race, zip_
from rstreams.flow._concat_map import ConcatMapFlow
from rstreams.flow._element import ElementFlow
from rstreams.flow._filter import FilterFlow
from rstreams.flow._iterable import IterableFlow, Just
from rstreams.flow._map import MapFlow
from rstreams.flow._merge import FlatMapFlow, merge
from rstreams.flow._observe_on import ObserveOnFlow
from rstreams.flow._operator import MISSING, check_callable, check_count
from rstreams.flow._push import OverflowStrategy
from rstreams.flow._rate import (
    BackpressureFlow,
    LimitRateFlow,
    SubscribeOnFlow,
    backpressure_buffer,
    backpressure_drop,
)
from rstreams.flow._recover import Backoff, OnErrorResumeFlow, RetryFlow, on_error_return
from rstreams.flow._rx import to_observable
from rstreams.flow._share import ShareFlow
from rstreams.flow._sinks import SinkResult, collect, count, for_each, reduce
from rstreams.flow._switch_map import SwitchMapFlow
from rstreams.flow._take import SkipFlow, TakeFlow
from rstreams.flow._tap import Hooks, TapFlow
from rstreams.flow._timeops import buffer_time, delay_flow, timed, timeout
from rstreams.flow._transform import (
    DistinctFlow,
    DistinctUntilChangedFlow,
    ScanFlow,
    SkipWhileFlow,
    TakeWhileFlow,
    start_with,
)
from rstreams.flow._until import SkipUntilFlow, TakeUntilFlow
from rstreams.flow._window import Group, GroupByFlow, WindowTimeFlow
from rstreams.flow._with_latest import WithLatestFromFlow
from rstreams.rules import check_subscriber

if TYPE_CHECKING:
    from collections.abc import Generator, Hashable

    import reactivex

__all__ = ["AwaitableFlow", "Flow", "GroupedFlow", "JustFlow", "from_publisher", "known_elements", "wrap"]

T = TypeVar("T")
R = TypeVar("R")
A = TypeVar("A")

DEFAULT_WINDOW = 256
"""Demand a consuming adapter keeps outstanding; replenished when half is used."""


class Flow(Publisher[T], abc.ABC):
    """A Publisher that also offers operators: ``rstreams.range(0, 10).map(f).filter(p)``.

    Operators return new Flows; subscribing to one subscribes through the whole chain.
    A Flow may be subscribed to many times; whether each subscriber sees the same
    elements depends on the source (sources in rstreams are cold: each subscription
    starts from the beginning, unless the docs of the source say otherwise).
    """

    __slots__ = ()

    @abc.abstractmethod
    def subscribe(self, subscriber: Subscriber[T]) -> None:
        """Start a subscription (see :class:`rstreams.api.Publisher`)."""

    def __repr__(self) -> str:  # the Publisher it is made of, not the private wrapper's name
        return f"<rstreams.Flow: {type(_unwrap(self)).__name__}>"

    # -- composition ---------------------------------------------------------------

    def pipe(self, *operators: Callable[[Flow[Any]], Flow[Any]]) -> Flow[Any]:
        """Apply functions ``Flow -> Flow`` left to right: ``flow.pipe(f, g) == g(f(flow))``."""
        for operator in operators:
            if not callable(operator):
                raise TypeError(f"pipe() needs functions Flow -> Flow, got {operator!r}")
        flow: Flow[Any] = self
        for operator in operators:
            flow = operator(flow)
        return flow

    def map(self, fn: Callable[[T], R]) -> Flow[R]:
        """Each element ``x`` becomes ``fn(x)``. If ``fn`` raises, upstream is cancelled and
        the error goes downstream. ``fn`` must not return ``None`` (rule 2.13)."""
        return _Wrapped(MapFlow(_unwrap(self), fn))

    def filter(self, predicate: Callable[[T], object]) -> Flow[T]:
        """Keep the elements for which ``predicate`` is true; one more is requested
        upstream for every element dropped, so demand is never lost."""
        return _Wrapped(FilterFlow(_unwrap(self), predicate))

    def take(self, n: int) -> Flow[T]:
        """The first ``n`` elements, then complete and cancel upstream."""
        return _Wrapped(TakeFlow(_unwrap(self), n))

    def skip(self, n: int) -> Flow[T]:
        """Drop the first ``n`` elements (requesting them upstream), pass the rest."""
        return _Wrapped(SkipFlow(_unwrap(self), n))

    def buffer(self, size: int) -> Flow[list[T]]:
        """Group elements into lists of ``size`` (the last one may be shorter)."""
        return _Wrapped(BufferFlow(_unwrap(self), size))

    def scan(self, fn: Callable[[A, T], A], initial: A) -> Flow[A]:
        """The running fold: ``fn(initial, x1)``, then ``fn(that, x2)``, ... one per element.

        ``initial`` itself is not emitted; ``request(n)`` passes through."""
        return _Wrapped(ScanFlow(_unwrap(self), fn, initial))

    def start_with(self, *items: T) -> Flow[T]:
        """``items`` first, then this Flow's elements; it is subscribed once the items are out."""
        return _Wrapped(start_with(_unwrap(self), items))

    def distinct(self, key: Callable[[T], Hashable] | None = None) -> Flow[T]:
        """Each element whose ``key(element)`` (default: the element) was not seen before.

        Holds every key seen; one more is requested upstream per element dropped."""
        return _Wrapped(DistinctFlow(_unwrap(self), key))

    def distinct_until_changed(self, key: Callable[[T], object] | None = None) -> Flow[T]:
        """Drops an element whose ``key`` equals the previous element's; re-requests each drop."""
        return _Wrapped(DistinctUntilChangedFlow(_unwrap(self), key))

    def take_while(self, predicate: Callable[[T], object]) -> Flow[T]:
        """Elements while ``predicate`` holds; the first that fails it cancels upstream and completes."""
        return _Wrapped(TakeWhileFlow(_unwrap(self), predicate))

    def skip_while(self, predicate: Callable[[T], object]) -> Flow[T]:
        """Drops elements while ``predicate`` holds (re-requesting each), then passes the rest."""
        return _Wrapped(SkipWhileFlow(_unwrap(self), predicate))

    def take_until(self, other: Publisher[Any]) -> Flow[T]:
        """Elements until ``other``'s first element or its completion; then cancel upstream
        and complete.

        ``other`` is asked for one element; an error from it ends the stream."""
        return _Wrapped(TakeUntilFlow(_unwrap(self), other))

    def skip_until(self, other: Publisher[Any]) -> Flow[T]:
        """Drops elements (re-requesting each) until ``other``'s first element or its
        completion, then passes all."""
        return _Wrapped(SkipUntilFlow(_unwrap(self), other))

    def first(self, *, default: Any = MISSING) -> AwaitableFlow[T]:
        """The first element (or ``default``); a Flow that can also be awaited or ``.result()``-ed.

        Asks upstream for one element, then cancels it. An empty stream without
        ``default`` fails with :class:`~rstreams.flow._element.NoSuchElementError` (a LookupError)."""
        return AwaitableFlow(ElementFlow(_unwrap(self), 0, default, "first()"))

    def last(self, *, default: Any = MISSING) -> AwaitableFlow[T]:
        """The last element (or ``default``), once the stream completes; awaitable like ``first``."""
        return AwaitableFlow(ElementFlow(_unwrap(self), None, default, "last()"))

    def element_at(self, index: int, *, default: Any = MISSING) -> AwaitableFlow[T]:
        """The element at ``index`` (0-based, or ``default``); asks upstream for ``index + 1``."""
        return AwaitableFlow(ElementFlow(_unwrap(self), index, default, f"element_at({index!r})"))

    def tap(
        self,
        on_next: Callable[[T], object] | None = None,
        *,
        on_error: Callable[[BaseException], object] | None = None,
        on_complete: Callable[[], object] | None = None,
        on_cancel: Callable[[], object] | None = None,
        on_request: Callable[[int], object] | None = None,
    ) -> Flow[T]:
        """Call the given hooks as signals pass, changing nothing (demand passes through).

        A hook that raises ends the stream with its error (``on_cancel``'s is reported)."""
        hooks = Hooks(
            on_next=on_next,
            on_error=on_error,
            on_complete=on_complete,
            on_cancel=on_cancel,
            on_request=on_request,
        )
        return _Wrapped(TapFlow(_unwrap(self), hooks))

    def do_on_next(self, fn: Callable[[T], object]) -> Flow[T]:
        """``fn(element)`` before each element goes on (``tap(on_next=fn)``)."""
        return self._tap_one("do_on_next", on_next=fn)

    def do_on_error(self, fn: Callable[[BaseException], object]) -> Flow[T]:
        """``fn(error)`` before the error goes on."""
        return self._tap_one("do_on_error", on_error=fn)

    def do_on_complete(self, fn: Callable[[], object]) -> Flow[T]:
        """``fn()`` before ``on_complete`` goes on."""
        return self._tap_one("do_on_complete", on_complete=fn)

    def do_on_cancel(self, fn: Callable[[], object]) -> Flow[T]:
        """``fn()`` when the downstream cancels, before the upstream is cancelled."""
        return self._tap_one("do_on_cancel", on_cancel=fn)

    def do_on_request(self, fn: Callable[[int], object]) -> Flow[T]:
        """``fn(n)`` for each ``request(n)`` from downstream, before it goes upstream."""
        return self._tap_one("do_on_request", on_request=fn)

    def _tap_one(self, operator: str, **hook: Any) -> Flow[T]:
        check_callable(operator, next(iter(hook.values())), "fn")
        return _Wrapped(TapFlow(_unwrap(self), Hooks(operator=operator, **hook)))

    def retry(
        self,
        times: int,
        *,
        backoff: float = 0.0,
        max_backoff: float = 30.0,
        jitter: float = 0.0,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Flow[T]:
        """On an error, subscribe to this Flow again, at most ``times`` times; then pass the error on.

        Demand carries over (the new subscription is asked for what is still outstanding).
        ``backoff`` seconds before the first retry, doubling up to ``max_backoff``, each
        scaled by a random factor in ``[1 - jitter, 1 + jitter]``, on ``loop`` (default: the
        running loop when subscribed); ``backoff=0`` re-subscribes at once."""
        count = check_count("retry", times, "times")
        backoffs = Backoff("retry", backoff, max_backoff, jitter)
        return _Wrapped(RetryFlow(_unwrap(self), "retry", count, None, backoffs, loop))

    def retry_when(
        self,
        predicate: Callable[[BaseException], object],
        *,
        times: int = 2**63 - 1,
        backoff: float = 0.0,
        max_backoff: float = 30.0,
        jitter: float = 0.0,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Flow[T]:
        """Like :meth:`retry`, for the errors ``predicate(error)`` accepts (and at most ``times``).

        A predicate that raises ends the stream with its exception (rule 2.13)."""
        return _Wrapped(
            RetryFlow(
                _unwrap(self),
                "retry_when",
                check_count("retry_when", times, "times"),
                check_callable("retry_when", predicate, "predicate"),
                Backoff("retry_when", backoff, max_backoff, jitter),
                loop,
            )
        )

    def on_error_resume(self, fn: Callable[[BaseException], Publisher[T]]) -> Flow[T]:
        """On an error, continue with the Publisher ``fn(error)`` (demand carries over).

        Only the first error is recovered; the fallback's own error goes on."""
        return _Wrapped(OnErrorResumeFlow(_unwrap(self), fn))

    def on_error_return(self, value: T) -> Flow[T]:
        """On an error, emit ``value`` (once requested) and complete."""
        return _Wrapped(on_error_return(_unwrap(self), value))

    def concat_map(self, fn: Callable[[T], Publisher[R]], *, prefetch: int = 2) -> Flow[R]:
        """Map each element to a Publisher and emit their elements one Publisher after
        another, in order. At most ``prefetch`` upstream elements are held."""
        return _Wrapped(ConcatMapFlow(_unwrap(self), fn, prefetch=prefetch))

    def flat_map(
        self,
        fn: Callable[[T], Publisher[R]],
        *,
        max_concurrency: int = 16,
        prefetch: int = 32,
        delay_error: bool = False,
    ) -> Flow[R]:
        """Map each element to a Publisher and merge their elements as they come, with at
        most ``max_concurrency`` inner Publishers subscribed at once, each buffering at
        most ``prefetch`` elements.

        The first error cancels everything and goes on at once, dropping what is queued;
        with ``delay_error`` an error from the upstream or an inner waits until the others
        have ended and everything queued has gone out (several: a ``BaseExceptionGroup``)."""
        return _Wrapped(
            FlatMapFlow(
                _unwrap(self), fn, max_concurrency=max_concurrency, prefetch=prefetch, delay_error=delay_error
            )
        )

    def merge_with(self, *others: Publisher[T], prefetch: int = 32, delay_error: bool = False) -> Flow[T]:
        """Elements of this and ``others`` interleaved as they arrive (see :func:`merge`)."""
        return _Wrapped(
            merge(_unwrap(self), *others, prefetch=prefetch, delay_error=delay_error, name="merge_with")
        )

    def observe_on(
        self,
        target: asyncio.AbstractEventLoop | concurrent.futures.Executor,
        *,
        buffer_size: int = DEFAULT_WINDOW,
        delay_error: bool = False,
    ) -> Flow[T]:
        """Deliver signals downstream on an asyncio loop or an executor's thread.

        An asynchronous boundary: at most ``buffer_size`` elements are requested ahead
        and queued (replenished at three quarters used), so the queue never grows beyond it.
        An upstream error is passed on at once, dropping queued elements, unless
        ``delay_error`` is true, in which case the queued elements are delivered first.
        """
        return _Wrapped(
            ObserveOnFlow(_unwrap(self), target, buffer_size=buffer_size, delay_error=delay_error)
        )

    # -- combining several Publishers (flow/_combine.py, _switch_map.py, _with_latest.py) ----

    def concat_with(self, *others: Publisher[T]) -> Flow[T]:
        """This Flow's elements, then each of ``others``' in turn (see :func:`rstreams.concat`)."""
        return _Wrapped(concat(_unwrap(self), *others, name="concat_with"))

    def zip_with(self, *others: Publisher[Any], prefetch: int = 32) -> Flow[tuple[Any, ...]]:
        """Tuples of this Flow's and ``others``' elements, pairwise (see :func:`rstreams.zip`)."""
        return _Wrapped(zip_(_unwrap(self), *others, prefetch=prefetch, name="zip_with"))

    def combine_latest_with(self, *others: Publisher[Any], prefetch: int = 32) -> Flow[tuple[Any, ...]]:
        """Tuples of the latest elements, one per arrival (see :func:`rstreams.combine_latest`)."""
        return _Wrapped(combine_latest(_unwrap(self), *others, prefetch=prefetch, name="combine_latest_with"))

    def race_with(self, *others: Publisher[T], prefetch: int = 32) -> Flow[T]:
        """Whichever of this Flow and ``others`` signals first (see :func:`rstreams.race`)."""
        return _Wrapped(race(_unwrap(self), *others, prefetch=prefetch, name="race_with"))

    def with_latest_from(self, other: Publisher[Any]) -> Flow[tuple[T, Any]]:
        """``(element, latest of other)`` per element; elements before ``other`` has one are
        dropped (and asked for again). ``other`` is asked for everything; only its latest
        element is kept."""
        return _Wrapped(WithLatestFromFlow(_unwrap(self), other))

    def switch_map(self, fn: Callable[[T], Publisher[R]], *, prefetch: int = 32) -> Flow[R]:
        """Map each element to a Publisher and emit the newest one's elements; a new element
        cancels the previous Publisher. Outstanding demand carries over to the new one."""
        return _Wrapped(SwitchMapFlow(_unwrap(self), fn, prefetch=prefetch))

    # -- time, on an asyncio loop (flow/_timeops.py) ----------------------------------

    def debounce(self, seconds: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """An element goes on once ``seconds`` pass without a newer one (which replaces it);
        the pending one goes on at completion. Each element replaced is asked for again."""
        return _Wrapped(timed(_unwrap(self), "debounce", seconds, loop))

    def throttle_first(self, seconds: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """The first element, then none for ``seconds``, then the next one, ...; each
        element dropped is asked for again."""
        return _Wrapped(timed(_unwrap(self), "throttle_first", seconds, loop))

    def throttle_latest(self, seconds: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """The first element at once, then at most one per ``seconds``: the latest that came
        meanwhile (each replaced one is asked for again); the pending one at completion."""
        return _Wrapped(timed(_unwrap(self), "throttle_latest", seconds, loop))

    def sample(self, period: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """Every ``period`` seconds, the latest element since the previous tick (if any);
        each replaced one is asked for again; the pending one at completion."""
        return _Wrapped(timed(_unwrap(self), "sample", period, loop))

    def delay(
        self, seconds: float, *, max_pending: int = 256, loop: asyncio.AbstractEventLoop | None = None
    ) -> Flow[T]:
        """Each element ``seconds`` later; at most ``max_pending`` requested ahead and held.
        Completion follows the last element; an error goes on at once."""
        return _Wrapped(delay_flow(_unwrap(self), seconds, max_pending, loop))

    def buffer_time(
        self, seconds: float, *, max_size: int = 256, loop: asyncio.AbstractEventLoop | None = None
    ) -> Flow[list[T]]:
        """Lists of elements, cut every ``seconds`` or at ``max_size`` elements, whichever first
        (count-or-time); demand counts lists, at most ``max_size`` elements held per list asked."""
        return _Wrapped(buffer_time(_unwrap(self), seconds, max_size, loop))

    def timeout(
        self,
        per_element: float | None,
        *,
        total: float | None = None,
        fallback: Publisher[T] | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
    ) -> Flow[T]:
        """Fail with ``StreamTimeoutError`` (a ``TimeoutError``) when the upstream owes an
        element and sends none for ``per_element`` seconds, or has not ended ``total``
        seconds after subscribe; with ``fallback``, continue with it instead (demand
        carries over). ``None`` turns a limit off."""
        return _Wrapped(timeout(_unwrap(self), per_element, total, fallback, loop))

    # -- rate and threads (flow/_rate.py) ---------------------------------------------

    def limit_rate(self, high: int, low: int | None = None) -> Flow[T]:
        """Pass elements through, but never let the upstream owe more than ``high``: ask for
        up to ``low`` more (default ``high - high // 4``) once that many have arrived."""
        return _Wrapped(LimitRateFlow(_unwrap(self), high, low))

    def on_backpressure_buffer(self, n: int, *, overflow: OverflowStrategy | None = None) -> Flow[T]:
        """Ask upstream for everything; hold up to ``n`` elements the downstream has not asked
        for. Past ``n``: ``ERROR`` (default) fails the stream after the held elements and
        cancels upstream; ``DROP`` drops the newest; ``LATEST`` the oldest."""
        return _Wrapped(
            backpressure_buffer(_unwrap(self), n, OverflowStrategy.ERROR if overflow is None else overflow)
        )

    def on_backpressure_drop(self, on_drop: Callable[[T], object] | None = None) -> Flow[T]:
        """Ask upstream for everything; drop (and pass to ``on_drop``) each element the
        downstream has not asked for."""
        return _Wrapped(backpressure_drop(_unwrap(self), on_drop))

    def on_backpressure_latest(self) -> Flow[T]:
        """Ask upstream for everything; keep only the latest element nobody asked for yet."""
        return _Wrapped(
            BackpressureFlow(
                _unwrap(self), "on_backpressure_latest", OverflowStrategy.LATEST, 1, error_at_once=True
            )
        )

    def subscribe_on(self, target: asyncio.AbstractEventLoop | concurrent.futures.Executor) -> Flow[T]:
        """Subscribe to this Flow on an asyncio loop or an executor's thread (whatever the
        source does in ``subscribe`` runs there); signals then come from wherever it sends them.
        A target closed or shut down: ``on_subscribe``, then ``on_error(LoopClosedError)``."""
        return _Wrapped(SubscribeOnFlow(_unwrap(self), target))

    def publish_on(
        self,
        target: asyncio.AbstractEventLoop | concurrent.futures.Executor,
        *,
        buffer_size: int = DEFAULT_WINDOW,
        delay_error: bool = True,
    ) -> Flow[T]:
        """:meth:`observe_on` under reactor's name, with reactor's default: an upstream error
        waits behind the queued elements (``delay_error=True``), where ``observe_on`` keeps
        RxJava's default and passes it on at once, dropping them."""
        return _Wrapped(
            ObserveOnFlow(
                _unwrap(self), target, buffer_size=buffer_size, delay_error=delay_error, operator="publish_on"
            )
        )

    def group_by(
        self, key: Callable[[T], Hashable], *, max_groups: int = 256, prefetch: int = 256
    ) -> Flow[GroupedFlow[T]]:
        """A Flow of groups (``GroupedFlow``, with ``.key``), one per distinct ``key(element)``
        open at a time; each is subscribed once and has its own demand. At most ``prefetch``
        elements are held in all (a group nobody consumes stops the upstream); opening more
        than ``max_groups`` groups fails the stream with ``OverflowStrategyError``. Cancelling
        the outer stream completes the groups nobody subscribed to yet (a later subscriber
        gets what they held) and cancels the upstream once no subscribed group is left."""
        return _Wrapped(GroupByFlow(_unwrap(self), key, max_groups, prefetch, GroupedFlow))

    def window(self, count: int, *, prefetch: int = 256) -> Flow[GroupedFlow[T]]:
        """A Flow of windows (``GroupedFlow``, ``.key`` 0, 1, ...) of ``count`` consecutive
        elements each (the last may be shorter); demand like :meth:`group_by`. An error fails
        the open window; one already cut still delivers what it holds and completes."""
        return _Wrapped(GroupByFlow(_unwrap(self), None, 2**63 - 1, prefetch, GroupedFlow, count=count))

    def window_time(
        self, seconds: float, *, prefetch: int = 256, loop: asyncio.AbstractEventLoop | None = None
    ) -> Flow[GroupedFlow[T]]:
        """A Flow of windows (``GroupedFlow``) cut every ``seconds`` by a clock on ``loop``
        (default: the running loop at subscribe); a window opens with its period's first
        element (``.key``: the period's number) and completes when the period ends, even if
        an error comes before it is taken. Demand like :meth:`group_by`."""
        return _Wrapped(WindowTimeFlow(_unwrap(self), seconds, prefetch, GroupedFlow, loop))

    def share(self, *, buffer_size: int = 256) -> Flow[T]:
        """One subscription to this Flow shared by every subscriber while any is there; the
        slowest sets the pace (at most ``buffer_size`` held ahead of it). Late subscribers see
        later elements; after the last one leaves, the next subscribes anew."""
        return _Wrapped(ShareFlow(_unwrap(self), buffer_size))

    def ref_count(self, *, buffer_size: int = 256) -> Flow[T]:
        """The same operator as :meth:`share` (the name reactor and Rx give it: a multicast
        processor connected while its reference count is above zero)."""
        return _Wrapped(ShareFlow(_unwrap(self), buffer_size, "ref_count"))

    def replay(self, n: int, *, buffer_size: int = 256) -> Flow[T]:
        """:meth:`share` that also keeps the last ``n`` elements: a subscriber that joins while
        the shared subscription runs gets them first, within its own demand, then the live
        ones. At most ``n + buffer_size`` elements are held; after the last subscriber leaves,
        the next subscribes anew and nothing is replayed."""
        count = check_count("replay", n)
        return _Wrapped(ShareFlow(_unwrap(self), buffer_size, "replay", count))

    # -- sinks ----------------------------------------------------------------------

    def collect(self) -> SinkResult[list[T]]:
        """All elements in a list; ``await`` the result, or call ``.result(timeout)``."""
        return collect(self)

    def reduce(self, fn: Callable[[A, T], A], initial: A) -> SinkResult[A]:
        """Fold the elements with ``fn(accumulator, element)``, starting from ``initial``."""
        return reduce(self, fn, initial)

    def count(self) -> SinkResult[int]:
        """The number of elements."""
        return count(self)

    def for_each(
        self,
        on_next: Callable[[T], object],
        *,
        window: int | None = None,
    ) -> SinkResult[None]:
        """Call ``on_next`` for each element; ``window=None`` requests unbounded demand."""
        return for_each(self, on_next, window=window)

    def __aiter__(self) -> AsyncIterator[T]:
        """``async for x in flow``: keeps at most :data:`DEFAULT_WINDOW` elements requested."""
        return self.iter_async()

    def iter_async(self, *, window: int = DEFAULT_WINDOW) -> AsyncIterator[T]:
        """An async iterator with at most ``window`` elements outstanding, re-requested at half.

        Leaving the ``async for`` early (``break``, an exception) cancels the subscription.
        """
        return iter_async(self, window=window)

    def iter_blocking(self, *, window: int = DEFAULT_WINDOW, timeout: float | None = None) -> Iterator[T]:
        """A plain iterator for threads: blocks for each element (up to ``timeout`` seconds).

        Do not use it on an event loop's own thread with a source that needs that loop.
        """
        return iter_blocking(self, window=window, timeout=timeout)

    def to_observable(self) -> reactivex.Observable[T]:
        """A reactivex Observable that subscribes to this Flow with unbounded demand."""
        return to_observable(self)


class _Wrapped(Flow[T]):
    """A Flow over a Publisher that is not one: an operator's, a source's, anyone else's."""

    __slots__ = ("publisher",)

    def __init__(self, publisher: Publisher[T]) -> None:
        self.publisher = publisher

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        self.publisher.subscribe(check_subscriber(subscriber))


def _unwrap(flow: Flow[T]) -> Publisher[T]:
    """The Publisher under ``flow`` if it only wraps one (an operator is built over that), else ``flow``."""
    return flow.publisher if isinstance(flow, _Wrapped) else flow


class JustFlow(Just[T], Flow[T]):
    """``rstreams.just(...)``: the source itself is the Flow, with no :class:`_Wrapped` around it."""

    __slots__ = ()


_KNOWN: frozenset[type] = frozenset({IterableFlow, Just, JustFlow})
"""The Publishers that may carry ``known`` elements."""


def known_elements(publisher: Publisher[T]) -> tuple[T, ...] | None:
    """The elements of ``just(...)`` or ``empty()`` (a Flow, or the Publisher under it), which
    are fixed before anything subscribes; ``None`` for any other Publisher.

    For a Subscriber inside rstreams that serves them itself, without a Subscription (the
    serving side of :mod:`rstreams.net` answers a request/response this way): it must then
    act as the subscription would, emitting within demand and completing right after the
    last element, or right after ``on_subscribe`` when there is none (rule 1.5).
    """
    if type(publisher) is _Wrapped:
        publisher = publisher.publisher
    return publisher.known if type(publisher) in _KNOWN else None  # type: ignore[attr-defined]


wrap = _Wrapped
"""``wrap(publisher)``: ``publisher`` (made by rstreams, so it obeys the rules) as a Flow (the
class itself: a source made per request, ``just(...)``, pays no call of a function around it)."""


def from_publisher(publisher: Publisher[T]) -> Flow[T]:
    """Any Reactive Streams Publisher as a :class:`Flow` (a Flow is returned as it is).

    Raises:
        TypeError: ``publisher`` has no ``subscribe(subscriber)`` method.
    """
    if isinstance(publisher, Flow):
        return publisher
    if not callable(getattr(publisher, "subscribe", None)):
        raise TypeError(f"from_publisher() needs an object with subscribe(subscriber), got {publisher!r}")
    return _Wrapped(publisher)


class AwaitableFlow(_Wrapped[T]):
    """``first()``, ``last()``, ``element_at(i)``: a Flow of one element that can also be
    awaited, or ``result(timeout)``-ed, like a sink's :class:`~rstreams.SinkResult`; each of
    those subscribes anew."""

    __slots__ = ("element",)

    def __init__(self, element: ElementFlow[T]) -> None:
        super().__init__(element)
        self.element = element

    def result(self, timeout: float | None = None) -> T:
        """Subscribe and block until the element is there (see :meth:`SinkResult.result`)."""
        return self.element.result(timeout)

    def __await__(self) -> Generator[Any, None, T]:
        return self.element.__await__()


class GroupedFlow(_Wrapped[T]):
    """One group of ``group_by`` (or window of ``window``): its ``key`` and its elements, as a
    Flow that can be subscribed once."""

    __slots__ = ("key",)

    def __init__(self, group: Group[T]) -> None:
        super().__init__(group)
        self.key = group.key

    def __repr__(self) -> str:
        return f"GroupedFlow(key={self.key!r})"
