"""The transport seam: what the connection driver needs from a byte pipe, and what it offers back.

Theory of operation. A *transport* moves bytes; a *handler* (the connection driver,
:class:`rstreams.net.Connection`) runs the protocol. They meet through two small
interfaces, shaped like asyncio's own Transport/Protocol pair so that the TCP, TLS and
Unix transports are thin adapters over asyncio's, and the pipe and WebSocket transports
follow the same contract:

* reading: the transport calls ``handler.data_received(view)`` with a memoryview that is
  only valid during the call (it points into a reused, preallocated buffer: the handler
  copies what it keeps), or, if the handler calls ``pause_reading()`` during the call, until
  it calls ``resume_reading()`` (nothing is read into that buffer meanwhile: a handler can
  leave the rest of a read for later without copying it); ``eof_received()`` once at end of
  input; ``connection_lost(exc)`` exactly once at the very end (``exc`` is ``None`` for an
  orderly close);
* writing: ``transport.writelines(chunks)`` takes a list of byte chunks and never blocks (how
  it hands them to its lower layer, joined or one by one, is its own choice), or, once
  the transport is closing, drops them and returns ``False`` (write-if-open: the
  driver does not ask ``is_closing()`` before every write); the
  driver calls it about once per event-loop turn (write coalescing: one syscall for
  everything that turn produced). ``get_write_buffer_size()`` tells what is still
  unsent; when it passes the high-water mark the transport calls
  ``handler.pause_writing()``, and ``resume_writing()`` once it drains below the low mark.
  That "writable" state is what ties demand to the socket.
* handing over: ``transport.set_handler(handler)`` makes ``handler`` the one called from then on.

Every transport translates its lower layer's exceptions (OSError, ssl.SSLError,
websockets.ConnectionClosed) into the ``exc`` it passes to ``connection_lost``; the driver
turns that, once, into :class:`~rstreams.errors.ConnectionBrokenError` with ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from rstreams.errors import ConnectionBrokenError, ReactiveStreamsError

__all__ = [
    "CERTIFICATE_ALERTS",
    "DEFAULT_HIGH_WATER",
    "DEFAULT_LOW_WATER",
    "DIRECT_WRITE",
    "READ_BUFFER_SIZE",
    "SOCKET_READ_SIZE",
    "TLS_ENDED_BEFORE_HELLO",
    "TLS_REFUSAL_HINT",
    "EndedBeforeHelloError",
    "TLSEndedError",
    "TLSNoResponseError",
    "TLSServerError",
    "Transport",
    "TransportHandler",
    "check_water_marks",
    "write_grouped",
]

READ_BUFFER_SIZE = 64 * 1024
"""Size of the preallocated read buffer. Below 128 KiB on purpose: asyncio's default 256 KiB
``recv`` makes glibc map and unmap a block on every read on this class of machine
(notes/machine-limits.md, pitfall 1); ``recv_into`` a reused 64 KiB buffer avoids it."""

SOCKET_READ_SIZE = 272 * 1024
"""Size of a socket connection's ``recv_into`` buffer during bulk transfer (it starts small and
grows when a read fills it, see :mod:`rstreams.net._stream`). Reading into a reused buffer
never allocates, so the 256 KiB pitfall above does not apply; large reads mean fewer
syscalls and loop turns for large elements. 256 KiB and a sixteenth: in a run of large
elements reads are sized to end where a frame ends (``ReadBuffer.fits``), and four 64 KiB
elements with their headers are a little more than 256 KiB."""

DEFAULT_HIGH_WATER = 1024 * 1024
"""Unsent bytes above which the transport reports "not writable" and local publishers stop
being asked for more. 1 MiB keeps loopback saturated (64 KiB writes reach the
3 GB/s ceiling) while bounding memory per connection."""

DEFAULT_LOW_WATER = 256 * 1024
"""Unsent bytes below which production resumes (a quarter of the high mark: hysteresis
so that pause/resume does not flap on every write)."""


TLS_REFUSAL_HINT = (
    "a TLS server closes like this when it refuses the session, e.g. when it requires a client "
    "certificate (mutual TLS) and none, or an untrusted one, was presented"
)
"""Added to the error of a TLS connection that ends before the peer's hello: with TLS 1.3 the
server checks a client certificate after the client's handshake has completed, so the refusal
reaches the client as an end of input, not as a handshake error."""

TLS_ENDED_BEFORE_HELLO = f"before its hello; {TLS_REFUSAL_HINT}"
"""How the error of a TLS connection that the server ended after the handshake, before its first
word, ends, on every scheme: before its RS.io hello on ``tls://``, before the HTTP response of
the WebSocket handshake on ``wss://``. A server refusing the client's certificate does this on
every connection, a server killed at that moment once: callers that retry tell the two apart by
whether a second connection made at once ends with it too (the replay client does).
:class:`~rstreams.errors.TLSRefusedError` is the type of such errors."""


CERTIFICATE_ALERTS = frozenset(
    {
        "TLSV13_ALERT_CERTIFICATE_REQUIRED",
        "SSLV3_ALERT_BAD_CERTIFICATE",
        "SSLV3_ALERT_HANDSHAKE_FAILURE",  # OpenSSL's TLS 1.2 server, given no certificate
        "SSLV3_ALERT_CERTIFICATE_UNKNOWN",
        "TLSV1_ALERT_UNKNOWN_CA",
    }
)
"""The TLS alerts (``ssl.SSLError.reason``) by which a server refuses the client's certificate,
or its lack of one, instead of ending the session: as Java's and Node's servers do, and Python's
blocking ``ssl`` module (handshake_failure may also mean that no cipher suite is shared)."""


class TLSNoResponseError(ReactiveStreamsError, ConnectionRefusedError):
    """Opening a ``wss://`` connection failed without an HTTP response to the WebSocket handshake
    (the TLS handshake done): its message says so with :data:`TLS_REFUSAL_HINT`, and callers
    tell it by this type, along the ``__cause__`` of ``connect``'s
    :class:`~rstreams.errors.ConnectionBrokenError`, to name the client certificate options."""


class TLSEndedError(TLSNoResponseError):
    """Opening a ``wss://`` connection failed because the server ended the TLS session before
    the HTTP response of the WebSocket handshake (its message ends with
    :data:`TLS_ENDED_BEFORE_HELLO`); ``connect`` raises :class:`~rstreams.errors.TLSRefusedError`
    for it, as for a ``tls://`` session that ends before the hello."""


class TLSServerError(ConnectionBrokenError):
    """A plain ``tcp://`` connection whose server's first bytes were a TLS record
    (:data:`rstreams.wire._errors.TLS_RECORD_TYPES`, then ``0x03``): the server speaks TLS at
    that address, and the message names the URL to use (``tls://host:port``). A configuration
    mistake, not an outage: the same address answers every connection the same way, so callers
    that retry (the replay client) do not. A TLS server that closes without a word instead (as
    Python's does) ends the connection as any server that closes before its hello does."""


class EndedBeforeHelloError(ConnectionBrokenError):
    """A plain connection that its server ended before its hello, without a word: the message
    says that an endpoint not speaking RS.io on the URL's scheme closes like this. Once, it may
    be a server killed just then; again at once, it is the address (a TLS server reached with
    ``tcp://``, as Python's closes so): the replay client gives up at the second in a row."""


def check_water_marks(high: int, low: int) -> None:
    """Raise ``ValueError`` unless ``0 <= low < high`` (ints)."""
    if type(high) is not int or type(low) is not int or not 0 <= low < high:
        raise ValueError(f"need ints 0 <= low_water < high_water, got low_water={low!r}, high_water={high!r}")


class TransportHandler(Protocol):
    """The receiving end of a transport: the connection driver implements it."""

    def connection_made(self, transport: Transport) -> None:
        """The transport is ready; called once, before anything else."""

    def data_received(self, data: memoryview) -> None:
        """Bytes arrived; ``data`` is valid during this call, or until reading resumes if the
        handler pauses reading in it."""

    def eof_received(self) -> None:
        """The peer will send nothing more."""

    def connection_lost(self, error: BaseException | None) -> None:
        """The transport is closed; called once, last. ``error`` is the lower layer's reason."""

    def pause_writing(self) -> None:
        """Unsent bytes passed the high-water mark: stop producing."""

    def resume_writing(self) -> None:
        """Unsent bytes fell below the low-water mark: produce again."""


class Transport(Protocol):
    """A full-duplex, ordered byte pipe (the draft's requirements for a transport)."""

    def writelines(self, chunks: list[bytes]) -> bool:
        """Queue ``chunks`` for sending, in order; never blocks, never raises for a closed pipe.
        Returns ``False``, and queues nothing, once :meth:`is_closing` (one call per write asks
        both: the writer need not ask first)."""

    def get_write_buffer_size(self) -> int:
        """Bytes queued but not yet handed to the operating system (or the peer library)."""

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        """Set the marks at which ``pause_writing``/``resume_writing`` are signalled; like asyncio's,
        signals ``pause_writing`` at once if more than the new ``high`` is already unsent."""

    def pause_reading(self) -> None:
        """Stop calling ``data_received`` until :meth:`resume_reading`."""

    def resume_reading(self) -> None:
        """Undo :meth:`pause_reading`."""

    def can_write_eof(self) -> bool:
        """Whether :meth:`write_eof` can half-close (TCP and Unix sockets; not TLS, pipes, WebSocket)."""

    def write_eof(self) -> None:
        """Send what is queued, then end our output while still reading (only if :meth:`can_write_eof`)."""

    def close(self) -> None:
        """Send what is queued, then close; ``connection_lost`` follows."""

    def abort(self) -> None:
        """Close at once, dropping anything queued; ``connection_lost`` follows."""

    def is_closing(self) -> bool:
        """Whether :meth:`close` or :meth:`abort` was called or the pipe broke."""

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """Lower-layer details: ``peername``, ``sockname``, ``ssl_object``, ``path``..."""

    def set_handler(self, handler: TransportHandler) -> None:
        """Call ``handler`` instead of the current handler from the next call on (a call under way
        finishes as it is). A handler that only forwards its calls to another from some point on
        (a server's pending connection once it is established, :mod:`rstreams.net._pending`)
        hands its transport over to that one, so a read costs no call of its own."""


DIRECT_WRITE = 32 * 1024
"""Chunks at least this big are handed to the lower layer on their own (:func:`write_grouped`)."""


def write_grouped(write: Callable[[bytes], object], chunks: list[bytes]) -> None:
    """``writelines`` for a lower layer whose own ``writelines`` joins its chunks into one ``bytes``
    (asyncio's socket and pipe transports before Python 3.12): each chunk of at least
    :data:`DIRECT_WRITE` bytes is handed to ``write`` on its own, not copied into a join; the
    small chunks between them are joined, so small frames still cost one ``send`` per turn."""
    small: list[bytes] = []
    for chunk in chunks:
        if len(chunk) >= DIRECT_WRITE:
            if small:
                write(small[0] if len(small) == 1 else b"".join(small))
                small = []
            write(chunk)
        else:
            small.append(chunk)
    if small:
        write(small[0] if len(small) == 1 else b"".join(small))
