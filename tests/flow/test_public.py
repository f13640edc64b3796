"""The public sources and functions of several Publishers (``flow/_public.py``): each refuses a
bad argument at once, with an error that names the function, and its docstring's ``Raises:``
section lists that error's type."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

import pytest
import reactivex

import rstreams
from rstreams import OverflowStrategy

pytestmark = pytest.mark.timeout(60)

NOOP: Callable[[Any], None] = lambda _source: None  # noqa: E731 - a register that wires nothing

# (the public name, a call with a bad argument, the type it must raise)
BAD_CALLS: list[tuple[str, Callable[[], object], type[Exception]]] = [
    ("from_iterable", lambda: rstreams.from_iterable(5), TypeError),  # type: ignore[arg-type]
    ("range", lambda: rstreams.range(1.5), TypeError),  # type: ignore[arg-type]
    ("range", lambda: rstreams.range(0, "9"), TypeError),  # type: ignore[arg-type]
    ("range", lambda: rstreams.range(5, step=2), TypeError),
    ("range", lambda: rstreams.range(0, 5, 0), ValueError),
    ("just", lambda: rstreams.just(1, None), TypeError),
    ("error", lambda: rstreams.error(ValueError), TypeError),  # type: ignore[arg-type]
    ("from_async_iterable", lambda: rstreams.from_async_iterable([1]), TypeError),  # type: ignore[arg-type]
    ("from_async_iterable", lambda: rstreams.from_async_iterable(list, loop=1), TypeError),  # type: ignore[arg-type]
    ("from_push", lambda: rstreams.from_push(5, overflow=OverflowStrategy.DROP), TypeError),  # type: ignore[arg-type]
    ("from_push", lambda: rstreams.from_push(NOOP, overflow="drop"), TypeError),  # type: ignore[arg-type]
    (
        "from_push",
        lambda: rstreams.from_push(NOOP, overflow=OverflowStrategy.BUFFER, capacity=-1),
        ValueError,
    ),
    ("from_push", lambda: rstreams.from_push(NOOP, overflow=OverflowStrategy.LATEST, capacity=0), ValueError),
    ("from_push", lambda: rstreams.from_push(NOOP, overflow=OverflowStrategy.ERROR, capacity=3), ValueError),
    ("interval", lambda: rstreams.interval("1"), TypeError),  # type: ignore[arg-type]
    ("interval", lambda: rstreams.interval(True), TypeError),
    ("interval", lambda: rstreams.interval(1, loop=1), TypeError),  # type: ignore[arg-type]
    ("interval", lambda: rstreams.interval(1, overflow="drop"), TypeError),  # type: ignore[arg-type]
    ("interval", lambda: rstreams.interval(0), ValueError),
    ("interval", lambda: rstreams.interval(float("nan")), ValueError),
    ("interval", lambda: rstreams.interval(1, initial_delay=-1), ValueError),
    ("interval", lambda: rstreams.interval(1, overflow=OverflowStrategy.ERROR, capacity=2), ValueError),
    ("timer", lambda: rstreams.timer(None), TypeError),  # type: ignore[arg-type]
    ("timer", lambda: rstreams.timer(1, loop="loop"), TypeError),  # type: ignore[arg-type]
    ("timer", lambda: rstreams.timer(-1), ValueError),
    ("timer", lambda: rstreams.timer(1, overflow=OverflowStrategy.BUFFER, capacity=-2), ValueError),
    ("from_observable", lambda: rstreams.from_observable(5), TypeError),
    ("from_observable", lambda: rstreams.from_observable(reactivex.of(1), overflow=5), TypeError),  # type: ignore[arg-type]
    ("from_observable", lambda: rstreams.from_observable(reactivex.of(1), overflow="fast"), ValueError),
    ("from_observable", lambda: rstreams.from_observable(reactivex.of(1), capacity=-1), ValueError),
    ("merge", lambda: rstreams.merge(rstreams.just(1), [2]), TypeError),  # type: ignore[arg-type]
    ("merge", lambda: rstreams.merge(rstreams.just(1), prefetch=1.5), TypeError),  # type: ignore[arg-type]
    ("merge", lambda: rstreams.merge(rstreams.just(1), prefetch=0), ValueError),
    ("concat", lambda: rstreams.concat(rstreams.just(1), None), TypeError),  # type: ignore[arg-type]
    ("zip", lambda: rstreams.zip(rstreams.just(1), 2), TypeError),  # type: ignore[arg-type]
    ("zip", lambda: rstreams.zip(rstreams.just(1), prefetch=0), ValueError),
    ("combine_latest", lambda: rstreams.combine_latest(2), TypeError),  # type: ignore[arg-type]
    ("combine_latest", lambda: rstreams.combine_latest(rstreams.just(1), prefetch=-1), ValueError),
    ("race", lambda: rstreams.race("abc"), TypeError),  # type: ignore[arg-type]
    ("race", lambda: rstreams.race(rstreams.just(1), prefetch=0), ValueError),
    ("from_publisher", lambda: rstreams.from_publisher(None), TypeError),  # type: ignore[arg-type]
    ("to_observable", lambda: rstreams.to_observable(5), TypeError),  # type: ignore[arg-type]
    ("to_observable", lambda: rstreams.to_observable(rstreams.just(1), window=0), ValueError),
    ("PushSource", lambda: rstreams.PushSource(overflow="drop"), TypeError),  # type: ignore[arg-type]
    ("PushSource", lambda: rstreams.PushSource(overflow=OverflowStrategy.LATEST, capacity=0), ValueError),
    ("MulticastProcessor", lambda: rstreams.MulticastProcessor(buffer_size=0), ValueError),
    ("MulticastProcessor", lambda: rstreams.MulticastProcessor(replay=-1), ValueError),
    ("MulticastProcessor", lambda: rstreams.MulticastProcessor(buffer_size="8"), TypeError),  # type: ignore[arg-type]
    ("MulticastProcessor", lambda: rstreams.MulticastProcessor(replay=1.5), TypeError),  # type: ignore[arg-type]
]

SOURCES = sorted({name for name, _, _ in BAD_CALLS})


def raises_section(name: str) -> str:
    """The ``Raises:`` section of ``rstreams.<name>``'s docstring ('' without one)."""
    doc = inspect.getdoc(getattr(rstreams, name)) or ""
    return doc.partition("\nRaises:\n")[2]


@pytest.mark.parametrize(("name", "call", "expected"), BAD_CALLS)
def test_a_bad_argument_raises_the_listed_error_naming_the_function(
    name: str, call: Callable[[], object], expected: type[Exception]
) -> None:
    """The call raises exactly ``expected``, says which function refused, and the docs list it."""
    with pytest.raises(expected) as caught:
        call()
    assert type(caught.value) is expected
    assert name in str(caught.value), f"the message does not name {name}: {caught.value}"
    assert expected.__name__ in raises_section(name), f"rstreams.{name} does not list {expected.__name__}"


@pytest.mark.parametrize("name", SOURCES)
def test_each_type_a_docstring_lists_is_raised_by_some_call(name: str) -> None:
    """No ``Raises:`` entry is left untested: each type it names is raised by a call above."""
    raised = {expected.__name__ for other, _, expected in BAD_CALLS if other == name}
    listed = {kind for kind in ("TypeError", "ValueError") if kind in raises_section(name)}
    assert listed == raised


def test_range_with_a_step_but_no_stop_shows_the_call_that_counts_from_zero() -> None:
    """``range(5, step=2)`` would ignore its step; the error shows ``range(0, 5, 2)`` instead."""
    with pytest.raises(TypeError, match=r"range\(0, 5, 2\)"):
        rstreams.range(5, step=2)
    assert rstreams.range(0, 5, 2).collect().result(5) == [0, 2, 4]


def test_interval_and_timer_take_a_real_loop_or_anything_with_its_clock_methods() -> None:
    """The loop check refuses a non-loop but accepts a real event loop (the virtual test loop
    is accepted too: the clock tests run on it)."""
    loop = asyncio.new_event_loop()
    try:
        assert isinstance(rstreams.interval(1, loop=loop), rstreams.Flow)
        assert isinstance(rstreams.timer(0, loop=loop), rstreams.Flow)
    finally:
        loop.close()
