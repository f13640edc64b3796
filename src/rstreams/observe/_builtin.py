"""The publishers every server offers about itself: ``rstreams/health``, ``rstreams/publishers``,
``rstreams/stats?interval=S``.

Theory of operation. They are ordinary publishers of JSON-able dicts, served like any other
(so the server's ``authorize`` hook decides who may subscribe to them), made per subscribe
from what :class:`ServerFacts` can tell: the server's start, its offer, and its
:class:`~rstreams.observe.ServerMetrics` when counting is on. ``rstreams/stats`` is a tick
every ``interval`` seconds mapped to a snapshot; a subscriber that falls behind gets the
latest snapshot when it asks again, never a queue of stale ones. A server that counts nothing,
or a bad interval, fails the stream with :class:`~rstreams.observe.MetricsOffError` or
:class:`~rstreams.observe.StatsIntervalError` (``onError`` code 1, PROTOCOL.md §19.2).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from rstreams.api import Publisher
from rstreams.observe._errors import MetricsOffError, StatsIntervalError
from rstreams.observe._metrics import ServerMetrics

__all__ = ["HEALTH", "MIN_INTERVAL", "PUBLISHERS", "STATS", "ServerFacts", "builtin_factories", "version"]

HEALTH = "rstreams/health"
PUBLISHERS = "rstreams/publishers"
STATS = "rstreams/stats"

MIN_INTERVAL = 0.1
"""Shortest ``rstreams/stats`` interval in seconds: a snapshot walks every open stream."""


@functools.cache
def version() -> str:
    """The installed rstreams' version (``"unknown"`` when run from a source tree without metadata)."""
    from importlib import metadata  # on first use: importing it costs more than serving a hello

    try:
        return metadata.version("rstreams")
    except metadata.PackageNotFoundError:
        return "unknown"


class ServerFacts:
    """What the built-in publishers read about one server."""

    def __init__(
        self,
        names: list[str],
        *,
        more: bool,
        metrics: ServerMetrics | None,
        connections: Callable[[], int],
    ) -> None:
        self.names = names
        """The offer's names and patterns (the built-in ones included)."""
        self.more = more
        """Whether a function decides further names (they cannot be listed)."""
        self.metrics = metrics
        self.connections = connections
        self.started = time.monotonic()

    def health(self) -> dict[str, Any]:
        return {
            "ok": True,
            "uptime_seconds": time.monotonic() - self.started,
            "version": version(),
            "connections": self.connections(),
            "metrics": self.metrics is not None,
        }

    def publishers(self) -> dict[str, Any]:
        return {
            "publishers": [{"name": name, "pattern": "{" in name} for name in self.names],
            "more": self.more,
        }


def builtin_factories(facts: ServerFacts) -> dict[str, Callable[[dict[str, str]], Publisher[Any]]]:
    """Name -> factory ``(params) -> Publisher`` of dicts (to be served with the JSON codec).

    The flow modules are imported when a factory first runs: a server that is never asked
    about itself does not load them."""

    def health(params: dict[str, str]) -> Publisher[Any]:
        from rstreams.flow._public import just

        return just(facts.health())

    def publishers(params: dict[str, str]) -> Publisher[Any]:
        from rstreams.flow._public import just

        return just(facts.publishers())

    def stats(params: dict[str, str]) -> Publisher[Any]:
        from rstreams.flow._public import error, interval
        from rstreams.flow._push import OverflowStrategy

        metrics = facts.metrics
        if metrics is None:
            return error(
                MetricsOffError(
                    f"{STATS}: this server counts nothing (serve(..., metrics=True); "
                    "rstreams serve --metrics on|HOST:PORT)"
                )
            )
        text = params.get("interval", "1")
        try:
            seconds = float(text)
        except ValueError:
            seconds = 0.0
        if not seconds >= MIN_INTERVAL or seconds == float("inf"):
            return error(
                StatsIntervalError(f"{STATS}: interval must be seconds >= {MIN_INTERVAL}, got {text!r}")
            )
        ticks = interval(seconds, initial_delay=0.0, overflow=OverflowStrategy.LATEST)
        return ticks.map(lambda _: metrics.snapshot())

    return {HEALTH: health, PUBLISHERS: publishers, STATS: stats}
