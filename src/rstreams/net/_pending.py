"""A server's connection before its clientHello: a few hundred bytes, not a whole connection.

Theory of operation. Most of what a connection holds (the pump and its pieces, the core's
tables and buffers) is needed only once the peer speaks RS.io, and a server may hold
thousands of accepted transports that have not (yet) said anything. So an accepted
transport first gets a :class:`Pending` handler: it writes the server's hello at once (the
same bytes on every connection, §4.1), keeps the few bytes received so far and arms the
handshake timer. When the clientHello is whole, or the bytes cannot become one, or the
timer fires, the real connection is made: its pump is told its hello is already out and is
handed the transport and the bytes (the hello alone first when the server refuses the
connection at its hello, so that the goodbye comes before anything after the hello is
handled; the rest is then discarded). From then on the pending handler would only forward the
transport's calls to it: once its work is no longer charged to admission (at once without
admission), it hands the transport over to the pump (``Transport.set_handler``), so a read costs no
call here. A transport that ends before that leaves nothing behind.

Admission (:mod:`rstreams.net._admission`). Until the connection is established (its first
:data:`ADMISSION_READS` reads from the one that completed the clientHello handled, its
conversation still open) the time spent in each of these callbacks is charged to the
server's admission budget; a connection that ends before that (garbage, a refused or
timed-out handshake, a peer that says goodbye at once) is charged for all of its work, up to
its transport's end. Once established, the connection's reads go to its pump without timing.
On a server with ``resume=`` the handler of an accepted transport is a resumption link
instead; :class:`Charged` charges its first reads in the same way, then hands the transport
over to the link.

Closing the server (:class:`Doorway`). A transport at the hello stage (a :class:`Pending`
without its connection, a resumption link whose first byte has not come) is not among the
server's connections, so the server keeps them in its doorway: when it closes, each has its
connection made at once, with no byte of the peer's handled, and the server, closing, has
that connection say goodbye and close like any whose peer has not said hello (PROTOCOL.md
§9.1, §10). What the peer sends afterwards (a late hello, a resume) is discarded. A
``tls://`` transport accepted but still in its TLS handshake has no handler call yet, and none
if its handshake fails: the doorway keeps the task that awaits that handshake (asyncio makes the
handler in it, :meth:`Doorway.accepted`), and the server closing cancels it, which aborts the
transport at once; the server's close waits for those tasks to end. A ``wss://`` transport's
handler comes after its TLS and HTTP handshakes: the doorway keeps its WebSocket connection
instead, made in the same task, until that task ends (the TLS handshake done or failed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from rstreams.net._admission import Admission
from rstreams.net._pump import Pump
from rstreams.net._transport import Transport, TransportHandler
from rstreams.wire import ConnectionState, FrameType
from rstreams.wire._resume import ResumeError, hello_end

__all__ = ["ADMISSION_READS", "HELLO_BYTES", "Charged", "Doorway", "Pending"]

ADMISSION_READS = 3
"""Reads, counted from the one that completed the clientHello, that a connection's work is
charged to the admission budget for: after them, if its conversation is open, it is
established. (One read is not enough: a first read of garbage may end inside a frame whose
header looked valid, and the peer's next read is what breaks the rules.)"""

HELLO_BYTES = 1024
"""Most bytes kept while waiting for a clientHello to be whole: a hello listing the most
extensions a core accepts (64 ids of at most 10 bytes) fits; more means it is not one."""


class Doorway:
    """A server's transports at the hello stage, each with the call that makes its connection
    now, and those still in their TLS handshake; see the module docstring. Once :meth:`close`
    was called, a transport entering has its connection made at once."""

    __slots__ = ("_handshakes", "_members", "closed")

    def __init__(self) -> None:
        self._members: dict[object, Callable[[], object]] = {}
        self._handshakes: dict[object, asyncio.Task[object]] = {}
        self.closed = False

    def __len__(self) -> int:
        return len(self._members)

    @property
    def handshakes(self) -> int:
        """How many accepted transports are in their TLS handshake (as far as :meth:`accepted` knows)."""
        return len(self._handshakes)

    def accepted(self, member: object) -> None:
        """``member`` is the handler of a transport just accepted, whose TLS handshake is under
        way: asyncio's servers (and ``connect_accepted_socket``) make the handler in the task that
        then awaits the handshake, so that task is the handshake's, and cancelling it aborts the
        transport. It ends when the transport comes up (:meth:`enter`) or the handshake fails.
        Called outside a task (an event loop that accepts otherwise), it does nothing."""
        task = asyncio.current_task()
        if task is None:
            return
        self._handshakes[member] = task
        task.add_done_callback(lambda _: self._handshakes.pop(member, None))
        if self.closed:  # accepted as the server closes: aborted where it awaits its handshake
            task.cancel()

    def enter(self, member: object, start: Callable[[], object]) -> None:
        """``member``'s transport is up and waits for its peer's first bytes; ``start()`` makes
        its connection (which leaves the doorway)."""
        self._handshakes.pop(member, None)
        if self.closed:
            start()
        else:
            self._members[member] = start

    def leave(self, member: object) -> None:
        """``member`` is a connection now, or its transport ended."""
        self._members.pop(member, None)

    def close(self) -> None:
        """Make the connection of every transport at the hello stage, now and from now on, and
        abort those in their TLS handshake (:meth:`handshakes_ended` waits for that)."""
        self.closed = True
        while self._members:
            _, start = self._members.popitem()
            start()
        for task in self._handshakes.values():
            task.cancel()

    async def handshakes_ended(self) -> None:
        """Wait until the TLS handshakes under way when :meth:`close` was called have ended
        (aborted: cancelling such a task closes its transport at once)."""
        while self._handshakes:
            await asyncio.wait(list(self._handshakes.values()))


class Pending:
    """The handler of one accepted transport until its clientHello; see the module docstring."""

    __slots__ = (
        "_admission",
        "_doorway",
        "_established",
        "_make",
        "_pump",
        "_reads",
        "_received",
        "_server_hello",
        "_timeout",
        "_timer",
        "_transport",
    )

    def __init__(
        self,
        make: Callable[[], Pump],
        server_hello: bytes,
        timeout: float | None,
        admission: Admission | None = None,
        *,
        doorway: Doorway | None = None,
    ) -> None:
        self._admission = admission  # charged for our work until the connection is established
        self._doorway = doorway  # the server's, while the transport is at the hello stage
        self._make = make  # the connection's pump, made once the peer has said hello
        self._server_hello = server_hello
        self._timeout = timeout
        self._timer: asyncio.TimerHandle | None = None
        self._transport: Transport | None = None
        self._received = b""
        self._pump: Pump | None = None
        self._reads = 0  # reads handled since the hello was whole (while charged to admission)
        self._established = False

    @property
    def established(self) -> bool:
        """Whether the connection's work has stopped being charged to admission: its first
        :data:`ADMISSION_READS` reads after the clientHello handled, its conversation open."""
        return self._established

    def connection_made(self, transport: Transport) -> None:
        admission = self._admission
        started = admission.clock() if admission is not None else 0.0
        self._transport = transport
        transport.writelines([self._server_hello])
        if self._timeout is not None:
            self._timer = asyncio.get_running_loop().call_later(self._timeout, self._expired)
        if self._doorway is not None:
            self._doorway.enter(self, self._server_closing)
        if admission is not None:
            admission.charge(admission.clock() - started)

    def data_received(self, data: memoryview) -> None:
        pump = self._pump
        admission = self._admission
        if admission is None:
            if pump is not None:
                pump.data_received(data)
            else:
                self._hello_bytes(data)
            return
        started = admission.clock()
        try:
            if pump is not None:
                pump.data_received(data)
            else:
                self._hello_bytes(data)
        finally:  # charged even when the transport fails under it
            admission.charge(admission.clock() - started)
        pump = self._pump
        if pump is not None:
            self._reads += 1
            if self._reads >= ADMISSION_READS and pump.outbox.core.state is ConnectionState.OPEN:
                self._admission = None  # established: its work is no longer the newcomers'
                self._established = True
                _hand_over(self._transport, pump)

    def _hello_bytes(self, data: memoryview) -> None:
        received = self._received + data.tobytes()
        try:
            end = hello_end(bytearray(received), FrameType.CLIENT_HELLO)
        except ResumeError:  # not a hello: the connection's core says so, in its goodbye
            end = 0
        if end is None and len(received) <= HELLO_BYTES:
            self._received = received
            return
        self._start(received, end or 0)

    def eof_received(self) -> None:
        admission = self._admission
        started = admission.clock() if admission is not None else 0.0
        try:
            pump = self._start(self._received) if self._pump is None else self._pump
            pump.eof_received()
        finally:
            if admission is not None:
                admission.charge(admission.clock() - started)

    def connection_lost(self, error: BaseException | None) -> None:
        admission, self._admission = self._admission, None
        started = admission.clock() if admission is not None else 0.0
        try:
            if self._pump is not None:
                self._pump.connection_lost(error)
            else:
                self._cancel_timer()
                self._leave()
                self._received = b""
                self._transport = None  # never a connection: nothing else to end
        finally:
            if admission is not None:
                admission.charge(admission.clock() - started)

    def pause_writing(self) -> None:
        if self._pump is not None:
            self._pump.pause_writing()

    def resume_writing(self) -> None:
        if self._pump is not None:
            self._pump.resume_writing()

    def _expired(self) -> None:
        self._timer = None
        if self._pump is None:
            admission = self._admission
            started = admission.clock() if admission is not None else 0.0
            try:
                self._start(self._received).closing.handshake_expired()
            finally:
                if admission is not None:
                    admission.charge(admission.clock() - started)

    def _server_closing(self) -> None:
        """The server closes: the connection is made now (the server has it say goodbye); the
        bytes so far are handed to it after that, and discarded."""
        if self._pump is None and self._transport is not None:
            self._start(self._received)

    def _leave(self) -> None:
        doorway, self._doorway = self._doorway, None
        if doorway is not None:
            doorway.leave(self)

    def _start(self, received: bytes, hello: int = 0) -> Pump:
        """Make the connection: its pump takes over the transport and the bytes so far
        (``hello``: where the clientHello ends in them, when it is whole)."""
        timer, self._timer = self._timer, None
        pump = self._pump = self._make()
        if timer is not None:  # the clientHello is due when it was, not again from now
            timer.cancel()
            pump.closing.handshake_deadline = timer.when()
        self._leave()
        self._received = b""
        pump.outbox.core.data_to_send()  # its hello: already written, the same bytes
        assert self._transport is not None
        pump.connection_made(self._transport)
        if self._admission is None:  # nothing to charge: the pump takes the transport's calls
            _hand_over(self._transport, pump)
        if hello and pump.closing.refusing:  # refused at its hello: the rest is not handled
            pump.data_received(memoryview(received)[:hello])
            received = received[hello:]
        if received:
            pump.data_received(memoryview(received))
        return pump

    def _cancel_timer(self) -> None:
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()


class Charged:
    """Another handler (a resumption link, :mod:`rstreams.net._resume`) charged to ``admission``
    for its first reads: ``connection_made`` and the first ``reads`` reads (its hello or resume
    request, and as many reads as :class:`Pending` charges after the hello), and everything
    up to the end of its transport if it ends before that."""

    __slots__ = ("_admission", "_handler", "_reads", "_transport")

    def __init__(
        self, handler: TransportHandler, admission: Admission, reads: int = 1 + ADMISSION_READS
    ) -> None:
        self._handler = handler
        self._admission: Admission | None = admission
        self._reads = reads  # reads still charged
        self._transport: Transport | None = None

    def connection_made(self, transport: Transport) -> None:
        admission = self._admission
        assert admission is not None
        self._transport = transport
        started = admission.clock()
        try:
            self._handler.connection_made(transport)
        finally:
            admission.charge(admission.clock() - started)

    def data_received(self, data: memoryview) -> None:
        admission = self._admission
        if admission is None:
            self._handler.data_received(data)
            return
        started = admission.clock()
        try:
            self._handler.data_received(data)
        finally:
            admission.charge(admission.clock() - started)
            self._reads -= 1
            if self._reads <= 0:
                self._admission = None  # established: its work is no longer the newcomers'
                _hand_over(self._transport, self._handler)

    def eof_received(self) -> None:
        admission = self._admission
        started = admission.clock() if admission is not None else 0.0
        try:
            self._handler.eof_received()
        finally:
            if admission is not None:
                admission.charge(admission.clock() - started)

    def connection_lost(self, error: BaseException | None) -> None:
        admission, self._admission = self._admission, None
        started = admission.clock() if admission is not None else 0.0
        try:
            self._handler.connection_lost(error)
        finally:
            if admission is not None:
                admission.charge(admission.clock() - started)

    def pause_writing(self) -> None:
        self._handler.pause_writing()

    def resume_writing(self) -> None:
        self._handler.resume_writing()


def _hand_over(transport: Transport | None, handler: TransportHandler) -> None:
    """Let ``handler`` take ``transport``'s calls from now on."""
    if transport is not None:
        transport.set_handler(handler)
