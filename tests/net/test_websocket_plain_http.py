"""Plain HTTP at a WebSocket server (PROTOCOL.md §1): a GET that asks for no upgrade to
WebSocket, as ``curl http://host:port/rsio`` or a browser's address bar sends, is answered 426
Upgrade Required with ``Upgrade: websocket`` and a plain-text body naming the path, ``rsio.v0``
and §1; at another path, 404 as a handshake there is. The Java and JavaScript servers answer
the same (java PlainHttpTest, js plain-http.test.mjs, both also against this server)."""

from __future__ import annotations

import asyncio
import http.client

import pytest

from rstreams.net import serve

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

NOT_UPGRADED = (
    "RS.io is served at /rsio over WebSocket with the subprotocol rsio.v0 (PROTOCOL.md §1); "
    "this request asked for no upgrade to WebSocket\n"
)


def _get(url: str, path: str, headers: dict[str, str]) -> tuple[int, dict[str, str], str]:
    """An HTTP client's GET of ``path`` at the server of ``url``: status, headers (lower-case
    names) and body."""
    host, _, port = url.removeprefix("ws://").partition("/")[0].rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read().decode()
    finally:
        conn.close()


@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Upgrade": "websocket"},  # no Connection: Upgrade
        {"Connection": "Upgrade"},  # no Upgrade
        {"Origin": "https://elsewhere.example"},  # an origin not allowed: not asked for a WebSocket first
        {"Sec-WebSocket-Protocol": "chat"},
    ],
    ids=["bare", "upgrade-only", "connection-only", "foreign-origin", "other-subprotocol"],
)
async def test_a_get_asking_for_no_upgrade_is_answered_426_naming_rsio_v0(
    admission_share: float | None, headers: dict[str, str]
) -> None:
    async with await serve("ws://127.0.0.1:0/rsio", {}, admission_share=admission_share) as server:
        for path in ["/rsio", "/rsio?x=1"]:
            status, got, body = await asyncio.to_thread(_get, server.url, path, headers)
            assert status == 426, (path, body)
            assert got["upgrade"] == "websocket"
            assert got["content-type"] == "text/plain; charset=utf-8"
            assert body == NOT_UPGRADED


@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
async def test_a_get_at_another_path_is_answered_404(admission_share: float | None) -> None:
    async with await serve("ws://127.0.0.1:0/rsio", {}, admission_share=admission_share) as server:
        for path in ["/", "/other", "/rsio/more"]:
            status, _, body = await asyncio.to_thread(_get, server.url, path, {})
            assert (status, body) == (404, "RS.io is served at /rsio\n"), path
