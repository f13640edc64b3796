"""The ``rstreams`` Spark data source: streaming and batch reads from RS.io replay logs.

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
unnamed reader.) Offsets also carry the log's *epoch* (``"epoch": E``; docs/replay.md,
*Epochs*), the incarnation the positions belong to, from the log's answers: every commit and
hold of the query, and every range an executor reads, names it, and a log of another epoch (a
log in memory restarted since, even one refilled past the checkpoint) refuses with
``LogEpochError``, which fails the query saying so before anything is trimmed or read. Offsets
of older checkpoints have no epoch: they are used as they are, and the next offset has one.

Several logs: options ``url`` and ``publisher`` take comma-separated lists, and a
``publisher`` entry may be a pattern (``*``, ``?``, ``[...]``, as :mod:`fnmatch`): the query
reads each named log on each server, and each log a server's listing (``rstreams/logs``)
shows that matches a pattern. Then offsets are ``{"logs": {url: {name: N}}, "reader": R}``
(one reader name, registered on every log), a batch's partitions are ranges of each log
(``numPartitions`` shared among the logs, at least one each) read by executors straight
from each log's server, and the bounds of a batch are shared among the logs.
``latestOffset`` looks for logs the options name that its start lacks (a log that
appeared, a name added to the options): such a log is held for ``R`` at
``newLogStartingPosition`` and enters the end offset there, with nothing to read in that
batch; ``partitions`` commits it (the offset is logged by then), and the batches after
read it. Whatever happens, a log's positions are read in the batch
whose range covers them, once. A query over one named log keeps the one-log shape, so the
checkpoints of earlier versions go on; a checkpoint of the other shape fails naming the
option ``publisher``.

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
from collections.abc import Generator, Iterable, Iterator, Mapping
from fnmatch import fnmatchcase
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
from rstreams.replay._client import LogEndedError, RemoteLogError, request_json, stream_packs, stream_range
from rstreams.replay._cursor import packed_count
from rstreams.replay._server import LOGS_NAME
from rstreams.spark._codecs import BATCH_ROWS, check_codec, decode_batches, decode_packed
from rstreams.spark._options import (
    MAX_PARTITIONS,
    OptionError,
    access_from,
    check_names,
    explain,
    flag,
    missing_log,
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

    def __init__(self, url: str, publisher: str, start: int, end: int, epoch: str | None = None) -> None:
        self.url = url
        self.publisher = publisher
        self.start = start
        self.end = end
        self.epoch = epoch
        """The log's epoch the range was planned in (``None``: an offset of an older checkpoint)."""

    def __repr__(self) -> str:
        return f"RangePartition({self.url!r}, {self.publisher!r}, {self.start}, {self.end})"


Key = tuple[str, str]
"""A log: ``(url, name)``."""

Range = tuple["_Log", int, int, str | None]
"""Positions ``[start, end)`` of a log to read, and the log's epoch they were planned in."""

_PATTERN = re.compile(r"[*?\[]")


def _listed(options: Mapping[str, str], name: str, who: str) -> tuple[str, ...]:
    """The comma-separated entries of a required option, each stripped, none empty."""
    entries = tuple(entry.strip() for entry in required(options, name, who).split(","))
    if not all(entries):
        raise OptionError(name, f"option {name}: an empty entry in {options.get(name)!r}")
    if len(set(entries)) != len(entries):
        raise OptionError(name, f"option {name}: an entry given twice in {options.get(name)!r}")
    return entries


class _Log:
    """One log on one server, and the remote calls the source makes on it."""

    def __init__(self, opts: _Options, url: str, name: str) -> None:
        self.opts = opts
        self.url = url
        self.name = name
        self.epoch: str | None = None
        """The log's epoch as its last answer gave it (``None`` before, or from a server that
        gives none)."""

    def ask(self, query: str) -> dict[str, Any]:
        """``name?query``'s JSON answer; failures restated with the options to change."""
        opts = self.opts
        try:
            answer = request_json(self.url, f"{self.name}?{query}", opts.timeout, access=opts.access)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, self.url, opts.access) from None
        except RemoteLogError as error:
            if "LogEpochError: " in str(error):
                raise RemoteLogError(
                    f"{error}; the query's checkpoint is of log {self.name!r} at {self.url} before that "
                    "restart: the rows between the checkpoint and now may differ from what the query "
                    "would have read, so it cannot go on from there without losing or repeating rows: "
                    "serve the log from a file (ReplayLog(path=...)), whose epoch survives restarts, or "
                    "start the query again with a new checkpoint"
                ) from None
            raise missing_log(error, self.url, self.name, "source") from None
        if "epoch" in answer:
            self.epoch = str(answer["epoch"])
        return answer

    def info(self) -> dict[str, Any]:
        return self.ask("latest")

    def end_within(self, start: int, max_rows: int) -> int:
        """The end of the longest range from ``start`` with at most ``max_rows`` rows (the log counts)."""
        return int(self._rows(f"rows={max_rows}&from={start}")["end"])

    def rows_from(self, start: int) -> int:
        """The rows the log holds from ``start`` on (the log counts)."""
        return int(self._rows(f"rows={2**62}&from={start}")["rows"])

    def _rows(self, query: str) -> dict[str, Any]:
        try:
            return self.ask(query)
        except RemoteLogError as error:
            if "counts no rows" not in str(error):
                raise
            raise OptionError(
                "maxRecordsPerBatch",
                f"option maxRecordsPerBatch counts rows, but with codec 'arrow' an element of log "
                f"{self.name!r} is a whole record batch and the log does not count its rows: "
                "serve it as ReplayLog(..., rows=rstreams.spark.arrow_rows), or bound micro-batches "
                'in elements with .option("maxElementsPerBatch", N)',
            ) from None

    def end_within_bytes(self, start: int, max_bytes: int) -> int:
        """The end of the longest range from ``start`` with at most ``max_bytes`` bytes of elements."""
        return int(self.ask(f"bytes={max_bytes}&from={start}")["end"])

    def commit(self, position: int, reader: str | None, epoch: str | None = None) -> dict[str, Any]:
        """Commit ``position`` as ``reader``; with ``epoch``, only on the log of that epoch."""
        query = f"commit={position}"
        if reader is not None:
            query += f"&reader={quote(reader, safe='')}"
        if epoch is not None:
            query += f"&epoch={quote(epoch, safe='')}"
        try:
            return self.ask(query)
        except RemoteLogError as error:
            if "past the log's end" not in str(error):
                raise
            raise RemoteLogError(
                f"{error}; the query's checkpoint is ahead of log {self.name!r} at {self.url}, so it "
                "cannot go on from there without losing rows: serve the log from a file "
                "(ReplayLog(path=...)) to keep its positions across restarts, or start the query "
                "again with a new checkpoint"
            ) from None

    def hold(self, position: int, reader: str, epoch: str | None = None) -> dict[str, Any]:
        query = f"hold={position}&reader={quote(reader, safe='')}"
        if epoch is not None:
            query += f"&epoch={quote(epoch, safe='')}"
        return self.ask(query)

    def position_at(self, ms: int) -> int:
        """The first position that arrived at ``ms`` or later (``NAME?time=MS``)."""
        try:
            return int(self.ask(f"time={ms}")["position"])
        except RemoteLogError as error:
            raise OptionError(
                "startingTimestamp", f"option startingTimestamp {ms}: log {self.name!r}: {error}"
            ) from None

    def position(self, text: str, info: dict[str, Any]) -> int:
        if text == "earliest":
            return int(info["first"])
        if text == "latest":
            return int(info["end"])
        return int(text)

    def start(self, reader: str, starting: str, timed: bool) -> int:
        """Hold the log for the pending reader ``reader`` at a starting point; the position held.

        ``starting``: ``earliest``, ``latest`` or a position; ``timed``: from option
        startingTimestamp instead."""
        opts = self.opts
        if timed:
            assert opts.starting_time is not None
            wanted = self.position_at(opts.starting_time)
        elif starting == "earliest":
            wanted = 0
        else:
            wanted = self.position(starting, self.info())
        answer = self.hold(wanted, reader)
        position = int(answer["position"])
        if starting in ("earliest", "latest") or timed or opts.reader_name or position == wanted:
            return position
        self.ask(f"leave={quote(reader, safe='')}")  # the query does not start: nothing held for it
        if position > wanted:
            said = f"no longer holds it (the oldest position held is {answer['first']})"
        else:
            said = f"ends at {answer['end']}: a query starts at a position the log holds, or at 'latest'"
        raise OptionError("startingPosition", f"option startingPosition {wanted}: log {self.name!r} {said}")

    def split(self, start: int, end: int, parts: int, epoch: str | None) -> list[InputPartition]:
        """``[start, end)`` in up to ``parts`` ranges of about equal length, read from ``epoch``."""
        total = end - start
        if total <= 0:
            return []
        step = -(-total // parts)
        return [
            RangePartition(self.url, self.name, s, min(s + step, end), epoch) for s in range(start, end, step)
        ]


class _Options:
    """The reader's options, checked once where the user set them (the query's start)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        check_names(options, "source")
        self.urls = _listed(options, "url", "source")
        self.names = _listed(options, "publisher", "source")
        self.patterns = tuple(name for name in self.names if _PATTERN.search(name))
        self.single = len(self.urls) == 1 and len(self.names) == 1 and not self.patterns
        """One log, named: offsets keep the shape of one log's (checkpoints of earlier versions)."""
        try:
            self.codec = check_codec(str(options.get("codec", "json")))
        except ValueError as bad:
            raise OptionError("codec", str(bad)) from None
        self.partitions = positive(options, "numPartitions", 2, most=MAX_PARTITIONS)
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
        self.new_logs = _word_option(options, "newLogStartingPosition", "earliest", ("earliest", "latest"))
        self.ending = _position_option(options, "endingPosition", "latest", ("latest",))
        access = [access_from(options, url) for url in self.urls]
        self.access: Access = access[0]
        self.arrow_schema = to_arrow_schema(schema, timezone="UTC")
        self._logs: dict[Key, _Log] = {}

    def log(self, key: Key) -> _Log:
        found = self._logs.get(key)
        if found is None:
            found = self._logs[key] = _Log(self, *key)
        return found

    def split(self, ranges: list[Range]) -> list[InputPartition]:
        """A batch's partitions: ``numPartitions`` shared among the logs with positions to read,
        at least one each (``ceil(numPartitions / logs)`` per log)."""
        active = [(log, start, end, epoch) for log, start, end, epoch in ranges if end > start]
        if not active:
            return []
        each = -(-self.partitions // len(active))
        return [part for log, start, end, epoch in active for part in log.split(start, end, each, epoch)]

    def names_it(self, key: Key) -> bool:
        """Whether the options name the log ``key`` (always, for one log)."""
        url, name = key
        if self.single:
            return True
        return url in self.urls and (name in self.names or _matches(name, self.patterns))

    def discover(self) -> list[Key]:
        """The logs the options name now: each named log on each server, and each log a server
        lists (``rstreams/logs``) that matches a pattern; sorted."""
        found: set[Key] = set()
        for url in self.urls:
            found.update((url, name) for name in self.names if name not in self.patterns)
            if self.patterns:
                listed = self._listing(url)
                found.update((url, name) for name in listed if _matches(name, self.patterns))
        return sorted(found)

    def _listing(self, url: str) -> list[str]:
        try:
            answer = request_json(url, LOGS_NAME, self.timeout, access=self.access)
        except (PermissionError, ConnectionError) as error:
            raise explain(error, url, self.access) from None
        except RemoteLogError as error:
            raise OptionError(
                "publisher",
                f"option publisher {','.join(self.patterns)!r}: a pattern needs the server's listing "
                f"{LOGS_NAME!r} (a ReplayServer's), but {url} answered: {error}",
            ) from None
        return [str(name) for name in answer["logs"]]

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
            raise explain(error, partition.url, self.access) from None

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
            partition.url,
            partition.publisher,
            start,
            partition.end,
            self.timeout,
            access=self.access,
            epoch=getattr(partition, "epoch", None),  # (a partition pickled by an earlier version)
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
            partition.url,
            partition.publisher,
            start,
            partition.end,
            self.timeout,
            pack=0,
            access=self.access,
            epoch=getattr(partition, "epoch", None),
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


def _word_option(options: Mapping[str, str], name: str, default: str, words: tuple[str, ...]) -> str:
    text = str(options.get(name, default))
    if text not in words:
        raise OptionError(name, f"option {name} takes {' or '.join(repr(w) for w in words)}, got {text!r}")
    return text


def _matches(name: str, patterns: tuple[str, ...]) -> bool:
    return any(fnmatchcase(name, pattern) for pattern in patterns)


Offset = dict[str, Any]
"""One log: ``{"position": int, "reader": str, "epoch": str}`` (in this key order: Spark compares
the text). Several: ``{"logs": {url: {name: position}}, "reader": str, "epochs": {url: {name:
epoch}}}`` (urls and names sorted). Offsets of older checkpoints lack the epochs (and the oldest
the reader)."""

Positions = dict[Key, int]
Epochs = dict[Key, str]
"""Each log's epoch (docs/replay.md, *Epochs*), where known."""


def _share(budget: int, wants: dict[Key, int]) -> dict[Key, int]:
    """``budget`` split among the logs: none more than it wants, the rest evenly (smallest wants
    first; a log gets at least one while the budget lasts)."""
    shares: dict[Key, int] = {}
    order = sorted(wants, key=lambda key: (wants[key], key))
    for index, key in enumerate(order):
        fair = -(-budget // (len(order) - index))
        shares[key] = min(wants[key], fair)
        budget -= shares[key]
    return shares


class RStreamsStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Micro-batch reads of replay logs; see the module docstring."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._opts = _Options(options, schema)
        self._targets: Positions | None = None  # trigger(availableNow=True): the ends fixed at start
        self._initial: Offset | None = None  # Spark asks twice; the reader holds once
        self._held: dict[Key, tuple[str, int]] = {}  # logs this process holds (pending): reader, position
        self._confirmed: set[Key] = set()  # logs the query's reader has committed on
        self._latest: dict[Key, dict[str, Any]] = {}  # each log's last answer, for reportLatestOffset
        self._uncounted: set[Key] = set()  # arrow logs that count no rows: no rowsBehind
        self._clock = time.monotonic  # for maxTriggerDelay (tests set a virtual clock)
        self._last_batch = self._clock()  # when the last micro-batch was planned
        self._lost: dict[Key, int] = {}  # positions skipped because trimmed (failOnDataLoss=false)

    # Offsets: one log keeps the shape of earlier versions; several are a map.

    def _offset(self, reader: str | None, positions: Positions, epochs: Epochs) -> Offset:
        if self._opts.single:
            ((key, position),) = positions.items()
            one: Offset = {"position": position}
            if reader is not None:
                one["reader"] = reader
            if key in epochs:
                one["epoch"] = epochs[key]
            return one
        logs: dict[str, dict[str, int]] = {}
        for (url, name), position in sorted(positions.items()):
            logs.setdefault(url, {})[name] = position
        offset: Offset = {"logs": logs, "reader": reader}
        known: dict[str, dict[str, str]] = {}
        for (url, name), epoch in sorted(epochs.items()):
            if (url, name) in positions:
                known.setdefault(url, {})[name] = epoch
        if known:
            offset["epochs"] = known
        return offset

    def _epochs(self, keys: Iterable[Key], given: Epochs) -> Epochs:
        """Each log's epoch: the offset's (checked by the request that used it), else the one the
        log answered last (an offset of an older checkpoint, a log entering the query)."""
        epochs: Epochs = {}
        for key in keys:
            epoch = given.get(key) or self._opts.log(key).epoch
            if epoch is not None:
                epochs[key] = epoch
        return epochs

    def _parse(self, offset: Offset) -> tuple[str | None, Positions, Epochs]:
        opts = self._opts
        reader = offset.get("reader")
        reader = None if reader is None else str(reader)
        if opts.single:
            if "position" not in offset:
                raise OptionError(
                    "publisher",
                    "this query's checkpoint holds positions of several logs "
                    f"({sorted(offset.get('logs', {}))}), "
                    f"but options url and publisher now name one log, {opts.names[0]!r} at {opts.urls[0]}: "
                    "name the same logs again, or start from a new checkpointLocation",
                )
            key = (opts.urls[0], opts.names[0])
            epochs = {key: str(offset["epoch"])} if offset.get("epoch") else {}
            return reader, {key: int(offset["position"])}, epochs
        if "logs" not in offset:
            raise OptionError(
                "publisher",
                "this query's checkpoint holds the position of one log (a query over one url and one "
                f"publisher, position {offset.get('position')}), but options url and publisher now name "
                "several logs or a pattern: keep the options of that checkpoint, or start from a new "
                "checkpointLocation (with startingPosition, or readerName to resume as the old reader)",
            )
        positions = {
            (str(url), str(name)): int(position)
            for url, names in offset["logs"].items()
            for name, position in names.items()
        }
        epochs = {
            (str(url), str(name)): str(epoch)
            for url, names in offset.get("epochs", {}).items()
            for name, epoch in names.items()
        }
        return reader, positions, epochs

    def initialOffset(self) -> Offset:
        """A fresh query: hold each log for a new pending reader at the starting position."""
        if self._initial is None:
            opts = self._opts
            reader = opts.reader_name or f"spark-{uuid.uuid4().hex}"
            positions: Positions = {}
            for key in opts.discover():
                positions[key] = opts.log(key).start(reader, opts.starting, opts.starting_time is not None)
                self._held[key] = (reader, positions[key])
            self._initial = self._offset(reader, positions, self._epochs(positions, {}))
        return self._initial

    def getDefaultReadLimit(self) -> ReadLimit:
        bound = self._opts.max_rows or self._opts.max_elements
        return ReadAllAvailable() if bound is None else ReadMaxRows(bound)

    def prepareForTriggerAvailableNow(self) -> None:
        opts = self._opts
        self._targets = {key: int(opts.log(key).info()["end"]) for key in opts.discover()}

    def _holding(self, key: Key, reader: str | None, position: int) -> bool:
        """Whether this process holds ``key`` for ``reader`` at ``position``, not yet committed."""
        return key not in self._confirmed and reader is not None and self._held.get(key) == (reader, position)

    def latestOffset(self, start: Offset, limit: ReadLimit) -> Offset:
        opts = self._opts
        reader, begins, epochs = self._parse(start)
        infos: dict[Key, dict[str, Any]] = {}
        for key, begin in begins.items():
            log = opts.log(key)
            epoch = epochs.get(key)  # a log restarted since (another epoch) refuses
            if self._holding(key, reader, begin):
                infos[key] = log.hold(begin, str(reader), epoch)  # still pending: only say we are alive
            else:  # the batch that ended at `start` is in Spark's commit log: the log may trim it
                infos[key] = log.commit(begin, reader, epoch)
        ends = {key: int(info["end"]) for key, info in infos.items()}
        if self._targets is not None:
            ends = {key: min(end, self._targets.get(key, begins[key])) for key, end in ends.items()}
        # Bounds count from what each log still holds (failOnDataLoss=false skips the rest).
        bases = {
            key: begin if opts.fail_on_data_loss else max(begin, int(infos[key]["first"]))
            for key, begin in begins.items()
        }
        if not isinstance(limit, ReadAllAvailable):
            ends = self._bounded(ends, bases, limit)
        if (
            opts.min_rows is not None
            and self._targets is None
            and any(ends[k] > b for k, b in begins.items())
        ):
            waited = self._clock() - self._last_batch
            behind = [self._rows_behind(key, bases[key], ends[key]) for key in begins]
            rows = sum(ends[k] - bases[k] if r is None else r for k, r in zip(begins, behind, strict=True))
            if rows < opts.min_rows and waited < opts.max_delay:
                ends = dict(begins)  # not enough yet: wait for more, at most maxTriggerDelay
        for key, begin in begins.items():
            if ends[key] <= begin and infos[key]["error"] is not None:
                raise LogEndedError(
                    f"replay log {key[1]!r} at {key[0]} failed upstream: {infos[key]['error']}"
                )
        if any(ends[key] > begin for key, begin in begins.items()):
            self._last_batch = self._clock()
        self._latest = {
            key: {
                "end": int(info["end"]),
                "first": int(info["first"]),
                "batch_end": max(ends[key], begins[key]),
                "committed": None if self._holding(key, reader, begins[key]) else begins[key],
            }
            for key, info in infos.items()
        }
        # A log the options no longer name leaves the query here (its reader stays registered).
        stops = {key: max(ends[key], begin) for key, begin in begins.items() if opts.names_it(key)}
        if not opts.single and reader is not None:
            stops.update(self._entering(reader, begins))
        return self._offset(reader, stops, self._epochs(stops, epochs))

    def _bounded(self, ends: Positions, bases: Positions, limit: ReadLimit) -> Positions:
        """``ends`` within the read limit and ``maxBytesPerBatch``, shared among the logs."""
        opts = self._opts
        active = [key for key, end in ends.items() if end > bases[key]]
        bounded = dict(ends)
        if isinstance(limit, ReadMaxRows) and active:
            if len(active) == 1:
                shares = {active[0]: limit.max_rows}
            elif opts.count_rows:
                shares = _share(limit.max_rows, {k: opts.log(k).rows_from(bases[k]) for k in active})
            else:
                shares = _share(limit.max_rows, {k: ends[k] - bases[k] for k in active})
            for key, share in shares.items():
                if share <= 0:
                    bounded[key] = bases[key]
                elif opts.count_rows:
                    bounded[key] = min(ends[key], opts.log(key).end_within(bases[key], share))
                else:
                    bounded[key] = min(ends[key], bases[key] + share)
        if opts.max_bytes is not None and active:
            each = max(1, opts.max_bytes // len(active))
            for key in active:
                if bounded[key] > bases[key]:
                    bounded[key] = min(bounded[key], opts.log(key).end_within_bytes(bases[key], each))
        return bounded

    def _entering(self, reader: str, begins: Positions) -> Positions:
        """Logs the options name now that ``begins`` lacks: held from ``newLogStartingPosition``
        (they enter the next offset there, and are read from the batch after)."""
        opts = self._opts
        entering: Positions = {}
        for key in opts.discover():
            if key in begins:
                continue
            held = self._held.get(key)
            if held is not None and held[0] == reader:
                entering[key] = int(opts.log(key).hold(held[1], reader)["position"])
            else:
                entering[key] = opts.log(key).start(reader, opts.new_logs, False)
            self._held[key] = (reader, entering[key])
            if self._targets is not None:
                self._targets.setdefault(key, entering[key])
        return entering

    def reportLatestOffset(self) -> Offset | None:
        """How far behind the logs' ends the query is, as Spark's progress shows it
        (``sources[].latestOffset``). For one log: ``position``, the log's end as last seen;
        ``behind``, the positions not yet in any batch; ``rowsBehind``, their rows (one per
        element for json and msgpack; for arrow when the log counts rows); ``oldestHeld``, the
        oldest position the log holds; ``heldBy``, when that is below what this query has
        committed, the readers (committed or pending) that hold the log back, with their
        positions: a query that will not come back shows here, and ``NAME?leave=R`` releases
        it. For several logs: ``logs`` maps url and name to that report, and ``behind`` and
        ``rowsBehind`` are their sums."""
        if not self._latest:
            return None
        reports = {key: self._report(key) for key in sorted(self._latest)}
        if self._opts.single:
            (report,) = reports.values()
            return report
        logs: dict[str, dict[str, Offset]] = {}
        for (url, name), report in reports.items():
            logs.setdefault(url, {})[name] = report
        total: Offset = {"logs": logs, "behind": sum(r["behind"] for r in reports.values())}
        if all("rowsBehind" in r for r in reports.values()):
            total["rowsBehind"] = sum(r["rowsBehind"] for r in reports.values())
        if not self._opts.fail_on_data_loss:
            total["lost"] = sum(self._lost.values())
        return total

    def _report(self, key: Key) -> Offset:
        latest = self._latest[key]
        end, batch_end = latest["end"], latest["batch_end"]
        report: Offset = {"position": end, "behind": max(0, end - batch_end)}
        rows = self._rows_behind(key, batch_end, end)
        if rows is not None:
            report["rowsBehind"] = rows
        report["oldestHeld"] = first = latest["first"]
        committed = latest.get("committed")
        if committed is not None and first < committed:  # someone else holds the log back
            answer = self._opts.log(key).ask("readers")
            held = {**answer["readers"], **answer["pending"]}
            report["heldBy"] = {name: at for name, at in held.items() if at < committed}
        if not self._opts.fail_on_data_loss:
            report["lost"] = self._lost.get(key, 0)
        return report

    def _rows_behind(self, key: Key, start: int, end: int) -> int | None:
        if self._opts.codec != "arrow":
            return max(0, end - start)
        if end <= start or key in self._uncounted:
            return 0 if end <= start else None
        try:
            return int(self._opts.log(key).ask(f"rows={2**62}&from={start}")["rows"])
        except RemoteLogError:  # the log counts no rows (or trimmed meanwhile): say nothing
            self._uncounted.add(key)
            return None

    def partitions(self, start: Offset, end: Offset) -> list[InputPartition]:
        opts = self._opts
        ours, begins, _ = self._parse(start)
        logged, stops, epochs = self._parse(end)
        ranges: list[Range] = []
        for key, stop in stops.items():
            log = opts.log(key)
            begin = begins.get(key)
            epoch = epochs.get(key)
            if begin is None:  # enters with this batch: nothing to read before the next
                log.commit(stop, logged, epoch)
                self._confirmed.add(key)
                continue
            if self._holding(key, ours, begin) and logged is not None:
                begin = self._confirm(log, begin, str(ours), logged, epoch)
            if not opts.fail_on_data_loss and begin < stop:
                first = int(log.info()["first"])
                if begin < first:  # trimmed before this batch could read it: skipped, and counted
                    self._lost[key] = self._lost.get(key, 0) + min(first, stop) - begin
                    begin = min(first, stop)
            ranges.append((log, begin, stop, epoch))
        return opts.split(ranges)

    def _confirm(self, log: _Log, begin: int, ours: str, logged: str, epoch: str | None) -> int:
        """The batch that first reads ``log`` is in Spark's offset log: make its reader a
        committed one; its start.

        ``logged`` is the reader of the offsets Spark wrote. If it is not ``ours`` (this
        process's ``initialOffset``), the query is replaying batch 0 after a restart: its
        start is where ``logged`` holds the log, and our own hold is released.
        """
        if logged != ours:
            readers = log.ask(f"leave={quote(ours, safe='')}")
            held = {**readers["readers"], **readers["pending"]}
            if logged in held:
                begin = int(held[logged])
        log.commit(begin, logged, epoch)
        self._confirmed.add((log.url, log.name))
        return begin

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark's single empty partition when partitions() returned none
        return self._opts.read(partition)

    def commit(self, end: Offset) -> None:
        reader, stops, epochs = self._parse(end)
        for key, position in stops.items():
            self._opts.log(key).commit(position, reader, epochs.get(key))
            self._confirmed.add(key)

    def stop(self) -> None:
        """Nothing to release: the process's kept connection serves its next calls, and ends
        with the process (Spark may skip stop())."""


class RStreamsBatchReader(DataSourceReader):
    """``spark.read``: positions ``[startingPosition, endingPosition)`` of each log as they are now."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._opts = _Options(options, schema)

    def partitions(self) -> list[InputPartition]:
        opts = self._opts
        ranges: list[Range] = []
        for key in opts.discover():
            log = opts.log(key)
            info = log.info()
            start = log.position(opts.starting, info)
            end = log.position(opts.ending, info)
            if end > int(info["end"]):
                raise OptionError(
                    "endingPosition",
                    f"option endingPosition {end}: log {log.name!r} at {log.url} ends at {info['end']}",
                )
            if end < start:
                raise OptionError(
                    "endingPosition",
                    f"option endingPosition {end} is below startingPosition {start} (log {log.name!r})",
                )
            ranges.append((log, start, end, log.epoch))
        return opts.split(ranges)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        if not isinstance(partition, RangePartition):
            return iter(())  # Spark's single empty partition when partitions() returned none
        return self._opts.read(partition)


class RStreamsDataSource(DataSource):
    """Spark data source ``rstreams``: read from and write to RS.io replay logs.

    Its options, with defaults and meanings, are :data:`rstreams.spark._options.OPTIONS`
    (the README's Spark section shows them as a table). ``session_credentials`` holds the
    credentials of the Spark conf (``spark.rstreams.*``) in the subclass that
    :func:`rstreams.spark.register` makes, and ``session_gateway`` the file where it shared the
    driver's py4j gateway (:func:`rstreams.spark._hadoop.share_gateway`: the path only, never
    the gateway's secret, for this class travels to executors too).
    """

    session_credentials: Mapping[str, str] = {}
    session_gateway: str | None = None
    _unpickled = False

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

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Unpickled: so Spark's commit and abort workers get the source (pickled by the worker
        that made it as the query was analysed), while the worker that builds a query's write at
        its start makes it afresh from the class."""
        self.__dict__.update(state)
        self._unpickled = True

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        """At the query's start (a source made afresh), the writer's sink logs are checked as it
        is built; for a commit or an abort (an unpickled source), it asks nothing."""
        from rstreams.spark._sink import stream_writer

        return stream_writer(self._options(), schema, self.session_gateway, starting=not self._unpickled)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        from rstreams.spark._sink import writer

        return writer(self._options(), schema)
