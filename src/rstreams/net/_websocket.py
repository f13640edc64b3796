"""WebSocket transport over the ``websockets`` library's asyncio API (the ``websockets`` extra).

RS.io frames travel in binary WebSocket messages, with no relation between the two
framings: one message may carry many RS.io frames, and one frame may span messages
(the byte stream is what counts, as on TCP). A text message is a protocol error.

Theory of operation: :meth:`WebSocketTransport.run` is the connection's one task. It
reads messages and hands each to the handler as a memoryview; a second task writes.
``writelines`` never blocks: it appends to an output list and wakes the writer, which
joins everything queued into messages of at most :data:`MAX_MESSAGE` bytes and awaits
``send`` for each. The bytes queued here (plus the message being sent) are the transport's
write buffer size; passing the high mark calls ``pause_writing`` and draining below the
low mark calls ``resume_writing``, exactly like asyncio's socket transports.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, cast

from websockets.asyncio.connection import Connection as _WsConnection
from websockets.exceptions import ConnectionClosed, ConnectionClosedOK

from rstreams.net._transport import DEFAULT_HIGH_WATER, DEFAULT_LOW_WATER, Transport, TransportHandler

__all__ = ["MAX_MESSAGE", "SUBPROTOCOL", "WebSocketTransport"]

MAX_MESSAGE = 256 * 1024
"""Largest message this side sends: a quarter of websockets' default ``max_size`` (1 MiB),
so any default-configured peer accepts it, and big enough that message overhead vanishes."""

SUBPROTOCOL = "rsio.v0"
"""The WebSocket subprotocol both sides offer (RFC 6455 section 1.9)."""


class WebSocketTransport(Transport):
    """One WebSocket connection as an RS.io byte transport."""

    def __init__(
        self,
        ws: _WsConnection,
        handler: TransportHandler,
        *,
        high: int = DEFAULT_HIGH_WATER,
        low: int = DEFAULT_LOW_WATER,
    ) -> None:
        self._ws = ws
        self._handler = handler
        self._high = high
        self._low = low
        self._out: list[bytes] = []
        self._size = 0
        self._paused = False
        self._closing = False
        self._aborted: BaseException | None = None
        self._wakeup = asyncio.Event()
        self._reading = asyncio.Event()
        self._reading.set()

    async def run(self) -> None:
        """Serve the connection until it ends; ``handler.connection_lost`` is the last call."""
        self._handler.connection_made(self)
        writer = asyncio.create_task(self._write_loop(), name="rstreams-ws-writer")
        error: BaseException | None = None
        try:
            error = await self._read_loop()
        finally:
            self._closing = True
            self._wakeup.set()
            if error is not None or self._aborted is not None:
                writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await writer
            self._handler.connection_lost(self._aborted or error)

    async def _read_loop(self) -> BaseException | None:
        ws = self._ws
        handler = self._handler
        while True:
            if not self._reading.is_set():
                await self._reading.wait()
            try:
                message = await ws.recv()
            except ConnectionClosedOK:
                handler.eof_received()
                return None
            except ConnectionClosed as closed:
                return cast(BaseException, closed)
            if isinstance(message, str):
                await ws.close(1003, "RS.io uses binary messages")  # 1003: unsupported data
                return ValueError("the peer sent a text WebSocket message; RS.io uses binary messages")
            handler.data_received(memoryview(message))

    async def _write_loop(self) -> None:
        ws = self._ws
        while True:
            while not self._out:
                if self._closing:
                    await ws.close()
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
            chunks, self._out = self._out, []
            data = chunks[0] if len(chunks) == 1 else b"".join(chunks)
            view = memoryview(data)
            for start in range(0, len(data), MAX_MESSAGE):
                piece = view[start : start + MAX_MESSAGE]
                await ws.send(piece)
                self._size -= len(piece)
                if self._paused and self._size <= self._low:
                    self._paused = False
                    self._handler.resume_writing()

    # -- Transport -----------------------------------------------------------------
    def writelines(self, chunks: list[bytes]) -> None:
        if self._closing:
            return
        self._out.extend(chunks)
        self._size += sum(map(len, chunks))
        self._wakeup.set()
        if not self._paused and self._size > self._high:
            self._paused = True
            self._handler.pause_writing()

    def get_write_buffer_size(self) -> int:
        return self._size

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self._high, self._low = high, low
        if not self._paused and self._size > high:
            self._paused = True
            self._handler.pause_writing()

    def pause_reading(self) -> None:
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def can_write_eof(self) -> bool:
        return False  # a WebSocket closes both directions at once

    def write_eof(self) -> None:
        """Does nothing: a WebSocket cannot half-close (:meth:`can_write_eof` is false)."""

    def close(self) -> None:
        self._closing = True
        self._wakeup.set()

    def abort(self) -> None:
        if self._aborted is None:
            self._aborted = ConnectionAbortedError("the WebSocket connection was aborted")
        self._closing = True
        self._out.clear()
        self._reading.set()
        self._ws.transport.abort()

    def is_closing(self) -> bool:
        return self._closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "websocket":
            return self._ws
        return self._ws.transport.get_extra_info(name, default)
