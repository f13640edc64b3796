"""Fixtures for the net tests: TLS material made on the spot, loopback only."""

from __future__ import annotations

import asyncio
import shutil
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from testkit import patience


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1/localhost, made with the ``openssl`` command."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is needed to make a test certificate")
    directory = tmp_path_factory.mktemp("tls")
    cert, key = directory / "cert.pem", directory / "key.pem"
    patience.run(
        [
            "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
            "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
        ],
        30,
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


@pytest.fixture
def server_ssl(tls_files: tuple[Path, Path]) -> ssl.SSLContext:
    cert, key = tls_files
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    return context


@pytest.fixture
def client_ssl(tls_files: tuple[Path, Path]) -> ssl.SSLContext:
    cert, _ = tls_files
    return ssl.create_default_context(cafile=str(cert))


@pytest_asyncio.fixture
async def nothing_escapes() -> AsyncIterator[None]:
    """Nothing reaches the loop's exception handler (a transport callback that raised, say: a
    resumable session sending its resumeToken after a refusal's goodbye did). Modules that want
    it name it: ``pytest.mark.usefixtures("nothing_escapes")``."""
    escaped: list[dict[str, Any]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: escaped.append(context))
    yield
    loop.set_exception_handler(None)
    assert escaped == []
