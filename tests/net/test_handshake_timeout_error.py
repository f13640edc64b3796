"""A client that hears no RS.io hello within ``handshake_timeout`` fails with its own type,
:class:`~rstreams.errors.HandshakeTimeoutError` (a ``ConnectionBrokenError``, as before it had
one), on every scheme: ``connect`` raises it for a ``tls://``/``ws://``/``wss://`` opening that
took that long, the streams fail with it once the transport is up. Its message names the URL
(or the pipe), the seconds and that the peer may not be an RS.io server. Real sockets that
accept and never write; a small handshake timeout."""

from __future__ import annotations

import asyncio
import os
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from rstreams.errors import ConnectionBrokenError, HandshakeTimeoutError, ReactiveStreamsError
from rstreams.net import connect, connect_pipe
from rstreams.net._closing import SILENT_HINT
from testkit.bound import within

pytestmark = [pytest.mark.timeout(60), pytest.mark.asyncio]

WAIT = 0.2


@asynccontextmanager
async def _silent(scheme: str, tmp_path: Path) -> AsyncIterator[str]:
    """A listener that accepts, reads, and never writes a byte; its URL for ``scheme``."""
    held: list[asyncio.StreamWriter] = []

    async def say_nothing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        await reader.read()  # until the client closes
        writer.close()  # then so does it (the client's lingering close ends at once, not at its bound)

    if scheme == "unix":
        path = tmp_path / "silent.sock"
        listener = await asyncio.start_unix_server(say_nothing, path)
        url = f"unix://{path}"
    else:
        listener = await asyncio.start_server(say_nothing, "127.0.0.1", 0)
        port = listener.sockets[0].getsockname()[1]
        url = f"{scheme}://127.0.0.1:{port}" + ("/" if scheme in ("ws", "wss") else "")
    try:
        yield url
    finally:
        for writer in held:
            writer.close()
        listener.close()
        await listener.wait_closed()


async def _first_error(url: str) -> BaseException:
    """What ``connect`` raises, or else what a request on the connection fails with."""
    context = ssl.create_default_context() if url.startswith(("tls", "wss")) else None
    try:
        conn = await within(connect(url, ssl=context, handshake_timeout=WAIT))
    except ReactiveStreamsError as refused:
        return refused
    try:
        with pytest.raises(ConnectionBrokenError) as failed:
            await within(conn.request("anything"))
    finally:
        await within(conn.aclose())
    return failed.value


@pytest.mark.parametrize("scheme", ["tcp", "unix", "tls", "ws", "wss"])
async def test_a_silent_server_fails_the_client_with_a_handshake_timeout(scheme: str, tmp_path: Path) -> None:
    async with _silent(scheme, tmp_path) as url:
        error = await _first_error(url)
    assert type(error) is HandshakeTimeoutError, repr(error)
    said = str(error)
    assert said.startswith(f"handshake timeout (no serverHello within {WAIT:g} s): {url} "), said
    assert "handshake_timeout" in said and "it may not be an RS.io server" in said, said
    assert said.endswith(SILENT_HINT), said
    if scheme in ("tls", "ws", "wss"):  # the opening took the whole bound
        assert isinstance(error.__cause__, TimeoutError)
        steps = {"tls": "TCP connect, TLS handshake", "ws": "TCP connect, HTTP upgrade"}
        assert f"({steps.get(scheme, 'TCP connect, TLS handshake, HTTP upgrade')})" in said
    else:
        assert error.__cause__ is None


async def test_a_silent_pipe_names_the_process_at_the_other_end() -> None:
    """No URL to name: the error names the process at the other end and what it must call."""
    into_us, from_them = os.pipe()
    into_them, from_us = os.pipe()
    ends = [from_them, into_them]
    try:
        conn = await connect_pipe(into_us, from_us, handshake_timeout=WAIT)
        with pytest.raises(HandshakeTimeoutError) as failed:
            await within(conn.request("anything"))
        while ends:  # the other end goes (the client's lingering close ends at once, not at its bound)
            os.close(ends.pop())
        await within(conn.aclose())
    finally:
        for fd in ends:
            os.close(fd)
    assert str(failed.value) == (
        f"handshake timeout (no serverHello within {WAIT:g} s): the process at the other end of the pipe "
        "did not say hello (connect_pipe's handshake_timeout); it may not speak RS.io (it must call "
        "connect_pipe(0, 1, server=True, ...))"
    )


async def test_a_connect_without_a_bound_waits_past_it(tmp_path: Path) -> None:
    """``handshake_timeout=None``: no timer, no error of this kind (the caller's own bound ends it)."""
    async with _silent("tcp", tmp_path) as url:
        conn = await within(connect(url, handshake_timeout=None))
        request = asyncio.ensure_future(conn.request("anything"))
        done, _ = await asyncio.wait([request], timeout=3 * WAIT)
        assert not done
        await within(conn.aclose())
        with pytest.raises(ReactiveStreamsError) as ended:
            await within(request)
        assert not isinstance(ended.value, HandshakeTimeoutError)
