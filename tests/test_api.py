"""The four interfaces: structural protocols that any object with the methods satisfies."""

from __future__ import annotations

import pytest

import rstreams
from rstreams.api import Processor, Publisher, Subscriber, Subscription


class _Duck:
    def on_subscribe(self, subscription: Subscription) -> None: ...
    def on_next(self, item: int) -> None: ...
    def on_error(self, error: BaseException) -> None: ...
    def on_complete(self) -> None: ...
    def subscribe(self, subscriber: Subscriber[int]) -> None: ...


def test_protocols_are_structural() -> None:
    """Another library's objects are Publishers/Subscribers if they have the methods."""
    duck = _Duck()
    assert isinstance(duck, Subscriber)
    assert isinstance(duck, Publisher)
    assert isinstance(duck, Processor)
    assert not isinstance(object(), Subscription)


def test_flows_are_publishers() -> None:
    """Every rstreams source is a Publisher and a Flow."""
    flow = rstreams.range(0, 3)
    assert isinstance(flow, Publisher)
    assert isinstance(flow, rstreams.Flow)


def test_from_publisher_wraps_foreign_publishers() -> None:
    """from_publisher() turns any Publisher into a Flow with operators; rejects non-publishers."""
    inner = rstreams.range(0, 3)

    class Foreign:
        def subscribe(self, subscriber: Subscriber[int]) -> None:
            inner.subscribe(subscriber)

    flow = rstreams.from_publisher(Foreign())
    assert isinstance(flow, rstreams.Flow)
    assert rstreams.from_publisher(inner) is inner
    with pytest.raises(TypeError, match="subscribe"):
        rstreams.from_publisher(42)  # type: ignore[arg-type]


def test_a_flow_shows_what_it_is_made_of() -> None:
    """``repr`` of a Flow names its Publisher, not the private class that wraps it."""
    assert repr(rstreams.range(3).map(str).filter(bool)) == "<rstreams.Flow: FilterFlow>"
    assert repr(rstreams.just(1)) == "<rstreams.Flow: JustFlow>"
    assert "_Wrapped" not in repr(rstreams.from_publisher(rstreams.range(3)))
