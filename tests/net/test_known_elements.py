"""Serving ``just(...)`` and ``empty()`` without subscribing to them (``ServingStream.serve_known``):
the peer receives exactly the bytes the Publisher's own subscription would have sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED
from rstreams.flow._flow import known_elements
from rstreams.net import fixed_size, with_codec
from rstreams.wire import Cancel, Frame, OnComplete, OnNext, OnNextPacked, OnSubscribe, Request, Subscribe
from testkit.net import BytePeer, serve_plan

pytestmark = pytest.mark.timeout(30)

WORDS = (b"a", b"bb", b"ccc")
FIXED = (b"1234", b"5678", b"9abc")


def _offer() -> dict[str, Any]:
    """Each known publisher beside the same elements from an iterator (served by subscribing)."""
    return {
        "known": rstreams.just(*WORDS),
        "iterated": rstreams.from_iterable(list(WORDS)),
        "empty": rstreams.empty(),
        "empty-iterated": rstreams.from_iterable([]),
        "fixed": with_codec(rstreams.just(*FIXED), fixed_size(4)),
        "fixed-iterated": with_codec(rstreams.from_iterable(list(FIXED)), fixed_size(4)),
        "factory": lambda params: rstreams.just(*WORDS),
        "one": rstreams.just(b"a"),
        "one-iterated": rstreams.from_iterable([b"a"]),
        "one-fixed": with_codec(rstreams.just(b"1234"), fixed_size(4)),
        "one-fixed-iterated": with_codec(rstreams.from_iterable([b"1234"]), fixed_size(4)),
    }


Plan = Callable[[str], list[list[Frame]]]
"""The frames the peer sends for a publisher name, one list per loop turn (written together)."""

PLANS: dict[str, Plan] = {
    "one at a time": lambda name: [
        [Subscribe(publisher=name, subscriber=1, initial_demand=1)],
        [Request(subscriber=1, demand=1)],
        [Request(subscriber=1, demand=1)],
        [Request(subscriber=1, demand=1)],
    ],
    "exactly all": lambda name: [[Subscribe(publisher=name, subscriber=1, initial_demand=3)]],
    "unbounded": lambda name: [[Subscribe(publisher=name, subscriber=1, initial_demand=UNBOUNDED)]],
    "none, then all": lambda name: [
        [Subscribe(publisher=name, subscriber=1, initial_demand=0)],
        [Request(subscriber=1, demand=5)],
    ],
    "cancelled before any": lambda name: [
        [Subscribe(publisher=name, subscriber=1, initial_demand=0)],
        [Cancel(subscriber=1)],
    ],
    "cancelled after one": lambda name: [
        [Subscribe(publisher=name, subscriber=1, initial_demand=1)],
        [Cancel(subscriber=1)],
    ],
    "cancelled with its subscribe": lambda name: [
        [Subscribe(publisher=name, subscriber=1, initial_demand=2), Cancel(subscriber=1)],
    ],
    "two in one read": lambda name: [
        [
            Subscribe(publisher=name, subscriber=1, initial_demand=1),
            Subscribe(publisher=name, subscriber=2, initial_demand=5),
        ],
        [Request(subscriber=1, demand=5)],
    ],
}


def _run(plan: list[list[Frame]]) -> BytePeer:
    return serve_plan(_offer(), plan)


@pytest.mark.parametrize("plan", PLANS.values(), ids=PLANS.keys())
@pytest.mark.parametrize(
    ("known", "iterated"),
    [
        ("known", "iterated"),
        ("empty", "empty-iterated"),
        ("fixed", "fixed-iterated"),
        ("factory", "iterated"),
        ("one", "one-iterated"),
        ("one-fixed", "one-fixed-iterated"),
    ],
)
def test_known_elements_go_out_as_their_subscription_would_send_them(
    plan: Plan, known: str, iterated: str
) -> None:
    served = _run(plan(known))
    subscribed = _run(plan(iterated))
    if known.startswith("one") and plan is PLANS["two in one read"]:
        # A one-element answer goes out whole at its subscribe (ServingTable._answer): the
        # next subscribe's onSubscribe follows it rather than coming before its onNext.
        for sid in (1, 2):
            assert _of(served, sid) == _of(subscribed, sid)
        return
    assert served.received == subscribed.received
    assert served.events == subscribed.events


def _of(peer: BytePeer, sid: int) -> list[Any]:
    return [event for event in peer.events if getattr(event, "subscriber", None) == sid]


def test_a_lone_request_is_answered_whole_in_the_bytes_of_its_subscription() -> None:
    """``just(x)`` asked for with demand 1: onSubscribe, onNext and onComplete, byte for byte."""
    plan = PLANS["exactly all"]
    for known, iterated in (("one", "one-iterated"), ("one-fixed", "one-fixed-iterated")):
        served = _run(plan(known))
        assert served.received == _run(plan(iterated)).received
        assert [type(event) for event in served.events[1:]] == [OnSubscribe, OnNext, OnComplete]


def test_the_end_goes_with_the_last_element_without_spare_demand() -> None:
    """Rule 1.5: three elements, demand 3: onComplete follows the third at once."""
    peer = _run(PLANS["exactly all"]("known"))
    assert [type(event) for event in peer.events[1:]] == [OnSubscribe, OnNext, OnNext, OnNext, OnComplete]
    assert [event.element for event in peer.of(OnNext)] == list(WORDS)


def test_fixed_size_known_elements_are_packed() -> None:
    peer = _run(PLANS["exactly all"]("fixed"))
    [packed] = peer.of(OnNextPacked)
    assert (packed.count, packed.elements) == (3, b"".join(FIXED))
    assert len(peer.of(OnComplete)) == 1


def test_which_publishers_have_known_elements() -> None:
    assert known_elements(rstreams.just(b"x", b"y")) == (b"x", b"y")
    assert known_elements(rstreams.empty()) == ()
    assert known_elements(rstreams.from_iterable([b"x"])) is None
    assert known_elements(rstreams.just(b"x").map(bytes.upper)) is None
    assert known_elements(rstreams.error(ValueError("no"))) is None
