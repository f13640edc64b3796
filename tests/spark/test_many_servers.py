"""One query over logs on three servers (loopback), in a real Spark session: every row exactly once.

* a pattern (``sensors/*``) over three servers into a sink spread over the three servers' sink
  logs by key; the query stopped and restarted from its checkpoint while a new log appears;
* one of the three servers (a file-backed log, ``rstreams serve --path``) killed with SIGKILL
  and restarted mid-stream, and the query restarted too: the Parquet output is the input once.

The driver's side of the same without Spark, with more cases: tests/spark/test_many_logs.py.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

from rstreams.replay import ReplayLog, fetch_range
from testkit import patience
from testkit.spark import (
    SCHEMA,
    TEST_TIMEOUT,
    await_query,
    end_positions,
    free_port,
    read_stream,
    record,
    records,
    start_server,
    wait_progressing,
)

pytestmark = pytest.mark.spark


def sink_rows(server: Any, log: ReplayLog) -> list[dict[str, Any]]:
    return [json.loads(item) for item in fetch_range(server.url, log.name, 0, log.end)]


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_pattern_over_three_servers_into_three_sink_logs_by_key(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """Three servers, a log `sensors/I` on each (and one that does not match); the query reads
    `sensors/*` on all three and writes to `out` on all three, spread by `sensor`. Run to the
    end, then more input and a new log `sensors/3` on the first server, and the query restarted
    from its checkpoint: each row once in the output, each sensor in one sink log only."""
    per_log = 300
    sources = [ReplayLog(f"sensors/{i}", capacity=2000) for i in range(3)]
    for i, log in enumerate(sources):
        log.append(records(per_log, i * per_log))
    sinks = [ReplayLog("out", capacity=10_000, evict=True) for _ in range(3)]
    servers = [
        serve({log.name: log, "other": ReplayLog("other", capacity=10)}, sinks={"out": sink})
        for log, sink in zip(sources, sinks, strict=True)
    ]
    urls = ",".join(server.url for server in servers)
    checkpoint = tmp_path / "checkpoint"

    def run() -> None:
        query = (
            read_stream(spark, urls, "sensors/*", maxRecordsPerBatch=250)
            .writeStream.format("rstreams")
            .option("url", urls)
            .option("publisher", "out")
            .option("keyColumn", "sensor")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        await_query(query, "the query over three servers to end", signs=lambda: [sink.end for sink in sinks])
        assert query.exception() is None

    run()
    assert sum(sink.end for sink in sinks) == 3 * per_log
    for i, log in enumerate(sources):
        log.append(records(100, 3 * per_log + 100 * i))
    late = ReplayLog("sensors/3", capacity=2000)
    late.append(records(150, 4 * per_log))
    servers[0].add("sensors/3", late)
    run()  # a restart from the checkpoint: goes on, and finds sensors/3
    written = [sink_rows(server, sink) for server, sink in zip(servers, sinks, strict=True)]
    seqs = sorted(row["seq"] for rows in written for row in rows)
    assert seqs == list(range(3 * per_log)) + list(range(3 * per_log, 3 * per_log + 300)) + list(
        range(4 * per_log, 4 * per_log + 150)
    )
    owners = {row["sensor"]: i for i, rows in enumerate(written) for row in rows}
    for i, rows in enumerate(written):
        assert all(owners[row["sensor"]] == i for row in rows)  # a key lives in one sink log
    for log in [*sources, late]:
        assert len(log.readers()) == 1  # one reader per log: the query's
    assert len({reader for log in [*sources, late] for reader in log.readers()}) == 1


@pytest.mark.timeout(TEST_TIMEOUT)
def test_one_of_three_servers_killed_and_the_query_restarted_loses_and_duplicates_nothing(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """Logs on three servers, the third a file-backed log served by `rstreams serve` in its own
    process. Mid-stream that server is killed with SIGKILL and restarted (its producer replays its
    input from position 0 and the log goes on at its end), and later the query is stopped and
    restarted from its checkpoint: the Parquet output is every row of the three logs, once."""
    per_log = 1_200
    memory = [ReplayLog(f"sensors/{i}", capacity=per_log) for i in range(2)]
    for i, log in enumerate(memory):
        log.append(records(per_log, i * per_log))
    in_process = [serve({log.name: log}) for log in memory]
    lines = tmp_path / "input.jsonl"
    lines.write_bytes(b"".join(record(i) + b"\n" for i in range(2 * per_log, 3 * per_log)))
    filed_url = f"tcp://127.0.0.1:{free_port()}"
    store, server_log = tmp_path / "log", tmp_path / "server.log"
    filed = start_server(filed_url, store, lines, server_log, name="sensors/2", capacity=300)
    urls = ",".join([*(server.url for server in in_process), filed_url])
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def start() -> Any:
        return (
            read_stream(spark, urls, "sensors/*", maxRecordsPerBatch=150, timeout=60)
            .writeStream.format("parquet")
            .option("path", str(output))
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="0 seconds")
            .start()
        )

    def reached(query: Any, goal: int) -> bool:
        assert query.exception() is None, query.exception()
        assert filed.poll() is None, server_log.read_text()[-2000:]
        ends = end_positions(query)
        return len(ends) == 3 and all(at >= goal for at in ends.values())

    query = start()
    try:
        wait_progressing(lambda: reached(query, 200), "200 rows of each log through the query", query)
        filed.send_signal(signal.SIGKILL)
        patience.wait_child(filed, 30)
        filed = start_server(filed_url, store, lines, server_log, name="sensors/2", capacity=300)
        wait_progressing(
            lambda: reached(query, 500), "500 rows of each log after the server's restart", query
        )
        query.stop()
        query = start()  # the query restarted from its checkpoint
        wait_progressing(lambda: reached(query, per_log), "every row through the restarted query", query)
    finally:
        query.stop()
        filed.send_signal(signal.SIGKILL)
        patience.wait_child(filed, 30)
    assert query.exception() is None
    ends = end_positions(query)
    assert sorted(ends.values()) == [per_log] * 3
    seqs = sorted(row.seq for row in spark.read.schema(SCHEMA).parquet(str(output)).collect())
    assert seqs == list(range(3 * per_log)), server_log.read_text()[-2000:]
    state = json.loads((store / "state.json").read_text())
    assert len(state["readers"]) == 1  # the query, committed; no orphan
