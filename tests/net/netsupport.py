"""Test tools for rstreams.net: a recording transport handler; every wait is bounded."""

from __future__ import annotations

import asyncio

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
