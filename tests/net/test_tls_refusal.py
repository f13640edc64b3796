"""TLSRefusedError: a TLS session the server ends before its first word, told apart by type.

A server requiring a client certificate (mutual TLS) that gets none it trusts ends the TLS 1.3
session after the client's side of the handshake: before its RS.io hello on tls://, before the
HTTP response on wss://. Either way the client's error is a :class:`TLSRefusedError` (a
:class:`ConnectionBrokenError`), whose message ends with the same words on both schemes; so is
a TLS 1.2 server's reset inside the handshake. Other ends before the hello, and ends after it,
keep the plain type. Certificates are made per module
(tests/testkit/tls.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
from collections.abc import AsyncIterator
from typing import Any

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError, ReactiveStreamsError, TLSRefusedError
from rstreams.net import connect, serve
from rstreams.net._transport import (
    TLS_ENDED_BEFORE_HELLO,
    TLS_REFUSAL_HINT,
    EndedBeforeHelloError,
    TLSNoResponseError,
)
from testkit.bound import within
from testkit.tls import MutualPki, client_context, server_context

pytestmark = pytest.mark.timeout(30)

URLS = {"tls": "tls://127.0.0.1:0", "wss": "wss://127.0.0.1:0/rsio"}
OFFER: dict[str, Any] = {"numbers": lambda params: rstreams.range(3).map(lambda i: bytes([i]))}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> MutualPki:
    return MutualPki.make(tmp_path_factory.mktemp("refusal"))


async def _numbers(url: str, context: ssl.SSLContext | None) -> list[bytes]:
    async with await connect(url, ssl=context) as conn:
        return await within(conn.publisher("numbers").collect())


async def _broken(url: str, context: ssl.SSLContext | None) -> ConnectionBrokenError:
    """The error of connecting and streaming: at connect (wss://) or at the first use (tls://)."""
    with pytest.raises(ConnectionBrokenError) as raised:
        await _numbers(url, context)
    return raised.value


def test_it_is_a_connection_broken_error_in_the_tree() -> None:
    assert issubclass(TLSRefusedError, ConnectionBrokenError)
    assert issubclass(TLSRefusedError, ReactiveStreamsError)
    assert "TLSRefusedError" in rstreams.errors.__all__
    assert TLSRefusedError("x", code=7).code == 7


@pytest.mark.asyncio
@pytest.mark.parametrize("scheme", list(URLS))
@pytest.mark.parametrize("who", ["no certificate", "another CA"])
async def test_a_refused_client_certificate_is_a_tls_refused_error(
    scheme: str, who: str, pki: MutualPki
) -> None:
    untrusted = client_context(pki.ca) if who == "no certificate" else client_context(pki.ca, pki.mallory)
    context = server_context(pki.server, client_ca=pki.ca)
    async with await serve(URLS[scheme], OFFER, ssl=context) as server:
        error = await _broken(server.url, untrusted)
        assert await _numbers(server.url, client_context(pki.ca, pki.alice)) == [b"\0", b"\1", b"\2"]
    assert type(error) is TLSRefusedError, repr(error)
    assert str(error).endswith(TLS_ENDED_BEFORE_HELLO), error
    assert error.__cause__ is not None  # how the session ended


@pytest.mark.asyncio
@pytest.mark.parametrize("scheme", list(URLS))
async def test_a_tls_1_2_reset_in_the_handshake_is_one_too(scheme: str, pki: MutualPki) -> None:
    """A TLS 1.2 server refuses inside the handshake, by a reset when it is Python's asyncio."""
    context = server_context(pki.server, client_ca=pki.ca)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    async with await serve(URLS[scheme], OFFER, ssl=context) as server:
        error = await _broken(server.url, client_context(pki.ca))
        assert await _numbers(server.url, client_context(pki.ca, pki.alice)) == [b"\0", b"\1", b"\2"]
    assert type(error) is TLSRefusedError, repr(error)
    assert isinstance(error.__cause__, ConnectionResetError)


@contextlib.asynccontextmanager
async def ends_after_handshake(pki: MutualPki) -> AsyncIterator[str]:
    """A tls:// URL whose server makes the TLS handshake (no client certificate asked for), then
    ends each session without a word: as a server killed just then does, and as one refusing a
    client certificate does."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_context(pki.server))
    async with server:
        yield f"tls://127.0.0.1:{server.sockets[0].getsockname()[1]}"


@pytest.mark.asyncio
async def test_a_session_ended_after_the_handshake_is_one_too(pki: MutualPki) -> None:
    """The type says how the session ended, not why: one ended once looks the same."""
    async with ends_after_handshake(pki) as url:
        error = await _broken(url, client_context(pki.ca))
    assert type(error) is TLSRefusedError, repr(error)


@pytest.mark.asyncio
async def test_a_plain_connection_ended_before_the_hello_is_not_one() -> None:
    """Over tcp:// an end before the hello is no TLS refusal (it says: not an RS.io server)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.setblocking(False)
    loop = asyncio.get_running_loop()

    async def accept_and_close() -> None:
        accepted, _ = await loop.sock_accept(listener)
        accepted.close()

    closer = asyncio.create_task(accept_and_close())
    try:
        error = await _broken(f"tcp://127.0.0.1:{listener.getsockname()[1]}", None)
        await within(closer)
    finally:
        closer.cancel()
        listener.close()
    assert type(error) is EndedBeforeHelloError and not isinstance(error, TLSRefusedError), repr(error)
    assert "before its hello" in str(error)


@pytest.mark.asyncio
async def test_a_websocket_at_a_wrong_path_is_not_one(pki: MutualPki) -> None:
    """A wss:// server that answers the WebSocket handshake (404: nothing at that path) did
    not end the session before its first word."""
    async with await serve(URLS["wss"], OFFER, ssl=server_context(pki.server)) as server:
        wrong = server.url.replace("/rsio", "/elsewhere")
        error = await _broken(wrong, client_context(pki.ca))
    assert type(error) is ConnectionBrokenError, repr(error)
    assert "nothing serves RS.io at the path" in str(error)


@pytest.mark.asyncio
async def test_a_session_that_said_hello_ends_with_the_plain_error(pki: MutualPki) -> None:
    """After the server's hello, an ended TLS session is an ordinary ConnectionBrokenError."""
    offer = {**OFFER, "later": lambda params: rstreams.timer(60).map(lambda i: b"x")}
    server = await serve(URLS["tls"], offer, ssl=server_context(pki.server, client_ca=pki.ca))
    async with server, await connect(server.url, ssl=client_context(pki.ca, pki.alice)) as conn:
        assert await within(conn.publisher("numbers").collect()) == [b"\0", b"\1", b"\2"]
        later = asyncio.ensure_future(conn.publisher("later").collect())
        await server.aclose()
        with pytest.raises(ConnectionBrokenError) as raised:
            await within(later)
    assert type(raised.value) is ConnectionBrokenError, repr(raised.value)


@pytest.mark.asyncio
async def test_a_websocket_handshake_without_an_http_response_says_so_by_type(pki: MutualPki) -> None:
    """A wss:// server that makes the TLS handshake and then answers no HTTP response (bytes that
    are not one) is no TLSRefusedError (it did not end the session): the error's cause is a
    TLSNoResponseError, by which a caller names the client certificate options, and still a
    ConnectionRefusedError for those that catch that."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")  # the client's WebSocket request
        writer.write(b"not an HTTP response\r\n\r\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, ssl=server_context(pki.server))
    async with server:
        url = f"wss://127.0.0.1:{server.sockets[0].getsockname()[1]}/rsio"
        error = await _broken(url, client_context(pki.ca))
    assert type(error) is ConnectionBrokenError, repr(error)
    assert type(error.__cause__) is TLSNoResponseError, repr(error.__cause__)
    assert isinstance(error.__cause__, ConnectionRefusedError)
    assert str(error).endswith(f"({TLS_REFUSAL_HINT})"), error
