"""A server closing aborts the transports still in their TLS handshake (PROTOCOL.md §9.1).

A ``tls://`` or ``wss://`` peer whose TLS handshake is under way when ``Server.aclose()`` is
called has no RS.io conversation yet: the server aborts its transport at once, as the kernel
resets a connection still in the listen backlog when the listener closes, and ``aclose()``
returns with it closed.
Nothing is said to it afterwards: completing the handshake later finds the transport gone (it
used to come up then and be said goodbye after ``aclose()`` had returned). The peer here is a
TLS client over a raw socket that has read the server's whole handshake flight and stalls
before sending its own last one (its Finished), so the server waits for it; no time passes
in the test but that of the bounded waits.
"""

from __future__ import annotations

import asyncio
import ssl

import pytest

import rstreams
from rstreams.net import Server, serve
from rstreams.net._admission import DEFAULT_ADMISSION_SHARE
from testkit.bound import within
from testkit.net import StalledPeer

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60), pytest.mark.usefixtures("nothing_escapes")]

RESUMES = [False, True]
RESUME_IDS = ["plain", "resume"]
URLS = ["tls://127.0.0.1:0", "wss://127.0.0.1:0/rsio"]
SCHEMES = ["tls", "wss"]


async def _server(url: str, server_ssl: ssl.SSLContext, resume: bool, admission: bool) -> Server:
    share = DEFAULT_ADMISSION_SHARE if admission else None  # the default budget, or asyncio's accepting
    return await serve(
        url, {"greeting": rstreams.just(b"hello")}, ssl=server_ssl, resume=resume, admission_share=share
    )


@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
@pytest.mark.parametrize("url", URLS, ids=SCHEMES)
async def test_aclose_aborts_a_tls_handshake_under_way(
    url: str, resume: bool, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    server = await _server(url, server_ssl, resume, admission=True)
    client = await rstreams.net.connect(server.url, ssl=client_ssl, resume=resume)
    assert await within(client.request("greeting")) == b"hello"
    peer = await StalledPeer.open(server.url, client_ssl)
    await within(server.aclose())
    assert len(server._doorway) == 0 and server._doorway.handshakes == 0
    assert client.closed
    try:
        assert await peer.ended()  # already: aclose() returned with the transport closed
        peer.writer.write(peer.finished)  # the handshake's end, too late: nothing answers it
        assert await peer.ended()
    finally:
        peer.writer.close()
    await within(client.aclose())


@pytest.mark.parametrize("resume", RESUMES, ids=RESUME_IDS)
@pytest.mark.parametrize("url", URLS, ids=SCHEMES)
async def test_a_tls_transport_accepted_as_the_server_closes_is_aborted(
    url: str, resume: bool, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    """Accepted after close() (its accept was under way): aborted before its handshake goes on."""
    server = await _server(url, server_ssl, resume, admission=True)
    server._doorway.close()  # as close() leaves it, with the listener still accepting
    with pytest.raises(ConnectionError):
        await StalledPeer.open(server.url, client_ssl)
    await within(server.aclose())
    assert server._doorway.handshakes == 0


@pytest.mark.parametrize("url", URLS, ids=SCHEMES)
async def test_aclose_aborts_a_tls_handshake_accepted_without_a_budget(
    url: str, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    """Without an admission budget asyncio's own server accepts: the same abort. In debug mode
    asyncio reports the cancelled handshake, as it reports every failed one. On another event
    loop (uvloop, ``RSTREAMS_TEST_LOOP=uvloop``) the server accepts itself, as with a budget:
    the same abort, nothing reported."""
    server = await _server(url, server_ssl, False, admission=False)
    peer = await StalledPeer.open(server.url, client_ssl)
    reported: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: reported.append(context))
    debug = loop.get_debug()
    loop.set_debug(True)
    try:
        await within(server.aclose())
    finally:
        loop.set_debug(debug)
        loop.set_exception_handler(None)
    assert server._doorway.handshakes == 0
    try:
        assert await peer.ended()
        peer.writer.write(peer.finished)
        assert await peer.ended()
    finally:
        peer.writer.close()
    asyncio_accepted = isinstance(loop, asyncio.BaseEventLoop)
    assert [(c["message"], type(c["exception"])) for c in reported] == [
        ("Error on transport creation for incoming connection", asyncio.CancelledError)
    ] * asyncio_accepted
