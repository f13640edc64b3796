"""A publisher name whose query has a part that is not percent-encoded UTF-8 (``%``, ``%2``,
``%zz``, escapes decoding to no UTF-8) is malformed, as RFC 3986 §2.1 has it (PROTOCOL.md §5.5).
What a subscribe gives for each such name is in docs/protocol-vectors.json's ``names``
(tests/net/test_name_paths.py); here: a function offer or a factory is not called for one, a
channel open is refused (code 1) and a message dropped, naming the part as written."""

from __future__ import annotations

import logging

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import RemoteStreamError
from rstreams.net._routes import MalformedNameError, Router, name_fault
from rstreams.wire import ErrorCode
from testkit.bound import within
from testkit.names import Handled

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

NOT_UTF8 = "which is not percent-encoded UTF-8 (PROTOCOL.md §5.5)"


async def test_the_fault_is_cached_alike() -> None:
    fault = "has the query part '%zz', which is not percent-encoded UTF-8"
    assert name_fault("n?q=%zz") == fault
    assert name_fault("n?q=%zz") == fault  # the second time from the cache


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


def upper(source: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
    return rstreams.from_publisher(source).map(bytes.upper)


async def test_a_channel_with_a_malformed_name_is_refused_and_a_message_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    handled = Handled(["ev/{kind}"], channels={"upper": upper})
    with pytest.raises(RemoteStreamError) as caught:
        await within(handled.client.channel("upper?x=%zz", rstreams.just(b"a")).collect())
    assert caught.value.code == ErrorCode.APPLICATION
    assert caught.value.message == (f"channel name 'upper?x=%zz' has the query part '%zz', {NOT_UTF8}")
    with caplog.at_level(logging.WARNING, logger="rstreams.net.messages"):
        await within(handled.client.send("ev/a?x=%", b"dropped"))
        await within(handled.client.send("ev/a?x=1", b"kept"))
        await within(handled.arrived())
    assert [m.payload for m in handled.got] == [b"kept"]
    assert f"message to 'ev/a?x=%' dropped: its name has the query part '%', {NOT_UTF8}" in caplog.text
