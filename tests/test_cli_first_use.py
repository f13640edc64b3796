"""The `rstreams` command under the mistakes a first user makes: one line naming what to change,
exit 2, no traceback, no hang."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import io
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from rstreams import _cli_observe
from rstreams.cli import main
from rstreams.net._closing import NOT_RSIO_BYTES_HINT, SILENT_HINT
from rstreams.wire import ServerHello, encode
from testkit import patience
from testkit.net import run_virtual
from testkit.tls import TestCA


@pytest.mark.timeout(30)
def test_an_empty_log_name_is_refused_not_served_as_the_demo_publishers(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`rstreams serve URL "$LOG"` with LOG unset: NAME is '', a log's name it refuses; it served
    the built-in publishers instead, as if no NAME had been given."""
    assert main(["serve", "tcp://127.0.0.1:0", ""]) == 2
    assert capsys.readouterr().err == (
        "rstreams serve: NAME '': a log's name is not empty and has no '?' (readers add ?from=A&to=B to it)\n"
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "argv",
    [
        ["subscribe", "tcp://me:s3cret@127.0.0.1:1", "counter"],
        ["ping", "tls://me:s3cret@127.0.0.1:1"],
        ["top", "ws://me:s3cret@127.0.0.1:1/rsio"],
        ["serve", "tcp://me:s3cret@127.0.0.1:0"],
        ["publish", "tcp://me:s3cret@127.0.0.1:1", "results"],
    ],
)
def test_a_url_with_a_user_is_refused_without_repeating_its_password(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A user part is no part of an RS.io URL; its refusal shows it as '***', and no message of
    the command quotes the URL as written (it may hold a password)."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "s3cret" not in err and "me:" not in err, err
    assert err.startswith(f"rstreams {argv[0]}: '") and "***@127.0.0.1:" in err, err
    assert "a user before the host" in err, err


@pytest.mark.timeout(30)
def test_a_misspelt_command_or_a_url_first_is_told_what_to_write(capsys: pytest.CaptureFixture[str]) -> None:
    """A command that is none of them gets the nearest one (or the one it begins), `help` and
    `version` what to write instead; a URL where the command goes gets the order (argparse
    listed only the commands)."""
    for argv, hint in (
        (["serv", "tcp://127.0.0.1:0"], "; did you mean serve?"),
        (["Subscribe", "tcp://h:1", "x"], "; did you mean subscribe?"),
        (
            ["tcp://h:1", "counter"],
            "; the command comes first: rstreams subscribe tcp://h:1 NAME (or serve, ping, top)",
        ),
        (["sub", "tcp://h:1", "x"], "; did you mean subscribe?"),  # the one command that starts so
        (["pub", "tcp://h:1", "x"], "; did you mean publish?"),
        (["help", "subscribe"], "; a command's options: rstreams COMMAND --help"),
        (["version"], "; did you mean --version?"),
        (["bogus"], ""),
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.startswith(f"rstreams: argument command: invalid choice: '{argv[0]}' (choose from ")
        assert err.endswith(f"'top'){hint} (see rstreams --help)\n"), err


@pytest.mark.timeout(30)
@pytest.mark.parametrize("master", ["foo", "local[x]", "spark://"])
def test_a_demo_master_spark_does_not_take_is_named_before_java_is_looked_for(
    capsys: pytest.CaptureFixture[str], master: str
) -> None:
    """Spark ended its JVM on such a master ('Java gateway process exited before sending its port
    number', exit 1, after the server had started)."""
    assert main(["demo", "--master", master, "--no-web"]) == 2
    assert capsys.readouterr() == (
        "",
        "rstreams demo: --master needs a Spark master URL: local[N], local[*], spark://HOST:PORT, "
        f"yarn or k8s://HOST:PORT; got {master!r}\n",
    )


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> tuple[TestCA, Path, Path]:
    """A CA, and a server certificate and its key."""
    ca = TestCA.make(tmp_path_factory.mktemp("pki"), "test CA")
    server = ca.issue("server", san=("127.0.0.1",))
    return ca, server.cert, server.key


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("files", "says"),
    [
        (("cert",), "--tls-cert {cert} holds no private key: give the key's file with --tls-key"),
        (
            ("key",),
            "--tls-cert {key} holds a private key, not a certificate: give the key with --tls-key and its "
            "certificate ('-----BEGIN CERTIFICATE-----') with --tls-cert",
        ),
        (("key", "key"), "--tls-cert {key} holds no PEM certificate ('-----BEGIN CERTIFICATE-----')"),
        (("cert", "cert"), "--tls-key {cert} holds no PEM private key ('-----BEGIN ... PRIVATE KEY-----')"),
    ],
    ids=["no key", "the key for the certificate", "no certificate", "no key in the key file"],
)
def test_a_server_certificate_file_without_what_it_needs_says_what_is_missing(
    capsys: pytest.CaptureFixture[str], pki: tuple[TestCA, Path, Path], files: tuple[str, ...], says: str
) -> None:
    """ssl says '[SSL] PEM lib' for each of these; the line now names the option, the file and
    what it lacks, exit 2 before listening."""
    _, cert, key = pki
    paths = {"cert": str(cert), "key": str(key)}
    options = ["--tls-cert", paths[files[0]], *(["--tls-key", paths[files[1]]] if len(files) > 1 else [])]
    assert main(["serve", "tls://127.0.0.1:0", *options]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rstreams serve: " + says.format(**paths) + " (SSLError: "), err
    assert err.count("\n") == 1


CA_TAKES = "takes the PEM certificates of the CAs to trust ('-----BEGIN CERTIFICATE-----')"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "argv",
    [
        ["subscribe", "tls://127.0.0.1:1", "x", "--cafile", "FILE"],
        ["ping", "tls://127.0.0.1:1", "--cafile", "FILE"],
        ["top", "wss://127.0.0.1:1/", "--cafile", "FILE"],
        ["publish", "tls://127.0.0.1:1", "x", "--cafile", "FILE"],
        ["conformance", "tls://127.0.0.1:1", "--cafile", "FILE"],
        ["serve", "tls://127.0.0.1:0", "--tls-cert", "CERT", "--tls-key", "KEY", "--tls-client-ca", "FILE"],
        [
            "serve",
            "tls://127.0.0.1:0",
            "log",
            "--tls-cert",
            "CERT",
            "--tls-key",
            "KEY",
            "--tls-client-ca",
            "FILE",
        ],
    ],
    ids=["subscribe", "ping", "top", "publish", "conformance", "serve", "serve a log"],
)
def test_a_private_key_given_as_ca_file_is_named_as_one(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pki: tuple[TestCA, Path, Path],
    argv: list[str],
) -> None:
    """Every option that loads CA certificates, given the server's private key: ssl said only 'no
    certificate or crl found'; the line names the option, the file, what it holds and what the
    option takes, exit 2 (before connecting, or listening)."""
    _, cert, key = pki
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    files = {"FILE": str(key), "CERT": str(cert), "KEY": str(key)}
    assert main([files.get(word, word) for word in argv]) == 2
    option = argv[-2]
    err = capsys.readouterr().err
    said = f"{option} {key} holds a private key, not a CA certificate; {option} {CA_TAKES} (SSLError: "
    before = "cannot run the suite against tls://127.0.0.1:1: " if argv[0] == "conformance" else ""
    assert err.startswith(f"rstreams {argv[0]}: {before}{said}"), err
    assert err.count("\n") == 1


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("holds", "text"),
    [
        (
            "a certificate request",
            "-----BEGIN CERTIFICATE REQUEST-----\nMIIB\n-----END CERTIFICATE REQUEST-----\n",
        ),
        ("no PEM certificate", "not a certificate\n"),
        ("no PEM certificate", ""),
    ],
    ids=["a certificate request", "text", "empty"],
)
def test_a_ca_file_without_a_certificate_says_what_it_holds(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, holds: str, text: str
) -> None:
    bad = tmp_path / "ca.pem"
    bad.write_text(text)
    assert main(["subscribe", "tls://127.0.0.1:1", "x", "--cafile", str(bad)]) == 2
    not_ca = ", not a CA certificate" if holds.startswith("a ") else ""
    assert capsys.readouterr().err.startswith(
        f"rstreams subscribe: --cafile {bad} holds {holds}{not_ca}; --cafile {CA_TAKES} (SSLError: "
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", ["subscribe", "conformance"])
def test_a_private_key_given_as_client_certificate_says_which_option_takes_it(
    capsys: pytest.CaptureFixture[str], pki: tuple[TestCA, Path, Path], command: str
) -> None:
    """--certfile KEY (no --keyfile): the key goes with --keyfile, the certificate with --certfile."""
    ca, _, key = pki
    name = ["x"] if command == "subscribe" else []
    argv = [command, "tls://127.0.0.1:1", *name, "--cafile", str(ca.cert), "--certfile", str(key)]
    assert main(argv) == 2
    before = "cannot run the suite against tls://127.0.0.1:1: " if command == "conformance" else ""
    assert capsys.readouterr().err.startswith(
        f"rstreams {command}: {before}--certfile {key} holds a private key, not a certificate: give the key "
        "with --keyfile and its certificate ('-----BEGIN CERTIFICATE-----') with --certfile (SSLError: "
    )


@pytest.mark.timeout(30)
@pytest.mark.parametrize("command", ["subscribe", "ping", "publish"])
def test_a_client_certificate_without_its_key_says_to_give_keyfile(
    capsys: pytest.CaptureFixture[str], pki: tuple[TestCA, Path, Path], command: str
) -> None:
    """--certfile with a certificate alone (its key in another file): the line says --keyfile."""
    ca, cert, _ = pki
    name = [] if command == "ping" else ["x"]
    argv = [command, "tls://127.0.0.1:1", *name, "--cafile", str(ca.cert), "--certfile", str(cert)]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(
        f"rstreams {command}: --certfile {cert} holds no private key: give the key's file with --keyfile "
        "(SSLError: "
    )


@pytest.mark.timeout(60)
def test_a_server_frozen_mid_stream_is_given_up_on_after_timeout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command pings a silent server within --timeout: a live one answers (a slow stream goes
    on, tests/test_cli.py), a frozen one (SIGSTOP) does not, and the command ends, exit 2, naming
    --timeout, instead of waiting for ever. The command runs in this process: the server is
    stopped as the first element is printed."""
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 0.2)  # the frozen server never closes
    printed: list[str] = []
    with patience.serving("tcp://127.0.0.1:0") as (server, url):

        class Freezing(io.StringIO):
            def write(self, text: str) -> int:
                if not printed:
                    server.send_signal(signal.SIGSTOP)
                printed.append(text)
                return len(text)

        monkeypatch.setattr(sys, "stdout", Freezing())
        status = main(["subscribe", url, "counter?rate=1000", "--demand", "1", "--timeout", "1"])
    err = capsys.readouterr().err
    assert (status, printed) == (2, ["0\n"]), err
    assert err == f"rstreams subscribe: {url} sent nothing for 1 s (--timeout S; 0: wait for ever)\n"


def _first_bytes_then_read(listening: socket.socket, first: bytes) -> None:
    """Accept one connection, send ``first``, read until the client hangs up (closing with its
    bytes unread would reset the connection, and the reset can overtake ``first``)."""
    peer, _ = listening.accept()
    with peer:
        peer.settimeout(20)
        peer.sendall(first)
        with contextlib.suppress(OSError):
            while peer.recv(1024):
                pass


def _run_against(first: bytes, argv: Callable[[str], list[str]]) -> tuple[int, str]:
    """``main(argv(url))`` against an endpoint at ``url`` that sends ``first`` and reads until
    the client hangs up (:func:`_first_bytes_then_read`); the command's status and the URL."""
    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        thread = threading.Thread(target=_first_bytes_then_read, args=(other, first))
        thread.start()
        url = f"tcp://127.0.0.1:{other.getsockname()[1]}"
        status = main(argv(url))
        patience.join(thread, 20)
    return status, url


@pytest.mark.timeout(60)
@pytest.mark.parametrize("command", ["subscribe", "top"])
def test_an_endpoint_whose_first_bytes_are_no_rsio_says_what_it_may_be(
    capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A server of another protocol that speaks first (SSH's banner): the line says the endpoint
    may not speak RS.io and where the hello is specified; it said only 'unknown message type 0x53'."""
    status, url = _run_against(
        b"SSH-2.0-OpenSSH_9.6\r\n",
        lambda url: [command, url, *(["counter"] if command == "subscribe" else [])],
    )
    err = capsys.readouterr().err
    assert status == 2, err
    assert err == (
        f"rstreams {command}: connection to {url} ended: the peer broke the protocol: unknown message "
        f"type 0x53 before its hello; {NOT_RSIO_BYTES_HINT}\n"
    )
    assert "PROTOCOL.md §4.1" in NOT_RSIO_BYTES_HINT


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    "argv",
    [["subscribe", "URL", "counter"], ["ping", "URL", "--timeout", "60"], ["top", "URL", "--timeout", "60"]],
    ids=["subscribe", "ping", "top"],
)
def test_a_server_silent_past_the_handshake_timeout_may_be_no_rsio_endpoint(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, argv: list[str]
) -> None:
    """An HTTP server waits for a request and says nothing: after the handshake timeout (10 s, on
    a virtual clock here) every command's line is the HandshakeTimeoutError's, which names the
    URL and says that an endpoint of another protocol waits like this (publish: below)."""
    path = tmp_path / "silent.sock"

    def on_virtual_time(command: Any) -> int:
        async def beside_a_silent_server() -> int:
            held: list[asyncio.StreamWriter] = []

            async def say_nothing(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                held.append(writer)

            server = await asyncio.start_unix_server(say_nothing, path)
            try:
                return int(await command)
            finally:
                for writer in held:
                    writer.close()
                server.close()

        return run_virtual(beside_a_silent_server)

    monkeypatch.setattr(_cli_observe, "run_command", on_virtual_time)
    url = f"unix://{path}"
    assert main([url if word == "URL" else word for word in argv]) == 2
    assert capsys.readouterr().err == (
        f"rstreams {argv[0]}: handshake timeout (no serverHello within 10 s): {url} did not say hello "
        f"(connect's handshake_timeout); it may not be an RS.io server: {SILENT_HINT}\n"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("scheme", ["tcp", "ws", "tls"])
def test_publish_to_a_silent_server_fails_at_the_first_handshake_timeout(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, scheme: str
) -> None:
    """`rstreams publish` to an endpoint that accepts and never writes: the replay client tried
    again for all of --timeout (300 s), each attempt one more handshake timeout; it now fails at
    the first, with the line the other commands give (above). A handshake timeout of 0.3 s here
    (ws://, tls://: the opening's, which it bounds too)."""
    from rstreams.net import connect
    from rstreams.replay import _client

    monkeypatch.setattr(_client, "connect", functools.partial(connect, handshake_timeout=0.3))
    # the endpoint never closes: the client's lingering close after its error goodbye (tcp://)
    # would read on for LINGER_SECONDS (2 s)
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 0.2)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\ntwo\n")))
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"{scheme}://127.0.0.1:{silent.getsockname()[1]}" + ("/" if scheme == "ws" else "")
        status = main(["publish", url, "results"])
    err = capsys.readouterr().err
    assert status == 2, err
    did = {
        "tcp": "not say hello",
        "ws": "not finish the opening (TCP connect, HTTP upgrade) in that time",
        "tls": "not finish the opening (TCP connect, TLS handshake) in that time",
    }[scheme]
    assert err == (
        f"rstreams publish: handshake timeout (no serverHello within 0.3 s): {url} did {did} "
        f"(connect's handshake_timeout); it may not be an RS.io server: {SILENT_HINT}\n"
    )


@pytest.mark.timeout(60)
def test_conformance_against_a_silent_server_says_no_hello_came(capsys: pytest.CaptureFixture[str]) -> None:
    """An HTTP server waits for a request and says nothing: the probe's failure says the endpoint
    did not say hello, with subscribe's hint (§4.1), not 'timed out waiting for onSubscribe'."""
    status, url = _run_against(b"", lambda url: ["conformance", url, "--timeout", "0.5"])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err == (
        f"rstreams conformance: cannot run the suite against {url}: the endpoint did not say hello "
        f"within 0.5 s (--timeout S); {SILENT_HINT}\n"
    )


@pytest.mark.timeout(60)
def test_an_unknown_name_on_a_log_server_points_to_its_logs(capsys: pytest.CaptureFixture[str]) -> None:
    """`rstreams serve URL nums`, then a misspelt `num`: the hint names rstreams/logs too, where a
    replay log server lists its logs (its rstreams/publishers lists only rstreams/*, "more": true)."""
    with patience.serving("tcp://127.0.0.1:0", "nums") as (_, url):
        assert main(["subscribe", url, "num"]) == 1
        assert capsys.readouterr().err == (
            f"rstreams subscribe: publisher 'num' on {url} failed: no publisher named 'num' (the names "
            f"it offers: rstreams subscribe {url} rstreams/publishers; a replay log server's logs: "
            "rstreams/logs)\n"
        )
        assert main(["subscribe", url, "rstreams/logs"]) == 0
        assert capsys.readouterr().out == '{"logs": ["nums"], "sinks": []}\n'


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["ping", "URL", "--timeout", "0.5"], "did not answer within 0.5 s (--timeout)"),
        (
            ["top", "URL", "--timeout", "0.4", "--interval", "0.1"],
            "sent no snapshot for 0.5 s (--interval + --timeout)",
        ),
    ],
)
def test_a_silent_server_within_a_short_timeout_may_be_no_rsio_endpoint(
    capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    """An HTTP server waits for a request and says nothing; a --timeout shorter than the handshake
    timeout ends the command first: its line says the server did not even say hello, and that
    an endpoint of another protocol waits like this (§4.1). It said only that nothing came.
    (subscribe: tests/test_cli.py's silent server.)"""
    status, url = _run_against(b"", lambda url: [url if word == "URL" else word for word in argv])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err == f"rstreams {argv[0]}: {url} {said}, not even its hello; {SILENT_HINT}\n"


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("argv", "option", "name"),
    [
        (["rstreams/health"], "NAME", "rstreams/health"),
        (["log", "--sink", "rstreams/logs"], "--sink", "rstreams/logs"),
        (["rstreams/stats"], "NAME", "rstreams/stats"),
    ],
)
def test_a_log_named_as_the_servers_own_publisher_is_refused(
    capsys: pytest.CaptureFixture[str], argv: list[str], option: str, name: str
) -> None:
    """`rstreams serve URL rstreams/health`: the server answers that name itself, so the log would
    be listed in rstreams/logs and never read; it was served so, without a word."""
    assert main(["serve", "tcp://127.0.0.1:0", *argv]) == 2
    assert capsys.readouterr().err == (
        f"rstreams serve: {option} {name!r} is a name the server answers itself (rstreams/health, "
        "rstreams/logs, rstreams/publishers, rstreams/stats): a client asking for it would get the "
        "server's answer, never the log's; give the log another name\n"
    )


@pytest.mark.timeout(60)
def test_publishers_named_as_the_servers_own_are_served_with_a_warning(tmp_path: Path) -> None:
    """--publishers whose mapping has rstreams/health: the user's names win (rstreams.serve), so it
    is served, and a line on standard error says it replaces the server's own, read by ping."""
    module = tmp_path / "mine.py"
    mapping = 'PUBLISHERS = {"rstreams/health": just(b"mine"), "x": just(b"x")}'
    module.write_text(f"from rstreams import just\n{mapping}\n")
    with patience.serving("tcp://127.0.0.1:0", "--publishers", f"{module}:PUBLISHERS") as (server, url):
        assert server.stderr is not None
        assert server.stderr.readline() == (
            f"rstreams serve: warning: --publishers {module}:PUBLISHERS replaces the server's own "
            "rstreams/health (rstreams ping and top read them)\n"
        )
        assert main(["subscribe", url, "rstreams/health"]) == 0


@pytest.mark.timeout(60)
def test_sigterm_mid_stream_ends_subscribe_with_143_quietly() -> None:
    """SIGTERM while elements arrive (timeout(1), a service manager): the command's task is
    cancelled, so its connection closes as after Ctrl-C, and it exits 143 with nothing on
    standard error; the interpreter's default ended it without a goodbye."""
    with patience.serving("tcp://127.0.0.1:0") as (_, url):
        client = subprocess.Popen(
            [sys.executable, "-m", "rstreams.cli", "subscribe", url, "counter?rate=1000", "--demand", "1"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert patience.child_line(client, "its first element") == "0\n"
            client.send_signal(signal.SIGTERM)
            _, err = patience.communicate(client, 30)
        finally:
            if client.poll() is None:
                patience.stop_child(client)
    assert (client.returncode, err) == (143, "")


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "argv",
    [["subscribe", "URL", "counter"], ["ping", "URL"], ["top", "URL"], ["publish", "URL", "results"]],
    ids=["subscribe", "ping", "top", "publish"],
)
def test_every_command_says_the_peer_broke_the_protocol_alike(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, argv: list[str]
) -> None:
    """A server that says hello, then a frame of no type RS.io has (0x7f): one line for every
    command (subscribe printed the violation alone, without 'the peer broke the protocol:'; publish
    tried again until --timeout and then said the server could not be reached)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    hello = encode(ServerHello())
    status, url = _run_against(hello + b"\x7f\x00", lambda url: [url if w == "URL" else w for w in argv])
    err = capsys.readouterr().err
    assert status == 2, err
    assert err == (
        f"rstreams {argv[0]}: connection to {url} ended: the peer broke the protocol: unknown message "
        "type 0x7f\n"
    )
