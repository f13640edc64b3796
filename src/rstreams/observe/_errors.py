"""The errors of a server's numbers: the ``/metrics`` exposition's, apart from
:mod:`._prometheus` so that naming it (``except MetricsExpositionError``) imports neither
asyncio nor ``prometheus_client``; a server that counts nothing; a bad ``rstreams/stats``
interval."""

from __future__ import annotations

from rstreams.errors import ReactiveStreamsError

__all__ = ["MetricsExpositionError", "MetricsOffError", "StatsIntervalError"]


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


class MetricsOffError(ReactiveStreamsError, RuntimeError):
    """The server counts nothing: it was made without ``metrics=`` (``serve(..., metrics=True)``;
    ``rstreams serve --metrics on|HOST:PORT``), so there are no numbers to give.

    Raised by ``server.metrics()`` and ``server.add_metrics()``, and signalled by the
    ``rstreams/stats`` publisher (``onError`` code 1, the publisher's own error, PROTOCOL.md
    §19.2; its text starts ``MetricsOffError:``). A ``RuntimeError`` too, as it was.
    """


class StatsIntervalError(ReactiveStreamsError, ValueError):
    """``rstreams/stats?interval=S`` with ``S`` not a number of seconds of at least
    :data:`~rstreams.observe._builtin.MIN_INTERVAL`; signalled by that publisher (``onError``
    code 1, PROTOCOL.md §19.2; its text starts ``StatsIntervalError:``). A ``ValueError`` too."""
