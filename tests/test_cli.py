"""The `rstreams` command: serve and subscribe; it dispatches the conformance suite and the benchmarks."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import io
import json
import os
import queue
import re
import shlex
import socket
import ssl
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from rstreams import Subscriber, _cli_logs, _cli_observe, cli, just
from rstreams._cli_publishers import builtin_channels, builtin_publishers, load_publishers
from rstreams.cli import main
from rstreams.conformance import CASES
from rstreams.errors import (
    AuthNotOfferedError,
    AuthRefusedError,
    AuthRequiredError,
    AuthTimeoutError,
    ConnectionBrokenError,
    TLSRefusedError,
)
from rstreams.net import serve
from rstreams.net._closing import SILENT_HINT
from rstreams.net._transport import TLS_REFUSAL_HINT, TLSNoResponseError
from rstreams.replay import (
    AccessDeniedError,
    CertificateRefusedError,
    ServerUnavailableError,
    TLSHandshakeError,
)
from testkit import patience
from testkit.imports import without_package
from testkit.net import run_virtual
from testkit.observe import served


@pytest.mark.timeout(30)
def test_conformance_help_is_the_suites_own(capsys: pytest.CaptureFixture[str]) -> None:
    """`rstreams conformance --help` shows the conformance driver's options."""
    with pytest.raises(SystemExit) as exit_info:
        main(["conformance", "--help"])
    assert exit_info.value.code == 0
    assert "--junit" in capsys.readouterr().out


@pytest.mark.timeout(30)
def test_conformance_help_names_values_as_the_other_commands_do(capsys: pytest.CaptureFixture[str]) -> None:
    """S for seconds, N for counts, as in `rstreams subscribe --help`: not argparse's upper-cased
    option names (`--quiet QUIET`, `--jobs JOBS`)."""
    with pytest.raises(SystemExit):
        main(["conformance", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    for option in ("--timeout S", "--quiet S", "--case-timeout S", "--idle-timeout S", "--jobs N"):
        assert f"[{option}]" in shown, option
    assert "[--max-subscriptions N] [--max-element-size BYTES]" in shown
    for upper in ("QUIET", "JOBS", "TIMEOUT", "CASE_TIMEOUT", "MAX_SUBSCRIPTIONS", "MAX_ELEMENT_SIZE"):
        assert f" {upper}" not in shown, upper


@pytest.mark.timeout(30)
def test_conformance_options_with_values_still_parse(capsys: pytest.CaptureFixture[str]) -> None:
    """The new names change the help only: `--quiet 0.5 --jobs 2 ...` are read as before."""
    from rstreams.conformance._runner import _parser

    args = _parser("rstreams conformance").parse_args(
        [
            *("tcp://h:1", "--quiet", "0.5", "--jobs", "2", "--timeout", "3", "--case-timeout", "9"),
            *("--max-subscriptions", "8", "--max-element-size", "99", "--idle-timeout", "1.5"),
        ]
    )
    assert (args.quiet, args.jobs, args.timeout, args.case_timeout) == (0.5, 2, 3.0, 9.0)
    assert (args.max_subscriptions, args.max_element_size, args.idle_timeout) == (8, 99, 1.5)


@pytest.mark.timeout(30)
def test_conformance_list_needs_no_url(capsys: pytest.CaptureFixture[str]) -> None:
    """`rstreams conformance --list` lists the cases: no endpoint is asked, so none is named."""
    assert main(["conformance", "--list"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == len(CASES)


@pytest.mark.timeout(60)
def test_bench_help_runs_the_benchmarks_script() -> None:
    """`rstreams bench --help` reaches benchmarks/run.py of this checkout."""
    done = patience.run(
        [sys.executable, "-m", "rstreams.cli", "bench", "--help"],
        50,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "--quick" in done.stdout
    assert done.stdout.startswith("usage: rstreams bench "), done.stdout


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", ["subscribe", "ping", "top"])
def test_a_url_where_nothing_listens_asks_whether_a_server_is_there(
    capsys: pytest.CaptureFixture[str], command: str, tmp_path: Path
) -> None:
    """Connection refused (tcp://) or no socket file (unix://): one line that says what to check.
    (In this process, under -X dev: a transport left open would fail the test too.)"""
    with socket.socket() as probe:  # a port that was free a moment ago, nothing listening on it
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for url in (f"tcp://127.0.0.1:{port}", f"unix://{tmp_path / 'none.sock'}"):
        assert main([command, url, *(["counter"] if command == "subscribe" else [])]) == 2
        out, err = capsys.readouterr()
        lines = err.strip().splitlines()
        assert out == "" and len(lines) == 1, (url, err)
        assert lines[0].endswith("(the URL: is a server listening there?)"), (url, err)
        assert "could not connect" not in lines[0], lines[0]  # the URL once, then why


def test_rstreams_version_names_the_package(capsys: pytest.CaptureFixture[str]) -> None:
    from rstreams.observe._builtin import version

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert (exit_info.value.code, capsys.readouterr().out) == (0, f"rstreams {version()}\n")


@pytest.mark.parametrize(
    ("url", "error", "hint"),
    [
        ("tcp://nowhere.invalid:1", socket.gaierror(-2, "Name or service not known"), "(the URL's host: "),
        ("tcp://10.9.9.9:1", OSError(errno.EADDRNOTAVAIL, "cannot assign"), "(the URL's host: "),
        ("unix:///no/dir/s.sock", FileNotFoundError(2, "No such file"), "(the socket's directory must"),
    ],
)
def test_an_address_that_cannot_be_served_names_what_to_change(url: str, error: OSError, hint: str) -> None:
    from rstreams._cli_common import cannot_serve

    said = cannot_serve(url, error)
    assert said.startswith(f"cannot serve on {url}: ") and hint in said, said


def test_a_host_name_that_does_not_resolve_is_named() -> None:
    from rstreams._cli_observe import access_hint
    from rstreams.errors import ConnectionBrokenError

    broken = ConnectionBrokenError("could not connect to tcp://nowhere.invalid:1: [Errno -2] no")
    broken.__cause__ = socket.gaierror(-2, "no")
    assert access_hint(broken) == " (the URL's host: this machine finds no address for that name)"


@pytest.mark.timeout(30)
def test_conformance_against_nothing_listening_exits_2() -> None:
    """An unreachable endpoint is reported as such (exit 2), not as failed cases."""
    url = f"tcp://127.0.0.1:{_closed_port()}"
    assert main(["conformance", url, "-k", "handshake", "--timeout", "2"]) == 2


def _closed_port() -> int:
    """A port nothing listens on: bound and released (a fixed low port may be in use)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# -- rstreams serve / rstreams subscribe ---------------------------------------------------

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@contextlib.contextmanager
def cli_server(*options: str, url: str = "tcp://127.0.0.1:0") -> Iterator[str]:
    """``rstreams serve URL OPTIONS`` as a process; yields the line it announces itself with."""
    process = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", url, *options],
        stdin=subprocess.DEVNULL,  # serve URL NAME: an empty log, served on
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        announced = patience.child_line(process, "its serving line")
        assert announced.startswith("serving "), announced + patience.communicate(process, 10)[1]
        yield announced
    finally:
        process.terminate()  # SIGTERM: the server closes its connections and exits 0
        _, err = patience.communicate(process, 10)
        assert process.returncode == 0, err


def url_of(announced: str) -> str:
    return announced.strip().rsplit(" on ", 1)[1]


def subscribe(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, list[str], str]:
    """``rstreams subscribe ARGV`` in this process: (exit status, stdout lines, stderr)."""
    status = main(["subscribe", *argv])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


@pytest.mark.timeout(60)
def test_serve_builtins_then_subscribe(capsys: pytest.CaptureFixture[str]) -> None:
    """`rstreams serve URL` names its built-ins; counter and sensors/{id} print line by line."""
    with cli_server() as announced:
        assert announced.startswith("serving counter, sensors/{id}, channel upper on tcp://127.0.0.1:")
        url = url_of(announced)
        assert subscribe(capsys, url, "counter?from=3&to=8", "--demand", "2") == (
            0,
            ["3", "4", "5", "6", "7"],
            "",
        )
        status, lines, _ = subscribe(capsys, url, "counter", "--count", "4")
        assert (status, lines) == (0, ["0", "1", "2", "3"])
        status, lines, _ = subscribe(capsys, url, "sensors/7?rate=0&count=3")
        readings = [json.loads(line) for line in lines]
        assert status == 0
        assert [(r["sensor"], r["seq"]) for r in readings] == [("7", 0), ("7", 1), ("7", 2)]
        assert all(isinstance(r["value"], float) and isinstance(r["ts"], float) for r in readings)
        status, _, err = subscribe(capsys, url, "counter?rate=fast")
        assert status == 1
        assert (
            "PublisherParameterError: counter: rate needs a number of elements per second >= 0, got 'fast'"
            in err
        )


@pytest.mark.timeout(60)
def test_serve_builtins_offer_the_channel_upper() -> None:
    """`rstreams serve URL` answers on its channel `upper` (the JavaScript README's quick start
    opens it): one upper-cased answer per input element; a parameter is refused by name."""
    from rstreams import from_iterable
    from rstreams.net import RemoteStreamError
    from testkit.net import connect_child

    async def talk(url: str) -> tuple[list[bytes], str]:
        async with await connect_child(url) as conn:
            answers = await conn.channel("upper", from_iterable([b"a", b"bc", b"d1e"])).collect()
            with pytest.raises(RemoteStreamError) as refused:
                await conn.channel("upper?x=1", from_iterable([b"a"])).collect()
        return answers, str(refused.value)

    with cli_server() as announced:
        answers, refused = asyncio.run(talk(url_of(announced)))
    assert answers == [b"A", b"BC", b"D1E"]
    assert (
        "PublisherParameterError: upper: unknown parameter 'x'; this publisher takes no parameters" in refused
    )


@pytest.mark.timeout(30)
def test_sensor_rate_paces_readings(capsys: pytest.CaptureFixture[str]) -> None:
    """sensors/{id}?rate=20: readings are paced, never bunched; the same walk per id.

    Each reading is made no earlier than its due time, due times are 50 ms apart, and a
    reading made late moves the schedule instead of bursting to catch up; so, however late
    any single reading is (a loaded machine), four readings span at least two periods.
    """
    with served(builtin_publishers()) as url:
        first = [json.loads(line) for line in subscribe(capsys, url, "sensors/a?rate=20&count=4")[1]]
        again = [json.loads(line) for line in subscribe(capsys, url, "sensors/a?rate=0&count=4")[1]]
    span = first[-1]["ts"] - first[0]["ts"]
    assert span >= 2 * 0.05 - 0.002, [r["ts"] for r in first]  # 2 ms: stamps are rounded to 1 ms
    assert [r["value"] for r in first] == [r["value"] for r in again]


class RecordingPublisher:
    """0, 1, 2, ... as text; records the most ever outstanding (requested, not yet sent)."""

    def __init__(self) -> None:
        self.requested = 0
        self.sent = 0
        self.most_outstanding = 0
        self.cancelled = threading.Event()

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        recorder = self

        class Recording:
            def request(self, n: int) -> None:
                recorder.requested += n
                recorder.most_outstanding = max(recorder.most_outstanding, recorder.requested - recorder.sent)
                while recorder.sent < recorder.requested and not recorder.cancelled.is_set():
                    recorder.sent += 1
                    subscriber.on_next(str(recorder.sent - 1).encode())

            def cancel(self) -> None:
                recorder.cancelled.set()

        subscriber.on_subscribe(Recording())


@pytest.mark.timeout(30)
@pytest.mark.parametrize("window", [1, 3, 8])
def test_demand_is_a_window_and_count_cancels(capsys: pytest.CaptureFixture[str], window: int) -> None:
    """--demand N: never more than N outstanding at the publisher; --count 10: 10 lines, then cancel."""
    publisher = RecordingPublisher()
    with served({"numbers": publisher}) as url:
        status, lines, err = subscribe(capsys, url, "numbers", "--demand", str(window), "--count", "10")
        assert patience.wait(publisher.cancelled, 10), "the subscription was not cancelled after --count"
    assert (status, err) == (0, "")
    assert lines == [str(n) for n in range(10)]
    assert publisher.most_outstanding <= window
    assert publisher.requested <= 10  # nothing asked for beyond --count


@pytest.mark.timeout(30)
def test_limit_is_still_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    """--limit N (the old spelling) is --count N."""
    with served(builtin_publishers()) as url:
        assert subscribe(capsys, url, "counter", "--limit", "2")[:2] == (0, ["0", "1"])


@pytest.mark.timeout(30)
def test_codecs_on_both_ends(capsys: pytest.CaptureFixture[str]) -> None:
    """counter served as int64 (packed) or json reads back with the same --codec; raw shows hex."""
    with served(builtin_publishers("int64")) as url:
        assert subscribe(capsys, url, "counter?from=-2&to=2", "--codec", "int64")[:2] == (
            0,
            ["-2", "-1", "0", "1"],
        )
        status, _, err = subscribe(capsys, url, "counter", "--codec", "json")
        assert status == 1
        assert "element 1 is not json" in err
    with served(builtin_publishers("json")) as url:
        assert subscribe(capsys, url, "counter?to=2", "--codec", "json")[:2] == (0, ["0", "1"])
        assert subscribe(capsys, url, "counter?to=2", "--codec", "raw")[:2] == (0, ["30", "31"])
        status, _, err = subscribe(capsys, url, "counter?to=2", "--codec", "float64")
        assert (status, err) == (
            1,
            "rstreams subscribe: element 1 is not float64: 1 bytes where float64 takes 8 (--codec "
            "float64; the publisher announces application/json: leave --codec out to show them so)\n",
        )
    with served({"plain": just(b"x")}) as url:  # nothing announced: the other --codec values
        status, _, err = subscribe(capsys, url, "plain", "--codec", "int64")
        assert (status, err) == (
            1,
            "rstreams subscribe: element 1 is not int64: 1 bytes where int64 takes 8 (--codec "
            "int64; the publisher announces no content type: another --codec, or raw for hex)\n",
        )


@pytest.mark.timeout(30)
def test_without_codec_elements_are_shown_by_their_announced_content_type(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """No --codec: the publisher's content type (PROTOCOL.md §17) says how to show its elements;
    none announced (a plain Publisher of bytes), utf8 text."""
    with served(builtin_publishers("float64")) as url:
        assert subscribe(capsys, url, "counter?to=2")[:2] == (0, ["0.0", "1.0"])
        assert subscribe(capsys, url, "counter?to=1", "--codec", "raw")[:2] == (0, ["0000000000000000"])
    with served(builtin_publishers("int64")) as url:
        assert subscribe(capsys, url, "counter?from=-1&to=1")[:2] == (0, ["-1", "0"])
        assert subscribe(capsys, url, "sensors/a?rate=0&count=1")[1][0].startswith('{"sensor":"a","seq":0,')
    with served({"plain": just(b"caf\xc3\xa9")}) as url:
        assert subscribe(capsys, url, "plain")[:2] == (0, ["café"])


@pytest.mark.timeout(60)
def test_publishers_from_a_users_file(capsys: pytest.CaptureFixture[str]) -> None:
    """`--publishers examples/my_publishers.py:PUBLISHERS` serves the names and patterns of that mapping."""
    with cli_server("--publishers", f"{EXAMPLES / 'my_publishers.py'}:PUBLISHERS") as announced:
        assert announced.startswith("serving squares, hello/{who}, planets on ")
        url = url_of(announced)
        assert subscribe(capsys, url, "squares?to=5")[:2] == (0, ["0", "1", "4", "9", "16"])
        assert subscribe(capsys, url, "hello/ann")[:2] == (0, ["hello, ann"])
        status, lines, _ = subscribe(capsys, url, "planets", "--codec", "json", "--count", "2")
        assert (status, [json.loads(line)["name"] for line in lines]) == (0, ["Mercury", "Venus"])


@pytest.mark.timeout(30)
def test_publishers_from_a_module(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--publishers module:NAME` imports from the working directory; NAME defaults to PUBLISHERS."""
    monkeypatch.chdir(EXAMPLES)
    monkeypatch.setattr(sys, "path", list(sys.path))
    offer = load_publishers("my_publishers")
    assert isinstance(offer, Mapping)
    assert list(offer) == ["squares", "hello/{who}", "planets"]


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("no_such_module_h8:PUBLISHERS", "no module named 'no_such_module_h8'"),
        ("missing/file.py:PUBLISHERS", "no such file 'missing/file.py'"),
        (f"{EXAMPLES / 'my_publishers.py'}:NOPE", "has no attribute 'NOPE'"),
        (f"{EXAMPLES / 'my_publishers.py'}:PLANETS", "must be a mapping of names to Publishers or factories"),
        (f"{EXAMPLES / 'my_publishers.py'}:1x", "is not a Python name"),
        (":PUBLISHERS", "':PUBLISHERS': no module or file before ':' (module:NAME or file.py:NAME)"),
    ],
)
def test_bad_publishers_spec_exits_2(capsys: pytest.CaptureFixture[str], spec: str, says: str) -> None:
    """A --publishers that names nothing usable is refused before anything listens."""
    assert main(["serve", "tcp://127.0.0.1:0", "--publishers", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rstreams serve: --publishers ")
    assert says in err


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("pubs_h8", "'pubs_h8' is a directory; give the .py file in it that holds the mapping"),
        ("pubs_h8/", "'pubs_h8/' is a directory; give the .py file in it that holds the mapping"),
        ("pubs_h8.txt:X", "'pubs_h8.txt' is a file of this directory, but not a .py file"),
    ],
)
def test_a_publishers_directory_or_other_file_is_named_as_such(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    spec: str,
    says: str,
) -> None:
    """A directory (a namespace package to import) or a file that is no .py file: the line says
    what it is and what --publishers takes; it said 'pubs has no attribute PUBLISHERS', 'no
    module named pubs_h8', or 'no such file' for a directory that exists."""
    (tmp_path / "pubs_h8").mkdir()
    (tmp_path / "pubs_h8.txt").write_text("")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["serve", "tcp://127.0.0.1:0", "--publishers", spec]) == 2
    assert capsys.readouterr().err.startswith(f"rstreams serve: --publishers {spec!r}: {says}")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("form", ["file", "module"])
def test_publishers_that_exit_while_loading_are_named_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, form: str
) -> None:
    """A --publishers file calling sys.exit(3) at import: not a silent exit 3 (the SystemExit would
    leave main() and end the process with its code), but exit 2 (as for the other bad
    --publishers) with a line saying it ended the process while loading, and its code. Run in
    this process: main()'s status is the command's, and a child serve only added an interpreter's
    start-up and imports, which a loaded machine can stretch past the test's wall-clock timeout."""
    (tmp_path / "quits_h8.py").write_text("import sys\n\nsys.exit(3)\n")
    spec = str(tmp_path / "quits_h8.py") if form == "file" else "quits_h8"
    monkeypatch.chdir(tmp_path)  # module:NAME is imported from the working directory
    monkeypatch.setattr(sys, "path", list(sys.path))
    assert main(["serve", "tcp://127.0.0.1:0", "--publishers", spec]) == 2
    doing = f"loading {spec}" if form == "file" else "importing quits_h8"
    assert capsys.readouterr() == (
        "",
        f"rstreams serve: --publishers {spec!r}: {doing} ended the process: it called sys.exit(3) "
        "(raised SystemExit) while being loaded; a file given to --publishers defines publishers, "
        'and code that runs it as a script belongs under `if __name__ == "__main__":`\n',
    )
    assert not {"quits_h8", "_rstreams_publishers_quits_h8"} & set(sys.modules)  # nothing half-loaded kept


@pytest.mark.timeout(30)
@pytest.mark.parametrize("body", ["sys.exit()", "sys.exit('bye')"])
def test_publishers_exiting_without_a_number_say_how(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, body: str
) -> None:
    """sys.exit() and sys.exit('message') while loading: refused the same way, the call shown as made."""
    (tmp_path / "quits.py").write_text(f"import sys\n\n{body}\n")
    assert main(["serve", "tcp://127.0.0.1:0", "--publishers", str(tmp_path / "quits.py")]) == 2
    assert f"ended the process: it called {body} (raised SystemExit)" in capsys.readouterr().err


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("mapping", "says"),
    [
        ("{'x': 5}", "publisher 'x' must map to a Publisher or a factory, got 5"),
        ("{'x?y': rstreams.just(b'a')}", "the name 'x?y' cannot be offered: '?' starts a requested name's"),
    ],
)
def test_a_mapping_serve_refuses_is_blamed_on_publishers(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, mapping: str, says: str
) -> None:
    """A mapping that loads but that serve() refuses names --publishers, not the URL (a name
    with '?' was served, and could never be subscribed to)."""
    (tmp_path / "offer.py").write_text(f"import rstreams\nPUBLISHERS = {mapping}\n")
    spec = f"{tmp_path / 'offer.py'}:PUBLISHERS"
    assert main(["serve", "tcp://127.0.0.1:0", "--publishers", spec]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams serve: --publishers {spec!r}: {says}") and err.count("\n") == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "tcp://127.0.0.1:0", "--capacity", "10", "--path", "DIR", "nums"],
        ["serve", "--capacity", "10", "tcp://127.0.0.1:0", "nums", "--path", "DIR"],
        ["serve", "tcp://127.0.0.1:0", "nums", "--capacity", "10", "--path", "DIR"],
    ],
)
def test_serve_takes_name_after_options(argv: list[str]) -> None:
    """NAME may follow the log's options, as URL may: argparse alone would have given NAME its
    (absent) value at URL and refused `nums` as an unrecognized argument."""
    args = cli._parser().parse_args(argv)
    assert (args.url, args.name, args.capacity, args.path) == ("tcp://127.0.0.1:0", "nums", 10, "DIR")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "tcp://127.0.0.1:0", "--capacity", "5"],
        ["serve", "tcp://127.0.0.1:0", "--sink", "results"],
        ["serve", "tcp://127.0.0.1:0", "log", "--resume"],
        ["serve", "tcp://127.0.0.1:0", "log", "--publishers", "x:Y"],
    ],
)
def test_options_of_the_other_mode_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    """Replay-log options without NAME, or publisher options with NAME, are refused by name,
    saying how the command that takes them is written."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    option = next(a for a in argv if a.startswith("--"))
    assert f"{option} does not apply when serving" in err
    usage = "rstreams serve URL NAME" if "log" not in argv else "rstreams serve URL"
    assert err.endswith(
        f"; it is for {'a replay log' if 'log' not in argv else 'serving publishers'}: {usage} {option} ...\n"
    )


@pytest.mark.timeout(30)
def test_a_log_name_after_web_is_told_apart_from_an_address(capsys: pytest.CaptureFixture[str]) -> None:
    """`serve URL --web readings`: --web's optional address took the log's name; the error says
    so and how to write it, rather than that --web does not apply to publishers."""
    assert main(["serve", "tcp://127.0.0.1:0", "--web", "readings"]) == 2
    assert capsys.readouterr().err == (
        "rstreams serve: --web takes HOST:PORT, got 'readings'; for the live page of the log "
        "'readings': rstreams serve URL readings --web\n"
    )
    assert main(["serve", "tcp://127.0.0.1:0", "--web", "127.0.0.1:8000"]) == 2
    assert "--web does not apply when serving publishers" in capsys.readouterr().err


def test_serve_help_groups_the_options_by_the_mode_that_takes_them() -> None:
    """`rstreams serve --help` lists under "publishers" exactly the options only `serve URL` takes,
    and under "a replay log" those only `serve URL NAME` takes (--metrics, taken by both, was
    listed with the publishers' alone)."""
    import argparse

    commands = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    serve = commands.choices["serve"]
    groups = {group.title: {action.dest for action in group._group_actions} for group in serve._action_groups}
    assert groups["publishers (rstreams serve URL)"] == set(cli._PUBLISHER_OPTIONS)
    # --pending-timeout has a default, so its use cannot be told apart in the other mode
    assert groups["a replay log of standard input (rstreams serve URL NAME)"] == {
        *_cli_logs.LOG_OPTIONS,
        "pending_timeout",
    }
    assert "metrics" in groups["options"]


@pytest.mark.timeout(30)
def test_unreachable_server_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing listening: one line naming the URL, exit 2, no traceback."""
    with socket.socket() as probe:  # a port that was free a moment ago
        probe.bind(("127.0.0.1", 0))
        url = f"tcp://127.0.0.1:{probe.getsockname()[1]}"
    status, lines, err = subscribe(capsys, url, "counter")
    assert (status, lines) == (2, [])
    assert err.startswith(f"rstreams subscribe: cannot connect to {url}: ")
    assert "Traceback" not in err


@pytest.mark.timeout(30)
def test_unknown_name_exits_1_with_the_servers_error(capsys: pytest.CaptureFixture[str]) -> None:
    """An unknown name: the server's onError is printed, exit 1; the server goes on."""
    with served(builtin_publishers()) as url:
        status, lines, err = subscribe(capsys, url, "countr")
        assert (status, lines) == (1, [])
        assert err == (
            f"rstreams subscribe: publisher 'countr' on {url} failed: no publisher named 'countr'"
            f" (the names it offers: rstreams subscribe {url} rstreams/publishers; "
            "a replay log server's logs: rstreams/logs)\n"
        )
        assert subscribe(capsys, url, "rstreams/publishers")[0] == 0
        assert subscribe(capsys, url, "counter?to=1")[:2] == (0, ["0"])


CHANNEL_HINT = (
    "(rstreams subscribe opens no channels; in Python: conn.channel('upper', input_publisher), "
    "README.md, 'Channels: a stream in, a stream out')"
)


@pytest.mark.timeout(30)
def test_subscribing_to_a_channel_says_it_is_one_and_how_to_open_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`rstreams subscribe URL upper` to a server that offers upper only as a channel: the refusal
    says it is a channel (PROTOCOL.md §21.3), and the hint how to open one, exit 1."""
    with served(builtin_publishers(), channels=builtin_channels()) as url:
        status, lines, err = subscribe(capsys, url, "upper")
        assert (status, lines) == (1, [])
        assert err == (
            f"rstreams subscribe: publisher 'upper' on {url} failed: no publisher named 'upper' "
            f"('upper' is a channel: open it as one, PROTOCOL.md §21.3) {CHANNEL_HINT}\n"
        )
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert "### Channels: a stream in, a stream out" in readme  # the section the hint names
    assert "`conn.channel(name, input_publisher)`" in readme


@pytest.mark.timeout(30)
def test_a_publisher_named_like_a_channel_is_what_subscribe_gets(capsys: pytest.CaptureFixture[str]) -> None:
    """A plain subscribe reaches the publisher of that name, never the channel of that name."""
    with served({"upper": just(b"plain")}, channels=builtin_channels()) as url:
        assert subscribe(capsys, url, "upper") == (0, ["plain"], "")


@pytest.mark.timeout(60)
def test_token_refusal(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """`serve --token`: no or a wrong token ends the connection (exit 2); the right one reads."""
    monkeypatch.delenv("RSTREAMS_TOKEN", raising=False)
    with cli_server("--token", "s3cret-h8") as announced:
        url = url_of(announced)
        status, _, err = subscribe(capsys, url, "counter?to=2", "--token", "wrong")
        assert status == 2
        assert "authentication failed" in err and err.endswith(" (--token: the server refused this one)\n")
        assert "wrong" not in err and "s3cret" not in err
        status, _, err = subscribe(capsys, url, "counter?to=2")
        assert (status, "authentication required" in err) == (2, True)
        assert err.endswith(" (--token: this server asks for one)\n")
        assert main(["ping", url]) == 2
        assert capsys.readouterr().err.endswith(" (--token: this server asks for one)\n")
        assert subscribe(capsys, url, "counter?to=2", "--token", "s3cret-h8")[:2] == (0, ["0", "1"])


@pytest.mark.timeout(60)
def test_tls(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`serve --tls-cert/--tls-key` on tls://; `subscribe --cafile` trusts it; without it, exit 2."""
    from testkit.tls import TestCA

    ca = TestCA.make(tmp_path, "h8 CA")
    issued = ca.issue("server", san=("127.0.0.1",))
    with cli_server(
        "--tls-cert", str(issued.cert), "--tls-key", str(issued.key), url="tls://127.0.0.1:0"
    ) as line:
        url = url_of(line)
        assert url.startswith("tls://127.0.0.1:")
        assert subscribe(capsys, url, "counter?to=2", "--cafile", str(ca.cert))[:2] == (0, ["0", "1"])
        status, _, err = subscribe(capsys, url, "counter?to=2")
        assert status == 2
        assert err.startswith(f"rstreams subscribe: cannot connect to {url}: ")
        hint = " (--cafile PEM: the CA that signed the server's certificate, when not a system CA)\n"
        assert "CERTIFICATE_VERIFY_FAILED" in err and err.endswith(hint)
        assert main(["ping", url]) == 2
        assert capsys.readouterr().err.endswith(hint)
        named = url.replace("127.0.0.1", "localhost")  # a name the certificate does not carry
        status, _, err = subscribe(capsys, named, "counter?to=2", "--cafile", str(ca.cert))
        assert status == 2 and err.endswith(" (connect by a host name the server's certificate carries)\n")


@pytest.mark.timeout(30)
def test_publish_by_a_name_the_certificate_lacks_names_server_name(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """publish to tls://localhost:PORT when the certificate carries 127.0.0.1 only: exit 2, at once,
    the hint naming --server-name too (publish takes it; subscribe, whose hint stays, does not)."""
    from testkit.tls import TestCA, server_context

    ca = TestCA.make(tmp_path, "names CA")
    context = server_context(ca.issue("server", san=("127.0.0.1",)))
    with served(builtin_publishers(), url="tls://127.0.0.1:0", ssl=context) as url:
        named = url.replace("127.0.0.1", "localhost")
        status, err = publish(capsys, monkeypatch, b"one\n", named, "results", "--cafile", str(ca.cert))
    assert (status, err.count("\n")) == (2, 1), err
    assert "CERTIFICATE_VERIFY_FAILED" in err
    assert err.endswith(
        " (connect by a host name the server's certificate carries, or give it with --server-name NAME)\n"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("scheme", "version"), [("tls", "1.3"), ("wss", "1.3"), ("tls", "1.2")])
def test_mutual_tls(capsys: pytest.CaptureFixture[str], tmp_path: Path, scheme: str, version: str) -> None:
    """A server that requires client certificates: subscribe, ping and top reach it with
    --certfile/--keyfile; without them, or with one it does not trust, the error names the
    option (TLS 1.3 refuses after the client's handshake, TLS 1.2 in it); a file that does not
    load is named with its option, before connecting."""
    import ssl

    from testkit.tls import TestCA, server_context

    ca, other = TestCA.make(tmp_path, "mtls CA"), TestCA.make(tmp_path, "another CA")
    server = ca.issue("server", san=("127.0.0.1",))
    alice, mallory = ca.issue("alice", client=True), other.issue("mallory", client=True)
    trust = ["--cafile", str(ca.cert)]
    client = [*trust, "--certfile", str(alice.cert), "--keyfile", str(alice.key)]
    address = {"tls": "tls://127.0.0.1:0", "wss": "wss://127.0.0.1:0/rsio"}[scheme]
    context = server_context(server, client_ca=ca)
    if version == "1.2":
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    with served(builtin_publishers(), url=address, ssl=context) as url:
        assert subscribe(capsys, url, "counter?to=2", *client)[:2] == (0, ["0", "1"])
        assert main(["ping", url, *client]) == 0
        assert capsys.readouterr().out.startswith(f"{url}: ok in ")
        assert main(["top", url, *client]) == 1  # connected: this server does not count (metrics=)
        assert "this server counts nothing" in capsys.readouterr().err

        # A reset inside the handshake (TLS 1.2's asyncio server; TLS 1.3's refusal too when it
        # reaches a client still in its handshake) is what a server without TLS may do as well:
        # then the hint goes on with the URL (test_tls_towards_a_websocket_server_...).
        plain = "; or the URL: tcp:// or ws:// for a server that speaks no TLS there"

        def hinted(err: str, hint: str) -> bool:
            return err.endswith((f" ({hint})\n", f" ({hint}{plain})\n"))

        hint = "--certfile PEM, --keyfile PEM: a client certificate, when the server requires one"
        status, _, err = subscribe(capsys, url, "counter?to=2", *trust)
        assert status == 2 and hinted(err, hint), err
        for command in ("ping", "top"):
            assert main([command, url, *trust]) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"rstreams {command}: ") and hinted(err, hint), err

        untrusted = [*trust, "--certfile", str(mallory.cert), "--keyfile", str(mallory.key)]
        status, _, err = subscribe(capsys, url, "counter?to=2", *untrusted)
        assert status == 2
        assert hinted(
            err, f"--certfile {mallory.cert}: a client certificate the server trusts, when it requires one"
        )

        mismatched = [*trust, "--certfile", str(alice.cert), "--keyfile", str(mallory.key)]
        for command, name in (("subscribe", ["counter"]), ("ping", []), ("top", [])):
            assert main([command, url, *name, *mismatched]) == 2
            err = capsys.readouterr().err
            said = f"cannot load --certfile {alice.cert} / --keyfile {mallory.key} (SSLError: "
            assert err.startswith(f"rstreams {command}: {said}") and err.count("\n") == 1, err


def _alert(reason: str) -> ssl.SSLError:
    """An ``ssl.SSLError`` as OpenSSL makes it for the TLS alert ``reason``."""
    error = ssl.SSLError(1, f"[SSL: {reason}] {reason.lower()}")
    error.reason = reason
    return error


def _caused(error: BaseException, cause: BaseException) -> BaseException:
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    ("error", "refused"),
    [
        (TLSRefusedError("the peer closed the connection without a goodbye before its hello; ..."), True),
        (CertificateRefusedError("tls://h:1 ended the TLS session twice in a row: ..."), True),
        (_alert("TLSV1_ALERT_UNKNOWN_CA"), True),
        (_caused(ConnectionBrokenError("could not connect"), _alert("SSLV3_ALERT_HANDSHAKE_FAILURE")), True),
        (_caused(ConnectionBrokenError("could not connect"), _alert("TLSV1_ALERT_PROTOCOL_VERSION")), False),
        (ConnectionBrokenError("the peer said goodbye: 'SSLV3_ALERT_BAD_CERTIFICATE'"), False),
        (AccessDeniedError("the TLS handshake with tls://h:1 failed: [SSL: ...]"), False),
        (_caused(ConnectionBrokenError("could not connect"), TLSNoResponseError("no HTTP response")), True),
        (ConnectionBrokenError(f"WebSocket handshake failed: ... ({TLS_REFUSAL_HINT})"), False),
        (ServerUnavailableError("... the last: ...", last=TLSRefusedError("ended before its hello")), True),
        (ServerUnavailableError("...", last=_caused(ConnectionBrokenError(), TLSNoResponseError())), True),
        (ServerUnavailableError(f"... the last: could not connect: ...; {TLS_REFUSAL_HINT}"), False),
    ],
    ids=[
        "ended",
        "replay-refused",
        "alert",
        "alert-cause",
        "other-ssl",
        "words-only",
        "other-denied",
        "wss-no-response",
        "wss-words-only",
        "unavailable-last",
        "unavailable-last-cause",
        "unavailable-words-only",
    ],
)
def test_access_hint_tells_a_refused_client_certificate_by_type(error: BaseException, refused: bool) -> None:
    """The --certfile hint follows the error's type (or its cause's: a certificate alert, a
    wss:// handshake with no HTTP response over TLS; or the last failure of the replay client's
    ServerUnavailableError), not words that happen to name an alert or carry the hint."""
    from rstreams._cli_observe import access_hint

    hint = " (--certfile PEM, --keyfile PEM: a client certificate, when the server requires one)"
    assert access_hint(error) == (hint if refused else "")
    if refused:
        assert "--certfile me.pem: a client certificate the server trusts" in access_hint(error, "me.pem")


def _unverified(code: int, why: str) -> ssl.SSLCertVerificationError:
    """An ``ssl.SSLCertVerificationError`` as OpenSSL makes it for the verify ``code``."""
    error = ssl.SSLCertVerificationError(
        1, f"[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: {why}"
    )
    error.reason, error.verify_code, error.verify_message = "CERTIFICATE_VERIFY_FAILED", code, why
    return error


NAME_HINT = " (connect by a host name the server's certificate carries)"
CA_HINT = " (--cafile PEM: the CA that signed the server's certificate, when not a system CA)"
URL_HINT = " (the URL: the server does not speak TLS there; tcp:// or ws:// for one served without it)"


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (
            _caused(ConnectionBrokenError("could not connect"), _unverified(62, "Hostname mismatch")),
            NAME_HINT,
        ),
        (_caused(TLSHandshakeError("failed"), _unverified(64, "IP address mismatch")), NAME_HINT),
        (
            _caused(ConnectionBrokenError("could not connect"), _unverified(20, "unable to get issuer")),
            CA_HINT,
        ),
        (_caused(ConnectionBrokenError("could not connect"), _alert("WRONG_VERSION_NUMBER")), URL_HINT),
        (TLSHandshakeError("the TLS handshake failed: [SSL: CERTIFICATE_VERIFY_FAILED] ... mismatch"), ""),
        (ConnectionBrokenError("could not connect: [SSL: WRONG_VERSION_NUMBER] wrong version number"), ""),
    ],
    ids=[
        "name-mismatch",
        "replay-ip-mismatch",
        "unknown-ca",
        "not-tls",
        "verify-words-only",
        "version-words-only",
    ],
)
def test_access_hint_tells_a_failed_tls_handshake_by_type(error: BaseException, hint: str) -> None:
    """The hints for a server certificate not trusted or not for that name, and for TLS towards
    a server that does not speak it, follow the ``ssl.SSLError`` along the error's causes (its
    verify code, its reason), not the message's words."""
    from rstreams._cli_observe import access_hint

    assert access_hint(error) == hint


TAKES_NONE = " (--token: this server takes none; leave it out, and $RSTREAMS_TOKEN unset)"
ASKS = " (--token: this server asks for one)"
REFUSED = " (--token: the server refused this one)"


@pytest.mark.parametrize(
    ("error", "hint"),
    [
        (AuthNotOfferedError("closed by this side: ..."), TAKES_NONE),
        (AuthRequiredError("the peer said goodbye: '...'"), ASKS),
        (AuthRefusedError("the peer said goodbye: '...'", code=3), REFUSED),
        (AuthTimeoutError("the peer said goodbye: '...'", code=11), ""),
        (_caused(AccessDeniedError("http://h:1 refused the credentials: ..."), AuthRefusedError()), REFUSED),
        (_caused(AccessDeniedError("http://h:1: ..."), AuthNotOfferedError()), TAKES_NONE),
        (ServerUnavailableError("...", last=AuthRequiredError()), ASKS),
        (
            ConnectionBrokenError("... the server does not offer extension auth (id 2) (PROTOCOL.md §15.2)"),
            "",
        ),
        (ConnectionBrokenError("the peer said goodbye: 'authentication failed (PROTOCOL.md §15.3)'"), ""),
        (AccessDeniedError("http://h:1 refused the credentials: ... (PROTOCOL.md §15.2)"), ""),
    ],
    ids=[
        "not-offered",
        "required",
        "refused",
        "timeout",
        "replay-refused",
        "replay-not-offered",
        "unavailable-last",
        "not-offered-words-only",
        "refused-words-only",
        "replay-words-only",
    ],
)
def test_access_hint_tells_an_auth_failure_by_type(error: BaseException, hint: str) -> None:
    """The --token hints follow the AuthenticationError subclass along the error's causes (a
    replay client's AccessDeniedError keeps it as its cause), not the words of the goodbye: a
    goodbye's code 3 does not tell §15.2 from §15.3, the client's state does."""
    from rstreams._cli_observe import access_hint

    assert access_hint(error) == hint


@pytest.mark.timeout(30)
def test_subscribe_to_an_endpoint_that_closes_before_its_hello_says_what_it_may_be(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An endpoint that resets the connection without a word (not RS.io on this scheme): the line
    is the connection error's own message, which says what that may mean, not only its cause
    (the reset)."""
    import struct

    from rstreams.net._closing import NOT_RSIO_HINT

    listener = socket.create_server(("127.0.0.1", 0))

    def hang_up() -> None:
        accepted, _ = listener.accept()
        listener.close()
        accepted.recv(1)  # the client's hello: it is connected
        accepted.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        accepted.close()  # a reset: the connection error has a cause

    threading.Thread(target=hang_up, name="hang up", daemon=True).start()
    url = f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    assert main(["subscribe", url, "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams subscribe: connection to {url} ended: "), err
    assert err.endswith(f" before its hello; {NOT_RSIO_HINT}\n") and err.count("\n") == 1, err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("address", ["tls://127.0.0.1:0", "wss://127.0.0.1:0/rsio"])
def test_serve_mutual_tls(capsys: pytest.CaptureFixture[str], tmp_path: Path, address: str) -> None:
    """`serve --tls-client-ca` on tls:// and wss://: a client with a certificate that CA signed
    reads; one without a certificate is refused, and told to pass --certfile."""
    from testkit.tls import TestCA

    ca = TestCA.make(tmp_path, "serve mtls CA")
    server, alice = ca.issue("server", san=("127.0.0.1",)), ca.issue("alice", client=True)
    trust = ["--cafile", str(ca.cert)]
    with cli_server(
        *("--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-client-ca", str(ca.cert)),
        url=address,
    ) as line:
        url = url_of(line)
        assert url.startswith(address.partition(":0")[0] + ":"), url
        client = [*trust, "--certfile", str(alice.cert), "--keyfile", str(alice.key)]
        assert subscribe(capsys, url, "counter?to=2", *client)[:2] == (0, ["0", "1"])
        status, lines, err = subscribe(capsys, url, "counter?to=2", *trust)
        assert (status, lines) == (2, [])
        hint = " (--certfile PEM, --keyfile PEM: a client certificate, when the server requires one"
        plain = "; or the URL: tcp:// or ws:// for a server that speaks no TLS there"  # a reset in it
        assert err.startswith("rstreams subscribe: ") and url in err, err
        assert err.endswith((f"{hint})\n", f"{hint}{plain})\n")), err


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", [[], ["log"]])
@pytest.mark.parametrize("kind", ["missing", "not PEM"])
def test_serve_tls_client_ca_that_does_not_load(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: list[str], kind: str
) -> None:
    """A --tls-client-ca file that is missing or holds no certificate: one line naming the
    option and the file, exit 2, before listening (on a port that is then still free)."""
    from testkit.tls import TestCA

    server = TestCA.make(tmp_path, "CA").issue("server", san=("127.0.0.1",))
    bad = tmp_path / "clients-ca.pem"
    if kind == "not PEM":
        bad.write_text("not a certificate\n")
    port = _closed_port()
    tls = ["--tls-cert", str(server.cert), "--tls-key", str(server.key), "--tls-client-ca", str(bad)]
    assert main(["serve", f"tls://127.0.0.1:{port}", *name, *tls]) == 2
    err = capsys.readouterr().err
    said = f"--tls-client-ca {bad} holds no PEM certificate; " if kind == "not PEM" else "cannot load "
    assert err.startswith(f"rstreams serve: {said}") and err.count("\n") == 1, err
    assert f"--tls-client-ca {bad}" in err
    with socket.socket() as probe:  # nothing was bound: the port is still free
        probe.bind(("127.0.0.1", port))


@pytest.mark.timeout(30)
@pytest.mark.parametrize("web", ["nowhere", "127.0.0.1:99999", "127.0.0.1:"])
def test_serve_a_bad_web_address_exits_2_before_listening(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, web: str
) -> None:
    """`serve URL NAME --web` with no HOST:PORT, or a port past 65535 (a traceback once): one
    line naming --web, exit 2, before the server announces itself or binds its port."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    port = _closed_port()
    assert main(["serve", f"tcp://127.0.0.1:{port}", "log", "--web", web]) == 2
    assert capsys.readouterr() == (
        "",
        "rstreams serve: --web: the page's address is HOST:PORT (e.g. 127.0.0.1:8000; a port from 0 to "
        f"65535, 0: any), got {web!r}\n",
    )
    with socket.socket() as probe:  # nothing was bound: the port is still free
        probe.bind(("127.0.0.1", port))


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "guard", [["--token", "t"], ["--tls-client-ca", "ca.pem"], []], ids=["token", "client-ca", "variable"]
)
def test_serve_a_guarded_log_with_an_open_web_page_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, guard: list[str]
) -> None:
    """`serve URL NAME --token T` (or $RSTREAMS_TOKEN, or --tls-client-ca) with `--web` on an
    address beyond this machine: refused before listening, naming --web. The page's own RS.io
    server asks for no token and no certificate, so it would hand the guarded logs to anyone."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    monkeypatch.delenv("RSTREAMS_TOKEN", raising=False)
    if not guard:
        monkeypatch.setenv("RSTREAMS_TOKEN", "t")
    port = _closed_port()
    assert main(["serve", f"tls://127.0.0.1:{port}", "log", *guard, "--web", "0.0.0.0:0"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith("rstreams serve: --web 0.0.0.0:0: the live page's server asks for no token and no ")
    assert err.endswith("; give --web a loopback address (127.0.0.1:PORT)\n")
    with socket.socket() as probe:  # nothing was bound: the port is still free
        probe.bind(("127.0.0.1", port))


@pytest.mark.parametrize(
    ("web", "open_"),
    [
        ("127.0.0.1:8000", False),
        ("localhost:0", False),
        ("[::1]:0", False),
        (":8000", False),  # no host: the page listens on 127.0.0.1
        ("0.0.0.0:8000", True),
        ("192.0.2.7:80", True),
        ("example.org:80", True),
    ],
)
def test_which_web_addresses_face_the_network(web: str, open_: bool) -> None:
    """Loopback addresses (and none) keep the page on this machine; any other may not."""
    assert (_cli_logs._open_page_problem(web) is not None) == open_


class ManualPublisher:
    """One subscriber; the test emits to it (from its own thread) once demand has arrived."""

    def __init__(self) -> None:
        self.subscriber: Subscriber[bytes] | None = None
        self.asked = threading.Event()

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        publisher = self

        class Manual:
            def request(self, n: int) -> None:
                publisher.asked.set()

            def cancel(self) -> None:
                pass

        self.subscriber = subscriber
        subscriber.on_subscribe(Manual())


@pytest.mark.timeout(60)
def test_subscribe_without_tls_options_does_not_import_the_replay_package() -> None:
    """A command is a process of its own whose CPU time is mostly imports (a loaded machine
    stretches every millisecond of it): subscribe, ping and top import rstreams.replay, whose
    Access checks their TLS options, only when one is given."""
    code = "import sys; from rstreams.cli import main; status = main(sys.argv[1:]); "
    code += "print(status, sorted(name for name in sys.modules if name.startswith('rstreams.replay')))"
    with served({"n": just(b"0", b"1")}) as url:
        done = patience.run(
            [sys.executable, "-c", code, "subscribe", url, "n"],
            50,
            capture_output=True,
            text=True,
            check=False,
        )
    assert done.stdout == "0\n1\n0 []\n", done.stdout + done.stderr


@pytest.mark.timeout(240)  # (above its four waits on the child: 30 s of own time each)
def test_each_element_is_printed_as_it_arrives() -> None:
    """The first line reaches a pipe while the stream is still open (a flush per line)."""
    publisher = ManualPublisher()
    lines: queue.Queue[str] = queue.Queue()
    with served({"manual": publisher}) as url:
        process = subprocess.Popen(
            [sys.executable, "-m", "rstreams.cli", "subscribe", url, "manual"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={key: value for key, value in os.environ.items() if key != "PYTHONUNBUFFERED"},
        )
        stdout = process.stdout
        assert stdout is not None

        def read() -> None:
            for line in stdout:
                lines.put(line)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            assert patience.wait(publisher.asked, 30, [process.pid]), "the subscriber never asked"
            assert publisher.subscriber is not None
            publisher.subscriber.on_next(b"first")
            assert patience.get(lines, 30, [process.pid]) == "first\n"  # while the stream is still open
            publisher.subscriber.on_next(b"second")
            publisher.subscriber.on_complete()
            assert patience.get(lines, 30, [process.pid]) == "second\n"
            assert patience.wait_child(process, 30) == 0
        finally:
            process.kill()
            patience.communicate(process, 10)
            patience.join(reader, 10)


@pytest.mark.timeout(60)
def test_serve_resume(capsys: pytest.CaptureFixture[str]) -> None:
    """`serve --resume` keeps the session of a resumable client whose link is cut twice in the
    middle of a stream (every element once, in order, on one session), and still serves clients
    that do not resume."""
    from rstreams.net import UTF8, Resume
    from testkit.chaos import ChaosProxy
    from testkit.net import connect_child

    n = 20_000

    async def read_through_cuts(url: str) -> tuple[list[str], int]:
        async with ChaosProxy("127.0.0.1", int(url.rsplit(":", 1)[1])) as proxy:
            resume = Resume(attempts=20, backoff=0.01, max_backoff=0.1, attempt_timeout=10.0)
            async with await connect_child(proxy.url, resume=resume) as conn:
                received: list[str] = []
                async for number in conn.publisher(f"counter?to={n}", codec=UTF8):
                    received.append(number)
                    if len(received) in (1_000, 5_000):  # elements are still in flight
                        links = proxy.links_made
                        proxy.cut()
                        await proxy.wait_links(links + 1)  # the client reconnected
            return received, proxy.links_made

    with cli_server("--resume") as announced:
        url = url_of(announced)
        received, links = asyncio.run(read_through_cuts(url))
        assert received == [str(i) for i in range(n)]
        assert links == 3  # the first link and one per cut, each resuming the one session
        assert subscribe(capsys, url, "counter?to=3")[:2] == (0, ["0", "1", "2"])


@pytest.mark.timeout(30)
def test_a_token_for_a_server_without_auth_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--token towards a server that does not do auth: the client refuses to go on, says why,
    and that the server takes no token (not that it asks for one); subscribe, ping, top, publish."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    hint = " (--token: this server takes none; leave it out, and $RSTREAMS_TOKEN unset)\n"
    with served(builtin_publishers()) as url:
        status, lines, err = subscribe(capsys, url, "counter?to=2", "--token", "t")
        assert (status, lines) == (2, [])
        assert err.startswith(f"rstreams subscribe: connection to {url} ended: ")
        assert "does not offer extension auth" in err and err.endswith(hint), err
        for command, name in (("ping", []), ("top", []), ("publish", ["results"])):
            assert main([command, url, *name, "--token", "t", "--timeout", "10"]) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"rstreams {command}: ") and err.count("\n") == 1, err
            assert "does not offer extension auth" in err and err.endswith(hint), err


@pytest.mark.timeout(30)
def test_tls_towards_a_server_without_it_names_the_url(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """tls:// to a server that serves tcp://: one line saying the server does not speak TLS
    there (not only OpenSSL's "wrong version number"), exit 2; subscribe, ping, top, publish."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    hint = " (the URL: the server does not speak TLS there; tcp:// or ws:// for one served without it)\n"
    with served(builtin_publishers()) as plain:
        url = plain.replace("tcp://", "tls://")
        for command, name in (
            ("subscribe", ["counter"]),
            ("ping", []),
            ("top", []),
            ("publish", ["results"]),
        ):
            assert main([command, url, *name, "--timeout", "10"]) == 2
            err = capsys.readouterr().err
            assert err.startswith(f"rstreams {command}: ") and err.count("\n") == 1, err
            assert "WRONG_VERSION_NUMBER" in err and err.endswith(hint), err


def publish(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stdin: bytes, *argv: str
) -> tuple[int, str]:
    """``rstreams publish ARGV`` in this process, ``stdin`` its standard input: (exit status, stderr)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
    status = main(["publish", *argv])
    return status, capsys.readouterr().err


NOT_A_SINK = " (NAME: a sink log of that server, one it serves with --sink NAME)\n"


@pytest.mark.timeout(60)
def test_publish_refusals_name_what_to_change(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rstreams serve URL log --sink results` as a process: publish's refusals are one line,
    exit 1, saying what to pass instead: a name that is no log, a log that is not a sink, one of
    the server's own publishers (its JSON answer is not a sink log's), a line past
    max_element_size (PROTOCOL.md §11); the sink itself takes the lines."""
    with cli_server("log", "--sink", "results") as announced:
        url = url_of(announced)
        for name, says in (
            ("nope", f"rstreams publish: {url} refused 'nope': no publisher named 'nope'"),
            ("log", f"rstreams publish: {url} refused 'log': LogLookupError: log 'log' is not a sink log"),
            (
                "rstreams/health",
                f"rstreams publish: {url} did not answer 'rstreams/health' as a sink log does",
            ),
        ):
            status, err = publish(capsys, monkeypatch, b"one\n", url, name, "--timeout", "10")
            assert status == 1 and err.startswith(says) and err.endswith(NOT_A_SINK), err
            assert err.count("\n") == 1, err
        line = b"x" * (16 * 1024 * 1024 + 1) + b"\n"
        status, err = publish(capsys, monkeypatch, line, url, "results", "--timeout", "30")
        assert (status, err.count("\n")) == (1, 1), err
        assert err.startswith(f"rstreams publish: {url} refused 'results': ") and "max_element_size" in err
        assert err.endswith(" (each line is one element, at most max_element_size bytes: PROTOCOL.md §11)\n")
        assert publish(capsys, monkeypatch, b"one\ntwo\n", url, "results") == (
            0,
            "published 2 of 2 lines on 'results'\n",
        )


@pytest.mark.timeout(30)
def test_publish_past_the_staging_bound_says_to_publish_in_parts(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """More lines than a sink log stages at once (its bound, staging_bytes=): exit 1, and the
    line says that standard input is staged whole, so publish it in parts."""
    from rstreams.replay import ReplayLog, ReplayServer

    sinks = {"results": ReplayLog("results", capacity=10, evict=True)}
    with ReplayServer({}, sinks=sinks, staging_bytes=8) as server:
        url = server.url
        status, err = publish(capsys, monkeypatch, b"12345\n67890\n", url, "results")
    assert (status, err.count("\n")) == (1, 1), err
    assert err.startswith(f"rstreams publish: {url} refused 'results': ") and "staging area full" in err
    assert err.endswith(" (all of standard input is staged before it is published: publish it in parts)\n")


@pytest.mark.timeout(30)
@pytest.mark.parametrize("name", ["", "results?from=0", "results?staged=1"])
def test_publish_a_name_with_a_query_exits_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """NAME empty or with a '?' (publish adds its own query; `?staged=T` would wait for an upload
    that never comes): one line naming NAME, exit 2, before connecting."""
    status, err = publish(capsys, monkeypatch, b"one\n", f"tcp://127.0.0.1:{_closed_port()}", name)
    assert (status, err) == (
        2,
        f"rstreams publish: NAME {name!r}: a sink log's name is not empty and has no '?' "
        "(publish adds its own query)\n",
    )


@pytest.mark.timeout(30)
def test_publish_to_a_closed_server_names_the_url_and_timeout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing listening (a server stopped, a wrong port): retried for --timeout, then one line
    asking whether a server listens at the URL and naming --timeout, exit 2."""
    url = f"tcp://127.0.0.1:{_closed_port()}"
    status, err = publish(capsys, monkeypatch, b"one\n", url, "results", "--timeout", "0.3")
    assert (status, err.count("\n")) == (2, 1), err
    assert err.startswith(f"rstreams publish: replay server {url} could not be reached for 0.3 s (")
    assert err.endswith(" (the URL: is a server listening there? --timeout S: how long to retry)\n")


@pytest.mark.timeout(30)
def test_the_token_variable_leaves_the_log_mode_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """$RSTREAMS_TOKEN set does not make `serve URL NAME` refuse --token it was never given."""
    monkeypatch.setenv("RSTREAMS_TOKEN", "t")
    args = cli._parser().parse_args(["serve", "tcp://127.0.0.1:0", "log"])
    assert args.token is None


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("log", "option", "variable", "says"),
    [
        (
            [],
            ["--token", ""],
            None,
            "--token '': an empty token guards nothing (an unset shell variable?); "
            "give a token, or leave out --token for a server that asks for none",
        ),
        (
            ["log"],
            [],
            "",
            "$RSTREAMS_TOKEN is empty: an empty token guards nothing (an unset shell "
            "variable?); give a token, or unset RSTREAMS_TOKEN for a server that asks for none",
        ),
    ],
    ids=["--token", "RSTREAMS_TOKEN"],
)
def test_serve_refuses_an_empty_token(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    log: list[str],
    option: list[str],
    variable: str | None,
    says: str,
) -> None:
    """`serve URL --token "$TOKEN"` with TOKEN unset served a server any client with an empty
    token could use: exit 2 naming where the empty token came from, before anything listens."""
    if variable is None:
        monkeypatch.delenv("RSTREAMS_TOKEN", raising=False)
    else:
        monkeypatch.setenv("RSTREAMS_TOKEN", variable)
    assert cli.main(["serve", "tcp://127.0.0.1:0", *log, *option]) == 2
    assert capsys.readouterr() == ("", f"rstreams serve: {says}\n")


@pytest.mark.timeout(30)
def test_a_silent_server_is_given_up_on(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Something that accepts but never speaks RS.io: exit 2 after --timeout, not a hang; the line
    says it did not even say hello, and what waits like this (ping, top: test_cli_first_use)."""
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 0.2)  # it never closes: no 1 s wait
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        status, lines, err = subscribe(capsys, url, "counter", "--timeout", "0.5")
    assert (status, lines) == (2, [])
    assert err == (
        f"rstreams subscribe: {url} sent nothing for 0.5 s (--timeout S; 0: wait for ever), not even "
        f"its hello; {SILENT_HINT}\n"
    )


@pytest.mark.timeout(30)
def test_a_web_server_at_a_tcp_url_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    """tcp:// pointed at an HTTP server: the error says the answer looks like HTTP and names
    ws://, not only that type byte 0x48 ('H') is unknown."""

    def answer(listening: socket.socket) -> None:
        peer, _ = listening.accept()
        with peer:
            peer.settimeout(10)
            peer.recv(1024)
            peer.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            # Read on until the client hangs up: closing with its later bytes unread (a subscribe
            # sent after the hello) would reset the connection, and the reset can overtake the
            # answer on the client's side.
            while peer.recv(1024):
                pass

    with socket.socket() as web:
        web.bind(("127.0.0.1", 0))
        web.listen()
        thread = threading.Thread(target=answer, args=(web,))
        thread.start()
        url = f"tcp://127.0.0.1:{web.getsockname()[1]}"
        status, lines, err = subscribe(capsys, url, "counter", "--timeout", "10")
        patience.join(thread, 10)
    assert (status, lines) == (2, [])
    assert "they look like an HTTP response; for a WebSocket server use ws:// or wss://" in err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("keepalive", [0.1, None])
def test_a_slow_stream_outlives_the_timeout_through_pings(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    keepalive: float | None,
) -> None:
    """Readings 1.25 s apart with --timeout 1: the server's pings (every 0.1 s) keep the
    connection alive, and so do the command's own (after 0.5 s of silence) when the server sends
    none: the server's pong is heard in time. (It ended the stream after the first reading, exit
    2, naming --timeout: only the server pinged, every 15 s by default.)

    The server and the command share one loop on a virtual clock (testkit.net.run_virtual, a
    Unix socket): time moves only when nothing is left to read, so a loaded machine can hold no
    ping back past the timeout."""
    url = f"unix://{tmp_path / 'rs.sock'}"

    def on_virtual_time(command: Any) -> int:
        async def beside_the_server() -> int:
            server = await serve(url, builtin_publishers(), keepalive=keepalive)
            try:
                return int(await command)
            finally:
                await server.aclose()

        return run_virtual(beside_the_server)

    monkeypatch.setattr(_cli_observe, "run_command", on_virtual_time)
    got, lines, err = subscribe(capsys, url, "sensors/s?rate=0.8&count=3", "--timeout", "1")
    assert (got, len(lines), err) == (0, 3, "")


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["serve", "tls://127.0.0.1:0"], "serving tls://127.0.0.1:0 needs --tls-cert PEM"),
        (["serve", "tcp://127.0.0.1:0", "--tls-cert", "c.pem"], "--tls-cert is for tls:// and wss:// URLs"),
        (["serve", "tls://127.0.0.1:0", "--tls-key", "k.pem"], "--tls-key needs --tls-cert too"),
        (["serve", "tls://127.0.0.1:0", "--tls-cert", "missing.pem"], "cannot load --tls-cert missing.pem: "),
        (
            ["serve", "tcp://127.0.0.1:0", "--tls-client-ca", "ca.pem"],
            "--tls-client-ca ca.pem is for tls:// and wss:// URLs, not tcp://127.0.0.1:0",
        ),
        (
            ["serve", "ws://127.0.0.1:0/rsio", "log", "--tls-client-ca", "ca.pem"],
            "--tls-client-ca ca.pem is for tls:// and wss:// URLs, not ws://127.0.0.1:0/rsio",
        ),
        (
            ["subscribe", "tls://127.0.0.1:1", "x", "--cafile", "missing.pem"],
            "cannot load --cafile missing.pem (FileNotFoundError: ",
        ),
        (
            ["publish", "tls://127.0.0.1:1", "x", "--cafile", "missing.pem"],
            "cannot load --cafile missing.pem (FileNotFoundError: ",
        ),
        *(
            (
                [command, "tls://127.0.0.1:1", *name, *options],
                says,
            )
            for command, name in (("subscribe", ["x"]), ("ping", []), ("top", []))
            for options, says in (
                (["--certfile", "missing.pem"], "cannot load --certfile missing.pem (FileNotFoundError: "),
                (["--keyfile", "k.pem"], "--keyfile k.pem needs --certfile too"),
            )
        ),
        (["ping", "tcp://127.0.0.1:1", "--certfile", "c.pem"], "--certfile is for tls:// and wss:// URLs"),
        (
            ["publish", "tls://127.0.0.1:1", "x", "--certfile", "missing.pem"],
            "cannot load --certfile missing.pem (FileNotFoundError: ",
        ),
        (["subscribe", "tcp://127.0.0.1:1", "x", "--demand", "0"], "--demand needs an integer >= 1, got 0"),
        *(
            (
                ["top", "tcp://127.0.0.1:1", "--interval", bad],
                "--interval needs a finite number of seconds >= 0.1 (",
            )
            for bad in ("0.05", "nan", "inf")
        ),
        (["top", "tcp://127.0.0.1:1", "--timeout", "0"], "--timeout needs a number of seconds > 0, got 0"),
        (["ping", "tcp://127.0.0.1:1", "--timeout", "-1"], "--timeout needs a number of seconds > 0, got -1"),
        (["subscribe", "tcp://127.0.0.1:1", "x", "--count", "-1"], "--count needs an integer >= 0"),
        (["subscribe", "tcp://127.0.0.1:1", "x", "--timeout", "nan"], "--timeout needs a number of seconds"),
        (["subscribe", "bogus://x", "x"], "unsupported URL scheme 'bogus'"),
        (["serve", "tcp://127.0.0.1:0", "--metrics", "bogus"], "--metrics needs HOST:PORT (e.g. "),
        (["demo", "--seconds", "0"], "--seconds needs a number > 0, got 0.0"),
        (["demo", "--sensors", "0"], "--sensors needs an integer >= 1, got 0"),
        (["demo", "--window", "-2"], "--window needs an integer >= 1, got -2"),
        (["demo", "--rate", "-1"], "--rate needs readings/s >= 0"),
        (
            ["demo", "--web", "8000"],
            "--web needs HOST:PORT (e.g. 127.0.0.1:8000; a port from 0 to 65535, 0: any), got '8000'",
        ),
        (
            ["serve", "tcp://127.0.0.1:0", "log", "--metrics", "h:99999"],
            "--metrics needs HOST:PORT (e.g. 127.0.0.1:9464; a port from 0 to 65535, 0: any) or on",
        ),
        (
            ["serve", "tcp://127.0.0.1:0", "log", "--reader-timeout", "nan"],
            "--reader-timeout needs a number of seconds > 0",
        ),
        (
            ["serve", "tcp://127.0.0.1:0", "log", "--input-from", "-1"],
            "--input-from needs a position >= 0 (0: the log's",
        ),
        (
            ["serve", "tcp://127.0.0.1:0", "log", "--sink", "a", "--sink", "a"],
            "log 'a' is named twice (NAME and each --sink",
        ),
    ],
)
def test_bad_options_exit_2(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    says: str,
) -> None:
    """A TLS option that does not fit the URL or a file that cannot be read: one line, exit 2."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams {argv[0]}: ")
    assert says in err
    assert err.count("\n") == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (
            ["serve", "tcp://127.0.0.1:0", "--codec", "bogus"],
            "rstreams serve: argument --codec: invalid choice: ",
        ),
        (["subscribe", "tcp://127.0.0.1:1", "x", "--demand", "x"], "rstreams subscribe: argument --demand: "),
        (["publish", "tcp://127.0.0.1:1"], "rstreams publish: the following arguments are required: name"),
        (["top", "tcp://127.0.0.1:1", "--interval", "x"], "rstreams top: argument --interval: "),
        (["bogus"], "rstreams: argument command: invalid choice: 'bogus'"),
        (
            ["subscribe", "tcp://127.0.0.1:1", "x", "--demnd", "2"],
            "rstreams subscribe: unrecognized arguments: --demnd 2; did you mean --demand?",
        ),
        (
            ["ping", "tcp://127.0.0.1:1", "--tiemout=3"],
            "rstreams ping: unrecognized arguments: --tiemout=3; did you mean --timeout?",
        ),
        (["serve", "tcp://127.0.0.1:0", "log", "extra"], "rstreams serve: unrecognized arguments: extra"),
        (["--verison"], "rstreams: unrecognized arguments: --verison; did you mean --version?"),
        (["serve", "--hepl"], "rstreams serve: unrecognized arguments: --hepl; did you mean --help?"),
        (
            ["subscribe", "--demnd=2"],
            "rstreams subscribe: unrecognized arguments: --demnd; did you mean --demand?",
        ),
        (["subscribe", "--dem", "2"], "rstreams subscribe: the following arguments are required: url, name"),
        (["-v"], "rstreams: unrecognized arguments: -v; did you mean --version?"),
        (
            ["subscribe", "tcp://127.0.0.1:1", "x", "-d", "2"],
            "rstreams subscribe: unrecognized arguments: -d 2; did you mean --demand?",
        ),
        (["subscribe", "-t"], "rstreams subscribe: unrecognized arguments: -t (see"),  # --token, --timeout...
        (  # a negative number is no option
            ["subscribe", "--count", "-1"],
            "rstreams subscribe: the following arguments are required: url, name",
        ),
    ],
)
def test_options_argparse_refuses_are_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], says: str
) -> None:
    """What the parser itself refuses (a type, a choice, a missing argument) is one line naming
    the option and where the options are listed, exit 2, like the commands' own checks: no usage
    block above it."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    command = says.split(":")[0]
    assert err.startswith(says) and err.endswith(f" (see {command} --help)\n") and err.count("\n") == 1, err


@pytest.mark.timeout(30)
def test_a_failed_demo_is_one_line_exit_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo's Spark query failing (as under a heavy load: 'Python worker failed to connect
    back', with the query's description on the lines after it) is one line naming the error and
    Spark's log, exit 1; it was a traceback."""
    pytest.importorskip("pyspark")
    import rstreams.spark
    import rstreams.spark._demo

    def failing(**options: Any) -> dict[str, Any]:
        raise rstreams.spark.DemoQueryError(
            "the Spark query failed: Python worker failed to connect back.\n=== Streaming Query ==="
        )

    monkeypatch.setattr(rstreams.spark, "check_java", lambda: 17)
    monkeypatch.setattr(rstreams.spark._demo, "run_demo", failing)
    assert main(["demo", "--no-web"]) == 1
    out, err = capsys.readouterr()
    assert out == "Java 17 found\n"
    assert err == (
        "rstreams demo: DemoQueryError: the Spark query failed: Python worker failed to connect back. "
        "(Spark's log, if named above, has more)\n"
    )


@pytest.mark.timeout(60)
def test_serve_a_log_with_metrics_exposes_what_the_log_holds() -> None:
    pytest.importorskip("prometheus_client")
    argv = ["serve", "tcp://127.0.0.1:0", "sensors", "--metrics", "127.0.0.1:0"]
    process = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", *argv],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write("one\ntwo\n")
        process.stdin.close()  # the log keeps what it read; the server goes on serving
        announced = patience.child_line(process, "its serving line")
        assert announced.startswith("serving 'sensors'"), announced
        metrics_line = patience.child_line(process, "its metrics line")
        assert metrics_line.startswith("metrics at http://127.0.0.1:"), metrics_line
        url = metrics_line.split(" at ", 1)[1].strip()
        held = 'rstreams_replay_elements_held{log="sensors"} 2.0'

        # the lines are fed on the server's thread: ask until both are held
        def asked(seconds: float) -> bool:
            with urllib.request.urlopen(url, timeout=10) as response:
                if held in response.read().decode():
                    return True
            threading.Event().wait(min(seconds, 0.1))
            return False

        if not patience.Patience(10, [process.pid]).until(asked):
            raise AssertionError(f"no {held!r} at {url}")
    finally:
        process.terminate()  # SIGTERM: the server closes its connections and exits 0
        patience.wait_child(process, 10)
        assert process.stderr is not None and process.stdout is not None
        err = process.stderr.read()
        process.stderr.close()
        process.stdout.close()
    assert process.returncode == 0, err


@pytest.mark.timeout(60)
def test_python_dash_m_rstreams_is_the_command() -> None:
    """``python -m rstreams`` runs the same command as the ``rstreams`` entry point."""
    done = patience.run(
        [sys.executable, "-m", "rstreams", "ping", "--count", "0", "tcp://127.0.0.1:1"],
        50,
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == "rstreams ping: --count needs an integer >= 1, got 0\n"


@pytest.mark.timeout(30)
@pytest.mark.parametrize("log", [[], ["log"]], ids=["publishers", "log"])
def test_a_metrics_address_in_use_is_named(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, log: list[str]
) -> None:
    """--metrics HOST:PORT already taken: the message names --metrics and its address, not the URL,
    and what to do (another port, port 0, or --metrics on), as for the URL's own port."""
    pytest.importorskip("prometheus_client")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        assert main(["serve", "tcp://127.0.0.1:0", *log, "--metrics", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams serve: cannot serve /metrics on {address}: ")
    assert err.endswith(
        "(--metrics HOST:PORT: another server listens there; choose another port, port 0: any free "
        "one, or --metrics on to count without serving /metrics)\n"
    )
    assert err.count("\n") == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize("metrics_taken", [False, True], ids=["serving", "both"])
def test_a_serving_address_in_use_is_named_not_metrics(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, metrics_taken: bool
) -> None:
    """The URL's port taken (alone, or with --metrics' port taken too): the message names the
    URL, bound first, and not --metrics."""
    pytest.importorskip("prometheus_client")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with socket.socket() as taken, socket.socket() as metrics:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        metrics.bind(("127.0.0.1", 0))
        if metrics_taken:
            metrics.listen()
        url = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        address = f"127.0.0.1:{metrics.getsockname()[1] if metrics_taken else 0}"
        assert main(["serve", url, "--metrics", address]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams serve: cannot serve on {url}: ")
    assert "--metrics" not in err and err.count("\n") == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize("log", [[], ["log"]], ids=["publishers", "log"])
def test_a_serving_address_in_use_says_what_to_do(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    log: list[str],
) -> None:
    """A taken port, or a file already at a unix:// path: the one line ends with what to change."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        url = f"tcp://127.0.0.1:{taken.getsockname()[1]}"
        assert main(["serve", url, *log]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams serve: cannot serve on {url}: ") and err.count("\n") == 1
    assert err.endswith(
        "(another server listens there: stop it, or choose another port; port 0: any free one)\n"
    )
    path = tmp_path / "s.sock"
    path.touch()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["serve", f"unix://{path}", *log]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams serve: cannot serve on unix://{path}: ") and err.count("\n") == 1
    assert err.endswith("(remove the file if no server listens on it, or choose another path)\n")


def test_the_metrics_case_is_told_by_the_error_type_not_its_text() -> None:
    """An OSError that merely reads like the exposition's is the serving address's failure."""
    from rstreams._cli_common import cannot_serve
    from rstreams.observe import MetricsExpositionError

    lookalike = OSError(errno.EADDRINUSE, "cannot serve /metrics on 127.0.0.1:9464: in use")
    assert cannot_serve("tcp://h:1", lookalike).startswith("cannot serve on tcp://h:1: ")
    real = MetricsExpositionError(errno.EADDRNOTAVAIL, "not here", "127.0.0.1", 9464)
    assert cannot_serve("tcp://h:1", real) == "cannot serve /metrics on 127.0.0.1:9464: not here (--metrics)"


def test_the_top_level_help_shows_a_first_try_that_parses(capsys: pytest.CaptureFixture[str]) -> None:
    """`rstreams --help` ends with where each command's options are and two commands to try; both
    are command lines the parser takes."""
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Each command's options: rstreams COMMAND --help." in out
    tries = re.findall(r"(rstreams (?:serve|subscribe) \S+(?: '[^']*')?)", out)
    assert [line.split()[1] for line in tries] == ["serve", "subscribe"], out
    for line in tries:
        cli._parser().parse_args(shlex.split(line.rstrip(","))[1:])


@pytest.mark.timeout(60)
def test_a_websocket_handshake_the_server_answered_is_not_blamed_on_nothing_listening(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """ws:// to an RS.io server over TCP (no HTTP answer) says to use tcp:// (or wss:// for a TLS
    server), once; a WebSocket server's 404 for another path says so, without asking whether a
    server listens there (one does)."""
    pytest.importorskip("websockets")
    from rstreams.net._websocket import NO_HTTP_HINT

    with served({"x": just(b"x")}) as url:
        status, _, err = subscribe(capsys, url.replace("tcp://", "ws://"), "x")
        assert status == 2 and err.count("\n") == 1, err
        assert err.endswith(f"({NO_HTTP_HINT})\n"), err
    with served({"x": just(b"x")}, url="ws://127.0.0.1:0/rsio") as url:
        status, _, err = subscribe(capsys, url.replace("/rsio", "/other"), "x")
        assert status == 2 and err.count("\n") == 1, err
        assert "HTTP 404" in err and "is a server listening" not in err, err


_RUN_EACH = """\
import contextlib, io, json, traceback
from rstreams.cli import main
for argv in json.loads(sys.argv[1]):
    sys.stdin = io.TextIOWrapper(io.BytesIO(b"a\\n"))
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = main(argv)
        except BaseException:
            traceback.print_exc()
            status = None
    print(json.dumps([argv, status, out.getvalue(), err.getvalue()]), flush=True)
"""
"""A child's script (after :func:`testkit.imports.without_package`): ``main(argv)`` for each of
the argument lists in ``sys.argv[1]`` (JSON), each with ``a`` on standard input; a JSON line per
run: the argument list, the status (``None``: main raised), its standard output and error."""


def _run_without(package: str, argvs: list[list[str]]) -> dict[str, tuple[int | None, str, str]]:
    """Each command line of ``argvs`` run by ``main()`` in one child where ``package`` is not
    installed (one interpreter for all: a child each only started it and imported rstreams
    again): the command line -> its status, standard output and standard error."""
    done = patience.run(
        [sys.executable, "-c", without_package(package) + _RUN_EACH, json.dumps(argvs)],
        50,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr  # nothing more at exit
    runs = {
        " ".join(argv): (status, out, err)
        for argv, status, out, err in map(json.loads, done.stdout.splitlines())
    }
    assert list(runs) == [" ".join(argv) for argv in argvs], done.stdout
    return runs


_NEED_WEBSOCKETS = [
    ["serve", "ws://127.0.0.1:0"],
    ["serve", "ws://127.0.0.1:0", "log"],
    ["serve", "tcp://127.0.0.1:0", "log", "--web", "127.0.0.1:0"],
    ["subscribe", "ws://127.0.0.1:1", "x"],
    ["ping", "wss://127.0.0.1:1"],
    ["top", "ws://127.0.0.1:1"],
    ["publish", "ws://127.0.0.1:1", "x", "--timeout", "5"],
    ["demo"],  # its live page: refused before Spark starts
]


@pytest.fixture(scope="module")
def without_websockets() -> dict[str, tuple[int | None, str, str]]:
    """:data:`_NEED_WEBSOCKETS` run without the websockets package (:func:`_run_without`)."""
    return _run_without("websockets", _NEED_WEBSOCKETS)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("argv", _NEED_WEBSOCKETS, ids=lambda argv: " ".join(argv[:3]))
def test_websockets_missing_says_which_extra_to_install(
    argv: list[str], without_websockets: dict[str, tuple[int | None, str, str]]
) -> None:
    """Without the websockets package, each command that would need it says what to install, in
    one line, exit 2: no traceback."""
    status, _, err = without_websockets[" ".join(argv)]
    assert status == 2, err
    said = err.strip().splitlines()
    assert said[-1].startswith(f"rstreams {argv[0]}: ") and "Traceback" not in err, err
    assert "needs the websockets extra: pip install 'rstreams[websockets]'" in said[-1].replace(
        "need the", "needs the"
    ), said


def test_publish_from_a_terminal_says_what_it_waits_for(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Standard input a terminal: one line says to type the lines and end them with Ctrl-D."""

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO(b"")))
    assert main(["publish", f"tcp://127.0.0.1:{_closed_port()}", "out", "--timeout", "0.5"]) == 2
    assert capsys.readouterr().err.startswith("rstreams publish: type the lines to publish, then Ctrl-D\n")


def test_rstreams_alone_lists_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    """`rstreams` without a command prints the help (each command, one line each) and exits 2."""
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: rstreams ") and "print a remote publisher's elements" in err


@pytest.mark.timeout(30)
def test_a_live_page_address_in_use_says_what_to_do(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve URL NAME --web` on a taken port: the one line names --web and port 0; nothing is
    announced before it (the serving line came first, and the server stopped after it)."""
    pytest.importorskip("websockets")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"a\n")))
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        web = f"127.0.0.1:{taken.getsockname()[1]}"
        assert main(["serve", "tcp://127.0.0.1:0", "log", "--web", web]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"rstreams serve: cannot serve the live page on {web}: ") and err.count("\n") == 1
    assert err.endswith("(another server listens there: --web HOST:PORT, port 0: any free one)\n"), err


@pytest.mark.timeout(30)
def test_an_empty_mapping_is_announced_as_such(tmp_path: Path) -> None:
    """`--publishers` naming an empty mapping: the server runs (rstreams/* only) and says so."""
    offer = tmp_path / "empty.py"
    offer.write_text("PUBLISHERS = {}\n")
    with cli_server("--publishers", str(offer)) as announced:
        assert announced.startswith(f"serving no publishers ({offer} is an empty mapping) on tcp://")


@pytest.mark.timeout(30)
def test_the_usage_error_the_readme_quotes_is_the_command_s(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    quoted = re.search(r"`(rstreams subscribe: --demand [^`]*)`", readme)
    assert quoted, "README.md quotes no usage error of rstreams subscribe --demand"
    assert main(["subscribe", "tcp://127.0.0.1:1", "x", "--demand", "0"]) == 2
    assert capsys.readouterr().err == quoted.group(1) + "\n"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("out", "why"), [("a-file", "File exists"), ("a-file/out", "Not a directory")])
def test_a_demo_out_that_cannot_be_a_directory_exits_2_before_java(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, out: str, why: str
) -> None:
    """--out is made (or found) before Java is looked for and Spark starts; a file in its way is
    one line naming --out, exit 2 (it was a FileExistsError from inside the demo, exit 1)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("")
    assert main(["demo", "--no-web", "--out", out]) == 2
    said = f"rstreams demo: --out needs a directory it can make or write in, got {out!r}: {why}\n"
    assert capsys.readouterr().err == said
    assert main(["demo", "--seconds", "0", "--out", "made/here"]) == 2  # an earlier problem first
    assert not (tmp_path / "made").exists()


@pytest.mark.timeout(30)
@pytest.mark.parametrize("scheme", ["wss", "tls"])
def test_tls_towards_a_websocket_server_without_it_names_the_url_too(
    capsys: pytest.CaptureFixture[str], scheme: str
) -> None:
    """wss:// (or tls://) towards a ws:// server: the WebSocket server resets the connection
    inside the TLS handshake, as a TLS 1.2 server refusing a client certificate does, so the
    hint names the URL beside --certfile rather than client certificates alone."""
    with served(builtin_publishers(), url="ws://127.0.0.1:0/rsio") as url:
        wrong = url.replace("ws://", f"{scheme}://")
        wrong = wrong if scheme == "wss" else wrong.removesuffix("/rsio")  # tls:// takes no path
        status, lines, err = subscribe(capsys, wrong, "counter?to=2")
    assert (status, lines) == (2, [])
    assert err.endswith("; or the URL: tcp:// or ws:// for a server that speaks no TLS there)\n"), err


@pytest.mark.timeout(60)
def test_metrics_without_prometheus_client_names_the_option_and_the_extra() -> None:
    """--metrics HOST:PORT without prometheus_client: one line naming --metrics and the extra
    (not serve()'s "cannot serve on URL: metrics='host:port' needs ..."), exit 2, before
    listening; --metrics on needs no extra."""
    serving = [["serve", "tcp://127.0.0.1:0", *name, "--metrics", "127.0.0.1:0"] for name in ([], ["log"])]
    for status, out, err in _run_without("prometheus_client", serving).values():
        assert (status, out) == (2, ""), err
        assert err == (
            "rstreams serve: --metrics HOST:PORT serves /metrics with prometheus_client: pip install "
            "'rstreams[metrics]' (or --metrics on: counts for rstreams top, serves no /metrics)\n"
        )


@pytest.mark.parametrize("command", ["demo", "subscribe", "publish", "ping", "top"])
def test_each_client_command_s_help_says_its_exit_statuses(command: str) -> None:
    """`rstreams COMMAND --help` ends its description with what each exit status means."""
    import argparse

    commands = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    description = commands.choices[command].description or ""
    assert "Exit status: 0 " in description and " 2 " in description, description


@pytest.mark.timeout(30)
def test_serve_a_log_from_a_terminal_says_what_it_reads(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`rstreams serve URL NAME` with standard input a terminal: after the announcement, one line
    says that typed lines are the log's elements and what Ctrl-D and Ctrl-C do (a pipe or a
    file gets no such line: test_the_token_variable_leaves_the_log_mode_alone and others)."""
    import threading

    class Terminal(io.TextIOWrapper):
        def isatty(self) -> bool:
            return True

    @contextlib.contextmanager
    def stopped_at_once() -> Iterator[threading.Event]:
        stop = threading.Event()
        stop.set()
        yield stop

    monkeypatch.setattr(sys, "stdin", Terminal(io.BytesIO(b"")))
    monkeypatch.setattr(_cli_logs, "_stopped_by_sigterm", stopped_at_once)
    assert main(["serve", "tcp://127.0.0.1:0", "nums"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("serving 'nums' (lines of standard input) on tcp://127.0.0.1:"), out
    assert err == (
        "rstreams serve: each line typed here is an element of 'nums'; Ctrl-D ends the log "
        "(the server goes on), Ctrl-C stops the server\n"
    )


@pytest.mark.timeout(30)
def test_top_asks_for_a_long_interval_percent_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """--interval 1e9 is written 1e+09; in the name's query a bare "+" reads as a space, so top
    sends it percent-encoded (PROTOCOL.md §5.5) and the server takes it."""
    asked: list[str] = []

    class Conn:
        def publisher(self, name: str, codec: Any) -> Any:
            asked.append(name)
            raise _Asked

        async def aclose(self, **closing: float) -> None:
            return None

    class _Asked(Exception):
        pass

    async def connected(args: Any, context: Any) -> Conn:
        return Conn()

    monkeypatch.setattr(_cli_observe, "_connect", connected)
    with pytest.raises(_Asked):
        main(["top", "tcp://127.0.0.1:1", "--interval", "1e9"])
    assert asked == ["rstreams/stats?interval=1e%2B09"]
    from rstreams.net._routes import split_name  # how the server reads the name back

    assert split_name(asked[0]) == ("rstreams/stats", {"interval": "1e+09"})


def test_the_demos_last_line_says_when_no_micro_batch_finished_in_its_time() -> None:
    """On a loaded machine a micro-batch may take longer than --seconds: the demo says so rather
    than '0 rows in 0 micro-batches: 0 rows/s'."""
    figures: dict[str, Any] = {
        "rows": 0,
        "batches": 0,
        "rows_per_s": 0.0,
        "steady_rows_per_s": 0.0,
        "median_batch_s": None,
        "waited_s": 9.5,
    }
    said = cli._demo_summary(figures, 10)
    assert "no micro-batch finished in the 10 s after the first (--seconds)" in said
    assert "0 rows" not in said and "waited 9.5 s" in said
    figures.update(rows=3000, batches=2, rows_per_s=300.0, steady_rows_per_s=1500.0, median_batch_s=1.0)
    assert "3,000 rows in 2 micro-batches: 300 rows/s into Spark" in cli._demo_summary(figures, 10)


@contextlib.contextmanager
def answering_with_a_tls_alert() -> Iterator[str]:
    """A TCP server that answers whatever comes with a TLS alert record (as a TLS server that
    sends one to a request that is not TLS does) and closes; yields its ``ws://`` URL."""
    listener = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                peer, _ = listener.accept()
                with peer:
                    peer.recv(4096)
                    peer.sendall(b"\x15\x03\x03\x00\x02\x02\x46")  # fatal protocol_version alert

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    try:
        yield f"ws://127.0.0.1:{listener.getsockname()[1]}/rsio"
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accept (a close alone does not)
        listener.close()
        patience.join(thread, 10)
        assert not thread.is_alive()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["subscribe", "ping"])
@pytest.mark.parametrize("server", ["closes", "alert"])
def test_ws_towards_a_tls_server_names_wss_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, server: str
) -> None:
    """ws:// towards a server that speaks TLS there, whether it closes without a word (ours) or
    answers with a TLS record: the one line names the wss:// URL and adds no hint of its own
    that would contradict it (not "does not speak WebSocket; tcp://", not "is a server listening
    there?")."""
    pytest.importorskip("websockets")
    from rstreams.net._websocket import NO_HTTP_HINT
    from testkit.tls import TestCA, server_context

    with contextlib.ExitStack() as stack:
        if server == "closes":
            context = server_context(TestCA.make(tmp_path, "ws CA").issue("server", san=("127.0.0.1",)))
            tls = stack.enter_context(served(builtin_publishers(), url="tls://127.0.0.1:0", ssl=context))
            wrong = tls.replace("tls://", "ws://") + "/rsio"
        else:
            wrong = stack.enter_context(answering_with_a_tls_alert())
        argv = [wrong, "counter?to=2"] if command == "subscribe" else [wrong]
        assert main([command, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams {command}: ") and err.count("\n") == 1, err
    wss = wrong.replace("ws://", "wss://")
    said = f"({NO_HTTP_HINT})" if server == "closes" else f"the server speaks TLS at that address; use {wss}"
    assert err.endswith(f"{said}\n"), err
