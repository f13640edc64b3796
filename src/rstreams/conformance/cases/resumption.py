"""Session resumption (PROTOCOL.md §16, extension 3); every case is skipped unless the endpoint lists id 3.

The driver plays a resuming client by hand: it counts the bytes of the server's stream it
has read (the position, §16.3) and keeps every byte it wrote, so that after dropping the
connection it can send ``resume(token, position)`` on a new one, replay what the server
lacks and carry on reading with the same parser, as a real client's core would.
"""

from __future__ import annotations

import os

from rstreams.conformance._case import CaseFailure, Context, Skip, case, check
from rstreams.conformance._peer import Peer
from rstreams.conformance._transport import RawTransport, client_ssl_context, open_raw
from rstreams.conformance.cases._helpers import range_elements, subscribe
from rstreams.wire import ClientHello, ExtensionMessage, Request
from rstreams.wire._resume import (
    MAX_TOKEN_SIZE,
    RESUME,
    RESUME_ACK,
    RESUME_TOKEN,
    Refused,
    Resumed,
    ResumeError,
    ResumeReplyParser,
    decode_position,
    encode_message,
    encode_resume,
)
from rstreams.wire.extensions import RESUME as RESUME_EXTENSION

S161 = "PROTOCOL.md §16.1"
S163 = "PROTOCOL.md §16.3"
S164 = "PROTOCOL.md §16.4"


class _Counting:
    """A RawTransport counting what it read (our position in the server's stream), keeping what it wrote."""

    def __init__(self, inner: RawTransport, *, received: int = 0, sent: bytearray | None = None) -> None:
        self.inner = inner
        self.half_close = inner.half_close
        self.local_address: str = getattr(inner, "local_address", "")  # newer RawTransports have it
        self.received = received
        self.sent = sent if sent is not None else bytearray()
        self.first = b""  # bytes already read from ``inner`` (after the resume answer), handed out first

    async def write(self, data: bytes) -> None:
        self.sent += data
        await self.inner.write(data)

    async def read(self) -> bytes:
        if self.first:
            data, self.first = self.first, b""
        else:
            data = await self.inner.read()
        self.received += len(data)
        return data

    async def write_eof(self) -> None:
        await self.inner.write_eof()

    def abort(self) -> None:
        self.inner.abort()


async def _session(ctx: Context) -> tuple[Peer, _Counting, bytes]:
    """A connection offering extension 3; Skip unless the server lists it; returns the token."""
    peer = await ctx.open(hello=False)
    counting = _Counting(peer.raw)
    peer.raw = counting
    await peer.send(ClientHello(extensions=(RESUME_EXTENSION.id,)))
    await peer.hello()
    hello = peer.monitor.server_hello
    if hello is None or RESUME_EXTENSION.id not in hello.extensions:
        raise Skip("the endpoint does not offer extension resume (id 3)")
    await peer.until(lambda: _token(peer) is not None, "resumeToken (PROTOCOL.md §16.1)")
    token = _token(peer)
    assert token is not None
    check(
        1 <= len(token) <= MAX_TOKEN_SIZE,
        f"resumeToken of {len(token)} bytes; a token is 1 to {MAX_TOKEN_SIZE} bytes (§16.2)",
    )
    return peer, counting, token


def _token(peer: Peer) -> bytes | None:
    for frame in peer.monitor.other:
        if isinstance(frame, ExtensionMessage) and frame.type == RESUME_TOKEN:
            return frame.payload
    return None


async def _open_raw(ctx: Context) -> RawTransport:
    o = ctx.options
    secure = ctx.url.startswith(("tls:", "wss:"))
    return await open_raw(
        ctx.url,
        timeout=o.timeout,
        ssl=client_ssl_context(o.cafile, o.certfile, o.keyfile, insecure=o.insecure) if secure else None,
        server_name=o.server_name,
    )


async def _ask(ctx: Context, token: bytes, position: int) -> tuple[RawTransport, Resumed | Refused, bytes]:
    """Open a new transport, send resume(token, position), read the answer (and the bytes after it)."""
    raw = await _open_raw(ctx)
    await raw.write(encode_message(RESUME, encode_resume(token, position)))
    parser = ResumeReplyParser()
    while True:
        data = await raw.read()
        check(data, "the server closed the transport without answering resume (§16.3)")
        try:
            outcome = parser.feed(data)
        except ResumeError as error:
            raise CaseFailure(f"the answer to resume is malformed: {error.reason}") from error
        if outcome is not None:
            return raw, outcome, parser.rest


@case(
    "rs.token",
    S161,
    "The server then sends resumeToken once, as soon as it has read the clientHello; the token "
    "names the session.",
)
async def _token_sent(ctx: Context) -> None:
    await _session(ctx)


@case(
    "rs.unknown_token",
    S163,
    "unknown or expired: resumeRefused(reason), then it closes the transport",
)
async def _unknown_token(ctx: Context) -> None:
    await _session(ctx)  # skips unless offered
    raw, outcome, _ = await _ask(ctx, os.urandom(16), 0)
    check(isinstance(outcome, Refused), f"resume with an unknown token was answered with {outcome!r}")
    while await raw.read():  # then the transport closes
        pass
    raw.abort()


@case(
    "rs.replay_continues",
    S163,
    "Then each endpoint writes its own stream from the position the other one reported ... "
    "Each endpoint feeds what it receives to the same protocol core as before, which continues "
    "parsing where it stopped.",
    needs=("range",),
)
async def _replay_continues(ctx: Context) -> None:
    peer, counting, token = await _session(ctx)
    await peer.send(subscribe(ctx.name("range", n=60), 1, 20))
    await peer.elements(1, 20)
    counting.abort()  # the transport breaks; the session lives on at the server
    raw, outcome, rest = await _ask(ctx, token, counting.received)
    check(isinstance(outcome, Resumed), f"resume of a live session was answered with {outcome!r}")
    assert isinstance(outcome, Resumed)
    check(
        outcome.position <= len(counting.sent),
        f"resumed({outcome.position}) is beyond the {len(counting.sent)} bytes we sent (§16.3)",
    )
    await raw.write(bytes(counting.sent[outcome.position :]))
    resumed = _Counting(raw, received=counting.received, sent=counting.sent)
    resumed.first = rest
    peer.raw = resumed
    await peer.send(Request(subscriber=1, demand=40))
    view = await peer.completed(1)
    check(
        view.elements == range_elements(60),
        f"after resuming, subscriber 1 got {len(view.elements)} elements, not 0..59 exactly once in order",
    )


@case(
    "rs.position_beyond",
    S163,
    "known, but position outside what it can replay: resumeRefused(reason); the session cannot "
    "continue and ends on the server",
)
async def _position_beyond(ctx: Context) -> None:
    _, counting, token = await _session(ctx)
    counting.abort()
    raw, outcome, _ = await _ask(ctx, token, counting.received + 1000)
    check(isinstance(outcome, Refused), f"resume claiming unsent bytes was answered with {outcome!r}")
    raw.abort()
    raw, outcome, _ = await _ask(ctx, token, counting.received)
    check(isinstance(outcome, Refused), f"the refused session could still be resumed: {outcome!r}")
    raw.abort()


@case(
    "rs.acknowledges",
    S164,
    "resumeAck(position) tells the peer that everything before position has been received ... "
    "otherwise shortly after anything arrived",
    needs=("range",),
)
async def _acknowledges(ctx: Context) -> None:
    peer, counting, _ = await _session(ctx)
    await peer.send(subscribe(ctx.name("range", n=5), 1, 5))
    await peer.completed(1)

    def acked() -> int:
        positions = [
            decode_position(f.payload, "resumeAck")
            for f in peer.monitor.other
            if isinstance(f, ExtensionMessage) and f.type == RESUME_ACK
        ]
        return max(positions, default=-1)

    await peer.until(lambda: acked() >= len(counting.sent), "resumeAck of everything we sent (§16.4)")
    check(acked() == len(counting.sent), f"resumeAck({acked()}) beyond the {len(counting.sent)} bytes sent")


def _register_reserved(code: int) -> None:
    @case(
        f"rs.reserved_type_0x{code:02x}",
        "PROTOCOL.md §4.4",
        "If the type is one that its extension owns but reserves (defines no message for yet), it ends the "
        f"connection the same way, even though the extension is active (here: 0x{code:02X} of resume).",
    )
    async def _reserved(ctx: Context) -> None:
        peer, _, _ = await _session(ctx)
        await peer.send(encode_message(code, b"x"))
        bye = await peer.goodbye_then_close()
        reason = bye.reason if bye is not None else ""
        check("4.4" in reason, f"the goodbye {reason!r} does not cite §4.4")
        check(f"0x{code:02x}" in reason.lower(), f"the goodbye {reason!r} does not name type 0x{code:02X}")


for _code in sorted(RESUME_EXTENSION.reserved):
    _register_reserved(_code)
