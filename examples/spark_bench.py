"""Rows/s into Spark's noop sink: an RS.io replay log (per codec) beside the ceilings; local[2].

    python examples/spark_bench.py [--rows 2000000] [--batch-rows 1000000]

In one run, on one session: the ``rstreams`` source reading a replay log served over TCP
(``arrow``: elements of 64 Ki rows; ``json``: one row per element), an in-process Python
source yielding Arrow batches (no network: the ceiling for a Python source), and Spark's
JVM ``rate-micro-batch`` source, each in micro-batches of about ``--batch-rows`` rows.
Printed: steady rows/s (rows over the summed trigger time, first batch excluded, as in
../shared/notes/spark-python-datasource.md), end-to-end rows/s and the median batch time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows
from pyspark.sql.types import StructType

from rstreams.replay import ReplayLog, ReplayServer
from rstreams.spark import arrow_ipc, register

ARROW_ROWS = 65_536


def arrow_elements(rows: int) -> list[bytes]:
    out = []
    for start in range(0, rows, ARROW_ROWS):
        n = min(ARROW_ROWS, rows - start)
        out.append(arrow_ipc(pa.record_batch({"value": pa.array(range(start, start + n), pa.int64())})))
    return out


def json_elements(rows: int) -> list[bytes]:
    return [json.dumps({"value": i}).encode() for i in range(rows)]


class GenSource(DataSource):
    """The ceiling: an in-process Python source yielding Arrow batches (no network), as in the notes."""

    @classmethod
    def name(cls) -> str:
        return "bench_gen"

    def schema(self) -> str:
        return "value bigint"

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return GenReader(int(self.options["rows"]))


class GenReader(DataSourceStreamReader):
    def __init__(self, rows: int) -> None:
        self.rows = rows

    def initialOffset(self) -> dict[str, int]:
        return {"position": 0}

    def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
        end = self.rows
        if isinstance(limit, ReadMaxRows):
            end = min(end, start["position"] + limit.max_rows)
        return {"position": end}

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(ARROW_ROWS * 15)

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        a, b = start["position"], end["position"]
        middle = (a + b) // 2
        return [InputPartition((a, middle)), InputPartition((middle, b))]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        import numpy as np

        a, b = partition.value
        for s in range(a, b, ARROW_ROWS):
            yield pa.RecordBatch.from_arrays(
                [pa.array(np.arange(s, min(s + ARROW_ROWS, b)))], names=["value"]
            )


def measure(stream: Any, total: int) -> dict[str, float]:
    """Run ``stream`` into the noop sink until ``total`` rows went through; the figures."""
    query = (
        stream.writeStream.format("noop")
        .option("checkpointLocation", tempfile.mkdtemp())
        .trigger(processingTime="0 seconds")
        .start()
    )
    started = time.perf_counter()
    while query.isActive and sum(p["numInputRows"] for p in query.recentProgress) < total:
        time.sleep(0.05)
    wall = time.perf_counter() - started
    query.stop()
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


def rstreams_stream(spark: Any, url: str, log: str, codec: str, per_batch: int) -> Any:
    return (
        spark.readStream.format("rstreams")
        .option("url", url)
        .option("publisher", log)
        .option("schema", "value bigint")
        .option("codec", codec)
        .option("maxRecordsPerBatch", per_batch)
        .load()
    )


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
    spark.sparkContext.setLogLevel("OFF")  # stopping a query mid-batch logs expected errors
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
    spark.dataSource.register(GenSource)
    per_arrow = max(1, args.batch_rows // ARROW_ROWS)
    with ReplayServer(logs) as server:
        measure(rstreams_stream(spark, server.url, "warm-up", "arrow", 2), 4 * ARROW_ROWS)  # workers start
        cases = {
            "rstreams, arrow codec": (
                rstreams_stream(spark, server.url, "arrow", "arrow", per_arrow),
                args.rows,
            ),
            "in-process Python source (ceiling)": (
                spark.readStream.format("bench_gen").option("rows", args.rows).load(),
                args.rows,
            ),
            "rate-micro-batch (JVM)": (
                spark.readStream.format("rate-micro-batch")
                .option("rowsPerBatch", per_arrow * ARROW_ROWS)
                .option("numPartitions", 2)
                .load()
                .select("value"),
                args.rows,
            ),
            "rstreams, json codec": (
                rstreams_stream(spark, server.url, "json", "json", 50_000),
                args.json_rows,
            ),
        }
        for name, (stream, total) in cases.items():
            got = measure(stream, total)
            print(
                f"{name:<36} {got['rows']:>10,} rows  steady {got['steady_rows_per_s']:>11,.0f} rows/s  "
                f"e2e {got['e2e_rows_per_s']:>11,.0f} rows/s  median batch {got['median_batch_ms']:.0f} ms",
                flush=True,
            )
    spark.stop()


if __name__ == "__main__":
    main()
