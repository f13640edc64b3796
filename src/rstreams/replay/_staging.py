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
* **Runs in the order they started.** A writer may announce its run as it starts, before its
  uploads (``NAME?discard=&run=R``, :meth:`Staging.start`; the Spark sink's driver does, as it
  builds the writer for the tasks). An upload of an announced run the staging area has not seen,
  when ``W``'s newest run was announced after it, is a late task of an earlier run (its driver
  killed, its upload begun after the restarted run's first): it keeps none of its rows, and
  drops nothing. Runs never announced are ordered by their first upload, as above.
* An upload owned by a ``(W, B)`` already published keeps none of its rows either (its publish
  could only be refused: the re-run of a batch whose commit reached the server).

Uploads that name no owner (older clients, ``NAME?stage=T``) are staged as before, until
published or discarded. Runs seen and batches published are remembered for the server's
lifetime (published batches on disk too, for a file-backed sink log).

**Idle uploads.** The rules above cannot drop the uploads of a writer that never comes back (a
query restarted with a new checkpoint, a ``df.write`` or ``rstreams publish`` killed before its
publish): no upload or publish of it will name them. An upload with no activity for ``ttl``
seconds (``staging_ttl=``; activity: its start, its rows arriving, a ``NAME?staged=T`` or a
publish naming it) is dropped, with a warning on the logger ``rstreams.replay`` naming its
token, owner and rows, and counted in :attr:`Staging.expired`; an upload still running then
fails with that reason. The check runs at most once a second of ``clock``, at the staging
area's requests, and on the server's timer (:meth:`Staging.expire`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from rstreams.errors import ReactiveStreamsError
from rstreams.replay._cursor import LogLookupError
from rstreams.replay._log import ReplayLog

__all__ = [
    "STAGING_BYTES",
    "STAGING_TTL",
    "Owner",
    "Staging",
    "StagingFullError",
    "batch_param",
    "check_ttl",
    "owner_of",
]

STAGING_BYTES = 256 * 1024 * 1024
"""Default bound of a sink log's staged (uploaded, not yet published) rows, in bytes."""
STAGING_TTL = 6 * 3600.0
"""Default seconds without activity after which a staged upload is dropped (``staging_ttl=``)."""
_SWEEP_EVERY = 1.0
"""Seconds of the staging area's clock between two checks for idle uploads at its requests."""
_log = logging.getLogger("rstreams.replay")
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


_Idle = tuple[str, Owner | None, int, concurrent.futures.Future[int] | None]
"""An upload the check for idle ones dropped: its token, owner, rows and unfinished count."""


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


def check_ttl(ttl: object) -> float | None:
    """``staging_ttl=`` as seconds, ``None`` for never (given as ``None`` or 0).

    Raises:
        ValueError: not ``None`` and not a finite number >= 0 (the message names the option).
    """
    if ttl is None:
        return None
    if type(ttl) not in (int, float) or not 0 <= float(ttl) < float("inf"):  # type: ignore[arg-type]
        raise ValueError(f"staging_ttl= needs seconds >= 0 (None or 0: never), got {ttl!r}")
    seconds = float(ttl)  # type: ignore[arg-type]
    return seconds if seconds > 0 else None


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

    def __init__(
        self,
        log: ReplayLog,
        limit: int,
        ttl: float | None = STAGING_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.limit = limit
        self.ttl = check_ttl(ttl)
        self._clock = clock
        self._touched: dict[str, float] = {}  # token -> its last activity (the module docstring)
        self._swept = -float("inf")  # the clock of its last check for idle uploads
        self._lock = threading.Lock()
        self._uploads: dict[str, list[bytes]] = {}
        self._sizes: dict[str, int] = {}
        self.staged_bytes = 0
        self._done: dict[str, concurrent.futures.Future[int]] = {}
        self._owners: dict[str, Owner] = {}
        self._void: set[str] = set()  # uploads whose rows are counted and kept nowhere
        self._runs: dict[str, tuple[str, set[str]]] = {}  # writer -> (its newest run, the runs seen)
        self._started: dict[str, int] = {}  # run -> the order in which it was announced (start)
        log.keep_batches()
        self._published: set[tuple[str, int]] = log.batches()  # appended, or waiting to be
        self.refused = 0  # publishes of a batch already published (a re-run batch)
        self.dropped = 0  # uploads dropped by their owners (the module docstring), not by a discard
        self.expired = 0  # uploads dropped after ttl seconds without activity

    def future(self, token: str) -> concurrent.futures.Future[int]:
        """The upload under ``token``'s count, resolved when it completes (the reverse
        subscription's, whose ``NAME?staged=T`` may come before or after its header)."""
        with self._request(token):
            return self._done.setdefault(token, concurrent.futures.Future())

    def own(self, token: str, owner: Owner | None) -> None:
        """The upload under ``token`` is ``owner``'s (the reverse subscription's header names it):
        a new run drops its writer's uploads of other runs, and an upload of a stale run or of a
        batch already published keeps no rows (the module docstring)."""
        with self._request(token):
            self._own(token, owner)

    def start(self, run: str) -> None:
        """Run ``run`` of a writer starts (``NAME?discard=&run=R``, before its uploads): an upload
        of a run announced before it that comes after its first is refused (the module docstring).
        A run announced again keeps its first place."""
        with self._lock:
            self._started.setdefault(run, len(self._started))

    def begin(self, token: str, owner: Owner | None = None) -> concurrent.futures.Future[int]:
        """A new upload under ``token`` (a channel, PROTOCOL.md §21.8) by ``owner``: its count's
        future, which replaces the token's earlier one. An earlier upload still running can then
        stage no more (:meth:`add`)."""
        fresh: concurrent.futures.Future[int] = concurrent.futures.Future()
        with self._request(token):
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
            started, latest = self._started.get(owner.run), self._started.get(newest)
            if owner.run not in seen and (started is None or latest is None or started >= latest):
                seen.add(owner.run)  # a new run: the earlier ones' drivers are gone
                self._runs[owner.writer] = (owner.run, seen)
                self._drop_where(lambda o: o.writer == owner.writer and o.run not in (None, owner.run))
            elif owner.run != newest:  # seen before, or announced before the newest: a run over
                seen.add(owner.run)
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
            self._touch(token)

    def _forget(self, token: str) -> list[bytes]:  # under the lock
        self.staged_bytes -= self._sizes.pop(token, 0)
        return self._uploads.pop(token, [])

    def _remove(self, token: str) -> list[bytes]:  # under the lock
        """Forget ``token`` wholly: its rows, its upload (a late row of it is refused), its owner."""
        self._done.pop(token, None)
        self._owners.pop(token, None)
        self._void.discard(token)
        self._touched.pop(token, None)
        return self._forget(token)

    def _touch(self, token: str) -> None:  # under the lock
        if self.ttl is not None:
            self._touched[token] = self._clock()

    def expire(self) -> int:
        """Drop the uploads without activity for ``ttl`` seconds (the module docstring), now; how
        many. The server's timer calls it, so an idle server frees them too."""
        with self._request(now=True) as idle:
            return len(idle)

    @contextlib.contextmanager
    def _request(self, *active: str, named: Iterable[str] = (), now: bool = False) -> Iterator[list[_Idle]]:
        """A request's turn on the staging area: the lock, and in it the check for idle uploads
        (:meth:`_sweep`; ``now``: even within a second of the last one) with the activity the
        request is: ``named`` tokens staged here are touched before it (a publish naming an upload
        takes one idle past the ttl that no check has dropped yet), ``active`` ones after it (an
        upload idle past the ttl is dropped, then its token is active anew). Once the lock is
        released, whether the body raised or not, :meth:`_tell` says what the check dropped (the
        list yielded)."""
        idle: list[_Idle] = []
        try:
            with self._lock:
                for token in named:
                    if token in self._touched:
                        self._touch(token)
                if now:
                    self._swept = -float("inf")
                idle.extend(self._sweep())
                for token in active:
                    self._touch(token)
                yield idle
        finally:
            self._tell(idle)

    def _sweep(self) -> list[_Idle]:
        """Remove the idle uploads, at most once a second (under the lock); each one's token,
        owner, rows and unfinished count, for :meth:`_tell` to say outside the lock."""
        ttl = self.ttl
        now = self._clock()
        if ttl is None or 0 <= now - self._swept < _SWEEP_EVERY:  # (a clock set back: checked)
            return []
        self._swept = now
        idle = []
        for token in [t for t, at in self._touched.items() if now - at > ttl]:
            owner, running = self._owners.get(token), self._done.get(token)
            idle.append((token, owner, len(self._remove(token)), running))
            self.expired += 1
        return idle

    def _tell(self, idle: list[_Idle]) -> None:
        """Log each upload :meth:`_sweep` dropped, and fail the count of one still under way."""
        for token, owner, rows, running in idle:
            who = "no owner" if owner is None else f"writer {owner.writer!r}, batch {owner.batch}"
            if owner is not None and owner.run is not None:
                who += f", run {owner.run!r}"
            said = (
                f"sink log {self.log.name!r}: upload {token!r} ({who}; {rows} rows) dropped after "
                f"{self.ttl:g} s without activity (staging_ttl=)"
            )
            _log.warning("%s", said)
            if running is not None and not running.done():
                running.set_exception(LogLookupError(said))

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
        with self._request(named=tokens):  # a publish naming an upload is activity of it
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
                        "lost it (or it never came here, was discarded, or was dropped after "
                        "staging_ttl= seconds without activity); batch "
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
        with self._request():
            for token in tokens:
                if token in self._uploads or token in self._done:
                    found += 1
                self._remove(token)
        return found

    def staged(self) -> dict[str, tuple[int, Owner | None]]:
        """Each upload staged now (published or discarded ones are not): its rows and owner."""
        with self._request():
            return {token: (len(rows), self._owners.get(token)) for token, rows in self._uploads.items()}
