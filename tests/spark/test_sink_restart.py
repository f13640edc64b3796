"""A streaming query into a sink log in memory whose server restarts while the query is down
(docs/replay.md, *Epochs*): restarted from its checkpoint, the query fails naming the restart,
publishes nothing and leaves nothing staged, whether Spark's checkpoint is a relative option
checkpointLocation or the session conf spark.sql.streaming.checkpointLocation with a query name;
or a ``viewfs:`` option, a Hadoop scheme that only Spark's JVM opens (the record is kept through
it); once the record is deleted, it goes on with the next batch, published once. Real Spark,
local mode."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from rstreams.replay import ReplayLog, ReplayServer, fetch_range
from rstreams.spark._epochs import CONF_KEY, EPOCHS_FILE
from testkit.spark import TEST_TIMEOUT, await_query

pytestmark = [pytest.mark.spark, pytest.mark.timeout(TEST_TIMEOUT)]


@contextmanager
def session_checkpoints(spark: Any, root: Path) -> Iterator[None]:
    """The session conf ``spark.sql.streaming.checkpointLocation`` set to ``root`` for a while
    (the session is every Spark test's)."""
    spark.conf.set(CONF_KEY, str(root))
    try:
        yield
    finally:
        spark.conf.unset(CONF_KEY)


def add_input(directory: Path, seqs: range) -> None:
    """One more JSON file of rows for the file source (written aside, then moved in)."""
    scratch = directory.parent / f"{uuid.uuid4().hex}.tmp"
    scratch.write_text("".join(json.dumps({"seq": i}) + "\n" for i in seqs))
    scratch.rename(directory / f"{seqs.start}.json")


def sink_log(serve: Any, url: str = "tcp://127.0.0.1:0") -> tuple[ReplayServer, ReplayLog]:
    results = ReplayLog("results", capacity=100, evict=True)
    return serve({}, sinks={"results": results}, url=url), results


@pytest.mark.parametrize("where", ["relative option", "session conf", "viewfs option"])
def test_a_restarted_memory_sink_log_fails_the_restarted_query_until_told_to_go_on(
    spark: Any, serve: Any, tmp_path: Path, where: str
) -> None:
    source = tmp_path / "input"
    source.mkdir()
    server, results = sink_log(serve)
    url = server.url
    name = f"sink-restart-{uuid.uuid4().hex[:8]}"
    if where == "relative option":  # as Spark takes it: from the driver JVM's working directory
        jvm_cwd = spark._jvm.java.lang.System.getProperty("user.dir")
        checkpoint = tmp_path / "checkpoint"
        located = {"checkpointLocation": os.path.relpath(checkpoint, jvm_cwd)}
    elif where == "viewfs option":  # a mount table of its own, on a local directory
        (tmp_path / "mounted").mkdir()
        checkpoint = tmp_path / "mounted" / "checkpoint"
        cluster = f"rstreams-{uuid.uuid4().hex[:8]}"
        spark.conf.set(f"fs.viewfs.mounttable.{cluster}.link./mnt", (tmp_path / "mounted").as_uri())
        located = {"checkpointLocation": f"viewfs://{cluster}/mnt/checkpoint"}
    else:
        checkpoint = tmp_path / "root" / name
        located = {}
    kept = checkpoint / EPOCHS_FILE
    shown = f"{located['checkpointLocation']}/{EPOCHS_FILE}" if where == "viewfs option" else str(kept)

    def run() -> None:
        with session_checkpoints(spark, tmp_path / "root"):
            writer = (
                spark.readStream.schema("seq bigint")
                .json(str(source))
                .writeStream.format("rstreams")
                .queryName(name)
                .option("url", url)
                .option("publisher", "results")
                .options(**located)
                .trigger(availableNow=True)
            )
            query = writer.start()
        await_query(query, f"the query into the sink log ({where}) to end", signs=lambda: results.info())

    add_input(source, range(3))
    run()
    assert json.loads(kept.read_text()) == {"epochs": {url: {"results": results.epoch}}}
    assert [json.loads(x)["seq"] for x in fetch_range(url, "results", 0, 3)] == [0, 1, 2]
    server.stop()
    server, restarted = sink_log(serve, url)  # the same URL, a new log in memory
    add_input(source, range(3, 5))
    with pytest.raises(Exception, match="SinkLogRestartedError") as failed:  # Spark's, naming ours
        run()
    said = str(failed.value)
    assert "SinkLogRestartedError: rstreams sink: sink log 'results'" in said
    assert f"was restarted since this query recorded it in its checkpoint (epoch '{results.epoch}'" in said
    assert f"delete {shown} to go on" in said
    assert restarted.info()["end"] == 0
    assert server._stagings["results"].staged_bytes == 0  # nothing left staged on the new log
    assert json.loads(kept.read_text()) == {"epochs": {url: {"results": results.epoch}}}
    kept.unlink()  # told to go on with the log as it is now
    run()
    assert [json.loads(x)["seq"] for x in fetch_range(url, "results", 0, 2)] == [3, 4]
    assert restarted.info()["end"] == 2
    assert json.loads(kept.read_text()) == {"epochs": {url: {"results": restarted.epoch}}}
