"""Reading a replay log: a cursor per reader, and the pack format of ranges sent many per element.

:meth:`ReplayLog.cursor <rstreams.replay.ReplayLog.cursor>` returns a :class:`_Range`; each
subscription to it is a :class:`_Cursor`, a drain loop (rules 1.3, 3.3) over what the log
holds: whoever finds it idle emits, the others only add work. A cursor asks its log for
elements through the few methods of :class:`LogView`, never holding the log's lock while it
calls its subscriber.
"""

from __future__ import annotations

import struct
import threading
from bisect import bisect_right
from itertools import accumulate, pairwise
from typing import Protocol

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.errors import ReactiveStreamsError, report_unhandled
from rstreams.flow._flow import Flow
from rstreams.rules import check_subscriber

__all__ = ["PACK_BYTES", "LogLookupError", "LogView", "TrimmedError", "pack", "packed_count", "unpack"]

_CHUNK = 4096
"""Most elements a cursor takes from the log per lock acquisition."""
PACK_BYTES = 256 * 1024
"""About the most bytes one packed element carries (far below RS.io's 16 MiB element limit)."""


def _cut(chunk: list[bytes]) -> list[bytes]:
    """The longest prefix of ``chunk`` within :data:`PACK_BYTES` (at least one element).

    A prefix of ``k`` elements packs into ``4 * k`` header bytes plus their lengths; the
    running sums are made in C and the cut found by bisection (no Python step per element).
    """
    sizes = list(accumulate(map(len, chunk)))
    fits = bisect_right(range(len(chunk)), PACK_BYTES, key=lambda i: sizes[i] + 4 * (i + 1))
    return chunk if fits == len(chunk) else chunk[: max(1, fits)]


def pack(chunk: list[bytes]) -> bytes:
    """Elements as one: ``[count][count lengths]`` (4-byte big-endian each), then the bytes."""
    return struct.pack(f">I{len(chunk)}I", len(chunk), *map(len, chunk)) + b"".join(chunk)


def packed_count(data: bytes) -> int:
    """How many elements one packed element holds (its first four bytes)."""
    return int.from_bytes(data[:4], "big")


def unpack(data: bytes) -> list[bytes]:
    """The elements of one packed element (see :meth:`ReplayLog.cursor`)."""
    (count,) = struct.unpack_from(">I", data)
    lengths = struct.unpack_from(f">{count}I", data, 4)
    ends = list(accumulate(lengths, initial=4 + 4 * count))
    return [data[start:end] for start, end in pairwise(ends)]


class TrimmedError(ReactiveStreamsError, LookupError):
    """A reader asked for a position the log no longer holds."""

    def __init__(self, name: str, position: int, first: int) -> None:
        super().__init__(
            f"replay log {name!r}: position {position} was already trimmed "
            f"(committed or evicted); the oldest position held is {first}"
        )
        self.position = position
        self.first = first


class LogEpochError(ReactiveStreamsError, LookupError):
    """A request named an epoch (``NAME?...&epoch=E``) that is not the log's: the log the reader
    knew is gone (restarted without its file, its positions starting again at 0, or its file
    replaced), so the same positions may hold other elements. Nothing was done, except that a
    publish refused so drops the uploads it names that were staged on the log since its restart
    (``dropped``: how many): no writer naming the old epoch could ever publish them."""

    def __init__(self, name: str, given: str, epoch: str, *, dropped: int = 0) -> None:
        done = "nothing was done"
        if dropped:
            done = (
                f"nothing was published, and the {dropped} upload(s) the publish named, staged on the "
                "log since its restart, were dropped (a writer of the old epoch cannot publish them)"
            )
        super().__init__(
            f"replay log {name!r}: epoch {given!r} is not this log's ({epoch!r}): the log was "
            "restarted since the reader saw it (a log in memory starts again empty, at position 0; "
            f"or its file was replaced), so its positions may hold other elements; {done}"
        )
        self.given = given
        self.epoch = epoch
        self.dropped = dropped


class LogLookupError(ReactiveStreamsError, LookupError):
    """A request to a replay log names what the log does not have: uploads to a log that is not a
    sink log, bounds by rows of a log that counts none; an upload whose token was discarded,
    published or taken over by a later upload, or is not staged here (PROTOCOL.md §21.8); an
    upload header naming no sink log. Over RS.io, signalled to that request's subscriber only;
    :class:`~rstreams.replay.ReplayLog`'s own ``end_within`` and ``position_at`` raise it."""


class LogView(Protocol):
    """What a cursor needs of its log (:class:`~rstreams.replay.ReplayLog` implements it)."""

    @property
    def first(self) -> int: ...

    def _read(self, position: int, count: int) -> list[bytes]: ...

    def _ended_at(self, position: int) -> tuple[bool, BaseException | None]: ...

    def _attach(self, cursor: _Cursor) -> None: ...

    def _detach(self, cursor: _Cursor) -> None: ...


class _Range(Flow[bytes]):
    __slots__ = ("_log", "_pack", "_start", "_stop")

    def __init__(self, log: LogView, start: int | None, stop: int | None, pack: int) -> None:
        self._log = log
        self._start = start
        self._stop = stop
        self._pack = pack

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        check_subscriber(subscriber)
        start = self._log.first if self._start is None else self._start
        cursor = _Cursor(self._log, subscriber, start, self._stop, self._pack)
        try:
            subscriber.on_subscribe(cursor)
        except Exception as error:
            cursor.done = True
            report_unhandled(error, f"{type(subscriber).__name__}.on_subscribe")
            return
        self._log._attach(cursor)
        cursor.drain()


class _Cursor(Subscription):
    """One reader's position in the log: a drain loop over what the log holds."""

    def __init__(
        self, log: LogView, subscriber: Subscriber[bytes], start: int, stop: int | None, pack: int
    ) -> None:
        self._log = log
        self._pack = pack
        self._subscriber = subscriber
        self.position = start
        self._stop = stop
        self._demand = 0
        self._wip = 0
        self._lock = threading.Lock()
        self._invalid: BaseException | None = None
        self.done = False

    def request(self, n: int) -> None:
        problem = demand.invalid(n)
        with self._lock:
            if problem is not None:
                self._invalid = problem
            else:
                self._demand = demand.add(self._demand, n)
        self.drain()

    def cancel(self) -> None:
        self.done = True
        self._log._detach(self)

    def drain(self) -> None:
        with self._lock:
            self._wip += 1
            if self._wip > 1:
                return
        missed = 1
        while True:
            self._work()
            with self._lock:
                self._wip -= missed
                missed = self._wip
                if missed == 0:
                    return

    def _work(self) -> None:
        subscriber = self._subscriber
        while not self.done:
            if self._invalid is not None:
                self._finish(self._invalid)
                return
            stop = self._stop
            if stop is not None and self.position >= stop:
                self._finish(None)
                return
            packing = self._pack
            if self._demand <= 0:
                return
            want = packing or min(self._demand, _CHUNK)
            if stop is not None:
                want = min(want, stop - self.position)
            try:
                chunk = self._log._read(self.position, want)
            except TrimmedError as trimmed:
                self._finish(trimmed)
                return
            if not chunk:
                ended, failure = self._log._ended_at(self.position)
                if ended:
                    self._finish(failure)
                return
            step = 1
            if packing:
                chunk = _cut(chunk)
                step = len(chunk)
                chunk = [pack(chunk)]
            with self._lock:
                self._demand = demand.sub(self._demand, len(chunk))
            for item in chunk:
                if self._cancelled():
                    return
                self.position += step
                try:
                    subscriber.on_next(item)
                except Exception as error:
                    self.cancel()
                    report_unhandled(error, f"{type(subscriber).__name__}.on_next")
                    return

    def _cancelled(self) -> bool:
        return self.done  # set by cancel(), possibly from another thread

    def _finish(self, error: BaseException | None) -> None:
        self.done = True
        self._log._detach(self)
        try:
            if error is None:
                self._subscriber.on_complete()
            else:
                self._subscriber.on_error(error)
        except Exception as exc:
            report_unhandled(exc, f"{type(self._subscriber).__name__}.on_complete/on_error")
