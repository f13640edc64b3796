"""A resumable session and the links under it (see :mod:`rstreams.net._resume` for the whole picture).

:class:`Session` is the driver's transport: it records what the driver writes (the replay
buffer), counts what it hands the driver, sends and takes acknowledgements, bounds the
buffer by pausing the driver, and notices when its transport breaks (an error, an end of
input, or ``stall_timeout`` of silence). :class:`Link` is the handler of one real
transport: it forwards to its session once attached, and before that runs the resume
exchange (client) or decides what a new transport is (server, through
:class:`~rstreams.net._resume.ResumeRegistry`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import secrets
from collections.abc import Callable
from enum import Enum
from typing import TYPE_CHECKING, Any

from rstreams.errors import ConnectionBrokenError
from rstreams.net._transport import Transport, TransportHandler
from rstreams.wire import ConnectionState, ErrorCode, FrameType
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
    from rstreams.net._pump import Pump

__all__ = ["Link", "Resume", "Session"]

KiB = 1024
MiB = 1024 * KiB


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """How a connection survives a broken transport; pass it to ``connect``/``serve`` as ``resume=``.

    Both sides must ask for it (extension 3 in both hellos), else the connection runs as
    without it. The client uses ``attempts``, ``backoff``, ``max_backoff`` and
    ``attempt_timeout``; the server uses ``session_timeout``; both use ``buffer_bytes``.

    Raises:
        ValueError: a field out of range, named: ``attempts`` not an int >= 0,
            ``buffer_bytes`` not an int >= 4096, a number of seconds below 0 (or not a
            number), ``stall_timeout`` neither ``None`` nor > 0.
    """

    attempts: int = 8
    """Reconnections tried after a transport breaks, before the streams fail."""
    backoff: float = 0.05
    """Seconds before the first attempt; doubled after each failed one (up to max_backoff)."""
    max_backoff: float = 2.0
    """Longest wait between attempts, in seconds."""
    attempt_timeout: float = 5.0
    """Seconds one attempt may take: connect, send resume, read the answer."""
    buffer_bytes: int = 4 * MiB
    """Most bytes kept for replay (sent, not yet acknowledged); production stops there.
    4 MiB: four times the default high-water mark, so acks every quarter keep it flowing."""
    session_timeout: float = 30.0
    """Seconds a server keeps a session whose transport broke, waiting for a resume."""
    ack_delay: float = 0.02
    """Seconds after receiving something until it is acknowledged, if no ack went out before."""
    stall_timeout: float | None = 45.0
    """Seconds without reading anything after which the transport is taken for dead (a link
    that vanished without a reset): the client replaces it, the server drops it and waits for
    the resume. Keepalive pings (PROTOCOL.md §14, every 15 s by default) keep an idle but
    live link from looking dead. ``None``: only errors and resets break a transport."""

    def __post_init__(self) -> None:
        if type(self.attempts) is not int or self.attempts < 0:
            raise ValueError(f"attempts must be an int >= 0, got {self.attempts!r}")
        if type(self.buffer_bytes) is not int or self.buffer_bytes < 4 * KiB:
            raise ValueError(f"buffer_bytes must be an int >= 4096, got {self.buffer_bytes!r}")
        for name in ("backoff", "max_backoff", "attempt_timeout", "session_timeout", "ack_delay"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value >= 0:
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value!r}")
        stall: Any = self.stall_timeout
        if stall is not None and (not isinstance(stall, int | float) or not stall > 0):
            raise ValueError(f"stall_timeout must be a number of seconds > 0, or None; got {stall!r}")

    @property
    def ack_bytes(self) -> int:
        """Acknowledge after this many bytes: a quarter of the buffer (the peer's, if it uses ours)."""
        return max(self.buffer_bytes // 4, 1)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before attempt number ``attempt`` (0-based)."""
        return float(min(self.backoff * 2**attempt, self.max_backoff))


class _Mode(Enum):
    UNDECIDED = "undecided"  # the peer's hello has not arrived: record, in case
    RESUMABLE = "resumable"
    PASSTHROUGH = "passthrough"  # the peer does not do resumption: keep nothing


class Session:
    """The driver's transport for one resumable conversation; see the module docstring."""

    def __init__(self, resume: Resume, *, client: bool, high: int) -> None:
        self.resume = resume
        self.client = client
        self.driver: Pump | None = None
        self.mode = _Mode.UNDECIDED
        self.out = ReplayBuffer()
        self.counter = ReceiveCounter(resume.ack_bytes)
        self.token: bytes | None = None
        self.link: Link | None = None
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
        self.on_token: Callable[[Session], object] | None = None  # the server registers the session
        self.on_finished: Callable[[Session], object] | None = None
        self.reconnect: Callable[[Session], asyncio.Task[None]] | None = None  # the client's
        self.resumes = 0
        """How many times a new transport was attached (for tests and statistics)."""

    def bind(self, driver: Pump) -> None:
        """Become ``driver``'s session: it hands us the resume messages it receives, and its
        keepalive asks us before ending an idle connection (we drop the link instead, §14.2)."""
        self.driver = driver
        if driver.keepalive is not None:
            driver.keepalive.on_idle_link = self.drop_idle_link
        for message_type in RESUME_EXTENSION.message_types:
            driver.extension_handlers[message_type] = self.extension_received

    # -- the transport seam, as the driver sees it --------------------------------------
    def writelines(self, chunks: list[bytes]) -> bool:
        if self._closing or self._finished:  # is_closing
            return False
        out = self.out
        before = out.end
        recording = self.mode is not _Mode.PASSTHROUGH
        if recording:
            for chunk in chunks:
                out.append(chunk)
        link = self.link
        if link is None:
            return True
        if not recording:
            self._write(link, chunks)
            return True
        end = out.end
        if self._written < end:
            if self._written > before:  # the start of this write went out already (a pre-sent hello)
                chunks = [b"".join(chunks)[self._written - before :]]
            self._write(link, chunks)
            self._written = end
        self._check_full()
        return True

    @staticmethod
    def _write(link: Link, chunks: list[bytes]) -> None:
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
        return link is not None and link.transport.can_write_eof()

    def write_eof(self) -> None:
        """Half-close the current transport (after an error goodbye: the session is ending)."""
        if self.link is not None:
            self.link.transport.write_eof()

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

    def set_handler(self, handler: TransportHandler) -> None:
        raise TypeError("a session's handler is the driver it is bound to (Session.bind), for good")

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
    def attach(self, link: Link, replay: list[bytes], *, presented: int = 0) -> None:
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
        self._heard = now = self._loop.time()
        driver = self.driver
        if driver is not None:  # the peer was heard on this transport (its resume, or the answer to
            driver.outbox.heard_at = now  # ours): the idle timeout counts from now (§14.2)
        self._watch_stall()
        self._check_full()

    def link_data(self, link: Link, data: bytes | memoryview) -> None:
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

    def link_eof(self, link: Link) -> None:
        if link is not self.link or self.driver is None:
            return
        if self._resumable():
            self._broken(link)
        else:
            self.driver.eof_received()

    def link_lost(self, link: Link, error: BaseException | None) -> None:
        if link is not self.link:
            return
        if self._resumable():
            self._broken(link)
        else:
            self.link = None
            self._finish(error)

    def link_writable(self, link: Link, writable: bool) -> None:
        if link is self.link:
            self._link_paused = not writable
            self._update_driver_writable()

    @property
    def resumable(self) -> bool:
        """Whether a new transport may take the session over (§16.3): it is resumable and its
        conversation is not over (no goodbye or violation, not closing, not finished)."""
        return self._resumable()

    def _resumable(self) -> bool:
        driver = self.driver
        return (
            self.mode is _Mode.RESUMABLE
            and not self._closing
            and not self._finished
            and driver is not None
            and driver.outbox.core.state is ConnectionState.OPEN
            and (self.token is not None)
        )

    def _broken(self, link: Link) -> None:
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
                f"the session was not resumed within {self.resume.session_timeout:g} s (PROTOCOL.md §16.3)"
            )
        )

    def resume_from(self, link: Link, request: ResumeRequest) -> None:
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
        self._count_resume(replay)

    def reattach(self, link: Link, position: int) -> None:
        """Client: the server resumed at ``position`` of our stream; raises ResumeError if impossible."""
        replay = self.out.replay_from(position)
        self._reconnect = None
        self.attach(link, replay)
        self.resumes += 1
        self._count_resume(replay)

    def _count_resume(self, replay: list[bytes]) -> None:
        driver = self.driver
        observer = driver.outbox.observer if driver is not None else None
        if observer is not None:
            observer.resumed(sum(map(len, replay)))

    # -- acknowledgements, the token and extension messages ------------------------------
    def _after_read(self) -> None:
        driver = self.driver
        if driver is None:
            return
        if self.mode is _Mode.UNDECIDED:
            core = driver.outbox.core
            if core.peer_hello is None:
                return
            if RESUME_EXTENSION.id not in core.extensions or driver.outbox.ended is not None:
                self._pass_through()  # (a conversation ended at the hello has nothing to resume)
                return
            self.mode = _Mode.RESUMABLE
            if not self.client:
                self.token = secrets.token_bytes(16)
                driver.outbox.send_extension(RESUME_TOKEN, self.token)
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
        if driver is not None and driver.outbox.core.state is ConnectionState.OPEN:
            driver.outbox.send_extension(RESUME_ACK, self.counter.take_ack())

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
                    f"message type 0x{message_type:02x} is not allowed inside a session", section="2"
                )
        except ResumeError as error:
            if self.driver is not None:
                self.driver.outbox.close_now(error.reason, ErrorCode.PROTOCOL_VIOLATION)

    def drop_idle_link(self) -> bool:
        """The keepalive found the connection idle: break the link, not the session (§14.2, §16.3).

        Returns False when the session cannot be resumed (no resume extension, no token yet,
        not open, closing): then the idle timeout ends it with a goodbye as usual. Aborting
        the link's transport takes the session's ordinary broken-link path (its
        ``connection_lost``): the client resumes, the server waits for the resume. While the
        session is between links (already recovering) there is nothing to drop.
        """
        driver = self.driver
        if (
            driver is None
            or self.token is None
            or self.is_closing()
            or driver.outbox.core.state is not ConnectionState.OPEN
            or RESUME_EXTENSION.id not in driver.outbox.core.extensions
        ):
            return False
        link = self.link
        if link is not None and not link.transport.is_closing():
            link.transport.abort()
        return True

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


class Link:
    """The handler of one real transport under a session (or on its way to one).

    Client links either start a session (:attr:`session` set before ``connection_made``)
    or resume one (they send ``resume`` and read the answer into :attr:`answer`). Server
    links start by writing the hello, then look at the first byte: ``resume`` continues a
    known session, anything else starts a new one (:class:`ResumeRegistry`).
    """

    def __init__(self) -> None:
        self.transport: Transport = _NO_TRANSPORT
        self.session: Session | None = None
        self.on_made: Callable[[Link], object] | None = None
        self.on_first_bytes: Callable[[Link, bytearray], bool] | None = None  # server: decide
        self.on_input_ended: Callable[[Link, bytearray], object] | None = None  # server: undecided
        self.on_lost: Callable[[Link], object] | None = None  # server: the transport ended undecided
        self.resume_token: bytes | None = None  # client resume: what to send
        self.resume_position = 0
        self.parser: ResumeReplyParser | None = None
        self.answer: asyncio.Future[Resumed | Refused] | None = None
        self.pending = bytearray()  # bytes after the answer, until the session attaches
        self._deciding = bytearray()
        self.task: asyncio.Task[None] | None = None
        self.lost = False  # the transport ended before a session took it
        self.handshake_deadline: float | None = None  # server: when the clientHello is due (§4.1)
        self.dropped = False  # given up on: abort the transport as soon as there is one

    def connection_made(self, transport: Transport) -> None:
        self.transport = transport
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
        elif self.on_first_bytes is not None and self.on_input_ended is not None:
            # A server link still deciding: the input ended before any byte or inside resume.
            self.on_first_bytes = None
            deciding, self._deciding = self._deciding, bytearray()
            self.on_input_ended(self, deciding)
        else:
            self._no_answer(ConnectionResetError("the connection ended during the resume exchange"))

    def connection_lost(self, error: BaseException | None) -> None:
        if self.session is not None:
            self.session.link_lost(self, error)
        else:
            on_lost, self.on_lost = self.on_lost, None
            if on_lost is not None:
                on_lost(self)
            self._no_answer(error or ConnectionResetError("the connection closed during the resume exchange"))

    def stop_deciding(self) -> None:
        """Server: the first bytes will not decide (the server is closing); drop what came."""
        self.on_first_bytes = None
        self._deciding = bytearray()

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

    def writelines(self, chunks: list[bytes]) -> bool:
        raise RuntimeError("no transport yet")

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        pass

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        pass

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass

    def is_closing(self) -> bool:
        return True

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def set_handler(self, handler: TransportHandler) -> None:
        pass  # (no transport yet: nothing calls a handler)


_NO_TRANSPORT = _NoTransport()
