"""What the Spark tests share: records, readers, bounded waits on query progress."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCHEMA = "sensor string, seq bigint, value double"


def record(i: int) -> bytes:
    return json.dumps({"sensor": f"s{i % 3}", "seq": i, "value": i * 0.5}).encode()


def records(n: int, start: int = 0) -> list[bytes]:
    return [record(i) for i in range(start, start + n)]


def read_stream(spark: Any, url: str, publisher: str, schema: str = SCHEMA, **options: Any) -> Any:
    reader = (
        spark.readStream.format("rstreams")
        .option("url", url)
        .option("publisher", publisher)
        .option("schema", schema)
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``condition`` (cheap: query status or progress) until true; fail after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def end_position(query: Any) -> int:
    """The end offset of the query's last completed micro-batch (-1 before the first)."""
    progress = query.lastProgress
    if not progress or not progress["sources"]:
        return -1
    end = progress["sources"][0]["endOffset"]
    if isinstance(end, str):
        end = json.loads(end)
    return int(end["position"]) if end else -1


KILLED_QUERY = Path(__file__).resolve().parents[1] / "spark" / "killed_query.py"
"""The query tests/spark/test_kill.py and test_stalls.py start and kill, a script of its own."""


def start_query(url: str, checkpoint: Path, log: Path, rows: str = "50") -> subprocess.Popen[bytes]:
    """The query in a new process group (its JVM included), its output in ``log``; ``rows`` per
    micro-batch (``"all"``: no bound)."""
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, str(KILLED_QUERY), url, str(checkpoint), rows],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


def kill_group(process: subprocess.Popen[Any]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(30)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_server(
    url: str, directory: Path, lines: Path, log: Path, name: str = "nums", capacity: int = 300
) -> subprocess.Popen[bytes]:
    """``rstreams serve URL NAME`` over a file-backed log, fed ``lines`` from its first line on
    (``--input-from 0``: a restart goes on at the log's end)."""
    command = [sys.executable, "-m", "rstreams.cli", "serve", url, name]
    command += ["--path", str(directory), "--capacity", str(capacity), "--input-from", "0"]
    with lines.open("rb") as feed, log.open("ab") as out:
        return subprocess.Popen(
            command, stdin=feed, stdout=out, stderr=subprocess.STDOUT, env=dict(os.environ)
        )


def end_positions(query: Any) -> dict[tuple[str, str], int]:
    """The end offsets, per ``(url, log)``, of the last completed micro-batch of a query over
    several logs (empty before the first)."""
    progress = query.lastProgress
    if not progress or not progress["sources"]:
        return {}
    end = progress["sources"][0]["endOffset"]
    if isinstance(end, str):
        end = json.loads(end)
    if not end:
        return {}
    return {(url, name): int(at) for url, names in end["logs"].items() for name, at in names.items()}
