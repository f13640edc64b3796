"""Where a :class:`~rstreams.replay.ReplayLog` keeps its elements: in memory or in a file.

Both stores hold the positions ``[first, end)``; ``append`` adds at ``end``, ``drop(k)``
forgets the ``k`` oldest, ``read(position, count)`` returns up to ``count`` elements from
``position`` (which the caller has checked is held), ``lengths()`` the held elements' sizes.
``batches`` is the set of ``(writer, batch)`` published on a sink log, ``record_batch`` adds
one once its elements are appended (durably for a file). ``readers`` maps each named reader
to the position it committed; the log changes it and calls ``save_readers()``. ``epoch`` names
the incarnation of the positions (:func:`new_epoch`): a memory store gets a new one each time it
is made, a file store keeps its own in its state, so a restart from the file keeps it. Neither
store is thread-safe: the log calls them under its lock.

:class:`FileStore` makes a log survive a restart of the *server*: positions, and the
elements not yet committed, are on disk. Layout in its directory:

* ``elements-P``: records ``[4-byte big-endian length][bytes]``, the first one at position
  ``P``; a torn last record (a crash mid-append) is cut off when the log opens.
* ``state.json``: ``{"file_first": P, "first": F, "readers": {NAME: POSITION}, "epoch": E,
  "name": LOG}``, replaced atomically on every trim and whenever a reader joins or leaves;
  written when the store opens without one or without its ``epoch`` or ``name`` (a directory of
  an earlier version), so the epoch is on disk before any reader sees it. A directory holding
  another log's name is refused (:class:`LogDirectoryError`): served under another name, its
  elements would reach readers of a log they are not.
* ``batches.jsonl`` (sink logs only, made by :meth:`FileStore.keep_batches`): one line
  ``{"writer": W, "batch": B, "end": E}`` per batch published, written after the batch's
  records and before any reader is told of them. A sink log's records end where its last
  batch ended, so records past that end (a crash during or just after a publish) are cut
  off when the log opens: the batch is then neither in the log nor recorded, and the
  writer's retry publishes it once.
  Trimmed records stay in the file until more than half of it is trimmed; then the held
  records are written to a new ``elements-F``, the state is switched to it, and the old
  file is deleted (a crash at any point leaves a state that names a complete file).

Appends are flushed to the OS at once and ``fsync``-ed when the log is trimmed or closed:
a crashed *process* loses nothing; a crashed *machine* may lose the latest appends.
Memory use is one int (the record's file offset) per held element.
"""

from __future__ import annotations

import json
import os
import secrets
import struct
from pathlib import Path
from typing import Any

from rstreams.errors import ReactiveStreamsError

__all__ = ["FileStore", "LogDirectoryError", "MemoryStore", "Store", "new_epoch"]

_LENGTH = struct.Struct(">I")
_COMPACT_MIN = 4096
"""Trimmed elements before a store compacts (memory: list slice; file: rewrite)."""


class LogDirectoryError(ReactiveStreamsError, ValueError):
    """A log's ``path=`` directory holds another log: its ``state.json`` names it. Nothing was
    opened; open it under its own name, or give this log a directory of its own."""

    def __init__(self, directory: Path, holds: str, name: str) -> None:
        super().__init__(
            f"the log directory {str(directory)!r} holds the log {holds!r}, not {name!r}: served as "
            f"{name!r}, its elements would reach readers of another log; open it as {holds!r}, or "
            f"give {name!r} a directory of its own"
        )
        self.directory = directory
        self.holds = holds
        self.name = name


def new_epoch() -> str:
    """A fresh epoch: 64 random bits as 16 hex digits (text, so no JSON reader rounds it)."""
    return secrets.token_hex(8)


class MemoryStore:
    """Elements in a list; trimming moves a head index and compacts now and then, so
    reading any position is a list slice (O(count), not O(offset) as in a deque)."""

    def __init__(self) -> None:
        self._items: list[bytes] = []
        self._head = 0
        self.first = 0  # position of _items[_head]
        self.readers: dict[str, int] = {}
        self.batches: set[tuple[str, int]] = set()
        self.epoch = new_epoch()

    @property
    def end(self) -> int:
        return self.first + len(self._items) - self._head

    def append(self, data: bytes) -> None:
        self._items.append(data)

    def drop(self, count: int) -> None:
        self._head += count
        self.first += count
        if self._head > _COMPACT_MIN and self._head * 2 > len(self._items):
            del self._items[: self._head]
            self._head = 0

    def read(self, position: int, count: int) -> list[bytes]:
        start = self._head + position - self.first
        return self._items[start : start + count]

    def lengths(self) -> list[int]:
        """The byte length of each held element, oldest first."""
        return [len(item) for item in self._items[self._head :]]

    def save_readers(self) -> None:
        pass

    def keep_batches(self) -> None:
        pass

    def record_batch(self, writer: str, batch: int) -> None:
        self.batches.add((writer, batch))

    def close(self) -> None:
        pass


class FileStore:
    """Elements in an append-only file in ``directory`` (created if missing); see the module docstring."""

    def __init__(self, directory: str | os.PathLike[str], name: str | None = None) -> None:
        self._dir = Path(directory)
        self._dir.mkdir(parents=True, exist_ok=True)
        self._state = self._dir / "state.json"
        state: dict[str, Any] = {"file_first": 0, "first": 0, "readers": {}}
        if self._state.exists():
            state.update(json.loads(self._state.read_text()))
        holds = state.get("name")
        if name is not None and holds is not None and holds != name:
            raise LogDirectoryError(self._dir, str(holds), name)
        self.name: str | None = name if holds is None else str(holds)
        self._file_first = int(state["file_first"])
        self._path = self._dir / f"elements-{self._file_first}"
        self._offsets: list[int] = []  # file offset of each record, from file_first on
        self._size = self._scan()
        self.first = max(int(state["first"]), self._file_first)
        self.first = min(self.first, self._file_first + len(self._offsets))
        self.readers: dict[str, int] = {str(k): int(v) for k, v in state["readers"].items()}
        known = state.get("epoch")
        self.epoch = str(known) if known else new_epoch()
        if not known or holds is None:
            self._save_state()
        self._batches_path = self._dir / "batches.jsonl"
        self.batches: set[tuple[str, int]] = set()
        if self._batches_path.exists():
            self._cut_to(self._load_batches())
        self._file = open(self._path, "ab")  # noqa: SIM115 - held open for the store's life
        self._journal = open(self._batches_path, "a") if self._batches_path.exists() else None  # noqa: SIM115

    def _scan(self) -> int:
        """Index the records; cut off a torn last record. Returns the valid size."""
        if not self._path.exists():
            return 0
        data = self._path.read_bytes()
        offset = 0
        while offset + _LENGTH.size <= len(data):
            (length,) = _LENGTH.unpack_from(data, offset)
            if offset + _LENGTH.size + length > len(data):
                break
            self._offsets.append(offset)
            offset += _LENGTH.size + length
        if offset != len(data):
            with open(self._path, "r+b") as file:
                file.truncate(offset)
        return offset

    def _load_batches(self) -> int:
        """Read the batch journal (a torn last line is ignored); the end of the last batch."""
        end = 0
        for line in self._batches_path.read_text().splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                break
            if entry["batch"] is not None:
                self.batches.add((str(entry["writer"]), int(entry["batch"])))
            end = int(entry["end"])
        return end

    def _cut_to(self, end: int) -> None:
        """Forget the records at positions ``end`` and after (a batch that was not recorded)."""
        keep = max(0, end - self._file_first)
        if keep >= len(self._offsets):
            return
        self._size = self._offsets[keep]
        del self._offsets[keep:]
        with open(self._path, "r+b") as file:
            file.truncate(self._size)
        self.first = min(self.first, self.end)

    def keep_batches(self) -> None:
        """Start the batch journal (a sink log), recording where the log ends now."""
        if self._journal is None:
            self._journal = open(self._batches_path, "a")  # noqa: SIM115 - held open for the store's life
            self._write_entry({"writer": None, "batch": None, "end": self.end})

    def record_batch(self, writer: str, batch: int) -> None:
        """Batch ``batch`` of ``writer`` ends at the log's end now (its records are appended)."""
        self.batches.add((writer, batch))
        if self._journal is not None:
            self._write_entry({"writer": writer, "batch": batch, "end": self.end})

    def _write_entry(self, entry: dict[str, Any]) -> None:
        assert self._journal is not None
        self._journal.write(json.dumps(entry) + "\n")
        self._journal.flush()

    @property
    def end(self) -> int:
        return self._file_first + len(self._offsets)

    def append(self, data: bytes) -> None:
        self._offsets.append(self._size)
        self._file.write(_LENGTH.pack(len(data)))
        self._file.write(data)
        self._file.flush()
        self._size += _LENGTH.size + len(data)

    def drop(self, count: int) -> None:
        self.first += count
        trimmed = self.first - self._file_first
        if trimmed > _COMPACT_MIN and trimmed * 2 > len(self._offsets):
            self._compact()
        else:
            os.fsync(self._file.fileno())
            self._save_state()

    def read(self, position: int, count: int) -> list[bytes]:
        index = position - self._file_first
        offsets = self._offsets[index : index + count + 1]
        if not offsets:
            return []
        stop = offsets[-1] if len(offsets) > count else self._size
        with open(self._path, "rb") as file:
            file.seek(offsets[0])
            block = file.read(stop - offsets[0])
        base = offsets[0]
        out: list[bytes] = []
        for offset in offsets[:count]:
            start = offset - base + _LENGTH.size
            (length,) = _LENGTH.unpack_from(block, offset - base)
            out.append(block[start : start + length])
        return out

    def lengths(self) -> list[int]:
        """The byte length of each held element, oldest first (from the record offsets)."""
        ends = [*self._offsets[1:], self._size]
        held = range(self.first - self._file_first, len(self._offsets))
        return [ends[i] - self._offsets[i] - _LENGTH.size for i in held]

    def save_readers(self) -> None:
        self._save_state()

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
        if self._journal is not None and not self._journal.closed:
            self._journal.flush()
            os.fsync(self._journal.fileno())
            self._journal.close()

    def _save_state(self) -> None:
        scratch = self._state.with_suffix(".tmp")
        state = {
            "file_first": self._file_first,
            "first": self.first,
            "readers": self.readers,
            "epoch": self.epoch,
        }
        if self.name is not None:
            state["name"] = self.name
        scratch.write_text(json.dumps(state))
        os.replace(scratch, self._state)

    def _compact(self) -> None:
        """Rewrite the file with the held records only; the state names the new first record."""
        held = self.read(self.first, self.end - self.first)
        new_path = self._dir / f"elements-{self.first}"
        offsets: list[int] = []
        size = 0
        with open(new_path, "wb") as out:
            for data in held:
                offsets.append(size)
                out.write(_LENGTH.pack(len(data)))
                out.write(data)
                size += _LENGTH.size + len(data)
            out.flush()
            os.fsync(out.fileno())
        self._file.close()
        old_path = self._path
        self._path, self._file_first, self._offsets, self._size = new_path, self.first, offsets, size
        self._save_state()
        old_path.unlink(missing_ok=True)
        self._file = open(self._path, "ab")  # noqa: SIM115 - held open for the store's life


Store = MemoryStore | FileStore
