"""A streaming query in its own process, for tests/spark/test_kill.py to kill with SIGKILL.

    python killed_query.py URL CHECKPOINT [ROWS]

Reads the replay log ``nums`` at URL in micro-batches of ROWS rows (default 50; ``all``: no
bound) and writes them with the ``rstreams`` sink to the sink log ``out`` (test_kill.py and
test_stalls.py restart the same query from the same checkpoint). It runs until killed.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from rstreams.spark import register


def main() -> None:
    url, checkpoint = sys.argv[1:3]
    rows = sys.argv[3] if len(sys.argv) > 3 else "50"
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rstreams-killed-query")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    reader = (
        spark.readStream.format("rstreams")
        .option("url", url)
        .option("publisher", "nums")
        .option("schema", "sensor string, seq bigint, value double")
    )
    if rows != "all":
        reader = reader.option("maxRecordsPerBatch", int(rows))
    query = (
        reader.load()
        .writeStream.format("rstreams")
        .option("url", url)
        .option("publisher", "out")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="0 seconds")
        .start()
    )
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
