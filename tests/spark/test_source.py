"""The rstreams data source on real PySpark (local[2]): batch, streaming, limits, codecs, errors."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

import rstreams
from rstreams.replay import ReplayLog
from rstreams.spark import arrow_ipc, arrow_rows
from testkit.spark import (
    SCHEMA,
    TEST_TIMEOUT,
    await_query,
    end_position,
    read_stream,
    records,
    wait_progressing,
)

pytestmark = pytest.mark.spark


def full_log(name: str, items: list[bytes]) -> ReplayLog:
    log = ReplayLog(name, capacity=max(1, len(items)))
    log.append(items)
    return log


@pytest.mark.timeout(TEST_TIMEOUT)
def test_batch_read_of_a_range(spark: Any, serve: Any) -> None:
    """spark.read: the whole log, then [startingPosition, endingPosition)."""
    server = serve({"nums": full_log("nums", records(100))})
    load = spark.read.format("rstreams").option("url", server.url).option("publisher", "nums")
    rows = load.option("schema", SCHEMA).load().collect()
    assert sorted(r.seq for r in rows) == list(range(100))
    part = load.option("schema", SCHEMA).option("startingPosition", 10).option("endingPosition", 20).load()
    assert sorted(r.seq for r in part.collect()) == list(range(10, 20))
    assert rows[0].sensor in {"s0", "s1", "s2"}


@pytest.mark.timeout(TEST_TIMEOUT)
def test_stream_available_now_in_batches_of_max_records(spark: Any, serve: Any) -> None:
    """maxRecordsPerBatch becomes ReadMaxRows; availableNow reads to the end fixed at start and stops,
    and the last batch is trimmed too (the source commits what Spark has finished)."""
    log = full_log("nums", records(250))
    server = serve({"nums": log})
    query = (
        read_stream(spark, server.url, "nums", maxRecordsPerBatch=100)
        .writeStream.format("memory")
        .queryName("available_now")
        .trigger(availableNow=True)
        .start()
    )
    await_query(query, "the availableNow query to read the log's 250 rows and end")
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [100, 100, 50]
    got = spark.sql("select seq from available_now").collect()
    assert sorted(r.seq for r in got) == list(range(250))
    assert log.first == 250


@pytest.mark.timeout(TEST_TIMEOUT)
def test_spark_pace_sets_the_producer_demand(spark: Any, serve: Any) -> None:
    """A slow query: the producer never gets more than `capacity` ahead of what Spark consumed."""
    produced: list[int] = []

    def source() -> Iterator[bytes]:
        for i in range(300):
            produced.append(i)
            yield records(1, i)[0]

    capacity, total = 60, 300
    log = ReplayLog("slow", capacity=capacity).feed(rstreams.from_iterable(source()))
    server = serve({"slow": log})
    consumed = [0]
    ahead: list[int] = []
    sizes: list[int] = []

    def slow_batch(df: Any, batch_id: int) -> None:
        n = df.count()
        sizes.append(n)
        consumed[0] += n
        ahead.append(len(produced) - consumed[0])
        time.sleep(0.3)  # a slow consumer: the producer must wait for Spark, not run ahead
        ahead.append(len(produced) - consumed[0])

    query = (
        read_stream(spark, server.url, "slow", maxRecordsPerBatch=40)
        .writeStream.foreachBatch(slow_batch)
        .trigger(processingTime="0 seconds")
        .start()
    )
    try:
        wait_progressing(
            lambda: consumed[0] >= total or not query.isActive,
            "all rows through the slow query",
            query,
            signs=lambda: f"{consumed[0]} rows consumed",
        )
    finally:
        query.stop()
    assert consumed[0] == total and sum(sizes) == total
    assert max(sizes) <= 40
    assert max(ahead) <= capacity, ahead
    assert log.max_held <= capacity


@pytest.mark.timeout(TEST_TIMEOUT)
def test_arrow_codec_elements_are_record_batches(spark: Any, serve: Any) -> None:
    """codec=arrow: an element is an Arrow IPC stream, cast to the schema; maxRecordsPerBatch counts rows."""
    elements = [
        arrow_ipc(
            pa.record_batch({"seq": pa.array(range(k * 10, k * 10 + 10)), "extra": pa.array(["x"] * 10)})
        )
        for k in range(5)
    ]
    log = ReplayLog("arrow", capacity=len(elements), rows=arrow_rows)
    log.append(elements)
    server = serve({"arrow": log})
    query = (
        read_stream(spark, server.url, "arrow", schema="seq int", codec="arrow", maxRecordsPerBatch=25)
        .writeStream.format("memory")
        .queryName("arrow_codec")
        .trigger(availableNow=True)
        .start()
    )
    await_query(query, "the availableNow query to read the 50 Arrow rows and end")
    assert [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]] == [20, 20, 10]
    assert sorted(r.seq for r in spark.sql("select seq from arrow_codec").collect()) == list(range(50))


@pytest.mark.timeout(TEST_TIMEOUT)
def test_two_queries_on_one_log_each_read_all_of_it(spark: Any, serve: Any) -> None:
    """Each query is its own reader: a commit of one never trims what the other still needs.

    Both readers join before either query starts (a reader that joins later starts at the
    oldest position still held), by the names the queries then commit under.
    """
    log = ReplayLog("shared", capacity=100).feed(rstreams.from_iterable(records(400)))
    log.join("shared_fast")
    log.join("shared_slow")
    server = serve({"shared": log})
    queries = [
        read_stream(spark, server.url, "shared", maxRecordsPerBatch=rows, readerName=name)
        .writeStream.format("memory")
        .queryName(name)
        .trigger(processingTime="0 seconds")
        .start()
        for name, rows in (("shared_fast", 90), ("shared_slow", 30))
    ]

    def both_done() -> bool:
        for query in queries:
            assert query.exception() is None, query.exception()
        return all(end_position(q) >= 400 for q in queries)

    try:
        wait_progressing(both_done, "both queries to read the whole log", *queries)
    finally:
        for query in queries:
            query.stop()
    for name in ("shared_fast", "shared_slow"):
        assert sorted(r.seq for r in spark.sql(f"select seq from {name}").collect()) == list(range(400))
    assert len(log.readers()) == 2 and log.max_held <= 100


@pytest.mark.timeout(TEST_TIMEOUT)
def test_undecodable_element_fails_the_query_naming_its_position(spark: Any, serve: Any) -> None:
    """A non-JSON element at position 7 fails the streaming query with that position."""
    items = records(10)
    items[7] = b"{not json"
    server = serve({"bad": full_log("bad", items)})
    query = (
        read_stream(spark, server.url, "bad")
        .writeStream.format("memory")
        .queryName("bad_element")
        .trigger(availableNow=True)
        .start()
    )
    with pytest.raises(Exception, match=r"element at position 7 is not valid json") as failure:
        await_query(query, "the query to fail at the undecodable element")
    assert "'bad'" in str(failure.value)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_element_not_fitting_the_schema_names_position_and_field(spark: Any, serve: Any) -> None:
    """{"seq": "abc"} at position 4 against `seq bigint`: the error names position 4 and field seq."""
    items = records(6)
    items[4] = json.dumps({"sensor": "s1", "seq": "abc", "value": 1.0}).encode()
    server = serve({"mismatch": full_log("mismatch", items)})
    df = spark.read.format("rstreams").option("url", server.url).option("publisher", "mismatch")
    with pytest.raises(Exception, match=r"element at position 4 does not fit the schema: field 'seq'"):
        df.option("schema", SCHEMA).load().collect()


@pytest.mark.timeout(TEST_TIMEOUT)
@pytest.mark.parametrize("codec", ["json", "msgpack"])
def test_codecs_decode_runs_across_packs(spark: Any, serve: Any, codec: str) -> None:
    """5,000 rows arrive as several packed wire elements per partition and are decoded in bulk; a
    bad element at position 3,001 (in the third pack of its range) still fails naming that position."""
    import msgpack

    rows = [{"sensor": f"s{i % 3}", "seq": i, "value": i * 0.5} for i in range(5000)]
    encode = msgpack.packb if codec == "msgpack" else (lambda row: json.dumps(row).encode())
    items = [encode(row) for row in rows]
    broken = list(items)
    broken[3001] = b"\xc1" if codec == "msgpack" else b"{not json"
    server = serve({"good": full_log("good", items), "broken": full_log("broken", broken)})

    def load(log: str) -> Any:
        reader = spark.read.format("rstreams").option("url", server.url).option("publisher", log)
        return reader.option("schema", SCHEMA).option("codec", codec).load()

    got = load("good").collect()
    assert sorted((r.seq, r.sensor, r.value) for r in got) == [(i, f"s{i % 3}", i * 0.5) for i in range(5000)]
    with pytest.raises(Exception, match=rf"element at position 3001 is not valid {codec}"):
        load("broken").collect()


@pytest.mark.timeout(TEST_TIMEOUT)
def test_starting_timestamp_in_a_streaming_query(spark: Any, serve: Any) -> None:
    """startingTimestamp: the query reads from the first element that arrived at that time on."""
    now = [1000.0]
    log = ReplayLog("timed", capacity=100, wall=lambda: now[0])
    log.append(records(10))
    now[0] = 2000.0
    log.append(records(5, start=10))
    server = serve({"timed": log})
    query = (
        read_stream(spark, server.url, "timed", startingTimestamp=1_500_000)
        .writeStream.format("memory")
        .queryName("by_time")
        .trigger(availableNow=True)
        .start()
    )
    await_query(query, "the availableNow query from startingTimestamp to end")
    assert sorted(r.seq for r in spark.sql("select seq from by_time").collect()) == list(range(10, 15))


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_memory_log_restarted_and_refilled_past_the_checkpoint_fails_the_restarted_query(
    spark: Any, serve: Any, tmp_path: Any
) -> None:
    """A query reads 20 rows of a memory log; the server restarts with a new memory log refilled
    with 60 (past the checkpoint's 20); the query restarted from its checkpoint fails naming the
    restart (the log's epoch changed) before any micro-batch, and nothing of the new log is
    trimmed."""
    first = serve({"nums": full_log("nums", records(20))})
    url = first.url
    checkpoint = str(tmp_path / "checkpoint")

    def run(name: str) -> Any:  # (the memory sink cannot restart from a checkpoint: noop can)
        written = read_stream(spark, url, "nums").writeStream.format("noop").queryName(name)
        return written.option("checkpointLocation", checkpoint).trigger(availableNow=True).start()

    query = run("before_restart")
    await_query(query, "the query to read the log's 20 rows and end")
    assert sum(p["numInputRows"] for p in query.recentProgress) == 20
    first.stop()
    refilled = full_log("nums", records(60, start=1000))
    serve({"nums": refilled}, url=url)
    again = run("after_restart")
    with pytest.raises(
        Exception, match=r"LogEpochError: replay log 'nums': epoch '[0-9a-f]{16}' is not"
    ) as failed:
        await_query(again, "the restarted query to fail on the restarted log")
    assert "the rows between the checkpoint and now may differ" in str(failed.value)
    assert again.recentProgress == [] and refilled.first == 0 and refilled.readers() == {}
