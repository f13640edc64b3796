"""Test tools for rstreams.net: a recording transport handler; every wait is bounded."""

from __future__ import annotations

import asyncio
from typing import Any

from rstreams.net._transport import Transport

WAIT = 10.0


class RecordingHandler:
    """A TransportHandler that records what arrives and can echo it back."""

    def __init__(self, *, echo: bool = False) -> None:
        self.echo = echo
        self.transport: Transport | None = None
        self.data = bytearray()
        self.eof = False
        self.lost: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()
        self.paused = 0
        self.resumed = 0
        self.made = asyncio.Event()
        self._changed = asyncio.Event()

    def connection_made(self, transport: Transport) -> None:
        self.transport = transport
        self.made.set()

    def data_received(self, data: memoryview) -> None:
        self.data += data
        self._changed.set()
        if self.echo and self.transport is not None:
            self.transport.writelines([bytes(data)])

    def eof_received(self) -> None:
        self.eof = True
        self._changed.set()
        if self.transport is not None:
            self.transport.close()  # StreamProtocol keeps the write side open: the handler decides

    def connection_lost(self, error: BaseException | None) -> None:
        if not self.lost.done():
            self.lost.set_result(error)
        self._changed.set()

    def pause_writing(self) -> None:
        self.paused += 1
        self._changed.set()

    def resume_writing(self) -> None:
        self.resumed += 1
        self._changed.set()

    async def wait_for(self, predicate: object, what: str) -> None:
        async def loop() -> None:
            while not predicate():  # type: ignore[operator]
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(loop(), WAIT)
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None

    async def wait_bytes(self, n: int) -> bytes:
        await self.wait_for(lambda: len(self.data) >= n or self.lost.done(), f"{n} bytes")
        return bytes(self.data)


class CountingSource:
    """A Publisher of ``size``-byte elements (big-endian counters), ``limit`` of them or endless.

    Records how many elements were pulled and whether a subscription was cancelled, so
    tests can check what the serving side asked its local Publisher for.
    """

    def __init__(self, *, size: int = 8, limit: int | None = None) -> None:
        self.size = size
        self.limit = limit
        self.pulled = 0
        self.requests: list[int] = []
        self.cancelled = asyncio.Event()
        self.subscribed = asyncio.Event()
        self.progress = asyncio.Event()  # set after every request that produced elements

    async def wait_pulled(self, n: int) -> None:
        """Wait (bounded) until more than ``n`` elements were pulled in total."""

        async def loop() -> None:
            while self.pulled <= n:
                self.progress.clear()
                await self.progress.wait()

        await asyncio.wait_for(loop(), WAIT)

    def subscribe(self, subscriber: Any) -> None:
        subscription = _CountingSubscription(self, subscriber)
        self.subscribed.set()
        subscriber.on_subscribe(subscription)


class _CountingSubscription:
    def __init__(self, source: CountingSource, subscriber: Any) -> None:
        self.source = source
        self.subscriber = subscriber
        self.demand = 0
        self.sent = 0
        self.emitting = False
        self.stopped = False

    def request(self, n: int) -> None:
        if self.stopped:
            return
        if n <= 0:
            self.stopped = True
            self.subscriber.on_error(ValueError(f"rule 3.9: got {n}"))
            return
        self.source.requests.append(n)
        self.demand = min(self.demand + n, 2**63 - 1)
        if self.emitting:
            return
        self.emitting = True
        source = self.source
        while self.demand > 0 and not self.stopped:
            if source.limit is not None and self.sent >= source.limit:
                self.stopped = True
                self.subscriber.on_complete()
                break
            self.demand -= 1
            self.sent += 1
            source.pulled += 1
            self.subscriber.on_next(self.sent.to_bytes(source.size, "big"))
        else:
            if source.limit is not None and self.sent >= source.limit and not self.stopped:
                self.stopped = True
                self.subscriber.on_complete()
        self.emitting = False
        source.progress.set()

    def cancel(self) -> None:
        self.stopped = True
        self.source.cancelled.set()
