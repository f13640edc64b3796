"""Read an RS.io stream in Spark, exactly once, and publish the results back over RS.io.

    python examples/spark_stream.py

1. Any Publisher (here ``rstreams.range`` mapped to JSON) feeds a :class:`ReplayLog`,
   which numbers the elements and keeps them until Spark commits them. It asks its
   upstream for more only as Spark commits: Spark's pace sets the demand.
2. :class:`ReplayServer` serves the log over RS.io (``tcp://127.0.0.1:PORT``), plus a sink
   log ``squares`` that the ``rstreams`` sink writes to.
3. Spark reads with ``format("rstreams")`` in micro-batches of at most 1000 rows
   (``maxRecordsPerBatch``), computes, and writes with ``format("rstreams")``; restarting
   the query from its checkpoint would neither lose nor repeat a row. The log holds at
   most 2000 numbers at a time, so the 5000 go through as Spark commits batches.

Needs ``pip install 'rstreams[spark]'`` and Java 17+; without Java it exits 2 with one line
saying so, before Spark starts.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time

import rstreams
from rstreams.replay import ReplayLog, ReplayServer
from rstreams.spark import JavaMissingError, check_java, register


def main() -> None:
    try:
        check_java()
    except JavaMissingError as missing:
        print(f"spark_stream.py: {missing}", file=sys.stderr)
        sys.exit(2)
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    numbers = rstreams.range(0, 5000).map(lambda i: json.dumps({"n": i}).encode())
    log = ReplayLog("numbers", capacity=2000).feed(numbers)
    squares = ReplayLog("squares", capacity=10_000, evict=True)
    with ReplayServer({"numbers": log}, sinks={"squares": squares}) as server:
        spark = (
            SparkSession.builder.master("local[2]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        query = (
            spark.readStream.format("rstreams")
            .option("url", server.url)
            .option("publisher", "numbers")
            .option("schema", "n bigint")
            .option("maxRecordsPerBatch", 1000)
            .load()
            .selectExpr("n", "n * n AS square")
            .writeStream.format("rstreams")
            .option("url", server.url)
            .option("publisher", "squares")
            .option("checkpointLocation", tempfile.mkdtemp())
            .start()
        )

        def batches() -> list[int]:
            return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"]]

        # The log holds at most 2000 numbers; it gets the rest from upstream as Spark commits.
        # The sink publishes a batch before Spark reports its progress: wait for both.
        deadline = time.monotonic() + 300
        while (squares.info()["end"] < 5000 or sum(batches()) < 5000) and time.monotonic() < deadline:
            if not query.isActive:
                break
            time.sleep(0.2)
        query.stop()
        print("micro-batches:", batches())
        print("published on 'squares':", squares.info())
        spark.stop()


if __name__ == "__main__":
    main()
