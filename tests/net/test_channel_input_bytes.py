"""A channel's opener pulls its input by bytes and writability (PROTOCOL.md §21.4, §21.6): a
server granting a large input window does not make the opener queue that many large elements,
so its own connection never passes MAX_UNSENT and a reading peer is never judged not reading."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.net import connect, serve
from rstreams.net._intake import MAX_UNSENT
from testkit.bound import within
from testkit.net import CountingSource

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(120)]

WAIT = 90.0
MIB = 1 << 20


class _Granting(Subscriber[bytes]):
    """Requests ``window`` input elements at once and again each time they all arrived; counts bytes."""

    def __init__(self, window: int, done: asyncio.Future[int]) -> None:
        self._window = window
        self._done = done
        self._left = 0
        self._subscription: Subscription | None = None
        self.total = 0

    def on_subscribe(self, subscription: Subscription) -> None:
        self._subscription = subscription
        self._left = self._window
        subscription.request(self._window)

    def on_next(self, item: bytes) -> None:
        self.total += len(item)
        self._left -= 1
        if self._left == 0 and self._subscription is not None:
            self._left = self._window
            self._subscription.request(self._window)

    def on_error(self, error: BaseException) -> None:
        if not self._done.done():
            self._done.set_exception(error)

    def on_complete(self) -> None:
        if not self._done.done():
            self._done.set_result(self.total)


def _granting(window: int) -> Any:
    def factory(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        source.subscribe(_Granting(window, done))

        async def count() -> Any:
            yield str(await done).encode()

        return rstreams.from_async_iterable(count())

    return factory


@pytest.mark.parametrize("count", [64, 300])
async def test_a_large_grant_of_one_mib_input_elements_completes(count: int) -> None:
    """300 MiB of input would be 18 times MAX_UNSENT, granted 256 elements at once."""
    assert count * MIB > MAX_UNSENT or count == 64
    source = CountingSource(size=MIB, limit=count)
    async with (
        await serve("tcp://127.0.0.1:0", {}, channels={"count": _granting(256)}) as server,
        await connect(server.url) as conn,
    ):
        answer = await within(conn.channel("count", source).collect(), WAIT)
    assert answer == [str(count * MIB).encode()]
    assert source.requests == [1] * count  # one WRITE_LIMIT's worth per turn: one element
