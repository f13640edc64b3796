"""Extension messages (PROTOCOL.md §20): credit granted, given back for dropped messages, enforced.

Messages are made by hand from PROTOCOL.md's wire form. The cases send to a handler name
no endpoint offers (a random one), so they need nothing from the endpoint but the
extension: such a message is dropped and its credit given back (§20.4). A case is skipped
when the serverHello does not list extension messages (id 7).
"""

from __future__ import annotations

import secrets

from rstreams.conformance._case import Context, Skip, case, check
from rstreams.conformance._peer import Peer
from rstreams.conformance.cases._helpers import (
    expect_goodbye_citing,
    extension_message,
    range_elements,
    read_varint,
    still_serving,
    subscribe,
    varint,
    with_extension,
)
from rstreams.wire import ExtensionMessage

MESSAGES = 7
MESSAGE, MESSAGE_CREDIT = 0x9C, 0x9D
S202, S203, S204 = "PROTOCOL.md §20.2", "PROTOCOL.md §20.3", "PROTOCOL.md §20.4"


def _message(name: str, body: bytes = b"") -> bytes:
    raw = name.encode()
    return extension_message(MESSAGE, varint(len(raw)) + raw + body)


def _nobody() -> str:
    return f"conformance/nobody-{secrets.token_hex(4)}"


def _granted(peer: Peer) -> int:
    """The credit the endpoint granted so far: the sum of its messageCredit counts."""
    total = 0
    for frame in peer.monitor.other:
        if isinstance(frame, ExtensionMessage) and frame.type == MESSAGE_CREDIT:
            count, _ = read_varint(frame.payload)
            total += count
    return total


async def _with_credit(ctx: Context) -> tuple[Peer, int]:
    """A connection listing extension messages, and the endpoint's first grant (skipped without it)."""
    peer = await with_extension(ctx, MESSAGES, "messages")
    await peer.until(lambda: _granted(peer) > 0, "a messageCredit")
    return peer, _granted(peer)


@case(
    "ex.msg_credit_granted",
    S203,
    "The receiver sends its first messageCredit as soon as it has received the peer's hello and the "
    "extension is active (here: a count of at least 1, well-formed).",
)
async def _credit_granted(ctx: Context) -> None:
    peer, granted = await _with_credit(ctx)
    check(granted >= 1, f"the first messageCredit grants {granted}")
    peer.abort()


@case(
    "ex.msg_unknown_handler",
    S204,
    "The receiver drops a message no handler has the name of, and grants its credit again; the connection "
    "goes on (here: the whole credit spent on unknown names, twice over).",
    needs=("range",),
)
async def _unknown_handler(ctx: Context) -> None:
    peer, granted = await _with_credit(ctx)
    batch = min(granted, 64)
    await peer.send(*(_message(_nobody(), b"x") for _ in range(batch)))
    await peer.until(lambda: _granted(peer) >= granted + batch, f"{batch} credits given back")
    await peer.send(*(_message(_nobody()) for _ in range(batch)))
    await peer.until(lambda: _granted(peer) >= granted + 2 * batch, f"{batch} more credits given back")
    await peer.send(subscribe(ctx.name("range", n=2), 1, 2))
    view = await peer.completed(1)
    check(view.elements == range_elements(2), "the connection did not go on after dropped messages")
    peer.abort()


@case(
    "ex.msg_beyond_credit",
    S203,
    "A message received while the sender has no credit left is a connection error: goodbye citing §20.3 "
    "(here: four times the first grant plus one, in one write; passes without a goodbye only if the "
    "endpoint had granted them all).",
)
async def _beyond_credit(ctx: Context) -> None:
    peer, granted = await _with_credit(ctx)
    count = 4 * granted + 1
    if count > 100_000:
        raise Skip(f"the endpoint grants {granted} messages at once: too many to exceed")
    await peer.send(*(_message(_nobody()) for _ in range(count)))
    bye = await peer.goodbye_then_close()
    if bye is None:
        check(_granted(peer) >= count, f"{count} messages on a credit of {_granted(peer)}, and no goodbye")
        return
    check("20.3" in bye.reason, f"the goodbye {bye.reason!r} does not cite §20.3")
    await still_serving(ctx)


@case(
    "ex.msg_credit_zero",
    S202,
    "A messageCredit whose count is 0 is a connection error citing §20.2.",
)
async def _credit_zero(ctx: Context) -> None:
    peer, _ = await _with_credit(ctx)
    await peer.send(extension_message(MESSAGE_CREDIT, b"\x00"))
    await expect_goodbye_citing(peer, "20.2")


@case(
    "ex.msg_malformed",
    S202,
    "A message whose name length runs past the payload is a connection error citing §20.2.",
)
async def _malformed(ctx: Context) -> None:
    peer, _ = await _with_credit(ctx)
    await peer.send(extension_message(MESSAGE, b"\x09abc"))
    await expect_goodbye_citing(peer, "20.2")
