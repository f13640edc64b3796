"""A served stream takes the batches of rstreams' own sources and operators (``on_next_many``):
the peer receives exactly the bytes that one ``on_next`` per element would have sent (the same
publishers served by a ServingStream without the batch signal)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rstreams
from rstreams import UNBOUNDED
from rstreams.net import fixed_size, with_codec
from rstreams.net._serving import ServingStream
from rstreams.wire import Cancel, Frame, Request, Subscribe
from testkit.net import BytePeer, serve_plan

pytestmark = pytest.mark.timeout(30)

N = 3000  # more than one refill's batch (MAX_BATCH)


def _word(i: int) -> bytes:
    return b"x" * (i % 7) + i.to_bytes(4, "big")


def _offer() -> dict[str, Any]:
    return {
        "batched": lambda params: rstreams.range(N).map(_word),
        "fixed": with_codec(
            lambda params: rstreams.range(N).map(lambda i: i.to_bytes(4, "big")), fixed_size(4)
        ),
        "wrong": with_codec(
            lambda params: rstreams.range(N).map(_word), fixed_size(4)
        ),  # rule-breaking sizes
    }


Plan = Callable[[str], list[list[Frame]]]


def _a_few_at_a_time(name: str) -> list[list[Frame]]:
    plan: list[list[Frame]] = [[Subscribe(publisher=name, subscriber=1, initial_demand=5)]]
    plan += [[Request(subscriber=1, demand=700)] for _ in range(5)]
    return plan


PLANS: dict[str, Plan] = {
    "unbounded": lambda name: [[Subscribe(publisher=name, subscriber=1, initial_demand=UNBOUNDED)]],
    "exactly all": lambda name: [[Subscribe(publisher=name, subscriber=1, initial_demand=N)]],
    "a few at a time": _a_few_at_a_time,
    "cancelled half way": lambda name: [
        [Subscribe(publisher=name, subscriber=1, initial_demand=1500)],
        [Cancel(subscriber=1)],
    ],
}


def _run(plan: list[list[Frame]]) -> BytePeer:
    return serve_plan(_offer(), plan)


@pytest.mark.parametrize("plan", PLANS.values(), ids=PLANS.keys())
@pytest.mark.parametrize("name", ["batched", "fixed", "wrong"])
def test_batches_go_out_as_single_elements_would(
    plan: Plan, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    batched = _run(plan(name))
    with monkeypatch.context() as patch:
        patch.delattr(ServingStream, "on_next_many")  # the operators then call on_next per element
        single = _run(plan(name))
    assert batched.received == single.received
    assert batched.events == single.events


def test_the_serving_stream_takes_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """The operators above hand it lists: fewer calls than elements (so the test above compares two paths)."""
    calls: list[int] = []
    take = ServingStream.on_next_many

    def counting(self: ServingStream, items: list[Any]) -> None:
        calls.append(len(items))
        take(self, items)

    monkeypatch.setattr(ServingStream, "on_next_many", counting)
    _run(PLANS["exactly all"]("batched"))
    assert sum(calls) == N
    assert len(calls) < N // 10
