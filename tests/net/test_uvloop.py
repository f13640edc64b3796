"""The same code on uvloop (``pip install uvloop``; the test dependencies have it): each scheme
serves and subscribes, an abort with output unsent resets the peer, keepalive pings go out and
are answered, a session resumes over cut links, a server closing aborts the TLS handshakes under
way, a refused client certificate fails as on asyncio's loop. uvloop's transports differ from
asyncio's where this code looks below the Protocol interface: they read into our buffers (pipes
too), their ``get_extra_info("socket")`` is a stand-in object, their write buffers count
differently, their TLS layer ends without telling the end of input, and uvloop's servers make an
accepted connection outside a task.

Every test in tests/net runs on uvloop with ``RSTREAMS_TEST_LOOP=uvloop`` (tests/conftest.py);
these are the cases CI runs."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import ssl
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError
from rstreams.net import Connection, Resume, connect, connect_pipe, fixed_size, serve, with_codec
from rstreams.net._admission import DEFAULT_ADMISSION_SHARE
from rstreams.wire import ClientHello, ExtensionMessage, ExtensionReceived, Subscribe, encode
from rstreams.wire.extensions import KEEPALIVE, PING, PONG
from testkit.bound import WAIT, within
from testkit.chaos import ChaosProxy
from testkit.net import RawPeer, StalledPeer, listen_url
from testkit.resume import SIZE, Collector
from testkit.tls import MutualPki, client_context, server_context

uvloop = pytest.importorskip("uvloop")

pytestmark = pytest.mark.timeout(60)

T = TypeVar("T")

OFFER: dict[str, Any] = {
    "n": lambda p: rstreams.range(int(p["n"])).map(lambda i: i.to_bytes(4, "big")),
    "packed": with_codec(lambda p: rstreams.range(1000).map(lambda i: i.to_bytes(4, "big")), fixed_size(4)),
}


def _on_uvloop(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """``main()`` on a new uvloop event loop (checked to be one)."""
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        assert isinstance(runner.get_loop(), uvloop.Loop)
        return runner.run(main())


@pytest.mark.parametrize("scheme", ["tcp", "tls", "unix", "ws", "wss"])
def test_each_scheme_serves_and_subscribes(
    scheme: str, tmp_path: Path, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    secure = scheme in ("tls", "wss")

    async def main() -> None:
        served = await serve(listen_url(scheme, tmp_path), OFFER, ssl=server_ssl if secure else None)
        async with served as server:
            conn = await within(connect(server.url, ssl=client_ssl if secure else None))
            async with conn:
                assert len(await within(conn.publisher("n?n=5000").collect())) == 5000
                items = await within(conn.publisher("packed").collect())
                assert [int.from_bytes(x, "big") for x in items] == list(range(1000))
                assert await within(conn.request("n?n=1")) == bytes(4)

    _on_uvloop(main)


def test_pipes_serve_and_subscribe() -> None:
    """uvloop reads pipes into our buffer too (asyncio does not)."""

    async def main() -> None:
        a, b = os.pipe()
        c, d = os.pipe()
        served = await connect_pipe(a, d, server=True, publishers=OFFER)
        client = await connect_pipe(c, b)
        assert len(await within(client.publisher("n?n=100").collect())) == 100
        await within(client.aclose())
        await within(served.wait_closed())

    _on_uvloop(main)


# -- an abort with output unsent ------------------------------------------------------------------
ELEMENT = b"x" * (1 << 16)
OPENING = encode(ClientHello()) + encode(Subscribe(publisher="flood", subscriber=1, initial_demand=1 << 20))


def _flood(params: dict[str, str]) -> rstreams.Flow[bytes]:
    return rstreams.from_iterable(itertools.repeat(ELEMENT))


async def _tls_client(sock: socket.socket) -> tuple[ssl.SSLObject, ssl.MemoryBIO]:
    """A TLS client's handshake over ``sock`` in memory (nothing verified: only the bytes under
    TLS matter); the session and its outgoing buffer."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="127.0.0.1")
    loop = asyncio.get_running_loop()
    while True:
        try:
            tls.do_handshake()
            return tls, outgoing
        except ssl.SSLWantReadError:
            await within(loop.sock_sendall(sock, outgoing.read()))
            data = await within(loop.sock_recv(sock, 1 << 16))
            assert data, "the server ended its TLS handshake"
            incoming.write(data)


@pytest.mark.parametrize("scheme", ["tcp", "tls"])
def test_an_abort_with_output_unsent_resets_the_peer(
    scheme: str, tmp_path: Path, server_ssl: ssl.SSLContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As tests/net/test_abort_reset.py on asyncio's loop: a server closed while flooding a peer
    that reads nothing ends its bounded close in an abort, which resets (SO_LINGER 0 on the
    socket uvloop's transport stands for), and the peer's reads end in ConnectionResetError."""
    monkeypatch.setattr("rstreams.net._server.CLOSE_TIMEOUT", 0.5)

    async def main() -> BaseException | None:
        loop = asyncio.get_running_loop()
        connections: list[Connection] = []
        context = server_ssl if scheme == "tls" else None
        server = await serve(
            listen_url(scheme, tmp_path), {"flood": _flood}, ssl=context, on_connection=connections.append
        )
        sock = socket.socket()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 14)
        sock.setblocking(False)
        try:
            host, port = server.url.split("://", 1)[1].rsplit(":", 1)
            await within(loop.sock_connect(sock, (host, int(port))))
            if context is None:
                await within(loop.sock_sendall(sock, OPENING))
            else:
                tls, outgoing = await _tls_client(sock)
                tls.write(OPENING)
                await within(loop.sock_sendall(sock, outgoing.read()))
            async with asyncio.timeout(WAIT):  # until the server holds output it cannot send
                while not connections or not _holds_unsent(connections[0]):  # noqa: ASYNC110 (no event says so)
                    await asyncio.sleep(0.01)
            await within(server.aclose())
            try:
                while await within(loop.sock_recv(sock, 1 << 16)):
                    pass
            except ConnectionError as error:
                return error
            return None
        finally:
            sock.close()
            await within(server.aclose())

    error = _on_uvloop(main)
    assert isinstance(error, ConnectionResetError), f"the peer read to {error or 'the end of input'}"


def _holds_unsent(conn: Connection) -> bool:
    transport = conn._pump.outbox.transport
    return transport is not None and transport.get_write_buffer_size() > 0


# -- keepalive ------------------------------------------------------------------------------------
def test_a_server_pings_a_silent_peer_and_answers_its_ping() -> None:
    """Extension keepalive (PROTOCOL.md §14) on uvloop's timers: the server pings a peer that
    offers it and says nothing, and answers the peer's ping with the same bytes."""

    async def main() -> tuple[ExtensionReceived, ExtensionReceived]:
        async with await serve("tcp://127.0.0.1:0", OFFER, keepalive=0.05) as server:
            peer = await RawPeer.open(server.url, extensions=(KEEPALIVE.id,))
            try:
                ping = await peer.read_until(ExtensionReceived)
                peer.send(ExtensionMessage(type=PING, payload=b"12345678"))
                while (pong := await peer.read_until(ExtensionReceived)).type != PONG:
                    pass
            finally:
                peer.close()
        return ping, pong

    ping, pong = _on_uvloop(main)
    assert ping.type == PING and len(ping.payload) == 8
    assert pong.payload == b"12345678"


# -- resumption -----------------------------------------------------------------------------------
FAST = Resume(attempts=20, backoff=0.01, max_backoff=0.1, attempt_timeout=2.0, buffer_bytes=256 * 1024)


@pytest.mark.timeout(90)
def test_a_session_resumes_over_cut_links() -> None:
    """Session resumption (PROTOCOL.md §16) through a proxy that cuts the TCP link three times:
    every element arrives once, in order."""
    n = 20_000

    async def main() -> Collector:
        received = Collector()
        offer = {"count": lambda params: rstreams.range(n).map(lambda i: i.to_bytes(8, "big") * (SIZE // 8))}
        server = await serve("tcp://127.0.0.1:0", offer, resume=FAST)
        port = int(server.url.rsplit(":", 1)[1])
        async with server, ChaosProxy("127.0.0.1", port, seed=3) as proxy:
            client = await within(connect(proxy.url, resume=FAST))
            try:
                client.publisher("count").subscribe(received)
                await proxy.cut_repeatedly(3, 5_000, 300_000)
                await within(received.finished(), 60)
            finally:
                await within(client.aclose(timeout=1.0))
        return received

    received = _on_uvloop(main)
    assert received.error is None
    assert received.items == list(range(n))


# -- a server closing aborts TLS handshakes (PROTOCOL.md §9.1) -------------------------------------
@pytest.mark.parametrize("share", [DEFAULT_ADMISSION_SHARE, None], ids=["budget", "no-budget"])
@pytest.mark.parametrize("scheme", ["tls", "wss"])
def test_a_server_closing_aborts_tls_handshakes(
    scheme: str, share: float | None, tmp_path: Path, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    """As tests/net/test_server_closing_tls.py on asyncio's loop: a handshake under way as the
    server closes is aborted, and so is one accepted while it closes (uvloop's own accepting
    makes a connection outside a task, out of the closing server's reach: the server accepts
    tls:// and wss:// connections itself; a wss:// one used to finish its handshake)."""

    async def main() -> None:
        server = await serve(listen_url(scheme, tmp_path), OFFER, ssl=server_ssl, admission_share=share)
        try:
            under_way = await StalledPeer.open(server.url, client_ssl)
            try:
                server._doorway.close()  # as close() leaves it, with the listener still accepting
                assert await under_way.ended()
                with pytest.raises(ConnectionError):
                    await StalledPeer.open(server.url, client_ssl)
            finally:
                under_way.writer.close()
        finally:
            await within(server.aclose())
        assert server._doorway.handshakes == 0

    _on_uvloop(main)


# -- a refused client certificate ------------------------------------------------------------------
@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> MutualPki:
    return MutualPki.make(tmp_path_factory.mktemp("mtls"))


@pytest.mark.parametrize("scheme", ["tls", "wss"])
def test_a_refused_client_certificate_fails_as_on_asyncio_s_loop(scheme: str, pki: MutualPki) -> None:
    """A TLS 1.3 server refusing the client's certificate ends the session after the client's
    side of the handshake, without a close_notify: uvloop's TLS layer tells the end of input
    only by closing, asyncio's as an end of input. The client's error, its words and its causes
    are the same on both loops (tests/net/test_tls_refusal.py)."""
    url = "tls://127.0.0.1:0" if scheme == "tls" else "wss://127.0.0.1:0/rsio"

    async def main() -> list[tuple[type[BaseException], str]]:
        async with await serve(url, OFFER, ssl=server_context(pki.server, client_ca=pki.ca)) as server:
            with pytest.raises(ConnectionBrokenError) as raised:
                async with await within(connect(server.url, ssl=client_context(pki.ca))) as conn:
                    await within(conn.publisher("n?n=1").collect())
        chain: list[tuple[type[BaseException], str]] = []
        error: BaseException | None = raised.value
        while error is not None:
            address = server.url.split("://", 1)[1].split("/", 1)[0]
            chain.append((type(error), str(error).replace(address, "HOST:PORT")))
            error = error.__cause__
        return chain

    with asyncio.Runner(loop_factory=asyncio.SelectorEventLoop) as runner:
        on_asyncio = runner.run(main())
    assert len(on_asyncio) > 1  # the error has its cause
    assert _on_uvloop(main) == on_asyncio
