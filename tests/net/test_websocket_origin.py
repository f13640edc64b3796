"""WebSocket servers check the handshake's Origin: a browser page from elsewhere gets HTTP 403
(cross-site WebSocket hijacking), the server's own origin and clients that send none are served,
``serve(origins=...)`` allows more (docs/security.md)."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import ssl
import subprocess
import sys
from pathlib import Path

import pytest
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from rstreams.net import Server, serve
from rstreams.net._origins import check_origins, own_origins
from rstreams.net._websocket import SUBPROTOCOL
from testkit import patience
from testkit.bound import WAIT, within

EVIL = "http://evil.example"
SRC = str(Path(__file__).resolve().parents[2] / "src")


async def _hello(server: Server, origin: str | None, context: ssl.SSLContext | None) -> bytes:
    """The first message the server sends to a handshake carrying ``origin`` (its serverHello)."""
    async with ws_connect(
        server.url, subprotocols=[SUBPROTOCOL], origin=origin, ssl=context, proxy=None, open_timeout=10
    ) as ws:
        first = await ws.recv()
    assert isinstance(first, bytes)
    return first


async def _refusal(server: Server, origin: str, context: ssl.SSLContext | None) -> tuple[int, str]:
    with pytest.raises(InvalidStatus) as refused:
        await _hello(server, origin, context)
    response = refused.value.response
    return response.status_code, bytes(response.body).decode()


def _own(server: Server, name: str = "127.0.0.1") -> str:
    scheme = "https" if server.url.startswith("wss:") else "http"
    port = server.url.rsplit(":", 1)[1].partition("/")[0]
    return f"{scheme}://{name}:{port}"


@pytest.mark.asyncio
@pytest.mark.timeout(30)
@pytest.mark.parametrize("scheme", ["ws", "wss"])
@pytest.mark.parametrize("admission_share", [0.2, None], ids=["admitted", "unbudgeted"])
async def test_a_page_from_another_origin_is_refused_with_403_and_the_server_keeps_serving(
    scheme: str,
    admission_share: float | None,
    server_ssl: ssl.SSLContext,
    client_ssl: ssl.SSLContext,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A handshake from another origin gets 403 naming the option that allows it; the server's own
    origin (by any loopback name), and a client sending no Origin, are served, before and after."""
    secure = scheme == "wss"
    server = await serve(
        f"{scheme}://127.0.0.1:0/rsio",
        {},
        ssl=server_ssl if secure else None,
        admission_share=admission_share,
    )
    context = client_ssl if secure else None
    try:
        hello = await _hello(server, None, context)
        with caplog.at_level(logging.INFO, logger="rstreams.net.websocket"):
            status, body = await _refusal(server, EVIL, context)
        assert status == 403
        assert f"origins=['{EVIL}']" in body and f"rstreams serve --origin {EVIL}" in body
        said = [record.getMessage() for record in caplog.records if record.name == "rstreams.net.websocket"]
        assert said == [
            f"refused a WebSocket handshake from a page at origin {EVIL} (HTTP 403); "
            f"to allow it, serve with origins=['{EVIL}'] or rstreams serve --origin {EVIL}"
        ]
        assert await _hello(server, _own(server), context) == hello
        assert await _hello(server, _own(server, "localhost"), context) == hello
        assert await _hello(server, _own(server, "[::1]"), context) == hello
        assert await _hello(server, None, context) == hello
        # the own origin is the scheme's: an http:// page may not use a wss:// server, nor the reverse
        other = (
            _own(server).replace("https://", "http://") if secure else _own(server).replace("http:", "https:")
        )
        assert (await _refusal(server, other, context))[0] == 403
    finally:
        await server.aclose()


@pytest.mark.asyncio
@pytest.mark.timeout(30)
@pytest.mark.parametrize("scheme", ["ws", "wss"])
async def test_origins_allows_the_pages_named_and_star_allows_every_one(
    scheme: str, server_ssl: ssl.SSLContext, client_ssl: ssl.SSLContext
) -> None:
    secure = scheme == "wss"
    context = client_ssl if secure else None
    url = f"{scheme}://127.0.0.1:0/rsio"
    server = await serve(url, {}, ssl=server_ssl if secure else None, origins=["HTTPS://App.Example:443/"])
    try:
        hello = await _hello(server, "https://app.example", context)
        assert await _hello(server, _own(server), context) == hello
        assert (await _refusal(server, "https://app.example:8443", context))[0] == 403
        assert (await _refusal(server, EVIL, context))[0] == 403
    finally:
        await server.aclose()
    server = await serve(url, {}, ssl=server_ssl if secure else None, origins=["*"])
    try:
        await _hello(server, EVIL, context)
        await _hello(server, "null", context)
    finally:
        await server.aclose()


@pytest.mark.parametrize(
    ("origins", "problem"),
    [
        (["app.example"], "it needs http:// or https:// and a host"),
        (["ws://app.example"], "it needs http:// or https:// and a host"),
        (["https://"], "it needs http:// or https:// and a host"),
        (["https://app.example/page"], "an origin has no path, query or fragment"),
        (["https://app.example?x=1"], "an origin has no path, query or fragment"),
        (["https://user@app.example"], "an origin has no user name or password"),
        (["https://app.example:99999"], "Port out of range"),
        (["null"], "it needs http:// or https:// and a host"),
    ],
)
def test_a_malformed_origin_is_refused_with_what_an_origin_is(origins: list[str], problem: str) -> None:
    with pytest.raises(ValueError, match="an origin is SCHEME://HOST") as bad:
        check_origins(origins)
    assert problem in str(bad.value) and repr(origins[0]) in str(bad.value)


def test_origins_are_compared_as_browsers_send_them() -> None:
    assert check_origins(None) == ()
    assert check_origins(["http://A.example:80", "https://[::1]:8443/", "https://b.example:443"]) == (
        "http://a.example",
        "https://[::1]:8443",
        "https://b.example",
    )
    assert check_origins(["https://a.example", "*"]) is None
    with pytest.raises(TypeError, match="a list of origins"):
        check_origins("https://a.example")  # (its letters)
    with pytest.raises(TypeError, match="an origin is a str"):
        check_origins([b"https://a.example"])  # type: ignore[list-item]
    assert own_origins("127.0.0.1", 9031, secure=False) == [
        "http://127.0.0.1:9031",
        "http://localhost:9031",
        "http://[::1]:9031",
    ]
    assert own_origins("0.0.0.0", 443, secure=True) == [
        "https://0.0.0.0",
        "https://localhost",
        "https://127.0.0.1",
        "https://[::1]",
    ]
    assert own_origins("rs.example", 9000, secure=True) == ["https://rs.example:9000"]


@pytest.mark.asyncio
@pytest.mark.timeout(30)
async def test_origins_is_for_websocket_servers_only() -> None:
    with pytest.raises(ValueError, match="origins= applies to ws:// and wss:// servers"):
        await serve("tcp://127.0.0.1:0", {}, origins=["https://app.example"])
    with pytest.raises(ValueError, match=re.escape("'https://app.example/x'")):
        await serve("ws://127.0.0.1:0/rsio", {}, origins=["https://app.example/x"])


def _rstreams(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", *args],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("args", "said"),
    [
        (
            ["ws://127.0.0.1:0/rsio", "--origin", "app.example"],
            "--origin: origin 'app.example': it needs http://",
        ),
        (["ws://127.0.0.1:0/rsio", "--origin", "https://a.example/x"], "an origin has no path"),
        (
            ["tcp://127.0.0.1:0", "--origin", "https://a.example"],
            "--origin applies to ws:// and wss:// servers",
        ),
        (
            ["tcp://127.0.0.1:0", "log", "--origin", "https://a.example"],
            "--origin applies to ws:// and wss://",
        ),
    ],
)
def test_cli_serve_refuses_a_malformed_or_useless_origin(
    args: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In this process (the command's main; the serving tests below start the command itself):
    refused before anything is served."""
    from rstreams.cli import main

    status = main(["serve", *args])
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert said in err and err.startswith("rstreams serve: "), err


async def _opened(url: str, origin: str, pid: int) -> ClientConnection:
    """A WebSocket opened at ``url`` by a handshake carrying ``origin``, bounded by the own time of
    the server process ``pid`` and ours (testkit.bound), not by websockets' own timer."""
    opening = ws_connect(url, subprotocols=[SUBPROTOCOL], origin=origin, proxy=None, open_timeout=None)
    return await within(opening, WAIT, [pid])


@pytest.mark.asyncio
@pytest.mark.timeout(60)
@pytest.mark.parametrize("form", [[], ["log"]], ids=["publishers", "replay-log"])
async def test_cli_serve_origin_allows_that_page_only(form: list[str]) -> None:
    """`rstreams serve ws://... --origin URL` (both forms): that origin is served, another refused."""
    process = _rstreams("serve", "ws://127.0.0.1:0/rsio", *form, "--origin", "https://app.example:8443")
    try:
        assert process.stdout is not None
        line = await asyncio.to_thread(process.stdout.readline)
        found = re.search(r" on (ws://\S+)", line)
        assert found is not None, line
        url = found.group(1)
        async with await _opened(url, "https://app.example:8443", process.pid):
            pass
        with pytest.raises(InvalidStatus) as refused:
            await _opened(url, EVIL, process.pid)
        assert refused.value.response.status_code == 403
        assert f"rstreams serve --origin {EVIL}" in bytes(refused.value.response.body).decode()
    finally:
        process.terminate()
        patience.communicate(process, 30)
