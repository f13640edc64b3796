"""``LineSource`` (what ``rstreams serve URL NAME`` reads standard input with) under the TCK.

Its producer thread reads a line only when there is demand; a read that fails ends the
stream with ``on_error`` instead of leaving the subscriber waiting.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any, BinaryIO, cast

from rstreams.api import Publisher
from rstreams.replay._lines import LineSource
from rstreams.tck import PublisherVerification, TestEnvironment

MAX = 2**63 - 1


class _Lines:
    """A file of ``count`` lines, made as they are read (``None``: it never ends)."""

    def __init__(self, count: int | None) -> None:
        self.count = count

    def __iter__(self) -> Iterator[bytes]:
        numbers = itertools.count() if self.count is None else range(self.count)
        return (f"line {n}\n".encode() for n in numbers)


class _BrokenPipe:
    """A file whose first read fails."""

    def __iter__(self) -> Iterator[bytes]:
        raise OSError("read failed on purpose")


class TestLineSource(PublisherVerification):
    def create_publisher(self, elements: int) -> Publisher[Any]:
        return LineSource(cast(BinaryIO, _Lines(None if elements == MAX else elements)))

    def create_failed_publisher(self) -> Publisher[Any]:
        return LineSource(cast(BinaryIO, _BrokenPipe()))

    def create_env(self) -> TestEnvironment:
        return TestEnvironment(default_timeout=2.0, default_no_signals_timeout=0.05)
