"""Byte-stream transports on asyncio: TCP, TLS and Unix sockets, and pipes.

Sockets: :class:`StreamProtocol` adapts an asyncio socket transport to the seam in both
directions: it is the :class:`~rstreams.net._transport.Transport` the handler writes to
(writing only into an empty asyncio buffer, see the class), and it is an
:class:`asyncio.BufferedProtocol`: the loop ``recv_into``s a reused buffer and the
handler gets a memoryview of the filled part, so no ``bytes`` object is made per read and the
default loop's 256 KiB ``recv`` pitfall is avoided (notes/machine-limits.md). The buffer starts
tiny (:data:`FIRST_READ_SIZE`, enough for a hello), is small (:data:`SMALL_READ_SIZE`) once a
read fills that and while reads are small, so an idle or chatty connection costs
little memory (a server holds thousands), and grows to ``SOCKET_READ_SIZE`` as soon as a
read fills it (bulk transfer: fewer syscalls and loop turns); after :data:`SHRINK_AFTER`
reads in a row that would have fitted the small buffer it goes back to small. The buffer is a
:class:`~rstreams.wire._parser.ReadBuffer`: when the parser keeps a view of a read's last bytes
(a large element cut by the end of the read, joined once the rest arrives: one copy of it, not
two), the next read goes into a spare buffer of the same size, and the two take turns while
that goes on (so a connection in bulk transfer holds at most two big buffers). In a run of
large frames the parser also says the size of a read that ends where a frame ends
(``ReadBuffer.fits``): the next read asks for that much, cuts no element and lends nothing,
so reads go on into one buffer, which stays in the cache. TLS is the
same transport with ``ssl=``: asyncio's SSL layer honours BufferedProtocol too.

Pipes: a pipe pair is two asyncio transports (one read, one write), which
:class:`PipeTransport` joins into one. The default loop's read-pipe transport calls
``data_received(bytes)`` (no BufferedProtocol support there), so its read size is lowered
to the same 64 KiB; uvloop's reads into our buffer, as for sockets. Both are handled.

Aborting: a TCP or TLS transport aborted with bytes still unsent (here, in asyncio's buffer or
in the socket's send queue) is reset (``SO_LINGER`` 0), not closed: a close would let the
peer read what the kernel holds and then an orderly end of input, perhaps at a frame's
boundary, and take a cut stream for a finished one (PROTOCOL.md §9.1). A Unix socket cannot
be reset: its peer reads what was sent and then the end of input, where the goodbye is
missing or cut, an error for it (§9.3), never an orderly end.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import struct
from typing import IO, Any, cast

from rstreams.net._intake import socket_unsent
from rstreams.net._transport import (
    DEFAULT_HIGH_WATER,
    DEFAULT_LOW_WATER,
    READ_BUFFER_SIZE,
    SOCKET_READ_SIZE,
    Transport,
    TransportHandler,
    write_grouped,
)
from rstreams.wire._parser import ReadBuffer

__all__ = [
    "FIRST_READ_SIZE",
    "JOINED_WRITE",
    "SHRINK_AFTER",
    "SMALL_READ_SIZE",
    "PipeTransport",
    "StreamProtocol",
    "open_pipe_transport",
    "reset_if_unsent",
]

FIRST_READ_SIZE = 1024
"""A socket connection's read buffer until a read fills it: a hello and its first frames fit, and
a server's thousands of connections that have not said hello yet cost little (issue 18)."""

SMALL_READ_SIZE = 16 * 1024
"""A socket connection's read buffer while its reads are small (most connections, most of the time)."""

JOINED_WRITE = 256 * 1024
"""Most bytes of queued chunks joined into one write where the chunks cannot go to the socket
with ``writev`` (no descriptor, or no ``os.writev``): one copy into a join costs less than a
system call per chunk (a frame's head and its large payload would be two ``send`` calls, the
head a packet of its own)."""

_write = os.write

WRITEV_CHUNKS = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 16
"""Most chunks given to one ``writev`` (the system's limit, IOV_MAX)."""

SHRINK_AFTER = 64
"""Reads in a row of at most :data:`SMALL_READ_SIZE` bytes after which a grown buffer is dropped."""


class StreamProtocol(asyncio.BufferedProtocol):
    """Adapts an asyncio socket transport to the seam, both ways: it is the asyncio protocol
    (reads go to the :class:`TransportHandler`) and the :class:`Transport` the handler writes to.

    Writing (TCP and Unix sockets): chunks are handed to asyncio only while its buffer is empty,
    so a write goes straight to the socket and asyncio copies at most the part the socket did
    not take. While asyncio's buffer is empty, chunks go to the socket's descriptor itself: one
    with a ``write`` (no Python frame of asyncio's per write: a request/response makes one each
    way), several with one ``writev`` (asyncio before Python 3.12 would join them into one
    ``bytes``, a copy of every large payload); the order of bytes is kept because asyncio
    writes only what it holds, and it holds nothing then; the part the socket did not take goes
    to asyncio, as with its own write. While asyncio holds unsent bytes the chunks wait here,
    by reference, in :attr:`_queue`: asyncio's own buffer (a ``bytearray`` before Python 3.12)
    would copy each of them in, and again whenever it grows after a partial send. asyncio's
    marks are set to zero so that it says when its buffer stops being empty (``pause_writing``)
    and when it is empty again (``resume_writing``: the queue goes on); the handler's marks
    apply to everything unsent, here and in asyncio. TLS keeps asyncio's buffering (its layer
    encrypts into buffers of its own anyway)."""

    __slots__ = (
        "_blocked",
        "_buffer",
        "_closed",
        "_direct",
        "_fd",
        "_full",
        "_handler",
        "_high",
        "_last",
        "_low",
        "_paused",
        "_queue",
        "_queued",
        "_read_size",
        "_small_reads",
        "_spare",
        "_spare_view",
        "_tls",
        "_transport",
        "_view",
    )

    def __init__(
        self, handler: TransportHandler, *, high: int = DEFAULT_HIGH_WATER, low: int = DEFAULT_LOW_WATER
    ) -> None:
        self._handler = handler
        self._high = high
        self._low = low
        self._buffer = ReadBuffer(FIRST_READ_SIZE)  # what the next read goes into ...
        self._view = memoryview(self._buffer)  # ... as the loop takes it
        self._spare: ReadBuffer | None = None  # the buffer before, while the parser keeps views of it
        self._spare_view = self._view  # ... as the loop took it (the two views take turns with their buffers)
        self._small_reads = 0  # reads in a row that fitted SMALL_READ_SIZE, while the buffer is big
        self._full = FIRST_READ_SIZE  # a read this long may resize the buffer: its size while small, else 0
        # The view of the last read handed over, and its size (-1 once the buffer changed): a read
        # as long as it, into the same buffer, is handed the same view (a request/response reads
        # the same size each time, and a view's slice costs more than the check). The handler's
        # view is valid during its call only (or until reading resumes): reusing it later
        # changes nothing it may still hold.
        self._last = self._view
        self._read_size = -1
        self._tls = False
        self._transport: asyncio.Transport | None = None
        self._queue: list[bytes] = []  # chunks waiting for asyncio's buffer to be empty (not TLS)
        self._queued = 0  # their bytes
        self._blocked = False  # asyncio's buffer holds bytes: chunks queue here
        self._closed = False  # close() or abort() was called, or the connection was lost
        self._fd = -1  # the socket's descriptor, for writev (not TLS); -1: asyncio's writes only
        self._paused = False  # the handler was told pause_writing (unsent bytes passed the high mark)
        # Whether a write may go to the socket's descriptor now: not TLS, not closed, asyncio's buffer
        # empty (not blocked), a descriptor (the four fields writelines would test, as one; kept in
        # step wherever one of them changes).
        self._direct = False

    # -- asyncio's side ------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport = cast(asyncio.Transport, transport)  # uvloop's is not a subclass
        self._tls = transport.get_extra_info("sslcontext") is not None
        if self._tls:
            transport.set_write_buffer_limits(self._high, self._low)
        else:  # hear when its buffer stops being empty, and when it is empty again
            transport.set_write_buffer_limits(0, 0)
            sock = transport.get_extra_info("socket")
            if sock is not None and hasattr(os, "writev"):
                self._fd = sock.fileno()
                self._direct = not self._closed and not self._blocked
        self._handler.connection_made(self)

    def get_buffer(self, sizehint: int) -> memoryview:
        buffer = self._buffer
        fits = buffer.fits  # in a run of large frames: the size of a read that ends where one does
        if buffer.lent:
            # The parser keeps a view of the last read's end: read into the spare buffer next;
            # the lent one becomes the spare (read into again only after the next read was
            # handed over, by when the parser is done with its view).
            buffer.lent = False
            spare = self._spare
            if spare is None or len(spare) != len(buffer):
                spare = ReadBuffer(len(buffer))
                self._spare_view = memoryview(spare)
            self._spare, self._buffer = buffer, spare
            self._spare_view, self._view = self._view, self._spare_view
            self._read_size = -1  # (the last read's view is of the other buffer)
        if fits:  # (the same in both buffers: they are as long)
            buffer.fits = 0  # for this read only
            return self._view[:fits]  # it cuts no element: nothing lent, the next read comes here too
        return self._view

    def _resize(self, size: int) -> None:
        """A new buffer of ``size`` bytes (a view the handler kept into the old one keeps that alive
        as long as it needs); no spare."""
        self._buffer = buffer = ReadBuffer(size)
        self._view = self._spare_view = self._last = memoryview(buffer)  # (the old buffer may go)
        self._read_size = -1
        self._spare = None
        self._full = size if size <= SMALL_READ_SIZE else 0

    def buffer_updated(self, nbytes: int) -> None:
        view, full = self._view, self._full
        if nbytes == self._read_size:  # as long as the last read, into the same buffer
            self._handler.data_received(self._last)
        else:
            self._last = data = view[:nbytes]
            self._read_size = nbytes
            self._handler.data_received(data)
        if nbytes < full:  # a small buffer, not filled (small messages): it stays
            return
        # Resize only after the handler returned: the view it got is valid during its call only.
        size = len(view)
        if size <= SMALL_READ_SIZE:
            if nbytes == size:  # more was probably waiting: read bigger (bulk transfer: big)
                self._resize(SMALL_READ_SIZE if size < SMALL_READ_SIZE else SOCKET_READ_SIZE)
        elif nbytes > SMALL_READ_SIZE:
            self._small_reads = 0
        else:
            self._small_reads += 1
            if self._small_reads >= SHRINK_AFTER:
                self._small_reads = 0
                self._resize(SMALL_READ_SIZE)

    def eof_received(self) -> bool:
        self._handler.eof_received()
        # Keep the write side open: the driver closes after its goodbye. TLS cannot half-close
        # (asyncio warns if asked to), so there the driver's linger decides instead.
        return not self._tls

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self._direct = False
        self._queue = []
        self._queued = 0
        self._handler.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._tls:
            self._handler.pause_writing()
        else:
            self._blocked = True  # (the handler's marks are checked by the writer)
            self._direct = False

    def resume_writing(self) -> None:
        if self._tls:
            self._handler.resume_writing()
            return
        self._blocked = False  # asyncio's buffer is empty: the queue goes on
        self._direct = self._fd >= 0 and not self._closed and self._transport is not None
        if self._queue:
            chunks, self._queue, self._queued = self._queue, [], 0
            self._send(chunks)
        if self._paused and self.get_write_buffer_size() <= self._low:
            self._paused = False
            self._handler.resume_writing()

    # -- the handler's side: Transport ----------------------------------------------------
    def set_handler(self, handler: TransportHandler) -> None:
        self._handler = handler

    def writelines(self, chunks: list[bytes]) -> bool:
        if self._direct and len(chunks) == 1:  # one chunk on a socket: a request/response's every write
            chunk = chunks[0]  # (_writev's one-chunk case)
            try:
                sent = _write(self._fd, chunk)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:  # a broken socket: asyncio's own write meets the error and reports it
                self._fd = -1
                self._direct = False
                sent = 0
            if sent != len(chunk):  # asyncio gets the rest (and says when it holds bytes)
                self._transport.write(memoryview(chunk)[sent:] if sent else chunk)  # type: ignore[union-attr]
                if self._blocked and not self._paused:
                    self._check_high()
            return True
        transport = self._transport
        if self._tls:  # is_closing, inlined (asked of asyncio, see there)
            if transport is None or transport.is_closing():
                return False
            if len(chunks) == 1:
                transport.write(chunks[0])
            else:
                write_grouped(transport.write, chunks)  # asyncio 3.11 joins writelines' chunks
            return True
        if self._closed or transport is None:  # is_closing, inlined
            return False
        if self._blocked:
            self._queue += chunks
            self._queued += len(chunks[0]) if len(chunks) == 1 else sum(map(len, chunks))
        elif len(chunks) != 1:
            self._send(chunks)
        else:  # one chunk, no descriptor (a descriptor's one chunk went the direct way above)
            transport.write(chunks[0])
        if self._blocked and not self._paused:
            self._check_high()
        return True

    def _send(self, chunks: list[bytes]) -> None:
        """Write ``chunks`` while asyncio's buffer stays empty, queue the rest once it holds bytes:
        with :meth:`_writev` on a socket, else joined into writes of up to :data:`JOINED_WRITE`
        bytes (a larger chunk on its own)."""
        if self._fd >= 0 and not self._closed:
            self._writev(chunks)
            return
        write = self._transport.write  # type: ignore[union-attr]  # only while connected
        n = len(chunks)
        i = 0
        while i < n:
            if self._blocked:
                rest = chunks[i:]
                self._queue += rest
                self._queued += sum(map(len, rest))
                return
            size = len(chunks[i])
            j = i + 1
            while j < n and size + len(chunks[j]) <= JOINED_WRITE:
                size += len(chunks[j])
                j += 1
            write(chunks[i] if j == i + 1 else b"".join(chunks[i:j]))
            i = j

    def _writev(self, chunks: list[bytes]) -> None:
        """:meth:`_send` on a socket: ``writev`` the chunks, none copied; asyncio gets the rest
        of a chunk the socket took only part of (it sends it when the socket has room, and says
        when it is done: ``resume_writing``); the chunks after it are queued."""
        fd = self._fd
        n = len(chunks)
        i = 0
        while i < n:
            batch = chunks if not i and n <= WRITEV_CHUNKS else chunks[i : i + WRITEV_CHUNKS]
            try:
                sent = os.writev(fd, batch)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:  # a broken socket: asyncio's own write meets the error and reports it
                self._fd = -1
                self._direct = False
                self._send(chunks[i:])
                return
            if sent == sum(map(len, batch)):
                i += len(batch)
                continue
            for chunk in batch:  # skip what went out: the chunk the socket stopped inside is i
                if sent < len(chunk):
                    break
                sent -= len(chunk)
                i += 1
            chunk = chunks[i]
            i += 1
            self._transport.write(memoryview(chunk)[sent:] if sent else chunk)  # type: ignore[union-attr]
            if self._blocked:  # (else asyncio's send took it all: go on)
                if i < n:
                    rest = chunks[i:]
                    self._queue += rest
                    self._queued += sum(map(len, rest))
                return

    def _check_high(self) -> None:
        """Tell the handler to stop producing once the unsent bytes pass its high mark."""
        if not self._paused and self.get_write_buffer_size() > self._high:
            self._paused = True
            self._handler.pause_writing()

    def _hand_over_queue(self) -> None:
        """Give asyncio every queued chunk now (before a close or a half-close, which send what
        asyncio holds first)."""
        transport = self._transport
        chunks, self._queue, self._queued = self._queue, [], 0
        if transport is not None:
            for chunk in chunks:
                transport.write(chunk)

    def get_write_buffer_size(self) -> int:
        if self._transport is None:
            return 0
        if not self._blocked and not self._tls:
            return self._queued  # asyncio's buffer is empty (it would have said otherwise)
        return self._transport.get_write_buffer_size() + self._queued

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        self._high, self._low = high, low
        if self._transport is None:
            return
        if self._tls:
            self._transport.set_write_buffer_limits(high, low)
        else:
            self._check_high()  # like asyncio's: "not writable" at once if already above

    def pause_reading(self) -> None:
        if self._transport is not None and self._transport.is_reading():
            self._transport.pause_reading()
        if len(self._view) > SMALL_READ_SIZE:
            # A paused connection (one whose replies back up may stay so) holds no big buffer.
            self._resize(SMALL_READ_SIZE)

    def resume_reading(self) -> None:
        transport = self._transport
        if transport is not None and not transport.is_closing() and not transport.is_reading():
            transport.resume_reading()

    def can_write_eof(self) -> bool:
        return self._transport is not None and not self._tls and self._transport.can_write_eof()

    def write_eof(self) -> None:
        transport = self._transport
        if transport is not None and not transport.is_closing():
            self._hand_over_queue()
            try:
                transport.write_eof()  # asyncio sends what is queued first
            except OSError:  # the peer is gone already (ENOTCONN): nothing is left to half-close
                transport.abort()  # connection_lost follows, as for a write to a broken pipe

    def close(self) -> None:
        self._closed = True
        self._direct = False
        if self._transport is not None:
            if self._transport.is_closing():
                self._queue, self._queued = [], 0
            else:
                self._hand_over_queue()
            self._transport.close()

    def abort(self) -> None:
        transport = self._transport
        if transport is not None:
            reset_if_unsent(transport, self.get_write_buffer_size())
        self._closed = True
        self._direct = False
        self._queue = []
        self._queued = 0
        if transport is not None:
            transport.abort()

    def is_closing(self) -> bool:
        # Without asking asyncio on the write path: a transport asyncio closes itself after an
        # error says so here only at connection_lost, a loop turn later; writes in between are
        # dropped by asyncio, as they would have been here. TLS: asyncio also closes at the end
        # of input (see eof_received), so it is asked.
        if self._tls and self._transport is not None:
            return self._transport.is_closing()
        return self._closed or self._transport is None

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if self._transport is None:
            return default
        return self._transport.get_extra_info(name, default)


_RESET = struct.pack("ii", 1, 0)  # SO_LINGER on, 0 s: the close sends RST, the unsent bytes are dropped


def reset_if_unsent(transport: asyncio.BaseTransport, unsent: int) -> None:
    """Before ``transport.abort()``: make its TCP socket's close a reset if bytes are still
    unsent (``unsent``: those held above the socket; its send queue is asked when that is 0).
    TLS too (the socket under asyncio's SSL layer); not a Unix socket, which cannot be reset.
    The socket is the transport's public ``get_extra_info("socket")``."""
    sock = transport.get_extra_info("socket")
    if sock is None or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return
    if unsent <= 0 and socket_unsent(transport) <= 0:
        return
    with contextlib.suppress(OSError, ValueError):  # closed meanwhile: nothing left to reset
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET)


class _Half(asyncio.BufferedProtocol):
    """The protocol of one half of a pipe pair; reports to the :class:`PipeTransport`."""

    def __init__(self, owner: PipeTransport, *, reader: bool) -> None:
        self._owner = owner
        self._reader = reader
        self._view: memoryview | None = None

    def get_buffer(self, sizehint: int) -> memoryview:
        """uvloop reads pipes into a buffer, like sockets; made on first use (readers only)."""
        if self._view is None:
            self._view = memoryview(bytearray(READ_BUFFER_SIZE))
        return self._view

    def buffer_updated(self, nbytes: int) -> None:
        assert self._view is not None
        self._owner.handler.data_received(self._view[:nbytes])

    def data_received(self, data: bytes) -> None:
        self._owner.handler.data_received(memoryview(data))

    def eof_received(self) -> bool:
        self._owner.handler.eof_received()
        return True

    def pause_writing(self) -> None:
        self._owner.handler.pause_writing()

    def resume_writing(self) -> None:
        self._owner.handler.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        self._owner.half_lost(self._reader, exc)


class PipeTransport(Transport):
    """A read pipe and a write pipe used as one full-duplex transport."""

    def __init__(self, handler: TransportHandler) -> None:
        self.handler = handler
        self._reader: asyncio.ReadTransport | None = None
        self._writer: asyncio.WriteTransport | None = None
        self._open_halves = 2
        self._error: BaseException | None = None
        self._closing = False

    def attach(
        self, reader: asyncio.ReadTransport, writer: asyncio.WriteTransport, high: int, low: int
    ) -> None:
        self._reader = reader
        self._writer = writer
        if hasattr(reader, "max_size"):  # asyncio reads 256 KiB per os.read otherwise (pitfall 1)
            reader.max_size = READ_BUFFER_SIZE
        writer.set_write_buffer_limits(high, low)

    def half_lost(self, reader: bool, exc: Exception | None) -> None:
        if exc is not None and self._error is None:
            self._error = exc
        self._open_halves -= 1
        if self._open_halves == 1:
            # One direction ended. A write side that broke (the peer's reader went away)
            # ends the whole pipe; a reader at EOF waits for the driver's close.
            if not reader or exc is not None:
                self.abort()
            return
        self.handler.connection_lost(self._error)

    # -- Transport -----------------------------------------------------------------
    def set_handler(self, handler: TransportHandler) -> None:
        self.handler = handler

    def writelines(self, chunks: list[bytes]) -> bool:
        if self._closing or self._open_halves < 2:  # is_closing
            return False
        if self._writer is not None and not self._writer.is_closing():
            write_grouped(self._writer.write, chunks)  # asyncio 3.11 joins writelines' chunks
        return True

    def get_write_buffer_size(self) -> int:
        return self._writer.get_write_buffer_size() if self._writer is not None else 0

    def set_write_buffer_limits(self, high: int, low: int) -> None:
        if self._writer is not None:
            self._writer.set_write_buffer_limits(high, low)

    def pause_reading(self) -> None:
        if self._reader is not None and self._reader.is_reading():
            self._reader.pause_reading()

    def resume_reading(self) -> None:
        if self._reader is not None and not self._reader.is_closing() and not self._reader.is_reading():
            self._reader.resume_reading()

    def can_write_eof(self) -> bool:
        return False  # closing the write pipe would end the pair (see half_lost)

    def write_eof(self) -> None:
        """Does nothing: a pipe pair cannot half-close (:meth:`can_write_eof` is false)."""

    def close(self) -> None:
        self._closing = True
        # asyncio's pipe transports report connection_lost once per close/abort call, so
        # each half is closed at most once.
        if self._writer is not None and not self._writer.is_closing():
            self._writer.close()
        if self._reader is not None and not self._reader.is_closing():
            self._reader.close()

    def abort(self) -> None:
        self._closing = True
        if self._writer is not None and not self._writer.is_closing():
            self._writer.abort()
        if self._reader is not None and not self._reader.is_closing():
            self._reader.close()

    def is_closing(self) -> bool:
        return self._closing or self._open_halves < 2

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        if name == "pipe":
            read_pipe = self._reader.get_extra_info("pipe") if self._reader else None
            write_pipe = self._writer.get_extra_info("pipe") if self._writer else None
            return (read_pipe, write_pipe)
        return default


async def open_pipe_transport(
    handler: TransportHandler,
    reader: IO[bytes] | int,
    writer: IO[bytes] | int,
    *,
    high: int = DEFAULT_HIGH_WATER,
    low: int = DEFAULT_LOW_WATER,
) -> PipeTransport:
    """Join a readable and a writable pipe (file objects or descriptors) into one transport.

    Descriptors are wrapped in file objects that own them: closing the transport closes
    them. ``handler.connection_made`` is called before this returns.
    """
    loop = asyncio.get_running_loop()
    read_file = os.fdopen(reader, "rb", buffering=0) if isinstance(reader, int) else reader
    write_file = os.fdopen(writer, "wb", buffering=0) if isinstance(writer, int) else writer
    transport = PipeTransport(handler)
    try:
        write_transport, _ = await loop.connect_write_pipe(lambda: _Half(transport, reader=False), write_file)
        read_transport, _ = await loop.connect_read_pipe(lambda: _Half(transport, reader=True), read_file)
    except OSError:
        read_file.close()
        write_file.close()
        raise
    # connect_read_pipe starts reading on the next loop turn, so connection_made below
    # still comes before any data_received.
    transport.attach(read_transport, write_transport, high, low)
    handler.connection_made(transport)
    return transport
