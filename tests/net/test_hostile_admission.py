"""The admission budget (rstreams.net._admission): new connections take at most a share of the loop.

The bucket and its gates run on a virtual clock; what the pending handler charges is read
off a clock that ticks once per call, over memory transports; the work clock itself (the
loop thread's CPU time) is shown to charge a callback's work and not a stall. The end-to-end tests use a
server process and raw sockets: a burst of garbage connections waits in the kernel's
backlog while an established stream goes on, and a newcomer still gets in during a flood
that does not stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pytest

import rstreams
from rstreams.net import connect, serve
from rstreams.net._admission import (
    BURST,
    DEFAULT_ADMISSION_SHARE,
    REOPEN,
    Admission,
    check_share,
    tls_handshake_cost,
)
from rstreams.net._pending import ADMISSION_READS, Charged, Pending
from rstreams.net._pump import Pump
from rstreams.wire import ClientHello, ConnectionClosed, Request, ServerHello, Subscribe, encode
from testkit.bound import within
from testkit.clock import VirtualLoop
from testkit.hostile import Legit, ServerProcess, server_process
from testkit.net import MemoryPeer, RecordingHandler, memory_pair, run_virtual

OFFER = {"greeting": lambda _params: rstreams.from_iterable([b"hi"] * 10_000)}
HELLO = encode(ClientHello())
GARBAGE = HELLO + b"\xff" * 64  # 0xff: no such message type; the core says goodbye at once


class Gate:
    """Records what the budget tells it."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause(self) -> None:
        self.calls.append("pause")

    def resume(self) -> None:
        self.calls.append("resume")


def budget(share: float = 0.25) -> tuple[VirtualLoop, Admission, Gate]:
    loop = VirtualLoop()
    admission = Admission(cast(asyncio.AbstractEventLoop, loop), share)
    gate = Gate()
    admission.add_gate(gate)
    return loop, admission, gate


def accepting(admission: Admission) -> bool:
    return admission.open  # (a function: mypy would keep what an assert told it about the property)


# -- the bucket ---------------------------------------------------------------------------
def test_a_quiet_server_admits_a_burst_then_pauses_until_the_share_has_refilled_it() -> None:
    loop, admission, gate = budget(share=0.25)
    assert gate.calls == ["resume"] and accepting(admission)
    admission.charge(BURST)  # exactly the burst: not owed yet
    assert accepting(admission)
    admission.charge(0.01)  # 10 ms owed: stop accepting
    assert gate.calls == ["resume", "pause"] and not accepting(admission)
    reopen = (BURST * REOPEN + 0.01) / 0.25  # back to a quarter of the burst at 0.25 s per s
    loop.advance(reopen - 0.001)
    assert not accepting(admission)
    loop.advance(0.002)
    assert accepting(admission) and gate.calls == ["resume", "pause", "resume"]
    assert admission.balance == pytest.approx(BURST * REOPEN, abs=0.001)


def test_the_bucket_holds_at_most_the_burst() -> None:
    loop, admission, _ = budget(share=0.5)
    admission.charge(BURST)
    loop.advance(3600.0)  # an idle hour banks no more than the burst
    assert admission.balance == pytest.approx(BURST)
    admission.charge(BURST + 0.001)
    assert not accepting(admission)


def test_work_charged_while_paused_extends_the_pause() -> None:
    """Connections accepted before the pause still finish their handshakes and are charged."""
    loop, admission, gate = budget(share=0.25)
    admission.charge(BURST + 0.01)
    first = (BURST * REOPEN + 0.01) / 0.25
    admission.charge(0.02)  # a handshake under way when the bucket ran out
    loop.advance(first + 0.001)
    assert not accepting(admission)  # the 20 ms more are owed too
    loop.advance(0.02 / 0.25)
    assert accepting(admission) and gate.calls == ["resume", "pause", "resume"]


def test_a_removed_gate_is_not_resumed_and_leaves_no_timer() -> None:
    loop, admission, gate = budget()
    admission.charge(BURST + 1.0)
    admission.remove_gate(gate)
    loop.advance(100.0)
    assert gate.calls == ["resume", "pause"]


# -- what the budget's clock measures: the loop thread's work, not a stall --------------------------
def spin(seconds: float) -> None:
    """Work until this thread has spent ``seconds`` of CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def timed(admission: Admission, work: Callable[[], object]) -> None:
    """Run ``work`` as a pending connection's callback is run: timed, and charged."""
    started = admission.clock()
    try:
        work()
    finally:
        admission.charge(admission.clock() - started)


def test_a_stall_of_the_loops_thread_inside_a_callback_is_not_charged() -> None:
    """The process stalls in a callback (here the loop's thread waits while another thread works
    for twice the burst; on a busy machine, other processes run) and 2 s of the loop's time pass:
    only the callback's own work is charged, and the door stays open. Charged by wall-clock
    time, the stall closed it for (2 s + a quarter of the burst) / share, 10 s at the default."""
    loop, admission, gate = budget(share=DEFAULT_ADMISSION_SHARE)  # the default clock

    def stall() -> None:
        other = threading.Thread(target=spin, args=(2 * BURST,))
        other.start()
        other.join()
        loop.advance(2.0)

    timed(admission, stall)
    assert accepting(admission) and gate.calls == ["resume"]
    assert admission.balance > BURST / 2


def test_the_loops_own_work_in_a_callback_is_charged_in_full() -> None:
    """A flood is throttled as before: a callback that works for 10 ms more than the burst closes
    the door until the share has refilled the bucket to a quarter of the burst."""
    loop, admission, gate = budget(share=0.25)  # the default clock
    timed(admission, lambda: spin(BURST + 0.01))
    assert not accepting(admission) and gate.calls == ["resume", "pause"]
    assert admission.balance <= -0.01
    loop.advance((BURST * REOPEN + 0.01) / 0.25 - 0.001)
    assert not accepting(admission)


@pytest.mark.parametrize("share", [0, -0.1, 1.5, "0.5", True, float("nan")])
def test_a_bad_share_is_refused_naming_the_option(share: object) -> None:
    with pytest.raises(ValueError, match="admission_share"):
        check_share(share)


@pytest.mark.asyncio
async def test_serve_refuses_a_bad_admission_share() -> None:
    with pytest.raises(ValueError, match="admission_share must be a number with 0 < share <= 1"):
        await serve("tcp://127.0.0.1:0", admission_share=2.0)


# -- what a new connection is charged ---------------------------------------------------------
class Ticks:
    """A work clock that moves one second per reading: each timed callback charges exactly 1."""

    def __init__(self) -> None:
        self.count = itertools.count()

    def __call__(self) -> float:
        return float(next(self.count))


def charged_peer(
    admission_of: Callable[[], Admission], made: list[Pump] | None = None
) -> tuple[Admission, MemoryPeer, Pending]:
    """A pending connection charged to ``admission_of()`` and its peer (``made``: gets its pump)."""
    admission = admission_of()
    server_hello = b"".join(Pump(client=False, offer=OFFER).outbox.core.data_to_send())

    def make() -> Pump:
        pump = Pump(client=False, offer=OFFER)
        if made is not None:
            made.append(pump)
        return pump

    pending = Pending(make, server_hello, 10.0, admission)
    peer = MemoryPeer(hello=False)
    memory_pair(pending, peer)
    return admission, peer, pending


def new_admission() -> Admission:
    # A share so small that nothing refills during the test: the balance is minus what was charged.
    return Admission(asyncio.get_running_loop(), 1e-12, burst=0.0, clock=Ticks())


def test_a_connection_that_sends_garbage_is_charged_for_all_of_its_work() -> None:
    async def main() -> tuple[float, MemoryPeer]:
        admission, peer, _ = charged_peer(new_admission)
        assert admission.balance == pytest.approx(-1)  # connection_made: the serverHello
        peer.transport.writelines([GARBAGE])
        await asyncio.sleep(5.0)  # the goodbye, the lingering close, the end of the transport
        return admission.balance, peer

    balance, peer = run_virtual(main)
    [closed] = peer.of(ConnectionClosed)
    assert closed.reason.startswith("message type 0xff belongs to no extension")
    assert round(balance) <= -3  # connection_made, the read of garbage, connection_lost at least


def test_an_established_connection_stops_being_charged() -> None:
    async def main() -> tuple[float, float, MemoryPeer]:
        admission, peer, _ = charged_peer(new_admission)
        peer.transport.writelines([HELLO + encode(Subscribe(publisher="greeting", subscriber=1))])
        await asyncio.sleep(0.1)
        for _ in range(ADMISSION_READS):  # the reads a newcomer is charged for
            peer.transport.writelines([encode(Request(subscriber=1, demand=1))])
            await asyncio.sleep(0.1)
        established = admission.balance
        for _ in range(20):
            peer.transport.writelines([encode(Request(subscriber=1, demand=1))])
            await asyncio.sleep(0.1)
        return established, admission.balance, peer

    established, later, peer = run_virtual(main)
    assert peer.of(ServerHello)
    assert established == pytest.approx(-1 - ADMISSION_READS)  # the serverHello and its first reads
    assert round(later) == round(established)  # twenty more reads, none charged


def test_a_charged_connection_hands_its_transport_over_to_the_pump_once_established() -> None:
    async def main() -> tuple[list[object], Pump, bool]:
        made: list[Pump] = []
        _, peer, pending = charged_peer(new_admission, made)
        transport = peer.transport.peer
        assert transport is not None
        handlers = [transport.handler]
        peer.transport.writelines([HELLO + encode(Subscribe(publisher="greeting", subscriber=1))])
        await asyncio.sleep(0.1)
        handlers.append(transport.handler)
        for _ in range(ADMISSION_READS - 1):  # counted from the read that completed the hello
            peer.transport.writelines([encode(Request(subscriber=1, demand=1))])
            await asyncio.sleep(0.1)
            handlers.append(transport.handler)
        return handlers, made[0], pending.established

    handlers, pump, established = run_virtual(main)
    assert established
    assert handlers[:-1] == [handlers[0]] * ADMISSION_READS  # charged: each read timed by Pending
    assert isinstance(handlers[0], Pending)
    assert handlers[-1] is pump  # established: its reads go to the pump


def test_a_charged_link_hands_its_transport_over_once_its_reads_are_charged() -> None:
    async def main() -> tuple[list[object], RecordingHandler, float]:
        admission = new_admission()
        link = RecordingHandler()
        transport, other = memory_pair(Charged(link, admission, reads=2), RecordingHandler())
        handlers = [transport.handler]
        for chunk in (b"a", b"b", b"c"):
            other.writelines([chunk])  # read by our end's handler
            await asyncio.sleep(0.1)
            handlers.append(transport.handler)
        return handlers, link, admission.balance

    handlers, link, balance = run_virtual(main)
    assert isinstance(handlers[0], Charged) and handlers[1] is handlers[0]
    assert handlers[2:] == [link, link]  # its two reads charged: the link takes the transport
    assert balance == pytest.approx(-3)  # connection_made and the two reads, not the third
    assert bytes(link.data) == b"abc"


# -- end to end: a server process, raw sockets ---------------------------------------------------
@contextlib.contextmanager
def raw_connections(address: tuple[str, int], count: int, data: bytes) -> Iterator[list[socket.socket]]:
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(address, timeout=10)
            sock.sendall(data)
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()


def answered(socks: list[socket.socket]) -> int:
    """How many of ``socks`` the server has written to (its serverHello comes as it accepts)."""
    count = 0
    for chunk in _chunks(socks, 256):
        readable, _, _ = select.select(list(chunk), [], [], 0)
        count += len(readable)
    return count


def _chunks(items: list[socket.socket], size: int) -> Iterator[list[socket.socket]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def tcp_address(server: ServerProcess) -> tuple[str, int]:
    address = server.address
    assert isinstance(address, tuple)
    return address


@pytest.mark.asyncio
@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_a_burst_of_garbage_connections_waits_in_the_backlog_while_a_stream_goes_on() -> None:
    """600 garbage connections at once, against a budget of 0.1% of the loop: the server takes
    a burst of them, leaves the rest to the kernel, and the established stream runs on."""
    with server_process("tcp://127.0.0.1:0", admission_share=0.001) as server:
        conn = await connect(server.url)
        try:
            legit = Legit()
            conn.publisher("counter").subscribe(legit)
            assert await legit.more_than(1000)
            address = tcp_address(server)
            with raw_connections(address, 600, GARBAGE) as socks:
                start = legit.received
                assert await legit.more_than(start + 100_000), "the established stream stopped"
                waiting = len(socks) - answered(socks)
        finally:
            await conn.aclose()
    # Unbudgeted, the server answers all 600 in a fraction of the time the stream takes for
    # 100,000 elements; with 0.1% of the loop, a burst of 50 ms of work and then a few per second.
    assert waiting >= 200, f"only {waiting} of 600 garbage connections were still waiting to be accepted"


def garbage_loop(address: tuple[str, int], stop: threading.Event, done: list[int]) -> None:
    noise = os.urandom(16 * 1024)
    while not stop.is_set():
        try:
            with socket.create_connection(address, timeout=10) as sock:
                sock.sendall(HELLO + b"\x0e" + noise)
                with contextlib.suppress(OSError):
                    sock.recv(4096)
            done.append(1)
        except OSError:
            pass


def join(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(15)


@pytest.mark.asyncio
@pytest.mark.slow
@pytest.mark.timeout(120)
async def test_newcomers_still_get_in_while_garbage_connections_keep_coming() -> None:
    """Four peers open garbage connections in a loop; the established stream goes on, a new
    client is accepted, says hello and streams, and the garbage peers are answered too."""
    with server_process("tcp://127.0.0.1:0", admission_share=0.05) as server:
        conn = await connect(server.url)
        stop, done = threading.Event(), list[int]()
        threads = [
            threading.Thread(target=garbage_loop, args=(tcp_address(server), stop, done), daemon=True)
            for _ in range(4)
        ]
        try:
            legit = Legit()
            conn.publisher("counter").subscribe(legit)
            assert await legit.more_than(1000)
            for thread in threads:
                thread.start()
            assert await legit.more_than(legit.received + 20_000), "the established stream stopped"
            newcomer = await within(connect(server.url), 30)
            try:
                fresh = Legit()
                newcomer.publisher("counter").subscribe(fresh)
                assert await fresh.more_than(1000), "the newcomer was not served"
            finally:
                await newcomer.aclose()
            flooded = len(done)
            assert await legit.more_than(legit.received + 20_000), "the established stream stopped"
        finally:
            stop.set()
            await asyncio.to_thread(join, threads)
            await conn.aclose()
    assert flooded > 0, "no garbage connection was ever answered"


# -- WebSocket: accepted and charged within the same budget -------------------------------------
def upgrade_request(path: str) -> bytes:
    return (
        f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        "Sec-WebSocket-Protocol: rsio.v0\r\n\r\n"
    ).encode()


def ws_address(url: str) -> tuple[str, int]:
    host, _, rest = url.removeprefix("ws://").partition(":")
    return host, int(rest.partition("/")[0])


@pytest.fixture
def ticking_admission(monkeypatch: pytest.MonkeyPatch) -> list[Admission]:
    """serve() makes its budget with a clock that ticks a second per reading and a share so small
    that nothing refills during the test; the list holds what it made."""
    made: list[Admission] = []

    def ticking(loop: asyncio.AbstractEventLoop, share: float) -> Admission:
        made.append(Admission(loop, 1e-12, burst=0.0, clock=Ticks()))
        return made[-1]

    monkeypatch.setattr(rstreams.net._server, "Admission", ticking)
    return made


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_a_websocket_listener_charges_its_connections_and_stops_accepting_when_spent(
    ticking_admission: list[Admission],
) -> None:
    pytest.importorskip("websockets")
    server = await serve("ws://127.0.0.1:0/rs", OFFER, admission_share=0.5)
    [admission] = ticking_admission
    try:
        assert admission.balance == 0.0 and accepting(admission)
        conn = await connect(server.url)  # accepted on the burst, then the budget is spent
        try:
            for _ in range(ADMISSION_READS + 1):  # each subscribe is a read at least
                assert len(await within(conn.publisher("greeting").collect(), 20)) == 10_000
            charged = round(-admission.balance)
            # the accept, websockets' connection_made, the request's read, the response, the RS.io
            # handler's connection_made, and its first reads (each a websockets callback and the
            # RS.io handler's, both charged)
            assert charged >= 5 + 2 * ADMISSION_READS, charged
            assert not accepting(admission)
            for _ in range(3):
                assert len(await within(conn.publisher("greeting").collect(), 20)) == 10_000
            assert round(-admission.balance) == charged  # established: its work is no longer charged
            # A newcomer's upgrade request waits unanswered in the kernel's backlog.
            with socket.create_connection(ws_address(server.url), timeout=5) as newcomer:
                newcomer.sendall(upgrade_request("/rs"))
                answer = await asyncio.to_thread(lambda: select.select([newcomer], [], [], 0.5)[0])
                assert answer == [], "the spent budget still accepted a WebSocket connection"
        finally:
            await conn.aclose()
    finally:
        await server.aclose()


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_a_websocket_refused_at_the_http_level_is_charged_for_all_of_its_work(
    ticking_admission: list[Admission],
) -> None:
    pytest.importorskip("websockets")
    server = await serve("ws://127.0.0.1:0/rs", OFFER, admission_share=0.5)
    [admission] = ticking_admission
    try:
        with socket.create_connection(ws_address(server.url), timeout=5) as peer:
            peer.sendall(upgrade_request("/elsewhere"))
            reply = await asyncio.to_thread(peer.recv, 4096)
            assert reply.startswith(b"HTTP/1.1 404")
            while await asyncio.to_thread(peer.recv, 4096):  # until the server closes
                pass
        for _ in range(100):  # the end of the transport runs on the server's loop
            if admission.balance <= -5:
                break
            await asyncio.sleep(0.01)
        # accept, connection_made, the request's read, the response, the end of the transport
        assert admission.balance <= -5
    finally:
        await server.aclose()


# -- TLS: each handshake is charged what one costs the server ------------------------------------
def test_a_tls_handshake_cost_is_measured_on_the_server_side_only(server_ssl: ssl.SSLContext) -> None:
    steps = tls_handshake_cost(server_ssl, Ticks())
    assert steps == 2  # TLS 1.3: the server answers the clientHello, then reads the client's Finished
    cost = tls_handshake_cost(server_ssl)
    assert 0 < cost < 1.0


def test_a_tls_handshake_refused_for_want_of_a_client_certificate_is_timed_to_the_refusal(
    server_ssl: ssl.SSLContext, tls_files: tuple[Path, Path]
) -> None:
    server_ssl.verify_mode = ssl.CERT_REQUIRED  # mutual TLS: the measuring client has no certificate
    server_ssl.load_verify_locations(tls_files[0])
    assert tls_handshake_cost(server_ssl, Ticks()) == 2  # the answer to its hello, then the refusal


async def charged_at_least(admission: Admission, expected: float) -> float:
    """The budget's charge once it has reached ``expected`` (the server's loop charges a TLS
    handshake after its connection is made, so a little after the peer hears of it)."""
    for _ in range(500):
        if round(-admission.balance) >= expected:
            break
        await asyncio.sleep(0.01)
    return round(-admission.balance)


@pytest.mark.asyncio
@pytest.mark.timeout(30)
@pytest.mark.parametrize("handshake", ["done", "garbage"])
async def test_a_tls_listener_charges_each_handshake(
    ticking_admission: list[Admission], server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext, handshake: str
) -> None:
    server = await serve("tls://127.0.0.1:0", OFFER, ssl=server_ssl, admission_share=0.5)
    [admission] = ticking_admission
    try:
        host, _, port = server.url.removeprefix("tls://").partition(":")
        if handshake == "done":  # the accept, the handshake (2 steps), the serverHello: then silence
            reader, writer = await asyncio.open_connection(host, int(port), ssl=client_ssl)
            assert await within(reader.readexactly(1), 10)
            expected = 1 + 2 + 1
        else:  # not a TLS clientHello: the accept and the failed handshake
            reader, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"\x16\x03\x01\x00\x05hello" + b"\xff" * 64)
            assert await within(reader.read(), 10) is not None  # the server closes
            expected = 1 + 2
        assert await charged_at_least(admission, expected) == expected
        writer.close()
    finally:
        await server.aclose()


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_a_resumable_server_charges_a_connections_hello_and_first_reads(
    ticking_admission: list[Admission],
) -> None:
    server = await serve("tcp://127.0.0.1:0", OFFER, resume=True, admission_share=0.5)
    [admission] = ticking_admission
    try:
        conn = await connect(server.url, resume=True)
        try:
            for _ in range(ADMISSION_READS + 2):  # each subscribe is a read at least
                assert len(await within(conn.publisher("greeting").collect(), 20)) == 10_000
            charged = round(-admission.balance)
            # the accept, the link's connection_made, its hello and the reads after it
            assert charged == 1 + 1 + 1 + ADMISSION_READS
            for _ in range(3):
                assert len(await within(conn.publisher("greeting").collect(), 20)) == 10_000
            assert round(-admission.balance) == charged  # established: no longer charged
        finally:
            await conn.aclose()
    finally:
        await server.aclose()
