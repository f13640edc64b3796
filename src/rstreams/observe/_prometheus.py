"""The server's numbers in Prometheus' text format, served by ``prometheus_client``.

Theory of operation. ``prometheus_client`` serves ``/metrics`` from a thread of its own and
asks our :class:`Collector` for the metric families on each scrape. The numbers belong to the
event loop's thread (the connections mutate them there), so the collector hands the snapshot
over to the loop and waits for it (:data:`SCRAPE_TIMEOUT` at most): a scrape never reads a
table while the loop changes it. ``prometheus_client`` is imported only when an exposition
starts, so ``metrics=True`` works without it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from rstreams.errors import MissingExtraError
from rstreams.observe._errors import MetricsExpositionError
from rstreams.observe._families import families as metric_families
from rstreams.observe._families import snapshot_on_loop
from rstreams.observe._metrics import ServerMetrics

__all__ = ["SCRAPE_TIMEOUT", "Collector", "Exposition", "families", "parse_address"]

SCRAPE_TIMEOUT = 5.0
"""Seconds a scrape waits for the event loop to take the snapshot."""

_INSTALL_HINT = "metrics='host:port' needs prometheus_client: pip install 'rstreams[metrics]'"


def parse_address(address: str) -> tuple[str, int]:
    """``"host:port"`` (``"[::1]:9464"`` for IPv6) as ``(host, port)``; ``ValueError`` naming the option."""
    host, sep, port = address.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise ValueError(f"metrics must be 'host:port' (e.g. '127.0.0.1:9464'), got {address!r}")
    return host, int(port)


def families(snapshot: dict[str, Any]) -> Iterator[Any]:
    """``prometheus_client`` metric families of one snapshot."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    for family in metric_families(snapshot):
        kind = GaugeMetricFamily if family.kind == "gauge" else CounterMetricFamily
        converted = kind(family.name, family.doc, labels=list(family.labels))
        for values, value in family.samples:
            converted.add_metric(list(values), value)
        yield converted


class Collector:
    """A ``prometheus_client`` collector over one server's :class:`ServerMetrics`."""

    def __init__(self, metrics: ServerMetrics, loop: asyncio.AbstractEventLoop) -> None:
        self._metrics = metrics
        self._loop = loop

    def collect(self) -> Iterator[Any]:
        snapshot = snapshot_on_loop(self._metrics, self._loop, SCRAPE_TIMEOUT)
        if snapshot is not None:  # None: the loop is closed or blocked (an empty scrape, not a stale one)
            yield from families(snapshot)


class Exposition:
    """``/metrics`` over HTTP at ``host:port`` for one server (a ``prometheus_client`` thread).

    Raises:
        MissingExtraError: ``prometheus_client`` is not installed (an ``ImportError``).
        MetricsExpositionError: ``host:port`` cannot be bound (taken, or not this machine's).
    """

    def __init__(self, metrics: ServerMetrics, host: str, port: int, loop: asyncio.AbstractEventLoop) -> None:
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ModuleNotFoundError as missing:
            if (missing.name or "").partition(".")[0] != "prometheus_client":
                raise  # a broken installation, not a missing extra
            raise MissingExtraError(_INSTALL_HINT, name=missing.name) from missing
        registry = CollectorRegistry(auto_describe=False)
        registry.register(Collector(metrics, loop))
        try:
            self._httpd, self._thread = start_http_server(port, host, registry=registry)
        except OSError as error:  # taken, or not this machine's: say which address it was
            raise MetricsExpositionError(error.errno, error.strerror, host, port) from error
        bound_host, bound_port = self._httpd.server_address[:2]
        shown = str(bound_host) if isinstance(bound_host, str) else bound_host.decode()
        if ":" in shown:
            shown = f"[{shown}]"
        self.url = f"http://{shown}:{bound_port}/metrics"

    def close(self) -> None:
        """Stop serving (blocks until the serving thread has stopped)."""
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()
