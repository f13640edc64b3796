"""README.md's Spark blocks ("Into Spark"), run as written there in the shared local[2] session:
the source-to-sink query, the query over several servers spread by key, and the `foreachBatch`
publisher. Each block is taken from README.md when the test runs; what a test changes in it (the
checkpoint under /tmp, the example hosts a, b and c) is an exact string of the block, so a block
that changes fails here until its test follows (tests/test_readme_blocks.py checks that every
block of the README has a test)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.replay import ReplayLog, fetch_range, request_json
from testkit import patience
from testkit.snippets import fenced
from testkit.spark import TEST_TIMEOUT, read_stream, wait_progressing

pytestmark = pytest.mark.spark

README = Path(__file__).resolve().parents[2] / "README.md"
ROWS = 300


def _block(marker: str) -> str:
    """The one ```python block of README.md holding ``marker`` (dedented: some sit in a list)."""
    found = [
        block for language, block in fenced(README.read_text()) if language == "python" and marker in block
    ]
    assert len(found) == 1, f"README.md: {len(found)} Python blocks hold {marker!r}"
    return found[0] + "\n"


def _swap(block: str, changes: dict[str, str]) -> str:
    """``block`` with each key replaced by its value; a key the block lacks fails the test."""
    for old, new in changes.items():
        assert old in block, f"the block no longer holds {old!r}:\n{block}"
        block = block.replace(old, new)
    return block


def _readings(n: int, start: int = 0) -> list[bytes]:
    return [json.dumps({"sensor": f"s{i % 5}", "value": i * 0.5}).encode() for i in range(start, start + n)]


def _sink_end(url: str, name: str) -> int:
    return int(request_json(url, f"{name}?latest")["end"])


def _sink_rows(url: str, name: str) -> list[dict[str, Any]]:
    return [json.loads(item) for item in fetch_range(url, name, 0, _sink_end(url, name))]


@pytest.mark.timeout(TEST_TIMEOUT)
def test_the_source_to_sink_query_runs_as_written(spark: Any, tmp_path: Path) -> None:
    """The first block: a log fed by `sensor_flow`, the query from it into the sink log
    `results` converting to Fahrenheit, `awaitTermination()` inside the server's block. The block
    runs in the test's thread as written; a second thread waits until every reading is in the
    sink, reads the sink log and stops the query, which ends `awaitTermination()` and the block."""
    block = _swap(
        _block('ReplayLog("sensors", capacity=100_000)'), {'"/tmp/ckpt"': repr(str(tmp_path / "ckpt"))}
    )
    readings = _readings(ROWS)
    names: dict[str, Any] = {"spark": spark, "sensor_flow": rstreams.from_iterable(readings)}
    seen: list[list[dict[str, Any]]] = []
    failed: list[BaseException] = []

    def watch() -> None:
        try:
            wait_progressing(lambda: "query" in names or ended.is_set(), "the block's query to start")
            if "query" not in names:
                return
            url = names["server"].url
            wait_progressing(
                lambda: _sink_end(url, "results") >= ROWS,
                "every reading in the sink log",
                names["query"],
                signs=lambda: _sink_end(url, "results"),
            )
            seen.append(_sink_rows(url, "results"))
        except BaseException as error:  # reported by the test's thread
            failed.append(error)
        finally:
            if "query" in names:
                names["query"].stop()

    ended = threading.Event()
    watcher = threading.Thread(target=watch, name="readme-spark-watcher", daemon=True)
    watcher.start()
    try:
        exec(block, names)  # README.md's own block; returns once the watcher stops the query
    finally:
        ended.set()
        patience.join(watcher)
    assert not failed, failed
    expected = [
        {"sensor": json.loads(r)["sensor"], "fahrenheit": json.loads(r)["value"] * 1.8 + 32} for r in readings
    ]
    assert sorted(seen[0], key=json.dumps) == sorted(expected, key=json.dumps)


@pytest.mark.timeout(TEST_TIMEOUT)
def test_the_query_over_three_servers_runs_as_written(spark: Any, serve: Any, tmp_path: Path) -> None:
    """README, "Many logs, many servers, one query": `sensors/*` on the servers a, b and c (here three on
    loopback, with a log that does not match) into `results` on a and b by `sensor`: every row
    once, each sensor in one sink log only."""
    servers = []
    for i in range(3):
        log = ReplayLog(f"sensors/{i}", capacity=1000)
        log.append(_readings(100, i * 100))
        other = ReplayLog("other", capacity=10)
        other.append([b'{"sensor": "x", "value": 0}'])
        servers.append(
            serve({log.name: log, "other": other}, sinks={"results": ReplayLog("results", evict=True)})
        )
    a, b, c = (server.url for server in servers)
    block = _swap(
        _block("tcp://a:7000,tcp://b:7000,tcp://c:7000"),
        {
            '"tcp://a:7000,tcp://b:7000,tcp://c:7000"': repr(f"{a},{b},{c}"),
            '"tcp://a:7000,tcp://b:7000"': repr(f"{a},{b}"),
            '"/tmp/ckpt"': repr(str(tmp_path / "ckpt")),
        },
    )
    names: dict[str, Any] = {"spark": spark}
    query = eval(block, names)  # README.md's own block: one expression, the query
    try:
        wait_progressing(
            lambda: _sink_end(a, "results") + _sink_end(b, "results") >= 300,
            "every row in the two sink logs",
            query,
            signs=lambda: (_sink_end(a, "results"), _sink_end(b, "results")),
        )
        by_log = [_sink_rows(url, "results") for url in (a, b)]
    finally:
        query.stop()
    everything = [row for rows in by_log for row in rows]
    assert sorted(row["value"] for row in everything) == [i * 0.5 for i in range(300)]
    sensors = [{row["sensor"] for row in rows} for rows in by_log]
    assert not sensors[0] & sensors[1], sensors
    assert all(sensors), sensors  # five sensors, spread over both logs


@pytest.mark.timeout(TEST_TIMEOUT)
def test_the_foreach_batch_publisher_runs_as_written(spark: Any, serve: Any, tmp_path: Path) -> None:
    """The sink's `foreachBatch` block: `publish(df, batch_id)` for every micro-batch of a stream
    into `results`, once per batch; the same batch published again adds nothing."""
    log = ReplayLog("sensors", capacity=1000)
    log.append(_readings(ROWS))
    server = serve({"sensors": log}, sinks={"results": ReplayLog("results", evict=True)})
    block = _swap(
        _block("foreachBatch(publish)"),
        {"stream.writeStream": "query = stream.writeStream", '"/tmp/ckpt"': repr(str(tmp_path / "ckpt"))},
    )
    names: dict[str, Any] = {
        "url": server.url,
        "stream": read_stream(
            spark, server.url, "sensors", "sensor string, value double", maxRecordsPerBatch=100
        ),
    }
    exec(block, names)  # README.md's own block
    query = names["query"]
    try:
        wait_progressing(
            lambda: _sink_end(server.url, "results") >= ROWS,
            "every row in the sink log",
            query,
            signs=lambda: _sink_end(server.url, "results"),
        )
    finally:
        query.stop()
    rows = _sink_rows(server.url, "results")
    assert sorted(row["value"] for row in rows) == [i * 0.5 for i in range(ROWS)]
    names["publish"](spark.createDataFrame([("again", 1.0)], "sensor string, value double"), 0)
    assert _sink_end(server.url, "results") == ROWS  # batch 0 of hourly-report: published once
