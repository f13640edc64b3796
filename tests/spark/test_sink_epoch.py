"""The sink and its logs' epochs (docs/replay.md, *Epochs*): the writer built on the driver
records each sink log's epoch and every publish names it, and a local checkpoint keeps it, so a
sink log restarted in memory fails the query, saying so, instead of taking a re-run batch again.
Real restarts of ``rstreams serve --sink`` (in memory) and of a server with a file-backed sink
log; no Spark session (the writers are called as Spark calls them)."""

from __future__ import annotations

import json
import pickle
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType

from rstreams.replay import RemoteLogError, ReplayLog, fetch_range, request_json
from rstreams.spark import _sink
from rstreams.spark._epochs import NO_CHECKPOINT
from rstreams.spark._options import OptionError
from rstreams.spark._sink import (
    EPOCHS_FILE,
    RStreamsArrowStreamWriter,
    SinkLogRestartedError,
    SpreadUpload,
    stream_writer,
    writer,
)
from rstreams.spark._source import RStreamsDataSource
from testkit.replay import serving_sink

pytestmark = pytest.mark.timeout(60)

SCHEMA = StructType([StructField("seq", LongType())])


def rows(*seqs: int) -> Iterator[pa.RecordBatch]:
    return iter([pa.RecordBatch.from_pydict({"seq": pa.array(seqs, pa.int64())})])


def options(url: str, **more: Any) -> dict[str, str]:
    return {"url": url, "publisher": "results", **{k: str(v) for k, v in more.items()}}


def shipped(made: RStreamsArrowStreamWriter) -> RStreamsArrowStreamWriter:
    """The writer as Spark's tasks get it: pickled on the driver (where it checks its sink logs)."""
    copy = pickle.loads(pickle.dumps(made))
    assert isinstance(copy, RStreamsArrowStreamWriter)
    return copy


def spark_checkpoint(path: Path) -> Path:
    """``path`` as Spark leaves a query's checkpoint before it builds the writer: its metadata."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "metadata").write_text('{"id": "q"}')
    return path


def test_a_memory_sink_log_restarted_under_a_running_query_refuses_its_next_publish() -> None:
    """The writer Spark built at the query's start (the executors' copy) stages a batch on the
    restarted log; its commit names the epoch recorded at the start and is refused: nothing is
    published, and the error says what happened and what to do."""
    with serving_sink("tcp://127.0.0.1:0") as url:
        built = shipped(stream_writer(options(url), SCHEMA))
        before = request_json(url, "results?latest")["epoch"]
        assert built._writer.epochs == (before,)
        built.commit([built.write(rows(0, 1))], 0)
        assert request_json(url, "results?latest")["end"] == 2
    with serving_sink(url) as again:
        assert again == url
        message = built.write(rows(2, 3))  # staged on the new log
        assert message.epochs == (before,)
        with pytest.raises(SinkLogRestartedError) as failed:
            RStreamsArrowStreamWriter(options(url), SCHEMA).commit([message], 1)  # commit's own writer
        said = str(failed.value)
        assert f"sink log 'results' at {url} was restarted since the query's writer recorded" in said
        assert f"epoch '{before}' is not this log's" in said and "batch 1 was not published" in said
        assert "published a second time" in said and "ReplayLog(name, path=DIR)" in said
        assert "rstreams serve --sink NAME --path DIR" in said
        assert "restart it from its checkpoint to go on" in said  # no checkpoint named: no record kept
        assert f"no record of the epochs is kept across restarts of the query: {NO_CHECKPOINT})" in said
        assert '.option("checkpointLocation", DIR)' in said and ".queryName(NAME)" in said  # what to set
        assert request_json(url, "results?latest")["end"] == 0


def test_a_query_restarted_from_its_checkpoint_against_a_restarted_memory_sink_log_fails_before_publishing(
    tmp_path: Path,
) -> None:
    """The checkpoint keeps the epochs (``rstreams-sink.json``, written at the first commit): the
    writer built for the restarted query finds the log's new epoch, and its tasks fail before they
    upload, naming both epochs and the file; a commit of uploads staged under the new epoch (a
    writer that could not see the record at its start) discards them and publishes nothing. The
    file keeps the old epoch, so the query keeps failing until told otherwise; the writer Spark
    builds for an abort builds, and discards."""
    checkpoint = spark_checkpoint(tmp_path / "checkpoint")
    kept = checkpoint / EPOCHS_FILE
    with serving_sink("tcp://127.0.0.1:0") as url:
        built = shipped(stream_writer(options(url, checkpointLocation=checkpoint), SCHEMA))
        before = built._writer.epochs[0]
        assert not kept.exists() and built._writer.refused is None
        built.commit([built.write(rows(0, 1))], 0)
        assert json.loads(kept.read_text()) == {"epochs": {url: {"results": before}}}
        shipped(stream_writer(options(url, checkpointLocation=checkpoint), SCHEMA))  # the same epoch
    with serving_sink(url):
        now = request_json(url, "results?latest")["epoch"]
        for _ in range(2):
            restarted = shipped(
                stream_writer(options(url, checkpointLocation=f"file://{checkpoint}"), SCHEMA)
            )
            with pytest.raises(SinkLogRestartedError) as failed:
                restarted.write(rows(2, 3))
            said = str(failed.value)
            assert f"this query recorded it in its checkpoint (epoch '{before}', now '{now}')" in said
            assert "nothing more is published" in said and f"delete {kept}" in said
        unaware = shipped(stream_writer(options(url), SCHEMA)).write(rows(2, 3))  # staged under the new epoch
        with pytest.raises(SinkLogRestartedError) as failed:
            restarted.commit([unaware], 1)
        said = str(failed.value)
        assert f"(epoch '{before}', its writer '{now}')" in said and "batch 1 was not published" in said
        with pytest.raises(RemoteLogError, match="is not staged here"):  # the commit discarded it
            request_json(url, f"results?publish=1&writer=w&tokens={unaware.token}")
        restarted.abort([unaware, None], 1)
        assert json.loads(kept.read_text()) == {"epochs": {url: {"results": before}}}
        assert request_json(url, "results?latest")["end"] == 0
        kept.unlink()  # told to go on
        going_on = shipped(stream_writer(options(url, checkpointLocation=checkpoint), SCHEMA))
        going_on.commit([going_on.write(rows(2, 3))], 1)
        assert json.loads(kept.read_text()) == {"epochs": {url: {"results": now}}}
        assert request_json(url, "results?latest")["end"] == 2


def test_a_file_backed_sink_log_keeps_its_epoch_and_the_query_goes_on(serve: Any, tmp_path: Path) -> None:
    """A server restarted with its sink log reopened from its directory: the same epoch, so the
    writer built before the restart publishes, a restarted query's writer builds, and a re-run
    batch is still refused (nothing false fires)."""
    path = tmp_path / "results"
    results = ReplayLog("results", capacity=100, path=path, evict=True)
    server = serve({}, sinks={"results": results})
    url = server.url
    checkpoint = spark_checkpoint(tmp_path / "checkpoint")
    same = options(url, checkpointLocation=checkpoint, writerId="q")  # Spark's query id, outside Spark
    built = shipped(stream_writer(same, SCHEMA))
    built.commit([built.write(rows(0, 1))], 0)
    server.stop()
    results.close()
    reopened = ReplayLog("results", capacity=100, path=path, evict=True)
    serve({}, sinks={"results": reopened}, url=url)
    assert reopened.epoch == results.epoch == built._writer.epochs[0]
    built.commit([built.write(rows(2))], 1)
    again = shipped(stream_writer(same, SCHEMA))
    again.commit([again.write(rows(0, 1))], 0)  # a re-run of batch 0: refused by the kept record
    assert [json.loads(x) for x in fetch_range(url, "results", 0, 3)] == [{"seq": 0}, {"seq": 1}, {"seq": 2}]
    assert reopened.info()["end"] == 3
    reopened.close()


def test_the_batch_writer_names_the_epoch_it_found_on_every_publish(serve: Any) -> None:
    """df.write: the writer built on the driver records the epoch; its commit names it."""
    results = ReplayLog("results", capacity=100, evict=True)
    server = serve({}, sinks={"results": results})
    built = writer(options(server.url), SCHEMA)
    message = built.write(rows(7))
    assert message.epochs == (results.epoch,)
    built.commit([message])
    assert results.info()["end"] == 1
    message.epochs = ("0" * 16,)
    with pytest.raises(SinkLogRestartedError, match=re.escape("epoch '0000000000000000'")):
        built.commit([message])
    assert results.info()["end"] == 1


def test_logs_added_later_are_kept_too_and_a_record_that_is_not_one_fails_naming_the_option(
    serve: Any, tmp_path: Path
) -> None:
    a, b = ReplayLog("a", evict=True), ReplayLog("b", evict=True)
    server = serve({}, sinks={"a": a, "b": b})
    kept = spark_checkpoint(tmp_path) / EPOCHS_FILE
    one = shipped(
        stream_writer({"url": server.url, "publisher": "a", "checkpointLocation": str(tmp_path)}, SCHEMA)
    )
    one.commit([one.write(rows(1))], 0)
    both = {"url": server.url, "publisher": "a,b", "keyColumn": "seq", "checkpointLocation": str(tmp_path)}
    two = shipped(stream_writer(both, SCHEMA))
    two.commit([two.write(rows(1, 2, 3, 4))], 1)
    assert json.loads(kept.read_text()) == {"epochs": {server.url: {"a": a.epoch, "b": b.epoch}}}
    kept.write_text("[1, 2]")
    unreadable = stream_writer(both, SCHEMA)  # builds: Spark's abort builds one too
    unreadable.abort([None], 2)
    unreadable = shipped(unreadable)
    said = "is not the rstreams sink's record of its logs' epochs"
    with pytest.raises(OptionError, match=said) as bad:
        unreadable.write(rows(5))
    assert bad.value.option == "checkpointLocation"
    with pytest.raises(OptionError, match=said):
        unreadable.commit([None], 2)
    staged = shipped(stream_writer({**both, "checkpointLocation": str(tmp_path / "elsewhere")}, SCHEMA))
    message = staged.write(rows(5, 6, 7, 8))
    assert server._stagings["a"].staged_bytes + server._stagings["b"].staged_bytes > 0
    with pytest.raises(OptionError, match=said):
        stream_writer(both, SCHEMA).commit([message], 2)
    assert server._stagings["a"].staged_bytes + server._stagings["b"].staged_bytes == 0  # not left staged
    assert a.info()["end"] + b.info()["end"] == 5  # nothing of batch 2 published


def test_the_writers_spark_builds_for_a_commit_or_an_abort_ask_nothing_as_they_are_built(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Round trips to the server, counted, with the data source as Spark's workers have it: the
    writer Spark builds at the query's start (from a source made afresh) and ships to the tasks
    asks each sink log once, as it is built, and nothing more as it is pickled (one built
    otherwise asks as it is pickled, once); the writer of a commit or an abort (from the source
    unpickled) asks nothing as it is built; an abort makes one ``discard`` per sink log with
    staged uploads, none when nothing was staged; a commit one ``publish`` per such log."""
    a, b = ReplayLog("a", evict=True), ReplayLog("b", evict=True)
    server = serve({}, sinks={"a": a, "b": b})
    both = {"url": server.url, "publisher": "a,b", "keyColumn": "seq"}
    asked: list[str] = []
    real = request_json

    def counted(url: str, query: str, *args: Any, **kwargs: Any) -> Any:
        asked.append(query)
        return real(url, query, *args, **kwargs)

    monkeypatch.setattr(_sink, "request_json", counted)
    starting = RStreamsDataSource(both).streamWriter(SCHEMA, False)
    assert isinstance(starting, RStreamsArrowStreamWriter)
    announced = f"discard=&run={starting._writer.run}"  # each sink log: checked, the run announced
    assert asked == [f"a?{announced}", f"b?{announced}"]
    tasks = shipped(starting)
    assert asked == [f"a?{announced}", f"b?{announced}"]  # checked as built: pickling asks nothing
    source = pickle.loads(pickle.dumps(RStreamsDataSource(both)))  # as a commit's worker has it
    asked.clear()
    built = stream_writer(both, SCHEMA)
    assert asked == []
    shipped(built)
    announced = f"discard=&run={built._writer.run}"
    assert asked == [f"a?{announced}", f"b?{announced}"]
    shipped(built)  # pickled again: checked once
    assert asked == [f"a?{announced}", f"b?{announced}"]
    staged = [tasks.write(rows(*range(20))), None]
    assert isinstance(staged[0], SpreadUpload) and len(staged[0].parts) == 2  # both logs have rows
    committed = [tasks.write(rows(20)), None]
    for outcome, messages in (("abort", [None, None]), ("abort", staged), ("commit", committed)):
        asked.clear()
        made = source.streamWriter(SCHEMA, False)
        assert asked == []
        assert isinstance(made, RStreamsArrowStreamWriter)
        getattr(made, outcome)(messages, 0)
        if messages == [None, None]:
            assert asked == []  # nothing staged: no round trip
        else:
            staging = {i for m in messages if isinstance(m, SpreadUpload) for i, _, _ in m.parts}
            verb = "discard" if outcome == "abort" else "publish"
            assert [q.split("?")[1].split("=")[0] for q in asked] == [verb] * len(staging)
    assert server._stagings["a"].staged_bytes == server._stagings["b"].staged_bytes == 0
    assert a.info()["end"] + b.info()["end"] == 1  # the aborted batch is gone; the commit published
