"""A request/response's answer read whole (the core's one ``Answer`` event) reaches any Subscriber
as its signals: ``on_next`` with the element, then ``on_complete``, as three events would."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscription
from rstreams.net import Connection
from testkit.bound import within
from testkit.net import connection, memory_pair, pump_of

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


def _echo_pair() -> Connection:
    server = connection(
        client=False, offer={"echo": lambda params: rstreams.just(params.get("d", "e").encode())}
    )
    client = connection(client=True)
    memory_pair(server, client)
    return client


class _Recorder:
    """Requests one element; records its signals, and its subscription's id at each."""

    def __init__(self, again: Connection | None = None) -> None:
        self.signals: list[tuple[str, Any]] = []
        self.again = again  # subscribe once more from on_next, on this connection
        self.inner: _Recorder | None = None
        self.finished = asyncio.get_running_loop().create_future()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.signals.append(("on_subscribe", subscription.sid))  # type: ignore[attr-defined]
        subscription.request(1)

    def on_next(self, item: bytes) -> None:
        self.signals.append(("on_next", item))
        if self.again is not None:
            self.inner = _Recorder()
            self.again.publisher("echo?d=inner").subscribe(self.inner)

    def on_error(self, error: BaseException) -> None:
        self.signals.append(("on_error", error))
        self.finished.set_result(None)

    def on_complete(self) -> None:
        self.signals.append(("on_complete", None))
        self.finished.set_result(None)


async def test_an_answer_is_on_next_then_on_complete_for_any_subscriber() -> None:
    client = _echo_pair()
    assert await within(client.request("echo?d=x")) == b"x"  # the hellos exchanged
    answered: list[object] = []
    core = pump_of(client).outbox.core
    receive = core.receive

    def spy(data: Any, limit: int = 0) -> list[Any]:
        events = receive(data, limit)
        answered.extend(events)
        return events

    core.receive = spy  # type: ignore[method-assign]
    recorder = _Recorder()
    client.publisher("echo?d=12345678").subscribe(recorder)
    await within(recorder.finished)
    core.receive = receive  # type: ignore[method-assign]
    assert [type(e).__name__ for e in answered] == ["Answer"]  # read whole: the one event
    assert recorder.signals == [("on_subscribe", 1), ("on_next", b"12345678"), ("on_complete", None)]
    await client.aclose()


async def test_a_subscribe_from_on_next_does_not_take_the_answered_id() -> None:
    """The answered subscription's id is free only once its completion is handled, after
    ``on_next`` returned: a subscribe made in ``on_next`` gets another id (bytes as before)."""
    client = _echo_pair()
    assert await within(client.request("echo")) == b"e"
    outer = _Recorder(again=client)
    client.publisher("echo?d=outer").subscribe(outer)
    await within(outer.finished)
    assert outer.inner is not None
    await within(outer.inner.finished)
    assert outer.signals == [("on_subscribe", 1), ("on_next", b"outer"), ("on_complete", None)]
    assert outer.inner.signals == [("on_subscribe", 2), ("on_next", b"inner"), ("on_complete", None)]
    await client.aclose()
