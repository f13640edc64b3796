"""The error of the ``/metrics`` exposition, apart from :mod:`._prometheus` so that naming it
(``except MetricsExpositionError``) imports neither asyncio nor ``prometheus_client``."""

from __future__ import annotations

from rstreams.errors import ReactiveStreamsError

__all__ = ["MetricsExpositionError"]


class MetricsExpositionError(ReactiveStreamsError, OSError):
    """``/metrics`` cannot be served at ``host:port``: the port is taken, or the host is not
    this machine's.

    Raised by ``serve(..., metrics="host:port")`` (the server is closed again first), so a
    caller can tell it from a failure of the serving address itself, which stays a plain
    ``OSError``. It is an ``OSError`` too, with the socket error's ``errno``, so
    ``except OSError`` still catches both; ``__cause__`` is the socket error.

    Attributes:
        host: the host ``/metrics`` was to be served on.
        port: the port (0 for "any free port").
    """

    def __init__(self, errno: int | None, reason: str | None, host: str, port: int) -> None:
        super().__init__(errno, f"cannot serve /metrics on {host}:{port}: {reason}")
        self.host = host
        self.port = port
