"""Goodbyes a server decides on outside the wire core, against PROTOCOL.md §10's table.

A raw client sends a clientHello offering every extension (or nothing), reads until the
server closes, and checks the goodbye's text and the goodbyeCode right before it (extension
error-codes, §19) against the code §10 gives that row.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

import rstreams
from rstreams.net import connect, serve
from rstreams.wire import (
    ClientHello,
    ConnectionConfig,
    ExtensionMessage,
    FrameParser,
    Goodbye,
    ServerHello,
    Subscribe,
    encode,
)
from rstreams.wire._codes import decode_goodbye_code
from rstreams.wire.extensions import GOODBYE_CODE, REGISTERED
from testkit.bound import within

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

PROTOCOL = (Path(__file__).resolve().parents[2] / "PROTOCOL.md").read_text()
ALL = tuple(ext.id for ext in REGISTERED)


def _codes(words: str) -> set[int]:
    """The codes of §10's rows whose first cell contains ``words``."""
    table = PROTOCOL.split("## 10. Errors")[1].split("\n## ")[0]
    found: set[int] = set()
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and words in cells[0]:
            found |= {int(n) for n in re.findall(r"\d+", cells[3])}
    assert found, f"§10 has no row for {words!r}"
    return found


async def _goodbye(data: bytes, **options: object) -> tuple[str, int | None]:
    """Send ``data`` to a fresh server; the goodbye it answers with, and its code."""
    async with await serve("tcp://127.0.0.1:0", {}, **options) as server:  # type: ignore[arg-type]
        host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            writer.write(data)
            received = b""
            while chunk := await within(reader.read(1 << 16), 10):
                received += chunk
        finally:
            writer.close()
    frames = _parser().feed(received)
    goodbyes = [i for i, f in enumerate(frames) if isinstance(f, Goodbye)]
    assert goodbyes, f"no goodbye in {frames}"
    at = goodbyes[0]
    before = frames[at - 1]
    goodbye = frames[at]
    assert isinstance(goodbye, Goodbye)
    if isinstance(before, ExtensionMessage) and before.type == GOODBYE_CODE:
        return goodbye.reason, decode_goodbye_code(before.payload)
    return goodbye.reason, None


def _parser() -> FrameParser:
    return FrameParser(max_element_size=1 << 20, max_string_length=1 << 16, max_extensions=64)


HELLO = encode(ClientHello(extensions=ALL))


async def test_the_handshake_timeout() -> None:
    reason, code = await _goodbye(b"", handshake_timeout=0.05)
    assert reason.startswith("handshake timeout (no clientHello within")
    assert code is None or code in _codes("no hello within")  # no hello, so no error-codes yet


@pytest.mark.parametrize("extensions", [ALL, ()], ids=["error-codes", "no-extensions"])
async def test_a_connection_beyond_max_connections(extensions: tuple[int, ...]) -> None:
    """The refusal comes at the clientHello: with error-codes offered, its goodbye carries §10's
    code (8, unavailable); without, none."""
    async with await serve("tcp://127.0.0.1:0", {}, max_connections=1) as server:
        first = await connect(server.url)
        await within(first.request("rstreams/publishers"), 10)  # answered: it is counted
        host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
        reader, writer = await asyncio.open_connection(host, int(port))
        writer.write(encode(ClientHello(extensions=extensions)))
        received = b""
        while chunk := await within(reader.read(1 << 16), 10):
            received += chunk
        writer.close()
        await first.aclose()
    frames = _parser().feed(received)
    goodbye = frames[-1]
    assert isinstance(goodbye, Goodbye) and goodbye.reason.startswith("too many connections")
    if extensions:
        assert frames[1:-1] == [ExtensionMessage(type=GOODBYE_CODE, payload=b"\x08")], frames
        assert _codes("beyond the server's `max_connections`") == {8}
    else:
        assert frames[1:-1] == [], frames


def _codes_cell(words: str) -> str:
    table = PROTOCOL.split("## 10. Errors")[1].split("\n## ")[0]
    for line in table.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 4 and words in cells[0]:
            return cells[3]
    raise AssertionError(f"§10 has no row for {words!r}")


async def _fake_server(
    greeting: bytes, *, read_timeout: float
) -> tuple[asyncio.Server, int, bytearray, asyncio.Event]:
    """A one-connection fake server on a free port: it writes ``greeting``, then keeps what the
    client sends (until the client closes or sends nothing for ``read_timeout`` s) in the
    returned bytearray and sets the returned event once the connection is done."""
    received = bytearray()
    done = asyncio.Event()

    async def serve_one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(greeting)
        with contextlib.suppress(TimeoutError, ConnectionError):
            while chunk := await within(reader.read(1 << 16), read_timeout):
                received.extend(chunk)
        writer.close()
        done.set()

    listener = await asyncio.start_server(serve_one, "127.0.0.1", 0)
    return listener, listener.sockets[0].getsockname()[1], received, done


async def test_a_client_with_credentials_and_a_server_without_auth() -> None:
    """§15.2: the client says goodbye; §10 gives that goodbye no code."""
    listener, port, received, done = await _fake_server(encode(ServerHello(extensions=(6,))), read_timeout=10)
    try:
        with contextlib.suppress(Exception):  # how the client fails is not this test's business
            conn = await connect(f"tcp://127.0.0.1:{port}", auth="tok")
            with contextlib.suppress(Exception):
                await conn.request("x")
            await conn.aclose()
        await within(done.wait(), 10)
    finally:
        listener.close()
    frames = _parser().feed(bytes(received))
    goodbye = frames[-1]
    assert isinstance(goodbye, Goodbye) and "does not offer extension auth" in goodbye.reason
    assert not any(isinstance(f, ExtensionMessage) and f.type == GOODBYE_CODE for f in frames)
    assert _codes_cell("a serverHello without auth to a client") == "none"


async def test_a_server_shutting_down_says_goodbye_with_code_0() -> None:
    """§19.2: a server's aclose() says goodbye on each connection with code 0 (normal)."""
    server = await serve("tcp://127.0.0.1:0", {})
    host, port = server.url.removeprefix("tcp://").rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(HELLO)
    received = await within(reader.read(1 << 16), 10)  # its serverHello, at least
    closing = asyncio.ensure_future(server.aclose())
    while not any(isinstance(f, Goodbye) for f in _parser().feed(received)):
        chunk = await within(reader.read(1 << 16), 10)
        assert chunk, received
        received += chunk
    writer.write(encode(Goodbye(reason="ok")))  # the answer the server waits for
    await within(closing, 10)
    writer.close()
    frames = _parser().feed(received)
    goodbye = frames[-1]
    assert isinstance(goodbye, Goodbye) and goodbye.reason == "server closing"
    before = frames[-2]
    assert isinstance(before, ExtensionMessage) and before.type == GOODBYE_CODE
    assert decode_goodbye_code(before.payload) == 0


def _ext(kind: int, payload: bytes) -> bytes:
    return encode(ExtensionMessage(type=kind, payload=payload))


async def test_a_malformed_channels_message() -> None:
    reason, code = await _goodbye(HELLO + _ext(0xA1, b"\x01\x00"))  # inputRequest with demand 0
    assert "§21.2" in reason
    assert code in _codes("a malformed channels message"), (reason, code)


async def test_a_malformed_message() -> None:
    reason, code = await _goodbye(HELLO + _ext(0x9D, b"\x00"))  # messageCredit 0
    assert "§20.2" in reason
    assert code in _codes("a malformed message or messageCredit"), (reason, code)


async def test_a_message_beyond_the_credit() -> None:
    reason, code = await _goodbye(HELLO + _ext(0x9C, b"\x01x") * 17)  # the credit is 16
    assert "§20.3" in reason
    assert code in _codes("a message beyond the granted"), (reason, code)


async def test_a_resume_message_inside_a_session() -> None:
    hello = encode(ClientHello(extensions=(3, 6)))
    reason, code = await _goodbye(hello + _ext(0x8A, b"\x00"), resume=True)  # a resume inside a session
    assert "§16.2" in reason
    assert code in _codes("a resume message inside a session that breaks"), (reason, code)


async def test_authentication_required_but_not_offered() -> None:
    reason, code = await _goodbye(
        encode(ClientHello(extensions=(6,))), authenticate=lambda credentials: "p", auth_required=True
    )
    assert reason.startswith("authentication required") and "§15.2" in reason
    assert code in _codes("authentication refused, required but not offered"), (reason, code)


async def test_subscribe_credentials_beyond_max_subscriptions() -> None:
    credentials = [_ext(0x86, bytes([sid]) + b"\x01\x01t") for sid in (1, 2)]
    reason, code = await _goodbye(
        encode(ClientHello(extensions=(2, 6))) + b"".join(credentials),
        authenticate=lambda credentials: "p",
        config=ConnectionConfig(max_subscriptions=1),
    )
    assert "§15.4" in reason
    assert code in _codes("more subscribeCredentials waiting"), (reason, code)


async def test_an_input_part_beyond_the_input_demand() -> None:
    """A channel opened on the server, then an inputNextPart and an inputComplete: goodbye
    citing §21.4 or §21.6 (whichever the input breaks first), code 6."""

    def echo(requests: rstreams.Flow[object], params: Mapping[str, str]) -> rstreams.Flow[object]:
        return rstreams.from_publisher(requests)

    opening = _ext(0xA0, b"\x01") + encode(Subscribe(publisher="echo", subscriber=1, initial_demand=1))
    part = _ext(0xA6, b"\x01abc")
    complete = _ext(0xA4, b"\x01")
    reason, code = await _goodbye(HELLO + opening + part + complete, channels={"echo": echo})
    assert "§21.6" in reason or "§21.4" in reason
    expected = _codes("inputComplete amid a split input element") | _codes("inputNext beyond")
    assert code in expected, (reason, code)


async def test_an_authenticated_with_a_payload_is_malformed() -> None:
    """§15.1: a payload is exactly its fields, and authenticated's is empty: a client that
    reads `85 01 00` says goodbye citing §15.1 and §15.5, with code 6."""
    greeting = encode(ServerHello(extensions=(2, 6))) + b"\x85\x01\x00"
    listener, port, received, done = await _fake_server(greeting, read_timeout=5)
    try:
        with contextlib.suppress(Exception):  # how the client fails is not this test's business
            conn = await connect(f"tcp://127.0.0.1:{port}", auth="tok")
            await within(done.wait(), 10)
            await conn.aclose()
        await within(done.wait(), 10)
    finally:
        listener.close()
    frames = _parser().feed(bytes(received))
    goodbye = frames[-1]
    assert isinstance(goodbye, Goodbye) and "§15.1" in goodbye.reason and "§15.5" in goodbye.reason
    before = frames[-2]
    assert isinstance(before, ExtensionMessage) and before.type == GOODBYE_CODE
    assert decode_goodbye_code(before.payload) in _codes("an auth message that breaks §15")
