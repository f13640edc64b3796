"""Extensions: their framing and activation (PROTOCOL.md §4.4), keepalive (§14) and auth (§15).

Extension messages are made by hand here from PROTOCOL.md's wire form (type byte, varint
length, payload), so the cases do not lean on this package's own encoders. A case that
needs an extension the endpoint does not list in its serverHello is skipped, and so are
the cases that need what a hello cannot tell: the endpoint's idle timeout
(``Options.idle_timeout``, ``--idle-timeout``) and a token it accepts (``Options.token``,
``--token``).
"""

from __future__ import annotations

import asyncio
import contextlib
import secrets

from rstreams.conformance._case import Context, Skip, case, check
from rstreams.conformance._peer import CaseFailure, Peer
from rstreams.conformance.cases._helpers import (
    expect_violation,
    range_elements,
    still_serving,
    subscribe,
    varint,
    with_extension,
)
from rstreams.conformance.cases._helpers import extension_message as message
from rstreams.wire import Cancel, ExtensionMessage, OnComplete, OnSubscribe

KEEPALIVE, AUTH = 1, 2
PING, PONG = 0x80, 0x81
AUTHENTICATE, AUTHENTICATED, SUBSCRIBE_CREDENTIALS = 0x84, 0x85, 0x86
S44, S141, S142 = "PROTOCOL.md §4.4", "PROTOCOL.md §14.1", "PROTOCOL.md §14.2"
S152, S153, S154, S155 = "PROTOCOL.md §15.2", "PROTOCOL.md §15.3", "PROTOCOL.md §15.4", "PROTOCOL.md §15.5"
NOT_ACTIVE = (
    "If the type's extension is not active, or no extension owns the type, it ends the connection with a "
    "goodbye naming the type and this section."
)


def token(text: str) -> bytes:
    """Credentials kind 1 (token), §15.1."""
    raw = text.encode()
    return b"\x01" + varint(len(raw)) + raw


def _is(frame: object, kind: int) -> bool:
    return isinstance(frame, ExtensionMessage) and frame.type == kind


def _received(peer: Peer, kind: int) -> list[ExtensionMessage]:
    return [f for f in peer.monitor.other if isinstance(f, ExtensionMessage) and f.type == kind]


async def _bye(ctx: Context, peer: Peer, *words: str, auth: bool = False) -> str:
    """Goodbye then close; the reason must contain each of ``words`` (case-insensitive).
    Then a new connection must be served (with ``auth``: one that authenticates)."""
    bye = await peer.goodbye_then_close()
    reason = bye.reason if bye is not None else ""
    for word in words:
        check(word.lower() in reason.lower(), f"the goodbye {reason!r} does not say {word!r}")
    if auth:
        await _still_serving_authenticated(ctx)
    else:
        await still_serving(ctx)
    return reason


async def _still_serving_authenticated(ctx: Context) -> None:
    """Like ``still_serving``, on a connection that authenticates (skipped without a token)."""
    if "range" not in ctx.available or not ctx.options.token:
        return
    peer = await ctx.open(extensions=(AUTH,))
    await peer.hello()
    await peer.send(message(AUTHENTICATE, token(ctx.options.token)), subscribe(ctx.name("range", n=3), 1, 3))
    view = await peer.completed(1)
    check(view.elements == range_elements(3), "a new connection was not served normally after the violation")
    peer.abort()


def _token_or_skip(ctx: Context) -> str:
    if not ctx.options.token:
        raise Skip("no token the endpoint accepts was given (--token)")
    return ctx.options.token


# -- framing and activation (§4.4) ----------------------------------------------------------------
@case(
    "ex.message_before_hello",
    S44,
    "An extension message received before the peer's hello is a handshake error (§4.1), like any other "
    "non-hello first message.",
)
async def _before_hello(ctx: Context) -> None:
    await expect_violation(ctx, message(PING, bytes(8)), hello=False)


@case("ex.inactive_type", S44, NOT_ACTIVE + " (here: a ping, with keepalive not in our clientHello)")
async def _inactive(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.hello()
    await peer.send(message(PING, bytes(8)))
    reason = await _bye(ctx, peer, "4.4")
    check("0x80" in reason.lower() or "128" in reason, f"the goodbye {reason!r} does not name type 0x80")


@case("ex.unknown_type", S44, NOT_ACTIVE + " (here: type 0xF7, which no extension owns)")
async def _unknown(ctx: Context) -> None:
    peer = await ctx.open(extensions=(KEEPALIVE,))
    await peer.hello()
    await peer.send(message(0xF7, b"x"))
    reason = await _bye(ctx, peer, "4.4")
    check("0xf7" in reason.lower() or "247" in reason, f"the goodbye {reason!r} does not name type 0xF7")


# -- keepalive (§14) -------------------------------------------------------------------------------
@case(
    "ex.ping_answered",
    S141,
    "An endpoint that receives a ping MUST answer it with a pong carrying the same 8 bytes. Pings need not "
    "be answered in order relative to other messages (here: two pings).",
)
async def _ping(ctx: Context) -> None:
    peer = await with_extension(ctx, KEEPALIVE, "keepalive")
    payloads = [secrets.token_bytes(8), secrets.token_bytes(8)]
    await peer.send(*(message(PING, p) for p in payloads))
    await peer.until(lambda: len(_received(peer, PONG)) >= 2, "two pongs")
    got = sorted(pong.payload for pong in _received(peer, PONG))
    check(got == sorted(payloads), f"the pongs carry {got!r}, the pings {sorted(payloads)!r}")


@case(
    "ex.ping_wrong_length",
    S141,
    "A ping or pong whose payload is not exactly 8 bytes is a connection error (goodbye citing §14.1).",
)
async def _ping_length(ctx: Context) -> None:
    peer = await with_extension(ctx, KEEPALIVE, "keepalive")
    await peer.send(message(PING, b"abc"))
    await _bye(ctx, peer, "14")
    check(not _received(peer, PONG), "a 3-byte ping was answered")


@case(
    "ex.unsolicited_pong_ignored",
    S141,
    "A pong that answers no outstanding ping is ignored.",
    needs=("range",),
)
async def _pong(ctx: Context) -> None:
    peer = await with_extension(ctx, KEEPALIVE, "keepalive")
    await peer.send(message(PONG, bytes(8)), subscribe(ctx.name("range", n=2), 1, 2))
    view = await peer.completed(1)
    check(view.elements == range_elements(2), "the connection did not go on after an unsolicited pong")


@case(
    "ex.idle_timeout",
    S142,
    "An endpoint MAY end a connection on which it has received nothing for a time of its choosing: it sends "
    "goodbye with the reason `idle timeout: nothing received for N s (PROTOCOL.md §14.2)` and closes.",
    idle_waits=1,
)
async def _idle(ctx: Context) -> None:
    idle = ctx.options.idle_timeout
    if idle is None:
        raise Skip("the endpoint's idle timeout is not known (--idle-timeout)")
    peer = await ctx.open()
    await peer.hello()
    start = asyncio.get_running_loop().time()
    bye = await peer.goodbye(timeout=idle + ctx.options.timeout)
    waited = asyncio.get_running_loop().time() - start
    check(waited >= idle * 0.9, f"the idle goodbye came after {waited:.2f} s, before the {idle:g} s timeout")
    check(
        "idle" in bye.reason.lower() and "14.2" in bye.reason,
        f"the goodbye {bye.reason!r} is not the idle one",
    )
    await peer.goodbye_then_close()


@case(
    "ex.pings_keep_alive",
    S142,
    "With keepalive active, a live peer is never idle: a ping (or the pong that answers ours) arrives at "
    "least every keepalive interval (here: pings only, every third of the idle timeout, until a connection "
    "opened after it and silent is closed as idle, and a quiet window more).",
    idle_waits=2,
)
async def _alive(ctx: Context) -> None:
    """The pinging connection is watched for as long as the endpoint takes to close a silent one
    opened after it (at least the idle timeout), then one quiet window more: an endpoint whose idle
    clock does not hear pings closes the pinging one first, however coarse its timer. The silent
    one's closing is not judged here (``ex.idle_timeout`` does); if it never comes, the watch ends
    after the idle timeout and --timeout, as that case's wait does."""
    idle = ctx.options.idle_timeout
    if idle is None:
        raise Skip("the endpoint's idle timeout is not known (--idle-timeout)")
    peer = await with_extension(ctx, KEEPALIVE, "keepalive")
    await peer.send(message(PING, secrets.token_bytes(8)))
    silent = await ctx.open()  # its hello reaches the endpoint after the pinging one's
    await silent.hello()
    loop = asyncio.get_running_loop()
    start = loop.time()
    closed = asyncio.ensure_future(_closed_at(silent, idle + ctx.options.timeout))
    try:
        end: float | None = None
        while end is None or loop.time() < end:
            if end is None and closed.done():
                end = max(closed.result(), start + idle) + ctx.options.quiet
            await peer.send(message(PING, secrets.token_bytes(8)))
            step = idle / 3 if end is None else min(idle / 3, end - loop.time())
            await peer.quiet(max(step, 0.0))
            _still_open(peer, loop.time() - start)
    finally:
        closed.cancel()


def _still_open(peer: Peer, after: float) -> None:
    bye = peer.monitor.goodbye
    said = f"goodbye {bye.reason!r}" if bye is not None else "its input ended without a goodbye"
    check(
        bye is None and not peer.eof,
        f"a peer sending pings was closed as idle ({said}, {after:.2f} s after a silent connection opened "
        "after it; PROTOCOL.md §14.2: a ping received is activity)",
    )


async def _closed_at(peer: Peer, timeout: float) -> float:  # noqa: ASYNC109
    """When ``peer``'s connection ended (its goodbye or end of input), or ``timeout`` seconds passed."""
    loop = asyncio.get_running_loop()
    with contextlib.suppress(CaseFailure):
        await peer.until(lambda: peer.monitor.goodbye is not None or peer.eof, "the idle goodbye", timeout)
    return loop.time()


# -- auth (§15) ----------------------------------------------------------------------------------
@case(
    "ex.auth_required",
    S152,
    "A server that requires authentication receives a clientHello without auth: goodbye `authentication "
    "required: ...` (skipped when the endpoint serves clients without auth).",
    needs=("range",),
)
async def _auth_required(ctx: Context) -> None:
    probe = await with_extension(ctx, AUTH, "auth")
    probe.abort()
    peer = await ctx.open()
    await peer.send(subscribe(ctx.name("range", n=1), 1, 1))
    await peer.until(
        lambda: peer.monitor.goodbye is not None or not peer.view(1).open, "goodbye or a stream end"
    )
    if peer.monitor.goodbye is None:
        raise Skip("authentication is optional at this endpoint: a client without auth was served")
    check(not peer.view(1).subscribed, "the endpoint answered a subscribe before refusing the connection")
    await _bye(ctx, peer, "authentication required", "15.2", auth=True)


@case(
    "ex.auth_malformed_credentials",
    S155,
    "Connection errors (goodbye citing §15.5): malformed credentials (here: credentials kind 9).",
)
async def _malformed(ctx: Context) -> None:
    peer = await with_extension(ctx, AUTH, "auth")
    await peer.send(message(AUTHENTICATE, b"\x09\x01x"))
    await _bye(ctx, peer, "15", auth=True)


@case(
    "ex.auth_authenticated_from_client",
    S155,
    "Connection errors (goodbye citing §15.5): ... authenticated received by a server.",
)
async def _authenticated_at_server(ctx: Context) -> None:
    peer = await with_extension(ctx, AUTH, "auth")
    await peer.send(message(AUTHENTICATED))
    await _bye(ctx, peer, "15", auth=True)


@case(
    "ex.auth_wrong_token",
    S153,
    "Refused: the server says goodbye `authentication failed (PROTOCOL.md §15.3)` and closes the connection; "
    "held subscribes end with it. Secrets never appear in goodbye reasons (§15.5).",
)
async def _wrong_token(ctx: Context) -> None:
    secret = "wrong-" + secrets.token_hex(8)
    held = [subscribe(ctx.name("range", n=1), 1, 1)] if "range" in ctx.available else []
    peer = await with_extension(ctx, AUTH, "auth", *held)  # held until the authenticate is settled
    await peer.send(message(AUTHENTICATE, token(secret)))
    reason = await _bye(ctx, peer, "authentication failed", auth=True)
    check(secret not in reason, "the goodbye repeats the secret")
    if "range" in ctx.available:
        check(not peer.view(1).subscribed, "a held subscribe was served although authentication failed")


@case(
    "ex.auth_accepted_before_answers",
    S153,
    "Accepted: the server sends `authenticated` (before any answer to a held subscribe), then processes the "
    "held subscribes with the connection's principal.",
    needs=("range",),
)
async def _accepted(ctx: Context) -> None:
    valid = _token_or_skip(ctx)
    # optimistic: the subscribe is held by the server
    peer = await with_extension(ctx, AUTH, "auth", subscribe(ctx.name("range", n=3), 1, 3))
    await peer.send(message(AUTHENTICATE, token(valid)))
    view = await peer.completed(1)
    check(view.elements == range_elements(3), "the held subscribe was not served after authentication")
    kinds = [
        "ok" if isinstance(f, ExtensionMessage) and f.type == AUTHENTICATED else "sub"
        for f in peer.received
        if isinstance(f, OnSubscribe) or (isinstance(f, ExtensionMessage) and f.type == AUTHENTICATED)
    ]
    check(kinds[:1] == ["ok"], f"authenticated did not come before the held subscribe's answer: {kinds}")


@case(
    "ex.auth_second_authenticate",
    S155,
    "Connection errors (goodbye citing §15.5): ... a second authenticate.",
)
async def _second(ctx: Context) -> None:
    valid = _token_or_skip(ctx)
    peer = await with_extension(ctx, AUTH, "auth")
    await peer.send(message(AUTHENTICATE, token(valid)))
    await peer.until(lambda: bool(_received(peer, AUTHENTICATED)), "authenticated")
    await peer.send(message(AUTHENTICATE, token(valid)))
    reason = await _bye(ctx, peer, "15", auth=True)
    check(valid not in reason, "the goodbye repeats the token")


@case(
    "ex.auth_subscribe_credentials_refused",
    S154,
    "A subscribe is refused with onError (and the connection goes on) when ... its subscription credentials "
    "were refused: `unauthenticated: ...`. Refusals name the publisher, never the credentials.",
    needs=("range",),
)
async def _subscribe_credentials(ctx: Context) -> None:
    valid = _token_or_skip(ctx)
    secret = "bad-" + secrets.token_hex(8)
    peer = await with_extension(ctx, AUTH, "auth")
    await peer.send(message(AUTHENTICATE, token(valid)))
    await peer.until(lambda: bool(_received(peer, AUTHENTICATED)), "authenticated")
    name = ctx.name("range", n=2)
    await peer.send(message(SUBSCRIBE_CREDENTIALS, varint(1) + token(secret)), subscribe(name, 1, 2))
    view = await peer.failed(1)
    error = view.error or ""
    check(not view.subscribed, "a subscribe with refused credentials was served")
    check("unauthenticated" in error.lower(), f"the refusal {error!r} does not say unauthenticated")
    check(secret not in error, "the refusal repeats the secret")
    await peer.send(subscribe(name, 2, 2))
    view = await peer.completed(2)
    check(view.elements == range_elements(2), "the connection did not go on after the refusal")


@case(
    "ex.auth_reserved_type",
    S44,
    "If the type is one that its extension owns but reserves (defines no message for yet), it ends the "
    "connection the same way, even though the extension is active (here: 0x87 of auth).",
)
async def _auth_reserved(ctx: Context) -> None:
    peer = await with_extension(ctx, AUTH, "auth")
    await peer.send(message(0x87, b"x"))
    reason = await _bye(ctx, peer, "4.4", auth=True)
    check("0x87" in reason.lower() or "135" in reason, f"the goodbye {reason!r} does not name type 0x87")


async def _held_and_cancelled(ctx: Context) -> Peer:
    """Subscribe and cancel at once, optimistically, on a connection offering auth; Skip without it."""
    held = (subscribe(ctx.name("range", n=3), 1, 3), Cancel(subscriber=1))
    return await with_extension(ctx, AUTH, "auth", *held)


@case(
    "ex.auth_held_cancel_waits",
    S153,
    "A cancel of a held subscribe is not answered at once either: its acknowledging onComplete (§5.4) is "
    "the answer to that subscribe, sent in its turn like the others (after `authenticated`).",
    needs=("range",),
)
async def _held_cancel(ctx: Context) -> None:
    valid = _token_or_skip(ctx)
    peer = await _held_and_cancelled(ctx)
    await peer.quiet()
    answers = peer.view(1).frames
    check(not answers, f"a held, cancelled subscribe was answered before authenticate: {answers}")
    await peer.send(message(AUTHENTICATE, token(valid)))
    await peer.terminal(1)
    order = [
        "ok" if isinstance(f, ExtensionMessage) else "answer"
        for f in peer.received
        if getattr(f, "subscriber", None) == 1 or _is(f, AUTHENTICATED)
    ]
    check(order[:1] == ["ok"], f"authenticated did not come before the cancelled subscribe's answer: {order}")
    check(isinstance(peer.view(1).terminal, OnComplete), "the cancel was not acknowledged with onComplete")


@case(
    "ex.auth_held_cancel_refused",
    S153,
    "Refused: the server says goodbye `authentication failed (PROTOCOL.md §15.3)`; held subscribes, "
    "cancelled or not, end with it unanswered.",
    needs=("range",),
)
async def _held_cancel_refused(ctx: Context) -> None:
    peer = await _held_and_cancelled(ctx)
    await peer.send(message(AUTHENTICATE, token("wrong-" + secrets.token_hex(8))))
    await _bye(ctx, peer, "authentication failed", auth=True)
    check(not peer.view(1).frames, "a held, cancelled subscribe was answered although authentication failed")
