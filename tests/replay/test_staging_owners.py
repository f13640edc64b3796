"""Uploads that name their owner (PROTOCOL.md §21.8): the staging area drops those no publish can
take any more (a run of the writer killed before its commit, a task's other attempts), so nothing
leaks, however often a writer is killed between its uploads and its commit; what is published stays
exactly once. Through a real server (no Spark), on a channel and by the reverse subscription."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher
from rstreams.net import RemoteStreamError, connect
from rstreams.replay import RemoteLogError, ReplayLog, fetch_range, request_json, upload
from rstreams.replay import _client as client_module
from rstreams.replay import _server as server_module
from rstreams.replay._staging import Owner, Staging
from rstreams.wire import ConnectionConfig

pytestmark = pytest.mark.timeout(60)

WAYS = {"channel": None, "reversed": ConnectionConfig(disabled_extensions=frozenset({8, 9}))}


@pytest.fixture(params=list(WAYS.values()), ids=list(WAYS))
def sink(request: pytest.FixtureRequest, serve: Any) -> tuple[Any, ReplayLog]:
    """A server with the sink log ``out``, uploaded to on a channel or by the reverse subscription."""
    out = ReplayLog("out", capacity=1000)
    return serve({}, sinks={"out": out}, config=request.param, staging_bytes=1000), out


def staged(server: Any) -> dict[str, tuple[int, Owner | None]]:
    result: dict[str, tuple[int, Owner | None]] = server._stagings["out"].staged()
    return result


def publish(server: Any, writer: str, batch: int, *tokens: str) -> dict[str, Any]:
    return request_json(server.url, f"out?publish={batch}&writer={writer}&tokens={','.join(tokens)}")


def rows_of(server: Any, out: ReplayLog) -> list[bytes]:
    return fetch_range(server.url, "out", 0, out.end, pack=0)


def test_a_publish_drops_the_uploads_of_its_batch_it_does_not_name(sink: tuple[Any, ReplayLog]) -> None:
    """A task's other attempt (retried, speculative) staged batch 5 too; the publish names the
    committed attempts only, and the other goes with it. Other writers, other batches and uploads
    naming no owner stay."""
    server, out = sink
    url = server.url
    assert upload(url, "out", "p0", [b"a"], writer="w", batch=5, run="r") == 1
    assert upload(url, "out", "p1", [b"b"], writer="w", batch=5, run="r") == 1
    assert upload(url, "out", "p1-again", [b"b"], writer="w", batch=5, run="r") == 1
    assert upload(url, "out", "later", [b"c"], writer="w", batch=6, run="r") == 1
    assert upload(url, "out", "other", [b"d"], writer="v", batch=5, run="r") == 1
    assert upload(url, "out", "plain", [b"e"]) == 1
    assert publish(server, "w", 5, "p0", "p1") == {"published": True, "count": 2}
    assert staged(server) == {
        "later": (1, Owner(writer="w", batch=6, run="r")),
        "other": (1, Owner(writer="v", batch=5, run="r")),
        "plain": (1, None),
    }
    assert server.sink_statistics("out") == {"published": 1, "refused": 0, "dropped": 1, "expired": 0}
    assert rows_of(server, out) == [b"a", b"b"]


def test_a_batch_re_run_after_its_publish_keeps_nothing_and_is_refused_once(
    sink: tuple[Any, ReplayLog],
) -> None:
    """The writer was killed after its publish and before it knew: the re-run of the batch uploads
    again; those uploads are counted and keep no rows, the publish is refused, nothing is left."""
    server, out = sink
    url = server.url
    assert upload(url, "out", "t1", [b"a", b"b"], writer="w", batch=0, run="r1") == 2
    assert publish(server, "w", 0, "t1") == {"published": True, "count": 2}
    assert upload(url, "out", "t2", [b"a", b"b"], writer="w", batch=0, run="r2") == 2
    assert upload(url, "out", "t3", [b"x"], writer="w", batch=0, run="r2") == 1
    assert staged(server) == {}
    assert publish(server, "w", 0, "t2") == {"published": False, "count": 0}
    assert staged(server) == {} and server._stagings["out"].staged_bytes == 0
    assert rows_of(server, out) == [b"a", b"b"]


def test_a_new_run_drops_what_the_runs_before_it_staged(sink: tuple[Any, ReplayLog]) -> None:
    """The driver was killed between the uploads and the commit: the restarted query (a new run)
    uploads the batch again. Its first upload drops every upload of the writer's earlier runs, of
    any batch; a late upload of a run that is over keeps nothing; the publish takes the new run's
    rows, once. Another writer's run and a writer's uploads naming no run stay."""
    server, out = sink
    url = server.url
    assert upload(url, "out", "k0", [b"old0"], writer="w", batch=7, run="r1") == 1
    assert upload(url, "out", "k1", [b"old1"], writer="w", batch=7, run="r1") == 1
    assert upload(url, "out", "k2", [b"old2"], writer="w", batch=6, run="r1") == 1
    assert upload(url, "out", "v0", [b"v"], writer="v", batch=7, run="r1") == 1
    assert upload(url, "out", "norun", [b"n"], writer="w", batch=9) == 1
    assert upload(url, "out", "n0", [b"new0"], writer="w", batch=7, run="r2") == 1
    assert set(staged(server)) == {"v0", "norun", "n0"}
    assert server.sink_statistics("out")["dropped"] == 3
    assert upload(url, "out", "zombie", [b"late"], writer="w", batch=7, run="r1") == 1  # counted, not kept
    assert upload(url, "out", "n1", [b"new1"], writer="w", batch=7, run="r2") == 1
    assert set(staged(server)) == {"v0", "norun", "n0", "n1"}
    with pytest.raises(RemoteLogError, match="upload 'k0' is not staged here"):
        publish(server, "w", 7, "k0", "k1")  # the killed run's commit, had it come: refused whole
    assert publish(server, "w", 7, "n0", "n1") == {"published": True, "count": 2}
    assert set(staged(server)) == {"v0", "norun"}
    assert rows_of(server, out) == [b"new0", b"new1"]


def test_repeated_kills_between_upload_and_commit_never_fill_the_staging_area(
    sink: tuple[Any, ReplayLog],
) -> None:
    """Each run stages the same batch (400 bytes) under new tokens and is killed before its commit;
    the bound (1000 bytes) holds two and a half such batches. Without owners the third run would
    fail with StagingFullError; with them each run drops the one before, and the last publishes the
    batch once."""
    server, out = sink
    url = server.url
    batch = [bytes([65 + i]) * 100 for i in range(4)]
    for run in range(10):
        for part in range(2):
            rows = batch[2 * part : 2 * part + 2]
            assert upload(url, "out", f"r{run}-p{part}", rows, writer="q", batch=3, run=f"run{run}") == 2
        assert server._stagings["out"].staged_bytes == 400
    assert publish(server, "q", 3, "r9-p0", "r9-p1") == {"published": True, "count": 4}
    assert staged(server) == {} and server._stagings["out"].staged_bytes == 0
    assert rows_of(server, out) == batch
    assert server.sink_statistics("out") == {"published": 1, "refused": 0, "dropped": 18, "expired": 0}
    with pytest.raises(RemoteLogError, match="StagingFullError"):  # the bound itself is unchanged
        upload(url, "out", "plain", [b"x" * 1001])


def test_rows_of_an_upload_its_run_outlived_are_refused_as_they_arrive() -> None:
    """A task of a killed driver still uploading when the next run begins: its upload is dropped,
    and its rows that arrive later are refused (it is not staged beside the new run's)."""
    staging = Staging(ReplayLog("out", capacity=10), 10_000)
    old = staging.begin("t1", Owner(writer="w", batch=0, run="r1"))
    staging.add("t1", [b"a"], old)
    new = staging.begin("t2", Owner(writer="w", batch=0, run="r2"))
    with pytest.raises(Exception, match="upload 't1' was discarded, published or began again"):
        staging.add("t1", [b"b"], old)
    staging.add("t2", [b"c"], new)
    assert staging.staged() == {"t2": (1, Owner(writer="w", batch=0, run="r2"))}
    assert staging.staged_bytes == 1 and staging.dropped == 1


CURRENT_CHANNELS = server_module._stage_channels


def old_channels(stagings: Any) -> dict[str, Callable[[Publisher[Any], dict[str, str]], Publisher[Any]]]:
    """The upload channels of a server from before owners: ``NAME?stage=T`` only, as it refused
    any other parameter (its text, byte for byte)."""
    current = CURRENT_CHANNELS(stagings)

    def factory(name: str) -> Callable[[Publisher[Any], dict[str, str]], Publisher[Any]]:
        def open_channel(rows: Publisher[Any], params: dict[str, str]) -> Publisher[Any]:
            if set(params) != {"stage"} or not params["stage"]:
                return rstreams.error(
                    server_module.LogRequestError(
                        f"sink log {name!r}: an upload channel is named {name}?stage=TOKEN and takes no "
                        f"other parameter; got {sorted(params)} (PROTOCOL.md §21.8)"
                    )
                )
            opened = current[name](rows, params)
            assert opened is not None
            return opened

        return open_channel

    return {name: factory(name) for name in stagings}


def test_a_server_from_before_owners_gets_the_upload_without_one(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its channel refuses the owner's parameters: the client opens ``NAME?stage=T`` alone on the
    same connection, and the rows are staged (without an owner) and published as before."""
    monkeypatch.setattr(server_module, "_stage_channels", old_channels)
    channels: list[str] = []
    original = client_module._upload_on_channel

    async def spy(conn: Any, name: str, rows: Callable[[], Iterator[bytes]]) -> int:
        channels.append(name)
        return await original(conn, name, rows)

    monkeypatch.setattr(client_module, "_upload_on_channel", spy)
    out = ReplayLog("out", capacity=100)
    server = serve({}, sinks={"out": out})
    rows = (row for row in [b"x", b"y" * 70_000, b"z"])
    assert upload(server.url, "out", "t1", rows, writer="w w", batch=2, run="r") == 3
    assert channels == ["out?stage=t1&writer=w%20w&batch=2&run=r", "out?stage=t1"]
    assert staged(server) == {"t1": (3, None)}
    assert publish(server, "w", 2, "t1") == {"published": True, "count": 3}
    assert rows_of(server, out) == [b"x", b"y" * 70_000, b"z"]


async def refused_header(url: str, header: bytes) -> str:
    """An upload by the reverse subscription with ``header``; what its ``out?staged=t`` says."""
    conn = await connect(url, publishers={"rstreams/upload": rstreams.just(header, b"row")})
    try:
        await asyncio.wait_for(conn.request("out?staged=t"), 10)
        return "staged"
    except RemoteStreamError as error:
        return error.message
    finally:
        await conn.aclose()


def test_a_header_with_a_malformed_owner_fails_the_upload(serve: Any) -> None:
    server = serve({}, sinks={"out": ReplayLog("out", capacity=10)})
    said = asyncio.run(
        refused_header(server.url, b'{"log": "out", "token": "t", "writer": "w", "batch": "1"}')
    )
    assert said == (
        "LogRequestError: sink log 'out': an upload names its owner as writer W and batch B together "
        "(B an integer from 0 to 2**63 - 1), and optionally run R, none of them empty; got "
        "writer='w', batch='1', run=None (PROTOCOL.md §21.8)"
    )
    assert staged(server) == {}


def test_owner_arguments_go_together() -> None:
    with pytest.raises(ValueError, match="writer= and batch= go together"):
        upload("tcp://127.0.0.1:1", "out", "t", [], batch=1)
    with pytest.raises(ValueError, match="writer= and batch= go together"):
        upload("tcp://127.0.0.1:1", "out", "t", [], writer="w", run="r")


def test_a_late_upload_of_a_run_announced_before_the_newest_is_refused() -> None:
    """Runs announced as they start (``NAME?discard=&run=R``) are ordered by it: a task of the killed
    run r1 whose upload begins after the restarted run r2's first (to a log r1 had not used) keeps
    no rows and drops nothing, instead of being taken for the newest run."""
    staging = Staging(ReplayLog("out", capacity=10), 10_000)
    staging.start("r1")
    staging.start("r2")
    staging.start("r1")  # announced again: keeps its place
    new = staging.begin("t2", Owner(writer="w", batch=0, run="r2"))
    staging.add("t2", [b"new"], new)
    late = staging.begin("t1", Owner(writer="w", batch=0, run="r1"))
    staging.add("t1", [b"late"], late)  # counted, kept nowhere
    assert staging.staged() == {"t2": (1, Owner(writer="w", batch=0, run="r2"))}
    assert staging.dropped == 0
    assert staging.publish("w", 0, ["t2"]).result(5) == {"published": True, "count": 1}


def test_an_earlier_run_uploading_before_the_newest_run_began_is_dropped_by_it() -> None:
    """Before the restarted run's first upload, a late task of the killed run is still its writer's
    newest run: staged, then dropped by the restarted run's first upload."""
    staging = Staging(ReplayLog("out", capacity=10), 10_000)
    staging.start("r1")
    staging.start("r2")
    staging.add("t1", [b"late"], staging.begin("t1", Owner(writer="w", batch=0, run="r1")))
    staging.add("t2", [b"new"], staging.begin("t2", Owner(writer="w", batch=0, run="r2")))
    assert staging.staged() == {"t2": (1, Owner(writer="w", batch=0, run="r2"))}
    assert staging.dropped == 1


def test_a_run_is_announced_with_discard(sink: tuple[Any, ReplayLog]) -> None:
    server, _ = sink
    url = server.url
    assert request_json(url, "out?discard=&run=r1")["discarded"] == 0
    assert request_json(url, "out?discard=&run=r2")["discarded"] == 0
    assert upload(url, "out", "new", [b"n"], writer="w", batch=0, run="r2") == 1
    assert upload(url, "out", "late", [b"l"], writer="w", batch=0, run="r1") == 1
    assert staged(server) == {"new": (1, Owner(writer="w", batch=0, run="r2"))}
    with pytest.raises(RemoteLogError, match=r"run=R goes with discard= on a sink log"):
        request_json(url, "out?run=r1")
