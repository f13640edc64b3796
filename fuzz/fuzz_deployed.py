"""Fuzz the servers a user deploys: ``serve()`` with authentication, with resumption, over TLS and
over WebSocket, each with the default admission budget.

Each mode is fuzz_net.py's driver (same input layout, same invariants: nothing escapes into the
loop, well-formed RS.io and goodbyes that name their section, the connection ends within
``WAIT`` and leaves nothing behind, bounded holdings, a second well-behaved client served after
every input) with the mode's own server, well-behaved client and hostile peer. Byte 0 bits 0
and 1 are fuzz_net's (a clientHello listing every extension first; a lazy peer); the higher bits
are the mode's:

* ``auth``: the server needs credentials (a sync hook for tokens, an async one for user and
  password, an ``authorize`` hook that refuses some names and raises for one). Bit 2 sends a
  valid ``authenticate`` after the hello, so the input runs after the exchange; without it the
  input makes (or breaks, or skips) the exchange itself.
* ``resume``: the server keeps sessions (``session_timeout`` 0.5 s, a 64 KiB replay buffer).
  Bit 2: the reads after the input's first end-of-input mark go to a second transport that
  starts with ``resume``: the session's token, read from the server's ``resumeToken`` (16
  bytes of byte 1 when there was none), and the position the raw client read, plus byte 1 as a
  signed offset (0: exactly). Bit 3: that second transport comes while the first is still up.
  A resume message of the input's own (as its first read, or inside a session) covers the
  rest: garbage tokens, lengths and positions, resumes at the wrong time.
* ``tls``: the server listens on TLS (a self-signed certificate). Bit 2 clear: the input goes
  after a real TLS handshake; set: it goes as it is, instead of a ClientHello (seeds: a real
  ClientHello, mutated).
* ``ws``: the server listens on WebSocket. Bits 2-3: 0, each read is one binary message; 1,
  reads become text messages, fragmented messages and pings, by their length; 2, a valid
  upgrade, then the reads as they are (WebSocket frames of any kind); 3, the reads as they are
  from the first byte (bad upgrades; seeds: a valid upgrade request, mutated).

Run::

    .venv/bin/python fuzz/fuzz_deployed.py MODE --pure 100000 [SEED [SECONDS]]
    .venv/bin/python fuzz/fuzz_deployed.py MODE --replay HEX
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
import os
import ssl
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_connection as wire_harness  # (this directory, put on the path above)
import fuzz_net
from fuzz_net import HELLO, Reader, Target, Writer, _Peer, within

from rstreams.net import Resume
from rstreams.wire import (
    ClientHello,
    Goodbye,
    Request,
    Subscribe,
    encode,
)
from rstreams.wire._auth import Token, UserPassword, encode_credentials, encode_subscribe_credentials
from rstreams.wire._messages import MESSAGE, encode_message
from rstreams.wire._resume import (
    RESUME,
    RESUME_ACK,
    RESUME_TOKEN,
    Refused,
    ResumeError,
    ResumeReplyParser,
    encode_resume,
)
from rstreams.wire._resume import encode_message as encode_resume_message
from rstreams.wire.extensions import AUTH_AUTHENTICATE, AUTH_OK, AUTH_SUBSCRIBE_CREDENTIALS
from rstreams.wire.frames import ExtensionMessage
from testkit.bound import WAIT, Bound  # (tests/, put on the path by fuzz_net)

A, EOF, JOIN = wire_harness.ACT, wire_harness.EOF, wire_harness.JOIN_OP


def chunked(*frames: bytes) -> bytes:
    """The input layout's reads of ``frames``, one read each (longer ones joined from pieces)."""
    out = bytearray()
    for frame in frames:
        pieces = [frame[i : i + 250] for i in range(0, len(frame), 250)] or [b""]
        if len(pieces) > 1:
            out += bytes((JOIN, len(pieces) - 1))
        for piece in pieces:
            out += bytes((len(piece),)) + piece
        out.append(A)
    return bytes(out)


def ext(kind: int, payload: bytes) -> bytes:
    return encode(ExtensionMessage(type=kind, payload=payload))


# -- auth ------------------------------------------------------------------------------------------
def _authenticate(credentials: Any) -> Any:
    """Tokens are checked at once ("good", "raise" raises); user and password asynchronously."""
    if isinstance(credentials, Token):
        if credentials.token == "raise":
            raise ValueError("the hook failed")
        return "alice" if credentials.token == "good" else None

    async def check() -> str | None:
        await asyncio.sleep(0)
        return "bob" if (credentials.user, credentials.password) == ("bob", "pw") else None

    return check()


def _authorize(principal: Any, name: str) -> bool:
    if name == "raise":
        raise ValueError("the hook failed")
    return not (principal == "bob" and name == "big")


class AuthTarget(Target):
    def serve_options(self, directory: str) -> dict[str, Any]:
        return {"authenticate": _authenticate, "authorize": _authorize}

    def legit_options(self) -> dict[str, Any]:
        return {"auth": "good"}

    def prepare(self, head: int, chunks: list[wire_harness.Chunk]) -> list[wire_harness.Chunk]:
        if head & 4:
            chunks.insert(0, ext(AUTH_AUTHENTICATE, encode_credentials(Token("good"))))
        return super().prepare(head, chunks)


def _auth_seeds() -> list[bytes]:
    good = ext(AUTH_AUTHENTICATE, encode_credentials(Token("good")))
    bob = ext(AUTH_AUTHENTICATE, encode_credentials(UserPassword("bob", "pw")))
    sub = encode(Subscribe(publisher="numbers", subscriber=1, initial_demand=2))
    big = encode(Subscribe(publisher="big", subscriber=2, initial_demand=1))
    creds = ext(AUTH_SUBSCRIBE_CREDENTIALS, encode_subscribe_credentials(3, UserPassword("bob", "pw")))
    sub3 = encode(Subscribe(publisher="numbers", subscriber=3, initial_demand=1))
    raising = encode(Subscribe(publisher="raise", subscriber=4, initial_demand=1))
    message = ext(MESSAGE, encode_message("log", b"hello"))
    no_auth = encode(ClientHello(extensions=(1,)))
    return [
        bytes((1, 0)) + chunked(good, sub, big, creds, sub3, raising, message, encode(Goodbye(reason="bye"))),
        bytes((1, 0)) + chunked(sub, creds, sub3, bob, big, encode(Request(subscriber=1, demand=3))),
        bytes((1, 0)) + chunked(ext(AUTH_AUTHENTICATE, encode_credentials(Token("bad"))), sub),
        bytes((1, 0)) + chunked(message, good, good),  # a message before; authenticate twice
        bytes((1, 0)) + chunked(ext(AUTH_OK, b""), sub),  # authenticated, sent to a server
        bytes((1, 0)) + chunked(ext(AUTH_AUTHENTICATE, encode_credentials(Token("raise"))), sub),
        bytes((0, 0)) + chunked(no_auth, sub),  # a hello without auth
        bytes((5, 0)) + chunked(sub, creds, sub3, raising, message),  # after the exchange
        bytes((1, 0)) + fuzz_net._seeds()[1][2:],  # messages and channels, before any authenticate
        bytes((5, 0)) + fuzz_net._seeds()[4][2:],  # large elements, windows, channels: after
    ]


# -- resume ----------------------------------------------------------------------------------------
class _ResumingPeer(_Peer):
    """A raw client that keeps the session's token; resuming, it reads the answer first and then
    (``continues``: at the exact position) goes on parsing the first transport's stream."""

    def __init__(
        self, reader: Reader, resumed_from: _ResumingPeer | None = None, continues: bool = False
    ) -> None:
        super().__init__(reader)
        self.cut = True  # a session's link may break anywhere: the stream goes on on the next
        self.token: bytes | None = None
        self.has_token = asyncio.Event()
        self.answer: ResumeReplyParser | None = None
        self.continues = continues
        if resumed_from is not None:
            self.answer = ResumeReplyParser()
            self.parser = resumed_from.parser
            self.goodbyes = resumed_from.goodbyes

    def feed(self, data: bytes) -> None:
        answer = self.answer
        if answer is not None:
            try:
                outcome = answer.feed(data)
            except ResumeError as error:
                raise AssertionError(f"the server's answer to resume: {error.reason}") from None
            if outcome is None:
                return
            self.answer = None
            if isinstance(outcome, Refused) or not self.continues:
                self.parses = False  # (refused: it closes; elsewhere: the replay starts mid-frame)
                return
            data = answer.rest
        super().feed(data)

    def frame(self, frame: object) -> None:
        if isinstance(frame, ExtensionMessage) and frame.type == RESUME_TOKEN:
            self.token = frame.payload
            self.has_token.set()
        super().frame(frame)


class ResumeTarget(Target):
    def serve_options(self, directory: str) -> dict[str, Any]:
        return {"resume": Resume(session_timeout=0.5, buffer_bytes=64 * 1024)}

    def legit_options(self) -> dict[str, Any]:
        return {"resume": True}

    async def converse(self, head: int, chunks: list[wire_harness.Chunk], known: int) -> None:
        second: list[wire_harness.Chunk] = []
        if head & 4 and EOF in chunks:
            at = chunks.index(EOF)
            chunks, second = chunks[:at], chunks[at + 1 :]
        awaited = self.awaited()
        reader, writer = await within(self.open_peer(head), "the raw client to connect", WAIT, awaited)
        self.peer = first = _ResumingPeer(reader)
        lazy = bool(head & 2)
        if not head & 4:
            await self.write(first, writer, chunks, known, lazy=lazy)
            first.check()
            return
        offset = self.byte1 if self.byte1 < 128 else self.byte1 - 256

        async def resume() -> None:
            first.parses = False  # (its parser goes on with what the second transport replays)
            token = first.token or bytes([self.byte1]) * 16
            position = max(first.received + offset, 0)
            request = encode_resume_message(RESUME, encode_resume(token, position))
            reader, writer = await within(
                self.open_peer(head), "the raw client to connect again", WAIT, awaited
            )
            exact = offset == 0 and first.token is not None
            self.again = again = _ResumingPeer(reader, first, continues=exact)
            await self.write(again, writer, [request, *second], known, lazy=False)
            first.answering = again.answering = first.answering or again.answering  # (one goodbye list)
            again.check()

        if head & 8:  # the second transport once the first has the token, while it is still up
            writing = asyncio.create_task(self.write(first, writer, chunks, known, lazy=lazy))
            token = asyncio.create_task(first.has_token.wait())
            with contextlib.suppress(TimeoutError):
                async with Bound(WAIT, awaited):
                    await asyncio.wait({writing, token}, return_when=asyncio.FIRST_COMPLETED)
            token.cancel()
            await resume()
            await writing
        else:
            await self.write(first, writer, chunks, known, lazy=lazy)
            await resume()
        first.check()


def _resume_seeds() -> list[bytes]:
    resume = encode_resume_message(RESUME, encode_resume(bytes(16), 0))
    ack = encode_resume_message(RESUME_ACK, b"\x05")
    sub = encode(Subscribe(publisher="numbers", subscriber=1, initial_demand=2))
    big = encode(Subscribe(publisher="big", subscriber=2, initial_demand=1))
    more = encode(Request(subscriber=2, demand=1))
    return [
        bytes((0, 0)) + chunked(resume),  # a resume of no session, as the first bytes
        bytes((0, 0)) + chunked(resume[:5], resume[5:], HELLO),  # cut, then bytes after it
        bytes((1, 0)) + chunked(sub, ack, resume),  # a resume inside the session; an ack
        bytes((5, 0)) + chunked(sub, big) + bytes((EOF,)) + chunked(more, sub),  # break, resume
        bytes((5, 3)) + chunked(sub, big) + bytes((EOF,)) + chunked(more),  # at a later position
        bytes((5, 0xF0)) + chunked(big) + bytes((EOF,)) + chunked(more),  # at an earlier one
        bytes((13, 0)) + chunked(sub, big) + bytes((EOF,)) + chunked(more),  # while the first is up
        bytes((7, 0)) + chunked(big, more) + bytes((EOF,)) + chunked(sub),  # lazy: the buffer fills
        bytes((5, 0)) + fuzz_net._seeds()[4][2:] + bytes((EOF,)) + fuzz_net._seeds()[0][2:],
    ]


# -- TLS -------------------------------------------------------------------------------------------
class TlsTarget(Target):
    def address(self, directory: str) -> str:
        cert, key = f"{directory}/cert.pem", f"{directory}/key.pem"
        subprocess.run(
            [
                "openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                "-nodes", "-keyout", key, "-out", cert, "-days", "1", "-subj", "/CN=localhost",
                "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
            ],
            check=True,
            capture_output=True,
            timeout=30,
        )  # fmt: skip
        self.server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.server_ssl.load_cert_chain(cert, key)
        self.client_ssl = ssl.create_default_context(cafile=cert)
        return "tls://127.0.0.1:0"

    def serve_options(self, directory: str) -> dict[str, Any]:
        return {"ssl": self.server_ssl}

    def legit_options(self) -> dict[str, Any]:
        return {"ssl": self.client_ssl}

    def prepare(self, head: int, chunks: list[wire_harness.Chunk]) -> list[wire_harness.Chunk]:
        return chunks if head & 4 else super().prepare(head, chunks)

    async def open_peer(self, head: int) -> tuple[Reader, Writer]:
        host, _, port = self.url.removeprefix("tls://").rpartition(":")
        if head & 4:  # garbage instead of a ClientHello
            return await asyncio.open_connection(host, int(port))
        return await asyncio.open_connection(
            host, int(port), ssl=self.client_ssl, server_hostname="localhost"
        )

    def parses_output(self, head: int) -> bool:
        return not head & 4

    def expected(self, context: dict[str, Any]) -> bool:
        """A failed TLS handshake, which asyncio reports in debug mode (``-X dev``) only."""
        return context.get("message") == "Error on transport creation for incoming connection" and isinstance(
            context.get("exception"), OSError
        )


def _client_hello() -> bytes:
    """A real ClientHello record (what a TLS client writes first)."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


def _tls_seeds() -> list[bytes]:
    hello = _client_hello()
    return [
        *fuzz_net._seeds(),
        bytes((4, 0)) + chunked(hello),
        bytes((4, 0)) + chunked(hello[:5], hello[5:], HELLO),
        bytes((4, 0)) + chunked(HELLO),  # RS.io where TLS was expected
    ]


# -- WebSocket -----------------------------------------------------------------------------------
class _WsReader:
    """A WebSocket client's messages as reads (an empty read once it is closed)."""

    def __init__(self, ws: Any) -> None:
        self.ws = ws

    async def read(self, n: int) -> bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            message = await self.ws.recv()
        except ConnectionClosed:
            return b""
        assert isinstance(message, bytes), "the server sent a text message"
        return message


class _WsWriter:
    """Each write one WebSocket message; ``mixed``: by the read's length, a text message, a
    fragmented one, or a ping and then the read as one message."""

    def __init__(self, ws: Any, mixed: bool) -> None:
        self.ws = ws
        self.mixed = mixed
        self.queued: list[bytes] = []
        self.pinged: set[bytes] = set()
        self.closing: asyncio.Task[None] | None = None

    def write(self, data: bytes) -> None:
        self.queued.append(data)

    async def drain(self) -> None:
        from websockets.exceptions import ConnectionClosed

        queued, self.queued = self.queued, []
        try:
            for data in queued:
                kind = len(data) % 4 if self.mixed else 0
                if kind == 1:
                    await self.ws.send(data.decode("latin-1"))
                elif kind == 2:
                    await self.ws.send([data[: len(data) // 2], data[len(data) // 2 :]])
                else:
                    if kind == 3 and data[:125] not in self.pinged:  # (one ping per payload at a time)
                        self.pinged.add(data[:125])
                        await self.ws.ping(data[:125])
                    await self.ws.send(data)
        except ConnectionClosed as closed:
            raise ConnectionResetError("the server closed the WebSocket") from closed

    def can_write_eof(self) -> bool:
        return False

    def write_eof(self) -> None:
        pass

    def close(self) -> None:
        if self.closing is None:
            self.closing = asyncio.ensure_future(self.ws.close())

    async def wait_closed(self) -> None:
        if self.closing is not None:
            await self.closing


def _upgrade(port: int) -> bytes:
    key = base64.b64encode(os.urandom(16)).decode()
    return (
        f"GET /rsio HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: rsio.v0\r\n\r\n"
    ).encode()


class WsTarget(Target):
    def address(self, directory: str) -> str:
        return "ws://127.0.0.1:0/rsio"

    def serve_options(self, directory: str) -> dict[str, Any]:
        return {}

    def prepare(self, head: int, chunks: list[wire_harness.Chunk]) -> list[wire_harness.Chunk]:
        variant = head >> 2 & 3
        if variant == 3:
            return chunks
        chunks = super().prepare(head, chunks)
        if variant == 2:
            chunks.insert(0, _upgrade(self._port()))
        return chunks

    def _port(self) -> int:
        return int(self.url.removeprefix("ws://").partition("/")[0].rpartition(":")[2])

    async def open_peer(self, head: int) -> tuple[Reader, Writer]:
        variant = head >> 2 & 3
        if variant >= 2:
            return await asyncio.open_connection("127.0.0.1", self._port())
        from websockets.asyncio.client import connect as ws_connect

        ws = await ws_connect(
            self.url, subprotocols=["rsio.v0"], compression=None, ping_interval=None, max_size=None
        )
        return _WsReader(ws), _WsWriter(ws, mixed=variant == 1)

    def parses_output(self, head: int) -> bool:
        return head >> 2 & 3 < 2


def _ws_seeds() -> list[bytes]:
    upgrade = _upgrade(80)
    plain = [bytes((s[0] & 3, *s[1:])) for s in fuzz_net._seeds()]
    return [
        *plain,
        *(bytes((s[0] | 4, *s[1:])) for s in plain[:3]),
        bytes((9, 0)) + chunked(b"\x82\x05hello", b"\x81\x83abc", b"\x88\x00"),  # unmasked frames
        bytes((9, 0)) + chunked(b"\x82\x85\x00\x00\x00\x00" + HELLO[:5], b"\x89\x80\x00\x00\x00\x00"),
        bytes((12, 0)) + chunked(upgrade),
        bytes((12, 0)) + chunked(upgrade[:40], upgrade[40:], HELLO),
        bytes((12, 0)) + chunked(upgrade.replace(b"GET", b"POST")),
    ]


MODES: dict[str, tuple[type[Target], Any]] = {
    "auth": (AuthTarget, _auth_seeds),
    "resume": (ResumeTarget, _resume_seeds),
    "tls": (TlsTarget, _tls_seeds),
    "ws": (WsTarget, _ws_seeds),
}


async def campaign(mode: str, runs: int, seed: int, seconds: float | None) -> tuple[int, int]:
    """``runs`` inputs (or as many as ``seconds`` allow) against one server of ``mode``."""
    kind, seeds = MODES[mode]
    async with kind().running() as target:

        async def reconnect() -> None:
            if target.legit.closed:
                target.legit = await target.connect_legit()

        return await fuzz_net.pure_loop(runs, seed, seconds, seeds(), target.run, reconnect)


async def replay(mode: str, *inputs: bytes) -> list[tuple[str, str]]:
    """``inputs``, one after the other, against one fresh server of ``mode``: their failures."""
    failures: list[tuple[str, str]] = []
    async with MODES[mode][0]().running() as target:
        for data in inputs:
            failures += [(what, f"{detail}, input {data.hex()}") for what, detail in await target.run(data)]
    return failures


def main() -> None:
    """``MODE --pure N [SEED [SECONDS]]``: a campaign; ``MODE --replay HEX``: one input."""
    logging.getLogger("rstreams").setLevel(logging.CRITICAL)  # (the hooks' refusals are logged)
    # Accepting paused for longer than a fifth of the bound: printed (an input that waits for
    # the server to accept fails if the pause outlasts WAIT; see README's Open problems).
    paused = logging.getLogger("rstreams.net.admission")
    paused.setLevel(logging.DEBUG)
    paused.addHandler(_LongPauses())
    paused.propagate = False
    library = _Count()  # the websockets library's own errors (its log, not an invariant of ours)
    logging.getLogger("websockets").addHandler(library)
    logging.getLogger("websockets").propagate = False
    if len(sys.argv) < 2 or sys.argv[1] not in MODES:
        sys.exit(f"usage: fuzz_deployed.py {{{','.join(MODES)}}} --pure N [SEED [SECONDS]] | --replay HEX")
    mode = sys.argv.pop(1)

    async def run_campaign(runs: int, seed: int, seconds: float | None) -> tuple[int, int]:
        return await campaign(mode, runs, seed, seconds)

    async def run_replay(data: bytes) -> list[tuple[str, str]]:
        return await replay(mode, data)

    fuzz_net.command_line(run_campaign, run_replay)
    if library.counts:
        print(f"logged by the websockets library: {dict(library.counts)}")


class _LongPauses(logging.Handler):
    """Prints the admission budget's pauses of accepting longer than ``WAIT / 5``, and its errors."""

    def emit(self, record: logging.LogRecord) -> None:
        args = record.args
        long = isinstance(args, tuple) and bool(args) and isinstance(args[0], float) and args[0] > WAIT / 5
        if long or record.levelno >= logging.ERROR:
            print(f"admission: {record.getMessage()}", flush=True)


class _Count(logging.Handler):
    """Counts log records at ERROR and above by their message."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.counts: dict[str, int] = {}

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.counts[message] = self.counts.get(message, 0) + 1


if __name__ == "__main__":
    main()
