"""The demo's terminal view from injected numbers (no Spark, no clock): where the time goes, on a
pseudo-terminal (redrawn in place) and in a log (plain lines)."""

from __future__ import annotations

import dataclasses
import io
import re
from typing import Any

from rstreams.spark._demo_view import DemoView, Tick
from testkit.observe import PseudoTerminal


def spark_stream(seconds: float, sent: int, on_demand: float, on_socket: float = 0.0) -> dict[str, Any]:
    return {
        "connection": 2,
        "subscriber": 1,
        "publisher": "sensors?from=0",
        "pattern": "sensors",
        "demand": 0,
        "elements_sent": sent,
        "bytes_sent": 60 * sent,
        "stalled_demand_seconds": on_demand,
        "stalled_socket_seconds": on_socket,
        "seconds": seconds,
    }


def stats(*streams: dict[str, Any], held: int = 40_000, lag: int = 30_000) -> dict[str, Any]:
    own = {**spark_stream(5.0, 5, 0.0), "connection": 3, "publisher": "rstreams/stats?interval=1"}
    log = {"elements": held, "capacity": 40_000, "readers": {"spark": {"position": 70_000, "lag": lag}}}
    return {"streams": [*streams, own], "replay": {"logs": {"sensors": log}}}


def window(sensor: str, start: str) -> dict[str, Any]:
    return {"sensor": sensor, "window": {"start": f"2026-11-25T{start}"}, "avg": 20.5, "n": 1000}


# Two seconds of a pipeline where Spark is the slow side: in the second, the sensors were blocked
# on demand 0.8 s of 1 s, Spark was running a micro-batch 0.9 s, and the server's stream to Spark
# waited for Spark's demand 0.6 s of it.
FIRST = Tick(
    at=1.0,
    produced=100_000,
    waited=0.5,
    busy=0.7,
    rows=20_000,
    batches=[(20_000, 0.7)],
    behind=50_000,
    stats=stats(spark_stream(1.0, 20_000, 0.2)),
    windows=[window("sensor-0", "10:00:00.000Z")],
)
SECOND = Tick(
    at=2.0,
    produced=120_000,
    waited=1.3,
    busy=1.6,
    rows=40_000,
    batches=[(20_000, 0.7), (20_000, 0.9)],
    behind=80_000,
    stats=stats(spark_stream(2.0, 40_000, 0.8, 0.1)),
    windows=[window("sensor-0", "10:00:00.000Z")],
)


def test_on_a_terminal_one_screen_redrawn_with_where_the_time_goes() -> None:
    with PseudoTerminal() as terminal:
        view = DemoView(terminal.out, seconds=30)
        assert view.screen.live
        view.show(FIRST)
        view.show(SECOND)
        drawn = terminal.read_until(b"sensor-0   window 10:00:00", times=2).decode()
    *_, last = drawn.split("\x1b[H\x1b[2J")  # the second screen, in place of the first
    assert drawn.count("\x1b[H\x1b[2J") == 2
    lines = last.split("\r\n")
    assert lines[0].startswith("rstreams demo   2 s of 30 s")
    assert re.search(r"sensors +waiting for demand +80% +120,000 readings, 20,000/s", last), last
    assert re.search(r"Spark +in micro-batches +90% +2 batches, 40,000 rows, 20,000 rows/s", last), last
    assert "last batch 20,000 rows in 900 ms (median 800 ms); query behind 80,000 rows" in last
    assert "'sensors' holds 40,000 of 40,000; committed: spark at 70,000 (lag 30,000)" in last
    assert "1 of its own not listed" in last and "rstreams/stats" not in last
    header = next(line for line in lines if "PUBLISHER" in line)
    assert header.split() == ["PUBLISHER", "SUBSCRIBER", "DEMAND", "EL/S", "WAIT", "DEMAND", "WAIT", "SOCKET"]
    row = lines[lines.index(header) + 1].split()
    assert row == ["sensors?from=0", "2/1", "0", "20,000.0", "60%", "10%"]


def test_elsewhere_plain_lines_and_windows_only_when_newer() -> None:
    out = io.StringIO()
    view = DemoView(out, seconds=30)
    assert not view.screen.live
    view.show(FIRST)
    view.show(SECOND)
    view.show(dataclasses.replace(SECOND, at=3.0))
    text = out.getvalue()
    assert "\x1b" not in text
    lines = text.splitlines()
    summaries = [line for line in lines if line.startswith("[")]
    assert len(summaries) == 3
    assert summaries[1].startswith(
        "[  2.0 s] into Spark    40,000 rows (   20,000/s) | 2 batches, median 800 ms"
    )
    assert "in micro-batches 90%" in summaries[1] and "query behind 80,000 rows" in summaries[1]
    assert "log holds 40,000" in summaries[1] and "waiting for demand 80%" in summaries[1]
    assert (
        "stream sensors?from=0 2/1: demand 0, 20,000.0 el/s, waiting for demand 60%, for the socket 10%"
        in text
    )
    assert "rstreams/stats" not in text
    assert sum("sensor-0   window 10:00:00" in line for line in lines) == 1  # no newer window: once


def test_the_first_interval_is_measured_from_the_start() -> None:
    """Readings made and time waited before the clock started (Spark's cold start) are not the pace."""
    out = io.StringIO()
    view = DemoView(out, seconds=30)
    view.start(dataclasses.replace(FIRST, at=0.0, produced=90_000, waited=0.4, busy=0.5, rows=0, batches=[]))
    view.show(FIRST)
    assert "sensors produced 100,000, waiting for demand 10%" in out.getvalue()
    assert "in micro-batches 20%" in out.getvalue()
    assert "sensor-0   window" not in out.getvalue()  # shown at the start: not news
