"""Silent peers on ws:// are bounded by websockets' opening-handshake timeout (``open_timeout``,
10 s, which equals the default ``handshake_timeout``): a server closes a socket whose HTTP upgrade
never ends (a slow-loris peer), and a client's connect to a server that accepts the socket and
never answers fails instead of waiting for good."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net import connect, serve

pytest.importorskip("websockets")

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]


async def test_a_socket_that_never_finishes_its_upgrade_is_closed() -> None:
    server = await serve("ws://127.0.0.1:0/rsio", {})
    async with server:
        port = int(server.url.rsplit(":", 1)[1].split("/")[0])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET /rsio HTTP/1.1\r\nHost: 127.0.0.1\r\n")  # the headers never end
        try:
            answer = await asyncio.wait_for(reader.read(), 40)
        except ConnectionResetError:
            answer = b""
        writer.close()
    assert b"101" not in answer, answer


async def test_a_connect_to_a_server_that_never_answers_fails() -> None:
    accepted: list[asyncio.StreamWriter] = []

    async def silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)  # kept open, never answered

    listener = await asyncio.start_server(silent, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    try:
        with pytest.raises(ConnectionBrokenError) as failed:
            await asyncio.wait_for(connect(f"ws://127.0.0.1:{port}/rsio"), 40)
        assert accepted
        assert isinstance(failed.value.__cause__, TimeoutError), repr(failed.value.__cause__)  # open_timeout
    finally:
        for writer in accepted:
            writer.close()
        listener.close()
