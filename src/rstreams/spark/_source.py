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
(Offsets of checkpoints written before readers had names lack ``R``; they commit as the
unnamed reader.)

The reader's first moments: ``initialOffset`` only *holds* the log for ``R`` (a pending
reader, ``NAME?hold=P&reader=R``), renewed by every ``latestOffset`` until Spark has
written the first offsets to its checkpoint. That is known when Spark plans batch 0
(``partitions``, after its offset log is written): only then does ``R`` commit and become
a committed reader. A driver that dies before leaves a hold that expires
(``ReplayLog(pending_timeout=)``), not a reader that holds the log for ever. A driver
that dies after, and restarts, replays batch 0 with the offsets Spark logged, while a new
process calls ``initialOffset`` again: ``partitions`` then takes batch 0's start from the
log's record of ``R`` and releases the new process's own hold.

Commits: Spark calls ``commit(end)`` only when it plans the *next* batch, which may
never come (the end of a finite stream) or only once the log has room again. So
``latestOffset(start)``, which Spark calls only after the batch ending at ``start`` is in
its commit log, commits ``start`` itself (the request also tells where the log ends): no
batch size can stall the log, and the last batch of a stream is trimmed as soon as Spark
next looks. (Spark's asynchronous progress tracking, which writes the commit log later,
is not supported.)

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

import logging
import re
import time
import uuid
from collections.abc import Generator, Iterator, Mapping
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

from rstreams.replay import Access
from rstreams.replay._client import RemoteLogError, request_json, stream_packs, stream_range
from rstreams.replay._cursor import packed_count
from rstreams.spark._codecs import BATCH_ROWS, check_codec, decode_batches, decode_packed
from rstreams.spark._options import (
    OptionError,
    access_from,
    explain,
    flag,
    number,
    positive,
    required,
    with_conf,
)

__all__ = ["RStreamsDataSource", "RangePartition"]

_logger = logging.getLogger("rstreams")


class RangePartition(InputPartition):
    """Positions ``[start, end)`` of the log ``publisher`` at ``url`` (small and picklable).

    The credentials are not in it: ``read`` takes them from the pickled reader.
    """

    def __init__(self, url: str, publisher: str, start: int, end: int) -> None:
        self.url = url
        self.publisher = publisher
        self.start = start
        self.end = end

    def __repr__(self) -> str:
        return f"RangePartition({self.url!r}, {self.publisher!r}, {self.start}, {self.end})"


class _Options:
    """The reader's options, checked once where the user set them (the query's start)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self.url = required(options, "url", "source")
        self.publisher = required(options, "publisher", "source")
        try:
            self.codec = check_codec(str(options.get("codec", "json")))
        except ValueError as bad:
            raise OptionError("codec", str(bad)) from None
        self.partitions = positive(options, "numPartitions", 2)
        self.max_rows = positive(options, "maxRecordsPerBatch", 0) or None
        self.max_elements = positive(options, "maxElementsPerBatch", 0) or None
        if self.max_rows is not None and self.max_elements is not None:
            raise OptionError(
                "maxRecordsPerBatch",
                "set one of the options maxRecordsPerBatch and maxElementsPerBatch, not both",
            )
        # With codec arrow an element carries many rows: the log counts them (ReplayLog(rows=)).
        self.count_rows = self.max_rows is not None and self.codec == "arrow"
        self.reader_name = str(options.get("readerName") or "")
        self.max_bytes = positive(options, "maxBytesPerBatch", 0) or None
        self.min_rows = positive(options, "minRecordsPerBatch", 0) or None
        self.max_delay = number(options, "maxTriggerDelay", 15.0)
        self.fail_on_data_loss = flag(options, "failOnDataLoss", True)
        self.timeout = number(options, "timeout", 60.0)
        self.starting = _position_option(options, "startingPosition", "earliest", ("earliest", "latest"))
        self.starting_time = _time_option(options, "startingTimestamp")
        if self.starting_time is not None and options.get("startingPosition") is not None:
            raise OptionError(
                "startingTimestamp", "set one of the options startingTimestamp and startingPosition, not both"
            )
        self.ending = _position_option(options, "endingPosition", "latest", ("latest",))
        self.access: Access = access_from(options, self.url)
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")

    def ask(self, query: str) -> dict[str, Any]:
        """``publisher?query``'s JSON answer; failures restated with the options to change."""
        try:
            return request_json(self.url, f"{self.publisher}?{query}", self.timeout, access=self.access)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, self.url, self.access) from None

    def info(self) -> dict[str, Any]:
        return self.ask("latest")

    def end_within(self, start: int, max_rows: int) -> int:
        """The end of the longest range from ``start`` with at most ``max_rows`` rows (the log counts)."""
        try:
            answer = self.ask(f"rows={max_rows}&from={start}")
        except RemoteLogError as error:
            if "counts no rows" not in str(error):
                raise
            raise OptionError(
                "maxRecordsPerBatch",
                f"option maxRecordsPerBatch counts rows, but with codec 'arrow' an element of log "
                f"{self.publisher!r} is a whole record batch and the log does not count its rows: "
                "serve it as ReplayLog(..., rows=rstreams.spark.arrow_rows), or bound micro-batches "
                'in elements with .option("maxElementsPerBatch", N)',
            ) from None
        return int(answer["end"])

    def end_within_bytes(self, start: int, max_bytes: int) -> int:
        """The end of the longest range from ``start`` with at most ``max_bytes`` bytes of elements."""
        return int(self.ask(f"bytes={max_bytes}&from={start}")["end"])

    def commit(self, position: int, reader: str | None) -> dict[str, Any]:
        query = f"commit={position}"
        if reader is not None:
            query += f"&reader={quote(reader, safe='')}"
        return self.ask(query)

    def hold(self, position: int, reader: str) -> dict[str, Any]:
        return self.ask(f"hold={position}&reader={quote(reader, safe='')}")

    def position_at(self, ms: int) -> int:
        """The first position that arrived at ``ms`` or later (``NAME?time=MS``)."""
        try:
            return int(self.ask(f"time={ms}")["position"])
        except RemoteLogError as error:
            raise OptionError(
                "startingTimestamp", f"option startingTimestamp {ms}: log {self.publisher!r}: {error}"
            ) from None

    def position(self, text: str, info: dict[str, Any]) -> int:
        if text == "earliest":
            return int(info["first"])
        if text == "latest":
            return int(info["end"])
        return int(text)

    def split(self, start: int, end: int) -> list[InputPartition]:
        total = end - start
        if total <= 0:
            return []
        step = -(-total // self.partitions)
        return [
            RangePartition(self.url, self.publisher, s, min(s + step, end)) for s in range(start, end, step)
        ]

    def read(self, partition: RangePartition) -> Iterator[pa.RecordBatch]:
        """The partition's rows as Arrow batches. With ``failOnDataLoss=false``, positions the log
        trimmed before they were read are skipped (a warning on the ``rstreams`` logger)."""
        start, end = partition.start, partition.end
        try:
            while start < end:
                failure, start = yield from self._read_from(partition, start)
                if failure is None:
                    return
                trimmed_to = _trimmed_to(failure)
                if self.fail_on_data_loss or trimmed_to is None or trimmed_to <= start:
                    raise failure
                _logger.warning(
                    "rstreams source %r: positions %d..%d were trimmed before they were read; skipped "
                    "(failOnDataLoss=false)",
                    partition.publisher,
                    start,
                    min(trimmed_to, end) - 1,
                )
                start = min(trimmed_to, end)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, self.url, self.access) from None

    def _read_from(
        self, partition: RangePartition, start: int
    ) -> Generator[pa.RecordBatch, None, tuple[RemoteLogError | None, int]]:
        """Decode ``[start, partition.end)`` as it arrives; returns ``(the log's refusal or None,
        the position after the last element decoded)``. Arrow elements are big: one wire
        element each (packing would copy them twice), decoded one by one. Other codecs arrive
        packed and are decoded in runs of about BATCH_ROWS, still packed (no Python object
        per element)."""
        if self.codec == "arrow":
            return (yield from self._read_arrow(partition, start))
        packs = stream_packs(
            partition.url, partition.publisher, start, partition.end, self.timeout, access=self.access
        )
        run: list[bytes] = []
        count = 0
        failure: RemoteLogError | None = None
        try:
            for packed in packs:
                run.append(packed)
                count += packed_count(packed)
                if count >= BATCH_ROWS:
                    yield decode_packed(run, start, self.codec, self.arrow_schema, partition.publisher)
                    start += count
                    run, count = [], 0
        except RemoteLogError as refused:
            failure = refused
        if run:
            yield decode_packed(run, start, self.codec, self.arrow_schema, partition.publisher)
            start += count
        return failure, start

    def _read_arrow(
        self, partition: RangePartition, start: int
    ) -> Generator[pa.RecordBatch, None, tuple[RemoteLogError | None, int]]:
        elements = stream_range(
            partition.url, partition.publisher, start, partition.end, self.timeout, pack=0, access=self.access
        )
        try:
            for element in elements:
                yield from decode_batches([element], start, "arrow", self.arrow_schema, partition.publisher)
                start += 1
        except RemoteLogError as refused:
            return refused, start
        return None, start


_TRIMMED = re.compile(r"TrimmedError: .*the oldest position held is (\d+)")


def _trimmed_to(error: RemoteLogError) -> int | None:
    """The log's oldest position, if ``error`` is its TrimmedError (docs/replay.md, *Limits*)."""
    match = _TRIMMED.search(str(error))
    return None if match is None else int(match.group(1))


def _time_option(options: Mapping[str, str], name: str) -> int | None:
    """Milliseconds since the epoch (an int >= 0), or ``None`` when unset."""
    text = options.get(name)
    if text is None:
        return None
    text = str(text)
    if not (text.isdigit() and text.isascii()):
        raise OptionError(
            name, f"option {name} takes milliseconds since the epoch (an int >= 0), got {text!r}"
        )
    return int(text)


def _position_option(options: Mapping[str, str], name: str, default: str, words: tuple[str, ...]) -> str:
    text = str(options.get(name, default))
    if text in words or (text.isdigit() and text.isascii()):
        return text
    raise OptionError(
        name, f"option {name} takes {' or '.join(repr(w) for w in words)} or a position >= 0, got {text!r}"
    )


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
        self._initial: Offset | None = None  # Spark asks twice; the reader holds once
        self._confirmed = False  # whether the query's reader has committed (batch 0 is logged)
        self._latest: dict[str, Any] = {}  # the log's last answer, for reportLatestOffset
        self._uncounted = False  # an arrow log that counts no rows: no rowsBehind
        self._clock = time.monotonic  # for maxTriggerDelay (tests set a virtual clock)
        self._last_batch = self._clock()  # when the last micro-batch was planned
        self._lost = 0  # positions skipped because they were trimmed (failOnDataLoss=false)

    def initialOffset(self) -> Offset:
        """A fresh query: hold the log for a new pending reader at the starting position."""
        if self._initial is None:
            opts = self._opts
            reader = opts.reader_name or f"spark-{uuid.uuid4().hex}"
            if opts.starting_time is not None:
                wanted = opts.position_at(opts.starting_time)
            elif opts.starting == "earliest":
                wanted = 0
            else:
                wanted = opts.position(opts.starting, opts.info())
            answer = opts.hold(wanted, reader)
            position = int(answer["position"])
            if opts.starting not in ("earliest", "latest") and position > wanted and not opts.reader_name:
                raise OptionError(
                    "startingPosition",
                    f"option startingPosition {wanted}: log {opts.publisher!r} no longer holds it "
                    f"(the oldest position held is {answer['first']})",
                )
            self._initial = {"position": position, "reader": reader}
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        bound = self._opts.max_rows or self._opts.max_elements
        return ReadAllAvailable() if bound is None else ReadMaxRows(bound)

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = int(self._opts.info()["end"])

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        begin = int(start["position"])
        reader = start.get("reader")
        holding = not self._confirmed and start == self._initial
        if holding:
            info = self._opts.hold(begin, str(reader))  # still pending: only say we are alive
        else:  # the batch that ended at `start` is in Spark's commit log: the log may trim it
            info = self._opts.commit(begin, None if reader is None else str(reader))
        end = int(info["end"])
        opts = self._opts
        if self._target is not None:
            end = min(end, self._target)
        # Bounds count from what the log still holds (failOnDataLoss=false skips the rest).
        base = begin if opts.fail_on_data_loss else max(begin, int(info["first"]))
        if not isinstance(limit, ReadAllAvailable) and end > base:
            if isinstance(limit, ReadMaxRows):
                if opts.count_rows:
                    end = min(end, opts.end_within(base, limit.max_rows))
                else:
                    end = min(end, base + limit.max_rows)
            if opts.max_bytes is not None:
                end = min(end, opts.end_within_bytes(base, opts.max_bytes))
        if opts.min_rows is not None and self._target is None and end > begin:
            waited = self._clock() - self._last_batch
            rows = self._rows_behind(base, end)
            if (end - base if rows is None else rows) < opts.min_rows and waited < opts.max_delay:
                end = begin  # not enough yet: wait for more, at most maxTriggerDelay
        if end <= begin and info["error"] is not None:
            raise RuntimeError(f"replay log {opts.publisher!r} failed upstream: {info['error']}")
        if end > begin:
            self._last_batch = self._clock()
        self._latest = {
            "end": int(info["end"]),
            "first": int(info["first"]),
            "batch_end": max(end, begin),
            "committed": None if holding else begin,
        }
        return _offset(max(end, begin), start)

    def reportLatestOffset(self) -> Offset | None:
        """How far behind the log's end the query is, as Spark's progress shows it
        (``sources[].latestOffset``): ``position``, the log's end as last seen; ``behind``, the
        positions not yet in any batch; ``rowsBehind``, their rows (one per element for json and
        msgpack; for arrow when the log counts rows); ``oldestHeld``, the oldest position the log
        holds; ``heldBy``, when that is below what this query has committed, the readers (committed
        or pending) that hold the log back, with their positions: a query that will not come back
        shows here, and ``NAME?leave=R`` releases it."""
        if not self._latest:
            return None
        end, batch_end = self._latest["end"], self._latest["batch_end"]
        report: Offset = {"position": end, "behind": max(0, end - batch_end)}
        rows = self._rows_behind(batch_end, end)
        if rows is not None:
            report["rowsBehind"] = rows
        report["oldestHeld"] = first = self._latest["first"]
        committed = self._latest.get("committed")
        if committed is not None and first < committed:  # someone else holds the log back
            answer = self._opts.ask("readers")
            held = {**answer["readers"], **answer["pending"]}
            report["heldBy"] = {name: at for name, at in held.items() if at < committed}
        if not self._opts.fail_on_data_loss:
            report["lost"] = self._lost
        return report

    def _rows_behind(self, start: int, end: int) -> int | None:
        if self._opts.codec != "arrow":
            return max(0, end - start)
        if end <= start or self._uncounted:
            return 0 if end <= start else None
        try:
            return int(self._opts.ask(f"rows={2**62}&from={start}")["rows"])
        except RemoteLogError:  # the log counts no rows (or trimmed meanwhile): say nothing
            self._uncounted = True
            return None

    def partitions(self, start: Offset, end: Offset) -> list[InputPartition]:
        begin, stop = int(start["position"]), int(end["position"])
        if not self._confirmed and start == self._initial and "reader" in end:
            begin = self._confirm(begin, str(start["reader"]), str(end["reader"]))
        if not self._opts.fail_on_data_loss and begin < stop:
            first = int(self._opts.info()["first"])
            if begin < first:  # trimmed before this batch could read it: skipped, and counted
                self._lost += min(first, stop) - begin
                begin = min(first, stop)
        return self._opts.split(begin, stop)

    def _confirm(self, begin: int, ours: str, logged: str) -> int:
        """Batch 0 is in Spark's offset log: make its reader a committed one; its start.

        ``logged`` is the reader of the offsets Spark wrote. If it is not ``ours`` (this
        process's ``initialOffset``), the query is replaying batch 0 after a restart: its
        start is where ``logged`` holds the log, and our own hold is released.
        """
        if logged != ours:
            readers = self._opts.ask(f"leave={quote(ours, safe='')}")
            held = {**readers["readers"], **readers["pending"]}
            if logged in held:
                begin = int(held[logged])
        self._opts.commit(begin, logged)
        self._confirmed = True
        return begin

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark's single empty partition when partitions() returned none
        return self._opts.read(partition)

    def commit(self, end: Offset) -> None:
        reader = end.get("reader")
        self._opts.commit(int(end["position"]), None if reader is None else str(reader))
        self._confirmed = True

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

    Its options, with defaults and meanings, are :data:`rstreams.spark._options.OPTIONS`
    (the README's Spark section shows them as a table). ``session_credentials`` holds the
    credentials of the Spark conf (``spark.rstreams.*``) in the subclass that
    :func:`rstreams.spark.register` makes when there are any.
    """

    session_credentials: Mapping[str, str] = {}

    def _options(self) -> Mapping[str, str]:
        return with_conf(self.options, self.session_credentials)

    @classmethod
    def name(cls) -> str:
        return "rstreams"

    def schema(self) -> str:
        schema = self.options.get("schema")
        if not schema:
            raise OptionError(
                "schema",
                'the rstreams source needs .option("schema", DDL), e.g. "sensor string, value double"',
            )
        return str(schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return RStreamsStreamReader(self._options(), schema)

    def reader(self, schema: StructType) -> DataSourceReader:
        return RStreamsBatchReader(self._options(), schema)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        from rstreams.spark._sink import stream_writer

        return stream_writer(self._options(), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rstreams.spark._sink import writer

        return writer(self._options(), schema)
