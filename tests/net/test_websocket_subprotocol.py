"""A WebSocket server answers at the HTTP handshake, before any WebSocket frame (PROTOCOL.md §1):
404 at a path it does not serve, 400 naming ``rsio.v0`` and §1 to a handshake that does not
offer it, and 101 selecting ``rsio.v0`` when it is offered, alone or among others."""

from __future__ import annotations

import asyncio

import pytest

from rstreams.net import serve

KEY = "dGhlIHNhbXBsZSBub25jZQ=="
MISSING = "RS.io needs the WebSocket subprotocol rsio.v0 (PROTOCOL.md §1); the handshake offered {}\n"


async def _answer(url: str, path: str, *offers: str) -> tuple[str, dict[str, str], bytes]:
    """The server's answer to a raw upgrade at ``path`` with one Sec-WebSocket-Protocol header per
    offer: its status line, its headers (lower-case names) and, for a refusal, its body to the end."""
    host, _, port = url.removeprefix("ws://").partition("/")[0].rpartition(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    try:
        lines = [f"GET {path} HTTP/1.1", f"Host: {host}:{port}", "Upgrade: websocket", "Connection: Upgrade"]
        lines += [f"Sec-WebSocket-Key: {KEY}", "Sec-WebSocket-Version: 13"]
        lines += [f"Sec-WebSocket-Protocol: {offer}" for offer in offers]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
        status, *fields = head.rstrip("\r\n").split("\r\n")
        headers = {name.lower(): value for name, _, value in (f.partition(": ") for f in fields)}
        body = b"" if " 101 " in status else await reader.read()  # a refusal closes after its body
        return status, headers, body
    finally:
        writer.close()


@pytest.mark.asyncio
@pytest.mark.timeout(30)
@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
async def test_the_handshake_is_refused_over_http_without_the_subprotocol_or_at_another_path(
    admission_share: float | None,
) -> None:
    async with await serve("ws://127.0.0.1:0/rsio", {}, admission_share=admission_share) as server:
        refused = [((), "none"), (("chat, superchat",), "chat, superchat"), (("chat", "v2"), "chat, v2")]
        for offers, said in refused:
            status, headers, body = await _answer(server.url, "/rsio", *offers)
            assert status == "HTTP/1.1 400 Bad Request", offers
            assert headers["content-type"] == "text/plain; charset=utf-8"
            assert body.decode() == MISSING.format(said)
        for path in ["/", "/other", "/rsio/more"]:
            status, headers, body = await _answer(server.url, path, "rsio.v0")
            assert (status, body) == ("HTTP/1.1 404 Not Found", b"RS.io is served at /rsio\n"), path


@pytest.mark.asyncio
@pytest.mark.timeout(30)
@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
async def test_an_offer_of_rsio_v0_alone_or_among_others_is_accepted_and_selected(
    admission_share: float | None,
) -> None:
    async with await serve("ws://127.0.0.1:0/rsio", {}, admission_share=admission_share) as server:
        for path, offers in [
            ("/rsio", ("rsio.v0",)),
            ("/rsio", ("chat, rsio.v0",)),
            ("/rsio", ("chat", "rsio.v0")),
            ("/rsio?x=1", ("rsio.v0, chat",)),
        ]:
            status, headers, _ = await _answer(server.url, path, *offers)
            assert status == "HTTP/1.1 101 Switching Protocols", (path, offers)
            assert headers["sec-websocket-protocol"] == "rsio.v0", (path, offers)
