"""A ``tcp://`` client whose server answers with a TLS record (an alert refusing the client's
bytes as a handshake, or a handshake record) is told at once that the server speaks TLS there,
by a distinct error naming the ``tls://`` URL; a TLS server that closes without a word (as
asyncio's does) still ends the connection as any server that closes before its hello does."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net._closing import NOT_RSIO_HINT
from rstreams.net._transport import EndedBeforeHelloError, TLSServerError
from testkit.net import broken_stream_from
from testkit.tls import TestCA, client_hello, refusal_alert, server_context

pytestmark = pytest.mark.timeout(30)


async def _answering(answer: bytes) -> asyncio.Server:
    """A TCP server that answers a client's first bytes with ``answer``, then reads until the end."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(64)
        writer.write(answer)
        try:
            await writer.drain()
            while await reader.read(4096):
                pass
        except OSError:
            pass
        writer.close()

    return await asyncio.start_server(serve, "127.0.0.1", 0)


@pytest.mark.parametrize("record", ["alert", "handshake"])
def test_a_tls_record_before_the_hello_names_the_tls_url(record: str, tmp_path: Path) -> None:
    ca = TestCA.make(tmp_path, "answer CA")
    server = ca.issue("server", san=("127.0.0.1",))
    answer = refusal_alert(ca, server) if record == "alert" else client_hello(ca)
    assert answer[:2] == (b"\x15\x03" if record == "alert" else b"\x16\x03")

    error, port = asyncio.run(broken_stream_from(_answering(answer)))
    assert type(error) is TLSServerError, repr(error)
    assert str(error) == (
        f"tcp://127.0.0.1:{port} answered with a TLS record (first bytes 0x{answer[0]:02x} 0x03) before "
        f"its hello: the server speaks TLS at that address; use tls://127.0.0.1:{port}"
    )


def test_other_first_bytes_are_read_as_rsio() -> None:
    """0x15 not followed by 0x03 is no TLS record: the unknown message type it is (PROTOCOL.md §3)."""

    error, _ = asyncio.run(broken_stream_from(_answering(b"\x15\x01\x00")))
    assert type(error) is ConnectionBrokenError and "unknown message type 0x15" in str(error), repr(error)


def test_an_asyncio_tls_server_that_closes_without_a_word_keeps_the_scheme_hint(tmp_path: Path) -> None:
    """asyncio's TLS server sends no alert for bytes that are no TLS record: it closes; the error
    is the one of any server that closes before its hello (its hint names tls:// among others)."""
    ca = TestCA.make(tmp_path, "silent CA")
    context = server_context(ca.issue("server", san=("127.0.0.1",)))

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()

    error, _ = asyncio.run(broken_stream_from(asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)))
    assert type(error) is EndedBeforeHelloError and str(error).endswith(NOT_RSIO_HINT), repr(error)
