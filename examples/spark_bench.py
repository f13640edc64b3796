"""Rows/s into Spark's noop sink: an RS.io replay log (per codec) beside the ceilings, in one session.

    python examples/spark_bench.py [--rows 2000000] [--batch-rows 1000000] [--json-rows 300000] [--remote]

In one run, on one Spark session (local[2]): the ``rstreams`` source reading a replay log
served over TCP (``arrow``: elements of 64 Ki rows, the log counting rows so that
``maxRecordsPerBatch`` is rows), an in-process Python source yielding Arrow batches (no
network: the ceiling for a Python source) and Spark's JVM ``rate-micro-batch`` source, each
``--rows`` rows in micro-batches of ``--batch-rows`` rounded down to whole 64 Ki elements (at
least one; the JVM source never ends, so it runs whole micro-batches until it has ``--rows``:
262,144 rows for ``--rows 200000``, four of 65,536); then the ``rstreams`` source with the
``json`` codec (one row per element), ``--json-rows`` rows in micro-batches of 50,000.
``--remote`` serves the logs from a separate process (a remote publisher) instead of a thread
of the driver. Printed per source: steady rows/s (rows over the summed trigger time, the first
batch, which carries the start-up, excluded), end-to-end rows/s and the median batch time.

The sources and the measurement are benchmarks/spark_sources.py's (the harness's ``spark``
scenario runs each in a fresh process); this script puts them side by side in one session.
Needs ``pip install 'rstreams[spark]'`` and Java 17+.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from spark_sources import ARROW_ROWS, arrow_elements, gen_source, json_elements, measure

SERVE = """
import sys, time
from rstreams.replay import ReplayLog, ReplayServer
from rstreams.spark import arrow_rows
sys.path.insert(0, sys.argv[1])
from spark_sources import arrow_elements, json_elements
rows, json_rows = int(sys.argv[2]), int(sys.argv[3])
logs = {}
for name, elements, count in (("warm-up", arrow_elements(4 * 65_536), arrow_rows),
                              ("arrow", arrow_elements(rows), arrow_rows),
                              ("json", json_elements(json_rows), None)):
    logs[name] = ReplayLog(name, capacity=max(1, len(elements)), rows=count)
    logs[name].append(elements)
server = ReplayServer(logs).start()
print(server.url, flush=True)
sys.stdin.read()  # until the parent closes our stdin
server.stop()
"""


def serve_elsewhere(rows: int, json_rows: int) -> tuple[str, subprocess.Popen[str]]:
    """A replay server in another process: the remote publisher."""
    benchmarks = str(Path(__file__).resolve().parents[1] / "benchmarks")
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE, benchmarks, str(rows), str(json_rows)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process.stdout.readline().strip(), process


def serve_here(rows: int, json_rows: int) -> tuple[str, Any]:
    """A replay server in a thread of this (the driver's) process."""
    from rstreams.replay import ReplayLog, ReplayServer
    from rstreams.spark import arrow_rows

    logs = {}
    for name, elements, count in (
        ("warm-up", arrow_elements(4 * ARROW_ROWS), arrow_rows),
        ("arrow", arrow_elements(rows), arrow_rows),
        ("json", json_elements(json_rows), None),
    ):
        logs[name] = ReplayLog(name, capacity=max(1, len(elements)), rows=count)
        logs[name].append(elements)
    server = ReplayServer(logs).start()
    return server.url, server


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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="spark_bench.py")
    parser.add_argument(
        "--rows", type=int, default=2_000_000, help="rows per source (arrow, ceilings; 2000000)"
    )
    parser.add_argument(
        "--batch-rows", type=int, default=1_000_000, help="rows per micro-batch (about; 1000000)"
    )
    parser.add_argument("--json-rows", type=int, default=300_000, help="rows through the json codec (300000)")
    parser.add_argument("--remote", action="store_true", help="serve the logs from another process")
    args = parser.parse_args(argv)
    for option, value in (
        ("--rows", args.rows),
        ("--batch-rows", args.batch_rows),
        ("--json-rows", args.json_rows),
    ):
        if value < 1:
            parser.exit(2, f"{parser.prog}: {option} needs a whole number >= 1, got {value}\n")
    from rstreams.spark import JavaMissingError, check_java

    try:
        check_java()
    except JavaMissingError as missing:
        parser.exit(2, f"{parser.prog}: {missing}\n")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from rstreams.spark import register

    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")  # its bars would cut into the printed lines
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")  # stopping a query mid-batch logs expected errors
    register(spark)
    spark.dataSource.register(gen_source())
    url, server = (serve_elsewhere if args.remote else serve_here)(args.rows, args.json_rows)
    per_batch = max(1, args.batch_rows // ARROW_ROWS) * ARROW_ROWS
    scratch = tempfile.mkdtemp(prefix="rstreams-spark-bench-")
    try:
        measure(rstreams_stream(spark, url, "warm-up", "arrow", 2 * ARROW_ROWS), 4 * ARROW_ROWS, scratch, 240)
        cases = {
            "rstreams, arrow codec": (rstreams_stream(spark, url, "arrow", "arrow", per_batch), args.rows),
            "in-process Python source (ceiling)": (
                spark.readStream.format("bench_gen")
                .option("rows", args.rows)
                .option("perBatch", per_batch)
                .load(),
                args.rows,
            ),
            "rate-micro-batch (JVM)": (
                spark.readStream.format("rate-micro-batch")
                .option("rowsPerBatch", per_batch)
                .option("numPartitions", 2)
                .load()
                .select("value"),
                args.rows,
            ),
            "rstreams, json codec": (rstreams_stream(spark, url, "json", "json", 50_000), args.json_rows),
        }
        for name, (stream, total) in cases.items():
            got = measure(stream, total, scratch, 600)
            print(
                f"{name:<36} {got['rows']:>10,} rows  steady {got['steady_rows_per_s']:>11,.0f} rows/s  "
                f"e2e {got['e2e_rows_per_s']:>11,.0f} rows/s  median batch {got['median_batch_ms']:.0f} ms",
                flush=True,
            )
    finally:
        if args.remote:
            server.stdin.close()
            server.wait(30)
        else:
            server.stop()
        spark.stop()


if __name__ == "__main__":
    main()
