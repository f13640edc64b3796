"""Rows/s into Spark's noop sink for one source, in a fresh process (run by run.py's ``spark`` scenario).

    python benchmarks/spark_sources.py --one rstreams-arrow --rows 6000000 --batch-rows 1000000
    python benchmarks/spark_sources.py --check      # exit 1 with the reason if pyspark or Java 17+ is missing

Sources (``--one``):

* ``rstreams-arrow``: the ``rstreams`` data source reading a replay log served over loopback TCP
  by a ``ReplayServer`` in this process; each element is an Arrow IPC batch of 64 Ki rows, and
  the log counts them (``rows=arrow_rows``), so ``maxRecordsPerBatch`` is rows: micro-batches
  of about ``--batch-rows`` rows (a whole number of elements).
* ``rstreams-json``: the same, one JSON object ``{"value": N}`` per element, micro-batches of
  ``--batch-rows`` rows (decoded in bulk by Arrow's JSON reader).
* ``rstreams-msgpack``: the same, one msgpack map per element (decoded in bulk by msgpack's
  streaming unpacker, columns converted by Arrow).
* ``rstreams-sink-json`` and ``rstreams-sink-arrow``: the other way: Spark's
  ``rate-micro-batch`` source into the ``rstreams`` sink, publishing on an evicting sink log of
  a ``ReplayServer`` in this process, both through Spark's Arrow writer: one JSON element per
  row (timestamps made text by Arrow), or Arrow IPC elements of up to 64 Ki rows.
* ``rstreams-servers-1`` and ``rstreams-servers-3``: Arrow elements as in ``rstreams-arrow``,
  but served by replay servers in processes of their own (one server holding every row, or
  three servers holding a third each, one query over the three with a list of URLs); the
  driver asks every server where its log ends, executors read each log's ranges from its
  server. ``latest_offset_ms`` (the driver's planning calls) and ``add_batch_ms`` (the
  executors' reading) say where a batch's time goes.
* ``python-inprocess``: an in-process Python data source yielding Arrow batches, no network
  (the ceiling for a Python source, as in ../shared/notes/spark-python-datasource.md).
* ``rate-micro-batch``: Spark's JVM source (``select("value")``).

One Spark session (local[2]) per process. First a small warm-up query of the same source
(Python workers start, the JIT warms), then the measured query. Printed, as one JSON line:
steady rows/s (rows over the summed ``triggerExecution`` time, the first batch excluded, as in
the notes), end-to-end rows/s (rows over the wall time from ``start()`` until every row was
reported), the median batch time, and the rows and batches seen.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

ARROW_ROWS = 65_536
SOURCES = (
    "rstreams-arrow",
    "rstreams-json",
    "rstreams-msgpack",
    "rstreams-sink-json",
    "rstreams-sink-arrow",
    "rstreams-servers-1",
    "rstreams-servers-3",
    "python-inprocess",
    "rate-micro-batch",
)


def check() -> str | None:
    """Why this interpreter cannot run the Spark sources, or None if it can."""
    try:
        import pyarrow  # noqa: F401
        import pyspark  # noqa: F401
    except ImportError as error:
        return f"pyspark/pyarrow not installed in {sys.executable} ({error}); pip install 'rstreams[spark]'"
    try:
        from rstreams.spark import JavaMissingError, check_java
    except ImportError as error:
        return f"rstreams.spark does not import ({error})"
    try:
        check_java()
    except JavaMissingError as error:
        return str(error)
    return None


def arrow_elements(rows: int) -> list[bytes]:
    import pyarrow as pa

    from rstreams.spark import arrow_ipc

    out = []
    for start in range(0, rows, ARROW_ROWS):
        n = min(ARROW_ROWS, rows - start)
        out.append(arrow_ipc(pa.record_batch({"value": pa.array(range(start, start + n), pa.int64())})))
    return out


def json_elements(rows: int) -> list[bytes]:
    return [b'{"value": %d}' % i for i in range(rows)]  # what json.dumps({"value": i}) makes


def msgpack_elements(rows: int) -> list[bytes]:
    import msgpack

    return [msgpack.packb({"value": i}) for i in range(rows)]


def _split(rows: int, parts: int) -> list[int]:
    """``rows`` in ``parts`` shares of whole Arrow elements (the last takes the rest)."""
    elements = -(-rows // ARROW_ROWS)
    each = elements // parts
    shares = [each * ARROW_ROWS] * (parts - 1)
    return [*shares, rows - sum(shares)]


def _served(rows: int, warmup_rows: int) -> tuple[str, subprocess.Popen[bytes]]:
    """A replay server in a process of its own holding ``measured`` (and ``warm-up``) logs of
    Arrow elements: its URL and the process (``--serve``)."""
    command = [sys.executable, __file__, "--serve", str(rows), "--warmup-rows", str(warmup_rows)]
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert process.stdout is not None
    line = process.stdout.readline().decode()
    if not line.startswith("url "):
        process.kill()
        raise RuntimeError(f"the replay server process did not start: {line!r}")
    return line.split()[1], process


def serve_logs(rows: int, warmup_rows: int) -> None:
    """``--serve ROWS``: serve ``measured`` (and ``warm-up``) until standard input closes."""
    from rstreams.replay import ReplayLog, ReplayServer
    from rstreams.spark import arrow_rows

    logs = {}
    for name, count in (("measured", rows), ("warm-up", warmup_rows)):
        elements = arrow_elements(count)
        logs[name] = ReplayLog(name, capacity=max(1, len(elements)), rows=arrow_rows)
        logs[name].append(elements)
    with ReplayServer(logs) as server:
        print(f"url {server.url}", flush=True)
        sys.stdin.read()


def gen_source() -> type:
    """The ceiling: a Python data source yielding Arrow batches from memory (no network)."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
    from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows

    class GenReader(DataSourceStreamReader):
        def __init__(self, rows: int, per_batch: int) -> None:
            self.rows = rows
            self.per_batch = per_batch

        def initialOffset(self) -> dict[str, int]:
            return {"position": 0}

        def latestOffset(self, start: dict[str, int], limit: ReadLimit) -> dict[str, int]:
            end = self.rows
            if isinstance(limit, ReadMaxRows):
                end = min(end, start["position"] + limit.max_rows)
            return {"position": end}

        def getDefaultReadLimit(self) -> ReadLimit:
            return ReadMaxRows(self.per_batch)

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

    class GenSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "bench_gen"

        def schema(self) -> str:
            return "value bigint"

        def streamReader(self, schema: Any) -> DataSourceStreamReader:
            return GenReader(int(self.options["rows"]), int(self.options["perBatch"]))

    return GenSource


def measure(
    stream: Any, total: int, checkpoints: str, timeout: float, sink: dict[str, str] | None = None
) -> dict[str, float]:
    """Run ``stream`` into the noop sink (or the ``rstreams`` sink with the options ``sink``)
    until ``total`` rows went through; the figures."""
    writer = stream.writeStream.format("noop") if sink is None else stream.writeStream.format("rstreams")
    for key, value in (sink or {}).items():
        writer = writer.option(key, value)
    query = (
        writer.option("checkpointLocation", tempfile.mkdtemp(dir=checkpoints))
        .trigger(processingTime="0 seconds")
        .start()
    )
    started = time.perf_counter()
    while query.isActive and sum(p["numInputRows"] for p in query.recentProgress) < total:
        if time.perf_counter() - started > timeout:
            query.stop()
            raise TimeoutError(f"{total:,} rows not seen within {timeout:.0f} s")
        time.sleep(0.02)
    wall = time.perf_counter() - started
    error = query.exception()
    query.stop()
    if error is not None:
        raise RuntimeError(f"the query failed: {str(error).splitlines()[0][:300]}")
    batches = [p for p in query.recentProgress if p["numInputRows"]]
    rows = sum(p["numInputRows"] for p in batches)
    if rows < total:
        raise RuntimeError(f"the query ended after {rows:,} of {total:,} rows")
    steady = batches[1:] or batches
    steady_s = sum(p["durationMs"]["triggerExecution"] for p in steady) / 1000
    return {
        "rows": rows,
        "batches": len(batches),
        "steady_rows_per_s": sum(p["numInputRows"] for p in steady) / steady_s,
        "e2e_rows_per_s": rows / wall,
        "median_batch_ms": statistics.median(p["durationMs"]["triggerExecution"] for p in batches),
        "latest_offset_ms": statistics.median(p["durationMs"].get("latestOffset", 0) for p in batches),
        "add_batch_ms": statistics.median(p["durationMs"].get("addBatch", 0) for p in batches),
        "first_batch_ms": batches[0]["durationMs"]["triggerExecution"],
    }


def run(source: str, rows: int, batch_rows: int, warmup_rows: int, timeout: float) -> dict[str, Any]:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    import pyspark
    from pyspark.sql import SparkSession

    from rstreams.spark import ReplayLog, ReplayServer, arrow_rows, check_java, register

    scratch = tempfile.mkdtemp(prefix="rstreams-spark-bench-")
    began = time.perf_counter()
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "4g")
        .config("spark.sql.warehouse.dir", os.path.join(scratch, "warehouse"))
        .config("spark.local.dir", scratch)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("OFF")  # stopping a query mid-batch logs expected errors
    session_s = time.perf_counter() - began
    server = None
    servers: list[tuple[str, subprocess.Popen[bytes]]] = []
    sink: dict[str, str] | None = None
    try:
        if source.startswith("rstreams-sink-"):
            register(spark)
            codec = source.removeprefix("rstreams-sink-")
            results = ReplayLog("results", capacity=1_000_000, evict=True)
            server = ReplayServer({}, sinks={"results": results}).start()
            sink = {"url": server.url, "publisher": "results", "codec": codec}
            per_batch = max(1, batch_rows // ARROW_ROWS) * ARROW_ROWS

            def rate(per: int) -> Any:
                return (
                    spark.readStream.format("rate-micro-batch")
                    .option("rowsPerBatch", per)
                    .option("numPartitions", 2)
                    .load()
                    .select("value")
                )

            warm_stream, measured_stream = rate(max(1, warmup_rows // 2)), rate(per_batch)
            label = f"Spark's rate-micro-batch source into the rstreams sink, codec {codec}"
        elif source.startswith("rstreams-servers-"):
            register(spark)
            count_servers = int(source.removeprefix("rstreams-servers-"))
            shares = zip(_split(rows, count_servers), _split(warmup_rows, count_servers), strict=True)
            servers = [_served(share, warm_share) for share, warm_share in shares]
            urls = ",".join(url for url, _ in servers)
            per_batch = max(1, batch_rows // ARROW_ROWS) * ARROW_ROWS

            def stream(log: str, total: int) -> Any:
                del total
                return (
                    spark.readStream.format("rstreams")
                    .option("url", urls)
                    .option("publisher", log)
                    .option("schema", "value bigint")
                    .option("codec", "arrow")
                    .option("maxRecordsPerBatch", per_batch)
                    .load()
                )

            warm_stream = stream("warm-up", warmup_rows) if warmup_rows else None
            measured_stream = stream("measured", rows)
            label = f"{count_servers} replay server process(es) over loopback TCP, Arrow IPC elements"
        elif source.startswith("rstreams-"):
            register(spark)
            codec = source.removeprefix("rstreams-")
            make = {"arrow": arrow_elements, "json": json_elements, "msgpack": msgpack_elements}[codec]
            count = arrow_rows if codec == "arrow" else None
            rows_per_element = ARROW_ROWS if codec == "arrow" else 1
            warm, measured = make(warmup_rows), make(rows)
            logs = {"measured": ReplayLog("measured", capacity=len(measured), rows=count)}
            logs["measured"].append(measured)
            if warm:  # each query reads its own log
                logs["warm-up"] = ReplayLog("warm-up", capacity=len(warm), rows=count)
                logs["warm-up"].append(warm)
            server = ReplayServer(logs).start()
            per_batch = max(1, batch_rows // rows_per_element) * rows_per_element  # rows

            def stream(log: str, total: int) -> Any:
                del total
                return (
                    spark.readStream.format("rstreams")
                    .option("url", server.url)
                    .option("publisher", log)
                    .option("schema", "value bigint")
                    .option("codec", codec)
                    .option("maxRecordsPerBatch", per_batch)
                    .load()
                )

            warm_stream = stream("warm-up", warmup_rows) if warmup_rows else None
            measured_stream = stream("measured", rows)
            label = f"RS.io replay log over loopback TCP, codec {codec}"
        elif source == "python-inprocess":
            spark.dataSource.register(gen_source())
            per_batch = max(1, batch_rows // ARROW_ROWS) * ARROW_ROWS

            def stream(log: str, total: int) -> Any:
                return (
                    spark.readStream.format("bench_gen")
                    .option("rows", total)
                    .option("perBatch", per_batch)
                    .load()
                )

            warm_stream, measured_stream = stream("", warmup_rows), stream("", rows)
            label = "in-process Python source, Arrow batches"
        elif source == "rate-micro-batch":
            per_batch = max(1, batch_rows // ARROW_ROWS) * ARROW_ROWS

            def rate(per: int) -> Any:
                return (
                    spark.readStream.format("rate-micro-batch")
                    .option("rowsPerBatch", per)
                    .option("numPartitions", 2)
                    .load()
                    .select("value")
                )

            warm_stream, measured_stream = rate(max(1, warmup_rows // 2)), rate(per_batch)
            label = "Spark's JVM rate-micro-batch source"
        else:
            raise SystemExit(f"unknown source {source!r}; choose from {SOURCES}")
        if warmup_rows > 0:  # Python workers start; discarded
            measure(warm_stream, warmup_rows, scratch, timeout, sink)
        got = measure(measured_stream, rows, scratch, timeout, sink)
    finally:
        if server is not None:
            server.stop()
        for _, process in servers:
            process.kill()
            process.wait(10)
        spark.stop()
        shutil.rmtree(scratch, ignore_errors=True)
    got.update(
        source=source,
        what=label,
        rows_per_batch=per_batch,
        session_s=round(session_s, 2),
        loop="local[2]",
        version=f"pyspark {pyspark.__version__}, Java {check_java()}",
    )
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--one", choices=SOURCES)
    parser.add_argument("--check", action="store_true", help="exit 1 with the reason if Spark cannot run")
    parser.add_argument("--serve", type=int, help="serve ROWS as a replay log (rstreams-servers-N)")
    parser.add_argument("--rows", type=int, default=6_000_000, help="rows in the measured query")
    parser.add_argument("--batch-rows", type=int, default=1_000_000, help="rows per micro-batch (about)")
    parser.add_argument("--warmup-rows", type=int, default=4 * ARROW_ROWS)
    parser.add_argument("--timeout", type=float, default=240.0, help="per query, seconds")
    args = parser.parse_args()
    if args.check:
        why = check()
        if why:
            print(why, file=sys.stderr)
            raise SystemExit(1)
        print(json.dumps({"ok": True}))
        return
    if args.serve is not None:
        serve_logs(args.serve, args.warmup_rows)
        return
    if args.one is None:
        parser.error("--one SOURCE or --check")
    print(json.dumps(run(args.one, args.rows, args.batch_rows, args.warmup_rows, args.timeout)), flush=True)


if __name__ == "__main__":
    main()
