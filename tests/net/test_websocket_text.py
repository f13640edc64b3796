"""A text WebSocket message is a protocol violation (PROTOCOL.md §1), told by its type."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.errors import ConnectionBrokenError, RemoteProtocolError
from rstreams.net import TextMessageError, connect
from rstreams.wire import FrameError

pytest.importorskip("websockets")

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


@pytest.mark.parametrize(
    ("text", "status"), [(b"not binary", 1003), (b"\xff", 1007)], ids=["utf8", "not-utf8"]
)
async def test_a_text_message_breaks_the_connection_with_text_message_error(text: bytes, status: int) -> None:
    """The client that gets text instead of the server's hello closes with 1003 (1007 for text
    that is not UTF-8, which websockets refuses before handing it over) and its streams fail with
    a ConnectionBrokenError whose cause is a TextMessageError: a RemoteProtocolError (a
    FrameError citing §1), still a ValueError for callers that caught the plain one."""
    from websockets.asyncio.server import ServerConnection
    from websockets.asyncio.server import serve as ws_serve

    closed: list[int | None] = []
    done = asyncio.Event()

    async def speaks_text(ws: ServerConnection) -> None:
        await ws.recv()  # the client's hello
        await ws.send(text, text=True)
        await ws.wait_closed()
        closed.append(ws.close_code)
        done.set()

    async with ws_serve(speaks_text, "127.0.0.1", 0) as listener:
        port = listener.sockets[0].getsockname()[1]
        conn = await asyncio.wait_for(connect(f"ws://127.0.0.1:{port}/"), 10)
        try:
            with pytest.raises(ConnectionBrokenError) as broken:
                await asyncio.wait_for(conn.request("anything"), 10)
            await asyncio.wait_for(done.wait(), 10)
        finally:
            await conn.aclose()
    cause = broken.value.__cause__
    assert isinstance(cause, TextMessageError), repr(cause)
    assert issubclass(TextMessageError, FrameError) and issubclass(TextMessageError, RemoteProtocolError)
    assert issubclass(TextMessageError, ValueError)
    assert "PROTOCOL.md §1" in str(cause) and cause.reason == str(cause)
    assert closed == [status]
