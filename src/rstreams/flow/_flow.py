"""``Flow``: a Publisher with a fluent chain of operators and sinks.

Every Publisher rstreams makes is a :class:`Flow`; :func:`from_publisher` wraps anyone
else's. The methods only assemble: each returns a new Flow (or a sink's result) and
nothing runs until something subscribes. The implementations live in one private
module per operator family, imported when the method is first used.
"""

from __future__ import annotations

import abc
import asyncio
import concurrent.futures
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from rstreams.api import Publisher, Subscriber
from rstreams.rules import check_subscriber

if TYPE_CHECKING:
    from collections.abc import Hashable

    import reactivex

    from rstreams.flow._element import ElementFlow
    from rstreams.flow._push import OverflowStrategy
    from rstreams.flow._sinks import SinkResult
    from rstreams.flow._window import GroupedFlow

__all__ = ["Flow", "from_publisher"]

T = TypeVar("T")
R = TypeVar("R")
A = TypeVar("A")

MISSING: Any = object()
"""No ``default=`` given (``first``/``last``/``element_at``)."""

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

    # -- composition ---------------------------------------------------------------

    def pipe(self, *operators: Callable[[Flow[Any]], Flow[Any]]) -> Flow[Any]:
        """Apply functions ``Flow -> Flow`` left to right: ``flow.pipe(f, g) == g(f(flow))``."""
        flow: Flow[Any] = self
        for operator in operators:
            flow = operator(flow)
        return flow

    def map(self, fn: Callable[[T], R]) -> Flow[R]:
        """Each element ``x`` becomes ``fn(x)``. If ``fn`` raises, upstream is cancelled and
        the error goes downstream. ``fn`` must not return ``None`` (rule 2.13)."""
        from rstreams.flow._map import MapFlow

        return MapFlow(self, fn)

    def filter(self, predicate: Callable[[T], object]) -> Flow[T]:
        """Keep the elements for which ``predicate`` is true; one more is requested
        upstream for every element dropped, so demand is never lost."""
        from rstreams.flow._filter import FilterFlow

        return FilterFlow(self, predicate)

    def take(self, n: int) -> Flow[T]:
        """The first ``n`` elements, then complete and cancel upstream."""
        from rstreams.flow._take import TakeFlow

        return TakeFlow(self, n)

    def skip(self, n: int) -> Flow[T]:
        """Drop the first ``n`` elements (requesting them upstream), pass the rest."""
        from rstreams.flow._take import SkipFlow

        return SkipFlow(self, n)

    def buffer(self, size: int) -> Flow[list[T]]:
        """Group elements into lists of ``size`` (the last one may be shorter)."""
        from rstreams.flow._buffer import BufferFlow

        return BufferFlow(self, size)

    def scan(self, fn: Callable[[A, T], A], initial: A) -> Flow[A]:
        """The running fold: ``fn(initial, x1)``, then ``fn(that, x2)``, ... one per element.

        ``initial`` itself is not emitted; ``request(n)`` passes through."""
        from rstreams.flow._transform import ScanFlow

        return ScanFlow(self, fn, initial)

    def start_with(self, *items: T) -> Flow[T]:
        """``items`` first, then this Flow's elements; it is subscribed once the items are out."""
        from rstreams.flow._transform import start_with

        return start_with(self, items)

    def distinct(self, key: Callable[[T], Hashable] | None = None) -> Flow[T]:
        """Each element whose ``key(element)`` (default: the element) was not seen before.

        Holds every key seen; one more is requested upstream per element dropped."""
        from rstreams.flow._transform import DistinctFlow

        return DistinctFlow(self, key)

    def distinct_until_changed(self, key: Callable[[T], object] | None = None) -> Flow[T]:
        """Drops an element whose ``key`` equals the previous element's; re-requests each drop."""
        from rstreams.flow._transform import DistinctUntilChangedFlow

        return DistinctUntilChangedFlow(self, key)

    def take_while(self, predicate: Callable[[T], object]) -> Flow[T]:
        """Elements while ``predicate`` holds; the first that fails it cancels upstream and completes."""
        from rstreams.flow._transform import TakeWhileFlow

        return TakeWhileFlow(self, predicate)

    def skip_while(self, predicate: Callable[[T], object]) -> Flow[T]:
        """Drops elements while ``predicate`` holds (re-requesting each), then passes the rest."""
        from rstreams.flow._transform import SkipWhileFlow

        return SkipWhileFlow(self, predicate)

    def take_until(self, other: Publisher[Any]) -> Flow[T]:
        """Elements until ``other``'s first element; then cancel upstream and complete.

        ``other`` is asked for one element; an error from it ends the stream."""
        from rstreams.flow._until import TakeUntilFlow

        return TakeUntilFlow(self, other)

    def skip_until(self, other: Publisher[Any]) -> Flow[T]:
        """Drops elements (re-requesting each) until ``other``'s first element, then passes all."""
        from rstreams.flow._until import SkipUntilFlow

        return SkipUntilFlow(self, other)

    def first(self, *, default: Any = MISSING) -> ElementFlow[T]:
        """The first element (or ``default``); a Flow that can also be awaited or ``.result()``-ed.

        Asks upstream for one element, then cancels it. An empty stream without
        ``default`` fails with :class:`~rstreams.flow._element.NoSuchElementError` (a LookupError)."""
        from rstreams.flow._element import ElementFlow

        return ElementFlow(self, 0, default, "first()")

    def last(self, *, default: Any = MISSING) -> ElementFlow[T]:
        """The last element (or ``default``), once the stream completes; awaitable like ``first``."""
        from rstreams.flow._element import ElementFlow

        return ElementFlow(self, None, default, "last()")

    def element_at(self, index: int, *, default: Any = MISSING) -> ElementFlow[T]:
        """The element at ``index`` (0-based, or ``default``); asks upstream for ``index + 1``."""
        from rstreams.flow._element import ElementFlow

        return ElementFlow(self, index, default, f"element_at({index!r})")

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
        from rstreams.flow._tap import Hooks, TapFlow

        hooks = Hooks(
            on_next=on_next,
            on_error=on_error,
            on_complete=on_complete,
            on_cancel=on_cancel,
            on_request=on_request,
        )
        return TapFlow(self, hooks)

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
        from rstreams.flow._tap import Hooks, TapFlow

        if next(iter(hook.values())) is None:
            raise TypeError(f"{operator}(fn) needs a callable, got None")
        return TapFlow(self, Hooks(operator=operator, **hook))

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
        from rstreams.flow._operator import check_count
        from rstreams.flow._recover import Backoff, RetryFlow

        count = check_count("retry", times, "times")
        return RetryFlow(self, "retry", count, None, Backoff("retry", backoff, max_backoff, jitter), loop)

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
        from rstreams.flow._operator import check_callable, check_count
        from rstreams.flow._recover import Backoff, RetryFlow

        return RetryFlow(
            self,
            "retry_when",
            check_count("retry_when", times, "times"),
            check_callable("retry_when", predicate, "predicate"),
            Backoff("retry_when", backoff, max_backoff, jitter),
            loop,
        )

    def on_error_resume(self, fn: Callable[[BaseException], Publisher[T]]) -> Flow[T]:
        """On an error, continue with the Publisher ``fn(error)`` (demand carries over).

        Only the first error is recovered; the fallback's own error goes on."""
        from rstreams.flow._recover import OnErrorResumeFlow

        return OnErrorResumeFlow(self, fn)

    def on_error_return(self, value: T) -> Flow[T]:
        """On an error, emit ``value`` (once requested) and complete."""
        from rstreams.flow._recover import on_error_return

        return on_error_return(self, value)

    def concat_map(self, fn: Callable[[T], Publisher[R]], *, prefetch: int = 2) -> Flow[R]:
        """Map each element to a Publisher and emit their elements one Publisher after
        another, in order. At most ``prefetch`` upstream elements are held."""
        from rstreams.flow._concat_map import ConcatMapFlow

        return ConcatMapFlow(self, fn, prefetch=prefetch)

    def flat_map(
        self,
        fn: Callable[[T], Publisher[R]],
        *,
        max_concurrency: int = 16,
        prefetch: int = 32,
    ) -> Flow[R]:
        """Map each element to a Publisher and merge their elements as they come, with at
        most ``max_concurrency`` inner Publishers subscribed at once, each buffering at
        most ``prefetch`` elements."""
        from rstreams.flow._merge import FlatMapFlow

        return FlatMapFlow(self, fn, max_concurrency=max_concurrency, prefetch=prefetch)

    def merge_with(self, *others: Publisher[T], prefetch: int = 32) -> Flow[T]:
        """Elements of this and ``others`` interleaved as they arrive (see :func:`merge`)."""
        from rstreams.flow._merge import merge

        return merge(self, *others, prefetch=prefetch)

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
        from rstreams.flow._observe_on import ObserveOnFlow

        return ObserveOnFlow(self, target, buffer_size=buffer_size, delay_error=delay_error)

    # -- combining several Publishers (flow/_combine.py, _switch_map.py, _with_latest.py) ----

    def concat_with(self, *others: Publisher[T]) -> Flow[T]:
        """This Flow's elements, then each of ``others``' in turn (see :func:`rstreams.concat`)."""
        from rstreams.flow._combine import concat

        return concat(self, *others)

    def zip_with(self, *others: Publisher[Any], prefetch: int = 32) -> Flow[tuple[Any, ...]]:
        """Tuples of this Flow's and ``others``' elements, pairwise (see :func:`rstreams.zip`)."""
        from rstreams.flow._combine import zip_

        return zip_(self, *others, prefetch=prefetch)

    def combine_latest_with(self, *others: Publisher[Any], prefetch: int = 32) -> Flow[tuple[Any, ...]]:
        """Tuples of the latest elements, one per arrival (see :func:`rstreams.combine_latest`)."""
        from rstreams.flow._combine import combine_latest

        return combine_latest(self, *others, prefetch=prefetch)

    def race_with(self, *others: Publisher[T], prefetch: int = 32) -> Flow[T]:
        """Whichever of this Flow and ``others`` signals first (see :func:`rstreams.race`)."""
        from rstreams.flow._combine import race

        return race(self, *others, prefetch=prefetch)

    def with_latest_from(self, other: Publisher[Any]) -> Flow[tuple[T, Any]]:
        """``(element, latest of other)`` per element; elements before ``other`` has one are
        dropped (and asked for again). ``other`` is asked for everything; only its latest
        element is kept."""
        from rstreams.flow._with_latest import WithLatestFromFlow

        return WithLatestFromFlow(self, other)

    def switch_map(self, fn: Callable[[T], Publisher[R]], *, prefetch: int = 32) -> Flow[R]:
        """Map each element to a Publisher and emit the newest one's elements; a new element
        cancels the previous Publisher. Outstanding demand carries over to the new one."""
        from rstreams.flow._switch_map import SwitchMapFlow

        return SwitchMapFlow(self, fn, prefetch=prefetch)

    # -- time, on an asyncio loop (flow/_timeops.py) ----------------------------------

    def debounce(self, seconds: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """An element goes on once ``seconds`` pass without a newer one (which replaces it);
        the pending one goes on at completion. Each element replaced is asked for again."""
        from rstreams.flow._timeops import timed

        return timed(self, "debounce", seconds, loop)

    def throttle_first(self, seconds: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """The first element, then none for ``seconds``, then the next one, ...; each
        element dropped is asked for again."""
        from rstreams.flow._timeops import timed

        return timed(self, "throttle_first", seconds, loop)

    def throttle_latest(self, seconds: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """The first element at once, then at most one per ``seconds``: the latest that came
        meanwhile (each replaced one is asked for again); the pending one at completion."""
        from rstreams.flow._timeops import timed

        return timed(self, "throttle_latest", seconds, loop)

    def sample(self, period: float, *, loop: asyncio.AbstractEventLoop | None = None) -> Flow[T]:
        """Every ``period`` seconds, the latest element since the previous tick (if any);
        each replaced one is asked for again; the pending one at completion."""
        from rstreams.flow._timeops import timed

        return timed(self, "sample", period, loop)

    def delay(
        self, seconds: float, *, max_pending: int = 256, loop: asyncio.AbstractEventLoop | None = None
    ) -> Flow[T]:
        """Each element ``seconds`` later; at most ``max_pending`` requested ahead and held.
        Completion follows the last element; an error goes on at once."""
        from rstreams.flow._timeops import delay_flow

        return delay_flow(self, seconds, max_pending, loop)

    def buffer_time(
        self, seconds: float, *, max_size: int = 256, loop: asyncio.AbstractEventLoop | None = None
    ) -> Flow[list[T]]:
        """Lists of elements, cut every ``seconds`` or at ``max_size`` elements, whichever first
        (count-or-time); demand counts lists, at most ``max_size`` elements held per list asked."""
        from rstreams.flow._timeops import buffer_time

        return buffer_time(self, seconds, max_size, loop)

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
        from rstreams.flow._timeops import timeout

        return timeout(self, per_element, total, fallback, loop)

    # -- rate and threads (flow/_rate.py) ---------------------------------------------

    def limit_rate(self, high: int, low: int | None = None) -> Flow[T]:
        """Pass elements through, but never let the upstream owe more than ``high``: ask for
        up to ``low`` more (default ``high - high // 4``) once that many have arrived."""
        from rstreams.flow._rate import LimitRateFlow

        return LimitRateFlow(self, high, low)

    def on_backpressure_buffer(self, n: int, *, overflow: OverflowStrategy | None = None) -> Flow[T]:
        """Ask upstream for everything; hold up to ``n`` elements the downstream has not asked
        for. Past ``n``: ``ERROR`` (default) fails the stream after the held elements and
        cancels upstream; ``DROP`` drops the newest; ``LATEST`` the oldest."""
        from rstreams.flow._push import OverflowStrategy
        from rstreams.flow._rate import backpressure_buffer

        return backpressure_buffer(self, n, OverflowStrategy.ERROR if overflow is None else overflow)

    def on_backpressure_drop(self, on_drop: Callable[[T], object] | None = None) -> Flow[T]:
        """Ask upstream for everything; drop (and pass to ``on_drop``) each element the
        downstream has not asked for."""
        from rstreams.flow._rate import backpressure_drop

        return backpressure_drop(self, on_drop)

    def on_backpressure_latest(self) -> Flow[T]:
        """Ask upstream for everything; keep only the latest element nobody asked for yet."""
        from rstreams.flow._push import OverflowStrategy
        from rstreams.flow._rate import BackpressureFlow

        return BackpressureFlow(self, "on_backpressure_latest", OverflowStrategy.LATEST, 1)

    def subscribe_on(self, target: asyncio.AbstractEventLoop | concurrent.futures.Executor) -> Flow[T]:
        """Subscribe to this Flow on an asyncio loop or an executor's thread (whatever the
        source does in ``subscribe`` runs there); signals then come from wherever it sends them."""
        from rstreams.flow._rate import SubscribeOnFlow

        return SubscribeOnFlow(self, target)

    def publish_on(
        self,
        target: asyncio.AbstractEventLoop | concurrent.futures.Executor,
        *,
        buffer_size: int = DEFAULT_WINDOW,
        delay_error: bool = False,
    ) -> Flow[T]:
        """The same operator as :meth:`observe_on` (reactor's name for it)."""
        return self.observe_on(target, buffer_size=buffer_size, delay_error=delay_error)

    def group_by(
        self, key: Callable[[T], Hashable], *, max_groups: int = 256, prefetch: int = 256
    ) -> Flow[GroupedFlow[T]]:
        """A Flow of groups (``GroupedFlow``, with ``.key``), one per distinct ``key(element)``
        open at a time; each is subscribed once and has its own demand. At most ``prefetch``
        elements are held in all (a group nobody consumes stops the upstream); opening more
        than ``max_groups`` groups fails the stream with ``OverflowStrategyError``."""
        from rstreams.flow._window import GroupByFlow

        return GroupByFlow(self, key, max_groups, prefetch)

    def window(self, count: int, *, prefetch: int = 256) -> Flow[GroupedFlow[T]]:
        """A Flow of windows (``GroupedFlow``, ``.key`` 0, 1, ...) of ``count`` consecutive
        elements each (the last may be shorter); demand like :meth:`group_by`."""
        from rstreams.flow._window import GroupByFlow

        return GroupByFlow(self, None, 2**63 - 1, prefetch, count=count)

    def share(self, *, buffer_size: int = 256) -> Flow[T]:
        """One subscription to this Flow shared by every subscriber while any is there; the
        slowest sets the pace (at most ``buffer_size`` held ahead of it). Late subscribers see
        later elements; after the last one leaves, the next subscribes anew."""
        from rstreams.flow._share import ShareFlow

        return ShareFlow(self, buffer_size)

    # -- sinks ----------------------------------------------------------------------

    def collect(self) -> SinkResult[list[T]]:
        """All elements in a list; ``await`` the result, or call ``.result(timeout)``."""
        from rstreams.flow._sinks import collect

        return collect(self)

    def reduce(self, fn: Callable[[A, T], A], initial: A) -> SinkResult[A]:
        """Fold the elements with ``fn(accumulator, element)``, starting from ``initial``."""
        from rstreams.flow._sinks import reduce

        return reduce(self, fn, initial)

    def count(self) -> SinkResult[int]:
        """The number of elements."""
        from rstreams.flow._sinks import count

        return count(self)

    def for_each(
        self,
        on_next: Callable[[T], object],
        *,
        window: int | None = None,
    ) -> SinkResult[None]:
        """Call ``on_next`` for each element; ``window=None`` requests unbounded demand."""
        from rstreams.flow._sinks import for_each

        return for_each(self, on_next, window=window)

    def __aiter__(self) -> AsyncIterator[T]:
        """``async for x in flow``: keeps at most :data:`DEFAULT_WINDOW` elements requested."""
        return self.iter_async()

    def iter_async(self, *, window: int = DEFAULT_WINDOW) -> AsyncIterator[T]:
        """An async iterator with at most ``window`` elements outstanding, re-requested at half.

        Leaving the ``async for`` early (``break``, an exception) cancels the subscription.
        """
        from rstreams.flow._aiter import iter_async

        return iter_async(self, window=window)

    def iter_blocking(self, *, window: int = DEFAULT_WINDOW, timeout: float | None = None) -> Iterator[T]:
        """A plain iterator for threads: blocks for each element (up to ``timeout`` seconds).

        Do not use it on an event loop's own thread with a source that needs that loop.
        """
        from rstreams.flow._blocking import iter_blocking

        return iter_blocking(self, window=window, timeout=timeout)

    def to_observable(self) -> reactivex.Observable[T]:
        """A reactivex Observable that subscribes to this Flow with unbounded demand."""
        from rstreams.flow._rx import to_observable

        return to_observable(self)


class _Wrapped(Flow[T]):
    __slots__ = ("_source",)

    def __init__(self, source: Publisher[T]) -> None:
        self._source = source

    def subscribe(self, subscriber: Subscriber[T]) -> None:
        self._source.subscribe(check_subscriber(subscriber))


def from_publisher(publisher: Publisher[T]) -> Flow[T]:
    """Any Reactive Streams Publisher as a :class:`Flow` (a Flow is returned as it is)."""
    if isinstance(publisher, Flow):
        return publisher
    if not callable(getattr(publisher, "subscribe", None)):
        raise TypeError(f"from_publisher() needs an object with subscribe(subscriber), got {publisher!r}")
    return _Wrapped(publisher)
