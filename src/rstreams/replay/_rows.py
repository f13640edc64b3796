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

from bisect import bisect_right

__all__ = ["RowIndex"]

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
