"""Numbers of replay logs for a server's snapshot: elements and bytes held, each reader's
committed position and lag behind the end, what was trimmed, what sink logs hold staged and
the staged uploads they dropped after ``staging_ttl`` seconds without activity.

Theory of operation. :func:`replay_metrics` returns a reader for ``Server.add_metrics``; it
reads each log's public state when a snapshot is taken (a scrape, a ``rstreams/stats``
tick), so serving a log costs nothing more. It knows logs by what they answer (the
:class:`LogLike` protocol), not by importing :mod:`rstreams.replay`, which sits above.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

__all__ = ["LogLike", "StagingLike", "replay_metrics"]


class LogLike(Protocol):
    """What :func:`replay_metrics` reads of a log (:class:`rstreams.replay.ReplayLog` has it)."""

    capacity: int

    @property
    def first(self) -> int: ...
    @property
    def end(self) -> int: ...
    def held_bytes(self) -> int: ...
    def readers(self) -> dict[str, int]: ...
    def pending(self) -> dict[str, int]: ...


class StagingLike(Protocol):
    """A sink log's staging area (``replay_offer(...).stagings[name]``)."""

    staged_bytes: int
    expired: int  # uploads dropped after staging_ttl seconds without activity


def replay_metrics(
    logs: Mapping[str, LogLike], stagings: Mapping[str, StagingLike] | None = None
) -> Callable[[], dict[str, Any]]:
    """A reader for ``server.add_metrics("replay", ...)`` over ``logs`` (name -> log) and the
    sink logs' ``stagings`` (name -> staging area, as ``replay_offer(...).stagings`` holds)."""
    stagings = stagings or {}

    def read() -> dict[str, Any]:
        numbers: dict[str, Any] = {}
        for name, log in logs.items():
            first, end = log.first, log.end
            readers = log.readers()
            numbers[name] = {
                "first": first,
                "end": end,
                "elements": end - first,
                "bytes": log.held_bytes(),
                "capacity": log.capacity,
                "trimmed": first,
                "readers": {reader: {"position": at, "lag": end - at} for reader, at in readers.items()},
                "pending": len(log.pending()),
            }
            staging = stagings.get(name)
            if staging is not None:
                numbers[name]["staged_bytes"] = staging.staged_bytes
                numbers[name]["expired_uploads"] = staging.expired
        return {"logs": numbers}

    return read
