"""Session resumption on asyncio: a session outlives its TCP connections (PROTOCOL.md §16).

Theory of operation (the session and its links are in :mod:`rstreams.net._resume_session`;
this module makes them: ``connect``'s client side and ``serve``'s table of sessions).
Without resumption the driver (the connection's pump, :class:`~rstreams.net._pump.Pump`)
talks to a transport directly. With it, a :class:`Session` sits in between: to the
driver it *is* the transport (it implements the transport seam), and it in turn runs
over a succession of real transports, each wrapped in a :class:`Link` (the handler the
real transport calls). The driver and its core never learn that a transport broke; the
session

* records every byte the driver writes in a :class:`~rstreams.wire._resume.ReplayBuffer`
  and counts every byte it hands the driver (:class:`~rstreams.wire._resume.ReceiveCounter`);
* sends ``resumeAck`` through the core when enough arrived (or shortly after anything
  arrived), and drops its own buffer's head when the peer's ack comes;
* bounds the buffer: the driver's room to produce is the smaller of the transport's room
  and the buffer's (:meth:`Session.get_write_buffer_size`), and the driver is told "not
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
from typing import TYPE_CHECKING

from rstreams.errors import ConnectionBrokenError
from rstreams.net._endpoints import connect_endpoint
from rstreams.net._resume_session import Link, Resume, Session
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
    from rstreams.net._pending import Doorway
    from rstreams.net._pump import Pump

__all__ = ["Resume", "ResumeRegistry", "connect_resumable", "resume_config"]


def resume_config(config: ConnectionConfig | None) -> ConnectionConfig:
    """``config`` with extension 3 (resume) offered in the hello."""
    config = config or ConnectionConfig()
    return dataclasses.replace(config, extensions=config.extensions | {RESUME_EXTENSION.id})


# -- the client ------------------------------------------------------------------------------
async def connect_resumable(
    endpoint: Endpoint,
    driver: Pump,
    resume: Resume,
    *,
    ssl: _ssl.SSLContext | None,
    high: int,
    low: int,
    handshake_timeout: float | None = 10.0,
) -> None:
    """Open the first transport of a resumable client session for ``driver`` (``handshake_timeout``
    bounds a WebSocket's opening, as :func:`connect_endpoint`'s; an attempt to resume has its own
    ``attempt_timeout``).

    Raises OSError like :func:`connect_endpoint` when that first connection fails.
    """
    session = Session(resume, client=True, high=high)
    session.bind(driver)

    def reconnect(session: Session) -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(
            _reconnect(session, endpoint, ssl=ssl, high=high, low=low), name=f"rstreams-resume {endpoint.url}"
        )

    session.reconnect = reconnect
    link = Link()

    def made(link: Link) -> None:
        session.attach(link, [])
        driver.connection_made(session)

    link.on_made = made
    link.task = await connect_endpoint(
        endpoint, link, ssl=ssl, high=high, low=low, handshake_timeout=handshake_timeout
    )


async def _reconnect(
    session: Session, endpoint: Endpoint, *, ssl: _ssl.SSLContext | None, high: int, low: int
) -> None:
    """Try to resume ``session`` over new transports; fail it once the attempts are used up.

    A lost connection or an attempt that times out is retried; an answer that breaks §16.2 or
    §16.3 (a malformed or unexpected message after ``resume``) is the server's protocol
    violation, and fails the session at once, as Java and JavaScript clients do: the same server
    would answer the next attempt the same way, until the attempts were used up (8 attempts and
    about 7 s of backoff by default).
    """
    resume = session.resume
    last: BaseException | None = None
    for attempt in range(resume.attempts):
        await asyncio.sleep(resume.delay(attempt))
        link = Link()
        assert session.token is not None
        link.resume_token = session.token
        link.resume_position = session.counter.position
        link.parser = ResumeReplyParser()
        link.answer = asyncio.get_running_loop().create_future()  # set before a WebSocket's task runs
        try:
            async with asyncio.timeout(resume.attempt_timeout):
                link.task = await connect_endpoint(endpoint, link, ssl=ssl, high=high, low=low)
                outcome = await link.answer
        except (OSError, TimeoutError) as error:
            last = error
            _drop(link)
            continue
        except ResumeError as error:  # a malformed answer: the server broke §16, it would again (§16.2)
            _drop(link)
            session.fail(ConnectionBrokenError(f"the session could not be resumed: {error.reason}"))
            return
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


def _drop(link: Link) -> None:
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
        make_driver: Callable[[], Pump],
        *,
        high: int,
        handshake_timeout: float | None,
        doorway: Doorway | None = None,
    ) -> None:
        self.resume = resume
        self._make_driver = make_driver
        self._high = high
        self._handshake_timeout = handshake_timeout
        self._doorway = doorway  # the server's transports at the hello stage (rstreams.net._pending)
        # The hello a new driver writes first (its extensions are the driver's business):
        # written at once on every accepted transport, before we know what the client wants.
        self._hello = b"".join(make_driver().outbox.core.data_to_send())
        self.sessions: dict[bytes, Session] = {}

    def make_link(self) -> Link:
        """A handler for one accepted transport (the listener's handler factory)."""
        link = Link()
        timer: list[asyncio.TimerHandle] = []
        doorway = self._doorway

        def decided() -> None:  # (or ended): no longer at the hello stage
            if timer:
                timer.pop().cancel()
            if doorway is not None:
                doorway.leave(link)

        def closing() -> None:  # the server closes before the first byte decided: a new session says goodbye
            if link.on_first_bytes is None:
                return
            decided()
            link.stop_deciding()
            self._start_session(link)

        def expired() -> None:  # no first byte in time: goodbye "handshake timeout", as without resume
            timer.clear()
            if link.on_first_bytes is None:
                return
            decided()
            link.stop_deciding()
            driver = self._start_session(link).driver
            assert driver is not None
            driver.closing.handshake_expired()

        def made(link: Link) -> None:
            link.transport.writelines([self._hello])  # §4.1: the hello goes out at once
            if self._handshake_timeout is not None:
                loop = asyncio.get_running_loop()
                link.handshake_deadline = loop.time() + self._handshake_timeout
                timer.append(loop.call_at(link.handshake_deadline, expired))
            if doorway is not None:
                doorway.enter(link, closing)

        def first_bytes(link: Link, buf: bytearray) -> bool:
            decision = self._first_bytes(link, buf)
            if decision:
                decided()
            return decision

        def input_ended(link: Link, buf: bytearray) -> None:
            decided()
            self._input_ended(link, buf)

        def lost(link: Link) -> None:
            decided()

        link.on_made = made
        link.on_first_bytes = first_bytes
        link.on_input_ended = input_ended
        link.on_lost = lost
        return link

    def _first_bytes(self, link: Link, buf: bytearray) -> bool:
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
        if session is None or not session.resumable:  # (ending: its close must not land on this link)
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

    def _input_ended(self, link: Link, buf: bytearray) -> None:
        """The input ended before the first bytes decided: the connection ends at once."""
        if buf:  # a resume cut short (anything else is decided at its first byte): §9.3's truncated message
            self._refuse(
                link,
                f"input ended inside resume ({len(buf)} bytes of an incomplete message) (PROTOCOL.md §9.3)",
            )
        else:  # no byte at all: a new session's core ends it, as without resumption
            self._new_session(link, None)

    def _new_session(self, link: Link, first: bytes | None) -> None:
        session = self._start_session(link)
        if first is None:  # (the input ended before its first byte)
            session.link_eof(link)
        else:
            session.link_data(link, first)

    def _start_session(self, link: Link) -> Session:
        """A new session on ``link``, its driver's transport up (its hello already written)."""
        driver = self._make_driver()
        session = Session(self.resume, client=False, high=self._high)
        session.bind(driver)
        session.on_token = self._register
        session.on_finished = self._forget
        session.attach(link, [], presented=len(self._hello))
        # the clientHello is awaited from the transport's start, not again from its first bytes
        driver.closing.handshake_deadline = link.handshake_deadline
        driver.connection_made(session)
        return session

    def _register(self, session: Session) -> None:
        assert session.token is not None
        self.sessions[session.token] = session

    def _forget(self, session: Session) -> None:
        if session.token is not None and self.sessions.get(session.token) is session:
            del self.sessions[session.token]

    @staticmethod
    def _refuse(link: Link, reason: str) -> None:
        # at most 200 bytes (§16.7 allows 256), cut between characters so it stays UTF-8 (§16.2)
        payload = reason.encode()[:200].decode(errors="ignore").encode()
        link.transport.writelines([encode_message(RESUME_REFUSED, payload)])
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
