"""The server's numbers as metric families: names, types, help, labels and samples.

Theory of operation. One snapshot (:meth:`ServerMetrics.snapshot`) becomes a list of
:class:`Family` values, the form both exporters take them in: Prometheus' text format
(:mod:`rstreams.observe._prometheus`) and OpenTelemetry's observable instruments
(:mod:`rstreams.observe._otel`). Names are Prometheus' (``rstreams_...``); a counter's
exposition adds ``_total``. docs/observability.md lists them all (a test compares).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import math
from collections.abc import Iterator, Sequence
from typing import Any

from rstreams.observe._metrics import UNBOUNDED, ServerMetrics

__all__ = ["Family", "families", "new_counter", "new_gauge", "snapshot_on_loop"]


@dataclasses.dataclass(slots=True)
class Family:
    """One metric: its samples as (label values, value) pairs."""

    name: str
    doc: str
    kind: str
    labels: Sequence[str] = ()
    samples: list[tuple[tuple[str, ...], float]] = dataclasses.field(default_factory=list)

    def add_metric(self, values: Sequence[str], value: float) -> None:
        self.samples.append((tuple(values), value))


def new_gauge(name: str, doc: str, value: float | None = None, labels: Sequence[str] = ()) -> Family:
    """A gauge: a value that goes up and down (``value``: its one unlabelled sample)."""
    family = Family(name, doc, "gauge", tuple(labels))
    if value is not None:
        family.add_metric((), value)
    return family


def new_counter(name: str, doc: str, value: float | None = None, labels: Sequence[str] = ()) -> Family:
    """A counter: a total that only grows."""
    family = Family(name, doc, "counter", tuple(labels))
    if value is not None:
        family.add_metric((), value)
    return family


def families(snapshot: dict[str, Any]) -> Iterator[Family]:
    """The metric families of one snapshot (``ServerMetrics.snapshot(streams=False)``)."""

    def gauge(name: str, doc: str, value: float) -> Family:
        return new_gauge(f"rstreams_{name}", doc, value=value)

    def counter(name: str, doc: str, value: float) -> Family:
        return new_counter(f"rstreams_{name}", doc, value=value)

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
    parts = new_gauge(
        "rstreams_split_parts_in_flight", "Split elements part-way through.", labels=["direction"]
    )
    parts.add_metric(["sending"], s["split_parts_sending"])
    parts.add_metric(["receiving"], s["split_parts_receiving"])
    yield parts
    goodbyes = new_counter(
        "rstreams_goodbyes", "Goodbyes by direction and reason.", labels=["direction", "reason"]
    )
    for row in s["goodbyes"]:
        goodbyes.add_metric([row["direction"], row["reason"]], row["count"])
    yield goodbyes
    auth = new_counter(
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
    if "spark" in s:
        yield from _spark(s["spark"]["queries"])


_PER_QUERY = (
    ("spark_batch_rows", "gauge", "batch_rows", "Rows in a Spark query's last micro-batch."),
    ("spark_batch_seconds", "gauge", "batch_seconds", "Seconds a Spark query's last micro-batch took."),
    ("spark_input_rows_per_second", "gauge", "input_rows_per_second", "A Spark query's input rate."),
    (
        "spark_processed_rows_per_second",
        "gauge",
        "processed_rows_per_second",
        "A Spark query's processing rate.",
    ),
    (
        "spark_rows_behind",
        "gauge",
        "rows_behind",
        "Rows its rstreams sources hold that no batch has taken yet.",
    ),
    ("spark_batches", "counter", "batches", "Micro-batches with rows a Spark query completed."),
    ("spark_rows", "counter", "rows", "Rows a Spark query's micro-batches read."),
)


def _per_row(
    table: tuple[tuple[str, str, str, str], ...], rows: dict[str, dict[str, Any]], label: str
) -> Iterator[Family]:
    """One family per ``(name, kind, key, doc)`` of ``table``: ``row[key]`` of each row that has
    it, labelled ``label`` = the row's name."""
    for name, kind, key, doc in table:
        family_type = new_gauge if kind == "gauge" else new_counter
        family = family_type(f"rstreams_{name}", doc, labels=[label])
        for row_name, row in rows.items():
            if key in row:
                family.add_metric([row_name], row[key])
        yield family


def _spark(queries: dict[str, dict[str, Any]]) -> Iterator[Family]:
    """A Spark session's streaming queries (``rstreams.spark.watch_progress``), labelled by query."""
    yield from _per_row(_PER_QUERY, queries, "query")


_PER_LOG = (
    ("replay_elements_held", "gauge", "elements", "Elements a replay log holds."),
    ("replay_bytes_held", "gauge", "bytes", "Bytes of the elements a replay log holds."),
    ("replay_capacity", "gauge", "capacity", "Elements a replay log holds at most."),
    ("replay_end_position", "gauge", "end", "The position the next element of a replay log gets."),
    ("replay_trimmed", "counter", "trimmed", "Elements trimmed from a replay log (its first position)."),
    ("replay_pending_readers", "gauge", "pending", "Readers holding a position before their first commit."),
)


def _replay(logs: dict[str, dict[str, Any]]) -> Iterator[Family]:
    yield from _per_row(_PER_LOG, logs, "log")
    staged = new_gauge(
        "rstreams_replay_staged_bytes", "Bytes uploaded to a sink log, not yet published.", labels=["log"]
    )
    expired = new_counter(
        "rstreams_replay_expired_uploads",
        "Uploads a sink log dropped unpublished after staging_ttl seconds without activity.",
        labels=["log"],
    )
    position = new_gauge(
        "rstreams_replay_reader_position", "A reader's committed position.", labels=["log", "reader"]
    )
    lag = new_gauge(
        "rstreams_replay_reader_lag",
        "Elements between a reader's committed position and the end.",
        labels=["log", "reader"],
    )
    for log, row in logs.items():
        if "staged_bytes" in row:
            staged.add_metric([log], row["staged_bytes"])
        if "expired_uploads" in row:
            expired.add_metric([log], row["expired_uploads"])
        for reader, at in row["readers"].items():
            position.add_metric([log, reader], at["position"])
            lag.add_metric([log, reader], at["lag"])
    yield staged
    yield expired
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
    (
        "input_elements_received",
        "counter",
        "input_elements_received",
        "Elements received on channel inputs (PROTOCOL.md section 21).",
    ),
)


def _per_publisher(publishers: dict[str, dict[str, Any]]) -> Iterator[Family]:
    for name, kind, key, doc in _PER_PUBLISHER:
        family_type = new_gauge if kind == "gauge" else new_counter
        family = family_type(f"rstreams_{name}", doc, labels=["publisher"])
        for pattern, row in publishers.items():
            value = row[key]
            if key == "demand_outstanding" and value >= UNBOUNDED:
                value = math.inf
            family.add_metric([pattern], value)
        yield family
    ended = new_counter(
        "rstreams_subscriptions_ended", "Streams ended by outcome.", labels=["publisher", "outcome"]
    )
    errors = new_counter(
        "rstreams_stream_errors", "Streams ended with onError, by reason.", labels=["publisher", "reason"]
    )
    for pattern, row in publishers.items():
        ended.add_metric([pattern, "completed"], row["completed"])
        ended.add_metric([pattern, "cancelled"], row["cancelled"])
        for reason, count in row["errors"].items():
            errors.add_metric([pattern, reason], count)
    yield ended
    yield errors


def snapshot_on_loop(
    metrics: ServerMetrics, loop: asyncio.AbstractEventLoop, timeout: float
) -> dict[str, Any] | None:
    """``metrics.snapshot(streams=False)`` taken on ``loop``'s thread (the numbers are changed
    there), from any thread; ``None`` if the loop is closed or does not get to it in ``timeout``."""
    try:
        running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        running = None
    if running is loop:
        return metrics.snapshot(streams=False)  # asked on the loop itself: waiting would deadlock
    done: concurrent.futures.Future[dict[str, Any]] = concurrent.futures.Future()

    def take() -> None:
        try:
            done.set_result(metrics.snapshot(streams=False))
        except BaseException as error:  # pragma: no cover - handed to the asking thread
            done.set_exception(error)

    try:
        loop.call_soon_threadsafe(take)
        return done.result(timeout)
    except (RuntimeError, concurrent.futures.TimeoutError):
        return None
