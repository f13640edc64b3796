"""``LineSource``: the lines of a binary file as a Publisher, read only on demand (``rstreams serve``)."""

from __future__ import annotations

from typing import BinaryIO

from rstreams.api import Subscriber
from rstreams.flow._flow import Flow
from rstreams.flow._threaded import ThreadedSubscription
from rstreams.rules import check_subscriber

__all__ = ["LineSource"]


class LineSource(Flow[bytes]):
    """The lines of a binary file (without line ends), read by a thread only on demand.

    A pipe's writer is therefore held back by the reader's pace (backpressure to the shell).
    One subscription; end of file completes it.
    """

    def __init__(self, file: BinaryIO) -> None:
        self._file = file

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        check_subscriber(subscriber)
        _LineSubscription(self._file, subscriber).begin("rstreams-lines")


class _LineSubscription(ThreadedSubscription[bytes]):
    def __init__(self, file: BinaryIO, subscriber: Subscriber[bytes]) -> None:
        super().__init__(subscriber)
        self._file = file

    def run(self) -> None:
        for line in self._file:
            if not self.take(1):
                return
            self.subscriber.on_next(line.rstrip(b"\r\n"))
        self.subscriber.on_complete()
