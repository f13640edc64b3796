"""The streams table `rstreams top` and the demo's view share: rates and stall shares between two
snapshots, the server's own streams left out, frames redrawn on a terminal and plain elsewhere."""

from __future__ import annotations

import io
from typing import Any

from rstreams.observe._metrics import UNBOUNDED
from rstreams.observe._table import HEADER, Screen, own_streams, spark_rows, stream_rows, table
from testkit.observe import PseudoTerminal


def stream(publisher: str, subscriber: int, seconds: float, sent: int, **more: Any) -> dict[str, Any]:
    return {
        "connection": 1,
        "subscriber": subscriber,
        "publisher": publisher,
        "pattern": publisher,
        "demand": more.get("demand", 0),
        "elements_sent": sent,
        "bytes_sent": 8 * sent,
        "stalled_demand_seconds": more.get("on_demand", 0.0),
        "stalled_socket_seconds": more.get("on_socket", 0.0),
        "seconds": seconds,
    }


def test_rates_and_shares_are_over_the_time_between_snapshots() -> None:
    before = {"streams": [stream("ticks", 1, 10.0, 1000, on_demand=1.0, on_socket=2.0)]}
    after = {
        "streams": [
            stream("ticks", 1, 12.0, 1500, on_demand=2.5, on_socket=2.0, demand=UNBOUNDED),
            stream("news", 2, 4.0, 40, on_demand=1.0, demand=12_000),  # new: over its whole life
        ]
    }
    assert stream_rows(before, after) == [
        ["ticks", "1/1", "unbounded", "250.0", "75%", "0%"],
        ["news", "1/2", "12,000", "10.0", "25%", "0%"],
    ]
    assert stream_rows(None, before)[0][3:] == ["100.0", "10%", "20%"]


def test_the_servers_own_streams_are_counted_not_listed() -> None:
    snapshot = {
        "streams": [stream("rstreams/stats?interval=1", 1, 3.0, 3), stream("ticks", 2, 3.0, 30)],
    }
    assert [row[0] for row in stream_rows(None, snapshot)] == ["ticks"]
    assert own_streams(snapshot) == 1


def test_table_pads_each_column_to_its_widest_cell() -> None:
    lines = table(["A", "BB"], [["long", "x"], ["s", "yyy"]], indent="  ")
    assert lines == ["  A     BB", "  long  x", "  s     yyy"]
    assert table(HEADER, [])[0].split() == [
        "PUBLISHER",
        "SUBSCRIBER",
        "DEMAND",
        "EL/S",
        "WAIT",
        "DEMAND",
        "WAIT",
        "SOCKET",
    ]


def test_a_screen_redraws_on_a_terminal_and_appends_elsewhere() -> None:
    plain = io.StringIO()
    Screen(plain).show("one\n")
    Screen(plain).show("two\n")
    assert plain.getvalue() == "one\ntwo\n"
    with PseudoTerminal() as terminal:
        screen = Screen(terminal.out)
        assert screen.live
        screen.show("one\n")
        screen.show("two\n")
        assert terminal.read_until(b"two\r\n") == b"\x1b[H\x1b[2Jone\r\n\x1b[H\x1b[2Jtwo\r\n"


def test_spark_queries_get_a_row_each_when_the_server_counts_them() -> None:
    """rstreams.spark.watch_progress puts each query's last micro-batch under "spark"."""
    assert spark_rows({"streams": []}) == []
    query = {
        "batch": 7,
        "batch_rows": 200_000,
        "batch_seconds": 5.804,
        "input_rows_per_second": 31_000.4,
        "processed_rows_per_second": 34_459.0,
        "rows_behind": 400_000,
    }
    snapshot = {"spark": {"queries": {"rstreams-demo": query, "other": {"batch": 0, "batch_rows": 0}}}}
    assert spark_rows(snapshot) == [
        ["other", "0", "0", "0.00", "0", "0", "?"],
        ["rstreams-demo", "7", "200,000", "5.80", "31,000", "34,459", "400,000"],
    ]
    from rstreams._cli_observe import render

    screen = render(
        "tcp://h:1", None, {**snapshot, "uptime_seconds": 3, "connections_open": 1, "streams": []}
    )
    lines = screen.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("SPARK QUERY")))
    assert lines[header + 2].split() == [
        "rstreams-demo",
        "7",
        "200,000",
        "5.80",
        "31,000",
        "34,459",
        "400,000",
    ]
