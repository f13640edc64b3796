"""A scripted client connection: send frames or raw bytes, read frames with deadlines.

:class:`Peer` wraps a :class:`~rstreams.conformance._transport.RawTransport`. What it
sends may be frames (encoded with :func:`rstreams.wire.encode` and accounted by the
:class:`~rstreams.conformance._monitor.Monitor`) or raw bytes (malformed input, not
accounted). What it reads is decoded with :class:`rstreams.wire.FrameParser` and checked
by the monitor before any case sees it. Every wait has a deadline; running into it fails
the case with a message saying what was awaited (a hang is a failure, never a stall).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

from rstreams.conformance._monitor import Monitor, ServedView, StreamView
from rstreams.conformance._transport import RawTransport
from rstreams.errors import ReactiveStreamsError
from rstreams.net._routes import unknown_message
from rstreams.wire import Frame, FrameParser, Goodbye, OnError, ServerHello, Subscribe, encode
from rstreams.wire.events import Answer, OnNextBatch

__all__ = ["CaseFailure", "Peer"]


class CaseFailure(ReactiveStreamsError, AssertionError):
    """A case's expectation was not met; the message says what and where."""


class Peer:
    """One connection to the endpoint under test; made by ``Context.open``."""

    def __init__(self, raw: RawTransport, *, timeout: float, quiet: float) -> None:
        self.raw = raw
        self.timeout = timeout
        """Default deadline, in seconds, of every wait."""
        self.quiet_window = quiet
        """How long "nothing more arrives" is watched for."""
        self.monitor = Monitor()
        self.received: list[Frame] = []
        """Every frame read so far, in order."""
        self.eof = False
        """The input ended."""
        self.eof_sent = False
        self.malformed: str | None = None
        self._parser = FrameParser(
            max_element_size=1 << 27, max_string_length=1 << 20, max_extensions=1 << 16
        )
        self._pending: deque[Frame] = deque()
        self._tasks: set[asyncio.Task[None]] = set()
        self.offered: set[str] = set()
        """Publisher names the case serves by hand when the server subscribes (see :meth:`offer`)."""
        self._claimed: set[int] = set()

    # -- sending ---------------------------------------------------------------------------
    async def send(self, *items: Frame | bytes) -> None:
        """Send frames and raw byte strings, concatenated, in one write."""
        await self.raw.write(self.prepare(*items))

    async def send_in_pieces(self, *items: Frame | bytes, size: int = 1) -> None:
        """Send like :meth:`send`, but as separate writes of ``size`` bytes (one byte by default)."""
        data = self.prepare(*items)
        for start in range(0, len(data), size):
            await self.raw.write(data[start : start + size])

    def prepare(self, *items: Frame | bytes) -> bytes:
        """Encode ``items`` for sending by hand, accounting the frames in the monitor."""
        out = bytearray()
        for item in items:
            if isinstance(item, bytes | bytearray):
                out += item
            else:
                self.monitor.sent(item)
                out += encode(item)
        return bytes(out)

    async def write_eof(self) -> None:
        """End our output without a goodbye (TCP half-close; WebSocket close)."""
        self.eof_sent = True
        await self.raw.write_eof()

    def abort(self) -> None:
        """Drop the connection (a crash, as the server sees it)."""
        self.raw.abort()

    # -- reading ---------------------------------------------------------------------------
    async def read_frame(self, timeout: float | None = None, what: str = "a frame") -> Frame | None:  # noqa: ASYNC109
        """The next frame, or ``None`` at end of input. Fails after ``timeout`` seconds."""
        deadline = asyncio.get_running_loop().time() + (self.timeout if timeout is None else timeout)
        frame = await self._next(deadline)
        if frame is _TIMEOUT:
            raise CaseFailure(f"timed out waiting for {what}")
        return frame  # type: ignore[return-value]

    async def _next(self, deadline: float) -> Frame | object | None:
        loop = asyncio.get_running_loop()
        while not self._pending:
            if self.eof:
                return None
            remaining = deadline - loop.time()
            if remaining <= 0:
                return _TIMEOUT
            try:
                data = await asyncio.wait_for(self.raw.read(), remaining)
            except TimeoutError:
                return _TIMEOUT
            self._feed(data)
        return self._pending.popleft()

    def _feed(self, data: bytes) -> None:
        if not data:
            self.eof = True
            cut_by_us = self.eof_sent and not self.raw.half_close  # we closed both directions (TLS)
            if self._parser.eof() is not None and self.malformed is None and not cut_by_us:
                self.monitor.violation("§9.3: the server's output ended inside a frame")
            return
        if self.malformed is not None:
            return
        for frame in self._parser.feed(data):
            assert not isinstance(frame, OnNextBatch | Answer | tuple)  # a parser of its own: frames only
            self.monitor.received(frame)
            self.received.append(frame)
            self._pending.append(frame)
            if isinstance(frame, Subscribe) and frame.publisher not in self.offered:
                self._refuse(frame)
        if self._parser.error is not None:
            self.malformed = str(self._parser.error)
            self.monitor.violation(f"§3: the server sent malformed bytes: {self.malformed}")

    def _refuse(self, frame: Subscribe) -> None:
        """Refuse a subscribe to a name the case does not offer (§5.5)."""
        refusal = OnError(subscriber=frame.subscriber, error=unknown_message(frame.publisher))
        task = asyncio.get_running_loop().create_task(self.raw.write(self.prepare(refusal)))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def until(self, predicate: Callable[[], bool], what: str, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Read frames until ``predicate()`` holds; fail at end of input or after ``timeout``."""
        deadline = asyncio.get_running_loop().time() + (self.timeout if timeout is None else timeout)
        while not predicate():
            frame = await self._next(deadline)
            if frame is _TIMEOUT:
                raise CaseFailure(f"timed out waiting for {what}")
            if frame is None and not predicate():
                raise CaseFailure(f"the connection ended while waiting for {what}{self._why()}")

    async def quiet(self, seconds: float | None = None) -> list[Frame]:
        """Read for ``seconds`` (the quiet window); return the frames that *arrived* in it.

        Frames that arrived earlier (in the same read as what a previous wait was waiting
        for) are consumed but not returned: the monitor has already judged them. So is the
        serverHello, whose place the monitor checks.
        """
        deadline = asyncio.get_running_loop().time() + (self.quiet_window if seconds is None else seconds)
        self._pending.clear()
        start = len(self.received)
        while True:
            frame = await self._next(deadline)
            if frame is _TIMEOUT or frame is None:
                return [f for f in self.received[start:] if not isinstance(f, ServerHello)]

    async def hello(self) -> None:
        """Wait for the serverHello (the monitor checks it comes first)."""
        await self.until(lambda: self.monitor.server_hello is not None, "serverHello")

    # -- per-subscription helpers -------------------------------------------------------------
    def view(self, sid: int) -> StreamView:
        """The driver's subscription ``sid`` (the latest one with that id)."""
        view = self.monitor.streams.get(sid)
        if view is None:
            raise CaseFailure(f"the case never subscribed with id {sid}")
        return view

    async def subscribed(self, sid: int, timeout: float | None = None) -> StreamView:  # noqa: ASYNC109
        """Wait for onSubscribe (or a refusal) on ``sid``."""
        view = self.view(sid)
        await self.until(
            lambda: view.subscribed or not view.open, f"onSubscribe for subscriber {sid}", timeout
        )
        return view

    async def elements(self, sid: int, count: int, timeout: float | None = None) -> StreamView:  # noqa: ASYNC109
        """Wait until subscriber ``sid`` has ``count`` elements (or ended)."""
        view = self.view(sid)
        await self.until(
            lambda: len(view.elements) >= count or not view.open,
            f"{count} elements on subscriber {sid}",
            timeout,
        )
        if len(view.elements) < count:
            raise CaseFailure(
                f"subscriber {sid} ended with {type(view.terminal).__name__} after "
                f"{len(view.elements)} of {count} elements{_text(view)}"
            )
        return view

    async def terminal(self, sid: int, timeout: float | None = None) -> StreamView:  # noqa: ASYNC109
        """Wait for onComplete or onError on ``sid``."""
        view = self.view(sid)
        await self.until(lambda: not view.open, f"onComplete/onError for subscriber {sid}", timeout)
        return view

    async def completed(self, sid: int, timeout: float | None = None) -> StreamView:  # noqa: ASYNC109
        """Wait for the terminal signal on ``sid`` and require it to be onComplete."""
        view = await self.terminal(sid, timeout)
        if view.error is not None:
            raise CaseFailure(f"subscriber {sid} failed with onError({view.error!r}), expected onComplete")
        return view

    async def failed(self, sid: int, timeout: float | None = None) -> StreamView:  # noqa: ASYNC109
        """Wait for the terminal signal on ``sid`` and require it to be onError."""
        view = await self.terminal(sid, timeout)
        if view.error is None:
            raise CaseFailure(f"subscriber {sid} completed, expected onError")
        return view

    # -- the server as subscriber (conformance/echo) -------------------------------------------
    def offer(self, *names: str) -> None:
        """Let the case answer the server's subscribes to ``names``; others are refused at once."""
        self.offered.update(names)

    async def server_subscribe(self, publisher: str, timeout: float | None = None) -> ServedView:  # noqa: ASYNC109
        """Wait for the next subscribe the server sends to our ``publisher`` (one not returned before)."""
        found: list[ServedView] = []

        def arrived() -> bool:
            for index, view in enumerate(self.monitor.served_history):
                if view.publisher == publisher and index not in self._claimed:
                    self._claimed.add(index)
                    found.append(view)
                    return True
            return False

        await self.until(arrived, f"the server's subscribe to {publisher!r}", timeout)
        return found[0]

    async def demand(self, view: ServedView, n: int, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Wait until the server's outstanding demand on ``view`` is at least ``n``."""
        await self.until(
            lambda: view.granted >= n,
            f"the server to request {n} on its subscription {view.sid} (it has {view.granted})",
            timeout,
        )

    async def server_cancel(self, view: ServedView, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Wait for the server's cancel on ``view``."""
        await self.until(lambda: view.cancelled, f"the server to cancel its subscription {view.sid}", timeout)

    # -- endings -------------------------------------------------------------------------------
    async def goodbye(self, timeout: float | None = None) -> Goodbye:  # noqa: ASYNC109
        """Wait for the server's goodbye; fail if the input ends without one."""
        await self.until(lambda: self.monitor.goodbye is not None, "the server's goodbye", timeout)
        assert self.monitor.goodbye is not None
        return self.monitor.goodbye

    async def closed(self, timeout: float | None = None) -> None:  # noqa: ASYNC109
        """Wait for the end of input (frames before it are checked by the monitor)."""
        await self.until(lambda: self.eof, "the server to close the connection", timeout)

    async def goodbye_then_close(self, timeout: float | None = None) -> Goodbye | None:  # noqa: ASYNC109
        """The server's answer to a violation: goodbye, then the end of input (§10).

        Once the goodbye is in, the driver ends its own output, as an endpoint that received
        a goodbye closes its transport (§9.1): a server lingering after its error goodbye
        (§10: it may discard input until the peer's end of input, for a bounded time) then
        closes at once rather than after its bound. Over TCP the server's close is still
        seen; over TLS and WebSocket, which cannot half-close, ending our output ends the
        connection, so there only the goodbye is checked. After our own end of input on
        such a transport the goodbye cannot be seen; then only the close is required.
        """
        if self.eof_sent and not self.raw.half_close:
            await self.closed(timeout)
            return self.monitor.goodbye
        bye = await self.goodbye(timeout)
        if not self.eof_sent:
            await self.write_eof()
        await self.closed(timeout)
        return bye

    def _why(self) -> str:
        bye = self.monitor.goodbye
        return f" (the server said goodbye: {bye.reason!r})" if bye is not None else ""


_TIMEOUT = object()


def _text(view: StreamView) -> str:
    return f": {view.error!r}" if view.error is not None else ""
