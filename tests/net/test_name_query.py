"""A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5): ``+`` is a plus, each
part percent-decoded, and a key given twice refuses the subscribe, the channel open or the
message whose name matches; an unknown name stays unknown (code 2) whatever its query."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import Message, RemoteStreamError, split_name
from rstreams.net._connection import Connection
from rstreams.net._routes import MalformedNameError, NameTable, Router
from rstreams.wire import ConnectionConfig, ErrorCode
from testkit.bound import within
from testkit.net import connection, memory_pair

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("n?q=a+b", {"q": "a+b"}),
        ("n?q=a%2Bb", {"q": "a+b"}),
        ("n?q=a%20b", {"q": "a b"}),
        ("n?q=", {"q": ""}),
        ("n?q", {"q": ""}),
        ("n?q=a=b", {"q": "a=b"}),
        ("n?a%26b=c%3Dd", {"a&b": "c=d"}),
        ("n?x=1&y", {"x": "1", "y": ""}),
        ("n?&x=1&&y=2&", {"x": "1", "y": "2"}),
    ],
)
async def test_query_parts_are_percent_decoded_and_plus_stays_a_plus(
    name: str, params: dict[str, str]
) -> None:
    assert split_name(name) == ("n", params)
    assert split_name(name) == ("n", params)  # the second time from the cache, alike


def _echo_pair() -> Connection:
    server = connection(
        client=False, offer={"echo": lambda params: rstreams.just(repr(sorted(params.items())).encode())}
    )
    client = connection(client=True)
    memory_pair(server, client)
    return client


async def test_a_factory_gets_plus_as_a_plus_over_a_connection() -> None:
    client = _echo_pair()
    answer = await within(client.request("echo?q=1+1&s=%20&e="))
    assert answer == repr([("e", ""), ("q", "1+1"), ("s", " ")]).encode()


@pytest.mark.parametrize("name", ["echo?to=3&to=4", "echo?to=3&t%6F=4", "echo?to&to"])
async def test_a_key_given_twice_is_that_subscriptions_error_naming_the_key(name: str) -> None:
    client = _echo_pair()
    with pytest.raises(RemoteStreamError) as caught:
        await within(client.request(name))
    assert caught.value.code == ErrorCode.APPLICATION
    assert "'to'" in caught.value.message and "§5.5" in caught.value.message
    assert await within(client.request("echo?to=3")) == b"[('to', '3')]"  # the connection stays up


@pytest.mark.parametrize("name", ["nope?to=3&to=4", "nope/{x}?a&a"])
async def test_an_unknown_name_giving_a_key_twice_is_unknown_not_refused_for_the_key(name: str) -> None:
    client = _echo_pair()
    with pytest.raises(RemoteStreamError) as caught:
        await within(client.request(name))
    assert caught.value.code == ErrorCode.UNKNOWN_PUBLISHER
    assert "no publisher named" in caught.value.message and "§5.5" not in caught.value.message


async def test_the_factory_is_not_called_for_a_name_giving_a_key_twice() -> None:
    called: list[dict[str, str]] = []

    def factory(params: dict[str, str]) -> Publisher[bytes]:
        called.append(params)
        return rstreams.just(b"x")

    router = Router({"a/{id}": factory})
    assert router.find_batched("b?to=1&to=2") is None  # unknown: no route, whatever the query
    with pytest.raises(MalformedNameError, match="'to' more than once"):  # known: refused, code 1
        router.find_batched("a/1?to=1&to=2")
    assert called == []


async def test_a_name_table_reports_the_first_key_given_twice() -> None:
    table = NameTable({"up": 1, "ev/{kind}": 2})
    twice = "gives the parameter '{}' more than once"
    assert table.lookup("up?to=1&x&to=2&x") == (1, {"to": "2", "x": ""}, twice.format("to"))
    assert table.lookup("ev/a?k=1&k=2") == (2, {"k": "2", "kind": "a"}, twice.format("k"))
    assert table.lookup("ev/a?k=1") == (2, {"k": "1", "kind": "a"}, None)
    assert table.lookup("nope?k=1&k=2") is None


def upper(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
    return rstreams.from_publisher(source).map(bytes.upper)


def _channel_pair() -> Connection:
    server = connection(client=False, channels={"upper": upper})
    client = connection(client=True)
    memory_pair(server, client)
    return client


async def test_a_channel_name_giving_a_key_twice_is_refused_naming_the_key() -> None:
    client = _channel_pair()
    with pytest.raises(RemoteStreamError) as caught:
        await within(client.channel("upper?to=3&t%6F=4", rstreams.just(b"a")).collect())
    assert caught.value.code == ErrorCode.APPLICATION
    assert caught.value.message == (
        "channel name 'upper?to=3&t%6F=4' gives the parameter 'to' more than once (PROTOCOL.md §5.5)"
    )
    with pytest.raises(RemoteStreamError) as unknown:  # unknown whatever the query
        await within(client.channel("nope?to=3&to=4", rstreams.just(b"a")).collect())
    assert unknown.value.code == ErrorCode.UNKNOWN_PUBLISHER
    assert await within(client.channel("upper?to=3", rstreams.just(b"a")).collect()) == [b"A"]


async def test_a_message_name_giving_a_key_twice_is_dropped_and_its_credit_given_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    got: list[Message] = []
    arrived = asyncio.Event()

    def handler(message: Message) -> None:
        got.append(message)
        arrived.set()

    handlers: dict[str, Any] = {"ev/{kind}": handler}
    config = ConnectionConfig(max_messages_in_flight=1)  # a drop that kept its credit would hang
    server = connection(client=False, handlers=handlers, config=config)
    client = connection(client=True, config=config)
    memory_pair(server, client)
    with caplog.at_level(logging.WARNING, logger="rstreams.net.messages"):
        await within(client.send("ev/a?to=1&to=2", b"dropped"))
        await within(client.send("ev/a?to=1", b"kept"))
        await within(arrived.wait())
    assert [(m.params, m.payload) for m in got] == [({"to": "1", "kind": "a"}, b"kept")]
    assert (
        "message to 'ev/a?to=1&to=2' dropped: its name gives the parameter 'to' more than once "
        "(PROTOCOL.md §5.5)" in caplog.text
    )
