"""Deliberately broken RS.io servers: rstreams' own server behind a relay that breaks one rule.

A :class:`Tamper` listens on a loopback TCP port and relays each connection to a real
``rstreams.net`` server, reading the frames of one direction and changing them as its mode
says; everything else passes as it came, so the broken server is the real one in every other
respect (hellos, extensions, the conformance publishers). The modes, each a careless
implementation's mistake (tests/conformance/test_driver.py's ``_Sloppy`` is the one that
ignores demand):

- ``deaf-to-pings``: answers the client's pings itself and does not relay them, so the
  server's idle clock never hears them (PROTOCOL.md §14.2: a ping received is activity);
- ``no-goodbye``: drops the server's goodbyes and ends the connection where it said one, so
  a protocol violation is answered by a bare close (§9.1, §10);
- ``ignores-cancel``: does not relay the client's cancels, so a cancelled stream goes on
  and is never acknowledged (§5.4);
- ``complete-first``: sends each stream's onComplete before the last element it read before
  it, in the same write (onComplete overtaking queued elements: §5.2, Reactive Streams 1.7).

The relay reads what it changes with :class:`rstreams.wire.FrameParser`; input it cannot
parse (the framing cases' malformed bytes) ends the connection, so a mode that reads the
client's direction is run with cases that send well-formed frames only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rstreams.net import parse_url
from rstreams.wire import (
    Cancel,
    ExtensionMessage,
    Frame,
    FrameParser,
    Goodbye,
    OnComplete,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnSubscribe,
    encode,
)
from rstreams.wire.events import Answer, OnNextBatch

__all__ = ["MODES", "Tamper"]

PING, PONG = 0x80, 0x81
MODES = ("deaf-to-pings", "no-goodbye", "ignores-cancel", "complete-first")


class _Link:
    """One relayed connection: the client's streams, the server's, and what a mode changes."""

    def __init__(
        self,
        modes: frozenset[str],
        client: tuple[asyncio.StreamReader, asyncio.StreamWriter],
        server: tuple[asyncio.StreamReader, asyncio.StreamWriter],
    ) -> None:
        self.modes = modes
        self.client_reader, self.client_writer = client
        self.server_reader, self.server_writer = server
        self.ending = False
        """Set by a change that ends the connection after what it returned."""

    async def run(self) -> None:
        from_client = self._from_client if self._reads_client else None
        from_server = self._from_server if self._reads_server else None
        up = self._pump(self.client_reader, self.server_writer, from_client)
        down = self._pump(self.server_reader, self.client_writer, from_server)
        await asyncio.gather(up, down)

    @property
    def _reads_client(self) -> bool:
        return bool(self.modes & {"deaf-to-pings", "ignores-cancel"})

    @property
    def _reads_server(self) -> bool:
        return bool(self.modes & {"no-goodbye", "complete-first"})

    async def _pump(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        change: Callable[[list[Frame]], list[Frame]] | None,
    ) -> None:
        """Relay ``reader`` to ``writer``. ``change`` gets each read's frames and returns the
        frames to relay instead (and sets :attr:`ending` to end the connection after them).
        Input that does not parse ends the connection."""
        parser = FrameParser(max_element_size=1 << 27, max_string_length=1 << 20, max_extensions=1 << 16)
        sizes: dict[int, int] = {}  # the fixed element size of each stream (§7), to write elements back
        try:
            while data := await reader.read(65536):
                if change is not None:
                    frames = parser.feed(data)
                    assert not any(isinstance(f, OnNextBatch | Answer | tuple) for f in frames)
                    if parser.error is not None:
                        self.close()
                        return
                    # whole frames only: a frame's bytes may straddle two reads
                    data = b"".join(_encode(f, sizes) for f in change(list(frames)))  # type: ignore[arg-type]
                writer.write(data)
                if self.ending:
                    self.close()
                    return
                await writer.drain()
            if writer.can_write_eof():
                writer.write_eof()
        except OSError:  # a reset on either side: reset the other
            self.abort()

    def _from_client(self, frames: list[Frame]) -> list[Frame]:
        out: list[Frame] = []
        for frame in frames:
            if "deaf-to-pings" in self.modes and isinstance(frame, ExtensionMessage) and frame.type == PING:
                self.client_writer.write(encode(ExtensionMessage(type=PONG, payload=frame.payload)))
            elif not ("ignores-cancel" in self.modes and isinstance(frame, Cancel)):
                out.append(frame)
        return out

    def _from_server(self, frames: list[Frame]) -> list[Frame]:
        if "no-goodbye" in self.modes:
            for index, frame in enumerate(frames):
                if isinstance(frame, Goodbye):
                    self.ending = True
                    frames = frames[:index]
                    break
        if "complete-first" not in self.modes:
            return frames
        for index, frame in enumerate(frames):
            if isinstance(frame, OnComplete):
                sid = frame.subscriber
                last = max((i for i in range(index) if _element_of(frames[i], sid)), default=None)
                if last is not None:
                    frames.insert(last, frames.pop(index))
        return frames

    def close(self) -> None:
        for writer in (self.client_writer, self.server_writer):
            writer.close()

    def abort(self) -> None:
        for writer in (self.client_writer, self.server_writer):
            writer.transport.abort()


def _element_of(frame: Frame, sid: int) -> bool:
    return isinstance(frame, OnNext | OnNextPacked | OnNextLastPart) and frame.subscriber == sid


def _encode(frame: Frame, sizes: dict[int, int]) -> bytes:
    """``frame``'s bytes, noting a stream's fixed element size as its onSubscribe passes."""
    if isinstance(frame, OnSubscribe):
        sizes[frame.subscriber] = frame.element_size
    size = sizes.get(frame.subscriber, 0) if isinstance(frame, OnNext) else 0
    return encode(frame, element_size=size)


class Tamper:
    """A relay in front of ``upstream`` (an ``rstreams.net`` server's ``tcp://`` URL) that breaks
    the rules its ``modes`` say (each one of :data:`MODES`); :attr:`url` is where the suite
    connects."""

    def __init__(self, upstream: str, *modes: str) -> None:
        unknown = set(modes) - set(MODES)
        if unknown or not modes:
            raise ValueError(f"modes must be among {MODES}, got {modes!r}")
        self.upstream = parse_url(upstream)
        self.modes = frozenset(modes)
        self.url = ""
        self._server: asyncio.Server | None = None
        self._links: set[_Link] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> Tamper:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self.url = f"tcp://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"
        return self

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            server = await asyncio.open_connection(self.upstream.host, self.upstream.port)
        except OSError:
            writer.transport.abort()
            self._tasks.discard(task)
            return
        link = _Link(self.modes, (reader, writer), server)
        self._links.add(link)
        try:
            await link.run()
        finally:
            link.close()
            self._links.discard(link)
            self._tasks.discard(task)

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for link in list(self._links):
            link.abort()  # each link's task then ends
        await asyncio.gather(*self._tasks, return_exceptions=True)
