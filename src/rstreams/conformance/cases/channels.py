"""Extension channels (PROTOCOL.md §21): opening, refusals, malformed messages, stray input; and
extension input-parts (§21.6), its split input: negotiated, malformed parts, stray parts.

Messages are made by hand from PROTOCOL.md's wire form. The cases need no channel from the
endpoint: they open channels under random names (refused with onError, §21.3) and check
what must be refused or ignored. A case is skipped when the serverHello does not list
extension channels (id 8), or, for the input-parts cases, input-parts (id 9).
"""

from __future__ import annotations

import secrets

from rstreams.conformance._case import Context, case, check
from rstreams.conformance._peer import Peer
from rstreams.conformance.cases._helpers import (
    expect_goodbye_citing,
    extension_message,
    range_elements,
    still_serving,
    subscribe,
    varint,
    with_extension,
)

CHANNELS, INPUT_PARTS = 8, 9
CHANNEL, INPUT_REQUEST, INPUT_NEXT, INPUT_COMPLETE, INPUT_NEXT_PART = 0xA0, 0xA1, 0xA3, 0xA4, 0xA6
S212, S213, S215, S216 = "PROTOCOL.md §21.2", "PROTOCOL.md §21.3", "PROTOCOL.md §21.5", "PROTOCOL.md §21.6"


def _frame(kind: int, sid: int, rest: bytes = b"") -> bytes:
    return extension_message(kind, varint(sid) + rest)


async def _with_channels(ctx: Context) -> Peer:
    return await with_extension(ctx, CHANNELS, "channels")


async def _refused_channel(peer: Peer, sid: int) -> None:
    """Open channel ``sid`` under a random name nobody offers and wait for its onError (§21.3)."""
    name = f"conformance/no-channel-{secrets.token_hex(4)}"
    await peer.send(_frame(CHANNEL, sid), subscribe(name, sid, 1))
    await peer.failed(sid)


@case(
    "ex.ch_unknown_channel",
    S213,
    "An unknown channel name is refused with onError; the connection goes on (here: a channel mark and "
    "a subscribe under a random name, then the input's inputComplete, dropped quietly).",
    needs=("range",),
)
async def _unknown(ctx: Context) -> None:
    peer = await _with_channels(ctx)
    await _refused_channel(peer, 1)
    await peer.send(_frame(INPUT_COMPLETE, 1), subscribe(ctx.name("range", n=2), 2, 2))
    view = await peer.completed(2)
    check(view.elements == range_elements(2), "the connection did not go on after a refused channel")
    peer.abort()


@case(
    "ex.ch_mark_taken_by_refused_subscribe",
    S213,
    "A channel mark qualifies only the subscribe right after it and is used up by it even when that "
    "subscribe is refused: the next subscribe with the id is a plain subscription (here: a marked "
    "subscribe with a 5000-byte name, refused by max_name_length, then a plain one to range on that id).",
    needs=("range",),
)
async def _mark_taken(ctx: Context) -> None:
    peer = await _with_channels(ctx)
    await peer.send(_frame(CHANNEL, 1), subscribe(ctx.name("range") + "?pad=" + "x" * 5000, 1, 1))
    view = await peer.failed(1)
    check(not view.subscribed, "a 5000-byte name was accepted")
    await peer.send(subscribe(ctx.name("range", n=2), 1, 2))
    view = await peer.completed(1)
    check(view.elements == range_elements(2), "the subscribe after the refused marked one was not plain")
    peer.abort()


@case(
    "ex.ch_second_mark",
    S213,
    "A second `channel` before the subscribe the first one qualifies is a connection error citing §21.3.",
)
async def _second_mark(ctx: Context) -> None:
    peer = await _with_channels(ctx)
    await peer.send(_frame(CHANNEL, 5), _frame(CHANNEL, 5))
    await expect_goodbye_citing(peer, "21.3")
    await still_serving(ctx)


@case(
    "ex.ch_request_zero",
    S212,
    "An inputRequest whose demand is 0 is a connection error citing §21.2.",
)
async def _request_zero(ctx: Context) -> None:
    peer = await _with_channels(ctx)
    await peer.send(_frame(INPUT_REQUEST, 1, b"\x00"))
    await expect_goodbye_citing(peer, "21.2")


@case(
    "ex.ch_reserved_type",
    "PROTOCOL.md §4.4",
    "A message of a reserved type of extension channels (here 0xA7) is a connection error citing §4.4, as "
    "for every extension.",
)
async def _reserved(ctx: Context) -> None:
    peer = await _with_channels(ctx)
    await peer.send(_frame(0xA7, 1))
    await expect_goodbye_citing(peer, "4.4")


@case(
    "ex.ch_stray_input",
    S215,
    "Input messages for an id with no channel are dropped quietly: they may have crossed its end.",
    needs=("range",),
)
async def _stray(ctx: Context) -> None:
    peer = await _with_channels(ctx)
    await peer.send(
        _frame(INPUT_NEXT, 9, b"late"), _frame(INPUT_COMPLETE, 9), subscribe(ctx.name("range", n=3), 1, 3)
    )
    view = await peer.completed(1)
    check(view.elements == range_elements(3), "the connection did not go on after stray input")
    peer.abort()


# -- input-parts (§21.6) ------------------------------------------------------------------------------
async def _with_input_parts(ctx: Context) -> Peer:
    return await with_extension(ctx, CHANNELS, "channels", also=((INPUT_PARTS, "input-parts"),))


@case(
    "ex.ch_parts_not_negotiated",
    S216,
    "An endpoint sends inputNextPart only when both hellos list id 9 ...: a peer that lists channels without "
    "it refuses 0xA6 (§4.4) (here: a clientHello listing 8 but not 9, then an inputNextPart).",
)
async def _ip_not_negotiated(ctx: Context) -> None:
    peer = await _with_channels(ctx)
    await peer.send(_frame(INPUT_NEXT_PART, 1, b"abc"))
    await expect_goodbye_citing(peer, "4.4")
    await still_serving(ctx)


@case(
    "ex.ch_parts_malformed",
    S212,
    "A payload of a truncated or non-minimal subscriber varint is a connection error citing §21.2 (here: an "
    "inputNextPart whose payload is one continuation byte).",
)
async def _ip_malformed(ctx: Context) -> None:
    peer = await _with_input_parts(ctx)
    await peer.send(extension_message(INPUT_NEXT_PART, b"\x80"))
    await expect_goodbye_citing(peer, "21.2")


@case(
    "ex.ch_parts_stray",
    S215,
    "Input messages for an id with no channel are dropped quietly (here: the parts of a split input element, "
    "inputNextPart twice then inputNext, for a channel refused as unknown; then a subscribe is served).",
    needs=("range",),
)
async def _ip_stray(ctx: Context) -> None:
    peer = await _with_input_parts(ctx)
    await _refused_channel(peer, 1)
    parts = (_frame(INPUT_NEXT_PART, 1, b"ab"), _frame(INPUT_NEXT_PART, 1, b""), _frame(INPUT_NEXT, 1, b"c"))
    await peer.send(*parts, _frame(INPUT_COMPLETE, 1), subscribe(ctx.name("range", n=3), 2, 3))
    view = await peer.completed(2)
    check(view.elements == range_elements(3), "the connection did not go on after stray input parts")
    peer.abort()
