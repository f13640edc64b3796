"""What a connection has to write: one buffer, large payloads by reference, split elements.

Theory of operation (PROTOCOL.md §8):

* Frames are appended to :attr:`Output.buf`; :meth:`Output.take` hands it over as one
  chunk. A payload of at least ``LARGE`` bytes is handed over as a chunk of its own
  instead of being copied into the buffer (:meth:`Output.write_large`).
* An element above ``split_threshold`` goes out as parts of that size. Its stream gets a
  backlog: the element, then every later frame of the same stream (order within a
  stream is kept), while other streams write straight to the buffer. :meth:`take`
  interleaves the backlogs round-robin, one part per stream per round, up to a byte
  budget, so one big element does not stall other streams.
* Bytes are laid out by :mod:`rstreams.wire.frames` only; this module orders them.
"""

from __future__ import annotations

from collections import deque

from rstreams.wire._streams import Stream
from rstreams.wire.frames import part_head

__all__ = ["LARGE", "Output"]

LARGE = 16 * 1024
"""Payloads at least this big are handed to the transport as their own chunk (no copy)."""


class _Split:
    """An element being sent as parts; ``offset`` is how much has gone out (§8)."""

    __slots__ = ("data", "element_id", "offset", "sid")

    def __init__(self, sid: int, element_id: int, data: bytes) -> None:
        self.sid = sid
        self.element_id = element_id
        self.data = data
        self.offset = 0


class Output:
    """The bytes one connection has yet to hand to its transport."""

    __slots__ = ("_part_size", "backlogs", "buf", "chunks")

    def __init__(self, part_size: int) -> None:
        self.buf = bytearray()
        """Frames not yet handed over (never rebound: the connection's fast paths keep it)."""
        self.backlogs: dict[int, deque[bytes | _Split]] = {}
        """Subscriber id -> what waits behind its split element (never rebound)."""
        self.chunks: list[bytes] = []
        """Chunks queued ahead of :attr:`buf` (large payloads, by reference)."""
        self._part_size = part_size

    @property
    def pending(self) -> bool:
        """Whether :meth:`take` would return anything."""
        return bool(self.buf or self.chunks or self.backlogs)  # inlined in Connection.has_data_to_send

    def write_large(self, head: bytes, payload: bytes) -> None:
        """Queue a frame whose ``payload`` is handed over as its own chunk, not copied."""
        buf = self.buf
        buf += head
        self.chunks.append(bytes(buf))
        buf.clear()
        self.chunks.append(payload)

    def write_many_large(self, head: bytes, payloads: list[bytes]) -> None:
        """:meth:`write_large` for each of ``payloads``, all with the same ``head``, in C loops."""
        chunks: list[bytes] = [head] * (2 * len(payloads))
        chunks[1::2] = payloads
        buf = self.buf
        if buf:
            buf += head
            chunks[0] = bytes(buf)
            buf.clear()
        self.chunks += chunks

    def emit(self, sid: int, frame: bytes) -> None:
        """Queue an encoded frame of publisher ``sid``, behind its split element if any."""
        backlog = self.backlogs.get(sid)
        if backlog is not None:
            backlog.append(frame)
        else:
            self.buf += frame

    def split(self, st: Stream, element: bytes) -> None:
        """Queue ``element`` of ``st`` to go out as parts (§8)."""
        item = _Split(st.sid, st.next_element_id, element)
        st.next_element_id = (st.next_element_id + 1) & 0x7F
        self.backlogs.setdefault(st.sid, deque()).append(item)

    def drop(self, sid: int) -> None:
        """Forget what ``sid`` still had to send (its subscription ended)."""
        self.backlogs.pop(sid, None)

    def take(self, limit: int) -> list[bytes]:
        """The chunks to write, in order; split parts until about ``limit`` bytes."""
        if self.backlogs:
            self._drain_backlogs(limit)
        if self.buf:
            self.chunks.append(bytes(self.buf))
            self.buf.clear()
        chunks = self.chunks
        self.chunks = []
        return chunks

    def _drain_backlogs(self, limit: int) -> None:
        """Round-robin: each backlogged stream sends what precedes its next part, and one part."""
        budget = limit - len(self.buf)
        backlogs = self.backlogs
        while backlogs and budget > 0:
            for sid in list(backlogs):
                backlog = backlogs[sid]
                while backlog:
                    item = backlog[0]
                    if isinstance(item, bytes):
                        self.buf += item
                        budget -= len(item)
                        backlog.popleft()
                        continue
                    budget -= self._write_part(item)
                    if item.offset >= len(item.data):
                        backlog.popleft()
                    break
                if not backlog:
                    del backlogs[sid]

    def _write_part(self, item: _Split) -> int:
        start = item.offset
        end = min(start + self._part_size, len(item.data))
        self.write_large(
            part_head(end >= len(item.data), item.sid, item.element_id, end - start), item.data[start:end]
        )
        item.offset = end
        return end - start
