"""A publisher name whose query has a part that is not percent-encoded UTF-8 (``%``, ``%2``,
``%zz``, escapes decoding to no UTF-8) is malformed, as RFC 3986 §2.1 has it (PROTOCOL.md §5.5):
a subscribe, a channel open or a message whose name matches is refused (code 1) naming the part
as written, a function offer is not called for it, and an unknown name stays unknown (code 2).
The Java and JavaScript bindings send the same text (java NameEscapesTest, js
name-escapes.test.mjs, both also against this binding's server)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import Message, RemoteStreamError
from rstreams.net._connection import Connection
from rstreams.net._routes import MalformedNameError, NameTable, Router, name_fault, split_name
from rstreams.wire import ConnectionConfig, ErrorCode
from testkit.bound import within
from testkit.net import connection, memory_pair

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

MALFORMED = [
    ("n?q=%", "%"),
    ("n?q=%2", "%2"),
    ("n?q=%zz", "%zz"),
    ("n?q=a%2", "a%2"),
    ("n?q=%FF", "%FF"),  # no UTF-8 byte
    ("n?q=%C3", "%C3"),  # a sequence cut short
    ("n?q=%C3x%A9", "%C3x%A9"),
    ("n?q=%C0%80", "%C0%80"),  # overlong
    ("n?q=%ED%A0%80", "%ED%A0%80"),  # a surrogate
    ("n?q=%F4%90%80%80", "%F4%90%80%80"),  # above U+10FFFF
    ("n?%zz=1", "%zz"),
    ("n?%=1&q=%zz", "%"),  # the first bad part, left to right
    ("n?q=%zz&q=1", "%zz"),  # before the key given twice
]


@pytest.mark.parametrize(("name", "part"), MALFORMED)
async def test_the_first_part_that_is_not_percent_encoded_utf8_is_named(name: str, part: str) -> None:
    assert name_fault(name) == f"has the query part '{part}', which is not percent-encoded UTF-8"
    assert name_fault(name) == f"has the query part '{part}', which is not percent-encoded UTF-8"  # cached


@pytest.mark.parametrize(
    ("name", "params"),
    [
        ("n?q=%C3%A9", {"q": "é"}),
        ("n?q=%e2%82%ac", {"q": "€"}),
        ("n?q=%F0%9F%98%80", {"q": "\U0001f600"}),
        ("n?q=100%25", {"q": "100%"}),
        ("n?q=é", {"q": "é"}),
    ],
)
async def test_well_formed_escapes_decode(name: str, params: dict[str, str]) -> None:
    assert name_fault(name) is None
    assert split_name(name) == ("n", params)


async def test_a_key_given_twice_before_a_bad_part_is_the_fault() -> None:
    assert name_fault("n?to=1&to=%zz") == "gives the parameter 'to' more than once"


def _echo_pair() -> Connection:
    server = connection(client=False, offer={"echo": lambda params: rstreams.just(b"x")})
    client = connection(client=True)
    memory_pair(server, client)
    return client


NOT_UTF8 = "which is not percent-encoded UTF-8 (PROTOCOL.md §5.5)"


@pytest.mark.parametrize(
    ("name", "part"), [("echo?x=%zz", "%zz"), ("echo?x=1&%=2", "%"), ("echo?x=%FF", "%FF")]
)
async def test_a_malformed_name_is_refused_with_code_1_naming_the_part(name: str, part: str) -> None:
    client = _echo_pair()
    with pytest.raises(RemoteStreamError) as caught:
        await within(client.request(name))
    assert caught.value.code == ErrorCode.APPLICATION
    assert caught.value.message == (f"publisher name '{name}' has the query part '{part}', {NOT_UTF8}")
    assert await within(client.request("echo?x=%41")) == b"x"  # the connection stays up


async def test_an_unknown_malformed_name_is_unknown() -> None:
    client = _echo_pair()
    with pytest.raises(RemoteStreamError) as caught:
        await within(client.request("nope?x=%zz"))
    assert caught.value.code == ErrorCode.UNKNOWN_PUBLISHER


async def test_a_function_offer_is_not_called_for_a_malformed_name() -> None:
    called: list[str] = []

    def offer(path: str, params: dict[str, str]) -> Publisher[bytes] | None:
        called.append(path)
        return rstreams.just(b"x")

    router = Router(offer)
    for name in ("a?x=%zz", "a?x=1&x=2", "unknown?x=%"):
        with pytest.raises(MalformedNameError, match=r"§5\.5"):
            router.find_batched(name)
    assert called == []
    assert router.find_batched("a?x=%41") is not None
    assert called == ["a"]


async def test_a_mapping_offers_factory_is_not_called_for_a_malformed_name() -> None:
    called: list[dict[str, str]] = []

    def factory(params: dict[str, str]) -> Publisher[bytes]:
        called.append(params)
        return rstreams.just(b"x")

    router = Router({"a/{id}": factory})
    assert router.find_batched("b?x=%zz") is None
    with pytest.raises(MalformedNameError, match="'%zz'"):
        router.find_batched("a/1?x=%zz")
    assert called == []


async def test_a_channel_with_a_malformed_name_is_refused_and_a_message_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    table = NameTable({"ev/{kind}": 1})
    assert table.lookup("ev/a?x=%2") == (
        1,
        {"x": "%2", "kind": "a"},
        "has the query part '%2', which is not percent-encoded UTF-8",
    )

    def upper(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        return rstreams.from_publisher(source).map(bytes.upper)

    got: list[Message] = []
    arrived = asyncio.Event()

    def handler(message: Message) -> None:
        got.append(message)
        arrived.set()

    handlers: dict[str, Any] = {"ev/{kind}": handler}
    config = ConnectionConfig(max_messages_in_flight=1)  # a drop that kept its credit would hang
    server = connection(client=False, channels={"upper": upper}, handlers=handlers, config=config)
    client = connection(client=True, config=config)
    memory_pair(server, client)
    with pytest.raises(RemoteStreamError) as caught:
        await within(client.channel("upper?x=%zz", rstreams.just(b"a")).collect())
    assert caught.value.code == ErrorCode.APPLICATION
    assert caught.value.message == (f"channel name 'upper?x=%zz' has the query part '%zz', {NOT_UTF8}")
    with caplog.at_level(logging.WARNING, logger="rstreams.net.messages"):
        await within(client.send("ev/a?x=%", b"dropped"))
        await within(client.send("ev/a?x=1", b"kept"))
        await within(arrived.wait())
    assert [m.payload for m in got] == [b"kept"]
    assert (
        "message to 'ev/a?x=%' dropped: its name has the query part '%', which is not percent-encoded UTF-8 "
        "(PROTOCOL.md §5.5)" in caplog.text
    )
