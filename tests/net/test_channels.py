"""Extension channels on real sockets (PROTOCOL.md §21): input and output, demand both ways, ends, peers."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import LocalProtocolError, ResourceClosedError, set_unhandled_error_hook
from rstreams.net import (
    INT64,
    JSON,
    ChannelInputError,
    Connection,
    DecodeError,
    RemoteStreamError,
    connect,
    serve,
)
from rstreams.wire import (
    ConnectionClosed,
    ExtensionMessage,
    ExtensionReceived,
    OnComplete,
    OnError,
    OnNext,
    OnSubscribe,
    Request,
    Subscribe,
)
from rstreams.wire._channels import (
    CHANNEL,
    INPUT_NEXT,
    INPUT_REQUEST,
    decode_channel_message,
    encode_channel_message,
)
from rstreams.wire.extensions import CHANNELS, KEEPALIVE
from testkit.bound import within
from testkit.net import CountingSource, RawPeer

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


@contextlib.asynccontextmanager
async def client(**server_options: Any) -> AsyncIterator[Connection]:
    """A server with ``server_options`` (no publishers) and a client connected to it."""
    server = await serve("tcp://127.0.0.1:0", {}, **server_options)
    async with server, await connect(server.url) as conn:
        yield conn


class Probe(Subscriber[Any]):
    """Starts with ``initial`` demand, requests on command, records signals; awaitable."""

    def __init__(self, initial: int = 0) -> None:
        self.initial = initial
        self.subscription: Subscription | None = None
        self.items: list[Any] = []
        self.error: BaseException | None = None
        self.completed = False
        self.changed = asyncio.Event()

    def on_subscribe(self, subscription: Subscription) -> None:
        self.subscription = subscription
        if self.initial:
            subscription.request(self.initial)
        self.changed.set()

    def on_next(self, item: Any) -> None:
        self.items.append(item)
        self.changed.set()

    def on_error(self, error: BaseException) -> None:
        self.error = error
        self.changed.set()

    def on_complete(self) -> None:
        self.completed = True
        self.changed.set()

    async def until(self, condition: Any) -> None:
        async def wait() -> None:
            while not condition():
                self.changed.clear()
                await self.changed.wait()

        await within(wait())


class Never(Publisher[bytes]):
    """An output that stays open and silent until it is cancelled."""

    def __init__(self) -> None:
        self.cancelled = False

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        never = self

        class _Subscription(Subscription):
            def request(self, n: int) -> None:
                pass

            def cancel(self) -> None:
                never.cancelled = True

        subscriber.on_subscribe(_Subscription())


def upper(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
    return rstreams.from_publisher(source).map(bytes.upper)


async def test_an_interactive_transformer_streams_results_for_requests() -> None:
    async with client(channels={"upper": upper}) as conn:
        out = conn.channel("upper", rstreams.from_iterable([b"a", b"bc", b"d"]))
        assert await within(out.collect()) == [b"A", b"BC", b"D"]
        many = conn.channel("upper", rstreams.from_iterable([b"x"] * 1000))  # past the input window
        assert await within(many.collect()) == [b"X"] * 1000


async def test_codecs_and_pattern_params_reach_both_ends() -> None:
    def scale(source: Publisher[Any], params: dict[str, str]) -> Publisher[Any]:
        factor = int(params["factor"])
        return rstreams.from_publisher(source).map(lambda doc: {"n": doc["n"] * factor})

    async with client(codec=JSON, channels={"scale/{factor}": scale}) as conn:
        docs = rstreams.from_iterable([{"n": 1}, {"n": 2}])
        scaled = conn.channel("scale/10", docs, codec=JSON)
        assert await within(scaled.collect()) == [{"n": 10}, {"n": 20}]


async def test_input_demand_is_exactly_what_the_serving_side_requests() -> None:
    """The input Publisher is asked for what the factory's Subscriber requests, no more (§21.4)."""
    inner = Probe()
    ready = asyncio.Event()

    def hold(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        source.subscribe(inner)
        ready.set()
        return Never()

    source = CountingSource(limit=100)
    async with client(channels={"hold": hold}) as conn:
        output = Probe()
        conn.channel("hold", source).subscribe(output)
        await within(ready.wait())
        await inner.until(lambda: inner.subscription is not None)
        await asyncio.sleep(0.05)
        assert source.pulled == 0 and inner.items == []  # nothing requested, nothing sent
        assert inner.subscription is not None
        inner.subscription.request(3)
        await inner.until(lambda: len(inner.items) == 3)
        inner.subscription.request(2)
        await inner.until(lambda: len(inner.items) == 5)
        await asyncio.sleep(0.05)
        assert source.pulled == 5 and sum(source.requests) == 5
        assert inner.items == [i.to_bytes(8, "big") for i in range(1, 6)]
        inner.subscription.cancel()  # the input ends; the output goes on
        await within(source.cancelled.wait())
        assert output.error is None and not output.completed
        assert output.subscription is not None
        output.subscription.cancel()


async def test_the_input_may_complete_while_the_output_goes_on() -> None:
    def total(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        counted = rstreams.from_publisher(source).scan(lambda n, _: n + 1, 0).last()
        return counted.map(lambda n: str(n).encode()).concat_with(rstreams.just(b"after the input"))

    async with client(channels={"total": total}) as conn:
        out = conn.channel("total", rstreams.from_iterable([b"x"] * 7))
        assert await within(out.collect()) == [b"7", b"after the input"]


async def test_cancelling_the_output_cancels_the_input_at_both_ends() -> None:
    inner = Probe(initial=1)
    ready = asyncio.Event()

    def hold(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        source.subscribe(inner)
        ready.set()
        return Never()

    source = CountingSource()
    async with client(channels={"hold": hold}) as conn:
        output = Probe()
        conn.channel("hold", source).subscribe(output)
        await inner.until(lambda: len(inner.items) == 1)
        assert output.subscription is not None
        output.subscription.cancel()
        await within(source.cancelled.wait())  # the opener cancels its input
        await inner.until(lambda: inner.error is not None)  # the server's input Subscriber is told
        assert isinstance(inner.error, ResourceClosedError)
        assert "§21.5" in str(inner.error)


async def test_a_failed_input_reaches_the_factory_and_its_failure_the_client() -> None:
    seen: list[BaseException] = []

    def watch(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        return rstreams.from_publisher(source).do_on_error(seen.append)

    async with client(channels={"watch": watch}) as conn:
        failing = rstreams.just(b"a").concat_with(rstreams.error(ValueError("bad input")))
        with pytest.raises(RemoteStreamError, match="ChannelInputError: ValueError: bad input"):
            await within(conn.channel("watch", failing).collect())
    assert isinstance(seen[0], ChannelInputError) and str(seen[0]) == "ValueError: bad input"


async def test_unknown_channels_and_unauthorized_ones_are_refused() -> None:
    def authorize(principal: Any, name: str) -> bool:
        return name != "upper/secret"

    channels = {"upper": upper, "upper/secret": upper}
    async with client(channels=channels, authorize=authorize) as conn:
        with pytest.raises(RemoteStreamError, match=r"no channel named 'nope' \(PROTOCOL\.md §21\.3\)"):
            await within(conn.channel("nope", rstreams.just(b"a")).collect())
        with pytest.raises(RemoteStreamError, match="unauthorized"):
            await within(conn.channel("upper/secret", rstreams.just(b"a")).collect())
        assert await within(conn.channel("upper", rstreams.just(b"a")).collect()) == [b"A"]


async def test_a_plain_subscribe_to_a_channel_is_refused_saying_it_is_one() -> None:
    """A name offered only as a channel is unknown to a plain subscribe (§21.3), and the refusal
    says it is a channel; its code and its metrics kind are an unknown publisher's. A publisher
    of the same name wins, and the channel still opens as one."""
    from rstreams.net import UnknownPublisherError
    from rstreams.observe._metrics import stream_error_reason
    from rstreams.wire import ErrorCode

    channels = {"upper": upper, "lang/{code}": upper}
    async with client(channels=channels) as conn:
        for name, path in [("upper", "upper"), ("lang/fr?x=1", "lang/fr")]:
            with pytest.raises(RemoteStreamError) as refused:
                await within(conn.publisher(name).collect())
            assert refused.value.message == (
                f"no publisher named '{path}' ('{path}' is a channel: open it as one, PROTOCOL.md §21.3)"
            )
            assert isinstance(refused.value, UnknownPublisherError)
            assert refused.value.code == ErrorCode.UNKNOWN_PUBLISHER
            assert stream_error_reason(refused.value.message) == "unknown publisher"
        with pytest.raises(RemoteStreamError) as refused:
            await within(conn.publisher("lower").collect())
        assert refused.value.message == "no publisher named 'lower'"
    server = await serve("tcp://127.0.0.1:0", {"upper": rstreams.just(b"plain")}, channels=channels)
    async with server, await connect(server.url) as conn:
        assert await within(conn.publisher("upper").collect()) == [b"plain"]
        assert await within(conn.channel("upper", rstreams.just(b"a")).collect()) == [b"A"]


async def test_the_server_opens_a_channel_on_the_client() -> None:
    made: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    server = await serve("tcp://127.0.0.1:0", {}, on_connection=made.set_result)
    async with server, await connect(server.url, channels={"upper": upper}):
        server_side = await within(made)
        assert await within(server_side.channel("upper", rstreams.just(b"up")).collect()) == [b"UP"]


async def test_a_channel_to_a_peer_without_the_extension_is_a_clear_error() -> None:
    made: asyncio.Future[Connection] = asyncio.get_running_loop().create_future()
    offer = {"one": rstreams.just(b"1")}
    async with await serve("tcp://127.0.0.1:0", offer, on_connection=made.set_result) as server:
        peer = await RawPeer.open(server.url, extensions=(KEEPALIVE.id,))  # an older client
        peer.send(Subscribe(publisher="one", subscriber=1, initial_demand=1))
        assert (await peer.read_until(OnNext)).element == b"1"
        server_side = await within(made)
        with pytest.raises(LocalProtocolError, match=r"extension channels \(id 8\).*PROTOCOL\.md §21\.1"):
            await within(server_side.channel("x", rstreams.just(b"a")).collect())
        peer.close()


async def _raw_channel(server_url: str, sid: int = 1) -> RawPeer:
    peer = await RawPeer.open(server_url, extensions=(CHANNELS.id,))
    peer.send(
        ExtensionMessage(type=CHANNEL, payload=encode_channel_message(CHANNEL, sid)),
        Subscribe(publisher="hold", subscriber=sid, initial_demand=0),
    )
    return peer


async def test_input_beyond_the_granted_demand_gets_a_goodbye() -> None:
    def hold(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        source.subscribe(Probe(initial=1))
        return Never()

    async with await serve("tcp://127.0.0.1:0", {}, channels={"hold": hold}) as server:
        peer = await _raw_channel(server.url)
        await peer.read_until(OnSubscribe)
        granted = await peer.read_until(ExtensionReceived)
        assert granted.type == INPUT_REQUEST
        assert decode_channel_message(INPUT_REQUEST, granted.payload) == (1, 1)
        two = [
            ExtensionMessage(type=INPUT_NEXT, payload=encode_channel_message(INPUT_NEXT, 1, element))
            for element in (b"a", b"b")
        ]
        peer.send(*two)
        closed = await peer.read_until(ConnectionClosed)
        assert "inputNext for subscriber 1 beyond the input demand of 0 (PROTOCOL.md §21.4)" in closed.reason
        peer.close()


@pytest.mark.parametrize(
    ("message_type", "payload", "words"),
    [
        (INPUT_REQUEST, encode_channel_message(INPUT_REQUEST, 1, 0), "demand must be 1"),
        (CHANNEL, encode_channel_message(CHANNEL, 1) + b"\x00", "after its subscriber"),
        (0xA5, b"\x01\xff", "not valid UTF-8"),
    ],
)
async def test_malformed_channel_messages_get_a_goodbye_citing_21_2(
    message_type: int, payload: bytes, words: str
) -> None:
    async with await serve("tcp://127.0.0.1:0", {}) as server:
        peer = await RawPeer.open(server.url, extensions=(CHANNELS.id,))
        peer.send(ExtensionMessage(type=message_type, payload=payload))
        closed = await peer.read_until(ConnectionClosed)
        assert words in closed.reason and "(PROTOCOL.md §21.2)" in closed.reason
        peer.close()


async def test_a_second_mark_before_the_subscribe_gets_a_goodbye() -> None:
    async with await serve("tcp://127.0.0.1:0", {}) as server:
        peer = await RawPeer.open(server.url, extensions=(CHANNELS.id,))
        mark = ExtensionMessage(type=CHANNEL, payload=encode_channel_message(CHANNEL, 4))
        peer.send(mark, mark)
        closed = await peer.read_until(ConnectionClosed)
        assert "two 0xa0 messages before one Subscribe (PROTOCOL.md §21.3)" in closed.reason
        peer.close()


async def test_a_mark_followed_by_a_subscribe_for_another_id_gets_a_goodbye() -> None:
    async with await serve("tcp://127.0.0.1:0", {"one": rstreams.just(b"1")}) as server:
        peer = await RawPeer.open(server.url, extensions=(CHANNELS.id,))
        peer.send(
            ExtensionMessage(type=CHANNEL, payload=encode_channel_message(CHANNEL, 4)),
            Subscribe(publisher="one", subscriber=5, initial_demand=1),
        )
        closed = await peer.read_until(ConnectionClosed)
        assert "0xa0 for subscriber 4 followed by a Subscribe for subscriber 5" in closed.reason
        assert "§21.3" in closed.reason
        peer.close()


@pytest.mark.parametrize("refusal", ["name too long", "over max_subscriptions"])
async def test_a_mark_goes_with_its_subscribe_when_the_core_refuses_it(refusal: str) -> None:
    """The refused marked subscribe takes its mark along: the next subscribe with that id is plain."""
    made: list[str] = []

    def factory(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        made.append("channel")
        return rstreams.just(b"channel")

    offer = {"one": rstreams.just(b"1"), "hold": rstreams.just(b"h")}
    channels = {"one": factory}  # the same name: only the mark decides which is served
    async with await serve("tcp://127.0.0.1:0", offer, channels=channels) as server:
        peer = await RawPeer.open(server.url, extensions=(CHANNELS.id,))
        mark = ExtensionMessage(type=CHANNEL, payload=encode_channel_message(CHANNEL, 2))
        if refusal == "name too long":
            peer.send(mark, Subscribe(publisher="x" * 1025, subscriber=2, initial_demand=1))
        else:
            for sid in range(10, 10 + 1024):  # max_subscriptions (1024) held open
                peer.send(Subscribe(publisher="hold", subscriber=sid, initial_demand=0))
            peer.send(mark, Subscribe(publisher="one", subscriber=2, initial_demand=1))
        refused = await peer.read_until(OnError)
        assert refused.subscriber == 2 and "refused" in refused.error
        if refusal != "name too long":
            peer.send(Request(subscriber=10, demand=1))  # one held subscription ends: a slot is free
            assert (await peer.read_until(OnNext)).subscriber == 10
            assert (await peer.read_until(OnComplete)).subscriber == 10
        peer.send(Subscribe(publisher="one", subscriber=2, initial_demand=1))
        got = await peer.read_until(OnNext)
        assert (got.subscriber, got.element) == (2, b"1")
        assert made == []
        peer.close()


async def test_input_for_a_channel_that_ended_is_dropped_quietly() -> None:
    """inputNext crossing the end of its channel (or for no channel) is not an error (§21.5)."""
    async with await serve("tcp://127.0.0.1:0", {"one": rstreams.just(b"1")}) as server:
        peer = await RawPeer.open(server.url, extensions=(CHANNELS.id,))
        peer.send(
            ExtensionMessage(type=INPUT_NEXT, payload=encode_channel_message(INPUT_NEXT, 9, b"late")),
            Subscribe(publisher="one", subscriber=1, initial_demand=1),
        )
        assert (await peer.read_until(OnNext)).element == b"1"
        peer.close()


async def test_an_input_element_the_codec_cannot_decode_ends_the_input_with_decode_error() -> None:
    """Bad input bytes are the opener's fault, not the factory's: the input is cancelled and its
    Subscriber gets DecodeError naming the channel, the decoder's error as its cause (§17)."""
    seen: list[BaseException] = []

    def watch(source: Publisher[Any], params: dict[str, str]) -> Publisher[Any]:
        return rstreams.from_publisher(source).do_on_error(seen.append)

    async with client(codec=JSON, channels={"watch": watch}) as conn:
        with pytest.raises(RemoteStreamError, match="DecodeError"):
            await within(conn.channel("watch", rstreams.just(b"{not json")).collect())
    assert isinstance(seen[0], DecodeError) and seen[0].publisher == "watch"
    assert "'watch'" in str(seen[0]) and "JSON" in str(seen[0])
    assert isinstance(seen[0].__cause__, json.JSONDecodeError)


async def test_an_input_element_the_openers_codec_cannot_encode_ends_the_input_saying_why() -> None:
    """An input element the opener's codec cannot encode ends the input with inputError naming the
    codec, what it takes and what it got (§21.2), and cancels the input's source."""
    seen: list[BaseException] = []
    cancelled: list[bool] = []

    def watch(source: Publisher[Any], params: dict[str, str]) -> Publisher[Any]:
        return rstreams.from_publisher(source).do_on_error(seen.append)

    async with client(codec=INT64, channels={"watch": watch}) as conn:
        source: Publisher[Any] = rstreams.from_iterable([1, "2", 3]).do_on_cancel(
            lambda: cancelled.append(True)
        )
        with pytest.raises(RemoteStreamError, match="EncodeError"):
            await within(conn.channel("watch", source, codec=INT64).collect())
    assert cancelled == [True]
    assert (
        "EncodeError: an element does not encode with INT64 (which takes int from -2**63 to 2**63 - 1): "
        in str(seen[0])
    )


async def test_a_raising_input_subscriber_behind_an_operator_is_reported_by_its_own_name() -> None:
    reported: list[str] = []
    arrived = asyncio.Event()

    class Raising(Probe):
        def on_next(self, item: Any) -> None:
            raise RuntimeError("on_next broke")

    def hold(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        rstreams.from_publisher(source).map(bytes.upper).subscribe(Raising(initial=1))
        return Never()

    def report(error: BaseException, where: str) -> None:
        reported.append(where)
        arrived.set()

    previous = set_unhandled_error_hook(report)
    try:
        async with client(channels={"hold": hold}) as conn:
            conn.channel("hold", rstreams.just(b"a")).subscribe(Probe())
            await within(arrived.wait())
    finally:
        set_unhandled_error_hook(previous)
    assert reported == ["Raising.on_next (a channel's input)"]
