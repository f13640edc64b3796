"""A ``ws://`` client whose server answers its HTTP request with a TLS record (an alert, or a
handshake record) is told at once that the server speaks TLS there, by the error a ``tcp://``
client gets (:class:`TLSServerError`) naming the ``wss://`` URL, instead of websockets' "did not
receive a valid HTTP response"; a TLS server that closes without a word (asyncio's, Node's,
Netty's) keeps the hint of a server that sends no HTTP, which names wss:// too."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net import Resume, connect, serve
from rstreams.net._transport import TLS_ENDED_BEFORE_HELLO, TLSServerError
from rstreams.net._websocket import NO_HTTP_HINT
from testkit.bound import within
from testkit.tls import TestCA, client_context, client_hello, refusal_alert, server_context

pytestmark = pytest.mark.timeout(30)


async def _answering(answer: bytes) -> asyncio.Server:
    """A TCP server that answers a client's first bytes with ``answer`` and closes."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(64)
        writer.write(answer)
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


async def _connecting(answer: bytes, *, resume: Resume | None = None) -> tuple[BaseException, int]:
    server = await _answering(answer)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ConnectionBrokenError) as broken:
            await connect(f"ws://127.0.0.1:{port}/rsio", resume=resume)
        return broken.value, port
    finally:
        server.close()
        await server.wait_closed()


@pytest.mark.parametrize("record", ["alert", "handshake"])
@pytest.mark.parametrize("resumed", [False, True], ids=["plain", "resume"])
def test_a_tls_record_for_an_http_response_names_the_wss_url(
    record: str, resumed: bool, tmp_path: Path
) -> None:
    ca = TestCA.make(tmp_path, "ws answer CA")
    answer = (
        refusal_alert(ca, ca.issue("server", san=("127.0.0.1",))) if record == "alert" else client_hello(ca)
    )
    error, port = asyncio.run(_connecting(answer, resume=Resume() if resumed else None))
    assert isinstance(error, TLSServerError), repr(error)
    assert str(error) == (
        f"ws://127.0.0.1:{port}/rsio answered with a TLS record (first bytes 0x{answer[0]:02x} 0x03) instead "
        f"of an HTTP response: the server speaks TLS at that address; use wss://127.0.0.1:{port}/rsio"
    )


@pytest.mark.parametrize(
    "answer", [b"\x15\x01\x00", b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", b"garbage"]
)
def test_other_answers_are_read_as_http(answer: bytes) -> None:
    """0x15 not followed by 0x03 is no TLS record: websockets reads the answer as a response, as
    before (the first and last end before a status line, so they get the hint)."""
    error, _ = asyncio.run(_connecting(answer))
    assert not isinstance(error, TLSServerError), repr(error)
    assert "WebSocket handshake with" in str(error), repr(error)


def test_a_server_that_closes_without_a_word_keeps_the_hint() -> None:
    error, _ = asyncio.run(_connecting(b""))
    assert not isinstance(error, TLSServerError) and NO_HTTP_HINT in str(error), repr(error)


def test_the_replay_client_does_not_retry_it() -> None:
    from rstreams.net._websocket import WebSocketTLSServerError
    from rstreams.replay._client import _retryable

    assert not _retryable(
        WebSocketTLSServerError("ws://h:1/rsio answered with a TLS record ...; use wss://h:1/rsio")
    )


def test_wss_to_an_rsio_server_over_tls_alone_names_its_tls_url(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``tls://`` RS.io server reads the HTTP request as garbage and ends the TLS session: the
    client's error names the ``tls://`` URL beside the mutual-TLS hint, and still ends as a TLS
    session ended before the server's first word (which the replay client's retry reads). (The
    server ends it at its lingering close's bound, here 0.2 s instead of LINGER_SECONDS' 2 s.)"""
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 0.2)
    ca = TestCA.make(tmp_path, "wss to tls CA")
    issued = ca.issue("server", san=("127.0.0.1",))

    async def main() -> BaseException:
        async with await serve("tls://127.0.0.1:0", {}, ssl=server_context(issued)) as server:
            port = server.url.rsplit(":", 1)[1]
            with pytest.raises(ConnectionBrokenError) as failed:
                await within(connect(f"wss://127.0.0.1:{port}/rsio", ssl=client_context(ca)))
            assert f"whose URL would be tls://127.0.0.1:{port}," in str(failed.value)
            return failed.value

    error = asyncio.run(main())
    assert str(error).endswith(TLS_ENDED_BEFORE_HELLO), error
