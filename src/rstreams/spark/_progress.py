"""Spark's own progress as a replay server's metrics: rows per micro-batch, rates, lag.

::

    server = ReplayServer({"sensors": log}, metrics="127.0.0.1:9464").start()
    progress = watch_progress(spark, server)        # every query of this session, from now on

Theory of operation. :class:`SparkProgress` is a ``StreamingQueryListener``: Spark's
listener bus hands it each query's progress after every micro-batch (on the driver), and it
keeps the last one per query, with running totals. :meth:`SparkProgress.read` is a section
reader for the server's snapshot (``server.add_metrics("spark", ...)``), so the numbers go
wherever the server's go: ``server.metrics()["spark"]``, ``rstreams/stats``, Prometheus'
``/metrics`` (``rstreams_spark_*``, labelled by ``query``: its name, else its id;
docs/observability.md lists them) and OpenTelemetry. The lag is what the ``rstreams``
source reports in ``sources[].latestOffset`` (``rowsBehind``, else ``behind``), summed over
the query's ``rstreams`` sources.
"""

from __future__ import annotations

import json
import threading
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

__all__ = ["SparkProgress", "watch_progress"]


class SparkProgress(StreamingQueryListener):
    """The last progress of each streaming query of a session, and totals since it was added."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queries: dict[str, dict[str, Any]] = {}

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        label = str(progress.name or progress.id)
        rows = int(progress.numInputRows)
        behind = _behind(progress.sources)
        with self._lock:
            numbers = self._queries.setdefault(label, {"batches": 0, "rows": 0})
            numbers.update(
                batch=int(progress.batchId),
                batch_rows=rows,
                batch_seconds=float(progress.batchDuration) / 1000,
                input_rows_per_second=_rate(progress.inputRowsPerSecond),
                processed_rows_per_second=_rate(progress.processedRowsPerSecond),
                batches=numbers["batches"] + (1 if rows else 0),
                rows=numbers["rows"] + rows,
            )
            if behind is not None:
                numbers["rows_behind"] = behind

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass

    def read(self) -> dict[str, Any]:
        """``{"queries": {label: numbers}}``: a section of a server's snapshot."""
        with self._lock:
            return {"queries": {label: dict(numbers) for label, numbers in self._queries.items()}}


def _rate(value: Any) -> float:
    number = float(value or 0.0)
    return number if number == number else 0.0  # Spark reports NaN before it can tell


def _behind(sources: Any) -> int | None:
    """Rows (else positions) not yet in a batch, summed over the ``rstreams`` sources that say."""
    total: int | None = None
    for source in sources:
        try:
            report = json.loads(source.latestOffset or "null")
        except (TypeError, ValueError):
            continue
        if not isinstance(report, dict):
            continue
        rows = report.get("rowsBehind", report.get("behind"))
        if isinstance(rows, int):
            total = (total or 0) + rows
    return total


def watch_progress(spark: Any, server: Any) -> SparkProgress:
    """Count the progress of ``spark``'s streaming queries among ``server``'s metrics.

    ``server``: a started :class:`~rstreams.replay.ReplayServer` made with ``metrics=``.
    Returns the listener (``spark.streams.removeListener(it)`` stops it).
    """
    progress = SparkProgress()
    server.add_metrics("spark", progress.read)
    spark.streams.addListener(progress)
    return progress
