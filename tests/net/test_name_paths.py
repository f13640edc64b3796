"""Publisher names as docs/protocol-vectors.json's ``names`` has them (PROTOCOL.md §5.5): a path
is compared segment by segment, each percent-decoded (``%2F`` a ``/`` inside its segment), the
query split on ``&`` and the first ``=`` and decoded, exact names before patterns; a name that
matches and is malformed is refused with code 1 naming the fault, one that matches nothing with
code 2 and ``no publisher named 'PATH'``. The router, a name table (channels, message handlers)
and a connection answer every case as the vectors say; the Java and JavaScript tests read the
same vectors (java NamePathsTest, js name-paths.test.mjs, both also against ``rstreams serve``)."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import RemoteStreamError
from rstreams.net._routes import (
    MalformedNameError,
    NameTable,
    Router,
    malformed_message,
    split_name,
    unknown_message,
)
from testkit.bound import within
from testkit.names import NAMES, Handled, cases, client_of, expected, vector_offer

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]


def _named(case: dict[str, Any]) -> str:
    return str(case["name"])


@pytest.mark.parametrize("case", cases("found"), ids=_named)
async def test_a_found_name_reaches_its_offer_with_its_parameters(case: dict[str, Any]) -> None:
    found = Router(vector_offer()).find_batched(case["name"])
    assert found is not None
    answer = await within(rstreams.from_publisher(found[0]).collect())
    assert json.loads(answer[0]) == expected(case)
    assert Router(vector_offer()).pattern(case["name"]) == case["offer"]


@pytest.mark.parametrize("case", cases("unknown"), ids=_named)
async def test_an_unknown_name_is_refused_with_code_2_naming_its_path(case: dict[str, Any]) -> None:
    assert Router(vector_offer()).find_batched(case["name"]) is None
    assert Router(vector_offer()).pattern(case["name"]) == "(unknown)"
    assert case["code"] == 2 and unknown_message(case["name"]) == case["error"]


@pytest.mark.parametrize("case", cases("malformed"), ids=_named)
async def test_a_malformed_name_is_refused_with_code_1_naming_the_fault(case: dict[str, Any]) -> None:
    with pytest.raises(MalformedNameError) as caught:
        Router(vector_offer()).find_batched(case["name"])
    assert case["code"] == 1 and str(caught.value) == case["error"]


async def test_a_name_table_matches_names_as_the_router_does() -> None:
    """Channels and message handlers (PROTOCOL.md §20, §21) are matched by a NameTable."""
    table = NameTable({entry: entry for entry in NAMES["offered"]})
    for case in NAMES["cases"]:
        got = table.lookup(case["name"])
        if case["outcome"] == "unknown":
            assert got is None, case
            continue
        assert got is not None, case
        entry, params, fault = got
        if case["outcome"] == "found":
            assert (entry, params, fault) == (case["offer"], case["params"], None), case
        else:
            assert malformed_message(case["name"], fault or "") == case["error"], case


@pytest.mark.parametrize("name", NAMES["not_offerable"])
async def test_a_name_that_could_never_be_asked_for_is_not_offered(name: str) -> None:
    never = r"cannot be offered: its path segment .* \(write '%' as %25, PROTOCOL\.md §5\.5\)"
    with pytest.raises(ValueError, match=never):
        Router({name: rstreams.just(b"x")})
    with pytest.raises(ValueError, match="cannot be offered"):
        NameTable({name: 1})


async def test_every_case_over_a_connection() -> None:
    client = client_of(vector_offer())
    for case in NAMES["cases"]:
        if case["outcome"] == "found":
            assert json.loads(await within(client.request(case["name"]))) == expected(case), case
            continue
        with pytest.raises(RemoteStreamError) as refused:
            await within(client.request(case["name"]))
        assert (refused.value.code, refused.value.message) == (case["code"], case["error"]), case


async def test_the_metrics_label_is_the_offer_as_written() -> None:
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


async def test_a_function_offer_gets_the_decoded_path_and_is_not_called_for_a_malformed_one() -> None:
    """A function offer (Python's own) is the lookup: it gets the path decoded, segments joined."""
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


async def test_a_channel_refusal_and_a_message_drop_quote_the_path_as_written(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Not escaped, as a subscribe's refusal (the vectors' ``it's/...``), so that every binding
    writes the same text (PROTOCOL.md §20.4, §21.3)."""
    handled = Handled(["ev/{kind}"], channels={"up": lambda source, params: source})
    with pytest.raises(RemoteStreamError) as channel:
        await within(handled.client.channel("it's?x=1", rstreams.just(b"a")).collect())
    assert channel.value.message == "no channel named 'it's' (PROTOCOL.md §21.3)"
    with caplog.at_level(logging.WARNING, logger="rstreams.net.messages"):
        await within(handled.client.send("it's", b"dropped"))
        await within(handled.client.send("ev/a", b"kept"))
        await within(handled.arrived())
    assert "message to 'it's' dropped: no such handler (PROTOCOL.md §20.4)" in caplog.text
