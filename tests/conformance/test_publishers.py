"""The conformance publishers signal the project's typed errors, with the texts the bindings share."""

from __future__ import annotations

import pytest

from rstreams.api import Subscriber, Subscription
from rstreams.conformance import conformance_publishers
from rstreams.conformance._publishers import ERROR_TEXT, FailedOnPurposeError
from rstreams.errors import InvalidDemandError, ReactiveStreamsError


class _Recorder(Subscriber[bytes]):
    def __init__(self) -> None:
        self.subscription: Subscription | None = None
        self.elements: list[bytes] = []
        self.errors: list[BaseException] = []
        self.completed = False

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription

    def on_next(self, item: bytes) -> None:
        self.elements.append(item)

    def on_error(self, error: BaseException) -> None:
        self.errors.append(error)

    def on_complete(self) -> None:
        self.completed = True


def _subscribed(path: str, params: dict[str, str]) -> tuple[_Recorder, Subscription]:
    publisher = conformance_publishers()(path, params)
    assert publisher is not None
    recorder = _Recorder()
    publisher.subscribe(recorder)  # type: ignore[union-attr]
    assert recorder.subscription is not None
    return recorder, recorder.subscription


@pytest.mark.timeout(10)
@pytest.mark.parametrize("n", [0, -1])
def test_a_non_positive_request_signals_invalid_demand(n: int) -> None:
    """Rule 3.9: request(n <= 0) ends the stream with InvalidDemandError, still a ValueError."""
    recorder, subscription = _subscribed("conformance/range", {"n": "3"})
    subscription.request(n)
    (error,) = recorder.errors
    assert isinstance(error, InvalidDemandError) and isinstance(error, ValueError)
    assert error.n == n and str(error).startswith("rule 3.9: request(n) needs an int n > 0")
    subscription.request(1)
    assert recorder.elements == [] and not recorder.completed


@pytest.mark.timeout(10)
def test_the_error_source_fails_on_purpose_with_the_shared_text() -> None:
    """``conformance/error?after=2``: two elements, then FailedOnPurposeError (a RuntimeError)."""
    recorder, subscription = _subscribed("conformance/error", {"after": "2"})
    subscription.request(5)
    assert len(recorder.elements) == 2
    (error,) = recorder.errors
    assert type(error) is FailedOnPurposeError
    assert issubclass(FailedOnPurposeError, ReactiveStreamsError) and issubclass(
        FailedOnPurposeError, RuntimeError
    )
    assert str(error) == ERROR_TEXT == "conformance/error: the publisher failed on purpose"
