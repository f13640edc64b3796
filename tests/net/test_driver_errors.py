"""The driver under faults: a violation in a read, user code that raises; the connection stays sane."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from rstreams.api import Subscriber, Subscription
from rstreams.errors import set_unhandled_error_hook
from rstreams.net import RemoteStreamError, connect, serve
from rstreams.wire import ClientHello, ConnectionClosed, Side, Subscribe, encode
from rstreams.wire import Connection as Core
from testkit.bound import within
from testkit.net import CountingSource, RecordingHandler, connection, memory_pair, pump_of
from testkit.publishers import Never

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


def goodbye_in(data: bytes) -> str:
    """The reason of the goodbye a client core reads in ``data`` (fails if there is none)."""
    core = Core(Side.CLIENT)
    core.receive_data(data)
    closed = [event for event in core.events_received() if isinstance(event, ConnectionClosed)]
    assert closed, f"no goodbye in {data.hex(' ')}"
    return closed[0].reason


async def test_violation_after_a_subscribe_in_one_read_still_says_goodbye() -> None:
    """hello + subscribe(1) + subscribe(1) in one read: the goodbye (§5.2) is written, nothing raises."""
    server = connection(client=False, offer={"never": Never[bytes]()})
    peer = RecordingHandler()
    memory_pair(server, peer)
    read = b"".join(
        encode(frame)
        for frame in (
            ClientHello(),
            Subscribe(publisher="never", subscriber=1, initial_demand=0),
            Subscribe(publisher="never", subscriber=1, initial_demand=0),
        )
    )
    pump_of(server).data_received(memoryview(read))
    await peer.wait_for(lambda: _has_goodbye(bytes(peer.data)), "the goodbye")
    assert peer.transport is not None
    peer.transport.close()  # as a peer that read the goodbye does: the server's linger ends now
    await within(peer.lost)
    assert "§5" in goodbye_in(bytes(peer.data))
    assert server.closed


def _has_goodbye(data: bytes) -> bool:
    core = Core(Side.CLIENT)
    core.receive_data(data)
    return any(isinstance(event, ConnectionClosed) for event in core.events_received())


class RaisingSource:
    """A Publisher whose Subscription emits ``before`` elements, then raises from request()/cancel()."""

    def __init__(self, *, before: int = 3, cancel_raises: bool = False) -> None:
        self.before = before
        self.cancel_raises = cancel_raises

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        subscriber.on_subscribe(_Raising(self, subscriber))


class _Raising(Subscription):
    def __init__(self, source: RaisingSource, subscriber: Subscriber[bytes]) -> None:
        self.source = source
        self.subscriber = subscriber

    def request(self, n: int) -> None:
        for i in range(min(n, self.source.before)):
            self.subscriber.on_next(bytes([i]))
        raise ValueError("boom in request")

    def cancel(self) -> None:
        if self.source.cancel_raises:
            raise ValueError("boom in cancel")


@pytest.fixture
def unhandled() -> Iterator[list[tuple[BaseException, str]]]:
    reported: list[tuple[BaseException, str]] = []
    previous = set_unhandled_error_hook(lambda error, context: reported.append((error, context)))
    yield reported
    set_unhandled_error_hook(previous)


@pytest.mark.parametrize("cancel_raises", [False, True])
async def test_a_raising_request_fails_only_its_stream(
    unhandled: list[tuple[BaseException, str]], cancel_raises: bool
) -> None:
    """Subscription.request raising (rule 3.16) ends that stream with onError; the connection lives on."""
    offer = {"bad": RaisingSource(cancel_raises=cancel_raises), "good": CountingSource(limit=100)}
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        with pytest.raises(RemoteStreamError) as raised:
            await within(conn.publisher("bad").collect())
        assert "rule 3.16" in raised.value.message and "boom in request" in raised.value.message
        assert raised.value.message.startswith("RuleViolationError: rule 3.16")  # a type of its own
        good = await within(conn.publisher("good").collect())
        assert len(good) == 100
        assert not conn.closed
    contexts = [context for _, context in unhandled]
    assert "_Raising.request" in contexts
    assert ("_Raising.cancel" in contexts) is cancel_raises


async def test_a_raising_subscriber_behind_an_operator_is_reported_by_its_own_name(
    unhandled: list[tuple[BaseException, str]],
) -> None:
    """Rule 2.13 over the network: the report names the user's Subscriber behind ``map``, not the
    operator's inner one the remote subscription delivers to."""
    raised = asyncio.get_running_loop().create_future()

    class Broken(Subscriber[str]):
        def on_subscribe(self, subscription: Subscription) -> None:
            subscription.request(5)

        def on_next(self, item: str) -> None:
            raised.set_result(None)
            raise RuntimeError("broke")

        def on_error(self, error: BaseException) -> None:
            pass

        def on_complete(self) -> None:
            pass

    offer = {"good": CountingSource(limit=3)}
    async with await serve("tcp://127.0.0.1:0", offer) as server, await connect(server.url) as conn:
        conn.publisher("good").map(str).subscribe(Broken())
        await within(raised)
    assert [context for _, context in unhandled] == ["Broken.on_next"]
