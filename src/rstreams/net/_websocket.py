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
low mark calls ``resume_writing``, exactly like asyncio's socket transports. While the handler has
reading paused, the read task waits and websockets stops reading the socket once more than
:data:`INPUT_FRAMES` frames wait (its queue: at most about 3 MiB held per connection); the end of
websockets' connection wakes the read task even then, and the connection ends without the
messages left queued (a TCP transport's end likewise leaves its socket's bytes unread).

Closing. A WebSocket cannot half-close: :meth:`WebSocketTransport.close` sends what is queued,
then the close frame, and websockets waits for the peer's close frame, reading meanwhile. That
wait is bounded as the lingering close of ``rstreams.net._closing`` is: ``close_timeout`` is
:data:`~rstreams.net._closing.LINGER_SECONDS` on every connection (websockets' default is 10 s),
and more than :data:`~rstreams.net._closing.LINGER_BYTES` read after the close was asked for
aborts the socket (a peer flooding after its violation was read at hundreds of MB a second).
A close this side sends for the peer's violation (1002, 1007, 1009: websockets "fails" the
connection; 1003 for a text message, failed alike by :meth:`_PongLimit.refuse`) is followed by
the same bounds, which websockets does not apply there (:meth:`_PongLimit._read_to_the_end`):
what the peer sends is read and discarded, unparsed, until its end of input, which ends the
close at once. So is a close the peer began, which websockets answers, then discards what
follows until the peer's end of input, nothing awaiting it: a peer flooding after its close
frame was read until the idle timeout; so is a refused opening handshake (a 404, a 403, a 426),
after whose answer websockets reads for ``close_timeout``, bounded in time only. The bytes count
as the socket reads them (:meth:`_PongLimit._lingering`), so WebSocket pings, which websockets
answers itself, count too, whatever this side has left unread, and so do the pings and pongs
themselves, past :data:`LINGER_PINGS` (a read is parsed a part at a time then, so that a bound
ends a flood within :data:`_CLOSING_READ` of it). The time runs out only once this
side has read what the peer sent before its close (:meth:`_PongLimit._linger_time`): its last
elements and its goodbye, queued in websockets while the handler holds its reading back (a slow
consumer), are read however slowly, as a TCP socket's bytes before its end of input are; a
bound that ran on meanwhile aborted the socket and dropped them.
A peer gone without a close frame (its process killed, its socket closed or reset) ends the
connection as it would on TCP: an end of input as one (``input ended without a goodbye``, §9.3),
a reset with the socket's error (:meth:`WebSocketTransport._ended`).

Close reasons. websockets fails a connection whose peer broke the WebSocket framing (1002), sent
text that is not UTF-8 (1007: a text message, or a close frame's reason) or a message above its
``max_size`` (1009) with its own words; every connection here is made to send rstreams' own
reasons for those three instead, each citing PROTOCOL.md §1 (:func:`own_close_reasons`), as
every goodbye's reason cites its rule. (A text message that is UTF-8 gets 1003 with ``RS.io uses
binary messages``, the reason every binding sends; one that is not never reaches this side's code
as a message, the library checks it first, as most do: §1 lets either close answer a text
message.) The library's words remain the cause of this side's own error, but for a text message
(:class:`~rstreams.net._websocket_errors.TextMessageError`, UTF-8 or not).

Opening (:func:`open_websocket`, the client's side): the websockets library's errors of the
opening handshake become ``ConnectionRefusedError``; one that ended before any HTTP answer
over TLS says so as a ``tls://`` connection ended before the server's hello does, so that a
refusal of the client's certificate reads, and is told apart, the same on both schemes. A
``ws://`` client whose server answers its HTTP request with a TLS record (a TLS server's
alert: Java's and Node's send one) is told so as a ``tcp://`` client is, by a
:class:`~rstreams.net._transport.TLSServerError` naming the ``wss://`` URL
(:class:`WebSocketTLSServerError`); the connection's first bytes are looked at as they arrive
(:class:`_FirstBytes`), before websockets' HTTP parser reads them as a malformed response.

Admission (:mod:`rstreams.net._admission`). A server's listener made with a budget accepts
WebSocket connections itself and makes each one an :class:`AdmittedConnection`: the
websockets library's connection, whose protocol callbacks (the HTTP request and the frames
parsed from each read, the end of the transport) and its opening handshake's response are
timed and charged to the budget until the RS.io connection carried on it is established.

Origins (cross-site WebSocket hijacking). A browser lets any page open a WebSocket to any
address, loopback included, and tells the server which page asked in the ``Origin`` header;
other clients (Python, Java, Node) normally send none. A server accepts a request without
``Origin``, and one whose origin is its own (``http(s)://host:port`` of its URL) or one the
application allowed (:mod:`rstreams.net._origins`); websockets' ``origins=`` check does the
comparing, and refuses the rest with HTTP 403 (:func:`origin_refused` words
its body).

Subprotocol. A handshake that does not offer ``rsio.v0`` is refused with HTTP 400 by
websockets' own negotiation; :func:`subprotocol_refused` words its body: the subprotocol,
PROTOCOL.md §1 and what was offered.

Plain HTTP. A request at the server's path that is not a GET asking for an upgrade to
WebSocket (``curl``, a browser's address bar, ``Upgrade: h2c``, a POST) is answered 426 by
:func:`upgrade_required`, from websockets' ``InvalidUpgrade`` (its own 426) or
``InvalidMethod`` (its 405), worded as the Java and JavaScript servers do.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import ssl
from collections.abc import Callable, Sequence
from http import HTTPStatus
from typing import Any, cast

from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.asyncio.connection import Connection as _WsConnection
from websockets.asyncio.server import Server, ServerConnection
from websockets.exceptions import (
    ConnectionClosed,
    ConnectionClosedOK,
    InvalidHandshake,
    InvalidMessage,
    InvalidMethod,
    InvalidOrigin,
    InvalidUpgrade,
    NegotiationError,
)
from websockets.frames import CloseCode, Opcode
from websockets.headers import parse_subprotocol
from websockets.http11 import Request, Response
from websockets.protocol import OPEN, Protocol
from websockets.server import ServerProtocol

from rstreams.net._admission import Admission
from rstreams.net._closing import LINGER_BYTES, LINGER_SECONDS
from rstreams.net._intake import MAX_UNSENT
from rstreams.net._stream import reset_if_unsent
from rstreams.net._transport import (
    DEFAULT_HIGH_WATER,
    DEFAULT_LOW_WATER,
    TLS_ENDED_BEFORE_HELLO,
    TLS_REFUSAL_HINT,
    TLSEndedError,
    TLSNoResponseError,
    TLSServerError,
    Transport,
    TransportHandler,
)
from rstreams.net._url import Endpoint
from rstreams.net._websocket_errors import TextMessageError
from rstreams.wire._errors import tls_record_type

__all__ = [
    "INPUT_FRAMES",
    "INVALID_FRAME_REASON",
    "LINGER_PINGS",
    "MAX_MESSAGE",
    "NOT_UTF8_REASON",
    "NO_HTTP_HINT",
    "OWN_CLOSE_REASONS",
    "PINGED_NOT_READING",
    "SUBPROTOCOL",
    "TOO_BIG_REASON",
    "AcceptedElsewhere",
    "AdmittedConnection",
    "BoundedServerConnection",
    "WebSocketTLSServerError",
    "WebSocketTransport",
    "open_websocket",
    "origin_refused",
    "own_close_reasons",
    "subprotocol_refused",
    "upgrade_required",
    "upgrade_required_text",
    "without_body_for_head",
]

_log = logging.getLogger("rstreams.net.websocket")

MAX_MESSAGE = 256 * 1024
"""Largest message this side sends: a quarter of websockets' default ``max_size`` (1 MiB),
so any default-configured peer accepts it, and big enough that message overhead vanishes."""

SUBPROTOCOL = "rsio.v0"
"""The WebSocket subprotocol both sides offer (RFC 6455 section 1.9)."""


def origin_refused(ws: ServerConnection, request: Request, response: Response) -> Response | None:
    """For a ``process_response``: the 403 websockets made for an origin it refused, worded to
    say how to allow it (else ``None``: the response stays)."""
    if not isinstance(ws.protocol.handshake_exc, InvalidOrigin):
        return None
    origin = request.headers.get("Origin")
    allow = f"to allow it, serve with origins=[{origin!r}] or rstreams serve --origin {origin}"
    # one line per refusal at INFO, worded as the Java and JavaScript servers word theirs
    _log.info("refused a WebSocket handshake from a page at origin %s (HTTP 403); %s", origin, allow)
    return ws.respond(
        HTTPStatus.FORBIDDEN,
        f"a page at origin {origin} may not connect to this RS.io server (only its own origin may); "
        f"{allow}\n",
    )


def subprotocol_refused(ws: ServerConnection, request: Request, response: Response) -> Response | None:
    """For a ``process_response``: the 400 websockets made for a handshake that does not offer
    :data:`SUBPROTOCOL`, worded to name it, PROTOCOL.md §1 and what was offered (else ``None``)."""
    if not isinstance(ws.protocol.handshake_exc, NegotiationError):
        return None
    values = request.headers.get_all("Sec-WebSocket-Protocol")
    offered = [name for value in values for name in parse_subprotocol(value)]
    if SUBPROTOCOL in offered:
        return None
    return ws.respond(
        HTTPStatus.BAD_REQUEST,
        f"RS.io needs the WebSocket subprotocol {SUBPROTOCOL} (PROTOCOL.md §1); "
        f"the handshake offered {', '.join(offered) or 'none'}\n",
    )


def upgrade_required_text(path: str) -> str:
    """The body of the 426 answering a plain HTTP request at ``path`` (PROTOCOL.md §1)."""
    return (
        f"RS.io is served at {path} over WebSocket with the subprotocol {SUBPROTOCOL} (PROTOCOL.md §1); "
        "this request is not a GET asking for an upgrade to WebSocket\n"
    )


def upgrade_required(ws: ServerConnection, request: Request, response: Response) -> Response | None:
    """For a ``process_response``: a 426 for a request that is not a GET asking for an upgrade to
    WebSocket (websockets' 426 for a request asking for none, or another upgrade, and its 405 for
    another method), worded to say what the path serves (else ``None``), with the header
    ``Upgrade: websocket``, as RFC 9110 §15.5.22 asks of a 426 (PROTOCOL.md §1)."""
    if not isinstance(ws.protocol.handshake_exc, InvalidUpgrade | InvalidMethod):
        return None
    answer = ws.respond(HTTPStatus.UPGRADE_REQUIRED, upgrade_required_text(request.path.partition("?")[0]))
    answer.headers["Upgrade"] = "websocket"
    return answer


def without_body_for_head(request: Request, response: Response) -> Response:
    """``response`` as the answer to a HEAD ``request``: its headers (``Content-Length`` that of
    the body a GET would get) without the body, as RFC 9110 §9.3.2 asks; to any other request,
    as it is. A HEAD is no WebSocket handshake: it is refused, at the served path with the 426 of
    :func:`upgrade_required`, elsewhere with a 404 (PROTOCOL.md §1)."""
    if request.method == "HEAD" and response.body:
        return dataclasses.replace(response, body=b"")
    return response


NO_HTTP_HINT = (
    "a server that does not answer HTTP on ws:// closes like this: a TLS server's URL is "
    "wss://host:port/path, an RS.io server's over plain TCP tcp://host:port"
)
"""Added to the error of a ``ws://`` connection whose opening handshake got no HTTP response."""


class WebSocketTLSServerError(TLSServerError, ConnectionRefusedError):
    """A ``ws://`` server that answered the opening handshake with a TLS record: it speaks TLS
    at that address, and the message names the ``wss://`` URL, as a ``tcp://`` client's
    :class:`~rstreams.net._transport.TLSServerError` names the ``tls://`` one. Also a
    ``ConnectionRefusedError``, as every failed opening handshake is, for the callers that count
    those (a resumed session's attempts)."""


PINGED_NOT_READING = (
    f"more than {MAX_UNSENT} bytes unsent to a peer that pings and does not read "
    "(MAX_UNSENT, PROTOCOL.md §6.3)"
)
"""The cause of the ``ConnectionClosed`` of a connection :class:`_PongLimit` ended."""


INVALID_FRAME_REASON = "bytes that are not a valid WebSocket frame (PROTOCOL.md §1)"
"""The close reason of a close 1002 (protocol error): the peer's bytes are not WebSocket frames
this side may receive (RS.io bytes without WebSocket framing, an unmasked frame from a client, a
masked one from a server, a reserved opcode or bit, a malformed close frame)."""

TOO_BIG_REASON = "a WebSocket message above 1 MiB, or in too many frames (PROTOCOL.md §1)"
"""The close reason of a close 1009 (message too big): a message above websockets' default
``max_size`` (1 MiB, PROTOCOL.md §1's bound), or one in more frames than websockets assembles
(4096)."""

NOT_UTF8_REASON = "a text WebSocket message, or a close reason, that is not UTF-8 (PROTOCOL.md §1)"
"""The close reason of a close 1007 (invalid payload data): websockets checks a text message's
UTF-8 before it is handed over, and a close frame's reason as it is parsed, and fails the
connection with 1007 for either (RFC 6455 §8.1); a text message that is UTF-8 is closed with 1003
by :class:`WebSocketTransport` itself."""

OWN_CLOSE_REASONS: dict[int, str] = {
    CloseCode.PROTOCOL_ERROR: INVALID_FRAME_REASON,
    CloseCode.INVALID_DATA: NOT_UTF8_REASON,
    CloseCode.MESSAGE_TOO_BIG: TOO_BIG_REASON,
}
"""The close reasons this side sends in place of websockets' own texts, by close code: each one
cites the section that states the rule the peer broke, as every other reason does. (The
websockets library's description stays the cause of the connection's own error.)"""


def own_close_reasons(protocol: Protocol) -> None:
    """Make ``protocol`` (websockets' sans-I/O side of one connection) fail the connection with
    :data:`OWN_CLOSE_REASONS`' reasons for their codes: the library calls its ``fail`` with its
    own words, whether its frame parser or its message assembly found the fault."""
    library_fail = protocol.fail

    def fail(code: int, reason: str = "") -> None:
        library_fail(code, OWN_CLOSE_REASONS.get(code, reason))

    protocol.fail = fail  # (this one connection's)


LINGER_PINGS = 1024
"""WebSocket pings (and pongs) read after a close began past which the socket is aborted, beside
:data:`~rstreams.net._closing.LINGER_BYTES` and :data:`~rstreams.net._closing.LINGER_SECONDS`.
websockets parses each and answers a ping with a pong, about 10 µs of the loop for an empty one
(6 bytes): within LINGER_BYTES a peer could have 700,000 of them handled, so only the 2 s bound
ended such a flood, after 2 s of the loop's time. A peer that closes sends none, or one for its
keepalive; 1024 of them cost about 10 ms. (Data frames need no such bound: they wait in the queue
of :data:`INPUT_FRAMES`, which stops the reading, for the transport to take them.)"""

_CLOSING_READ = 16 * 1024
"""Bytes of a read parsed at a time once a close began, so that the bounds end a flood within
this much of it (about 2,700 empty pings), not after the whole read (256 KiB: 43,000 of them, up
to half a second of the loop)."""

_PINGS = (Opcode.PING, Opcode.PONG)

INPUT_FRAMES = 1
"""websockets' ``max_queue`` for every connection: it stops reading the socket once more than one
frame it parsed waits to be taken, and reads again once none does. A frame may be 1 MiB (PROTOCOL.md
§1), so while the transport does not read its peer (input backpressure, rstreams.net._intake) a
connection holds at most two frames and the one being parsed, about 3 MiB; the library's default
of 16 frames let a peer sending 1 MiB messages have 17 MiB held for it."""


class _PongLimit(_WsConnection):  # type: ignore[misc]  # websockets is untyped here
    """A websockets connection that ends once more than ``MAX_UNSENT`` bytes are unsent to its peer.

    websockets answers a peer's WebSocket pings itself, writing each pong to the socket whatever
    its write buffer holds: a peer that pings and never reads would grow the pongs unsent without
    bound. RS.io's own messages wait for the buffer to drain below websockets' ``write_limit``
    (32 KiB) before the next is sent, so only pongs (and a close) can take it past ``MAX_UNSENT``;
    then the socket is aborted (no goodbye: the peer reads nothing) and the connection's
    ``ConnectionClosed`` has :data:`PINGED_NOT_READING` as its cause.

    Every connection of this side (client and server) is one of these: its protocol sends
    rstreams' own close reasons (:func:`own_close_reasons`) and reads on after it failed the
    connection (:meth:`_read_to_the_end`), for a violation found by the library or refused
    here (:meth:`refuse`), every close it takes part in is bounded (:meth:`_lingering`), and
    its queue of frames read and not yet taken is :data:`INPUT_FRAMES` long, whatever the
    factory that makes it asks."""

    def __init__(self, protocol: Protocol, *args: Any, **kwargs: Any) -> None:
        own_close_reasons(protocol)
        failing = protocol.fail

        def fail(code: int, reason: str = "") -> None:
            failing(code, reason)
            self._read_to_the_end()

        protocol.fail = fail  # (this one connection's)
        kwargs["max_queue"] = INPUT_FRAMES
        super().__init__(protocol, *args, **kwargs)

    _discarded: int | None = None  # bytes read since the close began (None: open)
    _linger: asyncio.TimerHandle | None = None
    _held = False  # the transport's handler holds its reading back (its input backpressure)
    _pings = 0  # pings and pongs read since the close began (bounded by LINGER_PINGS)
    _aborted = False  # a bound of the linger ended the connection
    _library_event: Callable[[Any], None]  # websockets' process_event, once the close began
    _failed = False  # this side failed the connection: its time runs out whatever is unread

    def _lingering(self) -> None:
        """The connection is closing (a close sent or read, a failure, or an opening handshake
        answered with a refusal): from now on it ends within :data:`LINGER_BYTES` read or
        :data:`LINGER_SECONDS` (:meth:`_linger_over`). websockets bounds only the closes awaited
        through its API, by ``close_timeout``, and not in bytes: it discards what it reads until
        the peer's end of input, at a GB a second for a flooding peer (1.3 GB in the 2 s after a
        404); after a close it read (the peer's) or a failure it found, nothing awaits it at
        all. WebSocket pings, which it answers itself, never reach the transport's own count."""
        if self._discarded is None:
            self._discarded = 0
            self._linger = self.loop.call_later(LINGER_SECONDS, self._linger_time)
            self._library_event = super().process_event
            self.process_event = self._closing_event  # (counted from now on)

    def _closing_event(self, event: Any) -> None:
        """:meth:`process_event` once the close began: pings and pongs are counted
        (:data:`LINGER_PINGS`). (Only then: a connection that is open pays nothing for it.)"""
        self._library_event(event)
        if getattr(event, "opcode", None) in _PINGS:  # (a refused handshake's events are no frames)
            self._pings += 1
            if self._pings > LINGER_PINGS and not self._aborted:
                self._linger_over(f"within {LINGER_PINGS} pings (LINGER_PINGS)")

    def hold_reading(self, held: bool) -> None:
        """The transport's handler holds its reading back (``held``: its input backpressure, a
        slow consumer), or reads again (:meth:`_linger_time`)."""
        self._held = held

    def _linger_time(self) -> None:
        """:data:`LINGER_SECONDS` passed since the close began, or since the last look: abort,
        unless this side has not yet read what the peer sent before its close (the handler
        holds its reading back, or websockets queues frames for it), then look again after
        :data:`LINGER_SECONDS`. What the peer sent before its close (its last elements, its
        goodbye) is this side's to read however slowly it reads, as a TCP socket's bytes
        before its end of input are: the time counts from when it is read. A peer that floods
        after its close stays bounded by :data:`LINGER_BYTES`, counted whatever is unread;
        one silent after it by the handler's own bounds on holding its reading back (a read
        handled a part a turn, ``unread_timeout``), then this one. After a failure this side
        found (its close sent for the peer's violation) the time runs out regardless."""
        if not self._failed and (self._held or len(self.recv_messages.frames)):
            self._linger = self.loop.call_later(LINGER_SECONDS, self._linger_time)
            return
        self._linger_over(f"within {LINGER_SECONDS:g} s (LINGER_SECONDS)")

    def _read_to_the_end(self) -> None:
        """This side failed the connection (its close sent): read the socket again, whatever the
        queue of frames not taken, so that the peer's close or end of input is read (the library
        discards what comes after a failure). A failure found in a message being taken (one in
        too many frames, text that is not UTF-8) leaves the queue full, reading stopped: the
        connection would wait out ``close_timeout`` for an answer it does not read, then abort.

        That wait is bounded as a lingering close is (rstreams.net._closing), which the library
        does not do after a failure it found in a read (nothing awaits its ``close_timeout``):
        the socket is aborted once :data:`LINGER_BYTES` more are read, or after
        :data:`LINGER_SECONDS`; a peer that flooded on after its violation was read and
        discarded at a GB a second until the connection's idle timeout."""
        transport = getattr(self, "transport", None)
        if transport is None or transport.is_closing():
            return
        self._failed = True
        self._lingering()
        transport.resume_reading()

    def refuse(self, code: int, reason: str) -> None:
        """Close with ``code`` and ``reason`` for a message this side refuses (a text message:
        1003), as websockets fails a connection for a violation it finds itself: the close sent
        (a server also ends its output), what the peer sends then discarded unparsed, its close
        frame included, until its end of input (a peer closes its socket once it has answered
        the close and read the server's end of output), within the bounds of
        :meth:`_read_to_the_end`. (The library's own ``close`` went on parsing frames into the
        queue, which, full, stopped the reading: the peer's answer was not read, and the close
        waited out ``close_timeout``, then aborted.) A connection already closing (the peer's
        close read, or this side's sent) is read to its end within the same bounds."""
        if self.protocol.state is not OPEN:
            self._read_to_the_end()
            return
        self.protocol.fail(code, reason)  # (this connection's fail: it reads to the end)
        try:
            self.send_data()
        except Exception as error:  # (as the library's own data_received: its end says it)
            self.set_connection_exc(error)

    def _linger_over(self, why: str) -> None:
        """Abort the socket of a close that did not end ``why`` (one closing already too: a
        server's ``wss://`` socket closes after its close exchange, and its TLS shutdown
        waits for the peer's own, 30 s by default, or its write buffer drains)."""
        self._aborted = True
        if self._linger is not None:
            self._linger.cancel()
        _log.info("aborting a closing WebSocket connection: the peer's end of input not read %s", why)
        self.transport.abort()

    def data_received(self, data: bytes) -> None:
        if self._discarded is None:
            if self.protocol.close_expected():  # a close sent, or a handshake refused: this read counts
                self._lingering()
            else:
                self._read(data)
                return
        if len(data) <= _CLOSING_READ:
            self._read(data)
            return
        for start in range(0, len(data), _CLOSING_READ):  # closing: a part at a time (_CLOSING_READ)
            if self._aborted:
                return
            self._read(data[start : start + _CLOSING_READ])

    def _read(self, data: bytes) -> None:
        super().data_received(data)
        transport = self.transport
        if self._discarded is not None:
            self._discarded += len(data)
            if self._discarded > LINGER_BYTES and not transport.is_closing():
                self._linger_over(f"within {LINGER_BYTES} bytes (LINGER_BYTES)")
        elif self.protocol.close_expected():  # a close sent or read, or a handshake refused
            self._lingering()
        if transport.get_write_buffer_size() > MAX_UNSENT and not transport.is_closing():
            _log.info("ending a WebSocket connection: %s", PINGED_NOT_READING)
            self.set_connection_exc(ConnectionAbortedError(PINGED_NOT_READING))
            transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._linger is not None:
            self._linger.cancel()
        super().connection_lost(exc)


class _Client(_PongLimit, ClientConnection):  # type: ignore[misc]  # websockets is untyped here
    """A client's connection, bounded as :class:`_PongLimit` says."""


class BoundedServerConnection(_PongLimit, ServerConnection):  # type: ignore[misc]  # websockets is untyped here
    """A server's connection, bounded as :class:`_PongLimit` says."""


class _FirstBytes(_Client):
    """A plain (``ws://``) client connection that looks at its server's first bytes before
    websockets' HTTP parser does: a TLS record there (:func:`~rstreams.wire._errors.tls_record_type`)
    is kept in :attr:`tls_record` and the connection aborted, so that the handshake fails at
    once and :func:`open_websocket` says why."""

    tls_record: int | None = None

    def data_received(self, data: bytes) -> None:
        self.data_received = super().data_received  # type: ignore[method-assign]  # the first read only
        self.tls_record = tls_record_type(data[:2])
        if self.tls_record is not None:
            self.transport.abort()
            return
        super().data_received(data)


async def open_websocket(
    endpoint: Endpoint, context: ssl.SSLContext | None, opening_timeout: float | None
) -> _WsConnection:
    """The client's WebSocket connection to ``endpoint`` (``context``: for ``wss://``), its opening
    handshake made: the TCP connect, TLS handshake and HTTP upgrade together within
    ``opening_timeout`` seconds (``None``: no bound), else ``TimeoutError``.

    Raises:
        OSError: the connection or the TLS handshake failed (websockets passes these on as they
            are); ``ConnectionRefusedError`` when the opening handshake did: a server that ended
            the TLS session before its HTTP response (as one refusing the client's certificate
            does) gives its subclass :class:`~rstreams.net._transport.TLSEndedError`, with a message
            ending with :data:`~rstreams.net._transport.TLS_ENDED_BEFORE_HELLO`, as a ``tls://``
            connection's error does; one that failed otherwise with no HTTP response over TLS
            gives its base :class:`~rstreams.net._transport.TLSNoResponseError`; a ``ws://``
            server that answered with a TLS record gives :class:`WebSocketTLSServerError`.
    """
    made: list[_FirstBytes] = []

    def plain(*args: Any, **kwargs: Any) -> _FirstBytes:
        connection = _FirstBytes(*args, **kwargs)
        made.append(connection)
        return connection

    try:
        return await ws_connect(
            endpoint.url,
            ssl=context,
            proxy=None,
            compression=None,
            subprotocols=[SUBPROTOCOL],
            ping_interval=None,
            close_timeout=LINGER_SECONDS,
            open_timeout=opening_timeout,
            create_connection=plain if context is None else _Client,
        )
    except (InvalidHandshake, OSError, ConnectionClosed) as error:
        record = made[0].tls_record if made else None
        if record is not None:
            wss_url = "wss://" + endpoint.url.removeprefix("ws://")
            raise WebSocketTLSServerError(
                f"{endpoint.url} answered with a TLS record (first bytes 0x{record:02x} 0x03) instead of "
                f"an HTTP response: the server speaks TLS at that address; use {wss_url}"
            ) from error
        if not isinstance(error, InvalidHandshake):
            raise
        status = getattr(getattr(error, "response", None), "status_code", None)
        ended = isinstance(error, InvalidMessage) and isinstance(error.__cause__, EOFError)
        if status == 404:  # the session was accepted: it is the path
            why = f"{error} (nothing serves RS.io at the path {endpoint.path or '/'!r} of this server)"
        elif ended and context is not None:  # no answer at all: said as on tls://
            tls_url = f"tls://{endpoint.url.removeprefix('wss://').partition('/')[0]}"
            why = (
                f"the server ended the TLS session without an HTTP response (an RS.io server over TLS "
                f"alone, whose URL would be {tls_url}, does so too), {TLS_ENDED_BEFORE_HELLO}"
            )
            raise TLSEndedError(f"WebSocket handshake with {endpoint.url} failed: {why}") from error
        elif status is None and context is not None:
            why = f"{error} ({TLS_REFUSAL_HINT})"
            raise TLSNoResponseError(f"WebSocket handshake with {endpoint.url} failed: {why}") from error
        elif status is None:  # ws:// and no HTTP answer: a TLS server, or RS.io over plain TCP
            why = f"{error} ({NO_HTTP_HINT})"
        else:
            why = f"{error}"
        raise ConnectionRefusedError(f"WebSocket handshake with {endpoint.url} failed: {why}") from error


_TEXT_MESSAGE = "the peer sent a text WebSocket message"
_BINARY_ONLY = "RS.io uses binary messages (PROTOCOL.md §1)"
_TEXT_REASON = "RS.io uses binary messages"  # a text message's close reason (1003), in every binding


def _no_hold(held: bool) -> None:
    """A connection not of this module's is not told when its reading is held back."""


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
        self._discarded = 0  # bytes read since close() (bounded by LINGER_BYTES)
        self._aborted: BaseException | None = None
        self._wakeup = asyncio.Event()
        self._read_paused = False  # pause_reading() asked (the handler's input backpressure)
        self._ws_ended = False  # websockets' connection is lost
        self._reading = asyncio.Event()  # set: read (not paused), or the connection ended
        self._reading.set()
        # a connection of this module's is told when reading is held back (_PongLimit.hold_reading)
        self._hold: Callable[[bool], None] = getattr(ws, "hold_reading", _no_hold)

    async def run(self) -> None:
        """Serve the connection until it ends; ``handler.connection_lost`` is the last call."""
        self._handler.connection_made(self)
        writer = asyncio.create_task(self._write_loop(), name="rstreams-ws-writer")
        # The end of the connection wakes a read loop that waits for reading to resume: paused,
        # it would not hear of it (websockets stops reading the socket once its queue is full).
        ended = asyncio.ensure_future(self._ws.wait_closed())
        ended.add_done_callback(self._ws_lost)
        error: BaseException | None = None
        try:
            error = await self._read_loop()
        finally:
            ended.cancel()
            self._closing = True
            self._wakeup.set()
            if error is not None or self._aborted is not None:
                writer.cancel()
            with contextlib.suppress(asyncio.CancelledError, ConnectionClosed):
                await writer
            self._handler.connection_lost(self._aborted or error)

    async def _read_loop(self) -> BaseException | None:
        ws = self._ws
        while True:
            if not self._reading.is_set():
                await self._reading.wait()
            if self._read_paused and self._ws_ended:  # woken by the end: what it queued stays unread
                return self._ended_unread()
            try:
                message = await ws.recv()
            except ConnectionClosedOK:
                self._handler.eof_received()
                return None
            except ConnectionClosed as closed:
                if isinstance(getattr(ws, "connection_exc", None), UnicodeDecodeError):  # closed with 1007
                    return TextMessageError(f"{_TEXT_MESSAGE}, not UTF-8 (closed with 1007); {_BINARY_ONLY}")
                return self._ended(closed)
            if isinstance(message, str):
                cast(_PongLimit, ws).refuse(CloseCode.UNSUPPORTED_DATA, _TEXT_REASON)
                await ws.close()  # (the end of that close, within close_timeout, as every close)
                return TextMessageError(f"{_TEXT_MESSAGE}; {_BINARY_ONLY}")
            if self._closing:
                self._discarded += len(message)
                if self._discarded > LINGER_BYTES:  # a flood while our close waits: see the module docstring
                    self.abort()
                    return None
            self._handler.data_received(memoryview(message))  # (set_handler may change it)

    def _ws_lost(self, ended: asyncio.Future[None]) -> None:
        if not ended.cancelled():
            self._ws_ended = True
            self._reading.set()

    def _ended_unread(self) -> BaseException | None:
        """The connection ended while reading was paused: ended as :meth:`_read_loop` ends when
        ``recv`` says so (a close exchanged: the end of input), without the messages websockets
        had queued, as a TCP transport's end leaves the bytes its socket held unread."""
        ws = self._ws
        closed = ws.protocol.close_exc
        cause = getattr(ws, "connection_exc", None)
        if cause is not None:
            closed.__cause__ = cause
        if isinstance(closed, ConnectionClosedOK):
            self._handler.eof_received()
            return None
        return self._ended(closed)

    def _ended(self, closed: ConnectionClosed) -> BaseException | None:
        """What a WebSocket closed without the peer's close frame ends the connection with, said
        as on TCP: input that ended (a peer killed, or one that closed its socket) is the end of
        input, which the connection, with no goodbye read, calls ``input ended without a
        goodbye`` (PROTOCOL.md §9.3); a socket that failed (reset, or aborted here by
        :class:`_PongLimit`) fails with its own error, as a socket does. (websockets says "no
        close frame received or sent" for both.) A close frame read makes it websockets' error."""
        cause = closed.__cause__
        if closed.rcvd is not None:
            return cast(BaseException, closed)
        if cause is None or isinstance(cause, EOFError):  # (EOFError: the input ended inside a frame)
            self._handler.eof_received()
            return None
        if isinstance(cause, OSError):
            return cause
        return cast(BaseException, closed)

    async def _write_loop(self) -> None:
        """Send what is queued, then, once closing, the close. Once a close was sent or read
        (websockets' state is no longer OPEN), what is queued is dropped, not sent: nothing more
        can go out, and websockets' ``send`` would wait for the end of the connection until
        ``close_timeout`` after the peer's close was read, then abort the socket. A subscriber
        that requests more while it works slowly through the peer's last messages had them
        dropped so, 2 s after that close, as the linger's time did (:meth:`_PongLimit._linger_time`)."""
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
                if ws.protocol.state is OPEN:
                    await ws.send(piece)
                self._size -= len(piece)
                if self._paused and self._size <= self._low:
                    self._paused = False
                    self._handler.resume_writing()

    # -- Transport -----------------------------------------------------------------
    def set_handler(self, handler: TransportHandler) -> None:
        self._handler = handler

    def writelines(self, chunks: list[bytes]) -> bool:
        if self._closing:
            return False
        self._out.extend(chunks)
        self._size += sum(map(len, chunks))
        self._wakeup.set()
        if not self._paused and self._size > self._high:
            self._paused = True
            self._handler.pause_writing()
        return True

    def get_write_buffer_size(self) -> int:
        return self._size

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self._high, self._low = high, low
        if not self._paused and self._size > high:
            self._paused = True
            self._handler.pause_writing()

    def pause_reading(self) -> None:
        self._read_paused = True
        if not self._ws_ended:
            self._reading.clear()
        self._hold(True)

    def resume_reading(self) -> None:
        self._read_paused = False
        self._reading.set()
        self._hold(False)

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
        transport = self._ws.transport  # (a reset, as a TCP transport's, if output is left unsent)
        reset_if_unsent(transport, transport.get_write_buffer_size() + sum(map(len, self._out)))
        self._out.clear()
        self._reading.set()
        transport.abort()

    def is_closing(self) -> bool:
        return self._closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "websocket":
            return self._ws
        return self._ws.transport.get_extra_info(name, default)


class AcceptedElsewhere:
    """The listening server under a websockets server whose connections the admitting listener
    accepts (:class:`~rstreams.net._admission.AdmittingServer`): it never starts listening,
    and tells websockets it serves until it is closed (a handshake finishing while the server
    does not serve is answered 503)."""

    def __init__(self, server: asyncio.Server) -> None:
        self._server = server
        self._serving = True

    @property
    def sockets(self) -> tuple[Any, ...]:
        return tuple(self._server.sockets)

    def is_serving(self) -> bool:
        return self._serving

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self._server.get_loop()

    async def start_serving(self) -> None:
        """Nothing: the admitting listener accepts."""

    def close(self) -> None:
        self._serving = False
        self._server.close()

    async def wait_closed(self) -> None:
        await self._server.wait_closed()


class AdmittedConnection(BoundedServerConnection):  # websockets is untyped here
    """A server's WebSocket connection charged to ``admission`` until its RS.io connection is
    established (see the module docstring).

    ``established`` is set by whoever starts the RS.io handler on it, once the opening
    handshake is done: until it returns true, every protocol callback is charged. A
    connection refused at the HTTP level, or ended before that, is charged for all of its
    callbacks up to the end of its transport.
    """

    def __init__(self, server: Server, admission: Admission, origins: Sequence[str | None] | None) -> None:
        # compression: none and the same origins, as serve() asks
        protocol = ServerProtocol(origins=origins, subprotocols=[SUBPROTOCOL])
        super().__init__(protocol, server, ping_interval=None, close_timeout=LINGER_SECONDS)
        self.admission: Admission | None = admission
        self.established: Callable[[], bool] | None = None
        self._handshake_started = 0.0

    def _charged(self, started: float) -> None:
        admission = self.admission
        assert admission is not None
        admission.charge(admission.clock() - started)
        established = self.established
        if established is not None and established():
            self.admission = None  # its work is no longer the newcomers'

    def handshake_started(self) -> None:
        """The HTTP request is whole (``process_request``): the response is being made."""
        if self.admission is not None:
            self._handshake_started = self.admission.clock()

    def handshake_answered(self) -> None:
        """The response is made (``process_response``): charge the time since the request."""
        if self.admission is not None:
            self._charged(self._handshake_started)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        admission = self.admission
        assert admission is not None
        started = admission.clock()
        try:
            super().connection_made(transport)
        finally:
            self._charged(started)

    def data_received(self, data: bytes) -> None:
        admission = self.admission
        if admission is None:
            super().data_received(data)
            return
        started = admission.clock()
        try:
            super().data_received(data)
        finally:
            self._charged(started)

    def eof_received(self) -> None:
        admission = self.admission
        if admission is None:
            super().eof_received()
            return
        started = admission.clock()
        try:
            super().eof_received()
        finally:
            self._charged(started)

    def connection_lost(self, exc: Exception | None) -> None:
        admission, self.admission = self.admission, None
        started = admission.clock() if admission is not None else 0.0
        try:
            super().connection_lost(exc)
        finally:
            if admission is not None:
                admission.charge(admission.clock() - started)
