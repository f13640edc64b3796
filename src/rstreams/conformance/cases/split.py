"""Packed and split elements (PROTOCOL.md §7, §8).

The monitor joins split elements per subscription and checks that a joined fixed-size
element has the declared size and that no subscription completes with an unfinished one.
"""

from __future__ import annotations

from rstreams.conformance._case import Context, Skip, case, check
from rstreams.conformance.cases._helpers import (
    DRAFT,
    expect_violation,
    open_with,
    range_elements,
    still_serving,
    subscribe,
)
from rstreams.wire import Cancel, OnNextLastPart, OnNextPacked, OnNextPart, encode

S7 = "PROTOCOL.md §7"
S8 = "PROTOCOL.md §8"
JOIN = (
    "The subscriber joins the parts' data in order of arrival and delivers one element when the "
    "onNextLastPart arrives."
)


def _register_large(size: int, n: int) -> None:
    @case(f"sp.large_{size}_x{n}", S8, f"{JOIN} (here: {n} element(s) of {size} bytes)", needs=("large",))
    async def _large(ctx: Context) -> None:
        peer = await open_with(ctx, subscribe(ctx.name("large", n=n, size=size), 1, n))
        view = await peer.completed(1)
        check(view.elements == range_elements(n, size=size), "the joined elements are wrong")

    _ = _large


for _size, _n in ((0, 2), (65_535, 1), (65_536, 1), (65_537, 1), (300_000, 1), (100_000, 4)):
    _register_large(_size, _n)


@case(
    "sp.large_is_split",
    "PROTOCOL.md §11",
    "Publishers SHOULD split elements above 64 KiB; receivers MUST accept split elements (here: 1 MiB).",
    needs=("large",),
)
async def _is_split(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("large", n=1, size=1 << 20), 1, 1))
    view = await peer.completed(1)
    parts = [f for f in view.frames if isinstance(f, OnNextPart | OnNextLastPart)]
    check(parts, "a 1 MiB element was sent whole, not split")
    check(isinstance(parts[-1], OnNextLastPart), "the last part is not an onNextLastPart")
    check(len({f.element_id for f in parts}) == 1, "the parts of one element carry different element ids")


@case(
    "sp.parts_interleaved_across_streams",
    S8,
    "rstreams splits every element larger than split_threshold and sends parts of different subscriptions "
    "round-robin, so one large element does not stall other streams (SHOULD for other implementations).",
    needs=("large",),
)
async def _interleaved(ctx: Context) -> None:
    name = ctx.name("large", n=1, size=2 << 20)
    peer = await open_with(ctx, subscribe(name, 1, 1), subscribe(name, 2, 1))
    for sid in (1, 2):
        view = await peer.completed(sid)
        check(view.elements == range_elements(1, size=2 << 20), f"subscriber {sid} joined a wrong element")
    order = [f.subscriber for f in peer.received if isinstance(f, OnNextPart | OnNextLastPart)]
    check(1 in order and 2 in order, "the 2 MiB elements were not split")

    def span(sid: int) -> list[int]:
        return order[order.index(sid) : len(order) - order[::-1].index(sid)]

    check(2 in span(1) or 1 in span(2), "the parts of two large elements were not interleaved")


@case(
    "sp.small_not_stalled",
    DRAFT,
    "A very large onNext message might significantly delay messages from other streams. Therefore, large "
    "stream elements can be optionally split across multiple messages (here: a small stream finishes "
    "while an 8 MiB element is in flight).",
    needs=("large", "range"),
)
async def _not_stalled(ctx: Context) -> None:
    peer = await open_with(
        ctx, subscribe(ctx.name("large", n=1, size=8 << 20), 1, 1), subscribe(ctx.name("range", n=3), 2, 3)
    )
    await peer.completed(2)
    check(peer.view(1).open, "the small stream waited for the whole 8 MiB element")
    view = await peer.completed(1)
    check(view.elements == range_elements(1, size=8 << 20), "the large element is wrong")


@case(
    "sp.cancel_mid_element",
    "PROTOCOL.md §8",
    "onError and cancel discard partial elements (here: cancel after the first part of an 8 MiB element; "
    "the acknowledgement ends the parts).",
    needs=("large", "range"),
)
async def _cancel_mid(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("large", n=1, size=8 << 20), 1, 1))
    view = peer.view(1)
    await peer.until(lambda: bool(view.parts) or not view.open, "the first part")
    if not view.open:
        raise Skip("the element was not split (splitting is optional)")
    await peer.send(Cancel(subscriber=1))
    await peer.terminal(1)
    await peer.send(subscribe(ctx.name("range", n=2), 1, 2))  # reuse the id: no stale part may arrive
    reused = await peer.completed(1)
    check(reused.elements == range_elements(2), "the reused id got stale parts")


@case(
    "sp.fixed_declares_size",
    S7,
    "When onSubscribe carries elementSize n > 0, every element of that "
    "subscription is exactly n bytes (docs/conformance.md: conformance/fixed declares its size).",
    needs=("fixed",),
)
async def _fixed_declares(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("fixed", n=5, size=12), 1, 5))
    view = await peer.completed(1)
    check(view.element_size == 12, f"onSubscribe declared elementSize {view.element_size}, expected 12")
    check(view.elements == range_elements(5, size=12), "wrong fixed-size elements")


@case(
    "sp.fixed_packed",
    S7,
    "The publisher MAY then also send onNextPacked with count >= 1 elements as count x n raw bytes; it is "
    "equivalent to count onNext messages (skipped if the endpoint never packs).",
    needs=("fixed",),
)
async def _packed(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("fixed", n=1000, size=8), 1, 1000))
    view = await peer.completed(1)
    check(view.elements == range_elements(1000), "wrong fixed-size elements")
    if not any(isinstance(f, OnNextPacked) for f in view.frames):
        raise Skip("the endpoint sent no onNextPacked (packing is optional)")


def _register_fixed(size: int, n: int, label: str) -> None:
    @case(
        f"sp.fixed_{size}_x{n}",
        S7,
        f"A split fixed-size element (§8) must join to exactly n bytes ({label}).",
        needs=("fixed",),
    )
    async def _fixed(ctx: Context) -> None:
        peer = await open_with(ctx, subscribe(ctx.name("fixed", n=n, size=size), 1, n))
        view = await peer.completed(1)
        check(view.elements == range_elements(n, size=size), "wrong fixed-size elements")

    _ = _fixed


for _size, _n, _label in (
    (1, 300, "1-byte elements"),
    (40_000, 3, "larger than half a pack"),
    (100_000, 2, "larger than the split threshold"),
):
    _register_fixed(_size, _n, _label)


def _register_foreign_part(name: str, data: bytes, label: str) -> None:
    @case(
        f"sp.client_{name}",
        "PROTOCOL.md §10",
        f"onNext* ... for an id we do not have open is a connection error (here: the client sends {label})",
    )
    async def _foreign(ctx: Context) -> None:
        await expect_violation(ctx, data)

    _ = _foreign


for _name, _data, _label in (
    ("part_unknown", encode(OnNextPart(subscriber=3, element_id=0, data=b"ab")), "an onNextPart"),
    (
        "last_part_unknown",
        encode(OnNextLastPart(subscriber=3, element_id=0, data=b"ab")),
        "an onNextLastPart",
    ),
    ("packed_unknown", b"\x09\x03\x01\x00", "an onNextPacked"),
):
    _register_foreign_part(_name, _data, _label)


@case(
    "sp.large_then_more",
    S8,
    "Elements are delivered in the order of their last parts (here: a large element between small ones "
    "of the same stream keeps its place).",
    needs=("large",),
)
async def _order(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("large", n=3, size=150_000), 1, 3))
    view = await peer.completed(1)
    check(view.elements == range_elements(3, size=150_000), "split elements out of order")
    await still_serving(ctx)
