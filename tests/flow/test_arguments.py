"""A bad argument to an operator or sink: the exception docs/operators.md promises, at the call.

A wrong type is a ``TypeError``, a wrong value a ``ValueError``, and the message names the
operator and the argument as the user wrote them.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


S = rstreams.range(3)

CALLS: list[tuple[Callable[[asyncio.AbstractEventLoop], object], type[Exception], str]] = [
    (lambda _: S.element_at(-1), ValueError, "element_at(index) needs index >= 0, got -1"),
    (lambda _: S.element_at(1.0), TypeError, "element_at(index) needs an int, got 1.0"),  # type: ignore[arg-type]
    (lambda _: S.do_on_error(3), TypeError, "do_on_error(fn) needs a callable, got 3"),  # type: ignore[arg-type]
    (lambda _: S.do_on_complete(3), TypeError, "do_on_complete(fn) needs a callable, got 3"),  # type: ignore[arg-type]
    (lambda _: S.do_on_cancel(3), TypeError, "do_on_cancel(fn) needs a callable, got 3"),  # type: ignore[arg-type]
    (lambda _: S.do_on_request(3), TypeError, "do_on_request(fn) needs a callable, got 3"),  # type: ignore[arg-type]
    (lambda _: S.pipe(3), TypeError, "pipe() needs functions Flow -> Flow, got 3"),  # type: ignore[arg-type]
    (lambda _: S.share(buffer_size="8"), TypeError, "share(buffer_size=) needs an int, got '8'"),  # type: ignore[arg-type]
    (lambda _: S.ref_count(buffer_size=1.5), TypeError, "ref_count(buffer_size=) needs an int, got 1.5"),  # type: ignore[arg-type]
    (lambda _: S.replay(1, buffer_size=True), TypeError, "replay(buffer_size=) needs an int, got True"),
    (lambda loop: S.observe_on(loop, buffer_size="8"), TypeError, "observe_on(buffer_size=...) needs an int"),  # type: ignore[arg-type]
    (lambda loop: S.publish_on(loop, buffer_size=1.5), TypeError, "publish_on(buffer_size=...) needs an int"),  # type: ignore[arg-type]
    (lambda _: S.iter_async(window="8"), TypeError, "iter_async(window=...) needs an int, got '8'"),  # type: ignore[arg-type]
    (lambda _: S.iter_blocking(window=1.5), TypeError, "iter_blocking(window=...) needs an int, got 1.5"),  # type: ignore[arg-type]
    (lambda _: S.iter_blocking(timeout="1"), TypeError, "iter_blocking(timeout=...) needs a number"),  # type: ignore[arg-type]
    (lambda _: S.element_at(None), TypeError, "element_at(index) needs an int, got None"),  # type: ignore[arg-type]
    (lambda _: S.group_by(None), TypeError, "group_by(key) needs a callable, got None"),  # type: ignore[arg-type]
    (lambda _: S.window(None), TypeError, "window: count needs an int, got None"),  # type: ignore[arg-type]
    (lambda _: S.start_with(1, None), TypeError, "start_with(*items) got None"),  # type: ignore[arg-type]
    (lambda _: S.debounce(float("nan")), ValueError, "debounce(seconds) needs seconds >= 0, got nan"),
    (lambda _: S.retry(1, backoff=float("nan")), ValueError, "retry(backoff=) needs seconds >= 0, got nan"),
    (lambda _: S.retry(1, jitter="0.5"), TypeError, "retry(jitter=) needs a fraction"),  # type: ignore[arg-type]
    (lambda _: S.concat_with(3), TypeError, "concat_with() needs Publishers (objects with subscribe), got 3"),  # type: ignore[arg-type]
    (lambda _: S.merge_with(None), TypeError, "merge_with() needs Publishers (objects with subscribe)"),  # type: ignore[arg-type]
    (lambda _: S.merge_with(S, prefetch=0), ValueError, "merge_with: prefetch needs an int >= 1, got 0"),
    (lambda _: S.zip_with(3), TypeError, "zip_with() needs Publishers (objects with subscribe), got 3"),  # type: ignore[arg-type]
    (lambda _: S.combine_latest_with(S, prefetch=0), ValueError, "combine_latest_with: prefetch needs"),
    (lambda _: S.race_with(S, prefetch="1"), TypeError, "race_with: prefetch needs an int, got '1'"),  # type: ignore[arg-type]
    (lambda _: rstreams.zip(S, 3), TypeError, "zip() needs Publishers (objects with subscribe), got 3"),  # type: ignore[arg-type]
]  # fmt: skip


@pytest.mark.parametrize(("call", "kind", "message"), CALLS, ids=[c[2].partition("(")[0] for c in CALLS])
def test_a_bad_argument_is_refused_at_the_call_naming_it(
    call: Callable[[asyncio.AbstractEventLoop], Any],
    kind: type[Exception],
    message: str,
    loop: asyncio.AbstractEventLoop,
) -> None:
    with pytest.raises(kind, match="^" + re.escape(message)) as caught:
        call(loop)
    assert type(caught.value) is kind
