"""How much a connection reads: bounded work per loop turn, and no reading while replies back up.

Theory of operation. Three rules decide when the pump (:mod:`rstreams.net._pump`) reads its
peer's bytes (the last point says what they bound, and what the kernel does):

* **Fairness.** One read can bring hundreds of kilobytes of small frames. The pump feeds a
  read to the core a part at a time, :data:`READ_TURN` bytes first; a part that brought
  many messages, or that the core answered itself, ends the loop turn: what it caused is
  written and the rest of the read waits for the next turn (reading from the transport is
  paused meanwhile), so one peer that pipelines cannot hold the loop while other
  connections wait. A part of a few large elements is followed at once by a part four
  times as long, so a read of large elements is still handled in one turn. A peer whose
  read left a rest has every later read wait for a turn likewise, until one fits the part
  it gets. When the turn comes, what the peer did with the replies decides:

  - a peer that took them (at most a quarter of the unread mark of them wait unsent, in
    the transport or its socket: the test that reads a stopped peer again) gets a
    READ_TURN part, as a connection read as its bytes come: a client that pipelines
    thousands of small messages and reads its answers is served a READ_TURN per turn
    beside busy connections (20,000 subscribes for an unknown name, read as answered,
    beside a stream: done within about 7,000 elements of it, not 2.5 million);
  - a peer whose replies wait unsent gets the ration: its rest waits with those of all
    such connections in one :class:`Backlog` per event loop, which hands out parts to
    each in turn. While other connections are busy (a pump read a peer as its bytes came,
    took a READ_TURN part, or flushed, since the last part: each sets
    :attr:`Backlog.busy`, one store on its normal path), one part of :data:`HELD_PART`
    bytes every :data:`HELD_EVERY` loop turns: however many peers flood, together they
    get a refusal or two every other turn. While none is, the backlog is
    work-conserving: a part every turn, twice as long as the last, up to
    :data:`READ_TURN`, so the loop does not idle while input waits; the first busy turn
    brings the ration back.

  A flooder differs from a client that pipelines only in that it does not read what it is
  answered, and a TCP socket shows that only once the peer's receive buffer is full (see
  below): until then a flooder is served as a reader, a READ_TURN per turn, which the
  kernel bounds (by its receive buffer: eight loopback peers that left its size to the
  system were answered up to about 140 KB of refusals each); then it gets the ration until the
  mark stops reading it, and nothing after. A Unix socket tells what the peer has not read
  at once.
* **Input backpressure** (PROTOCOL.md §6.3). What we write in answer to the peer's
  messages (refusals, errors, acknowledgements, pongs, goodbyes) is queued in the transport
  until the peer reads it. Elements of our local publishers are bounded already: they are
  produced only while the transport is below its high-water mark. Replies are bounded here:
  once the *replies* among the unsent bytes pass the mark (the low-water mark, at most
  :data:`UNREAD_MARK`), the pump stops reading from that peer, so it cannot make us answer
  more, and lowers the transport's marks to hear when it drains: below a quarter of the
  mark it reads again (and restores the marks). Counting replies rather than all unsent
  bytes keeps two endpoints that stream to each other from both waiting for the other to
  read; a mark this low keeps what a peer that never reads can pin small.
  A peer that leaves its replies unread for ``unread_timeout`` seconds, or lets unsent
  bytes pass :data:`MAX_UNSENT`, is said goodbye and closed.
* **Unread replies in the socket.** A transport hands what it can to its socket at once,
  and the kernel holds a good deal for a peer that does not read (loopback TCP grows a
  socket's send buffer to 4 MiB): counted in the transport alone, a never-reading peer
  kept being read, and answered, a part per turn, until the kernel was full, and so kept
  its share of the loop for as long. So the unsent bytes are those of the transport plus,
  where the system tells (:func:`socket_unsent`: Linux, TCP and Unix sockets), those its
  socket holds for the peer, and the mark is at most :data:`UNREAD_MARK`. A TCP socket
  holds bytes not yet sent only once the peer's receive window is closed, so a peer that
  reads is not stopped by it, however far away; one that does not is stopped once its
  receive buffer and :data:`UNREAD_MARK` of our replies are full, and costs nothing after
  (eight peers flooding subscribes with a 16 KiB receive buffer were answered at most
  about 48 KiB each, then no more). A transport does not say when its socket drains, so a
  connection stopped on what its socket holds is looked at again after
  :data:`UNREAD_POLL` seconds, and then at doubling waits up to :data:`UNREAD_POLL_MAX`
  (one system call each, and a second while the replies are still there). Not read, the
  socket would not tell that its peer reset it (a TCP socket's queue still counts what it
  held): each look that finds the replies there also asks the socket whether it failed or
  hung up (:func:`socket_ended`), and reads again if so, for the read to end the connection
  as any read of a reset socket does, within :data:`UNREAD_POLL_MAX` of the reset, not at
  ``unread_timeout``.
* **What we bound, and what the kernel does.** Our memory per connection is bounded
  whatever the kernel's buffers: replies in the transport's buffer by the mark (reading
  stops past it; a turn's replies at most beyond), elements by the high-water mark
  (produced only below it), and both by :data:`MAX_UNSENT` (goodbye past it); held input
  is the transport's read buffer, not a copy (at most
  :data:`~rstreams.net._transport.SOCKET_READ_SIZE`; on a WebSocket a message, and one more
  that was under way when reading paused); the ledger keeps a mark per
  :data:`MARK_SPACING` bytes of replies not yet known sent. What the kernel bounds is
  how many replies a peer that never reads gets before it is seen not to: those its
  receive buffer takes (Linux grows a buffer the peer did not size, up to
  ``net.ipv4.tcp_rmem``'s maximum, past 500 KB on loopback for peers answered slowly)
  and those our socket sends into it; they are the kernel's memory (the peer's receive
  buffer, our send buffer up to ``net.ipv4.tcp_wmem``'s maximum), not ours, and until
  then such a peer is served as one that reads (fairness, above).

:class:`ReplyLedger` does the counting. Every write is recorded with how many of its bytes
were replies (the bytes written minus the element bytes the serving side handed to the
core since the last write); since a transport sends in order, the unsent bytes are the
newest ones written, and the replies among them are read off the ledger. Writes less than
:data:`MARK_SPACING` apart share one record (their replies count as unsent until the last
of them is sent: an estimate on the safe side), so the ledger stays small however small
the writes.
"""

from __future__ import annotations

import asyncio
import select
import socket
import sys
import weakref
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = [
    "DEFAULT_UNREAD_TIMEOUT",
    "HELD_EVERY",
    "HELD_PART",
    "MARK_SPACING",
    "MAX_UNSENT",
    "READ_TURN",
    "UNREAD_MARK",
    "UNREAD_POLL",
    "UNREAD_POLL_MAX",
    "Backlog",
    "ReplyLedger",
    "socket_ended",
    "socket_unsent",
]

READ_TURN = 4 * 1024
"""Bytes of one peer's small messages handled per loop turn (at most two thousand messages;
the smallest are 2 bytes) before other connections get their turn."""

HELD_PART = 16
"""Bytes of a held rest of a peer whose replies wait unsent handled when its turn comes while
other connections are busy (:class:`Backlog`; while none is, parts grow to :data:`READ_TURN`;
a peer that takes its replies gets READ_TURN a turn): all flooding peers together take about
this much work per loop turn (one or two small messages: a subscribe
is 7-12 bytes, and its refusal costs the server more than a hundred small elements of a
stream), so a connection that is read as its bytes come keeps most of each turn. With 64,
eight peers flooding subscribes took about half of the server beside a stream of 8-byte
elements; a peer alone whose reads outrun its turns pays a loop turn and a write per part."""

HELD_EVERY = 2
"""Loop turns per held part while other connections are busy (:class:`Backlog`): between two
parts of flooding peers, a turn of their own for the connections that are read as their bytes
come. A held part costs a loop turn and a write besides its messages, which a smaller part
does not make smaller; this halves those too. While no other connection is busy, no turn is
left between (the backlog is work-conserving)."""


MARK_SPACING = 4 * 1024
"""Least distance, in bytes written, between two of the ledger's marks: the writes in between
share one (their replies count as unsent until the last of them is sent), so a peer answered
in many small writes costs the ledger one small entry per this many bytes, not one per write."""

MAX_UNSENT = 16 * 1024 * 1024
"""Unsent bytes past which a connection is said goodbye and closed at once: a hard cap
behind the high-water marks (production and reading both stop far below it)."""

UNREAD_MARK = 16 * 1024
"""Most unsent reply bytes (the transport's and its socket's, see the module docstring) before a
peer is no longer read: the low-water mark when that is lower. A peer that reads keeps its
socket's queue empty; one that does not gets its receive buffer's worth of replies and this."""

UNREAD_POLL = 0.02
"""Seconds before the first look at what the socket of a connection that is no longer read holds
(the transport tells when its own buffer drains, not when its socket's does); each look that
finds the replies still there doubles the wait, up to :data:`UNREAD_POLL_MAX`."""

UNREAD_POLL_MAX = 1.0
"""Longest wait between two looks (a thousand stalled peers cost a thousand looks a second)."""

DEFAULT_UNREAD_TIMEOUT = 30.0
"""Seconds a peer may leave our replies unread, while we do not read it, before it is said
goodbye and closed (two keepalive intervals: a live peer reads long before)."""


class ReplyLedger:
    """Which of the unsent bytes are replies; see the module docstring."""

    __slots__ = (
        "_last_mark",
        "_marks",
        "_replies",
        "_sent_replies",
        "_tail",
        "_written",
        "element_bytes",
        "mark",
    )

    def __init__(self, mark: int) -> None:
        self.mark = mark
        """Unsent reply bytes past which the peer is no longer read (the low-water mark, at most
        :data:`UNREAD_MARK`)."""
        self._written = 0  # bytes handed to the transport, in all
        self._replies = 0  # of which replies
        self.element_bytes = 0
        """Element bytes handed to the core, not yet written: the serving side adds what it hands
        over (a plain field, not a method: once per element on an open stream)."""
        # The marks: (written, replies) after a write with replies, the newest one open. The open
        # one is _tail alone (0: none): its replies are _replies, which only writes with replies
        # change, so a write that joins it stores one int, and one that opens the next moves it
        # to _marks, the closed ones, oldest first.
        self._marks: deque[tuple[int, int]] = deque()
        self._tail = 0
        self._sent_replies = 0  # replies among the bytes the transport has sent
        self._last_mark = -MARK_SPACING  # where the open mark was opened (later writes close to it join it)

    @property
    def written(self) -> int:
        """Bytes handed to the transport, in all (the count of bytes sent, read when scraped)."""
        return self._written

    def wrote(self, nbytes: int, more: bool) -> bool:
        """``nbytes`` were handed to the transport; ``more``: the core still holds output
        (parts of a split element), which the element bytes not written yet belong to.
        Returns :attr:`may_pass_mark` (the writer checks it after every write)."""
        element_bytes = self.element_bytes
        written = self._written = self._written + nbytes
        if element_bytes:
            elements = nbytes if nbytes < element_bytes else element_bytes
            self.element_bytes = element_bytes - elements if more else 0
            if nbytes == elements:
                return self._replies - self._sent_replies > self.mark
            nbytes -= elements  # the replies (no element bytes: a request, a subscribe, a refusal: all)
        if written - self._last_mark >= MARK_SPACING:  # far from the open mark: it closes, this opens one
            if self._tail:
                self._marks.append((self._tail, self._replies))
            self._last_mark = written
        self._tail = written  # (joins the open mark, or opens one where the last was sent)
        replies = self._replies = self._replies + nbytes
        return replies - self._sent_replies > self.mark

    @property
    def unconfirmed(self) -> int:
        """Replies not yet known to be sent (at least the unsent ones; :meth:`unsent_replies`
        learns which were)."""
        return self._replies - self._sent_replies

    @property
    def may_pass_mark(self) -> bool:
        """Whether the unsent replies could be past :attr:`mark` (a cheap upper bound: all
        replies not yet known to be sent)."""
        return self._replies - self._sent_replies > self.mark

    def unsent_replies(self, unsent: int) -> int:
        """Reply bytes among the ``unsent`` newest bytes written (a write's replies count as
        unsent until the whole write is sent, and those of writes that share a mark until the
        last of them is), never more than ``unsent``: the pump relies on that, since it hears
        that replies drained only from a transport that holds more than the mark."""
        sent = self._written - unsent
        marks = self._marks
        while marks and marks[0][0] <= sent:
            self._sent_replies = marks.popleft()[1]
        if self._tail and self._tail <= sent:  # the open mark's writes went out too (it is the newest)
            self._sent_replies = self._replies
            self._tail = 0
        replies = self._replies - self._sent_replies
        return replies if replies < unsent else unsent


class Backlog:
    """The held rests of reads of peers whose replies wait unsent, all connections of one event
    loop: while other connections are busy, one part of :data:`HELD_PART` bytes every
    :data:`HELD_EVERY` loop turns; while none is, a part every turn, twice as long each time up
    to :data:`READ_TURN`."""

    __slots__ = ("_loop", "_part", "_scheduled", "_turns", "_waiting", "busy")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._waiting: deque[Callable[[int], object]] = deque()
        self._scheduled = False
        self._turns = 0  # loop turns waited since the last part
        self._part = HELD_PART  # bytes of the next part
        self.busy = False
        """Set by the loop's pumps on their normal paths (a read handled as it came, a READ_TURN
        part of a peer that takes its replies, a flush of a connection that holds no rest: one
        store each), cleared as each part is handed out: whether other connections were busy
        since the last part."""

    @classmethod
    def of(cls, loop: asyncio.AbstractEventLoop) -> Backlog:
        """The backlog of ``loop`` (one per event loop)."""
        backlog = _BACKLOGS.get(loop)
        if backlog is None:
            backlog = _BACKLOGS[loop] = cls(loop)
        return backlog

    def add(self, go_on: Callable[[int], object]) -> None:
        """Call ``go_on(part)`` (handle the next ``part`` bytes of a held read) when its turn comes."""
        self._waiting.append(go_on)
        if not self._scheduled:
            self._scheduled = True
            self.busy = False  # the read that held this rest is not another connection's work
            self._loop.call_soon(self._next)

    def _next(self) -> None:
        self._turns += 1
        if self.busy:  # other connections were busy since the last part: ration
            self._part = HELD_PART
            if self._turns < HELD_EVERY:  # a turn for them first
                self._loop.call_soon(self._next)
                return
        elif self._part < READ_TURN:  # none were: no wait, and the part grows (work-conserving)
            self._part *= 2
        self._turns = 0
        self._scheduled = False
        if self._waiting:
            self._waiting.popleft()(self._part)  # a connection that still holds a rest adds itself again
        self.busy = False  # what that part caused is not another connection's work
        if self._waiting and not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self._next)


_BACKLOGS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Backlog] = weakref.WeakKeyDictionary()


if sys.platform.startswith("linux"):
    import fcntl
    import termios

    _UNREAD: int | None = termios.TIOCOUTQ  # SIOCOUTQ: on a Unix socket, what the peer has not read
    _NOT_SENT = 0x894B  # SIOCOUTQNSD (linux/sockios.h): on TCP, what is not sent yet (not in flight)
else:  # pragma: no cover - the system does not tell: the transport's buffer alone is counted
    _UNREAD = None
    _NOT_SENT = 0


def socket_unsent(transport: Any) -> int:
    """Bytes the socket under ``transport`` holds for a peer that has not taken them (Linux): on
    TCP those not sent yet, held for the peer's window (bytes in flight are not counted, so a
    distant peer that reads is not taken for one that does not); on a Unix socket those the
    peer has not read, with the kernel's overhead (more than the bytes: on the safe side). 0
    where there is no socket (pipes, memory) or the system does not tell. A system call: not
    for every write."""
    if _UNREAD is None:
        return 0
    sock = transport.get_extra_info("socket")
    if sock is None:
        return 0
    try:
        request = _UNREAD if sock.family == socket.AF_UNIX else _NOT_SENT
        queued = fcntl.ioctl(sock.fileno(), request, bytes(4))
    except (OSError, ValueError):  # closed meanwhile, or a socket the call does not know
        return 0
    return int.from_bytes(queued, sys.byteorder, signed=True)


def socket_ended(transport: Any) -> bool:
    """Whether the socket under ``transport`` failed or hung up (a peer's reset: POLLERR or
    POLLHUP, which poll reports whatever is asked; a peer's half-close is neither), without
    taking its error, which the next read or write reports. False where there is no socket or
    the system does not tell (there :func:`socket_unsent` says 0, and no look waits on it). A
    system call."""
    if _UNREAD is None:
        return False
    sock = transport.get_extra_info("socket")
    if sock is None:
        return False
    poll = select.poll()
    try:
        poll.register(sock.fileno(), 0)
        return bool(poll.poll(0))
    except (OSError, ValueError):  # closed meanwhile: its transport's end tells
        return False
