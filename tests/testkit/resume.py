"""What the resumption tests share: a Subscriber that requests in batches and records what arrives,
and a raw peer's wait for its resumeToken."""

from __future__ import annotations

import asyncio

from rstreams.api import Subscriber, Subscription
from rstreams.wire import ExtensionMessage, FrameParser
from rstreams.wire._resume import RESUME_TOKEN
from testkit.bound import within
from testkit.net import WAIT

SIZE = 64
"""Bytes per patterned test element: an 8-byte counter padded, so that cuts land inside frames."""


class Collector(Subscriber[bytes]):
    """Requests in batches of ``batch`` (so request frames cross the cuts too); checks order as it goes."""

    def __init__(self, batch: int = 256, *, pattern: bool = True) -> None:
        self.batch = batch
        self.pattern = pattern
        self.items: list[int] = []
        self.error: BaseException | None = None
        self.completed = False
        self.done = asyncio.Event()
        self.progress = asyncio.Event()
        self.subscription: Subscription | None = None
        self._outstanding = 0

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        self._outstanding = self.batch
        subscription.request(self.batch)

    def on_next(self, item: bytes) -> None:
        if self.pattern:
            value = int.from_bytes(item[:8], "big")
            assert item == value.to_bytes(8, "big") * (SIZE // 8), "element corrupted"
        else:
            value = int.from_bytes(item, "big")
        self.items.append(value)
        self.progress.set()
        self._outstanding -= 1
        if self._outstanding == self.batch // 2 and self.subscription is not None:
            self._outstanding += self.batch
            self.subscription.request(self.batch)

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.done.set()

    def on_complete(self) -> None:
        self.completed = True
        self.done.set()

    async def wait_items(self, n: int) -> None:
        async def loop() -> None:
            while len(self.items) < n and not self.done.is_set():
                self.progress.clear()
                await self.progress.wait()

        await within(loop())

    async def finished(self, timeout: float = WAIT) -> None:  # noqa: ASYNC109
        await within(self.done.wait(), timeout)


async def read_resume_token(reader: asyncio.StreamReader) -> tuple[bytes, int]:
    """A raw peer reads until the server's resumeToken (PROTOCOL.md §16.2) has come: the token,
    and the bytes received so far (what a resume then counts as received)."""
    parser = FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)
    received, token = 0, None
    while token is None:
        data = await within(reader.read(1 << 16))
        assert data, "the server closed before sending its resumeToken"
        received += len(data)
        frames = parser.feed(data)
        token = next(
            (f.payload for f in frames if isinstance(f, ExtensionMessage) and f.type == RESUME_TOKEN), None
        )
    return token, received
