"""examples/tck_example.py's Countdown is offered as a small *correct* publisher to copy:
its signals stay serial (rule 1.3) even when request(n <= 0) comes from another thread."""

from __future__ import annotations

import threading
from types import ModuleType
from typing import Any

from rstreams.api import Subscription
from testkit import patience
from testkit.scripts import load_script

WAIT = 10.0


def _example() -> ModuleType:
    return load_script("examples/tck_example.py", "example_tck_example")


class _Blocking:
    """Holds its first on_next until released; records whether on_error overlapped it."""

    def __init__(self) -> None:
        self.subscription: Subscription | None = None
        self.entered = threading.Event()
        self.release = threading.Event()
        self.in_on_next = False
        self.errors: list[tuple[BaseException, bool]] = []

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription

    def on_next(self, item: Any) -> None:
        self.in_on_next = True
        self.entered.set()
        assert patience.wait(self.release, WAIT)
        self.in_on_next = False

    def on_error(self, error: BaseException) -> None:
        self.errors.append((error, self.in_on_next))

    def on_complete(self) -> None:
        pass


def test_an_illegal_request_from_another_thread_does_not_overlap_on_next() -> None:
    countdown = _example().Countdown(3)
    subscriber = _Blocking()
    countdown.subscribe(subscriber)
    assert subscriber.subscription is not None
    emitting = threading.Thread(target=subscriber.subscription.request, args=(1,))
    emitting.start()
    assert patience.wait(subscriber.entered, WAIT)
    subscriber.subscription.request(0)  # while on_next runs on the other thread
    assert subscriber.errors == [], "rule 1.3: on_error was signalled while on_next was running"
    subscriber.release.set()
    patience.join(emitting, WAIT)
    assert len(subscriber.errors) == 1
    error, overlapped = subscriber.errors[0]
    assert isinstance(error, ValueError) and "3.9" in str(error) and not overlapped
