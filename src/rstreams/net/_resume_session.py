"""A resumable session and the links under it (see :mod:`rstreams.net._resume` for the whole picture).

:class:`_Session` is the driver's transport: it records what the driver writes (the replay
buffer), counts what it hands the driver, sends and takes acknowledgements, bounds the
buffer by pausing the driver, and notices when its transport breaks (an error, an end of
input, or ``stall_timeout`` of silence). :class:`_Link` is the handler of one real
transport: it forwards to its session once attached, and before that runs the resume
exchange (client) or decides what a new transport is (server, through
:class:`~rstreams.net._resume.ResumeRegistry`).
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from rstreams.errors import ConnectionBrokenError
from rstreams.net._connection import _write_grouped
from rstreams.net._transport import Transport
from rstreams.wire import ConnectionState, FrameType
from rstreams.wire._resume import (
    RESUME,
    RESUME_ACK,
    RESUME_TOKEN,
    RESUMED,
    ReceiveCounter,
    Refused,
    ReplayBuffer,
    Resumed,
    ResumeError,
    ResumeReplyParser,
    ResumeRequest,
    decode_position,
    decode_token,
    encode_message,
    encode_position,
    encode_resume,
    hello_end,
)
from rstreams.wire.extensions import RESUME as RESUME_EXTENSION

if TYPE_CHECKING:
    from rstreams.net._connection import Connection
    from rstreams.net._resume import Resume

__all__: list[str] = []  # internal to rstreams.net._resume


class _Mode(Enum):
    UNDECIDED = "undecided"  # the peer's hello has not arrived: record, in case
    RESUMABLE = "resumable"
    PASSTHROUGH = "passthrough"  # the peer does not do resumption: keep nothing


class _Session:
    """The driver's transport for one resumable conversation; see the module docstring."""

    def __init__(self, resume: Resume, *, client: bool, high: int) -> None:
        self.resume = resume
        self.client = client
        self.driver: Connection | None = None
        self.mode = _Mode.UNDECIDED
        self.out = ReplayBuffer()
        self.counter = ReceiveCounter(resume.ack_bytes)
        self.token: bytes | None = None
        self.link: _Link | None = None
        self._loop = asyncio.get_running_loop()
        self._high = high
        self._written = 0  # our stream's position up to which the current link has it
        self._link_paused = False
        self._buffer_full = False
        self._driver_paused = False
        self._reading_paused = False
        self._closing = False
        self._finished = False
        self._extra: dict[str, Any] = {}
        self._hello_scan: bytearray | None = bytearray()  # the peer's first bytes, until its hello ends
        self._heard = 0.0  # loop time of the last read from the current transport
        self._stall_timer: asyncio.TimerHandle | None = None
        self._ack_timer: asyncio.TimerHandle | None = None
        self._expiry: asyncio.TimerHandle | None = None
        self._reconnect: asyncio.Task[None] | None = None
        self.on_token: Callable[[_Session], object] | None = None  # the server registers the session
        self.on_finished: Callable[[_Session], object] | None = None
        self.reconnect: Callable[[_Session], asyncio.Task[None]] | None = None  # the client's
        self.resumes = 0
        """How many times a new transport was attached (for tests and statistics)."""

    def bind(self, driver: Connection) -> None:
        """Become ``driver``'s session: it hands us the resume messages it receives."""
        self.driver = driver
        driver.resume_session = self
        for message_type in RESUME_EXTENSION.message_types:
            driver.extension_handlers[message_type] = self.extension_received

    # -- the transport seam, as the driver sees it --------------------------------------
    def writelines(self, chunks: list[bytes]) -> None:
        out = self.out
        before = out.end
        recording = self.mode is not _Mode.PASSTHROUGH
        if recording:
            for chunk in chunks:
                out.append(chunk)
        link = self.link
        if link is None:
            return
        if not recording:
            self._write(link, chunks)
            return
        end = out.end
        if self._written < end:
            if self._written > before:  # the start of this write went out already (a pre-sent hello)
                chunks = [b"".join(chunks)[self._written - before :]]
            self._write(link, chunks)
            self._written = end
        self._check_full()

    @staticmethod
    def _write(link: _Link, chunks: list[bytes]) -> None:
        if link.joins and len(chunks) > 1:
            _write_grouped(link.transport, chunks)  # no copy of large elements into a join
        else:
            link.transport.writelines(chunks)

    def get_write_buffer_size(self) -> int:
        link = self.link
        size = link.transport.get_write_buffer_size() if link is not None else 0
        if self.mode is _Mode.PASSTHROUGH:
            return size
        # The driver's room is high - size: make it no more than the buffer's room.
        return max(size, self.out.held + self._high - self.resume.buffer_bytes)

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        if self.link is not None:
            self.link.transport.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        self._reading_paused = True
        if self.link is not None:
            self.link.transport.pause_reading()

    def resume_reading(self) -> None:
        self._reading_paused = False
        if self.link is not None:
            self.link.transport.resume_reading()

    def can_write_eof(self) -> bool:
        """Whether the current transport can half-close (the driver's lingering close uses it)."""
        link = self.link
        can = getattr(link.transport, "can_write_eof", None) if link is not None else None
        return bool(can is not None and can())

    def write_eof(self) -> None:
        """Half-close the current transport (after an error goodbye: the session is ending)."""
        if self.link is not None:
            self.link.transport.write_eof()  # type: ignore[attr-defined]  # checked by can_write_eof

    def close(self) -> None:
        self._end_transport(abort=False)

    def abort(self) -> None:
        self._end_transport(abort=True)

    def is_closing(self) -> bool:
        return self._closing or self._finished

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if self.link is not None:
            return self.link.transport.get_extra_info(name, default)
        return self._extra.get(name, default)

    def _end_transport(self, *, abort: bool) -> None:
        self._closing = True
        self._cancel_recovery()
        link = self.link
        if link is None:
            self._loop.call_soon(self._finish, None)
        elif abort:
            link.transport.abort()
        else:
            link.transport.close()

    # -- attaching transports ------------------------------------------------------------
    def attach(self, link: _Link, replay: list[bytes], *, presented: int = 0) -> None:
        """Run the session over ``link`` from now on; write ``replay`` (what the peer lacks).

        ``presented``: bytes of our stream already written to this link by someone else
        (the server's hello, written before it knew whether this is a new session).
        """
        self.link = link
        link.session = self
        self._extra = {
            name: link.transport.get_extra_info(name) for name in ("peername", "sockname", "ssl_object")
        }
        self._link_paused = False
        if self._reading_paused:
            link.transport.pause_reading()
        if replay:
            self._write(link, replay)
        self._written = max(self.out.end, presented)
        self._heard = self._loop.time()
        self._watch_stall()
        self._check_full()

    def link_data(self, link: _Link, data: bytes | memoryview) -> None:
        if link is not self.link or self.driver is None:
            return
        view = data if isinstance(data, memoryview) else memoryview(data)
        if self._hello_scan is not None:
            # Feed the peer's hello on its own, so that the token (or the decision to keep
            # nothing) is queued before whatever the rest of this read makes us send.
            split = self._scan_hello(view)
            if split and split < len(view):
                self._feed(view[:split])
                if link is not self.link or self.driver is None:
                    return
                view = view[split:]
        self._feed(view)

    def _feed(self, view: memoryview) -> None:
        assert self.driver is not None
        self._heard = self._loop.time()
        self.counter.received(len(view))
        self.driver.data_received(view)
        self._after_read()

    def _scan_hello(self, view: memoryview) -> int | None:
        """Offset in ``view`` where the peer's hello ends, once it is known; None until then."""
        scan = self._hello_scan
        assert scan is not None
        start = len(scan)
        scan += view
        try:
            end = hello_end(scan, FrameType.SERVER_HELLO if self.client else FrameType.CLIENT_HELLO)
        except ResumeError:  # not a hello: the core will say so; stop looking
            end = start
        if end is None:
            return None
        self._hello_scan = None
        return end - start

    def link_eof(self, link: _Link) -> None:
        if link is not self.link or self.driver is None:
            return
        if self._resumable():
            self._broken(link)
        else:
            self.driver.eof_received()

    def link_lost(self, link: _Link, error: BaseException | None) -> None:
        if link is not self.link:
            return
        if self._resumable():
            self._broken(link)
        else:
            self.link = None
            self._finish(error)

    def link_writable(self, link: _Link, writable: bool) -> None:
        if link is self.link:
            self._link_paused = not writable
            self._update_driver_writable()

    def _resumable(self) -> bool:
        driver = self.driver
        return (
            self.mode is _Mode.RESUMABLE
            and not self._closing
            and not self._finished
            and driver is not None
            and driver.core.state is ConnectionState.OPEN
            and (self.token is not None)
        )

    def _broken(self, link: _Link) -> None:
        """The transport under an open session broke: detach it and recover."""
        self.link = None
        link.session = None
        if not link.transport.is_closing():
            link.transport.abort()
        self._link_paused = False
        self._update_driver_writable()
        if self.client:
            if self._reconnect is None and self.reconnect is not None:
                self._reconnect = self.reconnect(self)
        elif self._expiry is None:
            self._expiry = self._loop.call_later(self.resume.session_timeout, self._expired)

    def _expired(self) -> None:
        self._expiry = None
        self.fail(
            ConnectionBrokenError(
                f"the session expired: its client did not resume within {self.resume.session_timeout:g} s"
            )
        )

    def resume_from(self, link: _Link, request: ResumeRequest) -> None:
        """Server: a new transport asks to continue this session (§16.3).

        Raises ResumeError (after failing the session) when the positions do not match.
        """
        old = self.link
        if old is not None:  # the old transport is half-open (a stalled link): replace it
            self.link = None
            old.session = None
            old.transport.abort()
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        try:
            replay = self.out.replay_from(request.position)
        except ResumeError as error:
            self.fail(ConnectionBrokenError(f"the session could not be resumed: {error.reason}"))
            raise
        link.transport.writelines([encode_message(RESUMED, encode_position(self.counter.position))])
        self.attach(link, replay)
        self.resumes += 1

    def reattach(self, link: _Link, position: int) -> None:
        """Client: the server resumed at ``position`` of our stream; raises ResumeError if impossible."""
        replay = self.out.replay_from(position)
        self._reconnect = None
        self.attach(link, replay)
        self.resumes += 1

    # -- acknowledgements, the token and extension messages ------------------------------
    def _after_read(self) -> None:
        driver = self.driver
        if driver is None:
            return
        if self.mode is _Mode.UNDECIDED:
            core = driver.core
            if core.peer_hello is None:
                return
            if RESUME_EXTENSION.id not in core.extensions:
                self._pass_through()
                return
            self.mode = _Mode.RESUMABLE
            if not self.client:
                self.token = secrets.token_bytes(16)
                driver.send_extension(RESUME_TOKEN, self.token)
                if self.on_token is not None:
                    self.on_token(self)
        if self.mode is not _Mode.RESUMABLE:
            return
        if self._stall_timer is None:
            self._watch_stall()
        if self.counter.ack_due_now:
            self._send_ack()
        elif self.counter.unacknowledged > 0 and self._ack_timer is None:
            self._ack_timer = self._loop.call_later(self.resume.ack_delay, self._ack_timer_fired)

    def _pass_through(self) -> None:
        self.mode = _Mode.PASSTHROUGH
        self.out = ReplayBuffer()
        self._buffer_full = False
        self._update_driver_writable()

    def _ack_timer_fired(self) -> None:
        self._ack_timer = None
        if self.counter.unacknowledged > 0:
            self._send_ack()

    def _send_ack(self) -> None:
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        driver = self.driver
        if driver is not None and driver.core.state is ConnectionState.OPEN:
            driver.send_extension(RESUME_ACK, self.counter.take_ack())

    def extension_received(self, message_type: int, payload: bytes) -> None:
        """A resume message arrived inside the session (the driver routes them here)."""
        try:
            if message_type == RESUME_ACK:
                self.counter.saw_ack(len(payload))
                self.out.acknowledge(decode_position(payload, "resumeAck"))
                self._check_full()
            elif message_type == RESUME_TOKEN and self.client and self.token is None:
                self.token = decode_token(payload)
            else:
                raise ResumeError(
                    f"message type 0x{message_type:02x} is not allowed inside a session", section="4"
                )
        except ResumeError as error:
            if self.driver is not None:
                self.driver.close_now(error.reason)

    # -- the bound -------------------------------------------------------------------------
    def _check_full(self) -> None:
        if self.mode is _Mode.PASSTHROUGH:
            return
        held = self.out.held
        limit = self.resume.buffer_bytes
        if not self._buffer_full and held >= limit:
            self._buffer_full = True
        elif self._buffer_full and held <= limit // 2:
            self._buffer_full = False
        self._update_driver_writable()

    def _update_driver_writable(self) -> None:
        paused = self._link_paused or self._buffer_full
        driver = self.driver
        if driver is None or paused == self._driver_paused:
            return
        self._driver_paused = paused
        if paused:
            driver.pause_writing()
        else:
            driver.resume_writing()

    # -- the end -----------------------------------------------------------------------------
    def fail(self, error: BaseException) -> None:
        """The session cannot go on: its streams end with ``on_error`` (via the driver)."""
        link = self.link
        if link is not None:
            self.link = None
            link.session = None
            link.transport.abort()
        self._finish(error)

    def _watch_stall(self) -> None:
        """Arm the stall timer for the current transport (one timer, re-armed when it fires)."""
        timeout = self.resume.stall_timeout
        if timeout is None or self.mode is not _Mode.RESUMABLE or self.link is None:
            return
        if self._stall_timer is not None:
            self._stall_timer.cancel()
        self._stall_timer = self._loop.call_at(self._heard + timeout, self._stall_check)

    def _stall_check(self) -> None:
        self._stall_timer = None
        link = self.link
        timeout = self.resume.stall_timeout
        if link is None or timeout is None or not self._resumable():
            return
        if self._loop.time() < self._heard + timeout:  # heard from it since: look again later
            self._watch_stall()
            return
        self._broken(link)

    def _cancel_recovery(self) -> None:
        if self._stall_timer is not None:
            self._stall_timer.cancel()
            self._stall_timer = None
        if self._expiry is not None:
            self._expiry.cancel()
            self._expiry = None
        if self._ack_timer is not None:
            self._ack_timer.cancel()
            self._ack_timer = None
        task, self._reconnect = self._reconnect, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()

    def _finish(self, error: BaseException | None) -> None:
        if self._finished:
            return
        self._finished = True
        self._cancel_recovery()
        self.out = ReplayBuffer()
        if self.on_finished is not None:
            self.on_finished(self)
        if self.driver is not None:
            self.driver.connection_lost(error)


class _Link:
    """The handler of one real transport under a session (or on its way to one).

    Client links either start a session (:attr:`session` set before ``connection_made``)
    or resume one (they send ``resume`` and read the answer into :attr:`answer`). Server
    links start by writing the hello, then look at the first byte: ``resume`` continues a
    known session, anything else starts a new one (:class:`ResumeRegistry`).
    """

    def __init__(self) -> None:
        self.transport: Transport = _NO_TRANSPORT
        self.session: _Session | None = None
        self.on_made: Callable[[_Link], object] | None = None
        self.on_first_bytes: Callable[[_Link, bytearray], bool] | None = None  # server: decide
        self.resume_token: bytes | None = None  # client resume: what to send
        self.resume_position = 0
        self.parser: ResumeReplyParser | None = None
        self.answer: asyncio.Future[Resumed | Refused] | None = None
        self.pending = bytearray()  # bytes after the answer, until the session attaches
        self._deciding = bytearray()
        self.task: asyncio.Task[None] | None = None
        self.lost = False  # the transport ended before a session took it
        self.dropped = False  # given up on: abort the transport as soon as there is one
        self.joins = False  # the transport's writelines joins its chunks (asyncio before 3.12)

    def connection_made(self, transport: Transport) -> None:
        self.transport = transport
        self.joins = getattr(type(transport), "writelines", None) is asyncio.WriteTransport.writelines
        if self.dropped:  # a resume attempt given up before its transport came up (WebSocket)
            transport.abort()
            return
        if self.resume_token is not None:
            transport.writelines(
                [encode_message(RESUME, encode_resume(self.resume_token, self.resume_position))]
            )
        if self.on_made is not None:
            self.on_made(self)

    def data_received(self, data: memoryview) -> None:
        session = self.session
        if session is not None:
            session.link_data(self, data)
            return
        if self.parser is not None and self.answer is not None:
            if self.answer.done():
                self.pending += data
                return
            try:
                outcome = self.parser.feed(data)
            except ResumeError as error:
                self.answer.set_exception(error)
                self.transport.abort()
                return
            if outcome is not None:
                self.pending += self.parser.rest
                self.answer.set_result(outcome)
            return
        if self.on_first_bytes is not None:
            self._deciding += data
            if self.on_first_bytes(self, self._deciding):
                self.on_first_bytes = None
                self._deciding = bytearray()

    def eof_received(self) -> None:
        if self.session is not None:
            self.session.link_eof(self)
        else:
            self._no_answer(ConnectionResetError("the connection ended during the resume exchange"))

    def connection_lost(self, error: BaseException | None) -> None:
        if self.session is not None:
            self.session.link_lost(self, error)
        else:
            self._no_answer(error or ConnectionResetError("the connection closed during the resume exchange"))

    def pause_writing(self) -> None:
        if self.session is not None:
            self.session.link_writable(self, False)

    def resume_writing(self) -> None:
        if self.session is not None:
            self.session.link_writable(self, True)

    def _no_answer(self, error: BaseException) -> None:
        self.lost = True
        if self.answer is not None and not self.answer.done():
            self.answer.set_exception(error)


class _NoTransport:
    """Stands in for a link's transport before ``connection_made``."""

    def writelines(self, chunks: list[bytes]) -> None:
        raise RuntimeError("no transport yet")

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def is_closing(self) -> bool:
        return True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


_NO_TRANSPORT = _NoTransport()
