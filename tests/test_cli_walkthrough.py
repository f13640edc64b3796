"""The `rstreams` command where a new user's walkthrough found it misleading: a server's
rstreams/health that is not the health object, a URL of the wrong scheme, a server without
rstreams/publishers, and the smaller texts."""

from __future__ import annotations

import contextlib
import io
import socket
import sys
import threading

import pytest

from rstreams import _cli_logs, cli, just
from rstreams._cli_observe import HTTPS_HINT
from rstreams.cli import main
from rstreams.net._closing import NOT_RSIO_HINT, SILENT_HINT
from testkit import patience
from testkit.observe import served
from testkit.tls import MutualPki, server_context


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (b"mine", "rstreams/health answered b'mine', not JSON"),
        (b"[1,2]", "rstreams/health answered a JSON list, not an object"),
        (b'{"x": 1}', 'rstreams/health answered an object without the boolean field "ok"'),
    ],
    ids=["not-json", "not-an-object", "no-ok"],
)
def test_ping_and_top_name_a_health_answer_that_is_not_the_servers(
    capsys: pytest.CaptureFixture[str], answer: bytes, said: str
) -> None:
    """--publishers replaced rstreams/health: ping ended in a traceback (JSONDecodeError,
    AttributeError) and top in 'connection ended: Expecting value', exit 2. One line, exit 1."""
    with served({"rstreams/health": just(answer)}) as url:
        for command in ("ping", "top"):
            assert main([command, url, "--timeout", "5"]) == 1
            assert capsys.readouterr().err == (
                f"rstreams {command}: {url}: {said} (a publisher of the user's replaced the "
                "server's own, as serve --publishers can)\n"
            )


def _close_at_once(listening: socket.socket) -> None:
    """Accept one connection and end its output at once, as a TLS server does to a client that
    speaks no TLS; read until the client hangs up (a close with input unread would reset)."""
    peer, _ = listening.accept()
    with peer:
        peer.settimeout(20)
        peer.shutdown(socket.SHUT_WR)
        with contextlib.suppress(OSError):
            while peer.recv(1024):
                pass


@pytest.mark.timeout(60)
def test_conformance_against_an_endpoint_closing_before_its_hello_names_the_url(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A TLS server reached with tcp:// closes at once: the probe's failure pointed to --publisher
    NAME (and the suite then failed 22 cases); it names the URL's scheme, as subscribe does."""
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        thread = threading.Thread(target=_close_at_once, args=(listening,))
        thread.start()
        url = f"tcp://127.0.0.1:{listening.getsockname()[1]}"
        assert main(["conformance", url, "--timeout", "5"]) == 2
        patience.join(thread, 20)
    assert capsys.readouterr().err == (
        f"rstreams conformance: cannot run the suite against {url}: the endpoint closed the connection "
        f"before its hello; {NOT_RSIO_HINT}\n"
    )


def test_a_server_without_rstreams_publishers_is_not_told_to_ask_it() -> None:
    """The Java and JavaScript servers refuse rstreams/publishers ('no publisher named ...', the
    same text in every binding): the hint said to run that very command; it says such a server
    does not list its publishers. Any other unknown name still points to the listing."""
    url = "tcp://127.0.0.1:9"
    assert cli._channel_hint("no publisher named 'rstreams/publishers'", "rstreams/publishers", url) == (
        " (this server does not list its publishers: only rstreams' Python servers do)"
    )
    assert cli._channel_hint("no publisher named 'x'", "x", url).startswith(
        f" (the names it offers: rstreams subscribe {url} rstreams/publishers;"
    )


@pytest.mark.timeout(30)
def test_demo_names_every_missing_extra_at_once(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain install: the demo named the websockets extra, then on the next run the spark one,
    saying only 'pyarrow is missing' with pyspark missing too. One line names both, and one pip
    command installs them."""
    monkeypatch.setattr(cli, "_importable", lambda name: name in ("pandas", "msgpack"))
    assert main(["demo"]) == 2
    assert capsys.readouterr().err == (
        "rstreams demo: the Spark job needs the spark extra (pyspark, pyarrow missing); the live page "
        "needs the websockets extra: pip install 'rstreams[spark,websockets]' (or --no-web)\n"
    )
    assert main(["demo", "--no-web"]) == 2
    assert capsys.readouterr().err == (
        "rstreams demo: the Spark job needs the spark extra (pyspark, pyarrow missing): "
        "pip install 'rstreams[spark]'\n"
    )


@pytest.mark.timeout(60)
def test_a_name_past_max_name_length_is_shown_cut(capsys: pytest.CaptureFixture[str]) -> None:
    """A 5,000-character name, refused by the server's max_name_length: the line echoed all of it;
    it shows the first 60 characters and the length."""
    with served({"x": just(b"x")}) as url:
        assert main(["subscribe", url, "a" * 5000]) == 1
    assert capsys.readouterr().err == (
        f"rstreams subscribe: publisher '{'a' * 60}'… (5000 characters) on {url} failed: refused: "
        "publisher name longer than max_name_length=1024 bytes (PROTOCOL.md §11)\n"
    )


@pytest.mark.timeout(60)
def test_a_long_unknown_name_is_shown_cut_where_the_refusal_quotes_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 500-character name the server does not offer: its refusal quotes the name, and the line
    repeated all of it; it shows it cut there too, as publish does."""
    with served({"x": just(b"x")}) as url:
        assert main(["subscribe", url, "a" * 500]) == 1
    cut = f"'{'a' * 60}'… (500 characters)"
    err = capsys.readouterr().err
    assert err.startswith(f"rstreams subscribe: publisher {cut} on {url} failed: no publisher named {cut}")
    assert "a" * 61 not in err and err.count("\n") == 1, err


@pytest.mark.timeout(60)
def test_subscribe_ping_and_top_tls_to_a_wss_server_name_wss(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """tls:// towards a wss:// server that requires (and is given) a client certificate: the TLS
    handshake succeeds, then the server waits for an HTTP request and closes, which subscribe's
    line blamed on the certificate, and ping's and top's on a server silent past their timeout
    (an HTTP server's ws:// URL). Each command asks the server over HTTP, and names wss://."""
    monkeypatch.setattr("rstreams.net._closing.LINGER_SECONDS", 0.2)  # subscribe's close after --timeout
    pki = MutualPki.make(tmp_path_factory.mktemp("pki"))
    context = server_context(pki.server, client_ca=pki.ca)
    alice = ["--certfile", str(pki.alice.cert), "--keyfile", str(pki.alice.key)]
    with served({"x": just(b"x")}, "wss://127.0.0.1:0/rs", ssl=context) as url:
        tls = url.replace("wss://", "tls://").removesuffix("/rs")
        for command, options in (("subscribe", ["x"]), ("ping", []), ("top", ["--interval", "0.1"])):
            status = main([command, tls, *options, "--timeout", "0.2", "--cafile", str(pki.ca.cert), *alice])
            said = capsys.readouterr().err
            assert (status, said) == (2, f"rstreams {command}: {tls} said no hello; {HTTPS_HINT}\n")


@pytest.mark.timeout(60)
def test_publish_to_a_silent_server_says_not_even_its_hello(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server that accepts and never writes, within a --timeout shorter than the handshake
    timeout: publish said only that it did not answer; it adds, as the other commands do, that
    not even the hello came and what such an endpoint may be (one more connection asks)."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one\n")))
    monkeypatch.setattr(_cli_logs, "HELLO_PROBE_SECONDS", 0.2)
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
        assert main(["publish", url, "results", "--timeout", "0.5"]) == 2
    assert capsys.readouterr().err == (
        f"rstreams publish: {url} did not answer within 0.5 s (--timeout), not even its hello; "
        f"{SILENT_HINT}\n"
    )
