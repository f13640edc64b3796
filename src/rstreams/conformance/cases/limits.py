"""Limits: many subscriptions, large elements, slow consumers, hostile lengths (PROTOCOL.md §6.3, §11)."""

from __future__ import annotations

import asyncio

from rstreams.conformance._case import Context, case, check
from rstreams.conformance.cases._helpers import (
    UNBOUNDED,
    expect_violation,
    open_with,
    range_elements,
    still_serving,
    subscribe,
    varint,
)
from rstreams.wire import Cancel, Goodbye

S11 = "PROTOCOL.md §11"
S63 = "PROTOCOL.md §6.3"
BOUNDED = (
    "An implementation MUST still bound its memory independently: a publisher writes only as fast as its "
    "transport drains, whatever demand it holds."
)


@case(
    "lm.many_subscriptions",
    "PROTOCOL.md §1",
    "Any number of subscriptions multiplexed by subscriber id (here: 500 on one connection).",
    needs=("range",),
)
async def _many(ctx: Context) -> None:
    name = ctx.name("range", n=2)
    peer = await open_with(ctx, *(subscribe(name, sid, 2) for sid in range(500)))
    for sid in range(500):
        await peer.completed(sid)


@case(
    "lm.max_subscriptions_refused",
    S11,
    "max_subscriptions: open subscriptions made by the peer ... exceeded: subscribe refused with onError "
    "(the limit is --max-subscriptions, default 1024).",
    needs=("never", "range"),
    timeout=60,
)
async def _max_refused(ctx: Context) -> None:
    limit = ctx.options.max_subscriptions
    name = ctx.name("never")
    peer = await open_with(ctx, *(subscribe(name, sid, 0) for sid in range(limit)))
    for sid in range(limit):
        await peer.subscribed(sid)
    await peer.send(subscribe(name, limit, 0))
    view = await peer.failed(limit)
    check(not view.subscribed, "the subscribe beyond the limit got onSubscribe")
    await peer.send(Cancel(subscriber=0))  # a slot is free once the cancel is acknowledged
    await peer.completed(0)
    await peer.send(subscribe(ctx.name("range", n=1), limit + 1, 1))
    await peer.completed(limit + 1)


@case(
    "lm.long_name_refused",
    S11,
    "max_name_length ... exceeded by the peer: subscribe refused with onError (here: a 5000-byte name; the "
    "connection continues).",
    needs=("range",),
)
async def _long_name(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range") + "?pad=" + "x" * 5000, 1, 1))
    view = await peer.failed(1)
    check(not view.subscribed, "a 5000-byte name was accepted")
    await peer.send(subscribe(ctx.name("range", n=1), 2, 1))
    await peer.completed(2)


def _register_big(label: str, size: int) -> None:
    @case(
        f"lm.element_{label}",
        S11,
        f"max_element_size 16 MiB: largest element received, whole or reassembled (here: {label}).",
        needs=("large",),
        timeout=60,
    )
    async def _big(ctx: Context) -> None:
        check(size <= ctx.options.max_element_size, "the element is above the endpoint's limit")
        peer = await open_with(ctx, subscribe(ctx.name("large", n=1, size=size), 1, 1))
        view = await peer.completed(1, timeout=ctx.options.timeout * 4)
        check(view.elements == range_elements(1, size=size), "the large element is wrong")

    _ = _big


for _label, _size in (("1mib", 1 << 20), ("8mib", 8 << 20), ("15mib", 15 << 20)):
    _register_big(_label, _size)


@case(
    "lm.many_large",
    S11,
    "Publishers SHOULD split elements above 64 KiB (here: 16 elements of 256 KiB).",
    needs=("large",),
)
async def _many_large(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("large", n=16, size=256 << 10), 1, 16))
    view = await peer.completed(1)
    check(view.elements == range_elements(16, size=256 << 10), "the large elements are wrong")


@case(
    "lm.slow_consumer_bounded",
    S63,
    BOUNDED + " (here: unbounded demand, the client stops reading; production must stall, checked with "
    "conformance/stats)",
    needs=("infinite", "stats"),
    timeout=60,
)
async def _slow(ctx: Context) -> None:
    tag = ctx.tag()
    size = 1024
    peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=tag, size=size), 1, UNBOUNDED))
    await peer.elements(1, 10)
    # Stop reading; wait until production stops growing.
    previous = -1
    stats = await ctx.stats(tag)
    for _ in range(40):
        await asyncio.sleep(0.1)  # not polling for an event: letting the server run into the stall
        stats = await ctx.stats(tag)
        if stats["pulled"] == previous:
            break
        previous = stats["pulled"]
    else:
        check(False, f"production did not stall while the client did not read: {stats}")
    produced = stats["pulled"] * (size + 8)
    check(produced <= 64 << 20, f"the server produced {produced} bytes for a consumer that reads nothing")
    # Read again: the stream resumes, in order, with nothing lost.
    resume = len(peer.view(1).elements) + 2000
    view = await peer.elements(1, resume)
    check(view.elements[:resume] == range_elements(resume, size=size), "elements lost or reordered")


@case(
    "lm.many_connections",
    "PROTOCOL.md §1",
    "Any number of subscriptions multiplexed by subscriber id (here: 30 connections at once, 200 elements "
    "each).",
    needs=("range",),
)
async def _connections(ctx: Context) -> None:
    name = ctx.name("range", n=200)

    async def one() -> None:
        peer = await open_with(ctx, subscribe(name, 1, 200))
        view = await peer.completed(1)
        check(view.elements == range_elements(200), "wrong elements on one of the connections")

    await asyncio.gather(*(one() for _ in range(30)))


@case(
    "lm.hostile_length_others_served",
    "PROTOCOL.md §2.2",
    "Because every length is checked when it is read, an endpoint never buffers more than max_element_size "
    "(plus a few header bytes) of one incomplete message, whatever a hostile length prefix claims (here: "
    "a 15 MiB onNext, half sent, while another connection is served).",
    needs=("range",),
)
async def _hostile_length(ctx: Context) -> None:
    hostile = await ctx.open()
    await hostile.send(b"\x08\x01" + varint(15 << 20) + bytes(1 << 20))
    await still_serving(ctx)
    await hostile.write_eof()
    await hostile.goodbye_then_close()


@case(
    "lm.unbounded_many_streams",
    "PROTOCOL.md §1",
    "Any number of subscriptions multiplexed by subscriber id (here: 50 endless streams of 1 KiB elements "
    "under unbounded demand on one connection; every one must progress, then goodbye).",
    needs=("infinite",),
)
async def _unbounded_many(ctx: Context) -> None:
    name = ctx.name("infinite", tag=ctx.tag(), size=1024)
    peer = await open_with(ctx, *(subscribe(name, sid, UNBOUNDED) for sid in range(1, 51)))
    for sid in range(1, 51):
        await peer.elements(sid, 100)
    await peer.send(Goodbye(reason="enough"))
    await peer.goodbye_then_close()


@case(
    "lm.element_over_limit",
    S11,
    "max_element_size: a length prefix ... above it: connection error (here: the client declares an onNext "
    "one byte above --max-element-size and sends nothing more).",
)
async def _over_limit(ctx: Context) -> None:
    await expect_violation(ctx, b"\x08\x01" + varint(ctx.options.max_element_size + 1))


@case(
    "lm.string_over_limit",
    S11,
    "max_string_length 64 KiB: a string length prefix above it: connection error (here: a publisher name "
    "declared as 1 MiB).",
)
async def _string_over(ctx: Context) -> None:
    await expect_violation(ctx, b"\x04" + varint(1 << 20))
    await still_serving(ctx)
