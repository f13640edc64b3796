"""The demo pipeline on a real Spark standalone cluster: one master and two workers on this machine.

    python examples/spark_cluster.py [--seconds 30]

PySpark's pip package ships the standalone master and worker (``bin/spark-class``). This
starts ``Master`` and two ``Worker`` processes (1 core, 1 GiB each), waits until both
have registered, runs the same pipeline as ``rstreams demo`` with
``--master spark://127.0.0.1:PORT`` (executors on the workers open their own RS.io
connections to the replay server), prints the figures, and stops the cluster.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyspark

from rstreams.spark import check_java
from rstreams.spark._demo import run_demo

REGISTER_TIMEOUT = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def spark_class(*args: str, log: Path) -> subprocess.Popen[bytes]:
    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "PYSPARK_PYTHON": sys.executable}
    with log.open("wb") as out:
        return subprocess.Popen([str(home / "bin" / "spark-class"), *args], stdout=out, stderr=out, env=env)


def wait_for_workers(master_log: Path, count: int) -> None:
    deadline = time.monotonic() + REGISTER_TIMEOUT
    while master_log.read_text(errors="replace").count("Registering worker") < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"workers did not register within {REGISTER_TIMEOUT} s; see {master_log}")
        time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    check_java()
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
        wait_for_workers(master_log, args.workers)
        print(f"standalone cluster at {url}: {args.workers} workers registered (logs in {work})")
        figures = run_demo(seconds=args.seconds, master=url, out=str(work / "demo"))
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
