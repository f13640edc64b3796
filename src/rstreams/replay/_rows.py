"""``RowIndex``: how many rows each held element of a replay log carries, for row-bounded reads.

A log's positions count elements, but an element may carry many rows (an Arrow IPC record
batch). A log made with ``rows=`` (a function ``bytes -> int``) counts each element's rows
as it arrives, and ``NAME?rows=R&from=A`` answers how far a reader at ``A`` may go with at
most ``R`` rows: Spark's ``maxRecordsPerBatch`` then means rows for any codec.

The index is a list of running totals: ``totals[k]`` is the number of rows at positions
``[base, base + k)``. Appending is one addition; trimming moves nothing until more than
half the list is below the log's first position (then it drops that prefix); finding the
end of a row-bounded range is one binary search.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right

from rstreams.replay._cursor import LogLookupError

__all__ = ["ArrivalIndex", "RowIndex"]

_COMPACT_MIN = 4096


class RowIndex:
    """Running row totals of the positions ``[base, end)``; the log calls it under its lock."""

    def __init__(self, first: int) -> None:
        self.base = first
        self.totals = [0]

    def add(self, rows: int) -> None:
        self.totals.append(self.totals[-1] + rows)

    def trim(self, first: int) -> None:
        """Positions below ``first`` are gone; forget them now and then."""
        drop = first - self.base
        if drop > _COMPACT_MIN and drop * 2 > len(self.totals):
            del self.totals[:drop]
            self.base = first

    def end_within(self, start: int, max_rows: int) -> tuple[int, int]:
        """``(end, rows)``: the furthest ``end`` with at most ``max_rows`` rows in ``[start, end)``
        (at least one element past ``start`` when there is one), and those rows."""
        totals = self.totals
        index = start - self.base
        if index >= len(totals) - 1:
            return start, 0
        limit = totals[index] + max_rows
        stop = max(bisect_right(totals, limit, lo=index) - 1, index + 1)
        return self.base + stop, totals[stop] - totals[index]


class ArrivalIndex:
    """When a log's positions arrived (ms since the epoch), kept in memory.

    One entry per millisecond in which elements arrived: ``(ms, the first position that
    arrived in it)``, so a position's arrival is the entry at or before it, to the millisecond.
    Positions below ``known_from`` (held by a file-backed log before the server started)
    have no arrival time.
    """

    def __init__(self, known_from: int) -> None:
        self.known_from = known_from
        self.times: list[int] = []
        self.positions: list[int] = []

    def add(self, position: int, ms: int) -> None:
        if not self.times or ms > self.times[-1]:
            self.times.append(ms)
            self.positions.append(position)

    def trim(self, first: int) -> None:
        """Forget the entries wholly below ``first``, now and then."""
        drop = bisect_right(self.positions, first) - 1
        if drop > _COMPACT_MIN and drop * 2 > len(self.positions):
            del self.times[:drop]
            del self.positions[:drop]

    def position_at(self, ms: int, first: int, end: int) -> int:
        """The first position held that arrived at ``ms`` or later (``end`` if none did).

        Raises:
            LogLookupError: held positions without an arrival time might be the answer.
        """
        index = bisect_left(self.times, ms)
        if index == 0 and first < self.known_from:
            raise LogLookupError(
                f"positions {first}..{self.known_from - 1} have no arrival time (arrival times are "
                "kept in memory: they were held before the server started)"
            )
        if index == len(self.times):
            return end
        return max(self.positions[index], first)
