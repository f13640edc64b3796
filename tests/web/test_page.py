"""LivePage's HTTP side and `rstreams serve --web`: the files, config.json, bad requests, the CLI."""

from __future__ import annotations

import asyncio
import errno
import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

import rstreams
import rstreams.web._http as http
from rstreams.net import connect
from rstreams.replay import ReplayLog
from rstreams.web import (
    STATIC_FILES,
    LivePage,
    PageNotRunningError,
    StaticFileMissingError,
    UnknownStaticFileError,
    page_for_logs,
    static_file,
)
from testkit import patience
from testkit.bound import HARD, WAIT, family, within
from testkit.net import assert_collected_closes_its_loop

STATIC = Path(rstreams.__file__).parent / "web" / "static"
JS_SRC = Path(__file__).resolve().parents[2] / "js" / "src"


@pytest.fixture
def page() -> Iterator[LivePage]:
    offer = {"results": rstreams.range(3).map(lambda i: json.dumps({"sensor": "s", "avg": i}).encode())}
    with LivePage(offer, publisher="results", title="t", window=8) as live:
        yield live


def get(url: str, method: str = "GET", children: Iterable[int] = ()) -> tuple[int, str, bytes]:
    """The status, Content-Type and body, bounded by the own time of this process (where a
    page's server is a thread) and of ``children`` (where it is a child)."""
    status, headers, body = patience.urlopen(urllib.request.Request(url, method=method), WAIT, children)
    return status, headers["Content-Type"], body


def raw(page: LivePage, data: bytes) -> bytes:
    """Send ``data`` as the request and read the whole answer (bounded as :func:`get`)."""
    host, port = page.url.removeprefix("http://").rstrip("/").rsplit(":", 1)

    def exchange() -> bytes:
        with socket.create_connection((host, int(port)), timeout=HARD * WAIT) as sock:
            sock.sendall(data)
            chunks = []
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        return b"".join(chunks)

    return patience.call(exchange)


@pytest.mark.timeout(30)
def test_files_and_config(page: LivePage) -> None:
    """Every static file is served with its type; / is the page; config.json says where RS.io is."""
    kinds = {".html": "text/html", ".js": "text/javascript", ".css": "text/css"}
    for name in STATIC_FILES:
        status, kind, body = get(page.url + name)
        assert status == 200 and kind.startswith(kinds[name[name.rfind(".") :]])
        assert body == static_file(name)
        source = JS_SRC / name if name.startswith("rsio") else STATIC / name  # RS.io modules: js/src
        assert body == source.read_bytes()
    assert get(page.url)[2] == static_file("index.html")
    status, kind, body = get(page.url + "config.json")
    assert status == 200 and kind.startswith("application/json")
    assert json.loads(body) == {"url": page.ws_url, "publisher": "results", "title": "t", "window": 8}
    assert page.ws_url.startswith("ws://127.0.0.1:") and page.ws_url.endswith("/rsio")


@pytest.mark.timeout(30)
def test_bad_requests_get_their_status(page: LivePage) -> None:
    """Unknown paths 404, other methods 405, a garbled line 400, a huge head 431; HEAD has no body."""
    assert get(page.url + "secret.py")[0] == 404
    assert get(page.url + "../pyproject.toml")[0] == 404
    assert get(page.url, method="POST")[0] == 405
    assert raw(page, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400 ")
    assert raw(page, b"GET / HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n").startswith(b"HTTP/1.1 431 ")
    head = raw(page, b"HEAD /rsio.js HTTP/1.1\r\nHost: x\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and head.endswith(b"\r\n\r\n")


@pytest.mark.timeout(30)
def test_static_file_names_the_files_there_are() -> None:
    """An unknown name is an UnknownStaticFileError (a KeyError) whose message lists the names
    there are, as written (not a KeyError's quoted repr); over HTTP such a path is a 404."""
    with pytest.raises(UnknownStaticFileError) as raised:
        static_file("secret.py")
    assert isinstance(raised.value, KeyError)
    names = ", ".join(STATIC_FILES)
    assert str(raised.value) == f"static_file: no static file 'secret.py'; there are {names}"


@pytest.mark.timeout(30)
def test_a_broken_install_says_what_is_missing_and_how_to_reinstall(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An RS.io module in neither the package nor js/src (the checkout's js/src emptied) is a
    StaticFileMissingError (a FileNotFoundError, errno ENOENT) naming the file, both places and
    the reinstall; a LivePage fails with it when built, before it serves anything."""
    monkeypatch.setattr(http, "_CHECKOUT_JS", tmp_path)
    with pytest.raises(StaticFileMissingError) as raised:
        static_file("rsio.js")
    error = raised.value
    assert isinstance(error, FileNotFoundError)
    assert error.errno == errno.ENOENT
    assert error.filename == "rsio.js"
    message = str(error)
    assert message.startswith("the live page's rsio.js is missing: it is neither in the installed package (")
    assert f"nor in a source checkout's js/src/ ({tmp_path / 'rsio.js'})" in message
    assert "pip install --force-reinstall rstreams" in message and "git checkout -- js/src" in message
    assert static_file("index.html") == (STATIC / "index.html").read_bytes()  # the package's own still read
    with pytest.raises(StaticFileMissingError, match=r"^the live page's rsio\.js is missing: "):
        LivePage({"results": rstreams.range(3)}, publisher="results")


@pytest.mark.timeout(30)
def test_page_data_path_is_rsio_over_websocket(page: LivePage) -> None:
    """What the page subscribes to is reachable at config.json's URL with the Python client."""

    async def read() -> list[bytes]:
        conn = await connect(page.ws_url)
        try:
            return [item async for item in conn.publisher("results")]
        finally:
            await conn.aclose()

    rows = asyncio.run(read())
    assert [json.loads(row)["avg"] for row in rows] == [0, 1, 2]


@pytest.mark.timeout(30)
def test_page_for_logs_checks_its_arguments() -> None:
    """The address is HOST:PORT and the charted publisher must be one of the logs."""
    log = ReplayLog("a", capacity=10)
    with pytest.raises(ValueError, match="HOST:PORT"):
        page_for_logs("localhost", {"a": log}, publisher="a")
    with pytest.raises(ValueError, match="one of the logs"):
        page_for_logs("127.0.0.1:0", {"a": log}, publisher="b")
    with pytest.raises(ValueError, match="window"):
        LivePage({}, window=0)


@pytest.mark.timeout(60)
def test_cli_serve_web_serves_the_page_for_the_log() -> None:
    """`rstreams serve URL NAME --web HOST:0` prints the page's URL; the page's server replays the lines."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", "tcp://127.0.0.1:0", "lines", "--web", "127.0.0.1:0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(b'{"sensor": "a", "value": 1.5}\n{"sensor": "b", "value": 2.5}\n')
        process.stdin.flush()
        first = patience.child_line(process, "its serving line").decode()
        second = patience.child_line(process, "its page's line").decode()
        assert first.startswith("serving 'lines'"), first
        assert second.startswith("live page: http://127.0.0.1:"), second
        url = second.split()[2]
        config = json.loads(get(url + "config.json", children=[process.pid])[2])
        assert config["publisher"] == "lines"

        async def read() -> list[bytes]:
            conn = await within(connect(config["url"], handshake_timeout=None), WAIT, [process.pid])
            try:
                return [item async for item in conn.publisher("lines?from=0&to=2")]
            finally:
                await conn.aclose()

        assert [json.loads(row)["value"] for row in asyncio.run(read())] == [1.5, 2.5]
    finally:
        process.terminate()
        patience.communicate(process, 20)


@pytest.mark.timeout(60)
def test_web_needs_no_pyspark_and_imports_websockets_only_when_serving() -> None:
    """`import rstreams.web` works with pyspark and pyarrow blocked, and leaves websockets unimported."""
    code = (
        "import sys\n"
        "sys.modules['pyspark'] = sys.modules['pyarrow'] = None\n"
        "import rstreams.web\n"
        "print('websockets' in sys.modules)\n"
    )
    done = patience.run([sys.executable, "-c", code], 50, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.timeout(30)
def test_a_taken_port_is_an_oserror_and_leaves_nothing_running(page: LivePage) -> None:
    """Starting a second page on a port in use raises OSError; its loop thread is gone."""
    port = int(page.url.rstrip("/").rsplit(":", 1)[1])
    second = LivePage({}, port=port)
    with pytest.raises(OSError, match="address already in use"):
        second.start()
    assert not second._thread.is_alive() and second.loop.is_closed()


@pytest.mark.timeout(30)
def test_the_addresses_of_a_page_not_running_say_to_start_it() -> None:
    """Before start() and after stop() a page has no ports: url and ws_url raise (also under -O)."""
    live = LivePage({}, port=0)
    for call in ("url", "ws_url"):
        starting = rf"^LivePage\.{call}: the page is not running .*\.start\(\)"
        with pytest.raises(PageNotRunningError, match=starting):
            getattr(live, call)
    live.start()
    assert live.url.startswith("http://127.0.0.1:") and live.ws_url.endswith("/rsio")
    live.stop()
    with pytest.raises(PageNotRunningError, match="not started yet, or stopped"):
        _ = live.ws_url
    assert live.connections == 0


async def _ws_status(url: str, origin: str | None) -> int:
    """101 when a handshake carrying ``origin`` opens a WebSocket at ``url``, else the HTTP status."""
    from websockets.asyncio.client import connect as ws_connect
    from websockets.exceptions import InvalidStatus

    try:
        opening = ws_connect(url, subprotocols=["rsio.v0"], origin=origin, proxy=None, open_timeout=None)
        connection = await within(opening, WAIT, family())  # (the page's server: a thread of this process)
        await within(connection.close(), WAIT, family())
        return 101
    except InvalidStatus as refused:
        return int(refused.response.status_code)


@pytest.mark.timeout(30)
def test_the_page_websocket_accepts_the_page_and_refuses_other_origins(page: LivePage) -> None:
    """The page's RS.io server serves its own page (by any loopback name) and clients without an
    Origin; a page from elsewhere gets 403 (cross-site WebSocket hijacking: docs/security.md)."""
    port = page.url.rstrip("/").rsplit(":", 1)[1]
    asked = [page.url.rstrip("/"), f"http://localhost:{port}", None, "http://evil.example", page.ws_url]
    statuses = [asyncio.run(_ws_status(page.ws_url, origin)) for origin in asked]
    assert statuses == [101, 101, 101, 403, 403]  # (the last: a ws:// URL is no page's origin)


@pytest.mark.timeout(30)
def test_the_page_websocket_accepts_the_origins_given() -> None:
    offer = {"x": rstreams.just(b"{}")}
    with LivePage(offer, publisher="x", origins=["https://dash.example"]) as live:
        assert asyncio.run(_ws_status(live.ws_url, "https://dash.example")) == 101
        assert asyncio.run(_ws_status(live.ws_url, "http://evil.example")) == 403
    with LivePage(offer, publisher="x", origins=["*"]) as live:
        assert asyncio.run(_ws_status(live.ws_url, "http://evil.example")) == 101
    with pytest.raises(ValueError, match="an origin has no path"):
        LivePage(offer, publisher="x", origins=["https://dash.example/page"])


def test_a_page_never_started_leaves_no_open_loop() -> None:
    """A page built and never started closes its loop on stop(), and when collected without
    one: nothing for -X dev to report as an unclosed event loop (a ResourceWarning)."""
    stopped = LivePage({})
    stopped.stop()
    assert stopped.loop.is_closed()
    assert_collected_closes_its_loop(lambda: LivePage({}))
