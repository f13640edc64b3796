"""URL parsing and publisher-name routing: pure functions, no I/O."""

from __future__ import annotations

from typing import Any

import pytest

from rstreams import just
from rstreams.net import UnknownPublisherError, parse_url, split_name
from rstreams.net._routes import Router


@pytest.mark.parametrize(
    ("url", "scheme", "host", "port", "path"),
    [
        ("tcp://127.0.0.1:5000", "tcp", "127.0.0.1", 5000, ""),
        ("tls://localhost:0", "tls", "localhost", 0, ""),
        ("tcp://[::1]:7", "tcp", "::1", 7, ""),
        ("unix:///tmp/rs.sock", "unix", "", 0, "/tmp/rs.sock"),
        ("ws://127.0.0.1:80/rs?x=1", "ws", "127.0.0.1", 80, "/rs?x=1"),
        ("wss://example.test/rs", "wss", "example.test", 443, "/rs"),
        ("ws://127.0.0.1:9", "ws", "127.0.0.1", 9, "/"),
    ],
)
def test_parse_url(url: str, scheme: str, host: str, port: int, path: str) -> None:
    """Each supported scheme parses into its parts."""
    endpoint = parse_url(url)
    assert (endpoint.scheme, endpoint.host, endpoint.port, endpoint.path) == (scheme, host, port, path)


def test_url_round_trips() -> None:
    """``Endpoint.url`` writes the URL back, brackets for IPv6 included."""
    for url in ("tcp://[::1]:7", "unix:///tmp/a.sock", "ws://127.0.0.1:9/x", "tls://h:1"):
        assert parse_url(url).url == url


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:1", "tcp://127.0.0.1", "tcp://:5", "unix://relative", "tcp://h:99999"]
)
def test_bad_urls_raise_value_error(url: str) -> None:
    """Unknown scheme, missing port or host, relative unix path, port out of range."""
    with pytest.raises(ValueError, match="://"):
        parse_url(url)


def test_a_refused_user_part_is_not_echoed() -> None:
    """The user part may carry a password: the message shows it as ***."""
    with pytest.raises(ValueError, match=r"'tcp://\*\*\*@h:1' has a user") as caught:
        parse_url("tcp://me:s3cret@h:1")
    assert "s3cret" not in str(caught.value)
    assert "me" not in str(caught.value).partition(" has ")[0]


def test_ws_keeps_its_path_and_query() -> None:
    """ws/wss take a path and a query: both go into the HTTP request."""
    assert parse_url("ws://h:1/rsio?token=x").path == "/rsio?token=x"
    assert parse_url("wss://h/a%23b").path == "/a%23b"


def test_url_must_be_str() -> None:
    with pytest.raises(TypeError):
        parse_url(b"tcp://127.0.0.1:1")  # type: ignore[arg-type]


def test_split_name() -> None:
    """A name is a path plus query parameters."""
    assert split_name("sensors/temp?from=100&unit=C") == ("sensors/temp", {"from": "100", "unit": "C"})
    assert split_name("a%20b") == ("a b", {})
    assert split_name("x?flag") == ("x", {"flag": ""})


def test_router_exact_pattern_and_factory() -> None:
    """Exact names first, then ``{field}`` patterns; factories get path fields and query params."""
    seen: list[dict[str, str]] = []

    def factory(params: dict[str, str]) -> Any:
        seen.append(params)
        return just(b"x")

    fixed = just(b"fixed")
    router = Router({"sensors/all": fixed, "sensors/{id}": factory})
    assert router.resolve("sensors/all") == (fixed, None)
    router.resolve("sensors/t1?from=3")
    assert seen == [{"from": "3", "id": "t1"}]
    with pytest.raises(UnknownPublisherError):
        router.resolve("sensors/t1/extra")
    with pytest.raises(UnknownPublisherError):
        router.resolve("other")


def test_router_callable() -> None:
    """A callable offer gets (path, params) and may answer None for unknown names."""
    router = Router(lambda path, params: just(path.encode()) if path == "ok" else None)
    assert router.resolve("ok?a=1") is not None
    with pytest.raises(UnknownPublisherError):
        router.resolve("nope")


def test_router_rejects_bad_offers() -> None:
    """Offers are checked where they are made."""
    with pytest.raises(TypeError):
        Router({"x": 42})
    with pytest.raises(TypeError):
        Router(42)  # type: ignore[arg-type]


def test_an_offered_name_cannot_hold_a_question_mark() -> None:
    """'x?y' could never be matched (a requested name's '?' starts its parameters): refused."""
    from rstreams.net._routes import NameTable

    with pytest.raises(ValueError, match=r"the name 'x\?y' cannot be offered: '\?' starts"):
        Router({"x?y": just(b"a")})
    with pytest.raises(ValueError, match=r"offer 'events/\{kind\}'"):
        NameTable({"events/{kind}?v=1": print})  # message handlers are named alike


@pytest.mark.asyncio
@pytest.mark.timeout(10)
async def test_serve_and_connect_check_their_arguments_first() -> None:
    """Bad water marks, offers or URLs raise at the call, before any socket is opened."""
    from rstreams.net import connect, serve

    with pytest.raises(ValueError, match="low_water"):
        await serve("tcp://127.0.0.1:0", {}, high_water=10, low_water=20)
    with pytest.raises(TypeError):
        await serve("tcp://127.0.0.1:0", 42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="low_water"):
        await connect("tcp://127.0.0.1:1", high_water=0)
    with pytest.raises(ValueError, match="scheme"):
        await connect("ftp://127.0.0.1:1")
