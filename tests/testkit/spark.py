"""What the Spark tests share: records, readers, bounded waits on query progress.

The waits are bounded by :class:`testkit.patience.Patience` over this process and its
descendants (Spark's JVM, its Python workers, the servers a test started): the seconds other
processes' CPU took from them do not count, so a loaded machine stretches a wait instead of
failing it."""

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

from testkit import patience
from testkit.bound import HARD
from testkit.patience import Patience

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


def _patience(limit: float) -> Patience:
    """The bound of a wait on Spark: over this process and all its descendants (the JVM that
    pyspark started, its workers, a test's servers)."""
    return Patience(limit, [os.getpid()])


def wait_until(condition: Callable[[], object], timeout: float, what: str) -> None:
    """Poll ``condition`` (cheap: query status or progress) until true; fail after ``timeout`` s
    of the own time of this process and its descendants (:class:`Patience`)."""
    bound = _patience(timeout)
    while not condition():
        if bound.left() <= 0:
            raise AssertionError(f"timed out after {bound.said()} waiting for {what}")
        time.sleep(0.05)


STALL = 180.0
"""Seconds (of own time, :func:`_patience`) a wait on queries goes on with no new sign of progress
before it fails: far longer than one step of these queries takes, so only a stall reaches it."""
CAP = 600.0
"""The bound (in own time) of one wait however much progress it sees: a guard against a query that
goes on moving without ever reaching what is waited for."""
TEST_TIMEOUT = 900
"""The hang guard (pytest-timeout, wall time) of a Spark test that waits on queries: above
:data:`CAP`, so on a quiet machine a wait fails first, saying what stalled; a quiet run takes
seconds, one at load 30 minutes."""
POLL = 0.2
"""Seconds between two looks at the queries (each look is a few calls into the JVM)."""


def progress_signs(query: Any) -> set[str]:
    """What ``query`` has shown so far, as text: its status message and each micro-batch it
    completed (id, rows, end offsets). A wait counts a sign it has not seen before as progress;
    Spark's periodic reports of an idle query repeat the same signs, so they do not count."""
    signs = {f"status {query.status['message']!r}"}
    for progress in query.recentProgress:
        ends = [source["endOffset"] for source in progress["sources"]]
        signs.add(f"batch {progress['batchId']}: {progress['numInputRows']} rows, up to {ends}")
    return signs


def wait_progressing(
    done: Callable[[], object],
    what: str,
    *queries: Any,
    signs: Callable[[], object] | None = None,
    stall: float = STALL,
    cap: float = CAP,
) -> None:
    """Wait until ``done()`` while the ``queries`` (and ``signs()``, e.g. a sink log's end or a
    count of rows seen) make progress; fail naming what stalled once nothing new was seen for
    ``stall`` seconds, or after ``cap`` seconds in all (both of own time, :func:`_patience`). No
    fixed time for the work itself: on a loaded machine it takes as long as it takes, as long as
    it moves."""
    seen: set[str] = set()
    last: list[str] = []
    bound = _patience(cap)
    moved = (0.0, 0.0)  # own and wall seconds at the last new sign (one look at /proc a poll)
    while not done():
        now = set()
        for query in queries:
            now |= {f"query {query.name or query.id}: {sign}" for sign in progress_signs(query)}
        if signs is not None:
            now.add(f"{signs()!r}")
        own, wall = bound.spent()
        still = own - moved[0], wall - moved[1]
        if not now <= seen:
            last = sorted(now - seen)
            seen |= now
            moved = own, wall
        elif min(stall - still[0], HARD * stall - still[1]) <= 0:
            raise AssertionError(
                f"stalled waiting for {what}: nothing moved for {stall:g} s of own time"
                f" ({still[0]:.1f} s; {still[1]:.1f} s in all); now: {_statuses(queries)};"
                f" the last new signs of progress: {last}"
            )
        if min(cap - own, HARD * cap - wall) <= 0:
            raise AssertionError(
                f"not done after {cap:g} s (the guard of a wait) waiting for {what}, though still"
                f" moving ({bound.said()}); now: {_statuses(queries)}; the last new signs of"
                f" progress: {last}"
            )
        time.sleep(POLL)


def await_query(query: Any, what: str, *, signs: Callable[[], object] | None = None) -> None:
    """Wait for ``query`` to end (an ``availableNow`` query, or one that fails) while it makes
    progress (:func:`wait_progressing`); raise its failure as ``awaitTermination`` does."""
    wait_progressing(lambda: not query.isActive, what, query, signs=signs)
    query.awaitTermination()  # (ended: returns at once, or raises the query's exception)


def restart_to_the_end(spark: Any, url: str, checkpoint: Path, out: Any, max_records: int) -> None:
    """The killed query run again from ``checkpoint`` in this process's warm session (a new
    driver, the same checkpoint): ``nums`` into ``out`` until the input's end (``availableNow``,
    ``max_records`` a micro-batch), waited for while ``out`` grows."""
    restarted = (
        read_stream(spark, url, "nums", maxRecordsPerBatch=max_records)
        .writeStream.format("rstreams")
        .option("url", url)
        .option("publisher", "out")
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    await_query(restarted, "the restarted query to read to the end", signs=lambda: out.end)


def _statuses(queries: tuple[Any, ...]) -> str:
    """Each query's status and last completed micro-batch, for a failed wait's message."""
    said = []
    for query in queries:
        batches = query.recentProgress
        last = "none yet"
        if batches:
            ends = [source["endOffset"] for source in batches[-1]["sources"]]
            last = f"{batches[-1]['batchId']} ({batches[-1]['numInputRows']} rows, up to {ends})"
        said.append(
            f"query {query.name or query.id}: status {query.status['message']!r}, active"
            f" {query.isActive}, last micro-batch {last}"
        )
    return "; ".join(said) or "-"


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
    patience.wait_child(process, 30)


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
