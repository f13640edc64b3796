"""Mutual TLS over tls:// and wss://: the server requires client certificates from its CA.

A client presenting a certificate the CA signed streams, and the server sees who it is
(``Connection.get_extra_info("peercert")``); a client with no certificate, or one from
another CA, is refused during the TLS handshake and never becomes a connection, while
the server goes on serving others. Certificates are made per module (tests/testkit/tls.py).
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Any

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError, TLSRefusedError
from rstreams.net import Connection, Server, connect, serve
from rstreams.net._transport import TLS_ENDED_BEFORE_HELLO
from testkit.bound import within
from testkit.tls import MutualPki, client_context, server_context

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

URLS = {"tls": "tls://127.0.0.1:0", "wss": "wss://127.0.0.1:0/rsio"}
OFFER: dict[str, Any] = {"numbers": lambda params: rstreams.range(5).map(lambda i: bytes([i]))}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> MutualPki:
    return MutualPki.make(tmp_path_factory.mktemp("mtls"))


class Subjects:
    """``on_connection`` hook: the common name of each connection's client certificate."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def __call__(self, conn: Connection) -> None:
        cert = conn.get_extra_info("peercert")
        subject = dict(pair for rdn in cert["subject"] for pair in rdn) if cert else {}
        self.names.append(subject.get("commonName", "<no certificate>"))


async def _serve(scheme: str, pki: MutualPki, subjects: Subjects) -> Server:
    return await serve(
        URLS[scheme], OFFER, ssl=server_context(pki.server, client_ca=pki.ca), on_connection=subjects
    )


async def _numbers(url: str, context: ssl.SSLContext) -> list[bytes]:
    async with await connect(url, ssl=context) as conn:
        return await within(conn.publisher("numbers").collect())


async def _refused(url: str, context: ssl.SSLContext) -> ConnectionBrokenError:
    """Connect and stream with ``context``; the refusal shows at connect or at the first use."""
    with pytest.raises(ConnectionBrokenError) as raised:
        await _numbers(url, context)
    return raised.value


@pytest.mark.parametrize("scheme", list(URLS))
async def test_client_with_a_certificate_from_the_ca_streams_and_is_identified(
    scheme: str, pki: MutualPki
) -> None:
    subjects = Subjects()
    async with await _serve(scheme, pki, subjects) as server:
        assert await _numbers(server.url, client_context(pki.ca, pki.alice)) == [bytes([i]) for i in range(5)]
        assert await _numbers(server.url, client_context(pki.ca, pki.bob)) == [bytes([i]) for i in range(5)]
    assert subjects.names == ["alice", "bob"]


@pytest.mark.parametrize("scheme", list(URLS))
@pytest.mark.parametrize("who", ["no certificate", "another CA"])
async def test_client_without_a_trusted_certificate_is_refused(scheme: str, who: str, pki: MutualPki) -> None:
    """Refused in the TLS handshake: never a connection; the server keeps serving others."""
    subjects = Subjects()
    untrusted = client_context(pki.ca) if who == "no certificate" else client_context(pki.ca, pki.mallory)
    async with await _serve(scheme, pki, subjects) as server:
        await _refused(server.url, untrusted)
        await _refused(server.url, untrusted)
        assert subjects.names == []  # the failed handshakes left nothing behind
        assert server.connections == frozenset()
        assert await _numbers(server.url, client_context(pki.ca, pki.alice)) == [bytes([i]) for i in range(5)]
    assert subjects.names == ["alice"]


@pytest.mark.parametrize("scheme", list(URLS))
async def test_clients_at_once_are_told_apart(scheme: str, pki: MutualPki) -> None:
    """Concurrent clients, each seen with its own certificate, all served."""
    subjects = Subjects()
    async with await _serve(scheme, pki, subjects) as server:
        contexts = [client_context(pki.ca, pki.alice), client_context(pki.ca, pki.bob)] * 3
        results = await asyncio.gather(*(_numbers(server.url, c) for c in contexts))
    assert all(r == [bytes([i]) for i in range(5)] for r in results)
    assert sorted(subjects.names) == ["alice"] * 3 + ["bob"] * 3


@pytest.mark.parametrize("scheme", list(URLS))
async def test_refusal_names_the_client_certificate(scheme: str, pki: MutualPki) -> None:
    subjects = Subjects()
    async with await _serve(scheme, pki, subjects) as server:
        error = await _refused(server.url, client_context(pki.ca))
    assert "certificate" in str(error)


@pytest.mark.parametrize("scheme", list(URLS))
@pytest.mark.parametrize("who", ["no certificate", "another CA"])
async def test_a_tls_1_3_refusal_ends_the_same_way_on_both_schemes(
    scheme: str, who: str, pki: MutualPki
) -> None:
    """A TLS 1.3 server refuses after the client's side of the handshake: the session ends
    before the server's hello on tls://, before its HTTP response on wss://. Both errors are a
    TLSRefusedError, by which a caller that retries tells a refusal apart (tests/net/
    test_tls_refusal.py), and both end with the same words, TLS_ENDED_BEFORE_HELLO."""
    untrusted = client_context(pki.ca) if who == "no certificate" else client_context(pki.ca, pki.mallory)
    async with await _serve(scheme, pki, Subjects()) as server:
        error = await _refused(server.url, untrusted)
    assert isinstance(error, TLSRefusedError), repr(error)
    assert str(error).endswith(TLS_ENDED_BEFORE_HELLO), error


@pytest.mark.parametrize("scheme", list(URLS))
async def test_a_tls_1_2_refusal_in_the_handshake_says_what_it_may_mean(scheme: str, pki: MutualPki) -> None:
    """A TLS 1.2 server refuses in the handshake itself, which asyncio reports as a bare
    ConnectionResetError: the error says where it happened and what it usually means."""
    context = server_context(pki.server, client_ca=pki.ca)
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    async with await serve(URLS[scheme], OFFER, ssl=context) as server:
        error = await _refused(server.url, client_context(pki.ca))
    assert isinstance(error.__cause__, ConnectionResetError)
    assert str(error).startswith(
        f"could not connect to {server.url}: ConnectionResetError in the TLS handshake; "
    )
    assert "requires a client certificate" in str(error)
