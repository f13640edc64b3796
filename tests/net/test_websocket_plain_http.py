"""Plain HTTP at a WebSocket server (PROTOCOL.md §1): a GET that asks for no upgrade to
WebSocket, as ``curl http://host:port/rsio`` or a browser's address bar sends, is answered 426
Upgrade Required with ``Upgrade: websocket`` and a plain-text body naming the path, ``rsio.v0``
and §1; at another path, 404 as a handshake there is. So is a request that is not a GET asking
for an upgrade to WebSocket: a POST, with or without the WebSocket headers (websockets' 405),
and a GET asking for another upgrade (``Upgrade: h2c``). A HEAD gets the GET's status and
headers without the body. The Java and JavaScript servers answer
the same (java PlainHttpTest, js plain-http.test.mjs, both also against this server)."""

from __future__ import annotations

import asyncio
import http.client
import socket

import pytest

from rstreams.net import serve

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

NOT_UPGRADED = (
    "RS.io is served at /rsio over WebSocket with the subprotocol rsio.v0 (PROTOCOL.md §1); "
    "this request is not a GET asking for an upgrade to WebSocket\n"
)


def _send(
    url: str, method: str, headers: dict[str, str], path: str = "/rsio"
) -> tuple[int, dict[str, str], str]:
    """An HTTP client's ``method`` request of ``path`` at the server of ``url``: status,
    headers (lower-case names) and body."""
    host, _, port = url.removeprefix("ws://").partition("/")[0].rpartition(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    try:
        conn.request(method, path, body=b"" if method != "GET" else None, headers=headers)
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
            status, got, body = await asyncio.to_thread(_send, server.url, "GET", headers, path)
            assert status == 426, (path, body)
            assert got["upgrade"] == "websocket"
            assert got["content-type"] == "text/plain; charset=utf-8"
            assert body == NOT_UPGRADED


@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
async def test_a_get_at_another_path_is_answered_404(admission_share: float | None) -> None:
    async with await serve("ws://127.0.0.1:0/rsio", {}, admission_share=admission_share) as server:
        for path in ["/", "/other", "/rsio/more"]:
            status, _, body = await asyncio.to_thread(_send, server.url, "GET", {}, path)
            assert (status, body) == (404, "RS.io is served at /rsio\n"), path


WEBSOCKET_HEADERS = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
    "Sec-WebSocket-Protocol": "rsio.v0",
}


@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
@pytest.mark.parametrize(
    ("method", "headers"),
    [
        ("POST", {}),
        ("POST", WEBSOCKET_HEADERS),  # websockets' own answer: 405
        ("PUT", WEBSOCKET_HEADERS),
        (
            "GET",
            {
                "Connection": "Upgrade, HTTP2-Settings",
                "Upgrade": "h2c",
                "HTTP2-Settings": "AAMAAABkAARAAAAAAAIAAAAA",
            },
        ),
    ],
    ids=["post", "post-upgrade", "put-upgrade", "h2c"],
)
async def test_a_request_that_is_not_a_websocket_get_is_answered_426_too(
    admission_share: float | None, method: str, headers: dict[str, str]
) -> None:
    async with await serve("ws://127.0.0.1:0/rsio", {}, admission_share=admission_share) as server:
        status, got, body = await asyncio.to_thread(_send, server.url, method, headers)
        assert (status, body) == (426, NOT_UPGRADED)
        assert got["upgrade"] == "websocket" and "allow" not in got, got


def _raw(url: str, request: bytes) -> bytes:
    """Everything the server at ``url`` writes in answer to ``request``, up to its close."""
    host, _, port = url.removeprefix("ws://").partition("/")[0].rpartition(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
        return answer


@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
async def test_a_head_gets_the_headers_of_the_get_and_no_body(admission_share: float | None) -> None:
    """RFC 9110 §9.3.2: the answer to a HEAD is the GET's status and headers, its
    ``Content-Length`` that of the body a GET gets, and no body."""
    async with await serve("ws://127.0.0.1:0/rsio", {}, admission_share=admission_share) as server:
        for path, status, body in [
            ("/rsio", b"426", NOT_UPGRADED.encode()),
            ("/other", b"404", b"RS.io is served at /rsio\n"),
        ]:
            head = f"HEAD {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
            answer = await asyncio.to_thread(_raw, server.url, head)
            top, _, rest = answer.partition(b"\r\n\r\n")
            assert top.split(b"\r\n")[0].split(b" ")[1] == status, answer
            assert f"content-length: {len(body)}".encode() in top.lower().split(b"\r\n"), answer
            assert rest == b"", answer  # no body
            get = await asyncio.to_thread(_raw, server.url, head.replace(b"HEAD", b"GET", 1))
            assert get.endswith(b"\r\n\r\n" + body), get
