"""The ``rstreams`` Spark data source: streaming and batch reads from an RS.io replay log.

Where each method runs (../shared/notes/spark-python-datasource.md, measured on 4.3):

* ``initialOffset``, ``getDefaultReadLimit``, ``latestOffset``, ``partitions``,
  ``commit``: on the driver, in one long-lived Python process per query run. Each
  remote call is one short request/response (``log?latest``, ``log?commit=N``).
* ``read(partition)``: on executors, from a pickled reader. The partition carries the
  URL, the log name and its range; ``read`` fetches exactly ``[start, end)`` over its
  process's own connection (kept across tasks by reused Python workers) and yields Arrow
  record batches as the elements arrive.

Offsets are ``{"position": N, "reader": R}``: the next position to read, and the name
under which this query commits on the log. ``R`` is made once, when the query starts
fresh (``initialOffset``: option ``readerName``, else a new random name), and lives on in
the checkpoint, so a restarted query is the same reader and two queries on one log are
two readers: the log trims only below the least commit of its readers (docs/replay.md).
A micro-batch reads ``[start, end)``; Spark logs both before it runs, replays exactly
that range after a restart, and calls ``commit(end)`` once the batch is done, which lets
the server trim. (Offsets of checkpoints written before readers had names lack ``R``;
they commit as the unnamed reader.)

Admission control (Spark 4.2+): ``maxRecordsPerBatch`` (rows) becomes ``ReadMaxRows``.
With ``json`` and ``msgpack`` one element is one row, so a batch ends ``max`` positions
on. With ``arrow`` one element is a whole record batch of any size, which the driver
cannot count without fetching it, so the log counts rows as elements arrive
(``ReplayLog(rows=arrow_rows)``) and ``latestOffset`` asks it where ``max`` rows end
(``NAME?rows=R&from=A``; a batch holds at least one element). A log that counts no rows
fails the query with what to do. ``maxElementsPerBatch`` bounds elements instead, for
any codec. ``trigger(availableNow=True)`` reads up to the log's end at query start.

The demand chain: the server's log requests from its producer only while it has room,
room is made by ``commit``, and Spark commits only what it processed. So Spark's pace
sets how fast the producer may go.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import quote

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
    InputPartition,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from rstreams.replay._client import PACK, RemoteLogError, request_json, stream_range
from rstreams.spark._codecs import check_codec, decode_stream

__all__ = ["RStreamsDataSource", "RangePartition"]


class RangePartition(InputPartition):
    """Positions ``[start, end)`` of the log ``publisher`` at ``url`` (small and picklable)."""

    def __init__(self, url: str, publisher: str, start: int, end: int) -> None:
        self.url = url
        self.publisher = publisher
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"RangePartition({self.url!r}, {self.publisher!r}, {self.start}, {self.end})"


class _Options:
    """The reader's options, checked once where the user set them."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        for required in ("url", "publisher"):
            if not options.get(required):
                raise ValueError(
                    f"the rstreams source needs .option({required!r}, ...): "
                    'e.g. .option("url", "tcp://host:port").option("publisher", "sensors")'
                )
        self.url = str(options["url"])
        self.publisher = str(options["publisher"])
        self.codec = check_codec(str(options.get("codec", "json")))
        self.partitions = _positive(options, "numPartitions", 2)
        self.max_rows = _positive(options, "maxRecordsPerBatch", 0) or None
        self.max_elements = _positive(options, "maxElementsPerBatch", 0) or None
        if self.max_rows is not None and self.max_elements is not None:
            raise ValueError("set one of the options maxRecordsPerBatch and maxElementsPerBatch, not both")
        # With codec arrow an element carries many rows: the log counts them (ReplayLog(rows=)).
        self.count_rows = self.max_rows is not None and self.codec == "arrow"
        self.reader_name = str(options.get("readerName") or "")
        self.timeout = float(options.get("timeout", 60))
        self.starting = str(options.get("startingPosition", "earliest"))
        self.ending = str(options.get("endingPosition", "latest"))
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def info(self) -> dict[str, Any]:
        return request_json(self.url, f"{self.publisher}?latest", self.timeout)

    def end_within(self, start: int, max_rows: int) -> int:
        """The end of the longest range from ``start`` with at most ``max_rows`` rows (the log counts)."""
        try:
            answer = request_json(self.url, f"{self.publisher}?rows={max_rows}&from={start}", self.timeout)
        except RemoteLogError as error:
            if "counts no rows" not in str(error):
                raise
            raise ValueError(
                f"option maxRecordsPerBatch counts rows, but with codec 'arrow' an element of log "
                f"{self.publisher!r} is a whole record batch and the log does not count its rows: "
                "serve it as ReplayLog(..., rows=rstreams.spark.arrow_rows), or bound micro-batches "
                'in elements with .option("maxElementsPerBatch", N)'
            ) from None
        return int(answer["end"])

    def commit(self, position: int, reader: str | None) -> dict[str, Any]:
        name = f"{self.publisher}?commit={position}"
        if reader is not None:
            name += f"&reader={quote(reader, safe='')}"
        return request_json(self.url, name, self.timeout)

    def position(self, text: str, info: dict[str, Any]) -> int:
        if text == "earliest":
            return int(info["first"])
        if text == "latest":
            return int(info["end"])
        try:
            return int(text)
        except ValueError:
            raise ValueError(f"positions are 'earliest', 'latest' or an int; got {text!r}") from None

    def split(self, start: int, end: int) -> list[InputPartition]:
        total = end - start
        if total <= 0:
            return []
        step = -(-total // self.partitions)
        return [
            RangePartition(self.url, self.publisher, s, min(s + step, end)) for s in range(start, end, step)
        ]

    def read(self, partition: RangePartition) -> Iterator[pa.RecordBatch]:
        # Arrow elements are big: one wire element each (packing would copy them twice).
        pack = 0 if self.codec == "arrow" else PACK
        elements = stream_range(
            partition.url, partition.publisher, partition.start, partition.end, self.timeout, pack=pack
        )
        return decode_stream(elements, partition.start, self.codec, self.arrow_schema, partition.publisher)


def _positive(options: Mapping[str, str], name: str, default: int) -> int:
    text = options.get(name)
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 1:
        raise ValueError(f"option {name} must be an int >= 1, got {text!r}")
    return value


Offset = dict[str, Any]
"""``{"position": int, "reader": str}`` (JSON-able, in this key order: Spark compares the text)."""


def _offset(position: int, like: Offset) -> Offset:
    """An offset at ``position`` for the same reader as ``like``."""
    if "reader" not in like:
        return {"position": position}
    return {"position": position, "reader": like["reader"]}


class RStreamsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads of a replay log; see the module docstring."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._opts = _Options(options, schema)
        self._target: int | None = None  # trigger(availableNow=True): the end fixed at start
        self._initial: Offset | None = None  # Spark asks twice; the reader registers once

    def initialOffset(self) -> Offset:
        """A fresh query: register its reader name on the log at the starting position."""
        if self._initial is None:
            opts = self._opts
            reader = opts.reader_name or f"spark-{uuid.uuid4().hex}"
            if opts.starting == "earliest":
                # Join at the oldest position held, in one step: another reader's commit
                # cannot trim between our look and our joining.
                position = int(opts.commit(0, reader)["first"])
            else:
                position = opts.position(opts.starting, opts.info())
                opts.commit(position, reader)  # joins the log's readers: it keeps our data
            self._initial = {"position": position, "reader": reader}
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        bound = self._opts.max_rows or self._opts.max_elements
        return ReadAllAvailable() if bound is None else ReadMaxRows(bound)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = int(self._opts.info()["end"])

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        begin = int(start["position"])
        info = self._opts.info()
        end = int(info["end"])
        if self._target is not None:
            end = min(end, self._target)
        if isinstance(limit, ReadMaxRows) and end > begin:
            if self._opts.count_rows:
                end = min(end, self._opts.end_within(begin, limit.max_rows))
            else:
                end = min(end, begin + limit.max_rows)
        if end <= begin and info["error"] is not None:
            raise RuntimeError(f"replay log {self._opts.publisher!r} failed upstream: {info['error']}")
        return _offset(max(end, begin), start)

    def partitions(self, start: Offset, end: Offset) -> list[InputPartition]:
        return self._opts.split(int(start["position"]), int(end["position"]))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark's single empty partition when partitions() returned none
        return self._opts.read(partition)

    def commit(self, end: Offset) -> None:
        reader = end.get("reader")
        self._opts.commit(int(end["position"]), None if reader is None else str(reader))

    def stop(self) -> None:
        """Nothing to release: the process's kept connection serves its next calls, and ends
        with the process (Spark may skip stop())."""


class RStreamsBatchReader(DataSourceReader):
    """``spark.read``: positions ``[startingPosition, endingPosition)`` as they are now."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._opts = _Options(options, schema)

    def partitions(self) -> list[InputPartition]:
        info = self._opts.info()
        start = self._opts.position(self._opts.starting, info)
        end = min(self._opts.position(self._opts.ending, info), int(info["end"]))
        return self._opts.split(start, end)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark's single empty partition when partitions() returned none
        return self._opts.read(partition)


class RStreamsDataSource(DataSource):
    """Spark data source ``rstreams``: read from and write to RS.io replay logs.

    Options: ``url`` (``tcp://host:port``), ``publisher`` (the log's name), ``schema``
    (DDL, e.g. ``"sensor string, ts timestamp, value double"``), ``codec`` (``json``,
    ``msgpack``, ``arrow``), ``maxRecordsPerBatch`` (rows; not with ``arrow``) or
    ``maxElementsPerBatch`` (elements), ``readerName`` (the name the query commits
    under; default: a new one per fresh query), ``numPartitions`` (default 2),
    ``startingPosition``/``endingPosition`` (``earliest``, ``latest`` or an int),
    ``timeout`` (seconds per remote call, default 60).
    """

    @classmethod
    def name(cls) -> str:
        return "rstreams"

    def schema(self) -> str:
        schema = self.options.get("schema")
        if not schema:
            raise ValueError(
                'the rstreams source needs .option("schema", DDL), e.g. "sensor string, value double"'
            )
        return str(schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RStreamsStreamReader(self.options, schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RStreamsBatchReader(self.options, schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rstreams.spark._sink import RStreamsStreamWriter

        return RStreamsStreamWriter(self.options, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rstreams.spark._sink import RStreamsBatchWriter

        return RStreamsBatchWriter(self.options, schema)
