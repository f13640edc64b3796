"""How much of a server's event loop new connections may take: the admission budget.

Theory of operation. A server runs every connection on one event loop. A connection that
is established (its clientHello handled, its conversation under way) is kept to its share
by the read fairness of :mod:`rstreams.net._intake`. Before that, a connection costs a fixed
amount of work that no read bound touches: the accept, a transport, the serverHello, making
the connection once the hello is whole, and, for a peer that sends garbage or closes at
once, a goodbye and a close. A peer that opens connections in a loop can spend the whole
loop that way.

So new connections get a budget of loop *time*: :class:`Admission` is a bucket of seconds
that fills at ``share`` seconds per second (at most :data:`BURST` seconds banked) and is
drawn down by the time measured in the work of connections that are not established yet:

* accepting them (the ``accept`` call and starting the transport), here;
* everything their handler does until they are established: the serverHello, the hello
  bytes, making the connection, and its first reads
  (:class:`~rstreams.net._pending.Pending` times its callbacks; a connection is established
  once :data:`~rstreams.net._pending.ADMISSION_READS` reads have been handled with its
  conversation open);
* all of the work of a connection that ends (or is refused) before that: the goodbye to
  garbage or to a failed handshake, the lingering close, the end of the transport.

* a TLS handshake (``tls://``, ``wss://``): asyncio's SSL layer runs it before any of our
  callbacks and offers no hook into it, and the time from accept to ``connection_made`` is
  mostly waiting for the peer; so each accepted TLS connection is charged, once its
  handshake has ended (done or failed), what one handshake with the server's context costs:
  :func:`tls_handshake_cost`, measured in memory once per listener as it starts.

The time is the CPU time of the loop's thread spent in those callbacks
(:data:`WORK_CLOCK`, ``time.thread_time``: user and system time, the system calls made in a
callback included), not wall-clock time: a callback during which the process did not run
(the machine busy with other processes, the process stopped) is charged only what it did.
So a stall of the process does not close the door to newcomers (charged by wall-clock time,
a stall of 2 s inside one callback closed it for about 10 s at the default share), and a
flood of connections is still charged all the work it makes. What the kernel and asyncio do
for a connection outside our callbacks (making the transport, registering and closing the
socket, the loop's own turns) is not counted. Measured on loopback (the loop thread's CPU
time against what was charged, 300 connections of each kind from another process) about two
thirds of a new connection's cost is charged (67-69%), whether it sends garbage, half a hello
or a short conversation, so the true share is about ``share / 0.67``. On the same machine at
load 44, wall-clock time charged 3.9 to 4.6 times the connections' CPU time.

While the bucket is empty the server stops accepting: it removes its listening sockets
from the loop, and new connections wait in the kernel's listen backlog (not in Python)
until the bucket has refilled to :data:`REOPEN` of its size. Established streams keep at
least ``1 - share`` of the loop; newcomers are still accepted, in the order they connected,
at the rate the share allows, so no one is starved.

The listening sockets are asyncio's own (``create_server(start_serving=False)`` binds them,
with asyncio's address handling; for WebSocket, the websockets server's, see
:func:`rstreams.net._endpoints.listen_endpoint`), duplicated so that this module accepts from them with
``loop.add_reader`` and hands each accepted socket to ``loop.connect_accepted_socket``.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import ssl as _ssl
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

__all__ = [
    "ACCEPT_BATCH",
    "ACCEPT_RETRY",
    "BURST",
    "DEFAULT_ADMISSION_SHARE",
    "LISTEN_BACKLOG",
    "REOPEN",
    "WORK_CLOCK",
    "Admission",
    "AdmittingServer",
    "Gate",
    "Listening",
    "Unlimited",
    "check_share",
    "tls_handshake_cost",
]

DEFAULT_ADMISSION_SHARE = 0.2
"""Share of the event loop's time, as measured (see the module docstring), that connections not
yet established may take. About two thirds of a new connection's cost is measured, so they
take at most about 30% of the loop and established streams keep about 70% of it."""

BURST = 0.05
"""Seconds of work the bucket holds at most: a server that has been quiet admits this much work at
once (some hundreds of connections) before the share applies."""

REOPEN = 0.25
"""Fraction of :data:`BURST` the bucket refills to before accepting again after it ran empty, so that
the listening sockets are not added and removed on every connection."""

ACCEPT_BATCH = 1
"""Most connections accepted in one loop turn: a burst of connections is spread over turns, so an
established stream's turn never waits behind the handshakes of many (with 16, a stream beside
eight garbage loops fell to a third of its rate while the server still had time to spare)."""

LISTEN_BACKLOG = 1024
"""Connections the kernel holds for us while accepting waits for the budget (``listen``'s backlog;
the system's ``somaxconn`` may lower it). Beyond it, new connections wait for the kernel to
retry them."""

ACCEPT_RETRY = 1.0
"""Seconds accepting pauses when the process is out of file descriptors or memory (like asyncio)."""

WORK_CLOCK: Callable[[], float] = time.perf_counter if sys.platform == "win32" else time.thread_time
"""What measures the work charged to the budget: the CPU time of the calling thread (the loop's),
so that a stall of the process is not charged (see the module docstring). On Windows a thread's
CPU time moves in steps of about 16 ms, coarser than a callback: there it is wall-clock time."""

_ACCEPT_LATER = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})

_log = logging.getLogger("rstreams.net.admission")


def check_share(share: object) -> None:
    """Raise ``ValueError`` unless ``share`` is ``None`` or a number with ``0 < share <= 1``."""
    if share is None:
        return
    if isinstance(share, bool) or not isinstance(share, int | float) or not 0 < share <= 1:
        raise ValueError(f"admission_share must be a number with 0 < share <= 1, or None, got {share!r}")


def tls_handshake_cost(
    context: _ssl.SSLContext, clock: Callable[[], float] = WORK_CLOCK, *, rounds: int = 3
) -> float:
    """Seconds of the server's own work in one TLS handshake with ``context``: the least of
    ``rounds`` handshakes with an in-memory client (no certificate, nothing verified), timing
    only the server side's steps. A handshake the server refuses (a client certificate
    required) is timed up to its refusal, which comes after the server's costly part."""
    client_context = _ssl.SSLContext(_ssl.PROTOCOL_TLS_CLIENT)
    client_context.check_hostname = False
    client_context.verify_mode = _ssl.CERT_NONE
    least = float("inf")
    for _ in range(rounds):
        to_client, to_server = _ssl.MemoryBIO(), _ssl.MemoryBIO()
        from_client, from_server = _ssl.MemoryBIO(), _ssl.MemoryBIO()
        client = client_context.wrap_bio(to_client, from_client, server_side=False)
        server = context.wrap_bio(to_server, from_server, server_side=True)
        spent = 0.0
        for _flight in range(8):  # a handshake takes two or three flights
            try:
                client.do_handshake()
            except _ssl.SSLWantReadError:
                pass
            except _ssl.SSLError:
                break  # the client refuses what the server sent: the server's part is done
            to_server.write(from_client.read())
            started = clock()
            try:
                server.do_handshake()
                done = True
            except _ssl.SSLWantReadError:
                done = False
            except _ssl.SSLError:
                done = True
            spent += clock() - started
            to_client.write(from_server.read())
            if done:
                break
        least = min(least, spent)
    return least


class Listening(Protocol):
    """What binds the listening sockets and closes them: an :class:`asyncio.Server` that is not
    serving, or a websockets server whose own accepting was taken off the loop."""

    @property
    def sockets(self) -> Sequence[socket.socket]: ...

    def close(self) -> None: ...

    async def wait_closed(self) -> None: ...


class Gate(Protocol):
    """What stops accepting while the budget is spent (a listener: :class:`AdmittingServer`)."""

    def pause(self) -> None:
        """Stop accepting new connections."""

    def resume(self) -> None:
        """Accept new connections again."""


class Admission:
    """The bucket of loop time for connections not yet established; see the module docstring.

    ``clock`` measures work (:data:`WORK_CLOCK`); the bucket refills by ``loop.time()``.
    ``share`` and ``burst`` are seconds per second and seconds.
    """

    __slots__ = ("_balance", "_gates", "_last", "_loop", "_reopen", "burst", "clock", "share")

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        share: float,
        *,
        burst: float = BURST,
        clock: Callable[[], float] = WORK_CLOCK,
    ) -> None:
        self._loop = loop
        self.share = share
        self.burst = burst
        self.clock = clock
        """Measures the work charged (seconds)."""
        self._balance = burst
        self._last = loop.time()
        self._gates: list[Gate] = []  # what stops accepting while the bucket is empty
        self._reopen: asyncio.TimerHandle | None = None  # set while closed

    @property
    def open(self) -> bool:
        """Whether new connections are accepted now."""
        return self._reopen is None

    @property
    def balance(self) -> float:
        """Seconds of work in the bucket now (negative: owed)."""
        self._refill()
        return self._balance

    def charge(self, seconds: float) -> None:
        """``seconds`` of work were spent on a connection not yet established."""
        self._refill()
        self._balance -= seconds
        if self._balance < 0 and self._reopen is None:
            self._wait()
            for gate in self._gates:
                gate.pause()

    def _wait(self) -> None:
        """Come back when the bucket has refilled to :data:`REOPEN` of the burst."""
        wait = (self.burst * REOPEN - self._balance) / self.share
        self._reopen = self._loop.call_later(wait, self._reopened)
        _log.debug(
            "the admission budget is spent: accepting again in %.3f s (%.3f s owed)", wait, -self._balance
        )

    def add_gate(self, gate: Gate) -> None:
        """Pause ``gate`` whenever the bucket runs empty, resume it once it has refilled."""
        self._gates.append(gate)
        (gate.resume if self.open else gate.pause)()

    def remove_gate(self, gate: Gate) -> None:
        """Forget ``gate``; the last one gone, no timer is left behind."""
        if gate in self._gates:
            self._gates.remove(gate)
        if not self._gates:
            reopen, self._reopen = self._reopen, None
            if reopen is not None:
                reopen.cancel()

    def _refill(self) -> None:
        now = self._loop.time()
        balance = self._balance + (now - self._last) * self.share
        self._balance = balance if balance < self.burst else self.burst
        self._last = now

    def _reopened(self) -> None:
        self._reopen = None
        self._refill()
        if self._balance < 0:  # charged meanwhile (connections accepted before finishing): wait again
            self._wait()
            return
        for gate in self._gates:
            gate.resume()


class Unlimited(Admission):
    """A budget that never runs out: accepting never pauses. For a listener whose accepting this
    module does for another reason than the budget (``admission_share=None`` on an event loop
    that makes each accepted connection outside a task, see
    :func:`rstreams.net._endpoints.listen_endpoint`)."""

    __slots__ = ()

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop, 1.0)

    def charge(self, seconds: float) -> None:
        """Nothing is owed."""


class AdmittingServer:
    """Listening sockets accepted from within an :class:`Admission` budget.

    Made by :meth:`start`; ``close``/``wait_closed`` like an :class:`asyncio.Server`.
    """

    def __init__(
        self,
        server: Listening,
        factory: Callable[[], asyncio.BaseProtocol],
        admission: Admission,
        ssl: _ssl.SSLContext | None,
    ) -> None:
        self._server = server  # it bound the sockets and closes them; it never accepts
        self._socks = [s.dup() for s in server.sockets]
        for sock in self._socks:
            sock.setblocking(False)
            sock.listen(LISTEN_BACKLOG)
        self._factory = factory
        self._admission = admission
        self._ssl = ssl
        charged = not isinstance(admission, Unlimited)  # (nothing to measure for a budget never spent)
        self._tls_cost = tls_handshake_cost(ssl, admission.clock) if ssl is not None and charged else 0.0
        self._loop = asyncio.get_running_loop()
        self._starting: set[asyncio.Task[Any]] = set()
        self._reading = False
        self._closed = False
        self._retry: asyncio.TimerHandle | None = None
        self._handshake_timeout: float | None = None

    @classmethod
    def start(
        cls,
        server: Listening,
        factory: Callable[[], asyncio.BaseProtocol],
        admission: Admission,
        ssl: _ssl.SSLContext | None,
        handshake_timeout: float | None = None,
    ) -> AdmittingServer:
        """Accept from ``server``'s sockets within ``admission``'s budget; ``handshake_timeout``:
        the seconds a TLS handshake has (``None``: asyncio's 60 s)."""
        gate = cls(server, factory, admission, ssl)
        gate._handshake_timeout = handshake_timeout
        admission.add_gate(gate)
        return gate

    @property
    def sockets(self) -> list[socket.socket]:
        return list(self._socks)

    def pause(self) -> None:
        """Stop accepting: new connections wait in the kernel's listen backlog."""
        if self._reading:
            self._reading = False
            for sock in self._socks:
                self._loop.remove_reader(sock.fileno())

    def resume(self) -> None:
        if not self._reading and not self._closed and self._retry is None:
            self._reading = True
            for sock in self._socks:
                self._loop.add_reader(sock.fileno(), self._accept, sock)

    def _accept(self, listening: socket.socket) -> None:
        admission, clock = self._admission, self._admission.clock
        for _ in range(ACCEPT_BATCH):
            if not self._reading:  # the budget ran out (or the server closed)
                return
            started = clock()
            try:
                sock, _ = listening.accept()
            except (BlockingIOError, InterruptedError, ConnectionAbortedError):
                admission.charge(clock() - started)
                return
            except OSError as error:
                if error.errno not in _ACCEPT_LATER:
                    raise
                _log.error("cannot accept connections (%s): trying again in %g s", error, ACCEPT_RETRY)
                self.pause()
                self._retry = self._loop.call_later(ACCEPT_RETRY, self._retried)
                return
            sock.setblocking(False)
            task = self._loop.create_task(self._connect(sock))
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)
            admission.charge(clock() - started)

    def _retried(self) -> None:
        self._retry = None
        if self._admission.open:
            self.resume()

    async def _connect(self, sock: socket.socket) -> None:
        try:
            await self._loop.connect_accepted_socket(
                self._factory, sock, ssl=self._ssl, ssl_handshake_timeout=self._handshake_timeout
            )
            if self._tls_cost:
                self._admission.charge(self._tls_cost)  # its handshake: see the module docstring
        except (SystemExit, KeyboardInterrupt):
            raise
        except asyncio.CancelledError:
            sock.close()
            raise
        except BaseException as error:  # a failed TLS handshake, mostly
            if self._tls_cost:
                self._admission.charge(self._tls_cost)
            sock.close()
            if not self._loop.get_debug():  # as asyncio's own servers: reported in debug mode only,
                return  # or every garbage TLS connection would be an error in the log
            self._loop.call_exception_handler(
                {
                    "message": "Error on transport creation for incoming connection",
                    "exception": error,
                    "socket": sock,
                }
            )

    def close(self) -> None:
        """Stop accepting and close the listening sockets (accepted connections stay)."""
        if self._closed:
            return
        self.pause()
        self._closed = True
        self._admission.remove_gate(self)
        retry, self._retry = self._retry, None
        if retry is not None:
            retry.cancel()
        for sock in self._socks:
            sock.close()
        self._server.close()

    async def wait_closed(self) -> None:
        await self._server.wait_closed()
