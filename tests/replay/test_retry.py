"""The replay client's retry decision (replay/_client._Attempts), shared by its three loops:
a call, a range read and an upload each ask it what to do after a failed attempt."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from pathlib import Path

import pytest

from rstreams.errors import (
    AuthenticationError,
    AuthNotOfferedError,
    AuthRefusedError,
    AuthRequiredError,
    AuthTimeoutError,
    ConnectionBrokenError,
    TLSRefusedError,
)
from rstreams.net._transport import EndedBeforeHelloError, TLSServerError
from rstreams.replay import AccessDeniedError, TLSHandshakeError
from rstreams.replay._client import RETRY_FIRST, RETRY_MAX, _Attempts, _denied, _Step, request_json
from testkit.tls import TestCA, refusal_alert


def _refused() -> TLSRefusedError:
    return TLSRefusedError("the peer closed the connection without a goodbye before its hello; ...")


def _alert() -> ConnectionBrokenError:
    broken = ConnectionBrokenError("could not connect: certificate verify failed")
    broken.__cause__ = ssl.SSLError(1, "CERTIFICATE_VERIFY_FAILED")
    return broken


def test_a_tls_refusal_is_tried_again_at_once_and_the_second_in_a_row_gives_up() -> None:
    attempts = _Attempts()
    first = _refused()
    assert attempts.step(first) is _Step.AT_ONCE
    assert attempts.step(_refused()) is _Step.GIVE_UP
    assert attempts.failures == [first]  # what gives up is not kept: the caller raises it


def test_refusals_apart_are_each_tried_again_at_once() -> None:
    """Only two in a row are the refusal: a server restarting may end one session now and then."""
    attempts = _Attempts()
    assert attempts.step(_refused()) is _Step.AT_ONCE
    assert attempts.step(ConnectionRefusedError("nothing listens")) is _Step.AFTER_DELAY
    assert attempts.step(_refused()) is _Step.AT_ONCE
    assert len(attempts.failures) == 3


@pytest.mark.parametrize(
    "error",
    [
        ConnectionRefusedError("nothing listens"),
        ConnectionResetError(),
        ConnectionBrokenError("the peer closed the connection without a goodbye"),
        ConnectionBrokenError("the peer said goodbye: 'authentication failed (PROTOCOL.md §15.3)'"),
    ],
    ids=repr,
)
def test_other_breaks_are_tried_again_after_the_delay(error: Exception) -> None:
    attempts = _Attempts()
    assert [attempts.step(error) for _ in range(3)] == [_Step.AFTER_DELAY] * 3
    assert attempts.failures == [error] * 3


@pytest.mark.parametrize(
    "error",
    [
        _alert(),
        AuthRefusedError("the peer said goodbye: '...'", code=3),
        AuthRequiredError("the peer said goodbye: '...'"),
        AuthTimeoutError("the peer said goodbye: '...'", code=11),
        AuthNotOfferedError("the connection was closed by this side: ..."),
        TLSServerError("tcp://h:1 answered with a TLS record ...; use tls://h:1"),
        TimeoutError(),
        ValueError("bad name"),
    ],
    ids=repr,
)
def test_what_waiting_would_not_mend_gives_up_at_once(error: Exception) -> None:
    attempts = _Attempts()
    assert attempts.step(error) is _Step.GIVE_UP
    assert attempts.failures == []


def test_the_delay_doubles_up_to_its_bound() -> None:
    attempts = _Attempts()
    delays = [attempts.delay() for _ in range(12)]
    assert delays[:3] == [RETRY_FIRST, 2 * RETRY_FIRST, 4 * RETRY_FIRST]
    assert max(delays) == RETRY_MAX and delays[-1] == RETRY_MAX
    assert delays == sorted(delays)


@pytest.mark.parametrize(
    ("error", "said"),
    [
        (AuthRefusedError("the peer said goodbye: 'x'", code=3), "tcp://h:1 refused the credentials: "),
        (AuthRequiredError("the peer said goodbye: 'x'"), "tcp://h:1 refused the credentials: "),
        (AuthTimeoutError("the peer said goodbye: 'x'", code=11), "tcp://h:1 refused the credentials: "),
        (AuthNotOfferedError("the connection was closed by this side: x"), "tcp://h:1: "),
    ],
    ids=["refused", "required", "timeout", "not-offered"],
)
def test_credentials_refused_or_not_taken_are_denied_by_type(error: AuthenticationError, said: str) -> None:
    """The AccessDeniedError for an AuthenticationError keeps it as its cause (by which the
    commands name --token), and is no TLSHandshakeError."""
    denied = _denied(error, "tcp://h:1")
    assert type(denied) is AccessDeniedError and not isinstance(denied, TLSHandshakeError)
    assert str(denied) == f"{said}{error}" and denied.__cause__ is error


@pytest.mark.parametrize(
    "error",
    [
        ConnectionBrokenError("the peer said goodbye: 'authentication failed (PROTOCOL.md §15.3)'"),
        ConnectionBrokenError("the connection was closed by this side: authentication not possible"),
        RuntimeError("authentication"),
    ],
    ids=repr,
)
def test_words_alone_deny_nothing(error: Exception) -> None:
    assert _denied(error, "tcp://h:1") is None


def test_a_session_ended_twice_keeps_the_refusal_as_its_cause_for_the_url_hint() -> None:
    """A reset inside the TLS handshake is what a server without TLS at that address does too
    (wss:// towards a ws:// server): the CertificateRefusedError keeps the TLSRefusedError as its
    cause, so `rstreams publish` names the URL besides the client certificate, as subscribe does."""
    from rstreams._cli_observe import access_hint
    from rstreams.replay import CertificateRefusedError

    refused = _refused()
    refused.__cause__ = ConnectionResetError(104, "Connection reset by peer")
    denied = _denied(refused, "wss://h:1/rs")
    assert type(denied) is CertificateRefusedError and denied.__cause__ is refused
    assert "tcp:// or ws://" in access_hint(denied)


@pytest.mark.timeout(30)
def test_a_tls_server_reached_with_tcp_fails_the_call_at_once_naming_the_tls_url(tmp_path: Path) -> None:
    """A server that answers the clientHello with a TLS alert speaks TLS at that address: the call
    fails with the TLSServerError naming tls://, not after its timeout (600 s: the test's 30 s
    would end first) as for a server restarting."""
    ca = TestCA.make(tmp_path, "retry CA")
    alert = refusal_alert(ca, ca.issue("server", san=("127.0.0.1",)))
    listener = socket.create_server(("127.0.0.1", 0))

    def run() -> None:  # every connection: the alert, then read until the client closes
        with listener:
            while True:
                try:
                    accepted, _ = listener.accept()
                except OSError:
                    return
                with accepted, contextlib.suppress(OSError):
                    accepted.recv(64)
                    accepted.sendall(alert)
                    while accepted.recv(4096):
                        pass

    threading.Thread(target=run, name="TLS alerts", daemon=True).start()
    port = listener.getsockname()[1]
    try:
        with pytest.raises(TLSServerError) as told:
            request_json(f"tcp://127.0.0.1:{port}", "log?latest", timeout=600)
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
    assert str(told.value).startswith(f"tcp://127.0.0.1:{port} answered with a TLS record"), told.value
    assert str(told.value).endswith(f"; use tls://127.0.0.1:{port}"), told.value


def test_a_plain_connection_ended_before_the_hello_twice_in_a_row_gives_up() -> None:
    """Once may be a server killed just then (tried again at once); the same end again is the
    address: an endpoint that does not speak RS.io on the URL's scheme."""
    attempts = _Attempts()
    assert attempts.step(EndedBeforeHelloError("ended before its hello")) is _Step.AT_ONCE
    assert attempts.step(EndedBeforeHelloError("ended before its hello")) is _Step.GIVE_UP
    after_other = _Attempts()
    assert after_other.step(ConnectionBrokenError("reset")) is _Step.AFTER_DELAY
    assert after_other.step(EndedBeforeHelloError("ended before its hello")) is _Step.AT_ONCE


@pytest.mark.timeout(30)
def test_a_python_tls_server_reached_with_tcp_fails_the_call_at_once(tmp_path: Path) -> None:
    """Python's TLS server closes a plain client without a word (no alert to read): the call
    gives up at the second such end with the scheme hint, not after its timeout (600 s)."""
    import asyncio

    from testkit.tls import server_context

    ca = TestCA.make(tmp_path, "retry CA")
    context = server_context(ca.issue("server", san=("127.0.0.1",)))
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="TLS", daemon=True)
    thread.start()

    async def listen() -> asyncio.Server:
        return await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0, ssl=context)

    server = asyncio.run_coroutine_threadsafe(listen(), loop).result(10)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(EndedBeforeHelloError) as told:
            request_json(f"tcp://127.0.0.1:{port}", "log?latest", timeout=600)
    finally:
        loop.call_soon_threadsafe(server.close)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
    assert "its URL is tls://host:port" in str(told.value), told.value
