"""``LineSource``: the lines of a binary file as a Publisher, read only on demand (``rstreams serve``)."""

from __future__ import annotations

import threading
from typing import BinaryIO

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.flow._flow import Flow
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
        subscription = _LineSubscription(self._file, subscriber)
        subscriber.on_subscribe(subscription)
        threading.Thread(target=subscription.run, name="rstreams-lines", daemon=True).start()


class _LineSubscription(Subscription):
    def __init__(self, file: BinaryIO, subscriber: Subscriber[bytes]) -> None:
        self._file = file
        self._subscriber = subscriber
        self._demand = 0
        self._cancelled = False
        self._cond = threading.Condition()

    def request(self, n: int) -> None:
        problem = demand.invalid(n)
        with self._cond:
            if problem is None:
                self._demand = demand.add(self._demand, n)
            else:
                self._cancelled = True
            self._cond.notify()
        if problem is not None:
            self._subscriber.on_error(problem)  # rule 3.9

    def cancel(self) -> None:
        with self._cond:
            self._cancelled = True
            self._cond.notify()

    def run(self) -> None:
        for line in self._file:
            with self._cond:
                self._cond.wait_for(lambda: self._demand > 0 or self._cancelled)
                if self._cancelled:
                    return
                self._demand -= 1
            self._subscriber.on_next(line.rstrip(b"\r\n"))
        self._subscriber.on_complete()
