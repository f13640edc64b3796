"""A served stream pulls an iterable source's elements in its refill (``puller``) and takes those
that go out as they are into its pack itself: the peer receives exactly the bytes and events that
the signals' way sends (the same publishers served by a ServingStream that requests, whose
elements come through ``on_next`` and ``on_next_many``), for bytes, elements to encode, elements
that are not bytes, wrong sizes and a None, under several demand plans."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED
from rstreams.net import JSON, fixed_size, with_codec
from rstreams.net._serving import ServingStream
from rstreams.wire import Cancel, Frame, Request, Subscribe
from testkit.net import BytePeer, serve_plan

pytestmark = pytest.mark.timeout(30)

N = 1500  # more than one refill's batch (MAX_BATCH)


def _word(i: int) -> bytes:
    return b"x" * (i % 7) + i.to_bytes(4, "big")


def _mixed() -> Iterator[Any]:
    """Bytes, then other buffers among them (sent as their bytes), from a generator."""
    for i in range(N):
        word = _word(i)
        yield bytearray(word) if i % 5 == 3 else memoryview(word) if i % 5 == 4 else word


def _text_at(at: int) -> Iterator[Any]:
    """Bytes, then a str (not an element a stream of bytes can send: the stream fails)."""
    for i in range(N):
        yield "text" if i == at else _word(i)


def _none_at(at: int) -> Iterator[Any]:
    for i in range(N):
        yield None if i == at else _word(i)


def _offer() -> dict[str, Any]:
    return {
        "list": lambda params: rstreams.from_iterable([_word(i) for i in range(N)]),
        "repeat": lambda params: rstreams.from_iterable(_word(i) for i in range(N)),
        "mixed": lambda params: rstreams.from_iterable(_mixed()),
        "text": lambda params: rstreams.from_iterable(_text_at(int(params["at"]))),
        "none": lambda params: rstreams.from_iterable(_none_at(int(params["at"]))),
        "fixed": with_codec(
            lambda params: rstreams.from_iterable([i.to_bytes(4, "big") for i in range(N)]), fixed_size(4)
        ),
        "wrong": with_codec(
            lambda params: rstreams.from_iterable([_word(i) for i in range(N)]), fixed_size(4)
        ),  # rule-breaking sizes
        "json": with_codec(lambda params: rstreams.from_iterable(range(N)), JSON),
    }


NAMES = ["list", "repeat", "mixed", "text?at=0", "text?at=700", "none?at=3", "fixed", "wrong", "json"]

Plan = Callable[[str], list[list[Frame]]]


def _one_at_a_time(name: str) -> list[list[Frame]]:
    plan: list[list[Frame]] = [[Subscribe(publisher=name, subscriber=1, initial_demand=1)]]
    plan += [[Request(subscriber=1, demand=1)] for _ in range(8)]
    return plan


def _a_few_at_a_time(name: str) -> list[list[Frame]]:
    plan: list[list[Frame]] = [[Subscribe(publisher=name, subscriber=1, initial_demand=5)]]
    plan += [[Request(subscriber=1, demand=400)] for _ in range(4)]
    return plan


PLANS: dict[str, Plan] = {
    "one at a time": _one_at_a_time,
    "unbounded": lambda name: [[Subscribe(publisher=name, subscriber=1, initial_demand=UNBOUNDED)]],
    "exactly all": lambda name: [[Subscribe(publisher=name, subscriber=1, initial_demand=N)]],
    "a few at a time": _a_few_at_a_time,
    "cancelled half way": lambda name: [
        [Subscribe(publisher=name, subscriber=1, initial_demand=800)],
        [Cancel(subscriber=1)],
    ],
}


@pytest.mark.parametrize("plan", PLANS.values(), ids=PLANS.keys())
@pytest.mark.parametrize("name", NAMES)
def test_pulled_elements_go_out_as_signalled_ones_would(
    plan: Plan, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pulled = serve_plan(_offer(), plan(name))
    with monkeypatch.context() as patch:
        patch.setattr(ServingStream, "_pulls", False)  # its refill requests: the elements are signalled
        signalled = serve_plan(_offer(), plan(name))
    assert pulled.received == signalled.received
    assert pulled.events == signalled.events


def test_the_serving_stream_pulls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its refill takes the elements without the signals (so the test above compares two ways)."""
    calls: list[str] = []
    monkeypatch.setattr(ServingStream, "on_next", lambda self, item: calls.append("on_next"))
    monkeypatch.setattr(ServingStream, "on_next_many", lambda self, items: calls.append("on_next_many"))
    peer: BytePeer = serve_plan(_offer(), PLANS["exactly all"]("list"))
    assert calls == []
    assert len(peer.events) > N
