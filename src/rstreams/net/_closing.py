"""How one connection ends: the handshake timer, goodbyes, the lingering close, the last callbacks.

Theory of operation. Two things end: the protocol conversation (a goodbye, ours or the
peer's, or a violation the core answered with a goodbye) and the bytes (the transport's
``connection_lost``). Whichever comes first ends every open stream, once, through
:meth:`Closing.end_streams`: local Subscribers get ``on_error``
(:class:`ResourceClosedError` when this side closed, :class:`ConnectionBrokenError` with
the cause otherwise, and its subclass :class:`HandshakeTimeoutError` when a client's handshake
timeout closed a silent server) and local
Publishers are cancelled; the pieces that hold streams register for that with
:attr:`Closing.on_end`. Lower-layer exceptions are translated into
:class:`ConnectionBrokenError` here, in :meth:`Closing.lost`, and nowhere else; a TLS session
that ended before the peer's hello becomes its subclass :class:`TLSRefusedError`, and a plain
client's input that ended there :class:`EndedBeforeHelloError`; a ``tcp://`` client whose server's
first bytes were a TLS record gets :class:`TLSServerError`, which names the ``tls://`` URL. A goodbye that
ended a client's authentication (the server's, or the client's own to a server without auth)
gives a subclass of :class:`~rstreams.errors.AuthenticationError` instead, by what the client
knows and the goodbye's code (:func:`~rstreams.net._auth.goodbye_error`), not by its words.

After an error goodbye (ours or the core's) the transport is not closed at once: closing a
socket with unread input makes the kernel send RST, which makes the peer's kernel drop what
the peer has not read yet, the goodbye that explains the close among it. So the transport
stays open and input is discarded until the peer's end of input, :data:`LINGER_BYTES` or
:data:`LINGER_SECONDS`, whichever comes first; where the transport can half-close (TCP,
Unix) the goodbye is also followed by ``write_eof``, so the peer sees goodbye, then end of
input. TLS and WebSocket cannot half-close: there the goodbye simply goes out first.

The answer to the peer's goodbye closes the same way where the transport can half-close: a
peer that goes on writing after its goodbye (§9.1 forbids it) would otherwise be reset, and
could lose the answer; a peer that does not closes on reading it, which ends the linger at
once. Over TLS and WebSocket the transport closes once the answer is written, as before (with
no half-close, two ends that each waited for the other's close would wait for the linger).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable

from rstreams.errors import (
    ConnectionBrokenError,
    HandshakeTimeoutError,
    LocalProtocolError,
    RemoteProtocolError,
    ResourceClosedError,
    TLSRefusedError,
    report_unhandled,
)
from rstreams.net._auth import ClientAuth, goodbye_error
from rstreams.net._outbox import Outbox
from rstreams.net._transport import (
    TLS_ENDED_BEFORE_HELLO,
    EndedBeforeHelloError,
    TLSServerError,
    Transport,
)
from rstreams.wire import AbruptCloseError, ConnectionClosed, ConnectionState, ErrorCode, FrameError, Side
from rstreams.wire._errors import TLSRecordError

__all__ = [
    "CLOSE_TIMEOUT",
    "LINGER_BYTES",
    "LINGER_SECONDS",
    "Closing",
    "broke_the_protocol",
    "check_handshake_timeout",
]

CLOSE_TIMEOUT = 5.0
"""Seconds :meth:`Closing.aclose` waits in all for the peer's goodbye and then for the transport
to close; a transport still open then is aborted."""

LINGER_SECONDS = 2.0
"""After an error goodbye (or an answer, over TCP and Unix), how long input is still read
(and discarded) before closing."""

LINGER_BYTES = 4 * 1024 * 1024
"""After an error goodbye (or an answer, over TCP and Unix), how many bytes of input are
discarded at most before closing. Discarded input skips the read turns that hold a peer's live
input to its share of the loop (:mod:`rstreams.net._intake`), so without this a peer flooding
during the linger would have the loop read for it at full speed for all of
:data:`LINGER_SECONDS` (PROTOCOL.md §9.1 allows the bound; the JavaScript binding has it too,
Java bounds time only)."""


NOT_RSIO_HINT = (
    "an endpoint that does not speak RS.io on this URL's scheme closes like this (a TLS server "
    "reached with tcp://, say: its URL is tls://host:port; a WebSocket server's is ws://host:port/path)"
)
"""Added to the error of a plain connection whose input ended before the peer's hello."""

NOT_RSIO_BYTES_HINT = (
    "an endpoint that does not speak RS.io on this URL's scheme answers like this (an RS.io server's "
    "first frame is its hello, PROTOCOL.md §4.1; a WebSocket server's URL is ws://host:port/path)"
)
"""Added to the error of a plain client connection whose server's first bytes are no RS.io frame."""

SILENT_HINT = (
    "an endpoint that does not speak RS.io waits like this, e.g. an HTTP server (a WebSocket "
    "server's URL is ws://host:port/path; RS.io starts with the server's hello, PROTOCOL.md §4.1)"
)
"""Added to the error of a client whose server said nothing within the handshake timeout."""

PIPE_ENDED_HINT = (
    "the process at the other end closed the pipe before speaking RS.io (did it exit? its exit "
    "status and standard error say why; it must call connect_pipe(0, 1, server=True, ...))"
)
"""Added instead of :data:`NOT_RSIO_HINT` when that connection is a pipe (``connect_pipe``)."""


def check_handshake_timeout(handshake_timeout: float | None) -> None:
    """Refuse a ``handshake_timeout`` (serve's, connect's) that is not a positive number of seconds."""
    if handshake_timeout is not None and not handshake_timeout > 0:
        raise ValueError(f"handshake_timeout must be > 0 seconds or None, got {handshake_timeout!r}")


def broke_the_protocol(error: BaseException) -> bool:
    """Whether a connection ended with ``error`` because the peer broke the protocol
    (:meth:`Closing.conversation_over`'s errors, caused by the violation), other than by an input
    that ended without a goodbye (``AbruptCloseError``, §9.3), which a peer killed or restarting
    makes too."""
    cause = error.__cause__
    return isinstance(cause, RemoteProtocolError) and not isinstance(cause, AbruptCloseError)


class Closing:
    """The end of one connection; see the module docstring."""

    __slots__ = (
        "_close_callbacks",
        "_ended_event",
        "_handshake_timeout",
        "_handshake_timer",
        "_linger",
        "_linger_left",
        "_lost",
        "_outbox",
        "_refusal",
        "client_auth",
        "ended_hint",
        "handshake_deadline",
        "made",
        "on_end",
        "tcp_url",
        "url",
    )

    def __init__(self, outbox: Outbox, handshake_timeout: float | None) -> None:
        self._outbox = outbox
        self._handshake_timeout = handshake_timeout  # seconds for the peer's hello, from connection_made
        self._handshake_timer: asyncio.TimerHandle | None = None
        self._linger: asyncio.TimerHandle | None = None  # set while discarding input after an error
        self._linger_left = 0  # bytes still to discard before closing anyway
        self._refusal: tuple[str, int] | None = None  # the goodbye to say at the peer's hello
        self._ended_event = asyncio.Event()  # the protocol conversation is over
        self._lost = outbox.loop.create_future()  # the transport is closed
        self._close_callbacks: list[Callable[[], object]] = []
        self.made = False
        """Whether the transport came up (a failed TLS handshake never does)."""
        self.handshake_deadline: float | None = None
        """Loop time by which the peer's hello must come, when set before :meth:`start`: a
        server's transport was up, and its handshake timeout running, before its connection
        was made (a resumable server's first bytes, :mod:`rstreams.net._resume`)."""
        self.on_end: list[Callable[[BaseException], object]] = []
        """Called once with the error every open stream ends with."""
        self.client_auth: ClientAuth | None = None
        """A client's auth part, when it was given credentials (set once the pieces are joined):
        what it knows tells the error of a goodbye that ended its authentication."""
        self.ended_hint = NOT_RSIO_HINT
        """What the error of a client whose input ended before the peer's hello adds: where to
        look (``connect_pipe`` sets :data:`PIPE_ENDED_HINT`; there is no URL to check there)."""
        self.tcp_url: str | None = None
        """A ``tcp://`` client's URL (``connect`` sets it): a TLS record as its server's first
        bytes ends the streams with :class:`TLSServerError` naming the ``tls://`` one."""
        self.url: str | None = None
        """A client's URL (``connect`` sets it), which a handshake timeout's error names; ``None``
        for a pipe (``connect_pipe``): the process at the other end is named instead."""
        outbox.install_close(self.close_now)

    # -- the start ------------------------------------------------------------------------------
    def start(self) -> None:
        """The transport is up: the peer's hello is now awaited for at most the handshake timeout
        (until :attr:`handshake_deadline` when set)."""
        self.made = True
        if self._handshake_timeout is not None:
            loop = self._outbox.loop
            deadline = self.handshake_deadline
            if deadline is None:
                deadline = loop.time() + self._handshake_timeout
            self._handshake_timer = loop.call_at(deadline, self.handshake_expired)

    def refuse_at_hello(self, reason: str, code: int) -> None:
        """Say goodbye ``reason`` with ``code`` as soon as the peer's hello has been read, before
        anything after it is handled: a server refusing a connection (over ``max_connections``)
        waits for the hello so that the goodbye carries its code when the hello makes
        error-codes active (PROTOCOL.md §19). Until then the handshake timer runs as usual."""
        if self._outbox.core.peer_hello is not None:
            self.close_now(reason, code)
        else:
            self._refusal = (reason, code)

    @property
    def refusing(self) -> bool:
        """Whether :meth:`refuse_at_hello` waits for the peer's hello."""
        return self._refusal is not None

    def hello_received(self) -> bool:
        """The peer's hello has been read: stop the handshake timer. ``True`` when that said the
        goodbye of :meth:`refuse_at_hello` (nothing else is then to be done with the hello)."""
        timer, self._handshake_timer = self._handshake_timer, None
        if timer is not None:
            timer.cancel()
        refusal, self._refusal = self._refusal, None
        if refusal is None:
            return False
        self.close_now(*refusal)
        return True

    def handshake_expired(self) -> None:
        """The handshake timeout passed: goodbye, unless the peer's hello has arrived."""
        timer, self._handshake_timer = self._handshake_timer, None
        if timer is not None:
            timer.cancel()
        core = self._outbox.core
        if core.state is ConnectionState.AWAITING_HELLO:
            client = core.side is Side.CLIENT
            hello = "serverHello" if client else "clientHello"
            reason = f"handshake timeout (no {hello} within {self._handshake_timeout:g} s)"
            # a client's streams fail as over a broken connection: the server never answered
            broken = HandshakeTimeoutError(self._silent(reason)) if client else None
            self.close_now(reason, ErrorCode.TIMEOUT, error=broken)

    def _silent(self, reason: str) -> str:
        """The message of a client's :class:`HandshakeTimeoutError`: the goodbye's ``reason``
        (which says the seconds), the peer, and that it may not speak RS.io."""
        if self.url is None:
            return (
                f"{reason}: the process at the other end of the pipe did not say hello (connect_pipe's "
                "handshake_timeout); it may not speak RS.io (it must call "
                "connect_pipe(0, 1, server=True, ...))"
            )
        return (
            f"{reason}: {self.url} did not say hello (connect's handshake_timeout); it may not be an "
            f"RS.io server: {SILENT_HINT}"
        )

    # -- input after the end ----------------------------------------------------------------------
    def discarding(self, nbytes: int) -> bool:
        """Whether a read of ``nbytes`` is to be dropped (the conversation is over)."""
        if self._linger is not None:
            self._linger_left -= nbytes
            if self._linger_left <= 0:
                self._end_linger()
            return True
        return self._outbox.core.state is ConnectionState.CLOSED

    def eof_while_lingering(self) -> bool:
        """The peer ended its input; ``True`` if that ends a lingering close (nothing else to do)."""
        if self._linger is None:
            return False
        self._end_linger()  # the peer has stopped sending: nothing can reset the goodbye now
        return True

    def input_over(self) -> None:
        """The peer's input ended and that ended the conversation (a goodbye for that very end,
        §9.3): nothing is left to linger for. The transport closes once the goodbye is written;
        the linger's timer still aborts one that cannot write it by then."""
        transport = self._outbox.transport
        if self._linger is not None and transport is not None and not transport.is_closing():
            transport.close()

    # -- ending -----------------------------------------------------------------------------------
    def end_streams(self, error: BaseException) -> None:
        self._outbox.ended = error
        for hook in self.on_end:
            hook(error)

    async def aclose(self, reason: str, timeout: float) -> None:  # noqa: ASYNC109
        """Say goodbye, wait for the peer's goodbye, close the transport: ``timeout`` s in all
        (PROTOCOL.md §9.1), after which a transport still open is aborted.

        Before the peer's hello there is no answer to wait for (PROTOCOL.md §9.1): the peer
        may not speak RS.io at all, so the goodbye is written and the transport closed at once.
        """
        outbox = self._outbox
        deadline = outbox.loop.time() + timeout
        if not self.made:
            # The transport never came up (e.g. a failed TLS handshake): nothing to say goodbye on.
            outbox.closing = True
            if outbox.ended is None:
                self.end_streams(ResourceClosedError("the connection was closed by this side"))
            self.lost(None)
            return
        if not outbox.closing and outbox.ended is None:
            outbox.closing = True
            answered = outbox.core.peer_hello is not None  # else the peer may not speak RS.io
            with contextlib.suppress(LocalProtocolError, ConnectionBrokenError):
                outbox.core.close(reason, code=ErrorCode.NORMAL)
            if outbox.observer is not None:
                outbox.observer.goodbye(reason, sent=True)
            self.end_streams(ResourceClosedError("the connection was closed by this side"))
            outbox.flush_now()
            if answered:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ended_event.wait(), timeout)
        transport = outbox.transport
        # A violation instead of the answer started the lingering close (§9.1): it closes the
        # transport when it ends; a close now, with the peer's bytes unread, would reset it.
        if transport is not None and not transport.is_closing() and self._linger is None:
            transport.close()
        try:
            await asyncio.wait_for(asyncio.shield(self._lost), max(0.0, deadline - outbox.loop.time()))
        except TimeoutError:
            if transport is not None:
                transport.abort()
            with contextlib.suppress(TimeoutError):  # an abort loses the transport in a turn or two
                await asyncio.wait_for(asyncio.shield(self._lost), timeout)

    async def wait_gone(self, timeout: float) -> None:  # noqa: ASYNC109
        """After :meth:`close_now`: wait (up to ``timeout`` s) for the transport to close, its
        lingering close included, then abort it and wait as long again."""
        try:
            await asyncio.wait_for(asyncio.shield(self._lost), timeout)
        except TimeoutError:
            transport = self._outbox.transport
            if transport is not None:
                transport.abort()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._lost), timeout)

    def close_now(self, reason: str, code: int | None = None, *, error: BaseException | None = None) -> None:
        """Say goodbye and close without waiting for the peer's answer (a limit or rule refusing it).

        Open streams end as in :meth:`aclose`; the transport closes as after an error goodbye:
        the goodbye goes out, then input is discarded for a bounded while, so that the peer
        reads why it was closed. Idempotent; no-op once ending. ``error``: what the streams end
        with instead of a :class:`ResourceClosedError` naming ``reason``.
        """
        outbox = self._outbox
        if outbox.closing or outbox.ended is not None:
            return
        outbox.closing = True
        with contextlib.suppress(LocalProtocolError, ConnectionBrokenError):
            outbox.core.close(reason, code=code)
        if outbox.observer is not None:
            outbox.observer.goodbye(reason, sent=True)
        message = f"the connection was closed by this side: {reason}"
        refusal = self.client_auth.refusal(message) if self.client_auth is not None else None
        self.end_streams(refusal or error or ResourceClosedError(message))
        self._ended_event.set()  # no answer is awaited: aclose() goes straight to the transport
        outbox.flush_now()
        transport = outbox.transport
        if transport is not None and not self._start_linger(transport):
            transport.close()

    def conversation_over(self, error: BaseException | None, reason: str, code: int | None = None) -> None:
        """The core says the protocol conversation ended (goodbye exchanged, or a violation);
        ``code``: the goodbye's error code (PROTOCOL.md §19), the peer's when it spoke first."""
        outbox = self._outbox
        if outbox.observer is not None:
            outbox.observer.goodbye(reason if error is None else "protocol error", sent=error is not None)
        if outbox.ended is None:
            if error is None:
                said = f"the peer said goodbye: {reason!r}"
                broken = goodbye_error(outbox.core, self.client_auth, said, code)
            else:
                message = f"the peer broke the protocol: {error}"
                kind = ConnectionBrokenError
                if outbox.core.peer_hello is None and self._over_tls():
                    message += f" {TLS_ENDED_BEFORE_HELLO}"
                    kind = TLSRefusedError
                elif type(error) is TLSRecordError and self.tcp_url is not None and self._unanswered_client():
                    url = self.tcp_url  # the server speaks TLS (PROTOCOL.md §4.1): name its URL
                    message = (
                        f"{url} answered with a TLS record (first bytes 0x{error.record_type:02x} 0x03) "
                        f"before its hello: the server speaks TLS at that address; "
                        f"use tls://{url.removeprefix('tcp://')}"
                    )
                    kind = TLSServerError
                elif isinstance(error, AbruptCloseError) and self._unanswered_client():
                    message += f" before its hello; {self.ended_hint}"
                    kind = EndedBeforeHelloError
                elif (
                    type(error) is FrameError
                    and self.ended_hint is NOT_RSIO_HINT
                    and self._unanswered_client()
                ):
                    message += f" before its hello; {NOT_RSIO_BYTES_HINT}"  # (a pipe has no URL to check)
                broken = kind(message, code=code)
                broken.__cause__ = error
            self.end_streams(broken)
        self._ended_event.set()
        outbox.flush_now()
        transport = outbox.transport
        if transport is None or transport.is_closing():
            return
        # Our error goodbye, or our answer to the peer's goodbye where we can half-close: a peer
        # that goes on writing after its goodbye (§9.1 says it must not) would be reset by a
        # close with its bytes unread, and could lose the answer. One that stops closes on
        # reading the answer, which ends the linger at once. Without a half-close (TLS,
        # WebSocket) the answer is followed by the close: both ends would wait for the other.
        peer_first = error is None and not outbox.closing and transport.can_write_eof()
        if (error is not None or peer_first) and self._start_linger(transport):
            return
        transport.close()

    def lost(self, error: BaseException | None) -> None:
        """The transport closed (``connection_lost``): the very end."""
        outbox = self._outbox
        for timer in (self._linger, self._handshake_timer):
            if timer is not None:
                timer.cancel()
        self._linger = self._handshake_timer = None
        if outbox.ended is None and error is None:
            self._unreported_eof()
        if outbox.ended is None:
            if error is None:
                message = "the peer closed the connection without a goodbye"
            else:
                message = f"the connection failed: {error}"
            kind = ConnectionBrokenError
            if outbox.core.state is ConnectionState.AWAITING_HELLO and self._over_tls():
                message += f" {TLS_ENDED_BEFORE_HELLO}"
                kind = TLSRefusedError
            elif outbox.core.state is ConnectionState.AWAITING_HELLO and self._unanswered_client():
                message += f" before its hello; {self.ended_hint}"
                kind = EndedBeforeHelloError
            broken = kind(message)
            if error is not None:
                broken.__cause__ = error
            self.end_streams(broken)
        self._ended_event.set()
        if not self._lost.done():
            self._lost.set_result(None)
        outbox.transport = None
        callbacks, self._close_callbacks = self._close_callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception as exc:
                report_unhandled(exc, "a connection close callback")

    def _unreported_eof(self) -> None:
        """The transport closed without an error, and without telling the end of input first:
        uvloop's TLS transport closes so when the peer's TCP input ends without a TLS
        close_notify (a server refusing a client certificate, a peer killed), where asyncio's
        reports the end of input. The core hears it as one (PROTOCOL.md §9.3), so that the
        streams end with the same error, and cause, on either loop."""
        core = self._outbox.core
        if core.state is ConnectionState.CLOSED:
            return
        core.receive_eof()
        for event in core.events_received():
            if type(event) is ConnectionClosed:
                self.conversation_over(event.error, event.reason, event.code)

    def _unanswered_client(self) -> bool:
        """A client whose server has not said hello (and over a plain transport: TLS has its hint)."""
        core = self._outbox.core
        return core.side is Side.CLIENT and core.peer_hello is None and not self._over_tls()

    def _over_tls(self) -> bool:
        transport = self._outbox.transport
        return transport is not None and transport.get_extra_info("ssl_object") is not None

    def add_close_callback(self, callback: Callable[[], object]) -> None:
        """Call ``callback()`` once the transport is closed (at once if it is)."""
        if self._lost.done():
            callback()
        else:
            self._close_callbacks.append(callback)

    async def wait_closed(self) -> None:
        await asyncio.shield(self._lost)

    # -- the lingering close ------------------------------------------------------------------------
    def _start_linger(self, transport: Transport) -> bool:
        """After an error goodbye (or an answer): stop writing, go on reading (and discarding) for a while.

        Returns whether it lingers (always, unless the transport is already closing).
        """
        if transport.is_closing():
            return False
        if transport.can_write_eof():
            transport.write_eof()  # the queued goodbye goes out first
        self._linger_left = LINGER_BYTES
        self._linger = self._outbox.loop.call_later(LINGER_SECONDS, self._end_linger)
        return True

    def _end_linger(self) -> None:
        linger, self._linger = self._linger, None
        if linger is not None:
            linger.cancel()
        transport = self._outbox.transport
        if transport is None:
            return
        if transport.get_write_buffer_size():
            transport.abort()  # the peer has not read even the goodbye: nothing more will go out
        elif not transport.is_closing():
            transport.close()
