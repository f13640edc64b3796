"""Rows/s from an RS.io replay log into Spark (noop sink), per codec; local[2].

    python examples/spark_bench.py [--rows 2000000] [--batch-rows 1000000]

For each codec the log holds ``--rows`` rows (``arrow``: elements of 64 Ki rows each;
``json``: one row per element). A streaming query with ``trigger(availableNow=True)``
reads them in micro-batches of ``--batch-rows`` rows into the ``noop`` sink. Printed:
steady rows/s (rows over the summed trigger time, first batch excluded, as in
../shared/notes/spark-python-datasource.md) and the median micro-batch time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import pyarrow as pa

from rstreams.spark import ReplayLog, ReplayServer, arrow_ipc, register

ARROW_ROWS = 65_536


def arrow_elements(rows: int) -> list[bytes]:
    out = []
    for start in range(0, rows, ARROW_ROWS):
        n = min(ARROW_ROWS, rows - start)
        out.append(arrow_ipc(pa.record_batch({"value": pa.array(range(start, start + n), pa.int64())})))
    return out


def json_elements(rows: int) -> list[bytes]:
    return [json.dumps({"value": i}).encode() for i in range(rows)]


def run(spark: object, url: str, codec: str, per_batch: int, log: str | None = None) -> dict[str, float]:
    query = (
        spark.readStream.format("rstreams")  # type: ignore[attr-defined]
        .option("url", url)
        .option("publisher", log or codec)
        .option("schema", "value bigint")
        .option("codec", codec)
        .option("maxRecordsPerBatch", per_batch)
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", tempfile.mkdtemp())
        .trigger(availableNow=True)
        .start()
    )
    started = time.perf_counter()
    query.awaitTermination()
    wall = time.perf_counter() - started
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in batches)
    steady = batches[1:] or batches
    steady_rows = sum(p["numInputRows"] for p in steady)
    steady_s = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
    return {
        "rows": rows,
        "e2e_rows_per_s": rows / wall,
        "steady_rows_per_s": steady_rows / steady_s,
        "median_batch_ms": statistics.median(p["durationMs"]["triggerExecution"] for p in batches),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--batch-rows", type=int, default=1_000_000)
    parser.add_argument("--json-rows", type=int, default=300_000)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    arrow = arrow_elements(args.rows)
    logs = {
        "warm-up": ReplayLog("warm-up", capacity=len(arrow)),
        "arrow": ReplayLog("arrow", capacity=len(arrow)),
        "json": ReplayLog("json", capacity=args.json_rows),
    }
    logs["arrow"].append(arrow)
    logs["warm-up"].append(arrow[:4])  # a query's commits trim its log: each run reads its own
    logs["json"].append(json_elements(args.json_rows))
    with ReplayServer(logs) as server:
        run(spark, server.url, "arrow", 2, "warm-up")  # Python workers, imports
        for codec, per_batch in (("arrow", max(1, args.batch_rows // ARROW_ROWS)), ("json", 50_000)):
            got = run(spark, server.url, codec, per_batch)
            print(
                f"{codec:>5}: {got['rows']:>10,} rows  steady {got['steady_rows_per_s']:>12,.0f} rows/s  "
                f"e2e {got['e2e_rows_per_s']:>12,.0f} rows/s  median batch {got['median_batch_ms']:.0f} ms"
            )
    spark.stop()


if __name__ == "__main__":
    main()
