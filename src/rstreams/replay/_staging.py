"""A sink log's staging area: uploads held by token until a publish appends them or a discard drops them.

An upload may name its *owner* (PROTOCOL.md §21.8): the writer ``W`` and batch ``B`` its
publish will name, and the *run* ``R`` of the writer (one start of a Spark query: Spark's run
id). Uploads whose writer died before its commit (a Spark driver killed between the uploads of
a micro-batch and its commit, a task retried or speculated, a query restarted) are never named
by a publish; owners let the staging area drop them instead of holding them for ever against its
bound (docs/replay.md, *Sink logs*):

* **The batch's publish.** ``NAME?publish=B&writer=W&tokens=...``, whether it appends the batch
  or is refused as a re-run of one published, drops every upload owned by ``(W, B)`` that it
  does not name: ``(W, B)`` publishes once, so no later publish could take them (a retried or
  speculative task's other attempt, the uploads of a run killed before its commit that the
  re-run of the batch replaces).
* **A new run.** The first upload of run ``R`` of writer ``W`` (a run the staging area has not
  seen) drops every upload of ``W`` that names another run: a Spark query runs once at a time,
  so the driver of an earlier run is gone, and only it could have published them. An upload of
  a run seen before but not the newest (a task of a killed driver still uploading) keeps none
  of its rows.
* An upload owned by a ``(W, B)`` already published keeps none of its rows either (its publish
  could only be refused: the re-run of a batch whose commit reached the server).

Uploads that name no owner (older clients, ``NAME?stage=T``) are staged as before, until
published or discarded. Runs seen and batches published are remembered for the server's
lifetime (published batches on disk too, for a file-backed sink log).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rstreams.errors import ReactiveStreamsError
from rstreams.replay._cursor import LogLookupError
from rstreams.replay._log import ReplayLog

__all__ = ["STAGING_BYTES", "Owner", "Staging", "StagingFullError", "batch_param", "owner_of"]

STAGING_BYTES = 256 * 1024 * 1024
"""Default bound of a sink log's staged (uploaded, not yet published) rows, in bytes."""
_BATCH_LIMIT = 2**63
"""Batches are integers from 0 to ``2**63 - 1``."""


class StagingFullError(ReactiveStreamsError, RuntimeError):
    """An upload would take a sink log's staging area past its bound (``staging_bytes``)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Owner:
    """Who staged an upload (PROTOCOL.md §21.8): ``writer`` and ``batch``, as its publish will name
    them, and ``run``, the writer's run (``None``: it names none)."""

    writer: str
    batch: int
    run: str | None = None


def owner_of(writer: object, batch: object, run: object) -> Owner | None:
    """The owner an upload names (``None`` for each field it leaves out); ``None`` if it names
    none. A channel's parameters are text: its ``batch`` is taken as the int its decimal digits
    spell (:func:`batch_param`) before it comes here.

    Raises:
        ValueError: the fields are not ``writer`` and ``batch`` together (``writer`` text,
            ``batch`` an integer from 0 to ``2**63 - 1``), optionally with ``run`` (text), none
            empty; the message says so and what was given, worded to follow the log's name.
    """
    if writer is None and batch is None and run is None:
        return None
    number = batch
    well_formed = (
        isinstance(writer, str)
        and writer != ""
        and type(number) is int
        and 0 <= number < _BATCH_LIMIT
        and (run is None or (isinstance(run, str) and run != ""))
    )
    if not well_formed:
        raise ValueError(
            "an upload names its owner as writer W and batch B together (B an integer from 0 to "
            "2**63 - 1), and optionally run R, none of them empty; got "
            f"writer={writer!r}, batch={batch!r}, run={run!r}"
        )
    assert isinstance(writer, str) and type(number) is int
    return Owner(writer=writer, batch=number, run=run if isinstance(run, str) else None)


def batch_param(text: str | None) -> int | str | None:
    """A channel's ``batch=`` parameter: the int its decimal digits spell, else the text as it is
    (for :func:`owner_of` to refuse, naming it)."""
    if text is not None and text.isascii() and text.isdigit():
        return int(text)
    return text


class Staging:
    """Uploads of one sink log, staged by token until Spark's commit (or abort); see the module
    docstring for the uploads it drops by their owners.

    At most ``limit`` bytes of rows are staged at once (all tokens together). Uploads are
    not held back when it is reached, because all the uploads of one Spark batch are
    published together only after every one of them has completed: waiting for room
    could wait forever. The upload that would pass the bound fails instead, with a
    :class:`StagingFullError` that says what to change; its rows are dropped.
    """

    def __init__(self, log: ReplayLog, limit: int) -> None:
        self.log = log
        self.limit = limit
        self._lock = threading.Lock()
        self._uploads: dict[str, list[bytes]] = {}
        self._sizes: dict[str, int] = {}
        self.staged_bytes = 0
        self._done: dict[str, concurrent.futures.Future[int]] = {}
        self._owners: dict[str, Owner] = {}
        self._void: set[str] = set()  # uploads whose rows are counted and kept nowhere
        self._runs: dict[str, tuple[str, set[str]]] = {}  # writer -> (its newest run, the runs seen)
        log.keep_batches()
        self._published: set[tuple[str, int]] = log.batches()  # appended, or waiting to be
        self.refused = 0  # publishes of a batch already published (a re-run batch)
        self.dropped = 0  # uploads dropped by their owners (the module docstring), not by a discard

    def future(self, token: str) -> concurrent.futures.Future[int]:
        """The upload under ``token``'s count, resolved when it completes (the reverse
        subscription's, whose ``NAME?staged=T`` may come before or after its header)."""
        with self._lock:
            return self._done.setdefault(token, concurrent.futures.Future())

    def own(self, token: str, owner: Owner | None) -> None:
        """The upload under ``token`` is ``owner``'s (the reverse subscription's header names it):
        a new run drops its writer's uploads of other runs, and an upload of a stale run or of a
        batch already published keeps no rows (the module docstring)."""
        with self._lock:
            self._own(token, owner)

    def begin(self, token: str, owner: Owner | None = None) -> concurrent.futures.Future[int]:
        """A new upload under ``token`` (a channel, PROTOCOL.md §21.8) by ``owner``: its count's
        future, which replaces the token's earlier one. An earlier upload still running can then
        stage no more (:meth:`add`)."""
        fresh: concurrent.futures.Future[int] = concurrent.futures.Future()
        with self._lock:
            earlier = self._done.get(token)
            self._done[token] = fresh
            self._own(token, owner)
        if earlier is not None and not earlier.done():
            earlier.set_exception(LogLookupError(f"sink log {self.log.name!r}: upload {token!r} began again"))
        return fresh

    def _own(self, token: str, owner: Owner | None) -> None:  # under the lock
        self._void.discard(token)
        if owner is None:
            self._owners.pop(token, None)
            return
        self._owners[token] = owner
        if owner.run is not None:
            newest, seen = self._runs.get(owner.writer, (owner.run, set()))
            if owner.run not in seen:  # a new run: the earlier ones' drivers are gone
                seen.add(owner.run)
                self._runs[owner.writer] = (owner.run, seen)
                self._drop_where(lambda o: o.writer == owner.writer and o.run not in (None, owner.run))
            elif owner.run != newest:
                self._void.add(token)
        if (owner.writer, owner.batch) in self._published:
            self._void.add(token)

    def add(self, token: str, rows: list[bytes], upload: concurrent.futures.Future[int]) -> None:
        """Stage ``rows`` under ``token`` for the upload whose count is ``upload`` (an upload that
        keeps no rows, by its owner, counts them only).

        Raises:
            LogLookupError: since that upload began, ``token`` was discarded, published, dropped by
                its owner or began again: ``upload`` is an attempt cut short whose late rows arrive
                after the client's next attempt took over (nothing is staged; so a row is never
                twice), or the upload of a writer's run that is over.
            StagingFullError: they do not fit (nothing of ``token`` stays staged).
        """
        size = sum(map(len, rows))
        with self._lock:
            if self._done.get(token) is not upload:
                raise LogLookupError(
                    f"sink log {self.log.name!r}: upload {token!r} was discarded, published or began again "
                    "while its rows arrived; they are not staged"
                )
            if token in self._void:
                return
            if self.staged_bytes + size > self.limit:
                staged, uploads = self.staged_bytes, len(self._uploads)
                self._forget(token)
                raise StagingFullError(
                    f"sink log {self.log.name!r}: staging area full: {staged + size:,} bytes would be "
                    f"staged by {uploads} uploads, the bound is {self.limit:,} (staging_bytes=); "
                    "the rows of one Spark micro-batch must fit: make batches smaller "
                    "(maxRecordsPerBatch on the source) or serve with a larger staging_bytes"
                )
            self._uploads.setdefault(token, []).extend(rows)
            self._sizes[token] = self._sizes.get(token, 0) + size
            self.staged_bytes += size

    def _forget(self, token: str) -> list[bytes]:  # under the lock
        self.staged_bytes -= self._sizes.pop(token, 0)
        return self._uploads.pop(token, [])

    def _remove(self, token: str) -> list[bytes]:  # under the lock
        """Forget ``token`` wholly: its rows, its upload (a late row of it is refused), its owner."""
        self._done.pop(token, None)
        self._owners.pop(token, None)
        self._void.discard(token)
        return self._forget(token)

    def _drop_where(self, owned: Callable[[Owner], bool]) -> None:  # under the lock
        """Drop the uploads whose owner satisfies ``owned(owner)``."""
        for token in [t for t, owner in self._owners.items() if owned(owner)]:
            self._remove(token)
            self.dropped += 1

    def publish(self, writer: str, batch: int, tokens: list[str]) -> concurrent.futures.Future[Any]:
        """Append the staged rows as one batch, once per ``(writer, batch)``; resolves when appended
        (a bounded sink log may first wait for its readers to commit). Published or refused as a
        re-run, it drops the uploads owned by ``(writer, batch)`` it does not name."""
        answer: concurrent.futures.Future[Any] = concurrent.futures.Future()
        with self._lock:
            if (writer, batch) in self._published:
                for token in tokens:
                    self._remove(token)
                self._drop_where(lambda o: o.writer == writer and o.batch == batch)
                self.refused += 1
                answer.set_result({"published": False, "count": 0})
                return answer
            missing = [token for token in tokens if token not in self._uploads]
            if missing:  # never publish a batch with a hole in it
                answer.set_exception(
                    LogLookupError(
                        f"sink log {self.log.name!r}: upload {missing[0]!r} is not staged here: staged "
                        "uploads live in the server's memory, so a restart of the server since the upload "
                        "lost it (or it never came here, or was discarded); batch "
                        f"{batch} of writer {writer!r} is not published, nothing of it was appended, and "
                        "its other uploads stay staged until discarded: upload the batch again and "
                        "publish it (a Spark query restarted from its checkpoint re-runs it)"
                    )
                )
                return answer
            items: list[bytes] = []
            for token in tokens:
                items.extend(self._remove(token))
            self._drop_where(lambda o: o.writer == writer and o.batch == batch)  # those named are gone
            self._published.add((writer, batch))
        done = lambda: answer.set_result({"published": True, "count": len(items)})  # noqa: E731
        self.log.append(items, done, batch=(writer, batch))
        return answer

    def discard(self, tokens: list[str]) -> dict[str, Any]:
        self.drop(tokens)
        return {"discarded": len(tokens), "epoch": self.log.epoch}

    def drop(self, tokens: list[str]) -> int:
        """Forget ``tokens`` (staged or under way); how many of them had rows or an upload here."""
        found = 0
        with self._lock:
            for token in tokens:
                if token in self._uploads or token in self._done:
                    found += 1
                self._remove(token)
        return found

    def staged(self) -> dict[str, tuple[int, Owner | None]]:
        """Each upload staged now (published or discarded ones are not): its rows and owner."""
        with self._lock:
            return {token: (len(rows), self._owners.get(token)) for token, rows in self._uploads.items()}
