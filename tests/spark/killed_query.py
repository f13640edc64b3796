"""A streaming query in its own process, for tests/spark/test_kill.py to kill with SIGKILL.

    python killed_query.py URL CHECKPOINT (forever|available-now)

Reads the replay log ``nums`` at URL in micro-batches of 50 rows and writes them with the
``rstreams`` sink to the sink log ``out``. ``forever`` runs until killed; ``available-now``
reads to the log's end and exits.
"""

from __future__ import annotations

import os
import sys

from pyspark.sql import SparkSession

from rstreams.spark import register


def main() -> None:
    url, checkpoint, mode = sys.argv[1:4]
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
    stream = (
        spark.readStream.format("rstreams")
        .option("url", url)
        .option("publisher", "nums")
        .option("schema", "sensor string, seq bigint, value double")
        .option("maxRecordsPerBatch", 50)
        .load()
        .writeStream.format("rstreams")
        .option("url", url)
        .option("publisher", "out")
        .option("checkpointLocation", checkpoint)
    )
    if mode == "available-now":
        query = stream.trigger(availableNow=True).start()
    else:
        query = stream.trigger(processingTime="0 seconds").start()
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
