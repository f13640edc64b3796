"""Log records of what connections and streams do, and (a debug switch) of every frame.

Theory of operation. Two loggers under ``rstreams``, asked once per connection, when it is
made, whether anyone listens; a connection made while neither does logs nothing and pays
nothing:

* ``rstreams.streams`` at INFO: a connection opened or closed, a goodbye sent or heard, a
  subscription opened, refused or ended. Each record carries ``event``, ``connection`` (the
  connection's number among its server's, or among this process's client connections),
  ``side`` (``"server"`` or ``"client"``), and for subscriptions ``subscriber`` (the peer's id)
  and ``publisher`` as attributes, for a structured handler (JSON, logfmt) to use.
* ``rstreams.frames`` at DEBUG (the switch: ``logging.getLogger("rstreams.frames")
  .setLevel(logging.DEBUG)``): every frame sent and received, decoded from the bytes
  written and read by a parser of its own per direction. Secrets never appear: element
  bytes and extension payloads are shown as sizes only (credentials travel in extension
  messages), and query parameters of publisher names whose name suggests a secret
  (``token``, ``password``, ...) are shown as ``<redacted>``.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from typing import Any

from rstreams.observe._metrics import ConnectionObserver, ServerMetrics, StreamObserver
from rstreams.wire import FrameParser

__all__ = ["FRAMES", "STREAMS", "FrameLog", "attach", "client_observer", "describe", "redact_name", "wanted"]

STREAMS = logging.getLogger("rstreams.streams")
FRAMES = logging.getLogger("rstreams.frames")

_SECRET_PARAM = re.compile(
    r"(?i)([?&](?:[^=&]*(?:token|password|passwd|secret|key|auth|credential|signature)[^=&]*)=)[^&]*"
)


def _parser() -> FrameParser:
    """A parser that accepts whatever the connection's own core accepted (it only watches)."""
    return FrameParser(max_element_size=1 << 31, max_string_length=1 << 20, max_extensions=1 << 10)


def wanted() -> bool:
    """Whether a connection made now should log (someone listens to either logger)."""
    return STREAMS.isEnabledFor(logging.INFO) or FRAMES.isEnabledFor(logging.DEBUG)


def attach(conn: ConnectionObserver) -> None:
    """Give ``conn`` the logs that are listened to now."""
    if STREAMS.isEnabledFor(logging.INFO):
        conn.log = _Lifecycle(conn)
    if FRAMES.isEnabledFor(logging.DEBUG):
        conn.frames = FrameLog(conn)


def redact_name(name: str) -> str:
    """``name`` with the values of secret-looking query parameters replaced by ``<redacted>``."""
    return _SECRET_PARAM.sub(r"\1<redacted>", name)


def describe(frame: Any) -> str:
    """One line for a frame: its type and fields; bytes as sizes, names redacted."""
    parts = [type(frame).__name__]
    if dataclasses.is_dataclass(frame):
        for field in dataclasses.fields(frame):
            value = getattr(frame, field.name)
            if isinstance(value, bytes | bytearray | memoryview):
                shown = f"<{len(value)} bytes>"
            elif isinstance(value, list):
                shown = f"<{len(value)} elements, {sum(map(len, value))} bytes>"
            elif isinstance(value, str):
                shown = repr(redact_name(value) if field.name == "publisher" else value)
            else:
                shown = repr(value)
            parts.append(f"{field.name}={shown}")
    return " ".join(parts)


class _Lifecycle:
    """``conn.log``: one INFO record per connection or subscription event."""

    __slots__ = ("_conn",)

    def __init__(self, conn: ConnectionObserver) -> None:
        self._conn = conn

    def __call__(self, event: str, stream: StreamObserver | None, detail: str) -> None:
        side = self._conn.server.side
        extra: dict[str, Any] = {"event": event, "side": side, "connection": self._conn.id}
        if stream is not None:
            extra["subscriber"] = stream.sid
            extra["publisher"] = redact_name(stream.name)
            where = f"{side} connection {self._conn.id} subscriber {stream.sid} ({extra['publisher']!r})"
        else:
            where = f"{side} connection {self._conn.id}"
        text = f"{where}: {event}"
        if detail and stream is None:
            text += f": {redact_name(detail)}"
        STREAMS.info("%s", text, extra=extra)


class FrameLog:
    """``conn.frames``: decodes what is written and read, one DEBUG record per frame."""

    __slots__ = ("_conn", "_in", "_out")

    def __init__(self, conn: ConnectionObserver) -> None:
        self._conn = conn
        self._out = _parser()
        self._in = _parser()

    def sent(self, data: list[bytes]) -> None:
        for chunk in data:
            self._log("sent", self._out, chunk)

    def received(self, data: bytes | memoryview) -> None:
        self._log("received", self._in, data)

    def _log(self, direction: str, parser: FrameParser, data: bytes | memoryview) -> None:
        if parser.error is not None:
            return  # the stream could not be framed (said once, below)
        frames = parser.feed(data)
        cid, side = self._conn.id, self._conn.server.side
        for frame in frames:
            FRAMES.debug(
                "%s connection %d %s %s",
                side,
                cid,
                direction,
                describe(frame),
                extra={"event": f"frame {direction}", "side": side, "connection": cid},
            )
        broken = _error(parser)
        if broken is not None:
            FRAMES.debug("%s connection %d: no more %s frames logged: %s", side, cid, direction, broken)


def _error(parser: FrameParser) -> Exception | None:
    return parser.error


_clients: list[ServerMetrics] = []  # the one ServerMetrics that numbers this process's client connections


def client_observer() -> ConnectionObserver | None:
    """The observer of a client connection being made, when the loggers listen or the application
    installed an OpenTelemetry SDK (spans of its subscriptions); else ``None``."""
    from rstreams.observe._trace import tracer

    spans = tracer()
    if not wanted() and spans is None:
        return None
    if not _clients:
        _clients.append(ServerMetrics(side="client"))
    _clients[0].logger = attach if wanted() else None
    _clients[0].tracer = spans
    conn = _clients[0].connection()
    _clients[0].opened(conn)
    return conn
