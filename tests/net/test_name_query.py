"""A publisher name's query read as RFC 3986 says (PROTOCOL.md §5.5): ``+`` is a plus, each
part percent-decoded, and a key given twice refuses the subscribe."""

from __future__ import annotations

import pytest

import rstreams
from rstreams.net import RemoteStreamError, split_name
from rstreams.net._connection import Connection
from rstreams.wire import ErrorCode
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
