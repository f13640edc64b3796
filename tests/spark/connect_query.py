"""The rstreams source and sink through a Spark Connect session, for tests/spark/test_connect.py.

    python connect_query.py URL CHECKPOINT

``SparkSession.builder.remote("local[2]")`` starts a local Spark Connect server (a JVM with
the Connect service) and connects this process to it over gRPC; the data source classes
travel to the server pickled, and run there in its Python workers. Reads the replay log
``nums`` at URL once as a batch and once as a stream (``availableNow``, 40 rows per
micro-batch) into the sink log ``out``, waiting for the query's end while it makes progress
(testkit.spark.wait_progressing: no fixed time for the work); prints one JSON line with what it
saw.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from pyspark.sql import SparkSession

from rstreams.spark import register
from testkit.spark import wait_progressing  # tests/ is on PYTHONPATH (test_connect.py puts it there)


def main() -> None:
    url, checkpoint = sys.argv[1:3]
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = SparkSession.builder.remote("local[2]").getOrCreate()
    register(spark)

    def reader(load: Any) -> Any:
        return (
            load.format("rstreams")
            .option("url", url)
            .option("publisher", "nums")
            .option("schema", "sensor string, seq bigint, value double")
        )

    rows = reader(spark.read).load().collect()
    query = (
        reader(spark.readStream)
        .option("maxRecordsPerBatch", 40)
        .load()
        .writeStream.format("rstreams")
        .option("url", url)
        .option("publisher", "out")
        .option("checkpointLocation", checkpoint)
        .trigger(availableNow=True)
        .start()
    )
    wait_progressing(lambda: not query.isActive, "the availableNow query through Connect to end", query)
    failure = query.exception()
    print(
        json.dumps(
            {
                "session": type(spark).__module__,
                "seqs": sorted(row.seq for row in rows),
                "error": None if failure is None else str(failure)[:500],
            }
        ),
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main()
