"""No configuration stalls a stream for good: real Spark drivers and log servers killed and restarted.

* a driver killed with SIGKILL before its first checkpointed offset leaves only a pending
  reader, which expires: the restarted query reads past the log's capacity;
* the log server killed with SIGKILL mid-stream and restarted (a file-backed log, its
  producer replaying its input from position 0 with ``--input-from 0``): the running query
  waits for it within its ``timeout`` and the output is the input, exactly once;
* micro-batches without a bound on a log smaller than the input (every capacity, limit and
  codec without Spark: tests/spark/test_reader.py).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.replay import ReplayLog, replay_offer
from testkit import patience
from testkit.publishers import Never
from testkit.spark import (
    SCHEMA,
    TEST_TIMEOUT,
    end_position,
    free_port,
    kill_group,
    read_stream,
    record,
    records,
    start_query,
    start_server,
    wait_progressing,
)

pytestmark = pytest.mark.spark


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_driver_killed_before_its_first_offset_leaves_no_reader_that_stalls_the_log(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """SIGKILL while the query waits for its first data (initialOffset done, no offset logged),
    then a restart: the first run's reader was only pending and expires; the log, 4x smaller
    than the input, is read to the end in batches as large as the log."""
    total = 200
    log = ReplayLog("nums", capacity=50, pending_timeout=1.0)
    route = replay_offer({"nums": log})
    stalled: list[str] = []

    def first_run_stops_in_the_window(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        """The first run's second hold (from latestOffset, before Spark writes offsets/0) never
        gets an answer: the driver is held inside the window until it is killed."""
        if "hold" in params and params["reader"] in log.pending() and not stalled:
            stalled.append(params["reader"])
        if stalled and params.get("reader") == stalled[0]:
            return Never[bytes]()
        published: Publisher[Any] | None = route(path, params)
        return published

    server = serve({"nums": log}, offer=first_run_stops_in_the_window)
    checkpoint, output = tmp_path / "checkpoint", tmp_path / "query.log"
    first = start_query(server.url, checkpoint, output, rows="all")
    try:

        def in_the_window() -> bool:
            assert first.poll() is None, output.read_text()[-3000:]
            return bool(stalled)

        wait_progressing(
            in_the_window,
            "the first run to ask for its first offsets",
            signs=lambda: (log.pending(), log.readers(), output.stat().st_size),
        )
    finally:
        kill_group(first)
    assert not list((checkpoint / "offsets").glob("*")), "the kill came after Spark wrote offsets"
    (orphan,) = log.pending()
    assert log.readers() == {}  # nothing durable: the kill came before the first offset
    log.feed(rstreams.from_iterable(records(total)))
    assert log.end == 50  # full: only commits make room
    query = (
        read_stream(spark, server.url, "nums")  # no maxRecordsPerBatch: a batch takes the whole log
        .writeStream.format("parquet")
        .option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:
        wait_progressing(
            lambda: end_position(query) >= total or query.exception() is not None,
            "every row",
            query,
            signs=lambda: (log.info(), log.readers(), log.pending(), log.expired),
        )
    except AssertionError as stalled:
        state = (log.info(), log.readers(), log.pending(), log.expired, query.recentProgress[-3:])
        raise AssertionError(f"{stalled}; the log: {state}") from None
    finally:
        query.stop()
    assert query.exception() is None
    seqs = sorted(row.seq for row in spark.read.schema(SCHEMA).parquet(str(tmp_path / "out")).collect())
    assert seqs == list(range(total))
    assert orphan in log.expired and orphan not in log.readers()
    assert log.max_held <= 50


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_log_server_killed_and_restarted_mid_stream_is_waited_for(spark: Any, tmp_path: Path) -> None:
    """SIGKILL to the log server (a file-backed log) mid-stream, and a restart whose producer
    replays the input from position 0: the query rides through it (its calls retry within
    `timeout`), the log goes on at its end, and the Parquet output is the input exactly once."""
    total = 3_000
    lines = tmp_path / "input.jsonl"
    lines.write_bytes(b"".join(record(i) + b"\n" for i in range(total)))
    url = f"tcp://127.0.0.1:{free_port()}"
    store, server_log = tmp_path / "log", tmp_path / "server.log"
    server = start_server(url, store, lines, server_log)
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    query = (
        read_stream(spark, url, "nums", maxRecordsPerBatch=100, timeout=60)
        .writeStream.format("parquet")
        .option("path", str(output))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:

        def reached(goal: int) -> bool:
            assert query.exception() is None, query.exception()
            return end_position(query) >= goal

        wait_progressing(lambda: reached(500), "500 rows through the query", query)
        server.send_signal(signal.SIGKILL)
        patience.wait_child(server, 30)
        server = start_server(url, store, lines, server_log)
        wait_progressing(
            lambda: reached(total),
            "every row through the query after the restart",
            query,
            signs=lambda: server_log.stat().st_size,
        )
    finally:
        query.stop()
        server.send_signal(signal.SIGKILL)
        patience.wait_child(server, 30)
    assert query.exception() is None
    seqs = sorted(row.seq for row in spark.read.schema(SCHEMA).parquet(str(output)).collect())
    assert seqs == list(range(total)), server_log.read_text()[-2000:]
    state = json.loads((store / "state.json").read_text())
    assert len(state["readers"]) == 1  # the query, committed; no orphan
