"""Split channel input on real sockets (extension input-parts, PROTOCOL.md §21.6): large input
elements arrive whole, demand counts elements, the limits of split elements hold, and peers
without the extension keep the 64 KiB bound."""

from __future__ import annotations

import itertools
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import RemoteStreamError, connect, serve
from rstreams.net._outbox import WRITE_LIMIT
from rstreams.wire import (
    ConnectionClosed,
    ConnectionConfig,
    ExtensionMessage,
    ExtensionReceived,
    LimitExceededError,
    OnSubscribe,
    Subscribe,
)
from rstreams.wire._channels import (
    CHANNEL,
    INPUT_COMPLETE,
    INPUT_NEXT,
    INPUT_NEXT_PART,
    INPUT_REQUEST,
    decode_channel_message,
    encode_channel_message,
)
from rstreams.wire.extensions import CHANNELS, INPUT_PARTS
from testkit import bound
from testkit.net import CountingSource, RawPeer
from testkit.recording import RecordingSubscriber

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

WAIT = 20.0
OLD = ConnectionConfig(disabled_extensions=frozenset({INPUT_PARTS.id}))
BIG = bytes(range(256)) * 800  # 200 KiB: more than one inputNext can hold (64 KiB)


async def within(awaitable: Any) -> Any:
    return await bound.within(awaitable, WAIT)


def echo(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
    return source


def lengths(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
    return rstreams.from_publisher(source).map(lambda element: str(len(element)).encode())


def _message(kind: int, sid: int, rest: bytes | int = b"") -> ExtensionMessage:
    return ExtensionMessage(type=kind, payload=encode_channel_message(kind, sid, rest))


async def test_large_input_elements_arrive_whole_between_small_ones() -> None:
    elements = [b"a", BIG, b"", bytes(1 << 20), b"z" * 65_536]
    async with (
        await serve("tcp://127.0.0.1:0", {}, channels={"echo": echo}) as server,
        await connect(server.url) as conn,
    ):
        assert await within(conn.channel("echo", rstreams.from_iterable(elements)).collect()) == elements


async def test_large_input_elements_are_asked_for_by_bytes() -> None:
    """A window of large elements would hold INPUT_WINDOW of them in the write buffer: the opener
    requests the first alone (its size unknown), then about WRITE_LIMIT's worth at a time."""
    source = CountingSource(size=100_000)
    async with (
        await serve("tcp://127.0.0.1:0", {}, channels={"echo": echo}) as server,
        await connect(server.url) as conn,
    ):
        received = await within(conn.channel("echo", source).take(150).collect())
        await within(source.cancelled.wait())
    assert [int.from_bytes(e, "big") for e in received] == list(range(1, 151))
    assert len(source.requests) > 1 and source.requests[0] == 1
    assert max(source.requests) <= WRITE_LIMIT // 100_000


@pytest.mark.parametrize(
    ("server_config", "client_config"), [(OLD, None), (None, OLD)], ids=["old-server", "old-client"]
)
async def test_without_the_extension_a_large_input_element_fails_as_before(
    server_config: ConnectionConfig | None, client_config: ConnectionConfig | None
) -> None:
    async with (
        await serve("tcp://127.0.0.1:0", {}, channels={"n": lengths}, config=server_config) as server,
        await connect(server.url, config=client_config) as conn,
    ):
        assert await within(conn.channel("n", rstreams.from_iterable([b"ab", b"c"])).collect()) == [
            b"2",
            b"1",
        ]
        with pytest.raises(RemoteStreamError, match=r"max_string_length - 10 .*input-parts \(id 9\)"):
            await within(conn.channel("n", rstreams.from_iterable([b"ab", BIG])).collect())


async def test_a_joined_input_element_above_max_element_size_ends_that_input_only() -> None:
    config = ConnectionConfig(max_element_size=100_000)
    seen: list[BaseException] = []

    def watch(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        return rstreams.from_publisher(source).do_on_error(seen.append).map(lambda e: str(len(e)).encode())

    async with (
        await serve("tcp://127.0.0.1:0", {}, channels={"n": watch}, config=config) as server,
        await connect(server.url) as conn,
    ):
        with pytest.raises(RemoteStreamError, match=r"grows past max_element_size=100000"):
            await within(conn.channel("n", rstreams.from_iterable([b"ab", BIG])).collect())
        assert isinstance(seen[0], LimitExceededError) and seen[0].limit == "max_element_size"
        assert await within(conn.channel("n", rstreams.from_iterable([b"abc"])).collect()) == [b"3"]


# -- the receiving side, byte by byte ---------------------------------------------------------------
class Inputs:
    """A channel factory whose input's Subscriber requests ``initial``; its output never ends."""

    def __init__(self, initial: int = 1) -> None:
        self.input: RecordingSubscriber[bytes] = RecordingSubscriber(initial)

    def __call__(self, source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        source.subscribe(self.input)
        return rstreams.from_iterable(itertools.repeat(b"")).filter(lambda _: False)


async def _opened(
    url: str, *sids: int, extensions: tuple[int, ...] = (CHANNELS.id, INPUT_PARTS.id)
) -> RawPeer:
    """A raw opener with channels ``sids`` open on ``hold``, each granted its first inputRequest."""
    peer = await RawPeer.open(url, extensions=extensions)
    for sid in sids:
        peer.send(_message(CHANNEL, sid), Subscribe(publisher="hold", subscriber=sid, initial_demand=0))
        await peer.read_until(OnSubscribe)
        granted = await peer.read_until(ExtensionReceived)
        assert (
            granted.type == INPUT_REQUEST and decode_channel_message(INPUT_REQUEST, granted.payload)[0] == sid
        )
    return peer


async def test_parts_join_into_one_element_that_uses_one_demand() -> None:
    inputs = Inputs(initial=1)
    async with await serve("tcp://127.0.0.1:0", {}, channels={"hold": inputs}) as server:
        peer = await _opened(server.url, 1)
        peer.send(
            _message(INPUT_NEXT_PART, 1, b"abc"),
            _message(INPUT_NEXT_PART, 1, b""),
            _message(INPUT_NEXT, 1, b"de"),
        )
        peer.send(_message(INPUT_NEXT_PART, 1, b"x"))  # a second element: beyond the demand of 1
        closed = await peer.read_until(ConnectionClosed)
        assert (
            closed.reason == "inputNextPart for subscriber 1 beyond the input demand of 0 (PROTOCOL.md §21.4)"
        )
        assert inputs.input.items == [b"abcde"]
        peer.close()


async def test_input_complete_amid_a_split_element_gets_a_goodbye() -> None:
    async with await serve("tcp://127.0.0.1:0", {}, channels={"hold": Inputs()}) as server:
        peer = await _opened(server.url, 1)
        peer.send(_message(INPUT_NEXT_PART, 1, b"abc"), _message(INPUT_COMPLETE, 1))
        closed = await peer.read_until(ConnectionClosed)
        assert "inputComplete for subscriber 1 with an unfinished split input element" in closed.reason
        assert closed.reason.endswith("(PROTOCOL.md §21.6)")
        peer.close()


async def test_split_input_counts_against_max_parts_in_flight_of_the_connection() -> None:
    config = ConnectionConfig(max_parts_in_flight=1)
    async with await serve("tcp://127.0.0.1:0", {}, channels={"hold": Inputs()}, config=config) as server:
        peer = await _opened(server.url, 1, 2)
        peer.send(_message(INPUT_NEXT_PART, 1, b"a"), _message(INPUT_NEXT_PART, 2, b"b"))
        closed = await peer.read_until(ConnectionClosed)
        assert "more than max_parts_in_flight=1 split elements at once (PROTOCOL.md §11)" in closed.reason
        peer.close()


async def test_a_part_from_a_peer_without_the_extension_is_a_connection_error() -> None:
    async with await serve("tcp://127.0.0.1:0", {}, channels={"hold": Inputs()}) as server:
        peer = await _opened(server.url, 1, extensions=(CHANNELS.id,))
        peer.send(_message(INPUT_NEXT_PART, 1, b"abc"))
        closed = await peer.read_until(ConnectionClosed)
        assert closed.reason == (
            "message type 0xa6 belongs to extension input-parts (id 9), which is not active on this "
            "connection (PROTOCOL.md §4.4)"
        )
        peer.close()
