"""Spark's own progress among a replay server's metrics (rstreams.spark.watch_progress)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from rstreams.observe._families import families
from rstreams.replay import ReplayLog
from rstreams.spark import watch_progress
from testkit.spark import TEST_TIMEOUT, await_query, read_stream, records, wait_progressing

pytestmark = pytest.mark.spark


@pytest.mark.timeout(TEST_TIMEOUT)
def test_rows_per_batch_and_lag_of_a_query_are_server_metrics(spark: Any, serve: Any, tmp_path: Path) -> None:
    """A query of 300 rows in batches of 100: the server's numbers show three batches, 300 rows,
    the last batch's 100 rows and nothing behind, under the query's name; the exposition has them."""
    log = ReplayLog("nums", capacity=1000)
    log.append(records(300))
    server = serve({"nums": log}, metrics=True)
    progress = watch_progress(spark, server)
    try:
        query = (
            read_stream(spark, server.url, "nums", maxRecordsPerBatch=100)
            .writeStream.format("noop")
            .queryName("counted")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        await_query(query, "the availableNow query of 300 rows to end")
        assert query.exception() is None

        def heard() -> bool:  # the listener bus delivers after the batch
            queries = server.metrics().get("spark", {}).get("queries", {})
            return bool(queries.get("counted", {}).get("rows") == 300)

        wait_progressing(
            heard, "the listener to hear every batch", signs=lambda: server.metrics().get("spark", {})
        )
    finally:
        spark.streams.removeListener(progress)
    numbers = server.metrics()["spark"]["queries"]["counted"]
    assert numbers["batches"] == 3 and numbers["batch_rows"] in (0, 100)
    assert numbers["rows_behind"] == 0
    exposed = {family.name: family.samples for family in families(server.metrics())}
    assert exposed["rstreams_spark_rows"] == [(("counted",), 300)]
    assert exposed["rstreams_spark_rows_behind"] == [(("counted",), 0)]
