"""Subscribe metadata over a real connection (extension metadata, PROTOCOL.md §18): what the
factory, the authorize hook and the Publisher see, and a peer without the extension."""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.errors import LocalProtocolError
from rstreams.net import Metadata, connect, serve, subscribe_metadata
from rstreams.wire import ConnectionConfig

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

OLD = ConnectionConfig(disabled_extensions=frozenset({5}))
TRACE = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
SEEN: list[tuple[str, Metadata]] = []


def _echo(params: dict[str, str]) -> Publisher[bytes]:
    """A factory answering with the traceparent it sees (or b"none")."""
    metadata = subscribe_metadata()
    SEEN.append(("factory", metadata))
    return rstreams.from_iterable([(metadata.traceparent or "none").encode()])


@pytest.fixture(autouse=True)
def _clear() -> None:
    SEEN.clear()


async def test_the_factory_sees_the_metadata_of_each_subscribe() -> None:
    async with await serve("tcp://127.0.0.1:0", {"echo": _echo}) as server, await connect(server.url) as conn:
        assert (
            await conn.request("echo", metadata={"traceparent": TRACE}) == TRACE.encode()
        )  # before the hello
        flow = conn.publisher("echo", metadata={"traceparent": TRACE, "x-tenant": b"acme"})
        assert [x async for x in flow] == [TRACE.encode()]
        assert [x async for x in flow] == [TRACE.encode()]  # every subscribe carries them
        assert await conn.request("echo") == b"none"
    assert [dict(m) for _, m in SEEN] == [
        {"traceparent": TRACE.encode()},
        {"traceparent": TRACE.encode(), "x-tenant": b"acme"},
        {"traceparent": TRACE.encode(), "x-tenant": b"acme"},
        {},
    ]
    assert SEEN[1][1].text("x-tenant") == "acme"
    assert subscribe_metadata() == {}  # outside a subscribe: empty


async def test_the_authorize_hook_sees_them_too() -> None:
    def authorize(principal: Any, name: str) -> bool:
        return subscribe_metadata().get("x-tenant") == b"acme"

    async with (
        await serve(
            "tcp://127.0.0.1:0", {"echo": _echo}, authenticate=lambda c: "p", authorize=authorize
        ) as server,
        await connect(server.url, auth="t") as conn,
    ):
        assert await conn.request("echo", metadata={"x-tenant": "acme"}) == b"none"
        with pytest.raises(rstreams.net.Unauthorized):
            await conn.request("echo", metadata={"x-tenant": "other"})


@pytest.mark.parametrize(("server_config", "client_config"), [(OLD, None), (None, OLD)])
async def test_a_peer_without_the_extension_gets_the_subscribe_without_them(
    server_config: ConnectionConfig | None, client_config: ConnectionConfig | None
) -> None:
    async with (
        await serve("tcp://127.0.0.1:0", {"echo": _echo}, config=server_config) as server,
        await connect(server.url, config=client_config) as conn,
    ):
        assert await conn.request("echo", metadata={"traceparent": TRACE}) == b"none"
    assert [dict(m) for _, m in SEEN] == [{}]


@pytest.mark.parametrize(("server_config", "client_config"), [(OLD, None), (None, OLD)])
async def test_metadata_required_fails_instead_of_sending_without_them(
    server_config: ConnectionConfig | None, client_config: ConnectionConfig | None
) -> None:
    async with (
        await serve("tcp://127.0.0.1:0", {"echo": _echo}, config=server_config) as server,
        await connect(server.url, config=client_config) as conn,
    ):
        with pytest.raises(LocalProtocolError, match=r"extension metadata \(id 5\) \(PROTOCOL\.md §18\.1\)"):
            await conn.request("echo", metadata={"traceparent": TRACE}, metadata_required=True)
        flow = conn.publisher("echo", metadata={"traceparent": TRACE}, metadata_required=True)
        with pytest.raises(LocalProtocolError, match="metadata_required=True"):
            [x async for x in flow]
        assert (
            await conn.request("echo", metadata_required=True) == b"none"
        )  # no metadata: nothing to require
    assert [dict(m) for _, m in SEEN] == [{}]  # the failed subscribes never reached the server


async def test_metadata_required_with_the_extension_sends_them() -> None:
    async with await serve("tcp://127.0.0.1:0", {"echo": _echo}) as server, await connect(server.url) as conn:
        assert (
            await conn.request("echo", metadata={"traceparent": TRACE}, metadata_required=True)
            == TRACE.encode()
        )
        flow = conn.publisher("echo", metadata={"traceparent": TRACE}, metadata_required=True)
        assert [x async for x in flow] == [TRACE.encode()]


async def test_bad_metadata_is_refused_at_the_call() -> None:
    async with await serve("tcp://127.0.0.1:0", {"echo": _echo}) as server, await connect(server.url) as conn:
        with pytest.raises(ValueError, match=r"§18\.1"):
            conn.publisher("echo", metadata={"Trace": "x"})
        with pytest.raises(TypeError, match="str or bytes"):
            conn.publisher("echo", metadata={"n": 1})  # type: ignore[dict-item]
