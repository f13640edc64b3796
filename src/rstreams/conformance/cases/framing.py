"""Framing: type bytes, varints, strings, lengths, truncation, and any chunking (PROTOCOL.md §2, §3)."""

from __future__ import annotations

import random

from rstreams.conformance._case import Context, case, check
from rstreams.conformance.cases._helpers import (
    DRAFT,
    expect_violation,
    open_with,
    range_elements,
    subscribe,
    varint,
)
from rstreams.wire import ClientHello, Goodbye, Request, encode

S21 = "PROTOCOL.md §2.1"
S22 = "PROTOCOL.md §2.2"
S3 = "PROTOCOL.md §3"
S93 = "PROTOCOL.md §9.3"
UNKNOWN_TYPE = (
    "A receiver cannot skip a message it does not understand (there is no length prefix), so an "
    "unknown or reserved type byte is a framing error that ends the connection."
)
TRUNCATED = "The transport ending inside a message (a truncated frame) is a framing error."
MINIMAL = (
    "Encodings MUST be minimal: a multi-byte varint whose last byte is 0x00 (e.g. 80 00 for 0) is a "
    "framing error."
)
OVERLONG = (
    "A varint longer than 10 bytes, or a 10th byte greater than 0x01 (a value >= 2**64), is a framing error."
)
CHECKED_AT_ONCE = (
    "The receiver checks every length against its limits (§11) as soon as it has read the length, "
    "before the bytes arrive."
)


def _register_type_byte(code: int, label: str) -> None:
    @case(f"fr.type_0x{code:02x}", S3, f"{UNKNOWN_TYPE} (here: {label})")
    async def _type(ctx: Context) -> None:
        await expect_violation(ctx, bytes((code, 1, 1, 1)))


for _code, _label in (
    (0x00, "0x00, reserved, never valid"),
    (0x0E, "0x0E, the first code reserved for later core versions"),
    (0x7F, "0x7F, the last reserved core code"),
    (0x80, "0x80, an extension message type that was not negotiated"),
    (0xFF, "0xFF, an extension message type that was not negotiated"),
):
    _register_type_byte(_code, _label)


@case(
    "fr.unknown_type_after_valid_frames", S3, UNKNOWN_TYPE + " (here: after valid frames in the same write)"
)
async def _after_valid(ctx: Context) -> None:
    await expect_violation(ctx, encode(Request(subscriber=9, demand=1)), b"\x0e\x00")


def _register_truncation(name: str, data: bytes, label: str) -> None:
    @case(f"fr.truncated_{name}", S93, f"{TRUNCATED} (here: {label})")
    async def _truncated(ctx: Context) -> None:
        await expect_violation(ctx, data, eof=True)


for _name, _data, _label in (
    ("type_only", b"\x05", "a lone request type byte"),
    ("inside_varint", b"\x05\x81", "inside a varint"),
    ("inside_string", b"\x04\x10conf", "inside a publisher name"),
    ("before_demand", b"\x04\x01a\x01", "before subscribe's initialDemand"),
    ("inside_goodbye", b"\x03\x05by", "inside a goodbye reason"),
):
    _register_truncation(_name, _data, _label)


@case("fr.varint_11_bytes", S21, OVERLONG + " (here: an 11-byte demand)")
async def _varint_11(ctx: Context) -> None:
    await expect_violation(ctx, b"\x05\x01" + b"\xff" * 10 + b"\x01")


@case("fr.varint_10th_byte_over", S21, OVERLONG + " (here: 2**64, a 10th byte of 0x02)")
async def _varint_10th(ctx: Context) -> None:
    await expect_violation(ctx, b"\x05\x01" + b"\xff" * 9 + b"\x02")


@case("fr.varint_non_minimal_2", S21, MINIMAL + " (here: 80 00 as a cancel's id)")
async def _non_minimal_2(ctx: Context) -> None:
    await expect_violation(ctx, b"\x06\x80\x00")


@case("fr.varint_non_minimal_3", S21, MINIMAL + " (here: 81 80 00 as a request's demand)")
async def _non_minimal_3(ctx: Context) -> None:
    await expect_violation(ctx, b"\x05\x01\x81\x80\x00")


@case(
    "fr.varint_max_id",
    S21,
    "Every integer field is an unsigned base-128 varint ... Range 0 ... 2**64 - 1, at most 10 bytes "
    "(here: subscriber id 2**64 - 1).",
    needs=("range",),
)
async def _max_id(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=2), 2**64 - 1, 2))
    view = await peer.completed(2**64 - 1)
    check(view.elements == range_elements(2), "wrong elements on subscriber 2**64 - 1")


@case(
    "fr.varint_id_sizes",
    S21,
    "Sizes: 1 byte below 2**7, 2 below 2**14, 3 below 2**21, ..., 9 below 2**63, 10 above "
    "(here: subscriber ids at each boundary).",
    needs=("range",),
)
async def _id_sizes(ctx: Context) -> None:
    ids = [0, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**35, 2**63 - 1, 2**63]
    name = ctx.name("range", n=2)
    peer = await open_with(ctx, *(subscribe(name, sid, 2) for sid in ids))
    for sid in ids:
        view = await peer.completed(sid)
        check(view.elements == range_elements(2), f"wrong elements on subscriber {sid}")


@case("fr.invalid_utf8_name", S22, "Strict: invalid UTF-8, including encoded surrogates, is a framing error.")
async def _invalid_utf8(ctx: Context) -> None:
    await expect_violation(ctx, b"\x04\x02\xff\xfe\x01\x00")


@case(
    "fr.surrogate_utf8_name",
    S22,
    "Strict: invalid UTF-8, including encoded surrogates, is a framing error (here: ED A0 80).",
)
async def _surrogate(ctx: Context) -> None:
    await expect_violation(ctx, b"\x04\x03\xed\xa0\x80\x01\x00")


@case("fr.invalid_utf8_goodbye", S22, "Strict: invalid UTF-8 is a framing error (here: in a goodbye reason).")
async def _invalid_utf8_goodbye(ctx: Context) -> None:
    await expect_violation(ctx, b"\x03\x02\xc3\x28")


def _register_length(name: str, data: bytes, label: str) -> None:
    @case(f"fr.length_{name}", S22, f"{CHECKED_AT_ONCE} (here: {label}; the bytes never come)")
    async def _length(ctx: Context) -> None:
        await expect_violation(ctx, data)


for _name, _data, _label in (
    ("name_2_40", b"\x04" + varint(2**40), "a publisher name of 2**40 bytes"),
    ("reason_2_40", b"\x03" + varint(2**40), "a goodbye reason of 2**40 bytes"),
    ("on_next_2_31", b"\x08\x01" + varint(2**31), "an onNext element of 2 GiB"),
    ("on_next_part_2_31", b"\x0a\x01\x00" + varint(2**31), "an onNextPart of 2 GiB"),
    ("on_error_2_40", b"\x0d\x01" + varint(2**40), "an onError text of 2**40 bytes"),
):
    _register_length(_name, _data, _label)


@case(
    "fr.one_byte_at_a_time",
    "PROTOCOL.md §1",
    "A transport that is bidirectional, full-duplex, ordered, reliable and 8-bit clean ... frame "
    "boundaries need not line up with WebSocket message boundaries (here: every byte its own write).",
    needs=("range",),
)
async def _one_byte(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    name = ctx.name("range", n=5)
    await peer.send_in_pieces(
        ClientHello(), subscribe(name, 1, 2), Request(subscriber=1, demand=3), subscribe(name, 2, 5), size=1
    )
    for sid in (1, 2):
        view = await peer.completed(sid)
        check(view.elements == range_elements(5), f"wrong elements on subscriber {sid}")


@case(
    "fr.random_chunks",
    "PROTOCOL.md §1",
    "Frame boundaries need not line up with WebSocket message boundaries (here: random chunk sizes, seeded).",
    needs=("range",),
)
async def _random_chunks(ctx: Context) -> None:
    rng = random.Random(6)
    name = ctx.name("range", n=3)
    frames = [subscribe(name, sid, 3) for sid in range(1, 21)]
    peer = await ctx.open(hello=False)
    data = peer.prepare(ClientHello(), *frames)
    pos = 0
    while pos < len(data):
        size = rng.randint(1, 13)
        await peer.raw.write(data[pos : pos + size])
        pos += size
    for sid in range(1, 21):
        view = await peer.completed(sid)
        check(view.elements == range_elements(3), f"wrong elements on subscriber {sid}")


@case(
    "fr.many_frames_one_write",
    S3,
    "Messages are self-delimiting (here: a hello and 50 subscribes in a single write).",
    needs=("range",),
)
async def _many_one_write(ctx: Context) -> None:
    name = ctx.name("range", n=2)
    peer = await open_with(ctx, *(subscribe(name, sid, 2) for sid in range(1, 51)))
    for sid in range(1, 51):
        await peer.completed(sid)


@case(
    "fr.empty_writes",
    "PROTOCOL.md §1",
    "A binary WebSocket message carries any run of the byte stream: one or more messages, a part of one, "
    "or nothing, an empty WebSocket message being valid and meaning nothing; frame boundaries need not "
    "line up with WebSocket message boundaries (here: empty writes between frames, over WebSocket each an "
    "empty message).",
    needs=("range",),
)
async def _empty_writes(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.raw.write(b"")
    await peer.send(subscribe(ctx.name("range", n=2), 1, 0))
    await peer.raw.write(b"")
    await peer.send(Request(subscriber=1, demand=2))
    await peer.completed(1)


@case(
    "fr.frame_split_in_half",
    S3,
    "Every message is one type byte followed by its fields ... with no overall length prefix (here: "
    "each frame arrives in two writes cut in its middle).",
    needs=("range",),
)
async def _split_in_half(ctx: Context) -> None:
    peer = await ctx.open()
    name = ctx.name("range", n=4)
    for frame in (subscribe(name, 1, 1), Request(subscriber=1, demand=3)):
        peer.monitor.sent(frame)
        data = encode(frame)
        await peer.raw.write(data[: len(data) // 2])
        await peer.raw.write(data[len(data) // 2 :])
    view = await peer.completed(1)
    check(view.elements == range_elements(4), "wrong elements after frames split in half")


@case(
    "fr.goodbye_reason_unicode",
    S22,
    "A string is a varint byte length followed by that many bytes of UTF-8 (here: a non-ASCII goodbye "
    "reason, which must be answered).",
)
async def _goodbye_unicode(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.send(Goodbye(reason="tschüß ✓ 🙂"))
    await peer.goodbye_then_close()


@case(
    "fr.name_unicode",
    S22,
    "A string is a varint byte length followed by that many bytes of UTF-8 (here: a non-ASCII publisher "
    "name, refused as unknown, not as malformed).",
)
async def _name_unicode(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe("conformance/ünknown-✓", 1, 1))
    view = await peer.failed(1)
    check(not view.subscribed, "an unknown publisher was subscribed")


@case(
    "fr.packed_without_element_size",
    "PROTOCOL.md §7",
    "onNextPacked on a subscription whose elementSize is 0 (or before its onSubscribe) is a framing "
    "error (here: the client sends one).",
)
async def _packed_without_size(ctx: Context) -> None:
    await expect_violation(ctx, b"\x09\x01\x02\x00\x00")


@case(
    "fr.messages_self_delimiting",
    DRAFT,
    "Messages are self-delimiting, because their structure is known from their type (here: a request "
    "with 9- and 10-byte varints, then a subscribe in the same write).",
    needs=("range",),
)
async def _self_delimiting(ctx: Context) -> None:
    name = ctx.name("range", n=1)
    peer = await open_with(ctx, Request(subscriber=2**63 + 5, demand=2**63 - 1), subscribe(name, 1, 1))
    await peer.completed(1)
