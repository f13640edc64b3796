"""The ``rstreams`` Spark sink: rows published on an RS.io server's sink log, exactly once.

Two phases, as Spark's writer API intends:

* ``write(rows)`` on an executor uploads its partition's rows to the server, where they
  are *staged* under a fresh token (not yet visible to subscribers), and returns the
  token in its commit message. The upload is an RS.io channel ``LOG?stage=TOKEN`` whose
  input, the rows packed (Arrow batches above 64 KiB split), the server requests with
  bounded demand, so a server that takes rows slowly slows the Spark task (a server without
  extensions channels and input-parts gets the rows by reverse subscription, also with
  bounded demand; PROTOCOL.md §21.8).
* ``commit(messages, batchId)`` on the driver asks the server to publish the staged
  tokens as batch ``batchId`` of this query. The server publishes each
  ``(query, batchId)`` at most once: a restarted query that re-runs a batch whose
  commit was already done gets ``published: false`` and its new upload is dropped.
  ``abort`` discards the staged tokens. Each upload names its owner (PROTOCOL.md §21.8): the
  query, the micro-batch and the query's run (made as Spark builds the writer for the tasks, at
  each start of the query), so the server drops by itself what a driver killed between the
  uploads and the commit left staged (at the first upload of the restarted run), and a task's
  other attempts (at the batch's publish). The run is announced on each sink log as that writer is
  built (``NAME?discard=&run=R``), so a late task of a killed run never drops the restarted run's.

The query's identity is Spark's query id (``sql.streaming.queryId``, stable across
restarts from the same checkpoint), read in ``write`` from the task's local properties
and carried to ``commit`` in the messages; option ``writerId`` overrides it.

``df.write`` (a batch job) publishes once as a fresh batch; with options ``writerId`` and
``batchId`` (for example inside ``foreachBatch``, with the query's id and the batch id
Spark passes) it publishes as that batch, once: the re-run of a batch is refused. The
server keeps the record of published batches with a file-backed sink log on disk, so it
holds across a restart of the server (docs/replay.md).

Epochs (docs/replay.md, *Epochs*): a sink log in memory whose server restarts starts again
empty and has forgotten which batches it published, so a batch re-run after that restart would
be published twice, and what its readers had not read is lost. The writer Spark builds on the
driver for its tasks records each sink log's epoch (the answer to ``NAME?discard=``, asked as
that writer is built, before Spark pickles it to send it to the tasks); the tasks' commit
messages carry it to ``commit``, which publishes with ``&epoch=E``: a log restarted meanwhile
refuses, and the query fails saying so (:class:`SinkLogRestartedError`). A streaming query also
keeps the epochs in ``CHECKPOINT/rstreams-sink.json`` (``{"epochs": {url: {name: E}}}``; where
the checkpoint is found and what is not covered: :mod:`rstreams.spark._epochs`), written at the
commit of the first batch that meets a log, so a query restarted from its checkpoint against a
restarted sink log fails before anything of the batch is published: its tasks fail before they
upload when the writer built at its start finds another epoch than the one kept, and the commit
refuses (discarding the batch's uploads) when the epoch its tasks staged under is not the one
kept. A file-backed sink log keeps its epoch, so nothing fires. The epoch checks never stop an
abort: Spark builds a writer for it too, which asks nothing as it is built (from the data source
unpickled), and its abort discards the uploads, one request per sink log that has some (none when
no task staged anything).

Several logs: options ``url`` and ``publisher`` may list several servers and sink logs (each
named log on each server) and option ``keyColumn`` names the column whose value picks a row's
log: the hash of the value's text (Arrow's cast to string, null as the empty string) modulo
the number of logs, so equal keys always land in the same log. A task stages its rows per log
(each log an upload of its own, made once the task has its rows: the upload keeps them for its
retries anyway), and ``commit`` publishes each log's tokens on that log as the batch, once per
``(writer, batch)`` and log: a re-run after a commit that reached only some logs publishes on the
others only.

Every codec writes with Spark's Arrow writers (``DataSourceStreamArrowWriter``,
``DataSourceArrowWriter``); no Spark ``Row`` is made. With ``arrow`` the task's record
batches, re-chunked to at most :data:`~rstreams.spark._codecs.BATCH_ROWS` rows, each become
one Arrow IPC stream element; with ``json`` and ``msgpack`` each row becomes one element,
its timestamps and dates made ISO text by Arrow a column at a time
(:func:`~rstreams.spark._codecs.row_encoder`).
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    DataSourceWriter,
    WriterCommitMessage,
)
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import StructType

from rstreams.errors import ReactiveStreamsError
from rstreams.replay import Access
from rstreams.replay._client import RemoteLogError, request_json, upload
from rstreams.spark._codecs import BATCH_ROWS, arrow_ipc, row_encoder
from rstreams.spark._epochs import CONF_KEY, EPOCHS_FILE, EpochRecord, Epochs, checkpoint_of, record_at
from rstreams.spark._options import (
    OptionError,
    access_from,
    check_names,
    explain,
    missing_log,
    number,
    required,
)

__all__ = [
    "EPOCHS_FILE",
    "RStreamsArrowBatchWriter",
    "RStreamsArrowStreamWriter",
    "SinkLogRestartedError",
    "SpreadUpload",
    "StagedUpload",
    "stream_writer",
    "writer",
]


class SinkLogRestartedError(RemoteLogError):
    """A sink log's epoch is not the one the query recorded: the log was restarted in memory
    since, so what it published before may be lost to its readers, and a batch the query re-runs
    could be published twice (docs/replay.md, *Epochs*)."""


@dataclass
class StagedUpload(WriterCommitMessage):
    """What one ``write`` task staged: its token, row count and the query's id; ``epochs``: each
    sink log's epoch as the writer recorded it on the driver (by log index)."""

    token: str
    count: int
    writer: str
    epochs: tuple[str | None, ...] = ()
    checkpoint: str | None = None
    """The session conf ``spark.sql.streaming.checkpointLocation`` as the task saw it (Spark gives
    it to tasks, not to the driver's Python workers), for the commit to find the checkpoint."""


@dataclass
class SpreadUpload(WriterCommitMessage):
    """What one ``write`` task staged over several logs: ``(log index, token, rows)`` each."""

    parts: list[tuple[int, str, int]]
    writer: str
    epochs: tuple[str | None, ...] = ()
    checkpoint: str | None = None


class _Writer:
    """The sink's options (checked on the driver when the query starts) and its remote calls."""

    def __init__(self, options: Mapping[str, str], schema: StructType, gateway: str | None = None) -> None:
        check_names(options, "sink")
        urls = _listed(options, "url")
        names = _listed(options, "publisher")
        checked = [access_from(options, url) for url in urls]  # each URL checked, its TLS files loaded
        self.access: Access = checked[0]
        patterned = [name for name in names if _PATTERN.search(name)]
        if patterned:
            raise OptionError(
                "publisher",
                f"option publisher of the rstreams sink names logs; {patterned[0]!r} is a pattern",
            )
        self.targets = [(url, name) for url in urls for name in names]
        """The sink logs, ``(url, name)``: each named log on each server."""
        self.url, self.publisher = self.targets[0]
        self.codec = str(options.get("codec", "json"))
        if self.codec != "arrow":
            try:
                row_encoder(self.codec)  # check it here, on the driver, where the user set it
            except ValueError:
                raise OptionError(
                    "codec", f"option codec of the rstreams sink: json, msgpack or arrow; got {self.codec!r}"
                ) from None
        self.key = _key_column(options, schema, len(self.targets))
        self.writer_id = options.get("writerId")
        self.batch_id = _batch_id(options, self.writer_id)
        self.timeout = number(options, "timeout", 300.0)
        self.batch: int | None = None
        """The batch a ``df.write`` publishes (its uploads name it); ``None`` for a streaming query,
        whose tasks read theirs from Spark."""
        self.own_writer = _batch_writer()
        """The writer of a ``df.write`` without option ``writerId`` (one for all its tasks)."""
        self.run: str | None = None
        """A streaming query's run: made as Spark builds the writer it pickles to the tasks, once at
        each start of the query (:class:`RStreamsArrowStreamWriter`)."""
        self.epochs: tuple[str | None, ...] = ()
        """Each sink log's epoch as :meth:`check_logs` found it on the driver, by target index
        (``None``: a server that names none); pickled with the writer to the executors."""
        self.located = {
            name: str(value)
            for name, value in options.items()
            if name.lower() in ("checkpointlocation", "queryname") and value
        }
        """The options that say where the query's checkpoint is (:func:`checkpoint_of`)."""
        self.gateway = gateway
        """The file of the driver's py4j gateway (:func:`~rstreams.spark._hadoop.share_gateway`),
        through which the record is kept where Spark keeps the checkpoint; None: ``pyarrow.fs``."""
        self.refused: SinkLogRestartedError | OptionError | None = None
        """Set by :meth:`check_record` when a log's epoch is not the one the checkpoint keeps (or
        the record cannot be read): the tasks of a writer built so raise it before they upload."""
        self.checked = False
        """Whether :meth:`check` ran (a writer is checked once, however often it is pickled)."""

    def write_arrow(self, batches: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        """Stage a partition's record batches: ``arrow`` elements of at most BATCH_ROWS rows, or
        one ``json`` or ``msgpack`` element per row.

        Raises:
            SinkLogRestartedError, OptionError: :attr:`refused` (nothing is uploaded).
        """
        if self.refused is not None:
            raise self.refused
        if self.key is None:
            return self._upload(self._elements(batches))
        spread: list[list[pa.RecordBatch]] = [[] for _ in self.targets]
        for batch in batches:
            slots = _slots(batch.column(self.key[0]), len(self.targets))
            for slot in np.unique(slots).tolist():
                spread[slot].append(batch.take(pa.array(np.flatnonzero(slots == slot))))
        return self._spread([self._elements(iter(held)) for held in spread])

    def _elements(self, batches: Iterator[pa.RecordBatch]) -> Iterator[bytes]:
        if self.codec == "arrow":
            return _ipc_elements(batches)
        encode = row_encoder(self.codec)
        return (element for batch in batches for element in encode(batch))

    def _upload(self, elements: Iterator[bytes]) -> StagedUpload:
        writer, owner = self._owner()
        token, count = self._stage(self.targets[0], elements, owner)
        return StagedUpload(token, count, writer, self.epochs, _task_property(CONF_KEY))

    def _spread(self, elements: list[Iterator[bytes]]) -> SpreadUpload:
        writer, owner = self._owner()
        parts = []
        for index, (target, rows) in enumerate(zip(self.targets, elements, strict=True)):
            first = next(rows, None)
            if first is not None:  # a log with no rows from this task: no upload
                token, count = self._stage(target, chain([first], rows), owner)
                parts.append((index, token, count))
        return SpreadUpload(parts, writer, self.epochs, _task_property(CONF_KEY))

    def _owner(self) -> tuple[str, dict[str, Any]]:
        """The writer this task publishes as, and the owner its uploads name (PROTOCOL.md §21.8):
        a streaming query's micro-batch (a task property Spark sets) and :attr:`run`, so the
        server drops the uploads of a run killed before its commit and of a task's other
        attempts; a ``df.write``'s batch, with no run (two of them may run at once under one
        ``writerId``)."""
        writer = self.writer_id or _task_property("sql.streaming.queryId") or self.own_writer
        if self.batch is not None:
            return writer, {"writer": writer, "batch": self.batch}
        batch = _task_property(_BATCH_KEY)
        if batch is None or not batch.isdigit():
            return writer, {}
        return writer, {"writer": writer, "batch": int(batch)} | ({"run": self.run} if self.run else {})

    def _stage(
        self, target: tuple[str, str], elements: Iterator[bytes], owner: dict[str, Any]
    ) -> tuple[str, int]:
        url, log = target
        token = uuid.uuid4().hex
        try:
            count = upload(url, log, token, elements, self.timeout, access=self.access, **owner)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, url, self.access) from None
        except RemoteLogError as error:
            raise missing_log(error, url, log, "sink") from None
        return token, count

    def check(self) -> None:
        """:meth:`check_logs`, then :meth:`check_record`, once."""
        if not self.checked:
            self.check_logs()
            self.check_record()
            self.checked = True

    def check_logs(self) -> None:
        """Ask each sink log to discard nothing (``NAME?discard=``), on the driver as Spark builds the
        writer: a server that serves no such sink log fails the query at its start with the
        :class:`OptionError` of option ``publisher`` naming the URL, not its first task; so does a
        log the server serves but not as a sink log. Refused credentials fail here too. The
        answers' epochs become :attr:`epochs`. A streaming query's writer announces its
        :attr:`run` with it (``&run=R``, before any task of the run uploads), so each sink log
        refuses a late task of an earlier run instead of taking it for the newest (PROTOCOL.md
        §21.8); a server from before announcements refuses the parameter, and is asked again
        without it."""
        found = []
        for target in self.targets:
            epoch = self._announce(target).get("epoch")
            found.append(None if epoch is None else str(epoch))
        self.epochs = tuple(found)

    def _announce(self, target: tuple[str, str]) -> dict[str, Any]:
        """``NAME?discard=&run=R`` (``NAME?discard=`` without a run, or on a server that refuses
        ``run=``: its refusal of anything else is told by the plain request)."""
        if self.run is not None:
            try:
                return self._ask(target, f"discard=&run={quote(self.run, safe='')}", told=False)
            except RemoteLogError:
                pass
        return self._ask(target, "discard=")

    def check_record(self) -> None:
        """Check :attr:`epochs` against those the checkpoint keeps, where the options name it
        (a query whose checkpoint the session conf sets is checked at its commits): a log whose
        epoch is not the one kept sets :attr:`refused`, raised by the tasks (not here: Spark
        builds a writer for a commit and for an abort too, and an abort must go on)."""
        record, _ = record_at(checkpoint_of(self.located, None), self.gateway)
        if record is None:
            return
        try:
            kept = self._read(record)
        except OptionError as unreadable:
            self.refused = unreadable
            return
        for (url, log), epoch in zip(self.targets, self.epochs, strict=True):
            recorded = kept.get(url, {}).get(log)
            if epoch is not None and recorded is not None and recorded != epoch:
                since = f"this query recorded it in its checkpoint (epoch {recorded!r}, now {epoch!r})"
                self.refused = _restarted(url, log, since, "nothing more is published", record.shown)
                return

    def keep(self, messages: list[WriterCommitMessage | None], batch: int) -> tuple[EpochRecord | None, str]:
        """At a commit: check the epochs the batch's tasks staged under against those the checkpoint
        keeps, and add the logs it keeps none for; the record, or None and why none is kept.

        Raises:
            SinkLogRestartedError: a log's epoch is not the one kept (the batch's uploads are
                discarded first: nothing of the batch is published).
        """
        _, _, epochs, conf = self._tokens(messages)
        record, why = record_at(checkpoint_of(self.located, conf), self.gateway)
        if record is None:
            return None, why
        kept = self._read(record)
        added = False
        for (url, log), epoch in zip(self.targets, epochs, strict=False):
            if epoch is None:
                continue
            recorded = kept.setdefault(url, {}).get(log)
            if recorded is None:
                kept[url][log] = epoch
                added = True
            elif recorded != epoch:
                self.discard(messages)
                since = f"this query recorded it in its checkpoint (epoch {recorded!r}, its writer {epoch!r})"
                raise _restarted(url, log, since, f"batch {batch} was not published", record.shown)
        if added:
            self._write(record, kept)
        return record, ""

    def _read(self, record: EpochRecord) -> Epochs:
        try:
            return record.read()
        except (ValueError, KeyError, TypeError, AttributeError):
            raise OptionError(
                "checkpointLocation",
                f"option checkpointLocation: {record.shown} is not the rstreams sink's record of its "
                'logs\' epochs ({"epochs": {url: {name: epoch}}}): delete it to record them again',
            ) from None
        except OSError as error:
            raise OptionError(
                "checkpointLocation", f"option checkpointLocation: cannot read {record.shown}: {error}"
            ) from None

    def _write(self, record: EpochRecord, kept: Epochs) -> None:
        try:
            record.write(kept)
        except OSError as error:
            raise OptionError(
                "checkpointLocation", f"option checkpointLocation: cannot write {record.shown}: {error}"
            ) from None

    def _ask(self, target: tuple[str, str], query: str, *, told: bool = True) -> dict[str, Any]:
        """``NAME?query``'s answer; a refusal restated (:func:`missing_log`), unless not ``told``."""
        url, log = target
        try:
            return request_json(url, f"{log}?{query}", self.timeout, access=self.access)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, url, self.access) from None
        except RemoteLogError as error:
            if not told:
                raise
            raise missing_log(error, url, log, "sink") from None

    def _tokens(
        self, messages: list[WriterCommitMessage | None]
    ) -> tuple[str | None, dict[int, list[str]], tuple[str | None, ...], str | None]:
        """The writer, per log index the tokens ``messages`` staged, the epochs they carry, and
        the session conf's checkpoint root the tasks saw."""
        writer: str | None = None
        tokens: dict[int, list[str]] = {}
        epochs: tuple[str | None, ...] = ()
        conf: str | None = None
        for message in messages:
            if isinstance(message, StagedUpload):
                tokens.setdefault(0, []).append(message.token)
            elif isinstance(message, SpreadUpload):
                for index, token, _ in message.parts:
                    tokens.setdefault(index, []).append(token)
            else:
                continue
            writer = message.writer
            epochs = message.epochs or epochs
            conf = message.checkpoint or conf
        return writer, tokens, epochs, conf

    def publish(
        self,
        messages: list[WriterCommitMessage | None],
        batch: int,
        kept: tuple[EpochRecord | None, str] = (None, "a df.write keeps no record of its logs' epochs"),
    ) -> dict[str, Any]:
        """Publish each log's staged tokens as ``batch``: ``{"published", "count"}`` summed.
        ``kept``: the record of the epochs (:meth:`keep`), or None and why, for the error."""
        writer, tokens, epochs, _ = self._tokens(messages)
        answer: dict[str, Any] = {"published": False, "count": 0}
        for index, staged in sorted(tokens.items()):
            query = f"publish={batch}&writer={quote(str(writer), safe='')}&tokens={','.join(staged)}"
            epoch = epochs[index] if index < len(epochs) else None
            if epoch is not None:
                query += f"&epoch={quote(epoch, safe='')}"
            try:
                done = self._ask(self.targets[index], query)
            except RemoteLogError as error:
                if "LogEpochError: " not in str(error):
                    raise
                url, log = self.targets[index]
                where = f"the query's writer recorded its epoch {epoch!r} ({error})"
                outcome = f"batch {batch} was not published"
                record, why = kept
                raise _restarted(url, log, where, outcome, record.shown if record else None, why) from None
            answer = {
                "published": answer["published"] or done["published"],
                "count": answer["count"] + done["count"],
            }
        return answer

    def discard(self, messages: list[WriterCommitMessage | None]) -> None:
        """Drop the staged uploads of ``messages``: one ``NAME?discard=T1,T2`` per sink log that
        has some, none when no task staged anything."""
        _, tokens, _, _ = self._tokens(messages)
        for index, staged in sorted(tokens.items()):
            self._ask(self.targets[index], f"discard={','.join(staged)}")


_PATTERN = re.compile(r"[*?\[]")


def _restarted(
    url: str, log: str, since: str, outcome: str, kept: str | None, why: str = ""
) -> SinkLogRestartedError:
    """The error of a sink log restarted since ``since``: what may be lost or twice, what to do;
    ``kept``: where the record of the epochs is, or None (``why``: why none is kept)."""
    if kept is None:  # no record kept: a restart from the checkpoint records the log as it is now
        go_on = ", or restart it from its checkpoint to go on accepting that"
        if why:
            go_on += f" (no record of the epochs is kept across restarts of the query: {why})"
    else:
        go_on = f", or delete {kept} to go on in this one accepting that"
    return SinkLogRestartedError(
        f"rstreams sink: sink log {log!r} at {url} was restarted since {since}: a sink log in memory "
        "starts again empty and forgets which batches it published, so rows published before the "
        "restart that its readers had not read are lost, and a batch the query re-runs (one Spark had "
        f"not recorded as committed) would be published a second time; {outcome}. Serve the sink log "
        "from a file (ReplayLog(name, path=DIR) in ReplayServer(sinks=...), or rstreams serve --sink "
        "NAME --path DIR), whose epoch and record of published batches survive restarts, and start "
        f"the query with a new checkpointLocation{go_on} "
        "(docs/replay.md, Epochs)"
    )


def _listed(options: Mapping[str, str], name: str) -> tuple[str, ...]:
    """The comma-separated entries of a required option, each stripped, none empty or twice."""
    entries = tuple(entry.strip() for entry in required(options, name, "sink").split(","))
    if not all(entries) or len(set(entries)) != len(entries):
        raise OptionError(name, f"option {name}: an empty entry or one given twice in {options.get(name)!r}")
    return entries


def _key_column(options: Mapping[str, str], schema: StructType, logs: int) -> tuple[str, pa.DataType] | None:
    """The column that picks each row's log, and its Arrow type; None for one log."""
    name = options.get("keyColumn")
    if not name:
        if logs > 1:
            raise OptionError(
                "keyColumn",
                f"the rstreams sink writes to {logs} logs (options url and publisher): "
                "option keyColumn names the column that picks each row's log, "
                'e.g. .option("keyColumn", "sensor")',
            )
        return None
    fields = to_arrow_schema(schema, timezone="UTC")
    if name not in fields.names:
        raise OptionError("keyColumn", f"option keyColumn: no column {name!r} among {fields.names}")
    kind = fields.field(name).type
    try:
        pc.cast(pa.array([], type=kind), pa.string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        raise OptionError(
            "keyColumn", f"option keyColumn: column {name!r} ({kind}) has no text form"
        ) from None
    return str(name), kind


def _slots(keys: pa.Array | pa.ChunkedArray, logs: int) -> Any:
    """Each key's log: the hash of its text modulo ``logs`` (a numpy array)."""
    from pandas.util import hash_array

    text = pc.cast(keys, pa.string()).fill_null("")
    return hash_array(text.to_numpy(zero_copy_only=False)) % logs


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


_BATCH_KEY = "streaming.sql.batchId"
"""The task property in which Spark gives a streaming query's micro-batch id to its tasks."""


def _task_property(name: str) -> str | None:
    """The running Spark task's local property ``name`` (None outside a task, or unset)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    value = context.getLocalProperty(name) if context is not None else None
    return str(value) if value else None


def _batch_writer() -> str:
    """The writer of a ``df.write`` without option ``writerId``: one of its own."""
    return f"batch-{uuid.uuid4().hex}"


class RStreamsArrowStreamWriter(DataSourceStreamArrowWriter):
    """``df.writeStream.format("rstreams")``: record batches, every codec."""

    def __init__(self, options: Mapping[str, str], schema: StructType, gateway: str | None = None) -> None:
        if options.get("batchId") is not None:
            raise OptionError(
                "batchId",
                "option batchId is for df.write (e.g. inside foreachBatch); a streaming query publishes "
                "each micro-batch under its own batch id",
            )
        self._writer = _Writer(options, schema, gateway)
        self._writer.run = uuid.uuid4().hex  # the tasks get the one of the writer built at the start

    def __getstate__(self) -> dict[str, Any]:
        """Spark pickles the writer it builds as the query starts to send it to the tasks, and never
        the one it builds for a commit or an abort. That writer's sink logs were checked as it was
        built (:func:`stream_writer` with ``starting``); one built otherwise is checked here, once
        (:meth:`_Writer.check`), so the tasks always carry the epochs found. An error raised here
        reaches the user wrapped in PySpark's "Could not serialize object", hence the check at
        the build."""
        self._writer.check()
        return self.__dict__

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._writer.write_arrow(iterator)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        """Publish the batch (:meth:`_Writer.publish`); a commit that fails discards the batch's
        uploads not yet published before it raises: the query fails, and Spark aborts no batch
        whose commit failed, so they would stay staged until the server restarts (a re-run
        batch uploads its rows again)."""
        try:
            self._writer.publish(messages, batchId, self._writer.keep(messages, batchId))
        except (ReactiveStreamsError, OSError):
            with contextlib.suppress(ReactiveStreamsError, OSError):  # the commit's error is the one told
                self._writer.discard(messages)
            raise

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        self._writer.discard(messages)


class RStreamsArrowBatchWriter(DataSourceArrowWriter):
    """``df.write.format("rstreams")``: one publish of all partitions' rows, as a fresh batch
    or, with options ``writerId`` and ``batchId``, as that batch (once)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._writer = _Writer(options, schema)
        given = self._writer.batch_id
        self._batch = uuid.uuid4().int & (2**62 - 1) if given is None else given
        self._writer.batch = self._batch

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        return self._writer.write_arrow(iterator)

    def commit(self, messages: list[WriterCommitMessage | None]) -> None:
        self._writer.publish(messages, self._batch)

    def abort(self, messages: list[WriterCommitMessage | None]) -> None:
        self._writer.discard(messages)


def stream_writer(
    options: Mapping[str, str], schema: StructType, gateway: str | None = None, *, starting: bool = False
) -> RStreamsArrowStreamWriter:
    """The streaming writer, its options checked (here, on the driver); ``gateway``: the file of
    the driver's py4j gateway, where :func:`rstreams.spark.register` shared one (the record of the
    epochs is then kept through the driver JVM).

    Spark builds it as the query starts (``starting``: in the worker that builds the query's write,
    from a data source it makes afresh), and again for each micro-batch's commit or abort (a fresh
    writer in its commit worker, from the data source it pickled as the query was analysed). Only
    the first is pickled, to go to the tasks, and only it asks the server: its sink logs are
    checked as it is built, one ``NAME?discard=`` per sink log, their epochs against those the
    checkpoint keeps (:meth:`_Writer.check`), so a log the server lacks fails the query with the
    :class:`OptionError` itself; a writer built otherwise and pickled is checked then
    (:meth:`RStreamsArrowStreamWriter.__getstate__`). A commit's or abort's writer asks nothing as
    it is built, so an abort makes only its discards (one request per sink log with staged
    uploads)."""
    made = RStreamsArrowStreamWriter(options, schema, gateway)
    if starting:
        made._writer.check()
    return made


def writer(options: Mapping[str, str], schema: StructType) -> DataSourceWriter:
    """The batch writer (every codec), its options and its sink logs checked on the driver."""
    made = RStreamsArrowBatchWriter(options, schema)
    made._writer.check_logs()
    return made
