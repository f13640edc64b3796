"""Session resumption on asyncio: a session outlives its TCP connections (PROTOCOL.md §16).

Theory of operation (the session and its links are in :mod:`rstreams.net._resume_session`;
this module makes them: ``connect``'s client side and ``serve``'s table of sessions).
Without resumption the driver (:class:`~rstreams.net.Connection`)
talks to a transport directly. With it, a :class:`_Session` sits in between: to the
driver it *is* the transport (it implements the transport seam), and it in turn runs
over a succession of real transports, each wrapped in a :class:`_Link` (the handler the
real transport calls). The driver and its core never learn that a transport broke; the
session

* records every byte the driver writes in a :class:`~rstreams.wire._resume.ReplayBuffer`
  and counts every byte it hands the driver (:class:`~rstreams.wire._resume.ReceiveCounter`);
* sends ``resumeAck`` through the core when enough arrived (or shortly after anything
  arrived), and drops its own buffer's head when the peer's ack comes;
* bounds the buffer: the driver's room to produce is the smaller of the transport's room
  and the buffer's (:meth:`_Session.get_write_buffer_size`), and the driver is told "not
  writable" while the buffer is full. Nothing is dropped, nothing grows past the bound
  (one element or control message at most);
* when its transport breaks with the session open: the client reconnects with backoff,
  a bounded number of times, sends ``resume(token, position)`` and, on ``resumed``,
  writes what the server has not seen; the server keeps the session for
  ``session_timeout`` seconds, waiting for that resume. Otherwise the driver hears that its
  transport was lost, and every stream ends with ``on_error`` as usual.

Resumption applies when both hellos list extension 3; otherwise a session passes bytes
through and keeps nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
import ssl as _ssl
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rstreams.errors import ConnectionBrokenError
from rstreams.net._endpoints import connect_endpoint
from rstreams.net._resume_session import _Link, _Session
from rstreams.net._url import Endpoint
from rstreams.wire import ConnectionConfig
from rstreams.wire._resume import (
    RESUME,
    RESUME_REFUSED,
    Refused,
    ResumeError,
    ResumeReplyParser,
    encode_message,
    parse_resume_request,
)
from rstreams.wire.extensions import RESUME as RESUME_EXTENSION

if TYPE_CHECKING:
    from rstreams.net._connection import Connection

__all__ = ["Resume", "ResumeRegistry", "connect_resumable", "resume_config"]

KiB = 1024
MiB = 1024 * KiB


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Resume:
    """How a connection survives a broken transport; pass it to ``connect``/``serve`` as ``resume=``.

    Both sides must ask for it (extension 3 in both hellos), else the connection runs as
    without it. The client uses ``attempts``, ``backoff``, ``max_backoff`` and
    ``attempt_timeout``; the server uses ``session_timeout``; both use ``buffer_bytes``.
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


def resume_config(config: ConnectionConfig | None) -> ConnectionConfig:
    """``config`` with extension 3 (resume) offered in the hello."""
    config = config or ConnectionConfig()
    return dataclasses.replace(config, extensions=config.extensions | {RESUME_EXTENSION.id})


# -- the client ------------------------------------------------------------------------------
async def connect_resumable(
    endpoint: Endpoint,
    driver: Connection,
    resume: Resume,
    *,
    ssl: _ssl.SSLContext | None,
    high: int,
    low: int,
) -> None:
    """Open the first transport of a resumable client session for ``driver``.

    Raises OSError like :func:`connect_endpoint` when that first connection fails.
    """
    session = _Session(resume, client=True, high=high)
    session.bind(driver)

    def reconnect(session: _Session) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(
            _reconnect(session, endpoint, ssl=ssl, high=high, low=low), name=f"rstreams-resume {endpoint.url}"
        )

    session.reconnect = reconnect
    link = _Link()

    def made(link: _Link) -> None:
        session.attach(link, [])
        driver.connection_made(session)

    link.on_made = made
    link.task = await connect_endpoint(endpoint, link, ssl=ssl, high=high, low=low)


async def _reconnect(
    session: _Session, endpoint: Endpoint, *, ssl: _ssl.SSLContext | None, high: int, low: int
) -> None:
    """Try to resume ``session`` over new transports; fail it once the attempts are used up."""
    resume = session.resume
    last: BaseException | None = None
    for attempt in range(resume.attempts):
        await asyncio.sleep(resume.delay(attempt))
        link = _Link()
        assert session.token is not None
        link.resume_token = session.token
        link.resume_position = session.counter.position
        link.parser = ResumeReplyParser()
        link.answer = asyncio.get_running_loop().create_future()  # set before a WebSocket's task runs
        try:
            async with asyncio.timeout(resume.attempt_timeout):
                link.task = await connect_endpoint(endpoint, link, ssl=ssl, high=high, low=low)
                outcome = await link.answer
        except (OSError, TimeoutError, ResumeError) as error:
            last = error
            _drop(link)
            continue
        except BaseException:  # cancelled: the session was closed meanwhile
            _drop(link)
            raise
        if link.lost:  # answered, then gone before we got here: try again
            last = ConnectionResetError("the connection ended right after the resume was answered")
            continue
        if isinstance(outcome, Refused):
            link.transport.abort()
            session.fail(ConnectionBrokenError(f"the server refused to resume the session: {outcome.reason}"))
            return
        try:
            session.reattach(link, outcome.position)
        except ResumeError as error:
            link.transport.abort()
            session.fail(ConnectionBrokenError(f"the session could not be resumed: {error.reason}"))
            return
        if link.pending:
            pending, link.pending = bytes(link.pending), bytearray()
            session.link_data(link, pending)
        return
    gave_up = ConnectionBrokenError(f"could not resume the session in {resume.attempts} attempt(s): {last}")
    gave_up.__cause__ = last
    session.fail(gave_up)


def _drop(link: _Link) -> None:
    """Give up on a resume attempt's transport."""
    link.answer = None  # nobody waits for it any more
    link.dropped = True
    link.transport.abort()


# -- the server --------------------------------------------------------------------------------
class ResumeRegistry:
    """A server's resumable sessions by token, and the handler factory for its listener."""

    def __init__(
        self,
        resume: Resume,
        make_driver: Callable[[], Connection],
        *,
        high: int,
        handshake_timeout: float | None,
    ) -> None:
        self.resume = resume
        self._make_driver = make_driver
        self._high = high
        self._handshake_timeout = handshake_timeout
        # The hello a new driver writes first (its extensions are the driver's business):
        # written at once on every accepted transport, before we know what the client wants.
        self._hello = b"".join(make_driver().core.data_to_send())
        self.sessions: dict[bytes, _Session] = {}

    def make_link(self) -> _Link:
        """A handler for one accepted transport (the listener's handler factory)."""
        link = _Link()
        timer: list[asyncio.TimerHandle] = []

        def made(link: _Link) -> None:
            link.transport.writelines([self._hello])  # §4.1: the hello goes out at once
            if self._handshake_timeout is not None:
                timer.append(
                    asyncio.get_running_loop().call_later(self._handshake_timeout, link.transport.abort)
                )

        def first_bytes(link: _Link, buf: bytearray) -> bool:
            decided = self._first_bytes(link, buf)
            if decided and timer:
                timer.pop().cancel()
            return decided

        link.on_made = made
        link.on_first_bytes = first_bytes
        return link

    def _first_bytes(self, link: _Link, buf: bytearray) -> bool:
        if buf[0] != RESUME:
            self._new_session(link, bytes(buf))
            return True
        try:
            parsed = parse_resume_request(buf)
        except ResumeError as error:
            self._refuse(link, error.reason)
            return True
        if parsed is None:
            return False
        request, end = parsed
        session = self.sessions.get(request.token)
        if session is None:
            self._refuse(link, "unknown or expired session token (PROTOCOL.md §16.3)")
        elif end != len(buf):
            session.fail(ConnectionBrokenError("the client sent bytes before the resume was answered"))
            self._refuse(link, "bytes after resume, before resumed (PROTOCOL.md §16.3)")
        else:
            try:
                session.resume_from(link, request)
            except ResumeError as error:
                self._refuse(link, error.reason)
        return True

    def _new_session(self, link: _Link, first: bytes) -> None:
        driver = self._make_driver()
        session = _Session(self.resume, client=False, high=self._high)
        session.bind(driver)
        session.on_token = self._register
        session.on_finished = self._forget
        session.attach(link, [], presented=len(self._hello))
        driver.connection_made(session)
        session.link_data(link, first)

    def _register(self, session: _Session) -> None:
        assert session.token is not None
        self.sessions[session.token] = session

    def _forget(self, session: _Session) -> None:
        if session.token is not None and self.sessions.get(session.token) is session:
            del self.sessions[session.token]

    @staticmethod
    def _refuse(link: _Link, reason: str) -> None:
        link.transport.writelines([encode_message(RESUME_REFUSED, reason.encode()[:200])])
        link.transport.close()


def check_resume(resume: object) -> Resume | None:
    """``resume=`` as given to connect/serve: a :class:`Resume`, ``True`` (defaults) or None."""
    if resume is None or resume is False:
        return None
    if resume is True:
        return Resume()
    if not isinstance(resume, Resume):
        raise TypeError(f"resume= takes an rstreams.net.Resume(...), True or None, got {resume!r}")
    return resume
