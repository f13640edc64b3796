"""ReplayServer: the naming convention and the sink uploads, through a real RS.io server (no Spark)."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import itertools
import queue
import re
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.errors import AuthRequiredError, ConnectionBrokenError
from rstreams.net._transport import TLS_ENDED_BEFORE_HELLO, TLS_REFUSAL_HINT
from rstreams.replay import (
    UPLOAD_NAME,
    Access,
    AccessDeniedError,
    LogEndedError,
    LogLookupError,
    LogRequestError,
    RemoteLogError,
    ReplayLog,
    ReplayServer,
    ReplayTimeoutError,
    ServerAlreadyRunningError,
    ServerNotRunningError,
    ServerUnavailableError,
    TLSHandshakeError,
    fetch_range,
    replay_offer,
    request_json,
    stream_range,
    unpack,
    upload,
)
from rstreams.wire import ErrorCode
from testkit.bound import WAIT
from testkit.net import assert_collected_closes_its_loop
from testkit.recording import RecordingSubscriber
from testkit.tls import TestCA, server_context

pytestmark = pytest.mark.timeout(30)


def counting(n: int, produced: list[int]) -> Iterator[bytes]:
    for i in range(n):
        produced.append(i)
        yield str(i).encode()


def test_naming_convention_over_rs_io(serve: Any) -> None:
    """latest, from/to, commit and the trimmed error, through a real server."""
    produced: list[int] = []
    log = ReplayLog("nums", capacity=50).feed(rstreams.from_iterable(counting(200, produced)))
    server = serve({"nums": log})
    assert request_json(server.url, "nums?latest") == {
        "first": 0,
        "end": 50,
        "complete": False,
        "error": None,
        "epoch": log.epoch,
    }
    assert fetch_range(server.url, "nums", 10, 13) == [b"10", b"11", b"12"]
    assert request_json(server.url, "nums?commit=40")["end"] == 90
    with pytest.raises(RemoteLogError, match="position 10 was already trimmed"):
        fetch_range(server.url, "nums", 10, 13)
    with pytest.raises(RemoteLogError, match="no publisher named 'other'"):
        request_json(server.url, "other?latest")


def test_sink_uploads_publish_once_per_batch(serve: Any) -> None:
    """Staged uploads become visible on publish, once per (writer, batch); discard drops them."""
    out = ReplayLog("out", capacity=100, evict=True)
    server = serve({}, sinks={"out": out})
    assert upload(server.url, "out", "t1", [b"a", b"b"]) == 2
    assert upload(server.url, "out", "t2", [b"c"]) == 1
    assert upload(server.url, "out", "t3", [b"x"]) == 1
    assert out.info()["end"] == 0  # staged, not published
    assert request_json(server.url, "out?publish=0&writer=q&tokens=t1,t2") == {"published": True, "count": 3}
    assert request_json(server.url, "out?publish=0&writer=q&tokens=t3") == {"published": False, "count": 0}
    assert request_json(server.url, "out?discard=t3") == {"discarded": 1, "epoch": out.epoch}
    assert fetch_range(server.url, "out", 0, 3) == [b"a", b"b", b"c"]


def test_packed_ranges_round_trip(serve: Any) -> None:
    """?pack=N carries up to N elements per wire element, split by bytes; unpack restores them exactly."""
    log = ReplayLog("big", capacity=2000)
    log.append([b"x" * (i % 700) for i in range(2000)])  # ~700 KB: several byte-bounded packs
    server = serve({"big": log})
    assert fetch_range(server.url, "big", 5, 1995, pack=1024) == [b"x" * (i % 700) for i in range(5, 1995)]


def test_unknown_parameters_and_uploads_to_a_source_log_are_refused(serve: Any) -> None:
    """A typo in a query is an error naming it (not a read of the whole log); only sink logs take uploads."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1"])
    server = serve({"nums": log})
    with pytest.raises(RemoteLogError, match="unknown parameter 'form'"):
        request_json(server.url, "nums?form=0")
    with pytest.raises(RemoteLogError, match="not a sink log"):
        request_json(server.url, "nums?discard=t1")


@pytest.mark.parametrize(
    ("query", "kind", "stdlib", "caused"),
    [
        ({"form": "0"}, LogRequestError, ValueError, False),  # an unknown parameter
        ({"commit": "x"}, LogRequestError, ValueError, True),  # a malformed number: int()'s error the cause
        ({"rows": "5"}, LogRequestError, ValueError, False),  # rows=R without from=A
        ({"discard": "t1"}, LogLookupError, LookupError, False),  # not a sink log
        ({"rows": "5", "from": "0"}, LogLookupError, LookupError, False),  # the log's own, as it is
    ],
)
def test_a_request_a_log_cannot_take_signals_an_rstreams_error(
    query: dict[str, str], kind: type[Exception], stdlib: type[Exception], caused: bool
) -> None:
    """What a log's request signals is rstreams' own error, keeping its stdlib base; a malformed
    number names its parameter and the log, int()'s own error its cause."""
    log = ReplayLog("nums", capacity=10)
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=1)
    replay_offer({"nums": log})("nums", query).subscribe(s)
    assert type(s.error) is kind and isinstance(s.error, stdlib)
    assert isinstance(s.error.__cause__, stdlib) == caused
    if caused:
        assert str(s.error) == "log 'nums': commit= needs an integer, got 'x'"


def test_staged_without_a_token_is_refused_at_once() -> None:
    """``staged=`` names no upload, so no upload can answer it: a LogRequestError at once, not a
    wait that only the client's timeout ends."""
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=1)
    replay_offer({}, sinks={"out": ReplayLog("out", capacity=10)})("out", {"staged": ""}).subscribe(s)
    assert type(s.error) is LogRequestError and "staged=T needs the token T" in str(s.error)


async def _refusal(url: str, name: str) -> rstreams.net.RemoteStreamError:
    conn = await rstreams.connect(url)
    try:
        with pytest.raises(rstreams.net.RemoteStreamError) as refused:
            await asyncio.wait_for(conn.publisher(name).collect(), 10)
        return refused.value
    finally:
        await conn.aclose()


def test_a_refused_log_request_keeps_code_1_and_names_its_type(serve: Any) -> None:
    """Over RS.io the onError's code stays 1, the publisher's own error (PROTOCOL.md §19.2: the
    code is not chosen by the class), and its text starts with the rstreams type's name."""
    server = serve({"nums": ReplayLog("nums", capacity=10)})
    for name, kind in (("nums?form=0", "LogRequestError"), ("nums?discard=t1", "LogLookupError")):
        refused = asyncio.run(_refusal(server.url, name))
        assert refused.code == ErrorCode.APPLICATION, name
        assert refused.message.startswith(f"{kind}: log 'nums'"), refused.message


def test_a_range_past_the_end_of_a_completed_log_is_log_ended_error(serve: Any) -> None:
    """fetch_range of [0, 5) from a log whose producer completed after 3 elements: a LogEndedError
    (still a RuntimeError) naming how many of the positions arrived."""
    log = ReplayLog("nums", capacity=10).feed(rstreams.from_iterable([b"a", b"b", b"c"]))
    server = serve({"nums": log})
    with pytest.raises(
        LogEndedError, match=r"ended after 3 of the 5 elements at positions \[0, 5\)"
    ) as ended:
        fetch_range(server.url, "nums", 0, 5, timeout=20)
    assert isinstance(ended.value, RuntimeError)


def test_what_does_not_come_within_the_timeout_is_a_replay_timeout_error(
    serve: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that is there but does not answer in time (a count of an upload never made, a
    range past what the producer has made so far) is a ReplayTimeoutError (a TimeoutError) naming
    the server and what it did not send; it was a TimeoutError without a message. The timeouts
    end at events, not after real seconds: the request's once the server holds it (nothing will
    answer it), the range's once its two elements came (the log has no more)."""
    from rstreams.replay import _client

    client = _client._client()
    held = asyncio.Event()  # set on the client's loop once the server holds out?staged=never
    route: list[Any] = []

    def spy(path: str, params: dict[str, str]) -> Any:
        answer = route[0](path, params)
        if params.get("staged") == "never":
            client.loop.call_soon_threadsafe(held.set)
        return answer

    async def within(call: Any, seconds: float) -> Any:
        assert seconds <= 1
        answered, expired = asyncio.ensure_future(call), asyncio.ensure_future(held.wait())
        await asyncio.wait({answered, expired}, return_when=asyncio.FIRST_COMPLETED)
        expired.cancel()
        if answered.done():
            return answered.result()
        answered.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await answered
        raise TimeoutError

    came: list[bytes] = []  # the elements, unpacked (a range is read packed)

    def next_item(items: Any, seconds: float) -> Any:
        assert seconds <= 1
        if len(came) == 2:  # the log's two elements came; nothing appends more
            raise queue.Empty
        item = items.get(timeout=WAIT)
        came.extend(unpack(item))
        return item

    monkeypatch.setattr(_client, "_within", within)
    monkeypatch.setattr(_client, "_next_item", next_item)
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1"])
    server = serve({"nums": log}, sinks={"out": ReplayLog("out", capacity=10)}, offer=spy)
    route.append(server._route)
    with pytest.raises(ReplayTimeoutError) as silent:
        request_json(server.url, "out?staged=never", timeout=1)
    assert isinstance(silent.value, TimeoutError)
    assert held.is_set()
    assert (
        str(silent.value) == f"replay server {server.url} did not answer within timeout=1 s (it was reached)"
    )
    with pytest.raises(ReplayTimeoutError) as short:
        fetch_range(server.url, "nums", 0, 5, timeout=1)
    assert str(short.value) == (
        f"replay log 'nums' at {server.url}: positions [0, 5) did not arrive within the timeout (2 did)"
    )
    assert came == [b"0", b"1"]


def test_readers_over_rs_io(serve: Any) -> None:
    """commit&reader registers a named reader; readers lists them; leave releases one."""
    log = ReplayLog("nums", capacity=100)
    log.append([str(i).encode() for i in range(10)])
    server = serve({"nums": log})
    assert request_json(server.url, "nums?commit=2&reader=q1")["first"] == 2
    assert request_json(server.url, "nums?commit=9&reader=q2")["first"] == 2
    readers = {"readers": {"q1": 2, "q2": 9}, "pending": {}, "expired": {}}
    assert request_json(server.url, "nums?readers") == readers
    assert fetch_range(server.url, "nums", 2, 4) == [b"2", b"3"]
    assert request_json(server.url, "nums?leave=q1") == {"readers": {"q2": 9}, "pending": {}, "expired": {}}
    assert log.first == 9


@pytest.mark.parametrize("name", ["nosuch", "src"])
def test_upload_to_a_log_that_is_no_sink_fails_at_once(serve: Any, name: str) -> None:
    """Not a wait for the timeout: the error comes at once and names the log."""
    server = serve({"src": ReplayLog("src", capacity=10)}, sinks={"out": ReplayLog("out", capacity=10)})
    started = time.monotonic()
    with pytest.raises(RemoteLogError, match=rf"no publisher named {name!r}|log {name!r} is not a sink log"):
        upload(server.url, name, "t1", [b"a", b"b"], timeout=25)
    assert time.monotonic() - started < 5


async def _upload_with_header(url: str, header: bytes, staged: str | None) -> Any:
    """Offer ``rstreams/upload`` as ``header`` then rows without end; the answer to ``staged``
    (None: wait until the server cancels the upload instead, and answer that)."""
    cancelled = asyncio.Event()
    loop = asyncio.get_running_loop()
    endless = rstreams.from_iterable(itertools.chain([header], itertools.repeat(b"row")))
    rows = endless.do_on_cancel(lambda: loop.call_soon_threadsafe(cancelled.set))
    conn = await rstreams.connect(url, publishers={UPLOAD_NAME: rows})
    try:
        await asyncio.wait_for(cancelled.wait(), 10)
        if staged is None:
            return "cancelled"
        with pytest.raises(rstreams.net.RemoteStreamError) as refused:
            await asyncio.wait_for(conn.request(staged), 10)
        return refused.value
    finally:
        await conn.aclose()


def test_a_malformed_upload_header_is_a_log_request_error(serve: Any) -> None:
    """On the reverse subscription (PROTOCOL.md §21.8), a first element that is not the JSON header
    {"log", "token"} cancels the upload. When it has a token, that token's NAME?staged=T fails
    with LogRequestError (a ValueError: the request is wrong, nothing is missing), code 1, the
    header quoted; when it has none (not JSON, not an object, nested past the parser's depth), the
    upload is cancelled all the same. The server serves the next upload."""
    server = serve({}, sinks={"out": ReplayLog("out", capacity=10)})
    refused = asyncio.run(_upload_with_header(server.url, b'{"token": "t1"}', "out?staged=t1"))
    assert refused.code == ErrorCode.APPLICATION
    assert refused.message == (
        'LogRequestError: an upload starts with a JSON header {"log", "token"} (PROTOCOL.md §21.8); '
        'got b\'{"token": "t1"}\''
    )
    for header in (b"not json", b'["out", "t2"]', b'{"log": "out"}', b"[" * 100_000, b"\xff"):
        assert asyncio.run(_upload_with_header(server.url, header, None)) == "cancelled", header
    assert upload(server.url, "out", "t3", [b"a", b"b"], timeout=25) == 2


def test_staging_area_is_bounded_with_an_error_naming_the_bound(serve: Any) -> None:
    """An upload that would pass staging_bytes fails with StagingFullError; what was staged stays."""
    out = ReplayLog("out", capacity=10_000)
    server = serve({}, sinks={"out": out}, staging_bytes=10_000)
    assert upload(server.url, "out", "t1", [b"x" * 100] * 60) == 60  # 6,000 bytes staged
    rows = (b"y" * 100 for _ in range(5_000))  # 500 kB: far past the bound
    with pytest.raises(RemoteLogError, match=r"StagingFullError: sink log 'out': staging area full.*10,000"):
        upload(server.url, "out", "t2", rows, timeout=25)
    assert server.sink_statistics("out")["published"] == 0
    with pytest.raises(RemoteLogError, match="upload 't2' is not staged here"):  # never a batch with a hole
        request_json(server.url, "out?publish=0&writer=w&tokens=t1,t2")
    assert request_json(server.url, "out?publish=0&writer=w&tokens=t1") == {"published": True, "count": 60}
    assert upload(server.url, "out", "t3", [b"z" * 100] * 90) == 90  # room again after the publish


def test_rows_bounded_range_over_rs_io(serve: Any) -> None:
    """NAME?rows=R&from=A on a row-counting log; a plain log says it counts no rows."""
    counted = ReplayLog("counted", capacity=10, rows=len)
    counted.append([b"aa", b"bbb", b"c", b"dddd"])
    plain = ReplayLog("plain", capacity=10)
    server = serve({"counted": counted, "plain": plain})
    assert request_json(server.url, "counted?rows=4&from=1") == {"end": 3, "rows": 4}
    with pytest.raises(RemoteLogError, match="rows=R needs from=A"):
        request_json(server.url, "counted?rows=4")
    with pytest.raises(RemoteLogError, match="'plain' counts no rows"):
        request_json(server.url, "plain?rows=4&from=0")


def test_a_kept_connection_that_broke_is_replaced(serve: Any) -> None:
    """Calls share one connection per server; after the server restarts, the next call reconnects."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1"])
    first = serve({"nums": log})
    assert request_json(first.url, "nums?latest")["end"] == 2
    url = first.url
    first.stop()
    again = serve({"nums": log}, url=url)
    assert again.url == url
    assert request_json(url, "nums?latest")["end"] == 2
    assert fetch_range(url, "nums", 0, 2) == [b"0", b"1"]


def test_closing_a_range_stream_early_cancels_it_on_the_server(serve: Any) -> None:
    """stream_range: the caller takes a few elements and stops; the server's cursor goes away."""
    log = ReplayLog("nums", capacity=5_000)
    log.append([str(i).encode() for i in range(5_000)])
    server = serve({"nums": log})
    elements = stream_range(server.url, "nums", 0, 5_000, pack=0)
    assert [next(elements) for _ in range(3)] == [b"0", b"1", b"2"]
    elements.close()
    deadline = time.monotonic() + 10
    while log._cursors and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not log._cursors


def test_a_call_waits_for_a_restarting_server_within_its_timeout(serve: Any) -> None:
    """Refused connections are retried with backoff: a server back within the timeout answers;
    one that stays away ends in ServerUnavailableError naming the URL and the attempts."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1"])
    first = serve({"nums": log})
    url = first.url
    first.stop()
    with pytest.raises(
        ServerUnavailableError, match=rf"{url} could not be reached for 0.3 s \(\d+ attempts"
    ) as unavailable:
        request_json(url, "nums?latest", timeout=0.3)
    last = unavailable.value.last  # the last attempt's failure, by type: nothing listening
    assert isinstance(last, ConnectionBrokenError) and isinstance(last.__cause__, ConnectionRefusedError)
    assert str(unavailable.value).endswith(f"the last: {last})")
    restart = threading.Timer(0.5, lambda: serve({"nums": log}, url=url))
    restart.start()
    try:
        assert request_json(url, "nums?latest", timeout=20)["end"] == 2
    finally:
        restart.join()


def test_a_range_read_goes_on_after_the_server_restarts(serve: Any) -> None:
    """stream_range: the server goes away mid-range and comes back; the read resumes at the
    position it reached: every element once, in order."""
    log = ReplayLog("nums", capacity=3_000)
    log.append([str(i).encode() for i in range(3_000)])
    first = serve({"nums": log})
    url = first.url
    elements = stream_range(url, "nums", 0, 3_000, timeout=30, pack=0)
    got = [next(elements) for _ in range(5)]
    first.stop()
    serve({"nums": log}, url=url)
    got.extend(elements)
    assert got == [str(i).encode() for i in range(3_000)]


def test_refused_credentials_are_not_retried(serve: Any) -> None:
    """A server that wants a token and gets none fails the call at once with AccessDeniedError."""
    log = ReplayLog("nums", capacity=10)
    server = serve({"nums": log}, authenticate=lambda credentials: None)
    started = time.monotonic()
    with pytest.raises(AccessDeniedError, match="authentication") as refused:
        request_json(server.url, "nums?latest", timeout=20)
    assert time.monotonic() - started < 10
    assert not isinstance(refused.value, TLSHandshakeError)  # by type: the credentials, not TLS
    assert isinstance(refused.value.__cause__, AuthRequiredError)  # none given; the server wants some


def test_a_server_certificate_not_trusted_is_a_tls_handshake_error(serve: Any, tmp_path: Path) -> None:
    """A server whose certificate the client does not trust fails the call at once with a
    TLSHandshakeError: an AccessDeniedError (tests/test_surface.py pins its bases) that callers
    tell from a refusal of the credentials, or of the client's certificate, by type."""
    served = TestCA.make(tmp_path, "the server's CA")
    context = server_context(served.issue("logs", san=("127.0.0.1",)))
    url = serve({"nums": ReplayLog("nums", capacity=10)}, url="tls://127.0.0.1:0", ssl=context).url
    other = TestCA.make(tmp_path, "another CA")
    said = rf"^the TLS handshake with {re.escape(url)} failed: .*CERTIFICATE_VERIFY_FAILED"
    with pytest.raises(TLSHandshakeError, match=said) as failed:
        request_json(url, "nums?latest", timeout=600, access=Access(cafile=str(other.cert)))
    assert type(failed.value) is TLSHandshakeError, repr(failed.value)  # not a certificate refusal


def test_wss_with_a_token_and_uploads_authorized_per_log(serve: Any, tmp_path: Path) -> None:
    """ReplayServer over wss:// with authenticate and authorize: reads need the token; an upload to a
    sink log the principal may not write is refused by the log's name."""
    pytest.importorskip("websockets")
    ca = TestCA.make(tmp_path, "replay CA")
    cert = ca.issue("logs", san=("127.0.0.1",))
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1"])
    sinks = {"open": ReplayLog("open", capacity=10), "closed": ReplayLog("closed", capacity=10)}
    server = serve(
        {"nums": log},
        sinks=sinks,
        url="wss://127.0.0.1:0/rsio",
        ssl=server_context(cert),
        authenticate=lambda credentials: "ann" if getattr(credentials, "token", None) == "t0k" else None,
        authorize=lambda who, name: who == "ann" and name != "closed",
    )
    access = Access(auth="t0k", cafile=str(ca.cert))
    assert fetch_range(server.url, "nums", 0, 2, access=access) == [b"0", b"1"]
    assert upload(server.url, "open", "t1", [b"x"], timeout=20, access=access) == 1
    with pytest.raises(RemoteLogError, match=r"unauthorized.*'closed"):
        upload(server.url, "closed", "t2", [b"y"], timeout=20, access=access)
    with pytest.raises(AccessDeniedError):
        request_json(server.url, "nums?latest", timeout=20, access=Access(cafile=str(ca.cert)))


def test_published_batches_survive_a_server_restart_with_a_file_backed_sink(
    serve: Any, tmp_path: Path
) -> None:
    """The record of (writer, batch) published lives beside a FileStore sink log: after the server
    restarts, a re-run batch is refused and its rows are not published twice."""
    out = ReplayLog("out", capacity=100, path=tmp_path / "out")
    server = serve({}, sinks={"out": out})
    upload(server.url, "out", "t1", [b"a", b"b"])
    assert request_json(server.url, "out?publish=7&writer=q&tokens=t1")["published"] is True
    server.stop()
    out.close()
    again = ReplayLog("out", capacity=100, path=tmp_path / "out")
    assert again.batches() == {("q", 7)}
    restarted = serve({}, sinks={"out": again})
    upload(restarted.url, "out", "t2", [b"a", b"b"])
    assert request_json(restarted.url, "out?publish=7&writer=q&tokens=t2") == {"published": False, "count": 0}
    upload(restarted.url, "out", "t3", [b"c"])
    assert request_json(restarted.url, "out?publish=8&writer=q&tokens=t3")["published"] is True
    assert fetch_range(restarted.url, "out", 0, 3) == [b"a", b"b", b"c"]
    assert restarted.sink_statistics("out") == {"published": 2, "refused": 1, "dropped": 0, "expired": 0}
    restarted.stop()
    again.close()


def test_a_batch_cut_short_by_a_crash_is_dropped_when_the_sink_log_opens(tmp_path: Path) -> None:
    """Records appended after the last recorded batch (the process died before recording it) are
    cut off on open: the batch is neither in the log nor recorded, so its retry publishes it once."""
    log = ReplayLog("out", capacity=100, path=tmp_path / "out")
    log.keep_batches()
    log.append([b"a"], batch=("q", 0))
    log.append([b"b", b"c"])  # what a crash leaves: records of batch 1, no record of it
    log.close()
    again = ReplayLog("out", capacity=100, path=tmp_path / "out")
    assert again.info()["end"] == 1 and again.batches() == {("q", 0)}
    assert again._read(0, 5) == [b"a"]
    again.append([b"b", b"c"], batch=("q", 1))
    again.close()
    third = ReplayLog("out", capacity=100, path=tmp_path / "out")
    assert third._read(0, 5) == [b"a", b"b", b"c"] and third.batches() == {("q", 0), ("q", 1)}
    third.close()


def test_a_file_sink_log_with_rows_from_before_the_record_keeps_them(tmp_path: Path) -> None:
    """A sink log's first journal line records where it ends then: older rows stay."""
    log = ReplayLog("out", capacity=100, path=tmp_path / "out")
    log.append([b"old"])
    log.keep_batches()
    log.close()
    again = ReplayLog("out", capacity=100, path=tmp_path / "out")
    assert again._read(0, 5) == [b"old"] and again.batches() == set()
    again.close()


def test_the_server_lists_its_logs_and_serves_one_added_while_running(serve: Any) -> None:
    """`rstreams/logs` names every log, sinks among them; `add` serves a new log at once."""
    server = serve({"b": ReplayLog("b", capacity=4)}, sinks={"out": ReplayLog("out", capacity=4)})
    assert request_json(server.url, "rstreams/logs") == {"logs": ["b", "out"], "sinks": ["out"]}
    late = ReplayLog("a/late", capacity=4)
    late.append([b"x"])
    server.add("a/late", late)
    assert request_json(server.url, "rstreams/logs")["logs"] == ["a/late", "b", "out"]
    assert fetch_range(server.url, "a/late", 0, 1) == [b"x"]
    with pytest.raises(ValueError, match="served already"):
        server.add("b", ReplayLog("b", capacity=4))


def test_what_needs_a_running_server_says_to_start_it_first() -> None:
    """``url``, ``metrics()`` and ``add_metrics()`` before ``start()`` and after ``stop()`` raise
    ServerNotRunningError (a RuntimeError) naming the call and how to start the server, not an
    AttributeError of None; started, they answer."""
    log = ReplayLog("nums", capacity=4)
    server = ReplayServer({"nums": log}, metrics=True)
    calls: list[tuple[str, Callable[[], object]]] = [
        ("url", lambda: server.url),
        ("metrics", server.metrics),
        ("add_metrics", lambda: server.add_metrics("spark", dict)),
    ]
    for name, call in calls:
        with pytest.raises(ServerNotRunningError) as raised:
            call()
        assert isinstance(raised.value, RuntimeError)
        assert str(raised.value).startswith(f"ReplayServer.{name}: the server is not running")
        assert "with ReplayServer(...) as server:" in str(raised.value)
    with server:
        assert server.url.startswith("tcp://127.0.0.1:")
        assert "nums" in server.metrics()["replay"]["logs"]
    with pytest.raises(
        ServerNotRunningError, match=r"^ReplayServer\.metrics: .*\(not started yet, or stopped\)"
    ):
        server.metrics()
    log.close()


def test_a_running_server_refuses_a_second_start_and_a_stopped_one_starts_again() -> None:
    """start() on a running server is a ServerAlreadyRunningError (a RuntimeError) naming its URL,
    not threading's "threads can only be started once"; after stop() it starts again, on a new
    loop thread, serving the same log with what it held; stop() twice is harmless."""
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1"])
    server = ReplayServer({"nums": log}, metrics=True).start()
    first_loop, url = server.loop, server.url
    with pytest.raises(ServerAlreadyRunningError) as raised:
        server.start()
    assert isinstance(raised.value, RuntimeError)
    assert str(raised.value) == (
        f"ReplayServer.start: the server is running already, at {url}; use it as it is, or "
        "stop() it before starting it again"
    )
    assert fetch_range(server.url, "nums", 0, 2) == [b"0", b"1"]  # the refusal left it serving
    server.stop()
    server.stop()
    log.append([b"2"])
    with server:
        assert server.loop is not first_loop and first_loop.is_closed()
        assert fetch_range(server.url, "nums", 0, 3) == [b"0", b"1", b"2"]
        assert "nums" in server.metrics()["replay"]["logs"]
    assert server.loop.is_closed()
    log.close()


def test_a_server_that_failed_to_start_is_stopped_and_starts_again() -> None:
    """A start that fails (its port taken) raises the OSError and leaves no loop thread running;
    the same server starts once the port is free."""
    log = ReplayLog("nums", capacity=4)
    log.append([b"a"])
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        server = ReplayServer({"nums": log}, url=f"tcp://127.0.0.1:{port}")
        with pytest.raises(OSError, match=r"(?i)address already in use") as failed:
            server.start()
        assert failed.value.errno == errno.EADDRINUSE
        assert not server._thread.is_alive() and server.loop.is_closed()
        with pytest.raises(ServerNotRunningError):
            server.metrics()
    with server:
        assert fetch_range(server.url, "nums", 0, 1) == [b"a"]
    log.close()


@pytest.fixture(params=["tls", "wss"])
def mutual_tls(request: pytest.FixtureRequest, serve: Any, tmp_path: Path) -> tuple[str, TestCA]:
    """A tls:// or wss:// replay server requiring client certificates its CA signed: its URL and
    that CA."""
    ca = TestCA.make(tmp_path, "mtls CA")
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1"])
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    sinks = {"out": ReplayLog("out", capacity=10, evict=True)}
    return serve({"nums": log}, sinks=sinks, url=f"{request.param}://127.0.0.1:0", ssl=context).url, ca


@pytest.mark.parametrize("presented", ["none", "untrusted"])
def test_a_server_requiring_a_client_certificate_refuses_at_once(
    mutual_tls: tuple[str, TestCA], tmp_path: Path, presented: str
) -> None:
    """No client certificate, or one the server's CA did not sign: every call fails with an
    AccessDeniedError saying so, not after its timeout (600 s here: the test's 30 s would end first)."""
    url, ca = mutual_tls
    access = Access(cafile=str(ca.cert))
    if presented == "untrusted":
        stranger = TestCA.make(tmp_path, "other CA").issue("mallory", client=True)
        access = Access(cafile=str(ca.cert), certfile=str(stranger.cert), keyfile=str(stranger.key))
    refused = (
        rf"^{re.escape(url)} ended the TLS session twice in a row: .*{re.escape(TLS_ENDED_BEFORE_HELLO)}$"
    )
    with pytest.raises(AccessDeniedError, match=refused):
        request_json(url, "nums?latest", timeout=600, access=access)
    with pytest.raises(AccessDeniedError, match=refused):
        fetch_range(url, "nums", 0, 2, timeout=600, access=access)
    with pytest.raises(AccessDeniedError, match=refused):
        upload(url, "out", "t1", [b"x"], timeout=600, access=access)


@pytest.mark.parametrize("scheme", ["tls", "wss"])
def test_a_tls_1_2_server_requiring_a_client_certificate_refuses_at_once(
    serve: Any, tmp_path: Path, scheme: str
) -> None:
    """A TLS 1.2 server refuses a missing certificate inside the handshake, which Python's asyncio
    does by a reset, no alert: a second reset in a row at once is the refusal, as a TLS 1.3
    server's end before the hello is (timeout 600 s: the test's 30 s would end first)."""
    ca = TestCA.make(tmp_path, "TLS 1.2 CA")
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    sinks = {"out": ReplayLog("out", capacity=10, evict=True)}
    url = serve(
        {"nums": ReplayLog("nums", capacity=10)}, sinks=sinks, url=f"{scheme}://127.0.0.1:0", ssl=context
    ).url
    access = Access(cafile=str(ca.cert))
    reset = f"could not connect to {url}: ConnectionResetError in the TLS handshake; {TLS_REFUSAL_HINT}"
    refused = rf"^{re.escape(url)} ended the TLS session twice in a row: {re.escape(reset)}$"
    with pytest.raises(AccessDeniedError, match=refused):
        request_json(url, "nums?latest", timeout=600, access=access)
    with pytest.raises(AccessDeniedError, match=refused):
        fetch_range(url, "nums", 0, 1, timeout=600, access=access)
    with pytest.raises(AccessDeniedError, match=refused):
        upload(url, "out", "t1", [b"x"], timeout=600, access=access)


def _tls_server_for_one_connection(
    context: ssl.SSLContext, then: Callable[[str], object], scheme: str = "tls"
) -> str:
    """A TLS listener that takes one connection, stops listening, makes the TLS handshake
    (a refusal of the client's certificate is sent as an alert), ends the connection without a
    word of RS.io (or of HTTP), then calls ``then(url)``, in a thread; returns the URL, of
    ``scheme`` (``tls`` or ``wss``)."""
    listener = socket.create_server(("127.0.0.1", 0))
    url = f"{scheme}://127.0.0.1:{listener.getsockname()[1]}"

    def run() -> None:
        accepted, _ = listener.accept()
        listener.close()
        with context.wrap_socket(accepted, server_side=True, do_handshake_on_connect=False) as tls:
            with contextlib.suppress(ssl.SSLError):
                tls.do_handshake()
            tls.shutdown(socket.SHUT_WR)  # the alert reaches the client before an end of input
            while socket.socket.recv(tls, 4096):  # until the client closes: no reset
                pass
        then(url)

    threading.Thread(target=run, name="one TLS session", daemon=True).start()
    return url


def test_a_client_certificate_alert_is_a_refusal_naming_it(tmp_path: Path) -> None:
    """A server that refuses the missing certificate with TLS 1.3's certificate_required alert (as
    Java's and Node's do): AccessDeniedError at once, with the alert and the hint about it."""
    ca = TestCA.make(tmp_path, "alerting CA")
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    url = _tls_server_for_one_connection(context, then=lambda url: None)
    alert = rf"^the TLS handshake with {url} failed: .*CERTIFICATE_REQUIRED.*; {re.escape(TLS_REFUSAL_HINT)}$"
    with pytest.raises(AccessDeniedError, match=alert):
        request_json(url, "nums?latest", timeout=600, access=Access(cafile=str(ca.cert)))


def test_a_tls_1_2_handshake_failure_alert_is_a_refusal_naming_the_certificate(tmp_path: Path) -> None:
    """OpenSSL's TLS 1.2 server (Python's blocking ssl module here) refuses a missing certificate
    with a handshake_failure alert: AccessDeniedError at once, with the alert and the hint."""
    ca = TestCA.make(tmp_path, "alerting CA")
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    url = _tls_server_for_one_connection(context, then=lambda url: None)
    alert = rf"^the TLS handshake with {url} failed: .*HANDSHAKE_FAILURE.*; {re.escape(TLS_REFUSAL_HINT)}$"
    with pytest.raises(AccessDeniedError, match=alert):
        request_json(url, "nums?latest", timeout=600, access=Access(cafile=str(ca.cert)))


@pytest.mark.parametrize("scheme", ["tls", "wss"])
def test_a_tls_session_ended_once_before_the_hello_is_tried_again(
    serve: Any, tmp_path: Path, scheme: str
) -> None:
    """A server killed between its TLS handshake and its hello (on wss://, its HTTP response)
    looks, once, like a refusal of the client's certificate: the call tries again and gets the
    restarted server's answer."""
    ca = TestCA.make(tmp_path, "restart CA")
    context = server_context(ca.issue("logs", san=("127.0.0.1",)))
    log = ReplayLog("nums", capacity=10)
    log.append([b"0", b"1", b"2"])

    def restart(url: str) -> object:
        return serve({"nums": log}, url=url, ssl=context)

    url = _tls_server_for_one_connection(context, then=restart, scheme=scheme)
    assert request_json(url, "nums?latest", timeout=20, access=Access(cafile=str(ca.cert)))["end"] == 3


def test_the_handshake_timeout_is_the_servers_own(serve: Any) -> None:
    """``handshake_timeout`` reaches the RS.io server: a connection silent for 0.2 s is said
    goodbye naming it (a test on a loaded machine sets a longer one)."""
    from rstreams.wire import Connection as Core
    from rstreams.wire import ConnectionClosed, Side

    server = serve({"nums": ReplayLog("nums", capacity=10)}, handshake_timeout=0.2)
    host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as silent:
        data = b""
        while chunk := silent.recv(4096):  # sends nothing; reads to the server's end of input
            data += chunk
    core = Core(Side.CLIENT)
    core.receive_data(data)
    (goodbye,) = [event for event in core.events_received() if isinstance(event, ConnectionClosed)]
    assert goodbye.reason.startswith("handshake timeout") and "0.2 s" in goodbye.reason, goodbye.reason


def test_a_server_never_started_leaves_no_open_loop() -> None:
    """A server built and never started closes its loop on stop(), and when collected without
    one: nothing for -X dev to report as an unclosed event loop (a ResourceWarning)."""
    log = ReplayLog("nums", capacity=4)
    stopped = ReplayServer({"nums": log})
    stopped.stop()
    assert stopped.loop.is_closed()
    with stopped:  # and it starts after all
        assert fetch_range(stopped.url, "nums", 0, 0) == []
    assert_collected_closes_its_loop(lambda: ReplayServer({"nums": log}))
    log.close()
