"""The outbox: the one narrow interface every piece of a connection reaches it through.

Theory of operation. A connection (:class:`rstreams.net.Connection`) is a facade over
pieces with one job each: the pump (:mod:`rstreams.net._pump`: transport handling, event
routing, the per-turn flush), the serving table, the subscription table, closing,
authentication and keepalive. None of them imports another to call back into it; they all
hold the :class:`Outbox`, which sits below them and offers only

* the sans-I/O core (:attr:`Outbox.core`): pieces queue frames on it directly;
* :meth:`~Outbox.mark_dirty`: "the core holds output, or a piece wants its turn": one
  ``call_soon``-scheduled flush per event-loop turn, whatever number of pieces asked;
* :meth:`~Outbox.write_now` / :meth:`~Outbox.write_soon`: write what the core holds at once
  (a ping; a subscribe or a request that nothing else in this turn is waiting to join);
* :meth:`~Outbox.close_now`: say goodbye and close (a limit or a protocol rule was broken);
* the state the pieces read on their hot paths: the transport, whether it is writable,
  whether a read is being delivered, when something was last read or written, whether
  the connection has ended.

The flush and the close are the pump's and the closing piece's: they install them once
with :meth:`Outbox.install_flush` and :meth:`Outbox.install_close`, so the outbox never
imports them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rstreams.net._intake import ReplyLedger
from rstreams.net._transport import Transport
from rstreams.wire import Connection as Core
from rstreams.wire import ExtensionMessage

if TYPE_CHECKING:
    from rstreams.observe import ConnectionObserver

__all__ = ["WRITE_LIMIT", "Outbox"]


WRITE_LIMIT = 1 << 20
"""Bytes asked of the core per write (``data_to_send(WRITE_LIMIT)``): it returns all it holds
unless that is at least this much, so only a write this large can leave output behind (parts
of split elements, PROTOCOL.md §8), and only then is the core asked whether it did."""


def _not_installed(*args: object) -> None:
    raise RuntimeError("the connection's pieces are not assembled yet")


class Outbox:
    """What the pieces of one connection share; see the module docstring."""

    __slots__ = (
        "_backlogged",
        "_buf",
        "_close_now",
        "_flush",
        "_loop_thread",
        "bytes_read",
        "closing",
        "core",
        "ended",
        "flush_handle",
        "flush_scheduled",
        "heard_at",
        "in_read",
        "ledger",
        "loop",
        "observer",
        "on_writable",
        "output",
        "reading",
        "sent_at",
        "stamps_sent",
        "transport",
        "writable",
        "wrote_through",
    )

    def __init__(self, core: Core) -> None:
        self.core = core
        self.output = core.output
        """The core's output (read to tell whether it holds only its buffer: :meth:`write_buffered`)."""
        self._buf = core.output.buf  # (never rebound)
        self.loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self.transport: Transport | None = None
        """The transport, from ``connection_made`` until ``connection_lost``."""
        self.writable = True
        """Whether the transport is below its high-water mark (local publishers may produce)."""
        self.reading = False
        """Whether the events of a read are being delivered (its output is flushed at its end)."""
        self.flush_scheduled = False
        self.flush_handle: asyncio.Handle | None = None
        self.wrote_through = False
        """:meth:`write_soon` wrote at once since the last read or flush: later output coalesces."""
        self.heard_at = 0.0
        """Loop time of the last read (the keepalive's clock: read once per read, by the pump)."""
        self.in_read = False
        """A read is being handled, from its bytes to its answer: its writes happen at ``heard_at``."""
        self.sent_at = 0.0
        """Loop time of the last write that counts as activity (PROTOCOL.md §14.2), outside reads."""
        self.stamps_sent = False
        """Whether writes update :attr:`sent_at` (only an idle timeout reads it: the keepalive sets
        this). A write while a read is handled does not: ``heard_at`` already says that moment."""
        self.ended: BaseException | None = None
        """Why streams can no longer run on this connection; ``None`` while they can."""
        self.closing = False
        """This side said (or is saying) goodbye."""
        self.ledger = ReplyLedger(mark=0)
        """Which unsent bytes are replies (input backpressure, :mod:`rstreams.net._intake`); its
        :attr:`~rstreams.net._intake.ReplyLedger.written` is the count of bytes sent."""
        self.bytes_read = 0
        """Bytes read from the transport (the pump counts them; counting reads it when scraped)."""
        self.on_writable: list[Callable[[], object]] = []
        """Called once when the transport is writable again (a channel's input waits for it)."""
        self.observer: ConnectionObserver | None = None
        """What counts this connection's events (:mod:`rstreams.observe`); ``None``: nothing does."""
        self._flush: Callable[[], None] = _not_installed
        self._close_now: Callable[[str, int | None], None] = _not_installed
        self._backlogged: Callable[[], None] = _not_installed

    def install_flush(self, flush: Callable[[], None], backlogged: Callable[[], None]) -> None:
        """Set what :meth:`mark_dirty` schedules (the pump's flush) and what a write that may
        leave too many replies unsent calls (the pump's backlog check); once, at assembly."""
        self._flush = flush
        self._backlogged = backlogged

    def install_close(self, close_now: Callable[[str, int | None], None]) -> None:
        """Set what :meth:`close_now` does (the closing piece's; once, at assembly)."""
        self._close_now = close_now

    # -- output ----------------------------------------------------------------------------
    def mark_dirty(self) -> None:
        """Flush on this loop turn's end (the core holds output, or a piece wants its turn).

        While a read is being delivered nothing is scheduled: the pump flushes at the end
        of every read (a loop callback less per request/response)."""
        if not self.flush_scheduled:
            self.flush_scheduled = True
            if not self.reading:
                self.flush_handle = self.loop.call_soon(self._flush)

    def flush_now(self) -> None:
        """Run the turn's flush at once (instead of on the turn's end, if it was scheduled)."""
        handle = self.flush_handle
        if handle is not None:
            handle.cancel()
            self.flush_handle = None
        self._flush()

    def write_now(self, *, activity: bool = True) -> None:
        """Write what the core holds at once, in a write of its own.

        ``activity=False``: the write does not count as activity for the idle timeout (a
        keepalive ping must not make a silent peer look alive, PROTOCOL.md §14.2).
        """
        transport = self.transport
        if transport is None:
            return
        data = self.core.data_to_send(WRITE_LIMIT)
        if self.write(transport, data, activity=activity) if data else self.core.has_data_to_send:
            self.mark_dirty()

    def write(self, transport: Transport, data: list[bytes], *, activity: bool = True) -> bool:
        """Hand ``data`` (the core's output) to ``transport``: every write goes through here.
        Returns whether the core still holds output (parts of a split element, §8). Once the
        transport is closing, ``data`` is dropped (its ``writelines`` says so: no write is
        counted)."""
        if not transport.writelines(data):
            return self.core.has_data_to_send
        nbytes = len(data[0]) if len(data) == 1 else sum(map(len, data))
        more = nbytes >= WRITE_LIMIT and self.core.has_data_to_send  # below it, all was taken
        may_pass_mark = self.ledger.wrote(nbytes, more)  # (positional: a keyword costs a name lookup)
        observer = self.observer
        if observer is not None and observer.frames is not None:  # the frame log (bytes: the ledger)
            observer.wrote(data)
        if activity and self.stamps_sent and not self.in_read:
            self.sent_at = self.loop.time()
        if may_pass_mark:
            self._backlogged()  # it may have closed the connection: ask again
            return self.core.has_data_to_send
        return more

    def write_buffered(self, transport: Transport) -> bool:
        """:meth:`write` of the core's output when it is its buffer alone (no chunks, no split
        parts: the caller checked :attr:`output`), taken as ``data_to_send`` takes it (one
        ``bytes``, the buffer cleared) without that call; an answer's or an element's every write.
        Returns whether the core holds output again (only a goodbye the backlog check said)."""
        buf = self._buf
        chunk = b"" + buf  # the buffer's bytes: a concatenation makes them in half the work of bytes(buf)
        buf.clear()
        data = [chunk]
        if not transport.writelines(data):
            return False  # (nothing else was held)
        may_pass_mark = self.ledger.wrote(len(chunk), False)  # all of it was taken: no more
        observer = self.observer
        if observer is not None and observer.frames is not None:  # the frame log (bytes: the ledger)
            observer.wrote(data)
        if self.stamps_sent and not self.in_read:
            self.sent_at = self.loop.time()
        if may_pass_mark:
            self._backlogged()  # it may have closed the connection: ask again
            return self.core.has_data_to_send
        return False

    def write_soon(self, subscriber: int = -1, n: int = 0) -> bool:
        """Write what the core holds now, unless that would split a coalesced write; returns
        whether it wrote at once.

        Written at once when no flush is pending, no read is being delivered, nothing was
        written this way since the last read or flush, and the transport is writable: the
        caller's frame does not wait a loop turn, so a request/response is one write each
        way. Anything else goes out with the next flush, so the many subscribes of one
        turn (tasks woken by one read, say) cost two writes, not one each.

        ``subscriber`` (when not -1): queue ``request(n)`` on our subscription ``subscriber``
        first, only if it is written at once (one element at a time on an open stream costs
        no loop turn); otherwise nothing is queued or marked, and ``False`` tells the caller
        to leave the request to the turn's flush. This method alone decides: whether a
        write goes through is asked in one place.
        """
        if (
            self.flush_scheduled
            or self.reading
            or self.wrote_through
            or not self.writable
            or self.transport is None
        ):
            if subscriber < 0:
                self.mark_dirty()
            return False
        if subscriber >= 0:
            self.core.request(subscriber, n)
        self.wrote_through = True
        output = self.output  # write_now, inlined: the request/response path
        if output.buf and not output.chunks and not output.backlogs:  # the frame(s) just queued
            if self.write_buffered(self.transport):
                self.mark_dirty()
            return True
        data = self.core.data_to_send(WRITE_LIMIT)
        if self.write(self.transport, data) if data else self.core.has_data_to_send:
            self.mark_dirty()
        return True

    def send_extension(self, message_type: int, payload: bytes) -> None:
        """Send a message of an active extension (PROTOCOL.md §4.4) with this turn's write."""
        self.core.send(ExtensionMessage(type=message_type, payload=payload))
        self.mark_dirty()

    def close_now(self, reason: str, code: int | None = None) -> None:
        """Say goodbye with ``reason`` (and ``code``, PROTOCOL.md §19) and close without waiting
        for the peer's answer."""
        self._close_now(reason, code)

    # -- threads ---------------------------------------------------------------------------
    def run_on_loop(self, fn: Callable[..., object], *args: Any) -> None:
        """Call ``fn(*args)`` now when on the loop's thread, else hand it over."""
        if threading.get_ident() == self._loop_thread:
            fn(*args)
        else:
            self.loop.call_soon_threadsafe(fn, *args)

    def call_soon_threadsafe(self, fn: Callable[..., object], *args: Any) -> None:
        """Hand ``fn(*args)`` to the loop's thread; nothing if the loop is closed (so is the connection)."""
        with contextlib.suppress(RuntimeError):
            self.loop.call_soon_threadsafe(fn, *args)
