"""An ``async def`` function where rstreams calls a plain one is refused when the chain is built.

Operators, hooks and sinks call the user's function and use what it returns at once; an
async function returns a coroutine that nobody awaits. Left alone, ``map`` would emit
coroutine objects, ``filter`` would keep everything (a coroutine is true), and
``retry_when`` would resubscribe for ever: the ``TypeError`` comes at the call instead,
naming the operator and the argument, and shows the way to await per element.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

import rstreams

pytestmark = pytest.mark.timeout(30)

S = rstreams.range(3)


async def double(x: Any) -> Any:
    return x * 2


async def doubles(x: int) -> AsyncIterator[int]:
    yield x * 2


class AsyncCall:
    async def __call__(self, *args: Any) -> Any:
        return True


CALLS: list[tuple[Callable[[Any], object], str]] = [
    (lambda fn: S.map(fn), "map(fn)"),
    (lambda fn: S.filter(fn), "filter(predicate)"),
    (lambda fn: S.scan(fn, 0), "scan(fn)"),
    (lambda fn: S.distinct(fn), "distinct(key=)"),
    (lambda fn: S.distinct_until_changed(fn), "distinct_until_changed(key=)"),
    (lambda fn: S.take_while(fn), "take_while(predicate)"),
    (lambda fn: S.skip_while(fn), "skip_while(predicate)"),
    (lambda fn: S.group_by(fn), "group_by(key)"),
    (lambda fn: S.concat_map(fn), "concat_map(fn)"),
    (lambda fn: S.flat_map(fn), "flat_map(fn)"),
    (lambda fn: S.switch_map(fn), "switch_map(fn)"),
    (lambda fn: S.on_error_resume(fn), "on_error_resume(fn)"),
    (lambda fn: S.retry_when(fn), "retry_when(predicate)"),
    (lambda fn: S.tap(fn), "tap(on_next=)"),
    (lambda fn: S.tap(on_error=fn), "tap(on_error=)"),
    (lambda fn: S.do_on_next(fn), "do_on_next(fn)"),
    (lambda fn: S.do_on_complete(fn), "do_on_complete(fn)"),
    (lambda fn: S.on_backpressure_drop(fn), "on_backpressure_drop(on_drop=)"),
    (lambda fn: S.for_each(fn), "for_each(on_next)"),
    (lambda fn: S.reduce(fn, 0), "reduce(fn)"),
]


@pytest.mark.parametrize(
    "fn",
    [double, doubles, functools.partial(double), AsyncCall()],
    ids=["async-def", "async-generator", "partial", "async-call"],
)
@pytest.mark.parametrize(("call", "name"), CALLS, ids=[name for _, name in CALLS])
def test_an_async_function_is_refused_when_built(call: Callable[[Any], object], name: str, fn: Any) -> None:
    with pytest.raises(TypeError, match="^" + re.escape(f"{name} needs a plain function")) as caught:
        call(fn)
    assert "without awaiting" in str(caught.value)
    assert "concat_map(lambda x: rstreams.from_async_iterable(" in str(caught.value)


def test_the_way_the_message_shows_awaits_each_element_in_order() -> None:
    async def main() -> list[int]:
        return await S.concat_map(lambda x: rstreams.from_async_iterable(doubles(x))).collect()

    assert asyncio.run(main()) == [0, 2, 4]


def test_a_plain_function_is_taken_as_before() -> None:
    assert S.map(lambda x: x + 1).collect().result(5) == [1, 2, 3]
