"""A publisher that records the demand it is given, for the browser test and the JavaScript
package's end-to-end tests (js/test/fixtures/publishers.py serves it from ``rstreams serve``)."""

from __future__ import annotations

from collections.abc import Callable

from rstreams import demand
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.rules import check_subscriber


class CountingPublisher(Publisher[bytes]):
    """Emits ``element(0)``, ``element(1)``, ... (default ``b"0"``, ``b"1"``, ...) up to ``n``,
    inside ``request``; records the demand it was given.

    ``stats`` holds ``max_outstanding`` (the most demand it ever held at once, i.e. what the
    serving side asked of it, which follows the remote subscriber's demand), ``requested`` and
    ``emitted``.
    """

    def __init__(self, n: int, element: Callable[[int], bytes] = lambda i: str(i).encode()) -> None:
        self.n = n
        self.element = element
        self.stats = {"max_outstanding": 0, "requested": 0, "emitted": 0, "cancelled": False}

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        check_subscriber(subscriber)
        subscriber.on_subscribe(_Counting(self, subscriber))


class _Counting(Subscription):
    def __init__(self, source: CountingPublisher, subscriber: Subscriber[bytes]) -> None:
        self._source = source
        self._subscriber = subscriber
        self._outstanding = 0
        self._emitting = False
        self._done = False

    def request(self, n: int) -> None:
        stats = self._source.stats
        if demand.invalid(n) is not None or self._done:
            return
        self._outstanding = demand.add(self._outstanding, n)
        stats["requested"] += n
        stats["max_outstanding"] = max(stats["max_outstanding"], self._outstanding)
        if self._emitting:  # rule 3.3: a request from inside on_next is served by the loop below
            return
        self._emitting = True
        while self._outstanding > 0 and not self._done:
            if stats["emitted"] >= self._source.n:
                self._done = True
                self._subscriber.on_complete()
                break
            self._outstanding -= 1
            stats["emitted"] += 1
            self._subscriber.on_next(self._source.element(stats["emitted"] - 1))
        self._emitting = False

    def cancel(self) -> None:
        self._done = True
        self._source.stats["cancelled"] = True
