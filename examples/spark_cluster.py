"""One query over three log servers on a real Spark standalone cluster: a master and two workers.

    python examples/spark_cluster.py [--rows 300000] [--workers 2]
    python examples/spark_cluster.py --demo [--seconds 30]     # the rstreams demo pipeline instead

PySpark's pip package ships the standalone master and worker (``bin/spark-class``). This
starts ``Master`` and ``--workers`` ``Worker`` processes (1 core, 1 GiB each) and waits until
all have registered. Then three replay servers (``ReplayServer``, one port each) serve a log
``sensors/I`` of JSON rows and a sink log ``results``; one streaming query on
``spark://127.0.0.1:PORT`` reads ``sensors/*`` from the three servers (executors on the
workers fetch each log's ranges straight from its server; the driver only plans), converts
the readings and writes them spread by sensor over the three servers' ``results``. It
checks that every row arrived exactly once, prints the figures, and stops the cluster.

Needs ``pip install 'rstreams[spark]'`` and Java 17+; the workers run this interpreter
(``PYSPARK_PYTHON``), which must import ``rstreams``.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from rstreams.replay import ReplayLog, ReplayServer, fetch_range
from rstreams.spark import JavaMissingError, check_java, register
from rstreams.spark._demo import run_demo

REGISTER_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spark_class(*args: str, log: Path) -> subprocess.Popen[bytes]:
    import pyspark  # (here: without it, importing rstreams.spark above already said what to install)

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    with log.open("wb") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=out, stderr=out, env=env)


def wait_for_workers(master_log: Path, count: int, processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + REGISTER_TIMEOUT
    while master_log.read_text(errors="replace").count("Registering worker") < count:
        exited = [process.returncode for process in processes if process.poll() is not None]
        if exited:
            raise RuntimeError(
                f"a Spark process exited ({exited[0]}) before the workers registered; see {master_log.parent}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(f"workers did not register within {REGISTER_TIMEOUT} s; see {master_log}")
        time.sleep(0.5)


SENSORS = ("attic", "cellar", "garage", "garden", "kitchen")
"""Names whose hashes (option keyColumn) reach each of the three sink logs: 3, 1 and 1 of them."""


def readings(server: int, count: int) -> list[bytes]:
    """``count`` JSON readings for log ``sensors/SERVER``; ``seq`` is unique across the servers."""
    return [
        json.dumps(
            {"sensor": SENSORS[i % len(SENSORS)], "seq": server * count + i, "celsius": i % 40}
        ).encode()
        for i in range(count)
    ]


def tasks_per_executor(spark: Any) -> dict[str, int]:
    """Tasks each executor ran (``host:port``), from the driver's UI (Spark's REST API)."""
    app = spark.sparkContext.applicationId
    with urllib.request.urlopen(
        f"{spark.sparkContext.uiWebUrl}/api/v1/applications/{app}/executors"
    ) as answer:
        executors = json.load(answer)
    return {e["hostPort"]: e["totalTasks"] for e in executors if e["id"] != "driver"}


def many_servers(master: str, rows: int, work: Path) -> dict[str, object]:
    """The query over three servers on ``master``; its figures, after checking every row once."""
    from pyspark.sql import SparkSession

    per_server = rows // 3
    sinks = [ReplayLog("results", capacity=rows, evict=True) for _ in range(3)]
    servers = []
    for i, sink in enumerate(sinks):
        log = ReplayLog(f"sensors/{i}", capacity=per_server)
        log.append(readings(i, per_server))
        servers.append(ReplayServer({log.name: log}, sinks={"results": sink}).start())
    urls = ",".join(server.url for server in servers)
    spark = (
        SparkSession.builder.master(master)
        .appName("rstreams-three-servers")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    try:
        spark.sparkContext.setLogLevel("WARN")
        register(spark)
        started = time.perf_counter()
        query = (
            spark.readStream.format("rstreams")
            .option("url", urls)
            .option("publisher", "sensors/*")
            .option("schema", "sensor string, seq bigint, celsius double")
            .option("maxRecordsPerBatch", max(1, rows // 4))
            .load()
            .selectExpr("sensor", "seq", "celsius * 1.8 + 32 AS fahrenheit")
            .writeStream.format("rstreams")
            .option("url", urls)
            .option("publisher", "results")
            .option("keyColumn", "sensor")
            .option("checkpointLocation", str(work / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(f"the query failed: {query.exception()}")
        seconds = time.perf_counter() - started
        batches = [p for p in query.recentProgress if p["numInputRows"]]
        written = [
            [json.loads(item) for item in fetch_range(server.url, "results", 0, sink.end)]
            for server, sink in zip(servers, sinks, strict=True)
        ]
        seqs = sorted(row["seq"] for rows_ in written for row in rows_)
        if seqs != list(range(3 * per_server)):
            raise RuntimeError(f"the results are not every row once: {len(seqs)} rows for {3 * per_server}")
        return {
            "rows": len(seqs),
            "seconds": round(seconds, 1),
            "rows_per_s": round(len(seqs) / seconds),
            "micro_batches": len(batches),
            "rows_per_sink_log": [len(rows_) for rows_ in written],
            "sensors_per_sink_log": [sorted({row["sensor"] for row in rows_}) for rows_ in written],
            "tasks_per_executor": tasks_per_executor(spark),
        }
    finally:
        spark.stop()
        for server in servers:
            server.stop()


def problem(args: argparse.Namespace) -> str | None:
    """The first option out of range, named (checked before anything starts)."""
    if args.rows < 3:
        return f"--rows needs a whole number >= 3 (a third per server), got {args.rows}"
    if args.workers < 1:
        return f"--workers needs a whole number >= 1, got {args.workers}"
    if not args.seconds > 0:
        return f"--seconds needs a number > 0, got {args.seconds}"
    return None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="spark_cluster.py")
    parser.add_argument(
        "--rows",
        type=int,
        default=300_000,
        help="rows over the three servers, rounded down to a multiple of 3 (300000)",
    )
    parser.add_argument("--demo", action="store_true", help="run the rstreams demo pipeline instead")
    parser.add_argument("--seconds", type=float, default=30.0, help="the demo's duration in seconds (30)")
    parser.add_argument("--workers", type=int, default=2, help="Worker processes, 1 core and 1 GiB each (2)")
    args = parser.parse_args(argv)
    bad = problem(args)
    if bad is None:
        try:
            check_java()
        except JavaMissingError as missing:
            bad = str(missing)
    if bad is not None:
        parser.exit(2, f"{parser.prog}: {bad}\n")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = Path(tempfile.mkdtemp(prefix="rstreams-cluster-"))
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log = work / "master.log"
    processes = [
        spark_class(
            "org.apache.spark.deploy.master.Master",
            *("--host", "127.0.0.1", "--port", str(port), "--webui-port", str(free_port())),
            log=master_log,
        )
    ]
    try:
        processes.extend(
            spark_class(
                "org.apache.spark.deploy.worker.Worker",
                url,
                *("--host", "127.0.0.1", "--cores", "1", "--memory", "1g"),
                *("--webui-port", str(free_port()), "--work-dir", str(work / f"worker-{i}")),
                log=work / f"worker-{i}.log",
            )
            for i in range(args.workers)
        )
        wait_for_workers(master_log, args.workers, processes)
        print(f"standalone cluster at {url}: {args.workers} workers registered (logs in {work})")
        if args.demo:
            figures = run_demo(seconds=args.seconds, master=url, out=str(work / "demo"))
        else:
            figures = many_servers(url, args.rows, work)
        print(f"\ncluster run: {figures}")
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
