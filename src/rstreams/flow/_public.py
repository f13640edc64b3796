"""The public ways to make a Flow: sources, functions over several Publishers, and the two
classes users construct that are Flows themselves (``MulticastProcessor``, ``PushSource``).

The top of :mod:`rstreams.flow`: each function checks its arguments through the plain
Publisher that does the work (in its own private module, which knows nothing of Flow)
and wraps that Publisher in a :class:`~rstreams.Flow`; ``range`` checks its own here, so
its messages name ``range`` rather than the builtin it wraps. The two classes add the Flow
methods to their core by inheritance (Flow keeps no state). Nothing in ``flow/``
imports this module.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, Callable, Iterable
from typing import TYPE_CHECKING, Any, SupportsIndex, TypeVar

from rstreams.api import Publisher
from rstreams.flow import _async_source, _combine, _iterable, _merge, _push, _rx, _time
from rstreams.flow._flow import Flow, JustFlow, wrap
from rstreams.flow._multicast import Multicast
from rstreams.flow._push import OverflowStrategy, PushHub

if TYPE_CHECKING:
    import reactivex

__all__ = [
    "MulticastProcessor",
    "PushSource",
    "combine_latest",
    "concat",
    "empty",
    "error",
    "from_async_iterable",
    "from_iterable",
    "from_observable",
    "from_push",
    "interval",
    "just",
    "merge",
    "race",
    "range_",
    "timer",
    "zip_",
]

T = TypeVar("T")


# -- sources ----------------------------------------------------------------------------


def from_iterable(iterable: Iterable[T]) -> Flow[T]:
    """A cold Flow of the iterable's elements; each subscription iterates it anew.

    Lazy: elements are pulled only as they are requested, so infinite iterables work.
    An *iterator* (or generator) can be consumed only once: a second subscription gets
    ``on_error(AlreadySubscribedError)`` (a ``RuntimeError``) saying so.

    Raises:
        TypeError: ``iterable`` is not iterable.
    """
    return wrap(_iterable.from_iterable(iterable))


def range_(start: int, stop: int | None = None, step: int = 1) -> Flow[int]:
    """Like the builtin ``range``: ``range_(5)`` is 0..4, ``range_(2, 5)`` is 2..4.

    Raises:
        TypeError: an argument is not an int, or ``step`` is given without ``stop``
            (``range(5, step=2)``; write ``range(0, 5, 2)``).
        ValueError: ``step`` is 0.
    """
    _check_range(start, stop, step)
    return wrap(_iterable.range_(start, stop, step))


def _check_range(start: object, stop: object, step: object) -> None:
    """The builtin's checks, with messages that name ``range`` and the argument."""
    for name, value in (("start", start), ("stop", stop), ("step", step)):
        if not isinstance(value, SupportsIndex) and not (value is None and name == "stop"):
            raise TypeError(f"range({name}=) needs an int, got {value!r}")
    if stop is None and step != 1:
        raise TypeError(
            f"range({start!r}, step={step!r}) has no stop, so {start!r} is the stop and the step "
            f"would be ignored; write range(0, {start!r}, {step!r})"
        )
    if step == 0:
        raise ValueError("range(step=) needs a step other than 0, got 0")


def just(*items: T) -> Flow[T]:
    """A Flow of exactly these elements. ``None`` is refused here, before anything runs.

    Raises:
        TypeError: one of ``items`` is ``None`` (rule 2.13).
    """
    return JustFlow(items)


def empty() -> Flow[T]:
    """A Flow that completes right after ``on_subscribe``, without any request."""
    return wrap(_iterable.empty())


def error(exc: BaseException) -> Flow[T]:
    """A Flow that signals ``on_subscribe`` and then ``on_error(exc)``, without any request.

    Raises:
        TypeError: ``exc`` is not an exception instance (an exception class, say).
    """
    return wrap(_iterable.error(exc))


def from_async_iterable(
    source: AsyncIterable[T] | Callable[[], AsyncIterable[T]],
    *,
    loop: asyncio.AbstractEventLoop | None = None,
) -> Flow[T]:
    """A Flow over an async iterable, pulled on ``loop`` (default: the loop running at subscribe).

    ``source`` may be a re-iterable async iterable (each subscription calls ``aiter`` anew),
    a zero-argument callable returning one, such as an async generator *function* (cold:
    a fresh generator per subscription), or an async iterator such as an async generator
    *object*, which can be consumed once: a second subscriber gets ``on_error`` saying so.

    Lazy: ``__anext__`` is awaited only for requested elements. Cancelling ``aclose()``s
    the iterator. Without ``loop=`` and without a running loop at ``subscribe``, the
    subscriber gets ``on_subscribe`` then ``on_error(NoEventLoopError)`` (a ``RuntimeError``).

    Raises:
        TypeError: ``source`` is neither an async iterable nor a callable, or ``loop`` is not
            an asyncio event loop.
    """
    return wrap(_async_source.from_async_iterable(source, loop=loop))


class PushSource(PushHub[T], Flow[T]):
    """A hot Publisher fed by ``push``/``complete``/``fail``, callable from any thread.

    Multicast: every subscriber has its own demand and its own buffer, handled by
    ``overflow`` and ``capacity`` (see :class:`OverflowStrategy`); a slow subscriber never
    holds back a fast one. Subscribers see the elements pushed after they subscribed; a
    subscriber that arrives after ``complete``/``fail`` gets that terminal signal at once.
    Elements pushed while nobody is subscribed are gone and are not counted as dropped.

    ``push`` may deliver ``on_next`` on the producer's thread when the subscriber has
    demand, so the producer should not hold its own locks while pushing.

    Raises:
        TypeError: ``overflow`` is missing or not an :class:`OverflowStrategy`.
        ValueError: ``capacity`` is not an int >= 0, is 0 with ``LATEST``, or is above 0 with
            ``ERROR`` (which buffers nothing).
    """

    __slots__ = ()


def from_push(
    register: Callable[[PushSource[T]], Callable[[], object] | None],
    *,
    overflow: OverflowStrategy,
    capacity: int | None = None,
) -> Flow[T]:
    """A cold Flow over a callback-style producer, one :class:`PushSource` per subscription.

    For every subscriber, ``register(source)`` is called after ``on_subscribe`` (so demand
    asked for there is already in place); it wires the producer to ``source.push`` /
    ``complete`` / ``fail`` and may return a cleanup callable, which runs once when the
    subscriber cancels or the stream ends. If ``register`` raises, the subscriber gets
    that error. ``overflow`` must be chosen: the specification leaves "buffer or drop"
    to the publisher, and only the user knows which is right.

    Raises:
        TypeError: ``register`` is not callable, or ``overflow`` is not an
            :class:`OverflowStrategy`.
        ValueError: ``capacity`` is not an int >= 0, is 0 with ``LATEST``, or is above 0 with
            ``ERROR`` (which buffers nothing).
    """
    pushed: Any = _push.from_push(register, overflow=overflow, capacity=capacity, make=PushSource)
    return wrap(pushed)


def interval(
    period: float,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    initial_delay: float | None = None,
    overflow: OverflowStrategy = OverflowStrategy.ERROR,
    capacity: int | None = None,
) -> Flow[int]:
    """A Flow of 0, 1, 2, ... one every ``period`` seconds on ``loop``; never completes.

    The first tick comes ``initial_delay`` seconds (default: ``period``) after
    ``subscribe``. Without ``loop=``, the loop running at ``subscribe`` is used; with none,
    the subscriber gets ``on_subscribe`` then ``on_error(NoEventLoopError)`` (a ``RuntimeError``);
    with a ``loop`` that is closed, ``on_error(LoopClosedError)`` (one too).
    A tick without demand is handled by ``overflow`` (default ``ERROR``: the stream fails, rule 1.1).
    Each subscription has its own clock.

    Raises:
        TypeError: ``period`` or ``initial_delay`` is not a number of seconds (an int or a
            float; a bool is not), ``loop`` is not an asyncio event loop, or ``overflow`` is
            not an :class:`OverflowStrategy`.
        ValueError: ``period`` is not > 0 or ``initial_delay`` is not >= 0 (NaN is neither);
            ``capacity`` does not fit ``overflow`` (as for :func:`from_push`).
    """
    return wrap(
        _time.interval(period, loop=loop, initial_delay=initial_delay, overflow=overflow, capacity=capacity)
    )


def timer(
    delay: float,
    *,
    loop: asyncio.AbstractEventLoop | None = None,
    overflow: OverflowStrategy = OverflowStrategy.ERROR,
    capacity: int | None = None,
) -> Flow[int]:
    """A Flow of a single ``0`` ``delay`` seconds after ``subscribe``, then ``on_complete``.

    Without demand at that moment, ``overflow`` decides (default ``ERROR``: on_error, as in
    RxJava; ``BUFFER``/``LATEST`` hold the 0 until requested; ``DROP`` completes empty).
    Without ``loop=``, the loop running at ``subscribe`` is used, as for :func:`interval`.

    Raises:
        TypeError: ``delay`` is not a number of seconds (an int or a float; a bool is not),
            ``loop`` is not an asyncio event loop, or ``overflow`` is not an
            :class:`OverflowStrategy`.
        ValueError: ``delay`` is not >= 0 (NaN is not); ``capacity`` does not fit
            ``overflow`` (as for :func:`from_push`).
    """
    return wrap(_time.timer(delay, loop=loop, overflow=overflow, capacity=capacity))


def from_observable(
    observable: reactivex.Observable[T],
    *,
    overflow: OverflowStrategy | str = OverflowStrategy.BUFFER,
    capacity: int | None = None,
) -> Flow[T]:
    """A cold Flow over a reactivex Observable: each subscription subscribes to it anew.

    An Observable cannot be slowed down, so ``overflow`` says what happens to an element
    that arrives without demand (rule 1.1): ``"buffer"`` holds up to ``capacity``
    (default 256) and then fails the stream with
    :class:`~rstreams.errors.OverflowStrategyError`; ``"drop"`` drops the newest beyond
    ``capacity`` (default 0); ``"latest"`` keeps the newest ``capacity`` (default 1);
    ``"error"`` fails at the first element without demand. Cancelling disposes the
    Observable subscription. Needs reactivex (``pip install rstreams[reactivex]``).

    Raises:
        MissingExtraError: reactivex is not installed (an ``ImportError``).
        TypeError: ``observable`` has no ``subscribe``, or ``overflow`` is neither an
            :class:`OverflowStrategy` nor a string.
        ValueError: ``overflow`` is a string that names no strategy, or ``capacity`` does not
            fit ``overflow`` (as for :func:`from_push`).
    """
    return wrap(_rx.from_observable(observable, overflow=overflow, capacity=capacity))


# -- several Publishers into one ----------------------------------------------------------


def merge(*publishers: Publisher[T], prefetch: int = 32, delay_error: bool = False) -> Flow[T]:
    """The elements of all ``publishers``, interleaved as they arrive.

    Every Publisher is subscribed at once, each buffered up to ``prefetch`` elements.
    Completes when all have completed; the first error cancels the others and is passed
    on at once, dropping what is buffered. With ``delay_error`` an error ends only its own
    Publisher: the others run on, everything buffered goes out, and then the error comes
    instead of the completion (several: a ``BaseExceptionGroup`` of them, in order).
    ``merge()`` with no Publishers completes at once.

    Raises:
        TypeError: one of ``publishers`` has no ``subscribe``, ``prefetch`` is not an int,
            or ``delay_error`` is not a bool.
        ValueError: ``prefetch`` is below 1.
    """
    return wrap(_merge.merge(*publishers, prefetch=prefetch, delay_error=delay_error))


def concat(*publishers: Publisher[T]) -> Flow[T]:
    """The elements of each Publisher in turn; the next is subscribed when one completes.

    The outstanding demand carries over to the next Publisher (rule 1.1); an error ends
    the stream at once. ``concat()`` completes at once.

    Raises:
        TypeError: one of ``publishers`` has no ``subscribe``.
    """
    return wrap(_combine.concat(*publishers))


def zip_(*publishers: Publisher[Any], prefetch: int = _combine.DEFAULT_PREFETCH) -> Flow[tuple[Any, ...]]:
    """Tuples of the ``i``-th element of every Publisher; as long as the shortest.

    ``request(n)`` asks each Publisher for ``n`` (at most ``prefetch`` ahead of what was
    taken); ``zip()`` completes at once.

    Raises:
        TypeError: one of ``publishers`` has no ``subscribe``, or ``prefetch`` is not an int.
        ValueError: ``prefetch`` is below 1.
    """
    return wrap(_combine.zip_(*publishers, prefetch=prefetch))


def combine_latest(
    *publishers: Publisher[Any], prefetch: int = _combine.DEFAULT_PREFETCH
) -> Flow[tuple[Any, ...]]:
    """A tuple of every Publisher's latest element, each time one of them emits.

    Nothing is emitted until every Publisher has emitted once; each is asked for at most
    ``prefetch`` elements ahead. ``combine_latest()`` completes at once.

    Raises:
        TypeError: one of ``publishers`` has no ``subscribe``, or ``prefetch`` is not an int.
        ValueError: ``prefetch`` is below 1.
    """
    return wrap(_combine.combine_latest(*publishers, prefetch=prefetch))


def race(*publishers: Publisher[T], prefetch: int = _combine.DEFAULT_PREFETCH) -> Flow[T]:
    """The Publisher that signals first (an element, an error or completion); the rest are cancelled.

    Also known as ``amb``. Until a winner is known every Publisher is asked for the
    downstream's demand (at most ``prefetch`` ahead). ``race()`` completes at once.

    Raises:
        TypeError: one of ``publishers`` has no ``subscribe``, or ``prefetch`` is not an int.
        ValueError: ``prefetch`` is below 1.
    """
    return wrap(_combine.race(*publishers, prefetch=prefetch))


# -- processors -------------------------------------------------------------------------


class MulticastProcessor(Multicast[T], Flow[T]):
    """A hot Processor: subscribe it to one Publisher, then subscribe any number of Subscribers.

    ``processor = MulticastProcessor(); source.subscribe(processor); processor.map(f)...``

    Every element from upstream goes to every subscriber present when it arrived, each
    at its own demand; a subscriber that joins late sees only later elements. The
    slowest subscriber sets the pace: at most ``buffer_size`` elements are held (or
    requested) ahead of it. Errors reach all subscribers immediately, even without
    demand (rule 4.2). With ``auto_cancel`` (the default) the upstream is cancelled
    when the last subscriber cancels. ``replay=n`` keeps the last ``n`` elements for
    subscribers that join later: they get those first (within their demand), and after a
    completion those and then the completion. All methods are thread-safe.

    Raises:
        TypeError: ``buffer_size`` or ``replay`` is not an int.
        ValueError: ``buffer_size`` is not > 0, or ``replay`` is not >= 0.
    """

    __slots__ = ()
