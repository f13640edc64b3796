"""The ``rstreams`` Spark sink: rows published on an RS.io server's sink log, exactly once.

Two phases, as Spark's writer API intends:

* ``write(rows)`` on an executor uploads its partition's rows to the server, where they
  are *staged* under a fresh token (not yet visible to subscribers), and returns the
  token in its commit message. The upload is an RS.io stream the server requests from
  with bounded demand, so a server that takes rows slowly slows the Spark task.
* ``commit(messages, batchId)`` on the driver asks the server to publish the staged
  tokens as batch ``batchId`` of this query. The server publishes each
  ``(query, batchId)`` at most once: a restarted query that re-runs a batch whose
  commit was already done gets ``published: false`` and its new upload is dropped.
  ``abort`` discards the staged tokens.

The query's identity is Spark's query id (``sql.streaming.queryId``, stable across
restarts from the same checkpoint), read in ``write`` from the task's local properties
and carried to ``commit`` in the messages; option ``writerId`` overrides it.

``df.write`` (a batch job) publishes once as a fresh batch; with options ``writerId`` and
``batchId`` (for example inside ``foreachBatch``, with the query's id and the batch id
Spark passes) it publishes as that batch, once: the re-run of a batch is refused. The
server keeps the record of published batches with a file-backed sink log on disk, so it
holds across a restart of the server (docs/replay.md).

Codec ``arrow`` writes with Spark's Arrow writers (``DataSourceStreamArrowWriter``,
``DataSourceArrowWriter``): the task's record batches, re-chunked to at most
:data:`~rstreams.spark._codecs.BATCH_ROWS` rows, each become one Arrow IPC stream element;
no Spark ``Row`` is made. ``json`` and ``msgpack`` write row by row.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    DataSourceStreamWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from rstreams.replay import Access
from rstreams.replay._client import request_json, upload
from rstreams.spark._codecs import BATCH_ROWS, arrow_ipc, row_encoder
from rstreams.spark._options import OptionError, access_from, explain, number, required

__all__ = [
    "RStreamsArrowBatchWriter",
    "RStreamsArrowStreamWriter",
    "RStreamsBatchWriter",
    "RStreamsStreamWriter",
    "StagedUpload",
    "stream_writer",
    "writer",
]


@dataclass
class StagedUpload(WriterCommitMessage):
    """What one ``write`` task staged: its token, row count and the query's id."""

    token: str
    count: int
    writer: str


class _Writer:
    """The sink's options (checked on the driver when the query starts) and its remote calls."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.url = required(options, "url", "sink")
        self.publisher = required(options, "publisher", "sink")
        self.codec = str(options.get("codec", "json"))
        if self.codec != "arrow":
            try:
                row_encoder(self.codec)  # check it here, on the driver, where the user set it
            except ValueError:
                raise OptionError(
                    "codec", f"option codec of the rstreams sink: json, msgpack or arrow; got {self.codec!r}"
                ) from None
        self.writer_id = options.get("writerId")
        self.batch_id = _batch_id(options, self.writer_id)
        self.timeout = number(options, "timeout", 300.0)
        self.access: Access = access_from(options, self.url)

    def write(self, iterator: Iterator[Any]) -> StagedUpload:
        """Stage a partition's rows (``Row`` objects) as ``json`` or ``msgpack`` elements."""
        return self._upload(map(row_encoder(self.codec), iterator))

    def write_arrow(self, batches: Iterator[pa.RecordBatch]) -> StagedUpload:
        """Stage a partition's record batches as ``arrow`` elements of at most BATCH_ROWS rows."""
        return self._upload(_ipc_elements(batches))

    def _upload(self, elements: Iterator[bytes]) -> StagedUpload:
        token = uuid.uuid4().hex
        try:
            count = upload(self.url, self.publisher, token, elements, self.timeout, access=self.access)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, self.url, self.access) from None
        return StagedUpload(token=token, count=count, writer=self.writer_id or _query_id())

    def _ask(self, query: str) -> dict[str, Any]:
        try:
            return request_json(self.url, f"{self.publisher}?{query}", self.timeout, access=self.access)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, self.url, self.access) from None

    def publish(self, messages: list[WriterCommitMessage | None], batch: int) -> dict[str, Any]:
        staged = [m for m in messages if isinstance(m, StagedUpload)]
        if not staged:
            return {"published": False, "count": 0}
        tokens = ",".join(m.token for m in staged)
        return self._ask(f"publish={batch}&writer={quote(staged[0].writer, safe='')}&tokens={tokens}")

    def discard(self, messages: list[WriterCommitMessage | None]) -> None:
        tokens = ",".join(m.token for m in messages if isinstance(m, StagedUpload))
        if tokens:
            self._ask(f"discard={tokens}")


def _batch_id(options: Mapping[str, str], writer: str | None) -> int | None:
    text = options.get("batchId")
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise OptionError("batchId", f"option batchId must be an int >= 0, got {text!r}")
    if not writer:
        raise OptionError(
            "batchId",
            "option batchId needs option writerId (who publishes the batch), e.g. in foreachBatch: "
            '.option("writerId", query_id).option("batchId", batch_id)',
        )
    return value


def _ipc_elements(batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
    """Arrow IPC stream elements of up to BATCH_ROWS rows each, from ``batches`` of any size."""
    held: list[pa.RecordBatch] = []
    rows = 0
    for batch in batches:
        while batch.num_rows:
            take = batch.slice(0, BATCH_ROWS - rows)
            held.append(take)
            rows += take.num_rows
            batch = batch.slice(take.num_rows)
            if rows == BATCH_ROWS:
                yield _ipc(held)
                held, rows = [], 0
    if rows:
        yield _ipc(held)


def _ipc(batches: list[pa.RecordBatch]) -> bytes:
    if len(batches) == 1:
        return arrow_ipc(batches[0])
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return bytes(sink.getvalue())


def _query_id() -> str:
    from pyspark import TaskContext

    context = TaskContext.get()
    query = context.getLocalProperty("sql.streaming.queryId") if context is not None else None
    return str(query) if query else f"batch-{uuid.uuid4().hex}"


class RStreamsStreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("rstreams")`` with codec ``json`` or ``msgpack``: rows."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._writer = _Writer(options, schema)

    def write(self, iterator: Iterator[Any]) -> StagedUpload:
        return self._writer.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.publish(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.discard(messages)


class RStreamsArrowStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rstreams")`` with codec ``arrow``: record batches."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._writer = _Writer(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedUpload:
        return self._writer.write_arrow(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.publish(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.discard(messages)


class RStreamsBatchWriter(DataSourceWriter):
    """``df.write.format("rstreams")``: one publish of all partitions' rows, as a fresh batch
    or, with options ``writerId`` and ``batchId``, as that batch (once)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._writer = _Writer(options, schema)
        given = self._writer.batch_id
        self._batch = uuid.uuid4().int & (2**62 - 1) if given is None else given

    def write(self, iterator: Iterator[Any]) -> StagedUpload:
        return self._writer.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._writer.publish(messages, self._batch)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._writer.discard(messages)


class RStreamsArrowBatchWriter(DataSourceArrowWriter):
    """:class:`RStreamsBatchWriter` with codec ``arrow``: record batches."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._rows = RStreamsBatchWriter(options, schema)

    def write(self, iterator: Iterator[pa.RecordBatch]) -> StagedUpload:
        return self._rows._writer.write_arrow(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._rows.commit(messages)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._rows.abort(messages)


def stream_writer(options: Mapping[str, str], schema: StructType) -> DataSourceStreamWriter:
    """The streaming writer for the options' codec (checked here, on the driver)."""
    if options.get("batchId") is not None:
        raise OptionError(
            "batchId",
            "option batchId is for df.write (e.g. inside foreachBatch); a streaming query publishes "
            "each micro-batch under its own batch id",
        )
    if str(options.get("codec", "json")) == "arrow":
        return RStreamsArrowStreamWriter(options, schema)
    return RStreamsStreamWriter(options, schema)


def writer(options: Mapping[str, str], schema: StructType) -> DataSourceWriter:
    """The batch writer for the options' codec."""
    if str(options.get("codec", "json")) == "arrow":
        return RStreamsArrowBatchWriter(options, schema)
    return RStreamsBatchWriter(options, schema)
