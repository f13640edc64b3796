"""Structured records on the rstreams loggers; every frame at DEBUG with secrets redacted."""

from __future__ import annotations

import logging
from typing import Any

import pytest

import rstreams
from rstreams.net import UserPassword, connect, serve
from rstreams.observe._log import describe, redact_name
from rstreams.wire import ExtensionMessage, Subscribe

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

SECRET = "CANARY-s3cret-5521"


def readings(params: dict[str, str]) -> Any:
    return rstreams.range(int(params.get("n", "2"))).map(lambda i: b"reading")


def check(credentials: Any) -> Any:
    if getattr(credentials, "token", None) == SECRET or getattr(credentials, "password", None) == SECRET:
        return "alice"
    return None


async def test_connection_and_subscription_records_carry_their_ids(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rstreams.streams")
    async with await serve("tcp://127.0.0.1:0", {"sensors/{id}": readings}) as server:
        with pytest.raises(RuntimeError, match="counts nothing"):
            server.metrics()  # logging does not turn counting on for server.metrics()
        async with await connect(server.url) as conn:
            assert [x async for x in conn.publisher("sensors/kitchen?n=2")] == [b"reading"] * 2
            [served] = server.connections
        await served.wait_closed()
    server_side = [r for r in caplog.records if r.name == "rstreams.streams" and "subscriber" in r.__dict__]
    assert [(r.event, r.subscriber, r.publisher) for r in server_side] == [  # type: ignore[attr-defined]
        ("subscription opened", 1, "sensors/kitchen?n=2"),
        ("subscription completed", 1, "sensors/kitchen?n=2"),
    ]
    events = [r.event for r in caplog.records if r.name == "rstreams.streams"]  # type: ignore[attr-defined]
    assert {"connection opened", "goodbye received", "connection closed"} <= set(events)
    assert all(isinstance(r.connection, int) and r.connection > 0 for r in caplog.records)  # type: ignore[attr-defined]


async def test_every_frame_at_debug_and_no_secret_anywhere(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="rstreams.streams")
    caplog.set_level(logging.DEBUG, logger="rstreams.frames")  # last: it sets the capture's level too
    server = await serve("tcp://127.0.0.1:0", {"sensors/{id}": readings}, authenticate=check)
    async with server, await connect(server.url, auth=SECRET) as conn:
        name = f"sensors/attic?n=1&token={SECRET}&api_key={SECRET}"
        assert await conn.request(name) == b"reading"
        per_subscription = conn.publisher("sensors/cellar?n=1", auth=UserPassword("alice", SECRET))
        assert [x async for x in per_subscription] == [b"reading"]
    frames = [r.getMessage() for r in caplog.records if r.name == "rstreams.frames"]
    for kind in ("ClientHello", "ServerHello", "Subscribe", "OnSubscribe", "OnNext", "OnComplete", "Goodbye"):
        assert any(f" {kind} " in line or line.endswith(f" {kind}") for line in frames), kind
    assert any(" sent " in line for line in frames) and any(" received " in line for line in frames)
    assert any("ExtensionMessage type=132" in line for line in frames)  # the credentials, as a size
    assert any("token=<redacted>&api_key=<redacted>" in line for line in frames)
    assert caplog.records, "nothing was logged"
    for record in caplog.records:
        assert SECRET not in record.getMessage()
        assert SECRET not in repr(record.__dict__)


async def test_nothing_listens_nothing_is_observed() -> None:
    logging.getLogger("rstreams.frames").setLevel(logging.NOTSET)
    server = await serve("tcp://127.0.0.1:0", {"n": rstreams.just(b"x")})
    async with server, await connect(server.url) as conn:
        assert await conn.request("n") == b"x"
        assert conn._pump.outbox.observer is None
        [served] = server.connections
        assert served._pump.outbox.observer is None


async def test_describe_shows_sizes_and_redacts_names() -> None:
    assert (
        redact_name("a/b?from=1&password=x&Auth-Token=y")
        == "a/b?from=1&password=<redacted>&Auth-Token=<redacted>"
    )
    line = describe(Subscribe(publisher=f"s?secret={SECRET}", subscriber=3, initial_demand=8))
    assert line == "Subscribe publisher='s?secret=<redacted>' subscriber=3 initial_demand=8"
    assert describe(ExtensionMessage(type=0x84, payload=SECRET.encode())) == (
        f"ExtensionMessage type=132 payload=<{len(SECRET)} bytes>"
    )
