"""An IPv6 host is written in one pair of brackets wherever a URL's host is written again
(PROTOCOL.md §1.1): a ws:// client's ``Host`` header, a server's URL, a client's error; the
socket is given the address without them. java RsioUrlTest and js/test/url-hosts.test.mjs
check the same of their bindings."""

from __future__ import annotations

import asyncio
import re
import socket

import pytest

from rstreams import just
from rstreams.errors import ConnectionBrokenError
from rstreams.net import connect, serve
from testkit.bound import within


def _has_ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


pytestmark = [
    pytest.mark.skipif(not _has_ipv6_loopback(), reason="no IPv6 loopback (::1) here"),
    pytest.mark.asyncio,
    pytest.mark.timeout(30),
]


async def test_a_ws_client_sends_an_ipv6_host_in_one_pair_of_brackets() -> None:
    """RFC 7230 section 5.4: ``Host: [::1]:PORT``; the refusal names the URL as written back."""
    heads: list[bytes] = []

    async def refuse(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        heads.append(await reader.readuntil(b"\r\n\r\n"))
        writer.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(refuse, "::1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        with pytest.raises(ConnectionBrokenError) as caught:
            await within(connect(f"WS://[::1]:{port}/rsio"))
    assert f"\r\nhost: [::1]:{port}\r\n" in heads[0].decode("latin-1").lower()
    assert f"ws://[::1]:{port}/rsio" in str(caught.value)
    assert "[[" not in str(caught.value)


@pytest.mark.parametrize("scheme", ["tcp", "ws"])
async def test_a_server_on_an_ipv6_address_writes_its_url_with_one_pair_of_brackets(scheme: str) -> None:
    """The URL a server reports parses back to its endpoint, and a client reaches it by it."""
    path = "/rsio" if scheme == "ws" else ""
    async with await serve(f"{scheme.upper()}://[::1]:0{path}", {"greeting": just(b"hello")}) as server:
        assert re.fullmatch(rf"{scheme}://\[::1\]:[0-9]+{path}", server.url), server.url
        async with await within(connect(server.url)) as conn:
            assert await within(conn.request("greeting")) == b"hello"
