"""The rstreams sink: rows published on a server's sink log, once per batch even when Spark re-runs it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sparksupport import read_stream, records

from rstreams.spark import ReplayLog
from rstreams.spark._remote import fetch_range

pytestmark = pytest.mark.spark


def published(server: Any, log: ReplayLog) -> list[dict[str, Any]]:
    info = log.info()
    return [json.loads(x) for x in fetch_range(server.url, log.name, info["first"], info["end"])]


@pytest.mark.timeout(240)
def test_stream_sink_publishes_each_batch_once_across_a_rerun(spark: Any, serve: Any, tmp_path: Path) -> None:
    """A batch re-run after its sink commit (checkpoint commit lost) is not published twice."""
    source = ReplayLog("nums", capacity=1000)
    source.append(records(300))
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
        assert query.awaitTermination(120)
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
    assert server.sink_statistics("results") == {"published": 3, "refused": 1}


@pytest.mark.timeout(120)
def test_batch_write(spark: Any, serve: Any) -> None:
    """df.write.format("rstreams") publishes every row once."""
    results = ReplayLog("results", capacity=100, evict=True)
    server = serve({}, sinks={"results": results})
    df = spark.createDataFrame([(i, f"n{i}") for i in range(20)], "id int, name string")
    df.write.format("rstreams").option("url", server.url).option("publisher", "results").mode("append").save()
    rows = published(server, results)
    assert sorted(r["id"] for r in rows) == list(range(20)) and rows[0]["name"].startswith("n")
