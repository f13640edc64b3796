"""Joining split elements: onNextPart ... onNextLastPart -> one element (PROTOCOL.md §8).

Theory of operation: a part names its subscription and an element id; the bytes of every
element still being received are kept per (subscription, element id) until its last part
arrives, then handed back whole. Three limits bound what the peer can make us hold
(§11): ``max_element_size`` per element (exceeding it ends that subscription),
``max_parts_in_flight`` elements and ``max_reassembly_bytes`` bytes over the whole
connection (exceeding either ends the connection). The assembler only keeps bytes and
counts: demand and subscription state are the stream table's, and a broken limit comes
back as a :class:`~rstreams.wire._streams.Violation` for the connection to act on.

The input elements of channels the peer opened may be split too (inputNextPart ... inputNext,
extension input-parts, §21.6): at most one per channel is partly received, kept by the
channel's subscriber id beside the output's and counted against the same two connection
limits, so the peer cannot make this endpoint hold more by splitting in both directions.
"""

from __future__ import annotations

from rstreams.wire._errors import LimitExceededError
from rstreams.wire._streams import Stream, Violation

__all__ = ["Assembler"]


class Assembler:
    """The partly received split elements of one connection."""

    __slots__ = ("_bytes", "_count", "_inputs", "_max_bytes", "_max_element", "_max_parts", "parts")

    def __init__(self, *, max_element_size: int, max_parts_in_flight: int, max_reassembly_bytes: int) -> None:
        self.parts: dict[int, dict[int, bytearray]] = {}
        """Subscriber id -> element id -> the bytes received so far. Read (never changed) by the
        connection's fast paths: a subscriber id with no entry has no unfinished element."""
        self._inputs: dict[int, bytearray] = {}
        """The peer's channel (its subscriber id) -> the bytes of its partly received input element."""
        self._count = 0
        self._bytes = 0
        self._max_element = max_element_size
        self._max_parts = max_parts_in_flight
        self._max_bytes = max_reassembly_bytes

    @property
    def held(self) -> tuple[int, int]:
        """(elements, bytes) held in unfinished split elements, over the whole connection."""
        return self._count, self._bytes

    def starts(self, sid: int, element_id: int) -> bool:
        """Whether a part of ``element_id`` on ``sid`` begins a new element (it takes a credit)."""
        pending = self.parts.get(sid)
        return pending is None or element_id not in pending

    def unfinished(self, sid: int) -> int:
        """How many elements of ``sid`` have parts received but not their last part."""
        pending = self.parts.get(sid)
        return len(pending) if pending else 0

    def add(self, st: Stream, element_id: int, data: bytes, last: bool) -> bytes | Violation | None:
        """Take one part: the whole element after its last part, ``None`` while more are to
        come, or the limit it breaks."""
        sid = st.sid
        pending = self.parts.get(sid)
        buf = pending.get(element_id) if pending is not None else None
        if buf is None:
            if last:  # an element in one part
                return data
            if self._count >= self._max_parts:
                return Violation(
                    LimitExceededError(
                        f"more than max_parts_in_flight={self._max_parts} split elements at once",
                        limit="max_parts_in_flight",
                        subscriber=sid,
                    )
                )
            if pending is None:
                pending = self.parts[sid] = {}
            buf = pending[element_id] = bytearray()
            self._count += 1
        if len(buf) + len(data) > self._max_element:
            error = LimitExceededError(
                f"split element {element_id} for subscriber {sid} grows past "
                f"max_element_size={self._max_element}",
                limit="max_element_size",
                subscriber=sid,
            )
            return Violation(error, st)
        if self._bytes + len(data) > self._max_bytes:
            return Violation(
                LimitExceededError(
                    f"split elements in flight exceed max_reassembly_bytes={self._max_bytes}",
                    limit="max_reassembly_bytes",
                    subscriber=sid,
                )
            )
        buf += data
        self._bytes += len(data)
        if not last:
            return None
        pending = self.parts[sid]
        del pending[element_id]
        if not pending:
            del self.parts[sid]
        self._count -= 1
        self._bytes -= len(buf)
        return bytes(buf)

    def input_unfinished(self, sid: int) -> bool:
        """Whether channel ``sid``'s input has an element partly received (§21.6)."""
        return sid in self._inputs

    def add_input(self, sid: int, data: bytes, last: bool) -> bytes | None:
        """Take one part of channel ``sid``'s input element: the whole element after its last
        part (inputNext), ``None`` while more are to come. ``LimitExceededError`` for a broken
        limit: ``limit="max_element_size"`` ends that input (its partial element is dropped),
        the others the connection."""
        buf = self._inputs.get(sid)
        if buf is None:
            if last:  # an element in one part
                return data
            if self._count >= self._max_parts:
                raise LimitExceededError(
                    f"more than max_parts_in_flight={self._max_parts} split elements at once",
                    limit="max_parts_in_flight",
                    subscriber=sid,
                )
            buf = self._inputs[sid] = bytearray()
            self._count += 1
        if len(buf) + len(data) > self._max_element:
            self.drop_input(sid)
            raise LimitExceededError(
                f"split input element for subscriber {sid} grows past max_element_size={self._max_element}",
                limit="max_element_size",
                subscriber=sid,
            )
        if self._bytes + len(data) > self._max_bytes:
            raise LimitExceededError(
                f"split elements in flight exceed max_reassembly_bytes={self._max_bytes}",
                limit="max_reassembly_bytes",
                subscriber=sid,
            )
        buf += data
        self._bytes += len(data)
        if not last:
            return None
        del self._inputs[sid]
        self._count -= 1
        self._bytes -= len(buf)
        return bytes(buf)

    def drop_input(self, sid: int) -> None:
        """Forget channel ``sid``'s partly received input element (its input ended)."""
        buf = self._inputs.pop(sid, None)
        if buf is not None:
            self._count -= 1
            self._bytes -= len(buf)

    def drop(self, sid: int) -> None:
        """Forget the unfinished elements of ``sid`` (its subscription ended)."""
        pending = self.parts.pop(sid, None)
        if pending:
            self._count -= len(pending)
            self._bytes -= sum(map(len, pending.values()))

    def clear(self) -> None:
        """The connection ended: forget everything."""
        self.parts.clear()
        self._inputs.clear()
        self._count = 0
        self._bytes = 0
