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
import concurrent.futures
import math
from collections.abc import Iterator
from typing import Any

from rstreams.observe._metrics import UNBOUNDED, ServerMetrics

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
    """The metric families of one snapshot (``ServerMetrics.snapshot(streams=False)``)."""
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    def gauge(name: str, doc: str, value: float) -> GaugeMetricFamily:
        return GaugeMetricFamily(f"rstreams_{name}", doc, value=value)

    def counter(name: str, doc: str, value: float) -> CounterMetricFamily:
        return CounterMetricFamily(f"rstreams_{name}", doc, value=value)

    s = snapshot
    yield gauge("uptime_seconds", "Seconds since the server started.", s["uptime_seconds"])
    yield gauge("connections_open", "Connections open now.", s["connections_open"])
    yield counter("connections", "Connections accepted.", s["connections_total"])
    yield counter("bytes_sent", "Bytes written to the connections' transports.", s["bytes_sent"])
    yield counter("bytes_received", "Bytes read from the connections' transports.", s["bytes_received"])
    yield counter(
        "elements_received", "Elements received for the server's own subscriptions.", s["elements_received"]
    )
    yield counter(
        "socket_stalled_seconds",
        "Seconds connections spent above their high-water mark (output not taken by the socket).",
        s["stalled_socket_seconds"],
    )
    parts = GaugeMetricFamily(
        "rstreams_split_parts_in_flight", "Split elements part-way through.", labels=["direction"]
    )
    parts.add_metric(["sending"], s["split_parts_sending"])
    parts.add_metric(["receiving"], s["split_parts_receiving"])
    yield parts
    goodbyes = CounterMetricFamily(
        "rstreams_goodbyes", "Goodbyes by direction and reason.", labels=["direction", "reason"]
    )
    for row in s["goodbyes"]:
        goodbyes.add_metric([row["direction"], row["reason"]], row["count"])
    yield goodbyes
    auth = CounterMetricFamily(
        "rstreams_auth_failures", "Refused credentials: connections and subscriptions.", labels=["kind"]
    )
    for kind, count in s["auth_failures"].items():
        auth.add_metric([kind], count)
    yield auth
    yield counter("idle_timeouts", "Connections closed by the idle timeout (§14.2).", s["idle_timeouts"])
    yield counter("resumptions", "Sessions resumed on a new transport (§16).", s["resumptions"])
    yield counter("replayed_bytes", "Bytes sent again after resumptions.", s["replayed_bytes"])
    yield from _per_publisher(s["publishers"])
    if "replay" in s:
        yield from _replay(s["replay"]["logs"])


_PER_LOG = (
    ("replay_elements_held", "gauge", "elements", "Elements a replay log holds."),
    ("replay_bytes_held", "gauge", "bytes", "Bytes of the elements a replay log holds."),
    ("replay_capacity", "gauge", "capacity", "Elements a replay log holds at most."),
    ("replay_end_position", "gauge", "end", "The position the next element of a replay log gets."),
    ("replay_trimmed", "counter", "trimmed", "Elements trimmed from a replay log (its first position)."),
    ("replay_pending_readers", "gauge", "pending", "Readers holding a position before their first commit."),
)


def _replay(logs: dict[str, dict[str, Any]]) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    for name, kind, key, doc in _PER_LOG:
        family_type = GaugeMetricFamily if kind == "gauge" else CounterMetricFamily
        family = family_type(f"rstreams_{name}", doc, labels=["log"])
        for log, row in logs.items():
            family.add_metric([log], row[key])
        yield family
    staged = GaugeMetricFamily(
        "rstreams_replay_staged_bytes", "Bytes uploaded to a sink log, not yet published.", labels=["log"]
    )
    position = GaugeMetricFamily(
        "rstreams_replay_reader_position", "A reader's committed position.", labels=["log", "reader"]
    )
    lag = GaugeMetricFamily(
        "rstreams_replay_reader_lag",
        "Elements between a reader's committed position and the end.",
        labels=["log", "reader"],
    )
    for log, row in logs.items():
        if "staged_bytes" in row:
            staged.add_metric([log], row["staged_bytes"])
        for reader, at in row["readers"].items():
            position.add_metric([log, reader], at["position"])
            lag.add_metric([log, reader], at["lag"])
    yield staged
    yield position
    yield lag


_PER_PUBLISHER = (
    ("subscriptions_open", "gauge", "subscriptions_open", "Subscriptions being served now."),
    ("subscriptions", "counter", "subscriptions_total", "Subscribes received (refused ones included)."),
    ("elements_sent", "counter", "elements_sent", "Elements sent."),
    ("element_bytes_sent", "counter", "bytes_sent", "Bytes of the elements sent (payload, no framing)."),
    ("requests", "counter", "requests", "request(n) signals received."),
    ("demand_granted", "counter", "demand_granted", "Elements requested (unbounded requests not counted)."),
    (
        "demand_outstanding",
        "gauge",
        "demand_outstanding",
        "Elements requested, not yet sent (+Inf: unbounded).",
    ),
    (
        "stalled_demand_seconds",
        "counter",
        "stalled_demand_seconds",
        "Seconds streams waited for the subscriber to request more.",
    ),
    (
        "stalled_socket_seconds",
        "counter",
        "stalled_socket_seconds",
        "Seconds streams with demand waited for the socket to drain.",
    ),
)


def _per_publisher(publishers: dict[str, dict[str, Any]]) -> Iterator[Any]:
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

    for name, kind, key, doc in _PER_PUBLISHER:
        family_type = GaugeMetricFamily if kind == "gauge" else CounterMetricFamily
        family = family_type(f"rstreams_{name}", doc, labels=["publisher"])
        for pattern, row in publishers.items():
            value = row[key]
            if key == "demand_outstanding" and value >= UNBOUNDED:
                value = math.inf
            family.add_metric([pattern], value)
        yield family
    ended = CounterMetricFamily(
        "rstreams_subscriptions_ended", "Streams ended by outcome.", labels=["publisher", "outcome"]
    )
    errors = CounterMetricFamily(
        "rstreams_stream_errors", "Streams ended with onError, by reason.", labels=["publisher", "reason"]
    )
    for pattern, row in publishers.items():
        ended.add_metric([pattern, "completed"], row["completed"])
        ended.add_metric([pattern, "cancelled"], row["cancelled"])
        for reason, count in row["errors"].items():
            errors.add_metric([pattern, reason], count)
    yield ended
    yield errors


class Collector:
    """A ``prometheus_client`` collector over one server's :class:`ServerMetrics`."""

    def __init__(self, metrics: ServerMetrics, loop: asyncio.AbstractEventLoop) -> None:
        self._metrics = metrics
        self._loop = loop

    def collect(self) -> Iterator[Any]:
        done: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()

        def take() -> None:
            try:
                done.set_result(self._metrics.snapshot(streams=False))
            except BaseException as error:  # pragma: no cover - handed to the scraping thread
                done.set_exception(error)

        try:
            self._loop.call_soon_threadsafe(take)
            snapshot = done.result(SCRAPE_TIMEOUT)
        except (RuntimeError, concurrent.futures.TimeoutError):
            return  # the loop is closed or blocked: an empty scrape, not a stale one
        yield from families(snapshot)


class Exposition:
    """``/metrics`` over HTTP at ``host:port`` for one server (a ``prometheus_client`` thread)."""

    def __init__(self, metrics: ServerMetrics, host: str, port: int, loop: asyncio.AbstractEventLoop) -> None:
        try:
            from prometheus_client import CollectorRegistry, start_http_server
        except ImportError as error:
            raise ImportError(_INSTALL_HINT) from error
        registry = CollectorRegistry(auto_describe=False)
        registry.register(Collector(metrics, loop))
        self._httpd, self._thread = start_http_server(port, host, registry=registry)
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
