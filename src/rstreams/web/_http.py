"""A tiny HTTP/1.1 server for the live page's static files: GET and HEAD, nothing else.

The page is a handful of small files shipped inside the package (``static/``) plus one
generated answer, ``/config.json``, which tells the page where RS.io is served and what
to subscribe to. One request per connection (``Connection: close``): a browser opens a
few, which is all the page needs. Every request is bounded: 16 KiB of head, 10 s to send it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import mimetypes
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

from rstreams.errors import ReactiveStreamsError

__all__ = ["STATIC_FILES", "HttpServer", "StaticFileMissingError", "UnknownStaticFileError", "static_file"]

MAX_HEAD = 16 * 1024
"""Bytes of request line and headers read before answering 431."""
HEAD_TIMEOUT = 10.0
"""Seconds a client has to send its request head."""

STATIC_FILES = (
    "index.html",
    "live.js",
    "live.css",
    "rsio.js",
    "rsio-wire.js",
    "rsio-subscribe.js",
    "rsio-publish.js",
    "rsio-resume.js",
    "rsio-codes.js",
    "rsio-messages.js",
    "rsio-content.js",
    "rsio-channels.js",
    "rsio-metadata.js",
    "rsio-url.js",
)
"""The files served from ``static/`` (the page, its script and style, the RS.io client)."""

_TYPES = {".js": "text/javascript", ".html": "text/html", ".css": "text/css", ".json": "application/json"}


_CHECKOUT_JS = Path(__file__).resolve().parents[3] / "js" / "src"
"""Where the RS.io modules are in a source checkout (an editable install, ``PYTHONPATH=src``)."""


class UnknownStaticFileError(ReactiveStreamsError, KeyError):
    """:func:`static_file` was asked for a name that is not one of :data:`STATIC_FILES`; the
    message names it and lists the names there are."""

    def __init__(self, name: str) -> None:
        super().__init__(f"static_file: no static file {name!r}; there are {', '.join(STATIC_FILES)}")

    def __str__(self) -> str:  # the message as written, not a KeyError's repr of it
        return str(self.args[0])


class StaticFileMissingError(ReactiveStreamsError, FileNotFoundError):
    """One of :data:`STATIC_FILES` is neither in the installed package nor in a source checkout:
    the install is broken. Raised by :func:`static_file`, and so when a :class:`LivePage` is
    built (it reads every file then, before serving); the message names the file, the two places
    looked in, and how to reinstall."""

    def __init__(self, name: str, packaged: str, checkout: Path) -> None:
        super().__init__(
            errno.ENOENT,
            f"the live page's {name} is missing: it is neither in the installed package ({packaged}) "
            f"nor in a source checkout's js/src/ ({checkout}); the install is incomplete: reinstall "
            "rstreams (pip install --force-reinstall rstreams), or in a source checkout restore "
            f"js/src/{name} (git checkout -- js/src)",
        )
        self.filename = name

    def __str__(self) -> str:  # the message alone, without OSError's "[Errno 2]"
        return str(self.strerror)


def static_file(name: str) -> bytes:
    """The bytes of one of :data:`STATIC_FILES`: from the installed package, where a wheel has the
    RS.io modules (``rsio*.js``, copied from ``js/src`` when the wheel is built), else, in a
    source checkout, from ``js/src`` itself: the JavaScript package's files are the only copy.

    Raises:
        UnknownStaticFileError: ``name`` is not one of :data:`STATIC_FILES` (a ``KeyError``).
        StaticFileMissingError: the file is in neither place: a broken install (a ``FileNotFoundError``).
    """
    if name not in STATIC_FILES:
        raise UnknownStaticFileError(name)
    packaged = resources.files("rstreams.web") / "static" / name
    if packaged.is_file():
        return packaged.read_bytes()
    checkout = _CHECKOUT_JS / name
    if not checkout.is_file():
        raise StaticFileMissingError(name, str(packaged), checkout)
    return checkout.read_bytes()


class HttpServer:
    """Serves :data:`STATIC_FILES` at ``/NAME`` (``/``: ``index.html``), ``config()`` at ``/config.json``."""

    def __init__(self, config: Callable[[], dict[str, Any]]) -> None:
        self._config = config
        self._files = {f"/{name}": static_file(name) for name in STATIC_FILES}
        self._files["/"] = self._files["/index.html"]
        self._server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> int:
        """Listen; returns the port (the real one when ``port`` is 0)."""
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_HEAD)
        port_now: int = self._server.sockets[0].getsockname()[1]
        return port_now

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
            status, body, kind = self._answer(head)
        except asyncio.LimitOverrunError:
            status, body, kind = 431, b"request head too large\n", "text/plain"
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            writer.close()
            return
        method = head.split(b" ", 1)[0] if status != 431 else b"GET"
        lines = [
            f"HTTP/1.1 {status} {_REASONS[status]}",
            f"Content-Type: {kind}; charset=utf-8",
            f"Content-Length: {len(body)}",
            "Cache-Control: no-store",
            "Connection: close",
        ]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        if method != b"HEAD":
            writer.write(body)
        with contextlib.suppress(ConnectionError):
            await writer.drain()
        writer.close()

    def _answer(self, head: bytes) -> tuple[int, bytes, str]:
        request_line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = request_line.split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
            return 400, b"bad request line\n", "text/plain"
        method, target, _ = parts
        if method not in ("GET", "HEAD"):
            return 405, b"only GET and HEAD\n", "text/plain"
        path = target.partition("?")[0]
        if path == "/config.json":
            return 200, json.dumps(self._config()).encode(), "application/json"
        body = self._files.get(path)
        if body is None:
            return 404, b"not found; the live page is at /\n", "text/plain"
        suffix = path[path.rfind(".") :] if "." in path else ".html"
        kind = _TYPES.get(suffix) or mimetypes.guess_type(path)[0] or "application/octet-stream"
        return 200, body, kind


_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    431: "Request Header Fields Too Large",
}
