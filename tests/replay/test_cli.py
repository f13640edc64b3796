"""``rstreams serve | subscribe | publish``: replay logs from the command line, without PySpark."""

from __future__ import annotations

import contextlib
import io
import signal
import socket
import ssl
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from rstreams.cli import main
from rstreams.replay import Access, ReplayLog, fetch_range, request_json
from testkit import patience
from testkit.tls import TestCA

pytestmark = pytest.mark.timeout(60)

NO_SPARK = "import sys; sys.modules['pyspark'] = sys.modules['pyarrow'] = None\n"
"""Prefix for a subprocess: importing pyspark or pyarrow then fails."""
SERVE = ["serve", "tcp://127.0.0.1:0", "lines", "--capacity", "5"]


def test_subscribe_prints_elements(serve: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """rstreams subscribe URL NAME --limit N prints N elements, one per line."""
    log = ReplayLog("words", capacity=10)
    log.append([b"alpha", b"beta", b"gamma"])
    server = serve({"words": log})
    assert main(["subscribe", server.url, "words?from=1", "--limit", "2"]) == 0
    assert capsys.readouterr().out == "beta\ngamma\n"


def test_serve_reads_standard_input_only_as_the_log_has_room() -> None:
    """rstreams serve (PySpark blocked): lines become positions; a 5-element log reads 5 until a commit."""
    server = subprocess.Popen(
        [sys.executable, "-c", NO_SPARK + "from rstreams.cli import main; sys.exit(main())", *SERVE],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=False,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"".join(b"line %d\n" % i for i in range(20)))
        server.stdin.flush()
        url = patience.child_line(server, "its serving line").decode().split(" on ")[-1].strip()
        assert fetch_range(url, "lines", 0, 2) == [b"line 0", b"line 1"]
        assert request_json(url, "lines?latest")["end"] == 5  # room for 5: no more was read
        request_json(url, "lines?commit=5")
        assert fetch_range(url, "lines", 5, 10, timeout=10) == [b"line %d" % i for i in range(5, 10)]
    finally:
        patience.stop_child(server, 20)


def test_publish_stages_then_publishes_standard_input(serve: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """rstreams publish URL NAME: every line of standard input, once, in order."""
    out = ReplayLog("out", capacity=10, evict=True)
    server = serve({}, sinks={"out": out})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\ntwo\nthree\n")))
    assert main(["publish", server.url, "out"]) == 0
    assert fetch_range(server.url, "out", 0, 3) == [b"one", b"two", b"three"]


@pytest.mark.parametrize(
    ("target", "status", "says"),
    [
        ("words", 1, "refused 'words': LogLookupError: log 'words' is not a sink log"),
        ("nothing", 1, "refused 'nothing': no publisher named 'nothing'"),
    ],
)
def test_publish_to_what_is_not_a_sink_log_exits_1(
    serve: Any,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
    status: int,
    says: str,
) -> None:
    """The server's refusal is one line naming the log, not a traceback."""
    server = serve({"words": ReplayLog("words", capacity=10)})
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    assert main(["publish", server.url, target]) == status
    err = capsys.readouterr().err
    assert err.startswith("rstreams publish: ") and says in err
    assert err.count("\n") == 1


def test_publish_shows_a_long_name_cut(
    serve: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A name of hundreds or thousands of characters: publish's line echoed it in full, twice
    when the server's refusal quotes it; it shows the first 60 characters and the length, as the
    other commands do; so does the line about a --writer's batch published before."""
    server = serve({}, sinks={"out": ReplayLog("out", capacity=10, evict=True)})
    cut = {n: f"'{c * 60}'… ({n} characters)" for c, n in (("a", 500), ("b", 5000))}
    for name, status, says in [
        ("a" * 500, 1, f"refused {cut[500]}: no publisher named {cut[500]} (NAME: a sink log"),
        ("b" * 5000, 1, f"refused {cut[5000]}: refused: publisher name longer than max_name_length"),
        ("a" * 499 + "?", 2, f"NAME '{'a' * 60}'… (500 characters): a sink log's name is not empty"),
    ]:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
        assert main(["publish", server.url, name]) == status
        err = capsys.readouterr().err
        assert err.startswith("rstreams publish: ") and says in err and len(err) < 400, err
    for said in ("published 1 of 1 lines", f"batch 7 of writer '{'w' * 60}'… (500 characters) was published"):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
        assert main(["publish", server.url, "out", "--writer", "w" * 500, "--batch", "7"]) == 0
        assert capsys.readouterr().err.startswith(said)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["bogus://x", "out"], "unsupported URL scheme 'bogus'"),
        (["tcp://127.0.0.1:1", "out", "--timeout", "-1"], "--timeout needs a number of seconds > 0"),
        (["tcp://127.0.0.1:{closed}", "out", "--timeout", "0.3"], "could not be reached for 0.3 s"),
        (["tcp://127.0.0.1:1", "out", "--batch", "3"], "--batch needs --writer (who publishes the batch"),
        (["tcp://127.0.0.1:1", "out", "--writer", ""], "--writer needs a name that is not empty"),
        (["tcp://127.0.0.1:1", "out", "--writer", "w", "--batch", "-1"], "--batch needs an integer from 0"),
    ],
)
def test_publish_bad_input_exits_2_in_one_line(
    argv: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad URL or timeout, a server that is not there: one line naming it, exit 2."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    assert main(["publish", *(a.format(closed=closed) for a in argv)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rstreams publish: ") and says in err
    assert err.count("\n") == 1


def test_serve_a_log_over_tls_with_a_token_and_publish_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """serve URL NAME --tls-cert --token: readers need the token and the CA; publish --token --cafile
    uploads; a wrong token is exit 2 naming the options, never echoing the token."""
    ca = TestCA.make(tmp_path, "cli CA")
    cert = ca.issue("logs", san=("127.0.0.1",))
    token, wrong = "tok-RECOGNISABLE-4411", "bad-RECOGNISABLE-9c2e"
    serve_cmd = ["serve", "tls://127.0.0.1:0", "lines", "--sink", "out"]
    serve_cmd += ["--tls-cert", str(cert.cert), "--tls-key", str(cert.key), "--token", token]
    server = subprocess.Popen(
        [sys.executable, "-c", NO_SPARK + "from rstreams.cli import main; sys.exit(main())", *serve_cmd],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"a\nb\n")
        server.stdin.flush()
        announced = patience.child_line(server, "its serving line").decode()
        assert announced.startswith("serving 'lines' (lines of standard input), sink log 'out' on tls://")
        url = announced.split(" on ")[-1].strip()
        access = Access(auth=token, cafile=str(ca.cert))
        assert fetch_range(url, "lines", 0, 2, access=access) == [b"a", b"b"]
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\ntwo\n")))
        assert main(["publish", url, "out", "--token", token, "--cafile", str(ca.cert)]) == 0
        assert fetch_range(url, "out", 0, 2, access=access) == [b"one", b"two"]
        capsys.readouterr()
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\n")))
        assert main(["publish", url, "out", "--token", wrong, "--cafile", str(ca.cert)]) == 2
        err = capsys.readouterr().err
        assert "refused the credentials" in err and "--token" in err and wrong not in err
    finally:
        patience.stop_child(server, 20)


@pytest.mark.parametrize(("scheme", "version"), [("tls", "TLSv1_3"), ("wss", "TLSv1_3"), ("tls", "TLSv1_2")])
def test_publish_to_a_server_requiring_a_client_certificate_names_certfile_at_once(
    serve: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    scheme: str,
    version: str,
) -> None:
    """publish without --certfile, towards a server that requires a client certificate (refusing
    after the TLS 1.3 handshake, or inside the TLS 1.2 one): one line naming --certfile and
    --keyfile, exit 2, at once, not after its --timeout (600 s: the test's 60 s would end first)."""
    import ssl

    from testkit.tls import server_context

    ca = TestCA.make(tmp_path, "mtls CA")
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    context.maximum_version = ssl.TLSVersion[version]
    sinks = {"out": ReplayLog("out", capacity=10, evict=True)}
    url = serve({}, sinks=sinks, url=f"{scheme}://127.0.0.1:0", ssl=context).url
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    assert main(["publish", url, "out", "--cafile", str(ca.cert), "--timeout", "600"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams publish: {url} ended the TLS session twice in a row: "), err
    hint = " (--certfile PEM, --keyfile PEM: a client certificate, when the server requires one"
    plain = "; or the URL: tcp:// or ws:// for a server that speaks no TLS there"  # a reset inside it
    assert err.endswith((f"{hint})\n", f"{hint}{plain})\n")), err
    assert err.count("\n") == 1


def _alerting_tls_server(context: ssl.SSLContext) -> str:
    """The URL of a TLS listener, in a thread, that takes one connection, makes the TLS handshake
    with the blocking ``ssl`` module (whose refusal of the client's certificate is an alert), and
    ends the session."""
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:
        accepted, _ = listener.accept()
        listener.close()
        with context.wrap_socket(accepted, server_side=True, do_handshake_on_connect=False) as tls:
            with contextlib.suppress(ssl.SSLError):
                tls.do_handshake()
            with contextlib.suppress(OSError):
                tls.shutdown(socket.SHUT_WR)  # the alert reaches the client before an end of input
                while socket.socket.recv(tls, 4096):  # until the client closes: no reset
                    pass

    threading.Thread(target=run, name="one TLS session", daemon=True).start()
    return f"tls://127.0.0.1:{listener.getsockname()[1]}"


@pytest.mark.parametrize(
    ("command", "says"), [(["subscribe"], "cannot connect to"), (["ping", "--count", "1"], "cannot reach")]
)
@pytest.mark.parametrize(
    ("presented", "alert"),
    [("none", "SSLV3_ALERT_HANDSHAKE_FAILURE"), ("untrusted", "TLSV1_ALERT_UNKNOWN_CA")],
)
def test_subscribe_refused_by_a_tls_1_2_alert_names_certfile(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    presented: str,
    alert: str,
    command: list[str],
    says: str,
) -> None:
    """A TLS 1.2 server that refuses the client's certificate with an alert (OpenSSL's
    handshake_failure for none, unknown_ca for one its CA did not sign; Java's and Node's servers
    alert too): subscribe's one line names --certfile, as for a refusal without an alert, and so
    does ping's (which tells the alert by the error's cause, as top does)."""
    from testkit.tls import server_context

    ca = TestCA.make(tmp_path, "mtls CA")
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    options = ["--cafile", str(ca.cert)]
    hint = " (--certfile PEM, --keyfile PEM: a client certificate, when the server requires one)\n"
    if presented == "untrusted":
        stranger = TestCA.make(tmp_path, "other CA").issue("mallory", client=True)
        options += ["--certfile", str(stranger.cert), "--keyfile", str(stranger.key)]
        hint = (
            f" (--certfile {stranger.cert}: a client certificate the server trusts, when it requires one)\n"
        )
    url = _alerting_tls_server(context)
    name = ["lines"] if command == ["subscribe"] else []
    assert main([command[0], url, *name, *command[1:], *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams {command[0]}: {says} {url}: ") and alert in err, err
    assert err.endswith(hint) and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("option", "says"),
    [
        (["--pending-timeout", "0"], "--pending-timeout needs a number of seconds > 0, got 0\n"),
        (["--reader-timeout", "-1"], "--reader-timeout needs a number of seconds > 0, got -1\n"),
        (["--pending-timeout", "inf"], "--pending-timeout needs a finite number of seconds > 0, got inf\n"),
        (
            ["--reader-timeout", "inf"],
            "--reader-timeout needs a finite number of seconds > 0, got inf (without --reader-timeout a "
            "reader is never dropped)\n",
        ),
        (["--staging-ttl", "-1"], "--staging-ttl needs a number of seconds >= 0 (0: never), got -1\n"),
        (["--staging-ttl", "inf"], "--staging-ttl needs a number of seconds >= 0 (0: never), got inf\n"),
        (["--input-from", "5"], "feed(position=5) is past the log's end 0"),
        (["--capacity", "0"], "--capacity needs an integer >= 1, got 0"),
        (["--path", __file__], "cannot keep the log in --path "),
        (["--path", __file__], ": a directory this process can make, or one it can write in)\n"),
        (["--sink", "lines"], "log 'lines' is named twice"),
        (["--sink", "a?b"], "--sink 'a?b': a log's name is not empty and has no '?'"),
        (["--web-publisher", "lines"], "--web-publisher needs --web"),
        (["--web", "127.0.0.1:0", "--web-publisher", "nope"], "--web-publisher names a log served"),
        (["--web", "nowhere"], "the page's address is HOST:PORT"),
        (["--web", "127.0.0.1:70000"], "a port from 0 to 65535, 0: any), got '127.0.0.1:70000'\n"),
    ],
)
def test_bad_log_options_exit_2_naming_them(
    option: list[str], says: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """serve URL NAME with a bad timeout or a start past the log's end: one line, exit 2."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["serve", "tcp://127.0.0.1:0", "lines", *option]) == 2
    err = capsys.readouterr().err
    assert says in err and option[0] in err
    assert err.startswith("rstreams serve: ") and err.count("\n") == 1  # one line, no traceback


def _reads_a_pipe(pid: int) -> bool:
    """Whether a thread of process ``pid`` waits in a pipe read (Linux' /proc/PID/task/*/wchan)."""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):
            if "pipe_read" in (task / "wchan").read_text():
                return True
    return False


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs /proc to see the reading thread")
@pytest.mark.timeout(120)  # (above its waits on the child: 10 + 20 + 20 + 10 s of own time)
@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "Ctrl-C"])
def test_serve_stops_cleanly_while_reading_a_live_pipe(stop: signal.Signals) -> None:
    """``producer | rstreams serve URL NAME``, stopped while the producer still writes: exit 0,
    nothing on standard error. (The log's thread read sys.stdin itself, holding its buffer's lock
    while it read, and the interpreter's exit could find the lock taken and abort: 'Fatal Python
    error: _enter_buffered_busy', SIGABRT; not every time, so each run tries.)"""
    code = "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
    code += "from rstreams.cli import main; sys.exit(main())"  # (a background job ignores SIGINT)
    server = subprocess.Popen(
        [sys.executable, "-c", code, "serve", "tcp://127.0.0.1:0", "lines"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stop_writing = threading.Event()

    def produce() -> None:  # a producer that is still there when the server stops
        assert server.stdin is not None
        with contextlib.suppress(OSError, ValueError):  # the server has gone
            while not stop_writing.wait(0.01):
                server.stdin.write(b"reading\n")
                server.stdin.flush()

    producer = threading.Thread(target=produce)
    try:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(b"reading\n" * 50)
        server.stdin.flush()
        assert patience.child_line(server, "its serving line").startswith(b"serving 'lines'")
        producer.start()

        def reading(seconds: float) -> bool:  # until the log's thread is in a read
            if _reads_a_pipe(server.pid):
                return True
            threading.Event().wait(min(seconds, 0.01))
            return False

        if not patience.Patience(20, [server.pid]).until(reading):
            pytest.skip("no thread seen in a pipe read (/proc/PID/task/*/wchan)")
        server.send_signal(stop)
        _, err = patience.communicate(server, 20)
    finally:
        stop_writing.set()
        if server.poll() is None:
            server.kill()
            server.communicate()
        patience.join(producer, 10)
    assert (server.returncode, err.decode()) == (0, "")


@pytest.mark.parametrize("log", [[], ["lines"]], ids=["publishers", "log"])
def test_sigterm_right_after_the_announcement_stops_cleanly(log: list[str]) -> None:
    """Whoever reads 'serving ...' may stop the server at once: SIGTERM is handled from before
    that line (it was set up after it, and a SIGTERM in between killed the process: -15)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", "tcp://127.0.0.1:0", *log],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert server.stdout is not None
    assert patience.child_line(server, "its serving line").startswith(b"serving ")
    server.terminate()
    _, err = patience.communicate(server, 20)
    assert (server.returncode, err.decode()) == (0, "")


@pytest.mark.parametrize("scheme", ["tls", "wss"])
def test_publish_to_a_server_requiring_client_certificates(
    serve: Any,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    scheme: str,
) -> None:
    """publish --certfile/--keyfile reaches a sink log behind mutual TLS; without them, the
    one-line message names the options at once, not after --timeout (600 s here: the test's
    60 s would end first)."""
    from testkit.tls import server_context

    ca = TestCA.make(tmp_path, "mtls CA")
    alice = ca.issue("alice", client=True)
    context = server_context(ca.issue("logs", san=("127.0.0.1",)), client_ca=ca)
    sinks = {"out": ReplayLog("out", capacity=10, evict=True)}
    server = serve({}, sinks=sinks, url=f"{scheme}://127.0.0.1:0", ssl=context)
    trust = ["--cafile", str(ca.cert)]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\ntwo\n")))
    client = [*trust, "--certfile", str(alice.cert), "--keyfile", str(alice.key)]
    assert main(["publish", server.url, "out", *client]) == 0
    access = Access(cafile=str(ca.cert), certfile=str(alice.cert), keyfile=str(alice.key))
    assert fetch_range(server.url, "out", 0, 2, access=access) == [b"one", b"two"]
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\n")))
    assert main(["publish", server.url, "out", *trust, "--timeout", "600"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams publish: {server.url} ended the TLS session twice in a row: ")
    assert err.count("\n") == 1
    # The server's refusal comes as its alert or, when it closes first, as a reset inside the
    # handshake, which a server speaking no TLS there may give too: then the hint adds the URL.
    hint = " (--certfile PEM, --keyfile PEM: a client certificate, when the server requires one"
    assert err.endswith(
        (f"{hint})\n", f"{hint}; or the URL: tcp:// or ws:// for a server that speaks no TLS there)\n")
    )


def test_publish_over_wss_to_serve_with_a_client_ca_and_no_certificate_exits_2_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rstreams serve wss://... --tls-client-ca CA` and `rstreams publish` without --certfile: exit 2
    naming --certfile at once, not after --timeout (600 s here: the test's 60 s would end first)."""
    ca = TestCA.make(tmp_path, "serve mtls CA")
    cert = ca.issue("logs", san=("127.0.0.1",))
    serve_cmd = ["serve", "wss://127.0.0.1:0", "lines", "--sink", "results"]
    serve_cmd += ["--tls-cert", str(cert.cert), "--tls-key", str(cert.key), "--tls-client-ca", str(ca.cert)]
    server = subprocess.Popen(
        [sys.executable, "-c", NO_SPARK + "from rstreams.cli import main; sys.exit(main())", *serve_cmd],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        url = patience.child_line(server, "its serving line").decode().split(" on ")[-1].strip()
        assert url.startswith("wss://127.0.0.1:"), url
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"x\n")))
        assert main(["publish", url, "results", "--cafile", str(ca.cert), "--timeout", "600"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"rstreams publish: {url} ended the TLS session twice in a row: ")
        assert err.endswith(
            " (--certfile PEM, --keyfile PEM: a client certificate, when the server requires one)\n"
        )
        assert err.count("\n") == 1
    finally:
        server.terminate()
        patience.wait_child(server, 20)
        if server.stdout is not None:
            server.stdout.close()
