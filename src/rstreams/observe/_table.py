"""A server's open streams as a text table: what ``rstreams top`` draws and the demo's view shows.

Theory of operation. A table is made from two snapshots of the server's numbers
(``ServerMetrics.snapshot()``, or the elements of ``rstreams/stats``): each open stream's
rate and the shares of time it waited for demand and for the socket are the differences
between the two over the time between them (a stream new since the earlier snapshot: over
its whole life). Streams of the server's own publishers (``rstreams/...``: the stats stream
a ``top`` reads, a health check) are not the user's: they are left out and counted. A
server that counts Spark's progress (``rstreams.spark.watch_progress``) also has a row per
Spark query: its last micro-batch's rows and time, its rates and how far it is behind.
:class:`Screen` writes the frames: on a terminal each one replaces the last; anywhere else
(a pipe, a CI log) they follow one another as plain lines.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TextIO

from rstreams.observe._metrics import UNBOUNDED

__all__ = [
    "BUILTIN_PREFIX",
    "HEADER",
    "SPARK_HEADER",
    "Screen",
    "own_streams",
    "spark_rows",
    "stream_rows",
    "table",
]

BUILTIN_PREFIX = "rstreams/"
"""The server's own publishers (:mod:`rstreams.observe._builtin`) start so."""

HEADER = ["PUBLISHER", "SUBSCRIBER", "DEMAND", "EL/S", "WAIT DEMAND", "WAIT SOCKET"]

_CLEAR = "\x1b[H\x1b[2J"  # cursor home, clear the screen


def own_streams(snapshot: dict[str, Any]) -> int:
    """How many of ``snapshot``'s streams serve the server's own publishers (left out of tables)."""
    return sum(1 for s in snapshot.get("streams", []) if s["publisher"].startswith(BUILTIN_PREFIX))


def stream_rows(previous: dict[str, Any] | None, snapshot: dict[str, Any]) -> list[list[str]]:
    """The table's rows for ``snapshot``'s user streams (columns :data:`HEADER`); rates and
    stall shares over the time since ``previous``."""
    before = {(s["connection"], s["subscriber"]): s for s in (previous or {}).get("streams", [])}
    rows = []
    for stream in snapshot.get("streams", []):
        if stream["publisher"].startswith(BUILTIN_PREFIX):
            continue
        old = before.get((stream["connection"], stream["subscriber"]))
        if old is not None and old["publisher"] == stream["publisher"]:
            span = stream["seconds"] - old["seconds"]
            sent = stream["elements_sent"] - old["elements_sent"]
            on_demand = stream["stalled_demand_seconds"] - old["stalled_demand_seconds"]
            on_socket = stream["stalled_socket_seconds"] - old["stalled_socket_seconds"]
        else:  # new since the last snapshot: over its whole life
            span = stream["seconds"]
            sent = stream["elements_sent"]
            on_demand, on_socket = stream["stalled_demand_seconds"], stream["stalled_socket_seconds"]
        demand = stream["demand"]
        rows.append(
            [
                stream["publisher"],
                f"{stream['connection']}/{stream['subscriber']}",
                "unbounded" if demand >= UNBOUNDED else f"{demand:,}",
                f"{sent / span:,.1f}" if span > 0 else "-",
                _share(on_demand, span),
                _share(on_socket, span),
            ]
        )
    return rows


SPARK_HEADER = ["SPARK QUERY", "BATCH", "ROWS", "SECONDS", "IN ROWS/S", "DONE ROWS/S", "BEHIND"]


def spark_rows(snapshot: dict[str, Any]) -> list[list[str]]:
    """Each Spark query's last micro-batch (columns :data:`SPARK_HEADER`), when the server
    counts Spark's progress (``rstreams.spark.watch_progress``); else no rows."""
    queries: dict[str, dict[str, Any]] = snapshot.get("spark", {}).get("queries", {})
    return [
        [
            label,
            str(query.get("batch", "-")),
            f"{query.get('batch_rows', 0):,}",
            f"{query.get('batch_seconds', 0.0):.2f}",
            f"{query.get('input_rows_per_second', 0.0):,.0f}",
            f"{query.get('processed_rows_per_second', 0.0):,.0f}",
            f"{query['rows_behind']:,}" if "rows_behind" in query else "?",
        ]
        for label, query in sorted(queries.items())
    ]


def _share(part: float, whole: float) -> str:
    return f"{min(100.0, 100 * part / whole):.0f}%" if whole > 0 else "-"


def table(header: Sequence[str], rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """``header`` and ``rows`` as lines, each column as wide as its widest cell."""
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


class Screen:
    """Frames written to ``out``: redrawn in place on a terminal, one after another elsewhere."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.live = _isatty(out)
        """Whether ``out`` is a terminal (frames replace each other)."""

    def show(self, frame: str) -> None:
        self.out.write((_CLEAR if self.live else "") + frame)
        self.out.flush()


def _isatty(out: TextIO) -> bool:
    try:
        return out.isatty()
    except (AttributeError, ValueError):  # no such method, or a closed stream
        return False
