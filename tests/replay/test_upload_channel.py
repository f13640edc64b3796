"""Uploads to a sink log on a channel (PROTOCOL.md §21.8), and the reverse subscription kept for
servers without extensions channels and input-parts: through a real RS.io server (no Spark)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscription
from rstreams.net import RemoteStreamError, connect
from rstreams.replay import LogLookupError, RemoteLogError, ReplayLog, fetch_range, pack, request_json, upload
from rstreams.replay import _client as client_module
from rstreams.replay import _server as server_module
from rstreams.replay import _staging as staging_module
from rstreams.replay._staging import Owner
from rstreams.wire import ConnectionConfig

pytestmark = pytest.mark.timeout(60)

BIG = 1024 * 1024 + 3
"""A row far above 64 KiB (an Arrow batch): it travels split (§21.6 on a channel, §8 reversed)."""


@pytest.fixture
def reversed_uploads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tokens uploaded by the reverse subscription (the rest went on channels)."""
    tokens: list[str] = []
    original = client_module._upload_reversed

    async def spy(url: str, log: str, token: str, rows: Iterator[bytes], access: Any, owner: Any) -> int:
        tokens.append(token)
        return await original(url, log, token, rows, access, owner)

    monkeypatch.setattr(client_module, "_upload_reversed", spy)
    return tokens


def rows_with_big_ones() -> list[bytes]:
    return [b"a", bytes(range(256)) * 300, b"b" * BIG, b"", b"c" * (64 * 1024 + 1), b"d"]


def published(server: Any, log: ReplayLog, tokens: str, batch: int = 0) -> list[bytes]:
    answer = request_json(server.url, f"{log.name}?publish={batch}&writer=w&tokens={tokens}")
    assert answer["published"] is True
    end = log.info()["end"]
    return fetch_range(server.url, log.name, end - answer["count"], end, pack=0)


def test_an_upload_goes_on_a_channel_with_rows_above_64_kib_split(
    serve: Any, reversed_uploads: list[str]
) -> None:
    """A default server offers channels and input-parts: the rows, a 1 MiB one among them,
    are staged on the channel as they were sent, none by the reverse subscription."""
    out = ReplayLog("out", capacity=100)
    server = serve({}, sinks={"out": out})
    rows = rows_with_big_ones()
    assert upload(server.url, "out", "t1", iter(rows)) == len(rows)
    assert upload(server.url, "out", "t2", [b"e"]) == 1
    assert reversed_uploads == []
    assert published(server, out, "t1,t2") == [*rows, b"e"]


WITHHELD = {"no channels": frozenset({8, 9}), "no input-parts": frozenset({9})}


@pytest.mark.parametrize("withheld", WITHHELD.values(), ids=WITHHELD.keys())
def test_a_server_without_the_extensions_gets_the_reverse_subscription(
    serve: Any, reversed_uploads: list[str], withheld: frozenset[int]
) -> None:
    """Without channels, or with channels but no input-parts (a row above 64 KiB could not be
    sent), the client uploads as before: the same rows staged, the same count."""
    out = ReplayLog("out", capacity=100)
    server = serve({}, sinks={"out": out}, config=ConnectionConfig(disabled_extensions=withheld))
    rows = rows_with_big_ones()
    assert upload(server.url, "out", "t1", iter(rows)) == len(rows)
    assert reversed_uploads == ["t1"]
    assert published(server, out, "t1") == rows


def test_a_server_without_the_upload_channel_gets_the_reverse_subscription(
    serve: Any, reversed_uploads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that offers the extensions but no channel ``NAME?stage=T`` (one from before
    uploads on channels) refuses it as an unknown name: the client uploads the other way."""
    monkeypatch.setattr(server_module, "_stage_channels", lambda stagings: {})
    out = ReplayLog("out", capacity=100)
    server = serve({}, sinks={"out": out})
    assert upload(server.url, "out", "t1", (row for row in [b"x", b"y" * BIG])) == 2
    assert reversed_uploads == ["t1"]
    assert published(server, out, "t1") == [b"x", b"y" * BIG]


def test_a_server_that_refuses_mid_upload_stops_the_rows(serve: Any, reversed_uploads: list[str]) -> None:
    """A staging area that fills up fails the channel's output; the tie (§21.5) cancels the
    input, so the client stops taking rows. The token stages nothing; the server goes on."""
    out = ReplayLog("out", capacity=10_000)
    server = serve({}, sinks={"out": out}, staging_bytes=10_000)
    produced: list[int] = []

    def rows() -> Iterator[bytes]:
        for i in range(100_000):
            produced.append(i)
            yield b"y" * 100

    with pytest.raises(RemoteLogError, match=r"StagingFullError: sink log 'out': staging area full.*10,000"):
        upload(server.url, "out", "t1", rows(), timeout=25)
    assert len(produced) < 10_000  # about a window's worth, not all
    assert reversed_uploads == []
    assert server._stagings["out"].staged_bytes == 0
    assert upload(server.url, "out", "t2", [b"z" * 100] * 90) == 90
    assert published(server, out, "t2") == [b"z" * 100] * 90


def test_an_upload_cut_by_a_server_restart_is_staged_once(
    serve: Any, reversed_uploads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server goes away mid-upload and comes back: the next attempt sends every row again
    under the same token, on a channel, and the batch holds each row once."""
    # The server stops from inside the upload's row source, on the client's loop, which cannot
    # answer its goodbye meanwhile: the stop waits out CLOSE_TIMEOUT (5 s) before it ends the
    # connection; 0.2 s ends it the same way.
    monkeypatch.setattr("rstreams.net._server.CLOSE_TIMEOUT", 0.2)
    out = ReplayLog("out", capacity=10_000)
    first = serve({}, sinks={"out": out})
    url = first.url
    servers = [first]

    def rows() -> Iterator[bytes]:
        for i in range(3_000):
            if i == 1_500:
                servers[0].stop()
                servers[0] = serve({}, sinks={"out": out}, url=url)
            yield str(i).encode()

    assert upload(url, "out", "t1", rows(), timeout=30) == 3_000
    assert reversed_uploads == []
    assert published(servers[0], out, "t1") == [str(i).encode() for i in range(3_000)]


async def opened(url: str, name: str, rows: list[bytes]) -> Any:
    conn = await connect(url)
    try:
        return await asyncio.wait_for(conn.channel(name, rstreams.from_iterable(rows)).first(), 10)
    except RemoteStreamError as error:
        return f"error: {error.message}"
    finally:
        await conn.aclose()


def test_the_channel_and_its_name_over_rs_io(serve: Any) -> None:
    """The channel takes packed rows and answers one JSON element; an element that is not one
    packed element, or a wrong name, is an error naming the rule, and the name as a plain
    subscription is refused saying it is a channel."""
    server = serve({"src": ReplayLog("src", capacity=10)}, sinks={"out": ReplayLog("out", capacity=10)})
    assert asyncio.run(opened(server.url, "out?stage=t1", [pack([b"a"]), pack([b"b"])])) == b'{"count": 2}'
    assert asyncio.run(opened(server.url, "out?stage=t5", [pack([b"a"]), pack([b"b"])[:-1]])) == (
        "error: LogRequestError: sink log 'out': an upload channel's input elements are packed rows "
        "(docs/replay.md, The pack format); got 8 bytes that are not one (PROTOCOL.md §21.8)"
    )
    assert asyncio.run(opened(server.url, "out?stage=t6", [b"ab"])).startswith("error: LogRequestError")
    assert asyncio.run(opened(server.url, "out?stage=", [b"a"])) == (
        "error: LogRequestError: sink log 'out': an upload channel is named out?stage=TOKEN, optionally "
        "with &writer=W&batch=B&run=R, and takes no other parameter; got ['stage'] (PROTOCOL.md §21.8)"
    )
    owned = "out?stage=t7&writer=w&batch=3&run=r"
    assert asyncio.run(opened(server.url, owned, [pack([b"a"])])) == b'{"count": 1}'
    for bad, given in [
        ("writer=w", "writer='w', batch=None, run=None"),
        ("batch=3", "writer=None, batch=3, run=None"),
        ("writer=w&batch=-1", "writer='w', batch='-1', run=None"),
        ("writer=w&batch=9223372036854775808", "writer='w', batch=9223372036854775808, run=None"),
        ("writer=&batch=1", "writer='', batch=1, run=None"),
        ("writer=w&batch=1&run=", "writer='w', batch=1, run=''"),
        ("run=r", "writer=None, batch=None, run='r'"),
    ]:
        assert asyncio.run(opened(server.url, f"out?stage=t8&{bad}", [pack([b"a"])])) == (
            "error: LogRequestError: sink log 'out': an upload names its owner as writer W and batch B "
            "together (B an integer from 0 to 2**63 - 1), and optionally run R, none of them empty; got "
            f"{given} (PROTOCOL.md §21.8)"
        )
    staged = server._stagings["out"].staged()
    assert staged["t1"] == (2, None) and staged["t7"] == (1, Owner(writer="w", batch=3, run="r"))
    assert "t8" not in staged
    assert "takes no other parameter; got ['from', 'stage']" in asyncio.run(
        opened(server.url, "out?stage=t2&from=0", [b"a"])
    )
    assert asyncio.run(opened(server.url, "src?stage=t3", [b"a"])) == (
        "error: no channel named 'src' (PROTOCOL.md §21.3)"
    )
    with pytest.raises(RemoteLogError, match=r"out\?stage=T is a channel, not a publisher"):
        request_json(server.url, "out?stage=t4")
    assert request_json(server.url, "out?staged=t1") == {"count": 2}  # what the channel staged


def test_a_channel_upload_is_authorized_by_the_log_it_names(serve: Any) -> None:
    """``authorize`` sees the channel's log name, as for every request on a log."""
    sinks = {"open": ReplayLog("open", capacity=10), "closed": ReplayLog("closed", capacity=10)}
    server = serve({}, sinks=sinks, authorize=lambda who, name: name != "closed")
    assert asyncio.run(opened(server.url, "open?stage=t1", [pack([b"x"])])) == b'{"count": 1}'
    refused = asyncio.run(opened(server.url, "closed?stage=t2", [pack([b"y"])]))
    assert isinstance(refused, str) and refused.startswith("error: unauthorized"), refused
    assert server._stagings["closed"].staged_bytes == 0


class _Upstream(Subscription):
    def __init__(self) -> None:
        self.requested = 0
        self.cancelled = False

    def request(self, n: int) -> None:
        self.requested += n

    def cancel(self) -> None:
        self.cancelled = True


def test_late_rows_of_an_attempt_cut_short_are_not_staged() -> None:
    """The client's next attempt discards the token and uploads again; rows of the earlier
    attempt that the server reads only then (its connection not yet seen to end) are refused,
    not staged beside the new attempt's: the token holds each row once."""
    staging = staging_module.Staging(ReplayLog("out", capacity=10), 10_000)
    early = staging.begin("t1")
    stale = server_module._Stager(early, staging, "t1")
    upstream = _Upstream()
    stale.on_subscribe(upstream)
    staging.discard(["t1"])  # the next attempt's first request
    later = staging.begin("t1")
    staging.add("t1", [b"a", b"b"], later)
    stale.on_next(b"late")
    stale.on_complete()
    assert upstream.cancelled
    with pytest.raises(LogLookupError, match="upload 't1' was discarded, published or began again"):
        early.result(0)
    assert not later.done() and staging.staged_bytes == 2
    again = staging.begin("t1")  # a third attempt without a discard: the second can stage no more
    with pytest.raises(LogLookupError, match="began again"):
        later.result(0)
    assert not again.done()


async def extensions_after_a_request(url: str) -> frozenset[int]:
    conn = await connect(url)
    try:
        await asyncio.wait_for(conn.request("rstreams/logs"), 10)
        return conn.extensions
    finally:
        await conn.aclose()


def test_the_extensions_a_client_picks_by_are_known_after_an_answer(serve: Any) -> None:
    """Connection.extensions: the active set, known once an answer has come (the hello precedes it)."""
    default = serve({}, sinks={"out": ReplayLog("out", capacity=10)})
    assert {8, 9} <= asyncio.run(extensions_after_a_request(default.url))
    withheld = serve(
        {},
        sinks={"out": ReplayLog("out", capacity=10)},
        config=ConnectionConfig(disabled_extensions=frozenset({9})),
    )
    active = asyncio.run(extensions_after_a_request(withheld.url))
    assert 8 in active and 9 not in active
