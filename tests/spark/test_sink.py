"""The rstreams sink: rows published on a server's sink log, once per batch even when Spark re-runs it."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from rstreams.replay import ReplayLog, fetch_range, request_json
from testkit.spark import TEST_TIMEOUT, await_query, read_stream, records, wait_progressing

pytestmark = pytest.mark.spark


def published_and_refused(server: Any, log: str) -> tuple[int, int]:
    """Batches published on sink log ``log`` and re-runs refused (the uploads the server dropped by
    their owners vary with Spark's task retries, as the machine's load makes them)."""
    numbers = server.sink_statistics(log)
    return numbers["published"], numbers["refused"]


def published(server: Any, log: ReplayLog) -> list[dict[str, Any]]:
    info = log.info()
    return [json.loads(x) for x in fetch_range(server.url, log.name, info["first"], info["end"])]


@pytest.mark.timeout(TEST_TIMEOUT)
def test_stream_sink_publishes_each_batch_once_across_a_rerun(spark: Any, serve: Any, tmp_path: Path) -> None:
    """A batch re-run after its sink commit (checkpoint commit lost) is not published twice."""
    source = ReplayLog("nums", capacity=1000)
    source.append(records(300))
    # The source commits a batch once Spark's commit log has it; the crash simulated below
    # comes before that point, when the log still held the batch: a second reader keeps it.
    source.join("keeper")
    results = ReplayLog("results", capacity=1000, evict=True)
    server = serve({"nums": source}, sinks={"results": results})
    checkpoint = tmp_path / "checkpoint"

    def run() -> None:
        query = (
            read_stream(spark, server.url, "nums", maxRecordsPerBatch=100)
            .selectExpr("seq", "value * 2 AS doubled")
            .writeStream.format("rstreams")
            .option("url", server.url)
            .option("publisher", "results")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )
        await_query(query, "the availableNow query into the sink log to end", signs=lambda: results.info())
        assert query.exception() is None

    run()
    rows = published(server, results)
    assert sorted(r["seq"] for r in rows) == list(range(300))
    assert all(r["doubled"] == r["seq"] for r in rows)
    # Spark crashed after the sink committed batch 2 but before its checkpoint said so:
    (checkpoint / "commits" / "2").unlink()
    (checkpoint / "commits" / ".2.crc").unlink(missing_ok=True)
    run()
    assert sorted(r["seq"] for r in published(server, results)) == list(range(300))
    assert published_and_refused(server, "results") == (3, 1)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_batch_write(spark: Any, serve: Any) -> None:
    """df.write.format("rstreams") publishes every row once."""
    results = ReplayLog("results", capacity=100, evict=True)
    server = serve({}, sinks={"results": results})
    df = spark.createDataFrame([(i, f"n{i}") for i in range(20)], "id int, name string")
    df.write.format("rstreams").option("url", server.url).option("publisher", "results").mode("append").save()
    rows = published(server, results)
    assert sorted(r["id"] for r in rows) == list(range(20)) and rows[0]["name"].startswith("n")


@pytest.mark.timeout(TEST_TIMEOUT)
def test_slow_reader_of_a_bounded_sink_log_holds_spark_back(spark: Any, serve: Any, tmp_path: Path) -> None:
    """A bounded sink log: Spark's commit waits for the reader; the log never holds more than its bound."""
    source = ReplayLog("nums", capacity=1000)
    source.append(records(300))
    results = ReplayLog("results", capacity=100)  # not evicting: readers must commit
    server = serve({"nums": source}, sinks={"results": results})
    got: list[dict[str, Any]] = []
    stop = threading.Event()

    def slow_reader() -> None:
        while len(got) < 300 and not stop.is_set():
            info = results.info()
            if info["end"] > info["first"]:
                got.extend(published(server, results))
                time.sleep(0.5)  # a slow subscriber
                request_json(server.url, f"results?commit={info['end']}")
            stop.wait(0.05)

    reader = threading.Thread(target=slow_reader, daemon=True)
    reader.start()
    query = (
        read_stream(spark, server.url, "nums", maxRecordsPerBatch=100)
        .writeStream.format("rstreams")
        .option("url", server.url)
        .option("publisher", "results")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    try:
        await_query(query, "the query to write 300 rows past the slow reader", signs=lambda: len(got))
        wait_progressing(
            lambda: not reader.is_alive(), "the slow reader to read 300 rows", signs=lambda: len(got)
        )
    finally:
        stop.set()
    assert sorted(r["seq"] for r in got) == list(range(300))
    assert results.max_held <= 100


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_batch_past_the_staging_bound_fails_with_what_to_change(spark: Any, serve: Any) -> None:
    """Rows beyond the server's staging_bytes: the write fails naming the bound; nothing is published."""
    results = ReplayLog("results", capacity=10_000)
    server = serve({}, sinks={"results": results}, staging_bytes=20_000)
    df = spark.createDataFrame([(i, "x" * 100) for i in range(2_000)], "id int, pad string")
    write = df.write.format("rstreams").option("url", server.url).option("publisher", "results")
    with pytest.raises(Exception, match=r"staging area full.*the bound is 20,000"):
        write.mode("append").save()
    assert results.info()["end"] == 0
    small = spark.createDataFrame([(i, "x") for i in range(20)], "id int, pad string")
    write = small.write.format("rstreams").option("url", server.url).option("publisher", "results")
    write.mode("append").save()
    assert results.info()["end"] == 20


@pytest.mark.timeout(TEST_TIMEOUT)
def test_arrow_sink_writes_batches_that_the_source_reads_back(spark: Any, serve: Any, tmp_path: Path) -> None:
    """codec arrow on the sink: Spark's Arrow writer stages IPC elements (up to 64 Ki rows each);
    reading the sink log with codec arrow gives back every row, once."""
    source = ReplayLog("nums", capacity=5000)
    source.append(records(3000))
    results = ReplayLog("results", capacity=1000, evict=True)
    server = serve({"nums": source}, sinks={"results": results})
    query = (
        read_stream(spark, server.url, "nums", maxRecordsPerBatch=1000)
        .selectExpr("seq", "value * 2 AS doubled", "sensor")
        .writeStream.format("rstreams")
        .option("url", server.url)
        .option("publisher", "results")
        .option("codec", "arrow")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .trigger(availableNow=True)
        .start()
    )
    await_query(query, "the availableNow query into the Arrow sink log to end", signs=lambda: results.info())
    assert query.exception() is None
    end = results.info()["end"]
    assert 3 <= end <= 6  # a few elements per micro-batch (one per task), not one per row
    back = (
        spark.read.format("rstreams")
        .option("url", server.url)
        .option("publisher", "results")
        .option("schema", "seq bigint, doubled double, sensor string")
        .option("codec", "arrow")
        .load()
        .collect()
    )
    assert sorted((r.seq, r.doubled) for r in back) == [(i, float(i)) for i in range(3000)]
    assert published_and_refused(server, "results") == (3, 0)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_foreach_batch_publishes_a_batch_once_across_a_server_restart(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """df.write with writerId and batchId (what a foreachBatch function does) publishes each pair
    once; the record is kept with a file-backed sink log, so a re-run after the server restarted is
    still refused."""
    path = tmp_path / "results"
    results = ReplayLog("results", capacity=1000, path=path)
    server = serve({}, sinks={"results": results})
    url = server.url

    def publish(df: Any, batch_id: int) -> None:
        (
            df.write.format("rstreams")
            .option("url", url)
            .option("publisher", "results")
            .option("writerId", "report")
            .option("batchId", batch_id)
            .mode("append")
            .save()
        )

    first = spark.createDataFrame([(i,) for i in range(10)], "id int")
    publish(first, 0)
    publish(first, 0)  # a re-run of batch 0
    assert results.info()["end"] == 10
    server.stop()
    results.close()
    reopened = ReplayLog("results", capacity=1000, path=path)
    restarted = serve({}, sinks={"results": reopened}, url=url)
    publish(first, 0)  # re-run again, after the restart
    publish(spark.createDataFrame([(i,) for i in range(10, 15)], "id int"), 1)
    rows = [json.loads(x) for x in fetch_range(url, "results", 0, reopened.info()["end"])]
    assert sorted(r["id"] for r in rows) == list(range(15))
    assert published_and_refused(restarted, "results") == (2, 1)
    reopened.close()


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_sink_log_the_server_lacks_fails_the_query_at_its_start(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """A streaming query into a sink log the server does not serve fails as Spark builds its
    writer on the driver (planning the first micro-batch), with the error naming option publisher
    and the server's URL, not in a task: no micro-batch ran and no row of the source was read.
    The error is the OptionError itself, not wrapped in PySpark's "Could not serialize object"
    (the check runs as the writer is built, not as Spark pickles it)."""
    source = ReplayLog("nums", capacity=100)
    source.append(records(10))
    server = serve({"nums": source}, sinks={"results": ReplayLog("results", capacity=100)})
    query = (
        read_stream(spark, server.url, "nums")
        .writeStream.format("rstreams")
        .option("url", server.url)
        .option("publisher", "nope")
        .option("checkpointLocation", str(tmp_path / "checkpoint"))
        .start()
    )
    with pytest.raises(
        Exception, match=rf"option publisher: {re.escape(server.url)} serves no sink log 'nope'"
    ) as failed:
        await_query(query, "the query into a missing sink log to fail")
    said = str(failed.value)
    assert "Failed to initialize Python data source writer" in said
    refusal = f"OptionError: option publisher: {server.url} serves no sink log 'nope'"
    assert refusal in said and "Could not serialize" not in said  # the refusal itself, unwrapped
    assert query.recentProgress == [] and set(source.readers().values()) <= {0}


@pytest.mark.timeout(TEST_TIMEOUT)
def test_a_query_restarted_against_a_restarted_memory_sink_log_fails_at_its_start(
    spark: Any, serve: Any, tmp_path: Path
) -> None:
    """The sink keeps its logs' epochs in the checkpoint: the server restarted with a new sink log
    in memory (it forgot the batches published), the query restarted from its checkpoint fails as
    Spark builds its writer, saying the sink log restarted, before any micro-batch or publish."""
    source = ReplayLog("nums", capacity=100)
    source.append(records(20))
    server = serve({"nums": source}, sinks={"results": ReplayLog("results", capacity=100, evict=True)})
    url = server.url
    checkpoint = tmp_path / "checkpoint"

    def start() -> Any:
        return (
            read_stream(spark, url, "nums")
            .writeStream.format("rstreams")
            .option("url", url)
            .option("publisher", "results")
            .option("checkpointLocation", str(checkpoint))
            .trigger(availableNow=True)
            .start()
        )

    first = start()
    await_query(first, "the first run into the sink log to end")
    assert first.exception() is None and server.sink_statistics("results")["published"] >= 1
    server.stop()
    source.append(records(10, start=20))
    restarted = ReplayLog("results", capacity=100, evict=True)
    again = serve({"nums": source}, sinks={"results": restarted}, url=url)
    query = start()
    said = r"sink log 'results' at \S+ was restarted since this query recorded it in its checkpoint"
    with pytest.raises(Exception, match=said) as failed:
        await_query(query, "the restarted query into the restarted sink log to fail")
    assert "rstreams-sink.json" in str(failed.value) and "published a second time" in str(failed.value)
    assert query.recentProgress == [] and restarted.info()["end"] == 0
    assert published_and_refused(again, "results") == (0, 0)
