"""The conformance suite against our own server, over TCP, TLS, WebSocket and WSS: every case must pass.

Each case is one test per transport, so a failure names its case and rule. A case that
fails because of a real bug in rstreams.net/wire is kept and marked ``xfail(strict=True)``
in :data:`KNOWN_BUGS` with the bug described; fixing the bug turns it into an XPASS, which
fails the run until the mark is removed. Over ``tls``/``wss`` the driver verifies the
server's certificate against a CA made for the test session (tests/testkit/tls.py).
"""

from __future__ import annotations

import dataclasses
import ssl
from pathlib import Path
from typing import Any

import pytest

from rstreams.conformance import CASES, KINDS, Case, Options, Outcome, conformance_publishers, run_case
from rstreams.net import Credentials, Token, serve
from rstreams.net._resume import Resume
from testkit.bound import run_own_time
from testkit.tls import TestCA, server_context

# Every wait of a passing case ends at an event (a frame, the end of input); only the quiet
# window is waited out. The deadlines are safety nets, far above what a loaded machine needs
# for a TLS or WebSocket handshake (5 s per wait was not, at load 15 on 2 cores). The server and
# the driver share one loop whose clock is its own time (testkit.bound.OwnTimeLoop): the
# driver's deadlines and the server's idle timeout count only what the loop's thread got of a
# CPU, so the machine's load delays both alike.
OPTIONS = Options(quiet=0.1, timeout=30.0, case_timeout=50.0)
ALL_KINDS = frozenset(KINDS)

KNOWN_BUGS: dict[str, str] = {}

URLS = {
    "tcp": "tcp://127.0.0.1:0",
    "tls": "tls://127.0.0.1:0",
    "ws": "ws://127.0.0.1:0/rsio",
    "wss": "wss://127.0.0.1:0/rsio",
}


@dataclasses.dataclass(frozen=True)
class _Tls:
    server: ssl.SSLContext
    options: Options


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> _Tls:
    directory: Path = tmp_path_factory.mktemp("conformance-tls")
    ca = TestCA.make(directory, "conformance CA")
    server = ca.issue("rstreams conformance server", san=("127.0.0.1", "localhost"))
    return _Tls(server_context(server), dataclasses.replace(OPTIONS, cafile=str(ca.cert)))


IDLE_TIMEOUT = 0.6
TOKEN = "conformance-token-7f3a"


def _authenticate(credentials: Credentials) -> str | None:
    return "driver" if isinstance(credentials, Token) and credentials.token == TOKEN else None


def _extension_settings(case: Case) -> dict[str, Any]:
    """The ex.auth_* cases run against a server requiring a token; the other ex.* cases against
    one with a short idle timeout; every other case against the defaults."""
    if case.id.startswith("ex.auth_"):
        return {"authenticate": _authenticate, "auth_required": True}
    if case.area == "ex":
        return {"idle_timeout": IDLE_TIMEOUT}
    return {}


def _params() -> list[object]:
    params: list[object] = []
    for transport in URLS:
        for case in CASES:
            marks = []
            if case.id in KNOWN_BUGS:
                marks.append(pytest.mark.xfail(strict=True, reason=KNOWN_BUGS[case.id]))
            params.append(pytest.param(transport, case, id=f"{transport}-{case.id}", marks=marks))
    return params


@pytest.mark.timeout(120)  # (above a case's deadline: 50 s of the loop's own time)
@pytest.mark.parametrize(("transport", "case"), _params())
def test_case(transport: str, case: Case, tls: _Tls) -> None:
    """The case passes against rstreams.net.serve offering the conformance publishers."""
    run_own_time(lambda: _check_case(transport, case, tls))


async def _check_case(transport: str, case: Case, tls: _Tls) -> None:
    secure = transport in ("tls", "wss")
    publishers = conformance_publishers()
    # Resumption (rs.* cases, PROTOCOL.md §16) over the transports that support it; skipped elsewhere.
    # Every case runs with resumption on over tcp and tls: resume must not break the core protocol.
    resume = Resume(session_timeout=5.0) if transport in ("tcp", "tls") else None
    server = await serve(
        URLS[transport],
        publishers,
        ssl=tls.server if secure else None,
        on_connection=publishers.on_connection,  # conformance/echo finds its connection
        resume=resume,
        **_extension_settings(case),
    )
    try:
        options = tls.options if secure else OPTIONS
        if case.area == "ex":  # what the driver cannot learn from the hello (§14.2, §15)
            options = dataclasses.replace(options, idle_timeout=IDLE_TIMEOUT, token=TOKEN)
        if case.id in KNOWN_BUGS:  # they fail by running into a wait's deadline: keep it short
            options = dataclasses.replace(options, timeout=0.5)
        result = await run_case(case, server.url, options, ALL_KINDS)
    finally:
        await server.aclose()
    if case.area == "rs" and resume is None:
        assert result.outcome is Outcome.SKIP, result.message
        return
    assert result.outcome is Outcome.PASS, f"{case.cite}: {case.text}\n{result.message}"
