"""A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5): ``+`` is a plus, each
part percent-decoded, and a key given twice refuses the subscribe, the channel open or the
message whose name matches; an unknown name stays unknown (code 2) whatever its query. What a
subscribe gives for each name is in docs/protocol-vectors.json's ``names``
(tests/net/test_name_paths.py); here: a factory is not called for a key given twice, a channel
open is refused (code 1) and a message dropped, naming the key."""

from __future__ import annotations

import logging

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import RemoteStreamError, split_name
from rstreams.net._routes import MalformedNameError, Router
from rstreams.wire import ErrorCode
from testkit.bound import within
from testkit.names import Handled

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


async def test_a_split_name_is_cached_alike() -> None:
    assert split_name("n?q=a+b&x") == ("n", {"q": "a+b", "x": ""})
    assert split_name("n?q=a+b&x") == ("n", {"q": "a+b", "x": ""})  # the second time from the cache


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


def upper(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
    return rstreams.from_publisher(source).map(bytes.upper)


async def test_a_channel_name_giving_a_key_twice_is_refused_naming_the_key() -> None:
    client = Handled([], channels={"upper": upper}).client
    with pytest.raises(RemoteStreamError) as caught:
        await within(client.channel("upper?to=3&t%6F=4", rstreams.just(b"a")).collect())
    assert caught.value.code == ErrorCode.APPLICATION
    assert caught.value.message == (
        "channel name 'upper?to=3&t%6F=4' gives the parameter 'to' more than once (PROTOCOL.md §5.5)"
    )
    with pytest.raises(RemoteStreamError) as unknown:  # unknown whatever the query
        await within(client.channel("nope?to=3&to=4", rstreams.just(b"a")).collect())
    assert unknown.value.code == ErrorCode.UNKNOWN_PUBLISHER
    assert unknown.value.message == "no channel named 'nope' (PROTOCOL.md §21.3)"
    assert await within(client.channel("upper?to=3", rstreams.just(b"a")).collect()) == [b"A"]


async def test_a_message_name_giving_a_key_twice_is_dropped_and_its_credit_given_back(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handled = Handled(["ev/{kind}"])
    with caplog.at_level(logging.WARNING, logger="rstreams.net.messages"):
        await within(handled.client.send("ev/a?to=1&to=2", b"dropped"))
        await within(handled.client.send("ev/a?to=1", b"kept"))
        await within(handled.arrived())
    assert [(m.params, m.payload) for m in handled.got] == [({"to": "1", "kind": "a"}, b"kept")]
    assert (
        "message to 'ev/a?to=1&to=2' dropped: its name gives the parameter 'to' more than once "
        "(PROTOCOL.md §5.5)" in caplog.text
    )
