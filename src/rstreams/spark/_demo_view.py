"""The demo's terminal view: where the time goes, sensors waiting for demand or Spark busy.

Theory of operation. Every interval the demo takes a :class:`Tick`: the sensors' counters,
what Spark's progress reports say of its finished micro-batches, and the server's numbers
(``ReplayServer.metrics()``: its streams and its logs). :class:`DemoView` shows each tick
against the one before: what share of the interval the sensors were blocked waiting for
demand (the log full: Spark is the slower side), what share Spark was running a micro-batch,
rows per micro-batch and how far the query is behind the log, and the server's streams as
``rstreams top`` draws them (:mod:`rstreams.observe._table`: demand outstanding, rate, shares
stalled on demand and on the socket). On a terminal the screen is redrawn in place
(:class:`~rstreams.observe._table.Screen`); anywhere else (a pipe, a CI log) each tick is a few
plain lines, and the newest windows are printed only when a newer one closed.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TextIO

from rstreams.observe._table import HEADER, Screen, own_streams, stream_rows, table

__all__ = ["DemoView", "Tick", "window_lines"]


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Tick:
    """The demo's numbers at one moment (every count since the demo's clock started)."""

    at: float
    """Seconds since the clock started (the first finished micro-batch)."""
    produced: int
    """Readings the sensors made."""
    waited: float
    """Seconds the sensors spent blocked waiting for demand."""
    busy: float
    """Seconds Spark was running a micro-batch (its query's status, sampled)."""
    rows: int
    """Rows in the micro-batches Spark finished."""
    batches: list[tuple[int, float]]
    """Each finished micro-batch's (rows, seconds), oldest first."""
    behind: int | None
    """Rows the query is behind the log's end (its newest progress report), if it said."""
    stats: dict[str, Any]
    """The server's snapshot: its streams, and its logs under ``"replay"``."""
    windows: list[dict[str, Any]]
    """The newest window per sensor from ``results``."""


def _share(part: float, whole: float) -> str:
    return f"{min(100.0, max(0.0, 100 * part / whole)):3.0f}%" if whole > 0 else "  -"


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def window_lines(windows: list[dict[str, Any]]) -> list[str]:
    """The newest average of (up to) the first 8 sensors, a line each."""
    return [
        f"  {row['sensor']:<10} window {row['window']['start'][11:19]}  "
        f"avg {row['avg']:7.3f}  n {row['n']:>7,}"
        for row in windows[:8]
    ]


class DemoView:
    """Shows :class:`Tick` after tick on ``out`` (a terminal: one screen; else plain lines)."""

    def __init__(self, out: TextIO, *, seconds: float, log: str = "sensors") -> None:
        self.screen = Screen(out)
        self.seconds = seconds
        self.log = log
        self._previous: Tick | None = None
        self._shown_window: str | None = None

    def start(self, tick: Tick) -> None:
        """The clock starts at ``tick`` (not shown): the first interval is measured from it."""
        self._previous = tick
        self._shown_window = max((row["window"]["start"] for row in tick.windows), default=None)

    def show(self, tick: Tick) -> None:
        before = self._previous
        self._previous = tick
        lines = self._frame(before, tick) if self.screen.live else self._plain(before, tick)
        self.screen.show("\n".join(lines) + "\n")

    # -- the numbers --------------------------------------------------------------------------
    def _since(self, before: Tick | None, tick: Tick) -> dict[str, Any]:
        """The interval since ``before``: its length, the sensors' rate and waiting share, Spark's."""
        span = tick.at - (before.at if before else 0.0)
        produced = tick.produced - (before.produced if before else 0)
        waited = tick.waited - (before.waited if before else 0.0)
        busy = tick.busy - (before.busy if before else 0.0)
        return {
            "span": span,
            "rate": produced / span if span > 0 else 0.0,
            "waiting": _share(waited, span),
            "in_batches": _share(busy, span),
            "rows_rate": tick.rows / tick.at if tick.at > 0 else 0.0,
        }

    def _log_numbers(self, tick: Tick) -> dict[str, Any]:
        logs: dict[str, Any] = tick.stats.get("replay", {}).get("logs", {})
        return dict(logs.get(self.log, {}))

    def _behind(self, tick: Tick) -> str:
        return "?" if tick.behind is None else f"{tick.behind:,} rows"

    # -- on a terminal ------------------------------------------------------------------------
    def _frame(self, before: Tick | None, tick: Tick) -> list[str]:
        since = self._since(before, tick)
        log = self._log_numbers(tick)
        lines = [
            f"rstreams demo   {tick.at:.0f} s of {self.seconds:.0f} s",
            "",
            f"where the time goes (last {since['span']:.1f} s)",
            f"  sensors  waiting for demand {since['waiting']}   {tick.produced:,} readings, "
            f"{since['rate']:,.0f}/s",
            f"  Spark    in micro-batches   {since['in_batches']}   {len(tick.batches)} batches, "
            f"{tick.rows:,} rows, {since['rows_rate']:,.0f} rows/s",
        ]
        if tick.batches:
            rows, seconds = tick.batches[-1]
            median = _median([s for _, s in tick.batches])
            lines.append(
                f"           last batch {rows:,} rows in {seconds * 1000:,.0f} ms "
                f"(median {median * 1000:,.0f} ms); query behind {self._behind(tick)}"
            )
        if log:
            readers = ", ".join(
                f"{name} at {reader['position']:,} (lag {reader['lag']:,})"
                for name, reader in sorted(log["readers"].items())
            )
            lines.append(
                f"  log      '{self.log}' holds {log['elements']:,} of {log['capacity']:,}"
                + (f"; committed: {readers}" if readers else "")
            )
        own = own_streams(tick.stats)
        lines += [
            "",
            "the server's streams (as rstreams top shows them"
            + (f"; {own} of its own not listed)" if own else ")"),
            *table(HEADER, stream_rows(before.stats if before else None, tick.stats), "  "),
            "",
            "latest windows",
            *window_lines(tick.windows),
        ]
        return lines

    # -- anywhere else ------------------------------------------------------------------------
    def _plain(self, before: Tick | None, tick: Tick) -> list[str]:
        since = self._since(before, tick)
        log = self._log_numbers(tick)
        median = _median([s for _, s in tick.batches]) if tick.batches else 0.0
        lines = [
            f"[{tick.at:5.1f} s] into Spark {tick.rows:>9,} rows ({since['rows_rate']:>9,.0f}/s) | "
            f"{len(tick.batches)} batches, median {median * 1000:.0f} ms, "
            f"in micro-batches {since['in_batches'].strip()} | "
            f"log holds {log.get('elements', 0):,}, query behind {self._behind(tick)} | "
            f"sensors produced {tick.produced:,}, waiting for demand {since['waiting'].strip()}"
        ]
        for row in stream_rows(before.stats if before else None, tick.stats):
            publisher, subscriber, demand, rate, on_demand, on_socket = row
            lines.append(
                f"      stream {publisher} {subscriber}: demand {demand}, {rate} el/s, "
                f"waiting for demand {on_demand}, for the socket {on_socket}"
            )
        newest = max((row["window"]["start"] for row in tick.windows), default=None)
        if newest != self._shown_window:
            self._shown_window = newest
            lines += window_lines(tick.windows)
        return lines
