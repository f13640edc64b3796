"""A ``tls://`` server bounds each connection's TLS handshake by ``handshake_timeout``, as a
``wss://`` server bounds its opening: a peer that connects and never sends its TLS hello is
closed after those seconds, not after asyncio's own 60 s, with the server's admission budget
(its default) or without one (``admission_share=None``, asyncio's accepting)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

import rstreams
from rstreams.net import serve
from testkit.tls import TestCA, server_context

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


@pytest.mark.parametrize("share", [0.2, None], ids=["admission", "asyncio"])
async def test_a_silent_peer_is_closed_after_the_handshake_timeout(
    tmp_path: Path, share: float | None
) -> None:
    ca = TestCA.make(tmp_path, "bound CA")
    context = server_context(ca.issue("server", san=("127.0.0.1",)))
    offer = {"one": rstreams.just(b"1")}
    async with await serve(
        "tls://127.0.0.1:0", offer, ssl=context, handshake_timeout=0.2, admission_share=share
    ) as server:
        port = int(server.url.rsplit(":", 1)[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        started = time.monotonic()
        try:
            ended = await asyncio.wait_for(reader.read(1), 20)  # asyncio's own bound: 60 s
        except ConnectionResetError:
            ended = b""
        assert ended == b"" and time.monotonic() - started < 20
        writer.close()
