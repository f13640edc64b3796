"""The driver itself: the catalogue, its citations, the command line, JUnit XML, probing, and that
cases fail against a deliberately broken endpoint (a suite that cannot fail proves nothing)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import socket
import xml.etree.ElementTree as ET
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, BinaryIO

import pytest
import pytest_asyncio

from rstreams.conformance import (
    AREAS,
    CASES,
    KINDS,
    CaseResult,
    Options,
    Outcome,
    _runner,
    catalogue_markdown,
    conformance_publishers,
    main,
    run,
    run_case,
    select,
)
from rstreams.conformance._case import Case, Context
from rstreams.conformance._monitor import Monitor
from rstreams.net import serve
from rstreams.wire import (
    ClientHello,
    Connection,
    Frame,
    Goodbye,
    OnComplete,
    OnNext,
    OnSubscribe,
    Request,
    ServerHello,
    Side,
    Subscribe,
    encode,
)
from testkit.bound import run_own_time
from testkit.tls import TestCA, server_context

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()
ALL = frozenset(KINDS)
PATIENT = Options(quiet=0.1, timeout=30.0)
"""For runs that must pass: every wait ends at an event, the deadline is only a safety net."""
BROKEN = Options(quiet=0.5, timeout=30.0)
"""For runs that must fail against the sloppy endpoint: its violations come in the same write as
the frames a case waits for, and the quiet window leaves a loaded machine room to read them;
the deadline only bounds a hang (no case here waits it out)."""
SAFETY_NET = ["--timeout", "30"]
"""The command's wait deadline for runs against a server on this process's loop: each wait ends at
an event (a frame, a refused certificate), so a loaded machine never needs the default 5 s, nor
costs a passing run anything."""


def test_catalogue() -> None:
    """At least 100 cases, unique ids, every area covered, each with a citation and its sentence."""
    assert len(CASES) >= 100
    assert len({c.id for c in CASES}) == len(CASES)
    assert {c.area for c in CASES} == set(AREAS)
    for c in CASES:
        assert c.cite.startswith(("PROTOCOL.md §", "draft (spec/003)")), c.id
        assert len(c.text) > 20, c.id
        assert set(c.needs) <= ALL, c.id


def test_cited_sections_exist() -> None:
    """Every PROTOCOL.md section a case cites is a heading of PROTOCOL.md."""
    headings = set(re.findall(r"^#+ (\d+(?:\.\d+)?)\. ", PROTOCOL, re.MULTILINE)) | set(
        re.findall(r"^### (\d+\.\d+) ", PROTOCOL, re.MULTILINE)
    )
    for c in CASES:
        match = re.fullmatch(r"PROTOCOL\.md §(\d+(?:\.\d+)?)", c.cite)
        if match:
            assert match.group(1) in headings, f"{c.id} cites §{match.group(1)}, which PROTOCOL.md lacks"


def test_the_empty_writes_rule_quotes_section_1_as_it_reads() -> None:
    """fr.empty_writes sends empty WebSocket messages: its rule is §1's sentence that makes them
    valid, word for word (it quoted the older "one or more messages per WebSocket message")."""
    (text,) = (c.text for c in CASES if c.id == "fr.empty_writes")
    quoted = text.split(" (here:")[0]
    assert " ".join((quoted[0].lower() + quoted[1:]).split()) in " ".join(PROTOCOL.split())


def test_docs_catalogue_is_current() -> None:
    """docs/conformance.md's generated tables match the cases (regenerate: --list --markdown)."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text()
    start, end = "<!-- generated:conformance-cases -->\n", "<!-- /generated:conformance-cases -->"
    generated = docs[docs.index(start) + len(start) : docs.index(end)]
    assert generated == catalogue_markdown(), "docs/conformance.md is stale: paste in `--list --markdown`"


@pytest.mark.parametrize("url", [[], ["-"]])
def test_list_markdown(url: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """--list needs no endpoint: no URL (or any, as ``-``, which the docs once showed)."""
    assert main([*url, "--list", "--markdown"]) == 0
    assert capsys.readouterr().out == catalogue_markdown()


def test_select() -> None:
    """-k selects by substring or by glob."""
    assert {c.area for c in select("hs.")} == {"hs"}
    assert next(c.id for c in select("dm.request_zero")) == "dm.request_zero"
    assert all(c.id.endswith("_refused") for c in select("*_refused"))


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    """--list prints one line per case with its citation."""
    assert main(["tcp://127.0.0.1:1", "--list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(CASES)
    assert main(["--list", "-k", "dm."]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(select("dm."))


def test_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    """An endpoint that refuses connections is exit code 2, not a crash: one line, the command's
    name first, with what to check."""
    assert main(["tcp://127.0.0.1:1", "--timeout", "1"], prog="rstreams conformance") == 2
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1, said
    assert said[0].startswith("rstreams conformance: cannot run the suite against tcp://127.0.0.1:1: "), said
    assert said[0].endswith("(connection refused: nothing listens at that host and port; check the URL)")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "the following arguments are required: url (only --list runs without one)"),
        (["-k", "dm."], "the following arguments are required: url (only --list runs without one)"),
        (["tcp://127.0.0.1:1", "--zzz"], "unrecognized arguments: --zzz"),
        (
            ["tcp://127.0.0.1:1", "--case-timout", "9"],
            "unrecognized arguments: --case-timout 9; did you mean --case-timeout?",
        ),
        (["tcp://127.0.0.1:1", "--jobs", "x"], "argument --jobs: invalid int value: 'x'"),
    ],
)
def test_a_usage_error_is_one_line(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    """As the other rstreams commands: the error and where the usage is, not the usage block."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv, prog="rstreams conformance")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == f"rstreams conformance: {says} (see rstreams conformance --help)\n"


def test_the_help_states_the_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for option, default in [
        ("--timeout S", "5.0"),
        ("--quiet S", "0.25"),
        ("--case-timeout S", "30.0"),
        ("--jobs N", "4"),
        ("--max-subscriptions N", "1024"),
        ("--max-element-size BYTES", "16777216"),
        ("--prefix PREFIX", "conformance/"),
    ]:
        after = shown.partition(f"{option} ")[2]
        assert after.partition("(default: ")[2].startswith(default + ")"), (option, after[:120])


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-k", "no-such-case"], "no case matches -k 'no-such-case' (--list shows every case)"),
        (["--timeout", "-1"], "--timeout needs a number > 0, got -1.0"),
        (["--jobs", "0"], "--jobs needs a number > 0, got 0"),
        (["--idle-timeout", "0"], "--idle-timeout needs a number > 0, got 0.0"),
        (["--quiet", "nan"], "--quiet needs a number of seconds >= 0, got nan"),
        (
            ["--junit", "no-such-dir/report.xml"],
            "--junit no-such-dir/report.xml: no directory 'no-such-dir' to write it in",
        ),
    ],
)
def test_bad_options_are_named_before_anything_runs(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A pattern that selects nothing, a number out of range, a report nowhere to go: exit 2 at
    once, one line naming the option (the report's directory was found missing after the run,
    as a traceback; a pattern that matched nothing passed with 0 cases)."""
    assert main(["tcp://127.0.0.1:1", *argv], prog="rstreams conformance") == 2
    assert capsys.readouterr().err == f"rstreams conformance: {says}\n"


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_main_partial_offer_and_junit(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Against a server offering only range: cases needing others skip; exit 0; JUnit XML written."""
    full = conformance_publishers()

    def only_range(path: str, params: dict[str, str]) -> object:
        return full(path, params) if path == "conformance/range" else None

    server = await serve("tcp://127.0.0.1:0", only_range)
    try:
        junit = tmp_path / "out.xml"
        code = await asyncio.to_thread(
            main, [server.url, "-k", "st.", "--junit", str(junit), "--quiet", "0.1", *SAFETY_NET]
        )
    finally:
        await server.aclose()
    out = capsys.readouterr().out
    assert code == 0, out
    assert "order and state" in out and "skip" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests", "0")) == len(select("st."))
    assert int(suite.get("failures", "1")) == 0
    assert int(suite.get("skipped", "0")) > 0
    case = suite.find("testcase")
    assert case is not None and case.find("properties/property[@name='cite']") is not None


def _interrupted_run(monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """Make the command's run stop as on Ctrl-C: the first dm. case finished, the second running;
    returns their ids."""
    first, second = select("dm.")[:2]

    async def stopped(url: str, options: Options, cases: object, available: object, progress: Any) -> None:
        progress.probed = True
        progress.finished.append(CaseResult(first, Outcome.PASS, seconds=0.5))
        progress.running.append(second.id)
        raise KeyboardInterrupt

    monkeypatch.setattr(_runner, "_run", stopped)
    return first.id, second.id


@pytest.mark.timeout(30)
def test_ctrl_c_writes_junit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C with --junit: the finished case as it ended, the running one as an ``error`` of type
    Interrupted; exit 130; the file has the mode a plain open() gives it."""
    done, running = _interrupted_run(monkeypatch)
    junit = tmp_path / "report.xml"
    assert main(["tcp://127.0.0.1:1", "-k", "dm.", "--junit", str(junit)]) == 130
    assert "1 of" in capsys.readouterr().out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("2", "1", "0")
    cases = {t.get("name"): t for t in suite.iter("testcase")}
    assert list(cases) == [done, running] and cases[done].find("error") is None
    error = cases[running].find("error")
    assert error is not None and error.get("type") == "Interrupted"
    mask = os.umask(0)
    os.umask(mask)
    assert junit.stat().st_mode & 0o777 == 0o666 & ~mask
    assert [p.name for p in tmp_path.iterdir()] == ["report.xml"]


@pytest.mark.timeout(30)
def test_second_ctrl_c_while_writing_junit_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C halfway through writing --junit (after Ctrl-C stopped the run): the file is still
    the old one, no temporary file is left, and the command exits 130 saying so."""
    _interrupted_run(monkeypatch)
    junit = tmp_path / "report.xml"
    junit.write_text("old")

    def half_then_ctrl_c(tree: object, file: BinaryIO, **options: object) -> None:
        file.write(b"<?xml version='1.0' encoding='utf-8'?>\n<testsuites>")
        raise KeyboardInterrupt

    monkeypatch.setattr(ET.ElementTree, "write", half_then_ctrl_c)
    assert main(["tcp://127.0.0.1:1", "-k", "dm.", "--junit", str(junit)]) == 130
    assert junit.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.xml"]
    assert f"Ctrl-C again: stopped; --junit {junit} is as it was or complete" in capsys.readouterr().err


# -- a deliberately broken endpoint ---------------------------------------------------------------
class _Sloppy:
    """A server that ignores demand and cancel: onSubscribe, three onNext, onComplete, always."""

    def __init__(self) -> None:
        self.writers: list[asyncio.StreamWriter] = []
        self.tasks: list[asyncio.Task[object]] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.tasks.append(task)
        self.writers.append(writer)
        core = Connection(Side.SERVER)
        writer.writelines(core.data_to_send())
        raw = bytearray()
        while data := await reader.read(65536):
            core.receive_data(data)
            for event in core.events_received():
                if isinstance(event, Subscribe):
                    sid = event.subscriber
                    frames: list[Frame] = [OnSubscribe(subscriber=sid)]
                    frames += [OnNext(subscriber=sid, element=bytes(8)) for _ in range(3)]
                    frames.append(OnComplete(subscriber=sid))
                    raw += b"".join(encode(f) for f in frames)
            writer.writelines(core.data_to_send())  # hello, goodbye answers
            writer.write(bytes(raw))
            raw.clear()
            if core.state.name == "CLOSED":
                break
        writer.close()


@pytest_asyncio.fixture
async def sloppy_url() -> AsyncIterator[str]:
    sloppy = _Sloppy()
    server = await asyncio.start_server(sloppy.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"tcp://127.0.0.1:{port}"
    server.close()
    for writer in sloppy.writers:
        writer.close()
    await asyncio.gather(*sloppy.tasks, return_exceptions=True)


@pytest.mark.asyncio
@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("case_id", "expected"),
    [
        ("dm.initial_zero", "§6.3"),
        ("dm.initial_exact", "exactly 3 elements"),
        ("dm.request_zero", "expected onError"),
        ("st.unknown_publisher", "expected onError"),
        ("sp.fixed_declares_size", "elementSize"),
    ],
)
async def test_broken_endpoint_fails(sloppy_url: str, case_id: str, expected: str) -> None:
    """Each case fails against an endpoint that breaks its rule, and says which rule."""
    (case,) = [c for c in CASES if c.id == case_id]
    result = await run_case(case, sloppy_url, BROKEN, ALL)
    assert result.outcome is Outcome.FAIL
    assert expected in result.message


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_run_against_unix_socket(tmp_path: Path) -> None:
    """The driver also speaks unix:// (a handful of cases; echo finds the driver by its abstract name)."""
    publishers = conformance_publishers()
    server = await serve(f"unix://{tmp_path}/rs.sock", publishers, on_connection=publishers.on_connection)
    relay = ("rv.server_subscribes", "rv.refusal_is_not_fatal", "rv.cancel_reaches_the_publisher")
    cases = select("hs.") + [c for c in CASES if c.id in relay]
    try:
        results = await run(server.url, PATIENT, cases=cases)
    finally:
        await server.aclose()
    assert {r.outcome for r in results} == {Outcome.PASS}


# -- TLS options ---------------------------------------------------------------------------------
@pytest_asyncio.fixture
async def tls_server(tmp_path: Path) -> AsyncIterator[tuple[str, TestCA]]:
    """Our server over tls:// with a certificate from a CA made for the test."""
    ca = TestCA.make(tmp_path, "driver CA")
    issued = ca.issue("driver server", san=("127.0.0.1",))
    server = await serve("tls://127.0.0.1:0", conformance_publishers(), ssl=server_context(issued))
    yield server.url, ca
    await server.aclose()


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_main_over_tls_with_cafile(tls_server: tuple[str, TestCA]) -> None:
    """--cafile verifies the server's certificate; the handshake cases pass over tls://."""
    url, ca = tls_server
    code = await asyncio.to_thread(
        main, [url, "-k", "hs.", "--cafile", str(ca.cert), "--quiet", "0.1", *SAFETY_NET]
    )
    assert code == 0


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_main_over_tls_unverified_is_refused(
    tls_server: tuple[str, TestCA], capsys: pytest.CaptureFixture[str]
) -> None:
    """Without --cafile the test CA is unknown: exit 2 saying the certificate failed verification."""
    url, _ = tls_server
    code = await asyncio.to_thread(main, [url, "-k", "hs.", *SAFETY_NET])
    assert code == 2
    assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().err


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_main_over_tls_wrong_server_name(
    tls_server: tuple[str, TestCA], capsys: pytest.CaptureFixture[str]
) -> None:
    """--server-name is checked against the certificate (it names 127.0.0.1 only)."""
    url, ca = tls_server
    argv = [url, "-k", "hs.", "--cafile", str(ca.cert), "--server-name", "example.org", *SAFETY_NET]
    code = await asyncio.to_thread(main, argv)
    assert code == 2
    assert "example.org" in capsys.readouterr().err


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_main_over_tls_insecure(
    tls_server: tuple[str, TestCA], capsys: pytest.CaptureFixture[str]
) -> None:
    """--insecure connects without verifying anything, and says so on stderr."""
    url, _ = tls_server
    code = await asyncio.to_thread(main, [url, "-k", "hs.", "--insecure", "--quiet", "0.1", *SAFETY_NET])
    assert code == 0
    out = capsys.readouterr()
    assert "NOT verified" in out.err
    assert "NOT verified" in out.out.splitlines()[0]


def test_tls_options_need_a_tls_url(capsys: pytest.CaptureFixture[str]) -> None:
    """TLS options with tcp:// are a mistake, not silently ignored."""
    assert main(["tcp://127.0.0.1:1", "--insecure"]) == 2
    said = capsys.readouterr().err
    assert said.startswith("python -m rstreams.conformance: TLS options need a tls:// or wss:// URL"), said


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_run_over_wss_with_options(tmp_path: Path) -> None:
    """The Python API takes the same options (Options.cafile ...) over wss://."""
    ca = TestCA.make(tmp_path, "wss CA")
    issued = ca.issue("wss server", san=("localhost",))
    server = await serve("wss://127.0.0.1:0/rsio", conformance_publishers(), ssl=server_context(issued))
    try:
        options = dataclasses.replace(PATIENT, cafile=str(ca.cert), server_name="localhost")
        results = await run(server.url, options, cases=select("cl."))
    finally:
        await server.aclose()
    assert {r.outcome for r in results} == {Outcome.PASS}, [r.message for r in results if r.message]


@pytest.mark.asyncio
@pytest.mark.timeout(60)
@pytest.mark.parametrize("url", ["tls://127.0.0.1:0", "wss://127.0.0.1:0/rsio"])
async def test_main_with_a_client_certificate(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--certfile/--keyfile: an endpoint requiring client certificates (mutual TLS) is tested;
    without them the run stops at once with exit 2 and a hint about the certificate."""
    ca = TestCA.make(tmp_path, "mtls CA")
    context = server_context(ca.issue("mtls server", san=("127.0.0.1",)), client_ca=ca)
    client = ca.issue("conformance driver", client=True)
    server = await serve(url, conformance_publishers(), ssl=context)
    try:
        base = [server.url, "-k", "hs.", "--cafile", str(ca.cert), "--quiet", "0.1", "--timeout", "30"]
        with_cert = [*base, "--certfile", str(client.cert), "--keyfile", str(client.key)]
        assert await asyncio.to_thread(main, with_cert) == 0
        assert await asyncio.to_thread(main, base) == 2
    finally:
        await server.aclose()
    assert "client certificate (--certfile)" in capsys.readouterr().err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("scheme", ["tls", "wss", "tcp"])
def test_a_port_where_nothing_listens_is_said_to_be_refused(
    scheme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tls:// or wss:// URL whose port refuses the connection: exit 2, the hint says nothing
    listens there, and no word of client certificates (no TLS handshake was made)."""
    with socket.socket() as bound:  # bound, never listening: a connection to it is refused
        bound.bind(("127.0.0.1", 0))
        url = f"{scheme}://127.0.0.1:{bound.getsockname()[1]}" + ("/rsio" if scheme == "wss" else "")
        assert main([url, "-k", "hs.", "--timeout", "10"]) == 2
    said = capsys.readouterr().err
    assert "(connection refused: nothing listens at that host and port; check the URL)" in said, said
    assert "certificate" not in said and "--certfile" not in said, said


@pytest.mark.asyncio
@pytest.mark.timeout(60)
@pytest.mark.parametrize("scheme", ["tls", "wss"])
async def test_tls_to_a_plain_endpoint_is_said_to_be_the_url_s(
    scheme: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """tls:// or wss:// to an RS.io server without TLS: exit 2, the hint names the URL's scheme,
    not --cafile or a certificate."""
    server = await serve("tcp://127.0.0.1:0", conformance_publishers())
    try:
        url = server.url.replace("tcp://", f"{scheme}://") + ("/rsio" if scheme == "wss" else "")
        assert await asyncio.to_thread(main, [url, "-k", "hs.", "--timeout", "10"]) == 2
    finally:
        await server.aclose()
    said = capsys.readouterr().err
    assert said.endswith(
        " (the URL: the endpoint does not speak TLS there; tcp:// or ws:// for one served without it)\n"
    ), said
    assert "--cafile" not in said and "certificate" not in said, said


def test_monitor_checks_the_server_as_subscriber() -> None:
    """The monitor flags the endpoint's own subscriptions breaking §5.3, §5.2 and §6.2."""
    monitor = Monitor()
    monitor.received(ServerHello())
    monitor.received(Subscribe(publisher="driver/a", subscriber=4, initial_demand=0))
    monitor.received(Request(subscriber=4, demand=2))
    assert monitor.violations == []
    assert monitor.served[4].granted == 2
    monitor.sent(OnSubscribe(subscriber=4))
    monitor.sent(OnNext(subscriber=4, element=b"x"))
    assert monitor.served[4].granted == 1
    monitor.received(Subscribe(publisher="driver/b", subscriber=4))  # 4 is still open on our side
    assert "§5.3" in monitor.violations[-1]
    monitor.received(Request(subscriber=9, demand=1))  # never subscribed
    assert "§5.2" in monitor.violations[-1]
    monitor.received(Request(subscriber=4, demand=0))
    assert "§6.2" in monitor.violations[-1]
    monitor.sent(OnComplete(subscriber=4))
    count = len(monitor.violations)
    monitor.received(Subscribe(publisher="driver/c", subscriber=4))  # reuse after our terminal: fine
    assert len(monitor.violations) == count


# -- extension cases: skipped without what they need, failing when the endpoint breaks the rule ------
@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_extension_cases_skip_with_reasons() -> None:
    """Against a server without auth and without the driver knowing its idle timeout, the auth and idle
    cases are skipped (with the reason), the keepalive ones pass."""
    server = await serve("tcp://127.0.0.1:0", conformance_publishers())
    try:
        results = await run(server.url, PATIENT, cases=select("ex."), available=ALL)
    finally:
        await server.aclose()
    outcome = {r.case.id: r for r in results}
    assert {r.outcome for r in results} == {Outcome.PASS, Outcome.SKIP}
    assert outcome["ex.ping_answered"].outcome is Outcome.PASS
    assert "auth (id 2)" in outcome["ex.auth_malformed_credentials"].message
    assert "--idle-timeout" in outcome["ex.idle_timeout"].message
    assert "--token" in outcome["ex.auth_accepted_before_answers"].message


@pytest.mark.timeout(60)
def test_idle_case_fails_when_the_endpoint_keeps_idle_peers() -> None:
    """--idle-timeout 0.3 against a server that waits 60 s: the case fails, saying what it waited for.

    The case waits for the goodbye until the idle timeout plus --timeout, and here that wait runs
    out by design. --timeout also bounds connecting and the serverHello; the server and the driver
    share a loop whose clock is its own time (testkit.bound.OwnTimeLoop), on which 1 s is ample
    for those however loaded the machine, and the test ends after about 1.3 s of it.
    """

    async def main() -> CaseResult:
        server = await serve("tcp://127.0.0.1:0", conformance_publishers())
        try:
            (case,) = select("ex.idle_timeout")
            return await run_case(case, server.url, Options(quiet=0.1, timeout=1.0, idle_timeout=0.3), ALL)
        finally:
            await server.aclose()

    result = run_own_time(main)
    assert result.outcome is Outcome.FAIL
    assert "goodbye" in result.message


@pytest.mark.asyncio
@pytest.mark.timeout(60)
async def test_a_timeout_inside_a_case_is_not_reported_as_its_deadline() -> None:
    """A wait that timed out inside the case (a connection) is told apart from the case's own deadline."""

    async def times_out(ctx: Context) -> None:
        raise TimeoutError  # what opening a connection raises after --timeout

    async def hangs(ctx: Context) -> None:
        await asyncio.Event().wait()

    inner = await run_case(Case("hs.inner", "here", "a wait", times_out), "tcp://127.0.0.1:1", Options(), ALL)
    assert (inner.outcome, inner.message) == (Outcome.FAIL, "a connection timed out (after --timeout 5 s)")
    hang = await run_case(
        Case("hs.hang", "here", "a hang", hangs, timeout=0.01), "tcp://127.0.0.1:1", Options(), ALL
    )
    assert (hang.outcome, hang.message) == (Outcome.FAIL, "the case did not finish within 0.01 s (a hang)")


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-k", "no-such-case"], "no case matches -k 'no-such-case' (--list shows every case)"),
        (["--timeout", "0"], "--timeout needs seconds > 0, got 0.0"),
        (["--start-timeout", "nan"], "--start-timeout needs seconds > 0, got nan"),
        (
            ["--junit", "no-such-dir/r.xml"],
            "--junit no-such-dir/r.xml: no directory 'no-such-dir' to write it in",
        ),
    ],
)
def test_the_client_suite_names_bad_options_before_running(
    argv: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The client suite's command line: exit 2 at once naming the option (a pattern that matched
    nothing passed with '0 of 0 client cases passed')."""
    from rstreams.conformance.clients import main as clients_main

    with pytest.raises(SystemExit) as exit_info:
        clients_main(["--client", "never-run {url} {publisher} {script}", *argv])
    assert exit_info.value.code == 2
    prog = "python -m rstreams.conformance.clients"
    assert capsys.readouterr().err == f"{prog}: {says} (see {prog} --help)\n"


def test_the_area_table_keeps_its_columns_for_every_title() -> None:
    """Each row of the summary puts its counts under the header's, the longest area title
    included (titles past 28 characters pushed their counts right)."""
    import io

    from rstreams.conformance._runner import CaseResult, report

    results = [CaseResult(case, Outcome.SKIP, "not offered") for case in CASES]
    out = io.StringIO()
    report(results, "tcp://127.0.0.1:1", out)
    table = out.getvalue().split("\n\n")[-1].splitlines()
    assert table[0].startswith("area ") and table[-1].startswith("total ")
    assert len({len(line) for line in table}) == 1, table


class _WebSocketLikeLink:
    """A client's connection as the client suite's server reads it over WebSocket: no half-close,
    and, after its hello and its error goodbye, the client's input ends only once our side closed
    (a client lingers after an error goodbye until the peer's close, §10)."""

    half_close = False
    local_address = "127.0.0.1:1"

    def __init__(self) -> None:
        self.ours_ended = asyncio.Event()
        self.incoming = [encode(ClientHello()), encode(Goodbye(reason="unknown message type 63 (§10)"))]

    async def write(self, data: bytes) -> None:
        pass

    async def read(self) -> bytes:
        if self.incoming:
            return self.incoming.pop(0)
        await self.ours_ended.wait()
        return b""

    async def write_eof(self) -> None:
        self.ours_ended.set()

    def abort(self) -> None:
        pass


class _ExitedAdapter:
    async def finish(self, timeout: float) -> None:  # noqa: ASYNC109
        pass


@pytest.mark.timeout(30)
def test_the_client_suites_server_ends_its_side_once_it_read_the_clients_error_goodbye() -> None:
    """Once a case has read the client's error goodbye, the scripted server ends its side at once
    (over WebSocket, its close frame), as a server does, and does not wait for the client's end
    of input: over WebSocket that comes only after the server's close, or at the client's 2 s
    linger bound, which every such case waited out."""
    from rstreams.conformance._client_suite import Server

    async def play() -> None:
        link = _WebSocketLikeLink()
        server = Server(link, _ExitedAdapter(), timeout=5.0, quiet=0.1)  # type: ignore[arg-type]
        await server.expect(ClientHello, "the clientHello")
        await server.closed_with_goodbye("an unknown message type")
        await asyncio.wait_for(server.finish(), 5.0)  # without the close: the read never ends
        assert link.ours_ended.is_set()

    asyncio.run(play())
