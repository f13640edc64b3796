"""Batched streams: lists of elements per on_next, demand counted in elements."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

import rstreams
from rstreams.net import FLOAT64, INT64, JSON, Codec, connect, fixed_size, serve, with_codec
from testkit.recording import RecordingSubscriber

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(180)]

GUARD = 120.0
"""A hang guard for each wait of these tests, not a time they must meet: at load 30 on two cores
a step that takes milliseconds alone can take seconds; the module's timeout is above it."""


def int_lists(params: dict[str, str]) -> rstreams.Flow[list[int]]:
    """``ints?n=..&chunk=..``: 0..n-1 in lists of ``chunk``, made as they are requested (a
    cancelled stream of a million never builds the lists it does not send)."""
    n, chunk = int(params.get("n", "100")), int(params.get("chunk", "10"))
    return rstreams.from_iterable(list(range(i, min(n, i + chunk))) for i in range(0, n, chunk))


OFFER: dict[str, Any] = {
    "ints": with_codec(int_lists, INT64, batched=True),
    "plain": with_codec(lambda p: rstreams.range(int(p.get("n", "100"))), INT64),
    "raw": lambda p: rstreams.from_iterable([b"a", b"bb", b"ccc"]),
    "json": with_codec(lambda p: rstreams.from_iterable([{"a": 1}, [2]]), JSON),
}


async def within(awaitable: Any) -> Any:
    try:
        return await asyncio.wait_for(awaitable, GUARD)
    except TimeoutError:
        raise AssertionError(f"not done after {GUARD}s (a hang guard)") from None


class Recorder(RecordingSubscriber[list[int]]):
    """A RecordingSubscriber that the test's loop can wait on: each signal sets an event (the
    connection delivers on that loop)."""

    def __init__(self, initial: int) -> None:
        super().__init__(initial)
        self.changed = asyncio.Event()

    def on_subscribe(self, subscription: Any) -> None:
        super().on_subscribe(subscription)
        self.changed.set()

    def on_next(self, item: list[int]) -> None:
        super().on_next(item)
        self.changed.set()

    def on_error(self, error: BaseException) -> None:
        super().on_error(error)
        self.changed.set()

    def on_complete(self) -> None:
        super().on_complete()
        self.changed.set()

    async def until(self, predicate: Callable[[], bool], what: str) -> None:
        async def loop() -> None:
            while not predicate():
                self.changed.clear()
                await self.changed.wait()

        try:
            await asyncio.wait_for(loop(), GUARD)
        except TimeoutError:
            raise AssertionError(
                f"{what}: not so after {GUARD}s (a hang guard); {self.signals[-5:]}"
            ) from None


async def test_codec_batches() -> None:
    assert INT64.decode_batch(INT64.encode_batch([1, -2, 2**63 - 1])) == [1, -2, 2**63 - 1]
    assert FLOAT64.decode_batch(FLOAT64.encode_batch([1.5, -0.0])) == [1.5, -0.0]
    raw = fixed_size(2)
    assert raw.decode_batch(raw.encode_batch([b"ab", b"cd"])) == [b"ab", b"cd"]
    plain: Codec[int] = Codec(lambda i: bytes([i]), lambda b: b[0], 1)  # no *_many: per-element fallback
    assert plain.decode_batch(plain.encode_batch([1, 2, 3])) == [1, 2, 3]
    with pytest.raises(TypeError):
        Codec(bytes, bytes, 1, encode_many=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fixed-size"):
        with_codec(int_lists, JSON, batched=True)


async def test_batched_both_sides_end_to_end() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server, await connect(server.url) as conn:
        lists = await within(conn.publisher("ints?n=100000&chunk=3000", codec=INT64, batched=True).collect())
        assert all(isinstance(batch, list) and batch for batch in lists)
        assert [x for batch in lists for x in batch] == list(range(100_000))
        assert len(lists) < 100  # packed frames, not single elements


async def test_batched_subscriber_of_a_plain_packed_publisher() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server, await connect(server.url) as conn:
        lists = await within(conn.publisher("plain?n=5000", codec=INT64, batched=True).collect())
        assert [x for batch in lists for x in batch] == list(range(5000))
        # ...and a plain subscriber of a batched publisher sees single elements
        assert await within(conn.publisher("ints?n=50&chunk=7", codec=INT64).collect()) == list(range(50))


async def test_batched_subscriber_of_unpacked_streams() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server, await connect(server.url) as conn:
        lists = await within(conn.publisher("raw", batched=True).collect())
        assert [x for batch in lists for x in batch] == [b"a", b"bb", b"ccc"]
        lists = await within(conn.publisher("json", codec=JSON, batched=True).collect())
        assert [x for batch in lists for x in batch] == [{"a": 1}, [2]]


async def test_demand_counts_elements_and_batches_are_held() -> None:
    """request(n) lets exactly n elements through, whatever size the publisher's lists are."""
    async with await serve("tcp://127.0.0.1:0", OFFER) as server, await connect(server.url) as conn:
        subscriber = Recorder(initial=5)
        conn.publisher("ints?n=40&chunk=16", codec=INT64, batched=True).subscribe(subscriber)

        def count() -> int:
            return sum(map(len, subscriber.items))

        async def settled() -> None:
            """A request's answer on the same connection comes after every frame the server
            sent for the demand it had taken before (its source is synchronous)."""
            assert await within(conn.request("ints?n=3&chunk=3", codec=INT64)) == 0

        await subscriber.until(lambda: bool(subscriber.items), "the first list")
        await settled()
        assert count() == 5 and not subscriber.completed
        subscriber.request(20)
        await subscriber.until(lambda: count() >= 25, "25 elements")
        await settled()
        assert count() == 25 and not subscriber.completed  # held: the completion waits too
        subscriber.request(100)
        await subscriber.until(lambda: subscriber.done, "a terminal signal")
        assert subscriber.signals[-1] == "on_complete" and subscriber.error is None
        assert [x for batch in subscriber.items for x in batch] == list(range(40))


async def test_cancel_stops_a_batched_publisher() -> None:
    async with await serve("tcp://127.0.0.1:0", OFFER) as server, await connect(server.url) as conn:
        subscriber = Recorder(initial=10)
        conn.publisher("ints?n=1000000&chunk=4", codec=INT64, batched=True).subscribe(subscriber)
        await subscriber.until(lambda: bool(subscriber.items), "the first list")
        assert subscriber.subscription is not None
        subscriber.subscription.cancel()
        # a request after the cancel, on the same connection: its answer comes after every
        # frame the server sent before it took the cancel
        assert await within(conn.request("ints?n=3&chunk=3", codec=INT64)) == 0
        assert sum(map(len, subscriber.items)) <= 10
        assert conn.statistics().subscribing == 0  # the cancel took it out of the table at once
