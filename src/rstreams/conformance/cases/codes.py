"""Extensions content-types, metadata and error-codes (PROTOCOL.md §17-§19): each qualifier right before
the message it qualifies (onSubscribe, subscribe, onError), none when not negotiated, malformed
ones refused.

Skipped when the endpoint's serverHello does not list the extension's id (4, 5, 6).
"""

from __future__ import annotations

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
from rstreams.wire import ExtensionMessage, OnError, OnSubscribe, Request

ERROR_CODES = 6
ERROR_CODE, GOODBYE_CODE = 0x98, 0x99
S191, S192 = "PROTOCOL.md §19.1", "PROTOCOL.md §19.2"
UNKNOWN = "conformance/no-such-publisher"


async def _with_codes(ctx: Context) -> Peer:
    return await with_extension(ctx, ERROR_CODES, "error-codes")


def _code_before_on_error(peer: Peer, sid: int) -> int | None:
    """The code of the errorCode right before the onError for ``sid``, or None if there is none."""
    frames = peer.received
    at = next(i for i, f in enumerate(frames) if isinstance(f, OnError) and f.subscriber == sid)
    before = frames[at - 1] if at else None
    if not isinstance(before, ExtensionMessage) or before.type != ERROR_CODE:
        return None
    expected_head = varint(sid)
    check(
        before.payload.startswith(expected_head),
        f"errorCode {before.payload.hex()} names another id than {sid}",
    )
    try:
        value, end = read_varint(before.payload, len(expected_head))
    except ValueError:
        end = -1
    check(end == len(before.payload), f"errorCode payload {before.payload.hex()} is not two varints")
    return value


@case(
    "ex.codes_unknown_publisher",
    S192,
    "2 unknown publisher: no publisher has the name (§5.5); sent as an errorCode adjacent to, and right "
    "before, the onError it qualifies (§19.1).",
)
async def _unknown(ctx: Context) -> None:
    peer = await _with_codes(ctx)
    await peer.send(subscribe(UNKNOWN, 1, 1))
    await peer.failed(1)
    check(_code_before_on_error(peer, 1) == 2, "the refusal of an unknown name does not carry code 2")
    peer.abort()


@case(
    "ex.codes_invalid_demand",
    S192,
    "5 invalid demand: request(0), request(>= 2**63) or initialDemand >= 2**63 (§6.2).",
    needs=("never",),
)
async def _invalid_demand(ctx: Context) -> None:
    peer = await _with_codes(ctx)
    await peer.send(subscribe(ctx.name("never"), 1, 0))
    await peer.subscribed(1)
    await peer.send(Request(subscriber=1, demand=0))
    await peer.failed(1)
    check(_code_before_on_error(peer, 1) == 5, "the rule 3.9 onError does not carry code 5")
    peer.abort()


@case(
    "ex.codes_not_negotiated",
    S191,
    "Both are sent only while the extension is active (both hellos list id 6, §4.4), so never before the "
    "peer's hello.",
)
async def _not_negotiated(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.send(subscribe(UNKNOWN, 1, 1))
    await peer.failed(1)
    codes = [
        f for f in peer.received if isinstance(f, ExtensionMessage) and f.type in (ERROR_CODE, GOODBYE_CODE)
    ]
    check(not codes, "an errorCode was sent on a connection whose clientHello does not list error-codes")
    peer.abort()


@case(
    "ex.codes_malformed",
    S191,
    "A payload that is not exactly its fields (a truncated or non-minimal varint, trailing bytes) ... is a "
    "connection error citing §19.1 (here: a goodbyeCode with a trailing byte).",
)
async def _malformed(ctx: Context) -> None:
    peer = await _with_codes(ctx)
    await peer.send(extension_message(GOODBYE_CODE, b"\x00\x00"))
    await expect_goodbye_citing(peer, "19.1")
    await still_serving(ctx)


@case(
    "ex.codes_normal_stream_unchanged",
    S191,
    "The text is unchanged ... a peer without the extension sees exactly what it saw before (here: a "
    "stream with the extension active has no extension message in it).",
    needs=("range",),
)
async def _unchanged(ctx: Context) -> None:
    peer = await _with_codes(ctx)
    await peer.send(subscribe(ctx.name("range", n=3), 1, 3))
    view = await peer.completed(1)
    check(view.elements == range_elements(3), "the stream's elements differ with error-codes active")
    check(
        not [f for f in peer.received if isinstance(f, ExtensionMessage) and f.type == ERROR_CODE],
        "an errorCode was sent on a stream that did not fail",
    )
    check(any(isinstance(f, OnSubscribe) for f in peer.received), "no onSubscribe")
    peer.abort()


# -- content types (§17) ---------------------------------------------------------------------------
CONTENT_TYPES, CONTENT_TYPE = 4, 0x90
S171 = "PROTOCOL.md §17.1"


@case(
    "ex.ct_adjacent",
    S171,
    "contentType is a qualifier ... adjacent to and right before the onSubscribe it qualifies (nothing "
    "written between them), never alone (here: conformance/fixed, skipped if it states no type).",
    needs=("fixed",),
)
async def _ct_adjacent(ctx: Context) -> None:
    peer = await with_extension(ctx, CONTENT_TYPES, "content-types")
    await peer.send(subscribe(ctx.name("fixed", n=2), 1, 2))
    await peer.completed(1)
    frames = peer.received
    at = [i for i, f in enumerate(frames) if isinstance(f, ExtensionMessage) and f.type == CONTENT_TYPE]
    if not at:
        raise Skip("the endpoint states no content type for conformance/fixed")
    check(len(at) == 1, f"{len(at)} contentType messages for one subscription")
    after = frames[at[0] + 1] if at[0] + 1 < len(frames) else None
    check(
        isinstance(after, OnSubscribe) and after.subscriber == 1,
        f"the contentType is followed by {type(after).__name__}, not by onSubscribe(1)",
    )
    payload = frames[at[0]].payload  # type: ignore[union-attr]
    check(payload[:1] == b"\x01" and b"/" in payload[1:], f"contentType payload {payload!r} is malformed")
    peer.abort()


@case(
    "ex.ct_not_negotiated",
    S171,
    "Sent only while the extension is active (both hellos list id 4) ... A publisher that has no type to "
    "state sends onSubscribe alone (here: a clientHello without id 4).",
    needs=("fixed",),
)
async def _ct_not_negotiated(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.send(subscribe(ctx.name("fixed", n=2), 1, 2))
    view = await peer.completed(1)
    check(view.elements == range_elements(2), "conformance/fixed did not send its two elements")
    sent = [f for f in peer.received if isinstance(f, ExtensionMessage) and f.type == CONTENT_TYPE]
    check(not sent, "a contentType was sent to a client whose hello does not list content-types")
    peer.abort()


# -- metadata (§18) --------------------------------------------------------------------------------
METADATA, SUBSCRIBE_METADATA = 5, 0x94
S181 = "PROTOCOL.md §18.1"


async def _with_metadata(ctx: Context) -> Peer:
    return await with_extension(ctx, METADATA, "metadata")


def _entry(key: str, value: bytes) -> bytes:
    return varint(len(key)) + key.encode() + varint(len(value)) + value


@case(
    "ex.md_served",
    S181,
    "The receiver applies the entries to that subscribe only (here: a traceparent and an empty value on "
    "a subscribe to conformance/range, which is served as without them).",
    needs=("range",),
)
async def _md_served(ctx: Context) -> None:
    peer = await _with_metadata(ctx)
    trace = b"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    payload = varint(1) + varint(2) + _entry("traceparent", trace) + _entry("x-empty", b"")
    await peer.send(extension_message(SUBSCRIBE_METADATA, payload), subscribe(ctx.name("range", n=3), 1, 3))
    view = await peer.completed(1)
    check(view.elements == range_elements(3), "a subscribe with metadata was not served like one without")
    peer.abort()


@case(
    "ex.md_malformed",
    S181,
    "A payload that is not exactly this form (... a key that breaks the rules above or appears twice ...) "
    "is a connection error citing §18.1 (here: the key `x` twice).",
)
async def _md_malformed(ctx: Context) -> None:
    peer = await _with_metadata(ctx)
    payload = varint(1) + varint(2) + _entry("x", b"1") + _entry("x", b"2")
    await peer.send(extension_message(SUBSCRIBE_METADATA, payload), subscribe(UNKNOWN, 1, 1))
    await expect_goodbye_citing(peer, "18.1")
    await still_serving(ctx)
