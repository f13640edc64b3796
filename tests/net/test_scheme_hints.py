"""A client on a plain scheme that reaches a TLS server is told the scheme to use: tcp:// to a
tls:// server names tls://, ws:// to a wss:// server names wss:// (the tcp:// hint named only
ws://, and ws:// named nothing)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

import rstreams
from rstreams.errors import ConnectionBrokenError
from testkit.tls import TestCA, server_context

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("scheme", "plain", "names"),
    [
        ("tls", "tcp", "its URL is tls://host:port"),
        ("wss", "ws", "a TLS server's URL is wss://host:port/path"),
    ],
)
def test_a_plain_url_to_a_tls_server_names_the_tls_scheme(
    scheme: str, plain: str, names: str, tmp_path: Path
) -> None:
    ca = TestCA.make(tmp_path, "hint CA")
    context = server_context(ca.issue("hint server", san=("127.0.0.1",)))

    async def main() -> str:
        async with await rstreams.serve(
            f"{scheme}://127.0.0.1:0" + ("/rsio" if scheme == "wss" else ""),  # tls:// takes no path
            {"a": rstreams.just(b"x")},
            ssl=context,
        ) as server:
            url = server.url.replace(f"{scheme}://", f"{plain}://", 1)
            with pytest.raises(ConnectionBrokenError) as broken:
                async with await rstreams.connect(url) as conn:
                    await conn.publisher("a").collect()
            return str(broken.value)

    said = asyncio.run(main())
    assert names in said, said
