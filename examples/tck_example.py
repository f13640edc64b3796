"""Run the rstreams TCK against your own Publisher, two ways.

    python examples/tck_example.py          # programmatic: prints the report
    pytest examples/tck_example.py          # pytest: one test per TCK case

The publisher below is a deliberately small, correct, hand-written one: a countdown
that emits from the caller's thread, trampolines re-entrant requests (rule 3.3),
signals request(n <= 0) as on_error (3.9) and saturates demand at 2**63-1 (3.17).
Every signal after on_subscribe comes from the one drain loop, so none overlaps another
even when requests come from several threads (1.3).
"""

from __future__ import annotations

import threading

from rstreams.api import Subscriber
from rstreams.tck import PublisherVerification, verify_publisher

UNBOUNDED = 2**63 - 1


class Countdown:
    """Publishes n, n-1, ..., 1 and completes; each subscriber gets its own countdown."""

    def __init__(self, n: int) -> None:
        self.n = n

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        if subscriber is None:
            raise TypeError("rule 1.9: subscribe(None)")
        _CountdownSubscription(subscriber, self.n).start()


class _CountdownSubscription:
    def __init__(self, subscriber: Subscriber[int], n: int) -> None:
        self.subscriber: Subscriber[int] | None = subscriber
        self.left = n
        self.demand = 0
        self.error: ValueError | None = None  # a bad request's error, for the drain loop to signal
        self.busy = True  # no emission before on_subscribe has returned
        self.lock = threading.Lock()

    def start(self) -> None:
        assert self.subscriber is not None
        self.subscriber.on_subscribe(self)
        if self.left == 0:
            self.finish()
            return
        self.drain()

    def request(self, n: int) -> None:
        if self.subscriber is None:
            return  # after cancel or the end: a no-op (3.6)
        with self.lock:
            if type(n) is not int or n <= 0:  # bool and float too
                self.error = self.error or ValueError(
                    f"rule 3.9: request(n) needs an int n > 0 (non-positive subscription request), got {n!r}"
                )
            else:
                self.demand = min(self.demand + n, UNBOUNDED)
            if self.busy:
                return  # the drain loop in progress will see the new demand
            self.busy = True
        self.drain()

    def cancel(self) -> None:
        self.subscriber = None  # stop, and drop the reference (3.13)

    def drain(self) -> None:
        while True:
            with self.lock:
                subscriber, error = self.subscriber, self.error
                if subscriber is not None and error is not None:
                    self.subscriber = None  # the end: nothing follows the error (1.7)
                elif self.demand == 0 or subscriber is None:
                    self.busy = False
                    return
                else:
                    self.demand -= 1
            if error is not None:
                subscriber.on_error(error)  # from the loop, so never beside an on_next
                return
            subscriber.on_next(self.left)
            self.left -= 1
            if self.left == 0:
                self.finish()
                return

    def finish(self) -> None:
        subscriber, self.subscriber = self.subscriber, None
        if subscriber is not None:
            subscriber.on_complete()


class TestCountdown(PublisherVerification):
    """What pytest collects: every PublisherVerification case against Countdown."""

    def create_publisher(self, elements: int) -> Countdown:
        return Countdown(elements)

    def max_elements_from_publisher(self) -> int:
        return UNBOUNDED - 1


if __name__ == "__main__":
    report = verify_publisher(Countdown)
    # Countdown signals only from its callers' threads, so it has stopped by now; a publisher
    # with threads of its own would stop them first. recheck() then fails a case whose stream
    # broke a rule after the run returned (a late second on_complete, say).
    report = report.recheck()
    print(report)
    raise SystemExit(0 if report.ok else 1)
