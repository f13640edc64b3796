"""``ReplayLog``: elements with positions, kept until a reader commits them.

Spark's exactly-once needs a *replayable* source: after a restart it re-reads the batch
``[start, end)`` it had logged but not committed, and it must get the same elements.
A Reactive Streams publisher only goes forward, so this log sits in front of one:

* **producer side**: the log subscribes to an upstream Publisher and requests from it
  only while it has room (``capacity`` minus what it holds and has asked for). A log
  that nobody commits from therefore stops its upstream: a slow Spark query slows the
  producer, end to end, instead of filling memory. Each element gets the next position
  (0, 1, 2, ...). Elements are stored already encoded (bytes), so serving is a copy-free
  hand-over to the connection.
* **reader side**: :meth:`ReplayLog.cursor` is a Publisher of the positions
  ``[start, stop)`` (``stop=None``: follow the tail). It serves what is there under the
  subscriber's demand and waits for the rest. Asking for a position already trimmed is
  an ``onError`` naming the position and the oldest one still held
  (:class:`TrimmedError`).
* **commit(n, reader)**: ``reader`` is done with the positions below ``n``. Each named
  reader (a Spark query, by its checkpoint) has its own committed position; positions
  below the smallest of them go, and the room they free is requested upstream. So two
  queries on one log each read all of it; the slower one holds the producer back.
  A reader that will never come back must :meth:`~ReplayLog.leave`, or it holds the log
  (or the log drops it after ``reader_timeout`` seconds of silence while it is full).
* **hold(position, reader)**: a *pending* reader, which holds the log like a committed one
  but is forgotten unless it is heard from (another hold, or a commit) within
  ``pending_timeout`` seconds; its first commit makes it a committed reader. A reader
  that may vanish before it has anything durable to show (a Spark query before its
  first checkpointed offset) holds instead of committing, so it cannot stall the log
  for good. Pending readers live in memory only.
* ``evict=True`` turns the log into a ring (the sink's result logs): when full, the
  oldest element is dropped instead of pausing the producer.

Threads: the upstream may signal from any thread, readers request from the server's
loop. One lock guards the element list and the counters; no Subscriber method and no
``request`` upstream is ever called under it. Cursors (:mod:`rstreams.replay._cursor`)
are drain loops (rules 1.3, 3.3): whoever finds one idle emits, the others only add work.

The log knows nothing of Spark or of the network: :mod:`rstreams.replay._server` serves it
over RS.io, and Spark's ``rstreams`` source is one of its readers.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import report_unhandled
from rstreams.flow._flow import Flow
from rstreams.replay._cursor import LogEpochError, LogLookupError, TrimmedError, _Cursor, _Range
from rstreams.replay._rows import ArrivalIndex, RowIndex
from rstreams.replay._store import FileStore, MemoryStore, Store
from rstreams.rules import check_error

__all__ = ["PENDING_TIMEOUT", "ReplayLog"]

PENDING_TIMEOUT = 120.0
"""Seconds a pending reader (:meth:`ReplayLog.hold`) is kept without being heard from: well above
a Spark driver's restart (~20-30 s), short enough that a vanished one frees the log soon."""


_Waiting = tuple[list[bytes], Callable[[], object] | None, tuple[str, int] | None]
"""Items to append, the callback once they are in, and the batch they are (``append``)."""


class ReplayLog(Subscriber[Any]):
    """A bounded, replayable log of encoded elements; see the module docstring.

    Args:
        name: used in error messages.
        capacity: most elements held (and requested upstream but not yet received).
        evict: when full, drop the oldest element (ring) instead of pausing upstream.
        encode: applied to each upstream element (default: elements must be bytes).
        path: a directory to keep the elements in (:class:`FileStore`): positions and
            uncommitted elements survive a restart of the server. Default: memory.
        rows: how many rows an element carries (``bytes -> int``; for Arrow IPC elements,
            ``rstreams.spark.arrow_rows``). Lets readers bound a range by rows
            (:meth:`end_within`, ``NAME?rows=R&from=A``). Default: not counted.
        pending_timeout: seconds a pending reader (:meth:`hold`) is kept unless heard from.
        reader_timeout: seconds of silence after which a committed reader that holds a
            full log is dropped (its uncommitted positions may then be trimmed). Default
            ``None``: committed readers are kept until they :meth:`leave`.
        clock: the time source for both timeouts (seconds; tests pass a virtual clock).
        wall: the clock of arrival times (seconds since the epoch; :meth:`position_at`).

    Raises:
        ValueError: a bad argument, named.
    """

    def __init__(
        self,
        name: str = "log",
        *,
        capacity: int = 100_000,
        evict: bool = False,
        encode: Callable[[Any], bytes] | None = None,
        path: str | os.PathLike[str] | None = None,
        rows: Callable[[bytes], int] | None = None,
        pending_timeout: float = PENDING_TIMEOUT,
        reader_timeout: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        if type(capacity) is not int or capacity < 1:
            raise ValueError(f"capacity= needs an int >= 1, got {capacity!r}")
        _check_seconds("pending_timeout", pending_timeout)
        if reader_timeout is not None:
            _check_seconds("reader_timeout", reader_timeout)
        self.pending_timeout = float(pending_timeout)
        self.reader_timeout = None if reader_timeout is None else float(reader_timeout)
        self._clock = clock
        self._wall = wall
        self.name = name
        self.capacity = capacity
        self.evict = evict
        self._encode = encode
        self._lock = threading.Lock()
        self._store: Store = MemoryStore() if path is None else FileStore(path, name)
        self._rows = rows
        self._index: RowIndex | None = None
        store = self._store
        if rows is not None:
            self._index = RowIndex(store.first)
            for data in store.read(store.first, store.end - store.first):  # a file log's held elements
                self._index.add(rows(data))
        self._sizes = RowIndex(store.first)  # bytes per element, for byte-bounded reads
        self._arrivals = ArrivalIndex(store.end)  # when positions arrived, for a start by time
        for size in store.lengths():
            self._sizes.add(size)
        self._waiting: deque[tuple[list[bytes], Callable[[], object] | None, tuple[str, int] | None]] = (
            deque()
        )
        self._outstanding = 0  # requested upstream, not yet received
        self._skip = 0  # upstream elements still to drop (feed(position=) below the end)
        self._upstream: Subscription | None = None
        self._complete = False
        self._error: BaseException | None = None
        self._cursors: set[_Cursor] = set()
        self._pending: dict[str, int] = {}  # pending reader -> held position (memory only)
        now = clock()
        self._seen: dict[str, float] = dict.fromkeys(self._store.readers, now)  # reader -> last heard
        self.expired: dict[str, int] = {}  # readers dropped by a timeout -> their position then
        self.produced = 0  # elements received from upstream (for tests and figures)
        self.max_held = 0  # the most elements ever held at once

    # -- state ---------------------------------------------------------------------------
    @property
    def first(self) -> int:
        """The oldest position still held."""
        return self._store.first

    @property
    def end(self) -> int:
        """One past the newest position (the next element gets this position)."""
        with self._lock:
            return self._store.end

    def position_at(self, ms: int) -> int:
        """The first position held that arrived at ``ms`` (milliseconds since the epoch) or
        later; the end if none did (``NAME?time=MS``; Spark's ``startingTimestamp``).

        Raises:
            LogLookupError: the answer might be among held positions with no arrival time (a
                file-backed log keeps arrival times in memory only).
            ValueError: ``ms`` is not an int >= 0.
        """
        if type(ms) is not int or ms < 0:
            raise ValueError(f"a time needs an int >= 0 (milliseconds since the epoch), got {ms!r}")
        with self._lock:
            store = self._store
            return self._arrivals.position_at(ms, store.first, store.end)

    def end_within(self, start: int, max_rows: int) -> dict[str, int]:
        """``{"end", "rows"}``: how far a reader at ``start`` may read with at most ``max_rows``
        rows (at least one element, if one is held past ``start``), and the rows up to there.

        Raises:
            LogLookupError: the log counts no rows (made without ``rows=``); a ``LookupError``.
            TrimmedError: ``start`` is below the oldest position held.
            ValueError: ``start`` is past the end or ``max_rows`` is below 1.
        """
        if type(max_rows) is not int or max_rows < 1:
            raise ValueError(f"a row bound needs an int >= 1, got {max_rows!r}")
        with self._lock:
            if self._index is None:
                raise LogLookupError(
                    f"replay log {self.name!r} counts no rows (made without rows=): bound reads by "
                    "elements, or serve it as ReplayLog(..., rows=...)"
                )
            store = self._store
            if start < store.first:
                raise TrimmedError(self.name, start, store.first)
            if start > store.end:
                raise ValueError(f"replay log {self.name!r}: position {start} is past the end {store.end}")
            end, rows = self._index.end_within(start, max_rows)
            return {"end": end, "rows": rows}

    def end_within_bytes(self, start: int, max_bytes: int) -> dict[str, int]:
        """``{"end", "bytes"}``: how far a reader at ``start`` may read with at most ``max_bytes``
        bytes of elements (at least one element, if one is held past ``start``).

        Raises:
            TrimmedError: ``start`` is below the oldest position held.
            ValueError: ``start`` is past the end or ``max_bytes`` is below 1.
        """
        if type(max_bytes) is not int or max_bytes < 1:
            raise ValueError(f"a byte bound needs an int >= 1, got {max_bytes!r}")
        with self._lock:
            store = self._store
            if start < store.first:
                raise TrimmedError(self.name, start, store.first)
            if start > store.end:
                raise ValueError(f"replay log {self.name!r}: position {start} is past the end {store.end}")
            end, size = self._sizes.end_within(start, max_bytes)
            return {"end": end, "bytes": size}

    def held_bytes(self) -> int:
        """Bytes of the elements held now (for monitoring, :mod:`rstreams.observe`)."""
        with self._lock:
            sizes = self._sizes
            return sizes.totals[-1] - sizes.totals[self._store.first - sizes.base]

    @property
    def epoch(self) -> str:
        """The incarnation of this log's positions (16 hex digits): new for each log in memory,
        kept in its directory for a file-backed one (so a restart from the file keeps it). A
        reader that records it tells a restarted memory log from the one it read
        (``NAME?...&epoch=E``, docs/replay.md, *Epochs*)."""
        return self._store.epoch

    def check_epoch(self, given: str) -> None:
        """Raises :class:`LogEpochError` unless ``given`` is this log's :attr:`epoch`."""
        if given != self._store.epoch:
            raise LogEpochError(self.name, given, self._store.epoch)

    def info(self) -> dict[str, Any]:
        """``{"first", "end", "complete", "error", "epoch"}``: what ``name?latest`` answers."""
        self.housekeep()
        with self._lock:
            error = self._error
            return {
                "first": self._store.first,
                "end": self._store.end,
                "complete": self._complete or error is not None,
                "error": None if error is None else f"{type(error).__name__}: {error}",
                "epoch": self._store.epoch,
            }

    # -- producer side -------------------------------------------------------------------
    def feed(self, upstream: Publisher[Any], *, position: int | None = None) -> ReplayLog:
        """Subscribe to ``upstream`` (once); returns ``self``.

        ``position``: the position of ``upstream``'s first element (default: the log's end,
        that is, ``upstream`` brings only new elements). Its elements below the log's end are
        dropped: a producer restarted with a file-backed log (``path=``) replays its input
        from ``position=0`` and the log goes on where it was, with no duplicates.

        Raises:
            ValueError: ``position`` is past the log's end (positions would be missing).
        """
        end = self.end
        if position is not None:
            if type(position) is not int or position < 0:
                raise ValueError(f"feed(position=) needs an int >= 0, got {position!r}")
            if position > end:
                raise ValueError(
                    f"replay log {self.name!r}: feed(position={position}) is past the log's end {end}: "
                    f"positions {end}..{position - 1} would be missing"
                )
            self._skip = end - position
        upstream.subscribe(self)
        return self

    def append(
        self,
        items: list[bytes],
        done: Callable[[], object] | None = None,
        *,
        batch: tuple[str, int] | None = None,
    ) -> None:
        """Append ``items`` directly (no upstream; the sink's publish), all together.

        An evicting log appends at once. A bounded one appends when the items fit beside
        what it holds (or it is empty), in the order of the calls; until then they wait
        for readers to commit, and ``done()`` is called once they are in. This is how slow
        readers of a sink log hold back Spark: its commit waits for ``done``.

        ``batch=(writer, number)`` records the items as that batch (:meth:`batches`), in the
        same step as they are appended and before any reader sees them; a file-backed log
        records it on disk once :meth:`keep_batches` has been called.
        """
        with self._lock:
            self._waiting.append((items, done, batch))
            ready = self._take_waiting()
        self._appended(ready)

    def keep_batches(self) -> None:
        """Record published batches durably from now on (a file-backed sink log; see
        :class:`~rstreams.replay._store.FileStore`). A memory log keeps them in memory."""
        with self._lock:
            self._store.keep_batches()

    def batches(self) -> set[tuple[str, int]]:
        """The ``(writer, batch)`` pairs appended with ``append(batch=)`` (and, for a file-backed
        log that keeps them, before its last restart)."""
        with self._lock:
            return set(self._store.batches)

    def commit(self, position: int, reader: str = "") -> None:
        """``reader`` will not ask for positions below ``position`` again; trim what no reader needs.

        Each reader name has its own committed position (``""`` is the unnamed reader); a
        name commits for the first time by joining. The log trims below the *smallest*
        committed position of all its readers, and asks upstream for the room freed, so
        independent readers never trim each other's data. Commits never go backwards.

        Raises:
            ValueError: ``position`` is past the log's end: the reader has read positions this
                log never held (it is another log of that name, e.g. one restarted without its
                file), and trimming the elements it does hold would lose them unread.
        """
        if type(position) is not int or position < 0:
            raise ValueError(f"commit needs a position >= 0, got {position!r}")
        self._heard(reader)
        self.housekeep()
        with self._lock:
            store = self._store
            if position > store.end:
                raise ValueError(
                    f"replay log {self.name!r}: reader {reader!r} commits position {position}, past "
                    f"the log's end {store.end}: it read positions this log never held (a log "
                    "restarted without its file?); nothing was trimmed"
                )
            readers = store.readers
            known = reader in readers
            floor = readers[reader] if known else self._pending.pop(reader, store.first)
            readers[reader] = max(floor, store.first, min(position, store.end))
            self._seen[reader] = self._clock()
            self._trim()
            if not known:
                store.save_readers()
            ready = self._take_waiting()
        self._appended(ready)
        self._refill()

    def hold(self, reader: str, position: int | None = None) -> int:
        """Hold the log for the *pending* reader ``reader`` from ``position`` (default and at
        least: the oldest held; at most: the end); its position.

        A pending reader keeps every position from there on, like a committed one, but is
        forgotten unless it holds again or commits within ``pending_timeout`` seconds; its
        first :meth:`commit` makes it a committed reader. Holding as a reader that is
        already registered (pending or committed) only says it is alive, and answers its
        position.
        """
        if position is not None and (type(position) is not int or position < 0):
            raise ValueError(f"hold needs a position >= 0, got {position!r}")
        self._heard(reader)
        self.housekeep()
        with self._lock:
            store = self._store
            self._seen[reader] = self._clock()
            if reader in store.readers:
                return store.readers[reader]
            if reader not in self._pending:
                at = store.first if position is None else position
                self._pending[reader] = max(store.first, min(at, store.end))
            return self._pending[reader]

    def join(self, reader: str, position: int | None = None) -> int:
        """Register ``reader`` at ``position`` (default and at least: the oldest held) unless it
        is already registered; its committed position. From now on the log keeps every
        position from there on until ``reader`` commits past it (or :meth:`leave` s)."""
        if position is not None and (type(position) is not int or position < 0):
            raise ValueError(f"join needs a position >= 0, got {position!r}")
        with self._lock:
            store = self._store
            readers = store.readers
            if reader not in readers:
                at = store.first if position is None else position
                readers[reader] = max(store.first, min(at, store.end))
                self._pending.pop(reader, None)
                store.save_readers()
            self._seen[reader] = self._clock()
            return readers[reader]

    def leave(self, reader: str) -> None:
        """Forget ``reader`` (an abandoned query): it no longer holds positions back."""
        with self._lock:
            self._seen.pop(reader, None)
            if self._pending.pop(reader, None) is None:
                if self._store.readers.pop(reader, None) is None:
                    return
                self._store.save_readers()
            self._trim()
            ready = self._take_waiting()
        self._appended(ready)
        self._refill()

    def readers(self) -> dict[str, int]:
        """Each committed reader's committed position (``""``: the unnamed reader)."""
        with self._lock:
            return dict(self._store.readers)

    def pending(self) -> dict[str, int]:
        """Each pending reader's held position (:meth:`hold`)."""
        with self._lock:
            return dict(self._pending)

    def housekeep(self) -> None:
        """Drop the readers whose timeout has passed, and trim and refill for them.

        Every hold, commit, join and :meth:`info` does this first: a log is checked as
        often as anybody asks it anything (a Spark query asks every trigger).
        """
        with self._lock:
            if not self._expire():
                return
            self._trim()
            ready = self._take_waiting()
        self._appended(ready)
        self._refill()

    def _heard(self, reader: str) -> None:
        """``reader`` is alive (checked before the timeouts, so it is not expired by its own call)."""
        with self._lock:
            self._seen[reader] = self._clock()

    def _expire(self) -> bool:  # under the lock
        """Forget pending readers unheard for ``pending_timeout``, and committed readers unheard
        for ``reader_timeout`` while the log is full; whether any went."""
        now = self._clock()
        seen = self._seen
        gone = [r for r in self._pending if now - seen.get(r, now) > self.pending_timeout]
        for reader in gone:
            self.expired[reader] = self._pending.pop(reader)
            seen.pop(reader, None)
        store = self._store
        timeout = self.reader_timeout
        if timeout is not None and store.end - store.first >= self.capacity and not self.evict:
            stale = [r for r in store.readers if now - seen.get(r, now) > timeout]
            for reader in stale:
                self.expired[reader] = store.readers.pop(reader)
                seen.pop(reader, None)
            if stale:
                store.save_readers()
            gone += stale
        return bool(gone)

    def _trim(self) -> None:  # under the lock
        store = self._store
        holds = [*store.readers.values(), *self._pending.values()]
        if holds:
            drop = min(holds) - store.first
            if drop > 0:
                store.drop(drop)
                if self._index is not None:
                    self._index.trim(store.first)
                self._sizes.trim(store.first)
                self._arrivals.trim(store.first)

    def _take_waiting(self) -> list[Callable[[], object] | None]:  # under the lock
        """Append the waiting item lists that fit now, in order; their callbacks."""
        ready: list[Callable[[], object] | None] = []
        while self._waiting:
            items, done, batch = self._waiting[0]
            held = self._store.end - self._store.first
            if not self.evict and held and held + len(items) > self.capacity:
                break
            self._waiting.popleft()
            for item in items:
                self._add(item)
            if batch is not None:
                self._store.record_batch(*batch)
            ready.append(done)
        return ready

    def _appended(self, ready: list[Callable[[], object] | None]) -> None:
        if ready:
            self._wake()
        for done in ready:
            if done is not None:
                try:
                    done()
                except Exception as error:
                    report_unhandled(error, "ReplayLog.append(done=...)")

    def on_subscribe(self, subscription: Subscription) -> None:
        if not demand.accept_subscription(self._upstream, subscription):
            return
        self._upstream = subscription
        self._refill()

    def on_next(self, item: Any) -> None:
        if item is None:
            raise TypeError("rule 2.13: on_next(None) is illegal")
        with self._lock:
            skipping = self._skip > 0
            if skipping:
                self._skip -= 1
                self._outstanding -= 1
        if skipping:
            self._refill()
            return
        data = item if self._encode is None else self._encode(item)
        if type(data) is not bytes:
            data = bytes(data)
        with self._lock:
            self._outstanding -= 1
            self.produced += 1
            self._add(data)
        self._wake()
        if self._outstanding <= self.capacity // 4:
            self._refill()

    def on_error(self, error: BaseException) -> None:
        check_error(error)
        with self._lock:
            self._error = error
            self._upstream = None
        self._wake()

    def on_complete(self) -> None:
        with self._lock:
            self._complete = True
            self._upstream = None
        self._wake()

    def close(self) -> None:
        """Cancel the upstream subscription; a file-backed log syncs and closes its file."""
        upstream, self._upstream = self._upstream, None
        if upstream is not None:
            upstream.cancel()
        with self._lock:
            self._store.close()

    def _add(self, data: bytes) -> None:  # under the lock
        store = self._store
        self._arrivals.add(store.end, int(self._wall() * 1000))
        store.append(data)
        if self._index is not None and self._rows is not None:
            self._index.add(self._rows(data))
        self._sizes.add(len(data))
        held = store.end - store.first
        if held > self.capacity and self.evict:
            store.drop(1)
            held -= 1
            if self._index is not None:
                self._index.trim(store.first)
            self._sizes.trim(store.first)
            self._arrivals.trim(store.first)
        if held > self.max_held:
            self.max_held = held

    def _refill(self) -> None:
        with self._lock:
            upstream = self._upstream
            if upstream is None:
                return
            if self.evict:
                room = self.capacity - self._outstanding
            else:
                room = self.capacity - (self._store.end - self._store.first) - self._outstanding
            # Ask in chunks of at least a quarter of the capacity (fewer, larger requests),
            # but never leave the producer without demand while there is room: a reader
            # waiting for one more element must get it (no batch size can deadlock).
            if room <= 0 or (room < self.capacity // 4 and self._outstanding > 0):
                return
            self._outstanding += room
        upstream.request(room)

    def _wake(self) -> None:
        with self._lock:
            cursors = list(self._cursors)
        for cursor in cursors:
            cursor.drain()

    # -- reader side ---------------------------------------------------------------------
    def cursor(self, start: int | None = None, stop: int | None = None, *, pack: int = 0) -> Flow[bytes]:
        """A Publisher of positions ``[start, stop)``; ``start=None`` is the oldest held,
        ``stop=None`` follows the tail until the upstream completes.

        ``pack=N`` (N > 0) sends up to N elements, and at most about :data:`PACK_BYTES`, as
        one element (:func:`pack`, :func:`unpack`). Fewer, larger wire elements cost far
        less per record; demand then counts packs.
        """
        if type(pack) is not int or pack < 0:
            raise ValueError(f"pack= needs an int >= 0, got {pack!r}")
        return _Range(self, start, stop, pack)

    def _read(self, position: int, count: int) -> list[bytes]:
        """Up to ``count`` elements from ``position`` (fewer if not there yet)."""
        with self._lock:
            store = self._store
            if position < store.first:
                raise TrimmedError(self.name, position, store.first)
            return store.read(position, min(count, store.end - position))

    def _ended_at(self, position: int) -> tuple[bool, BaseException | None]:
        """Whether a reader at ``position`` has seen everything there will ever be."""
        with self._lock:
            at_end = position >= self._store.end
            return at_end and (self._complete or self._error is not None), self._error

    def _attach(self, cursor: _Cursor) -> None:
        with self._lock:
            self._cursors.add(cursor)

    def _detach(self, cursor: _Cursor) -> None:
        with self._lock:
            self._cursors.discard(cursor)


def _check_seconds(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name}= needs a number of seconds > 0, got {value!r}")
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name}= needs a number of seconds > 0, got {value!r}")
