"""A publisher name's path is compared segment by segment, each percent-decoded, as RFC 3986 has
it (PROTOCOL.md §5.5): ``a%20b`` is the offered ``a b`` (or ``a%20b``), ``%2F`` is a ``/`` inside
one segment (``f/a%2Fb`` gives the field ``a/b``; ``f/a/b`` has one segment more), and a segment
that is not percent-encoded UTF-8 makes a name that matches malformed: refused with code 1 naming
the segment as written. The Java and JavaScript bindings match the same names alike (java
NamePathsTest, js name-paths.test.mjs, both also against this binding's server)."""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import RemoteStreamError
from rstreams.net._connection import Connection
from rstreams.net._routes import MalformedNameError, NameTable, Router, name_fault, split_name
from rstreams.wire import ErrorCode
from testkit.bound import within
from testkit.net import connection, memory_pair

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


def _offer() -> dict[str, Any]:
    """The offer of these tests, the same in the Java and JavaScript tests."""

    def field(params: dict[str, str]) -> Publisher[bytes]:
        return rstreams.just(f"x={params['x']}".encode())

    return {
        "a b": rstreams.just(b"exact a b"),
        "x%2Fy": rstreams.just(b"exact x%2Fy"),
        "100%25": rstreams.just(b"exact 100%25"),
        "f/{x}": field,
    }


FOUND = [
    ("a%20b", "exact a b"),
    ("a b", "exact a b"),
    ("%61%20%62", "exact a b"),
    ("x%2Fy", "exact x%2Fy"),
    ("x%2fy", "exact x%2Fy"),
    ("100%25", "exact 100%25"),
    ("f/a%2Fb", "x=a/b"),
    ("f/a%20b", "x=a b"),
    ("f/%25", "x=%"),
    ("f/k%C3%BCche", "x=küche"),
]
UNKNOWN = ["x/y", "f/a/b", "f/", "a%2520b", "nope/%zz", "a%zz"]
SEGMENT = "which is not percent-encoded UTF-8"
MALFORMED = [
    ("f/%zz", "%zz"),
    ("f/%FF", "%FF"),
    ("f/a%2", "a%2"),
    ("100%", "100%"),  # as written it is what 100%25 decodes to
    ("f/%zz?y=%zz", "%zz"),  # the path's fault before the query's
]


@pytest.mark.parametrize(("name", "answer"), FOUND)
async def test_segments_are_compared_decoded(name: str, answer: str) -> None:
    router = Router(_offer())
    found = router.find_batched(name)
    assert found is not None
    assert await within(rstreams.from_publisher(found[0]).collect()) == [answer.encode()]
    assert name_fault(name) is None


@pytest.mark.parametrize("name", UNKNOWN)
async def test_other_segments_are_unknown(name: str) -> None:
    assert Router(_offer()).find_batched(name) is None
    assert Router(_offer()).pattern(name) == "(unknown)"


@pytest.mark.parametrize(("name", "segment"), MALFORMED)
async def test_a_segment_that_is_not_percent_encoded_utf8_is_refused(name: str, segment: str) -> None:
    assert name_fault(name) == f"has the path segment '{segment}', {SEGMENT}"
    with pytest.raises(MalformedNameError) as caught:
        Router(_offer()).find_batched(name)
    assert str(caught.value) == (
        f"publisher name '{name}' has the path segment '{segment}', {SEGMENT} (PROTOCOL.md §5.5)"
    )


async def test_the_metrics_label_is_the_offer_as_written() -> None:
    router = Router(_offer())
    assert [router.pattern(n) for n in ("a%20b", "x%2fy", "f/a%2Fb")] == ["a b", "x%2Fy", "f/{x}"]
    table = NameTable({"a b": 1, "ev/{kind}": 2})
    assert [table.key(n) for n in ("a%20b", "ev/a%2Fb", "ev/a/b")] == ["a b", "ev/{kind}", "(unknown)"]
    assert table.lookup("ev/a%2Fb?n=1") == (2, {"n": "1", "kind": "a/b"}, None)


async def test_a_placeholder_inside_a_segment_matches_decoded_text() -> None:
    def fields(params: dict[str, str]) -> Publisher[bytes]:
        return rstreams.just(repr(sorted(params.items())).encode())

    found = Router({"v{major}.{minor}/x%20y": fields}).find_batched("v1.2%2F3/x y")
    assert found is not None
    got = await within(rstreams.from_publisher(found[0]).collect())
    assert got == [b"[('major', '1'), ('minor', '2/3')]"]


@pytest.mark.parametrize("name", ["100%", "a/%zz", "{x}/%E9"])
async def test_a_name_that_could_never_be_asked_for_is_not_offered(name: str) -> None:
    never = r"cannot be offered: its path segment .* \(write '%' as %25, PROTOCOL\.md §5\.5\)"
    with pytest.raises(ValueError, match=never):
        Router({name: rstreams.just(b"x")})
    with pytest.raises(ValueError, match="cannot be offered"):
        NameTable({name: 1})


async def test_a_function_offer_gets_the_decoded_path_and_is_not_called_for_a_malformed_one() -> None:
    called: list[str] = []

    def offer(path: str, params: dict[str, str]) -> Publisher[bytes] | None:
        called.append(path)
        return rstreams.just(b"x")

    router = Router(offer)
    assert router.find_batched("a%20b/c") is not None
    with pytest.raises(MalformedNameError, match="path segment '%zz'"):
        router.find_batched("a/%zz")
    assert called == ["a b/c"]
    assert split_name("f/a%2Fb?q=1") == ("f/a/b", {"q": "1"})


def _pair() -> Connection:
    server = connection(client=False, offer=_offer())
    client = connection(client=True)
    memory_pair(server, client)
    return client


async def test_over_a_connection() -> None:
    client = _pair()
    for name, answer in FOUND:
        assert await within(client.request(name)) == answer.encode(), name
    for name in UNKNOWN:
        with pytest.raises(RemoteStreamError) as unknown:
            await within(client.request(name))
        assert unknown.value.code == ErrorCode.UNKNOWN_PUBLISHER, name
    for name, segment in MALFORMED:
        with pytest.raises(RemoteStreamError) as caught:
            await within(client.request(name))
        assert caught.value.code == ErrorCode.APPLICATION
        assert caught.value.message == (
            f"publisher name '{name}' has the path segment '{segment}', {SEGMENT} (PROTOCOL.md §5.5)"
        )
