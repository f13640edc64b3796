"""The streaming sink announces its run on each sink log as Spark builds the writer for the tasks
(``NAME?discard=&run=R``, PROTOCOL.md §21.8), so a late task of a killed driver's run is refused,
not taken for the newest run. No Spark session: the writers are called as Spark calls them."""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import LongType, StructField, StructType

from rstreams.api import Publisher
from rstreams.flow._public import error as error_flow
from rstreams.replay import ReplayLog, fetch_range
from rstreams.replay._server import LogRequestError
from rstreams.spark import _sink
from rstreams.spark._sink import RStreamsArrowStreamWriter, stream_writer

pytestmark = pytest.mark.timeout(60)

SCHEMA = StructType([StructField("seq", LongType())])
TASK = {"sql.streaming.queryId": "q", "streaming.sql.batchId": "0"}
"""The task properties Spark gives a task of micro-batch 0 of query ``q``."""


def rows(*seqs: int) -> Iterator[pa.RecordBatch]:
    return iter([pa.RecordBatch.from_pydict({"seq": pa.array(seqs, pa.int64())})])


def shipped(made: RStreamsArrowStreamWriter) -> RStreamsArrowStreamWriter:
    copy = pickle.loads(pickle.dumps(made))
    assert isinstance(copy, RStreamsArrowStreamWriter)
    return copy


def sink_server(serve: Any, old: bool = False) -> tuple[Any, ReplayLog, list[dict[str, str]]]:
    """A server with the sink log ``results``; each request's parameters. ``old``: one from before
    runs were announced (it refuses ``run=`` as an unknown parameter)."""
    out = ReplayLog("results", capacity=100)
    asked: list[dict[str, str]] = []
    route: list[Any] = []

    def spy(path: str, params: dict[str, str]) -> Publisher[Any] | None:
        asked.append(params)
        if old and "run" in params:
            return error_flow(LogRequestError(f"log {path!r}: unknown parameter 'run'; a log's name takes"))
        answer: Publisher[Any] | None = route[0](path, params)
        return answer

    server = serve({}, sinks={"results": out}, offer=spy)
    route.append(server._route)
    return server, out, asked


def test_a_late_task_of_a_killed_run_is_refused(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The killed run's writer, then the restarted run's, are built (each announcing its run); a
    task of the killed run uploads after the restarted run's first: its rows are counted and kept
    nowhere, and the restarted run's batch is published whole."""
    server, out, asked = sink_server(serve)
    options = {"url": server.url, "publisher": "results"}
    killed = shipped(stream_writer(options, SCHEMA))
    restarted = shipped(stream_writer(options, SCHEMA))
    runs = [params["run"] for params in asked if "run" in params]
    assert runs == [killed._writer.run, restarted._writer.run] and None not in runs
    monkeypatch.setattr(_sink, "_task_property", TASK.get)
    message = restarted.write(rows(1, 2))
    late = killed.write(rows(9))
    assert late.count == 1
    staging = server._stagings["results"]
    assert list(staging.staged()) == [message.token]
    RStreamsArrowStreamWriter(options, SCHEMA).commit([message], 0)
    assert [json.loads(row)["seq"] for row in fetch_range(server.url, "results", 0, out.end)] == [1, 2]
    assert staging.staged() == {}


def test_a_server_from_before_announcements_is_asked_again_without_the_run(serve: Any) -> None:
    server, _, asked = sink_server(serve, old=True)
    built = stream_writer({"url": server.url, "publisher": "results"}, SCHEMA, starting=True)
    assert built._writer.epochs == (server._stagings["results"].log.epoch,)
    assert [sorted(params) for params in asked] == [["discard", "run"], ["discard"]]
