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
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pyspark.sql.datasource import DataSourceStreamWriter, DataSourceWriter, WriterCommitMessage
from pyspark.sql.types import StructType

from rstreams.replay import Access
from rstreams.replay._client import request_json, upload
from rstreams.spark._codecs import row_encoder
from rstreams.spark._options import OptionError, access_from, explain, number, required

__all__ = ["RStreamsBatchWriter", "RStreamsStreamWriter", "StagedUpload"]


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
        try:
            row_encoder(self.codec)  # check it here, on the driver, where the user set it
        except ValueError as bad:
            raise OptionError("codec", str(bad)) from None
        self.writer_id = options.get("writerId")
        self.timeout = number(options, "timeout", 300.0)
        self.access: Access = access_from(options, self.url)

    def write(self, iterator: Iterator[Any]) -> StagedUpload:
        encode = row_encoder(self.codec)
        token = uuid.uuid4().hex
        try:
            count = upload(
                self.url, self.publisher, token, map(encode, iterator), self.timeout, access=self.access
            )
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


def _query_id() -> str:
    from pyspark import TaskContext

    context = TaskContext.get()
    query = context.getLocalProperty("sql.streaming.queryId") if context is not None else None
    return str(query) if query else f"batch-{uuid.uuid4().hex}"


class RStreamsStreamWriter(DataSourceStreamWriter):
    """``df.writeStream.format("rstreams")``: options ``url``, ``publisher``, ``codec`` (json|msgpack)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._writer = _Writer(options, schema)

    def write(self, iterator: Iterator[Any]) -> StagedUpload:
        return self._writer.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.publish(messages, batchId)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.discard(messages)


class RStreamsBatchWriter(DataSourceWriter):
    """``df.write.format("rstreams")``: one publish of all partitions' rows."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._writer = _Writer(options, schema)
        self._batch = uuid.uuid4().int & (2**62 - 1)

    def write(self, iterator: Iterator[Any]) -> StagedUpload:
        return self._writer.write(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._writer.publish(messages, self._batch)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._writer.discard(messages)
