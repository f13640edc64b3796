"""Demand: accounting, saturation, invalid demand, never beyond demand (PROTOCOL.md §6).

The monitor fails any case in which the server sends more elements than were granted;
these cases add the shapes of demand that are easy to get wrong.
"""

from __future__ import annotations

from rstreams.conformance._case import Context, case, check
from rstreams.conformance.cases._helpers import UNBOUNDED, open_with, range_elements, subscribe
from rstreams.wire import Request

S61 = "PROTOCOL.md §6.1"
S62 = "PROTOCOL.md §6.2"
S63 = "PROTOCOL.md §6.3"
NOT_BEYOND = "A publisher MUST NOT send more elements than the outstanding demand."
INVALID = (
    "request with demand 0, or with demand >= 2**63 (which is what a negative signed 64-bit integer looks "
    "like as an unsigned varint), breaks Reactive Streams rule 3.9. It is a per-subscription error: the "
    "publisher ends that subscription with onError citing rule 3.9 and the connection continues."
)


@case("dm.initial_zero", S63, NOT_BEYOND + " (here: initialDemand 0, then silence)", needs=("range",))
async def _initial_zero(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=10), 1, 0))
    await peer.subscribed(1)
    await peer.quiet()
    check(not peer.view(1).elements, "elements were sent without demand")


@case("dm.initial_exact", S63, NOT_BEYOND + " (here: initialDemand 3 of 10)", needs=("range",))
async def _initial_exact(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=10), 1, 3))
    view = await peer.elements(1, 3)
    await peer.quiet()
    check(view.elements == range_elements(3) and view.open, "expected exactly 3 elements and an open stream")


@case(
    "dm.requests_add_up",
    S61,
    "Each subscription has an outstanding demand at both ends: initialDemand plus every request's demand, "
    "minus elements delivered.",
    needs=("range",),
)
async def _add_up(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=10), 1, 1))
    await peer.elements(1, 1)
    await peer.send(Request(subscriber=1, demand=2), Request(subscriber=1, demand=3))
    view = await peer.elements(1, 6)
    await peer.quiet()
    check(view.elements == range_elements(6), "expected exactly elements 0..5")


@case(
    "dm.request_before_on_subscribe",
    "PROTOCOL.md §5.2",
    "A subscriber MAY send request before onSubscribe arrives (demand simply adds up).",
    needs=("range",),
)
async def _before_on_subscribe(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=10), 1, 0), Request(subscriber=1, demand=4))
    view = await peer.elements(1, 4)
    await peer.quiet()
    check(len(view.elements) == 4, f"expected 4 elements, got {len(view.elements)}")


def _register_invalid(name: str, demand: int) -> None:
    @case(f"dm.request_{name}", S62, f"{INVALID} (here: request({demand}))", needs=("never", "range"))
    async def _invalid(ctx: Context) -> None:
        peer = await open_with(ctx, subscribe(ctx.name("never"), 1, 0))
        await peer.subscribed(1)
        await peer.send(Request(subscriber=1, demand=demand))
        view = await peer.failed(1)
        check("3.9" in (view.error or ""), f"the onError does not cite rule 3.9: {view.error!r}")
        await peer.send(subscribe(ctx.name("range", n=2), 2, 2))  # the connection continues
        await peer.completed(2)

    _ = _invalid


for _name, _demand in (("zero", 0), ("2_63", 2**63), ("2_64_minus_1", 2**64 - 1), ("2_63_plus_1", 2**63 + 1)):
    _register_invalid(_name, _demand)


@case(
    "dm.request_zero_before_on_subscribe",
    S62,
    INVALID + " (here: request(0) in the same write as the subscribe)",
    needs=("never",),
)
async def _zero_early(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("never"), 1, 0), Request(subscriber=1, demand=0))
    await peer.failed(1)


@case(
    "dm.request_zero_other_streams_unaffected",
    S62,
    INVALID + " (here: a second subscription on the connection keeps going)",
    needs=("range",),
)
async def _zero_others(ctx: Context) -> None:
    name = ctx.name("range", n=6)
    peer = await open_with(ctx, subscribe(name, 1, 1), subscribe(name, 2, 1))
    await peer.elements(1, 1)
    await peer.elements(2, 1)
    await peer.send(Request(subscriber=1, demand=0), Request(subscriber=2, demand=5))
    await peer.failed(1)
    view = await peer.completed(2)
    check(view.elements == range_elements(6), "the other subscription was disturbed")


def _register_initial(name: str, demand: int) -> None:
    @case(
        f"dm.initial_{name}_refused",
        S62,
        f"A subscribe whose initialDemand is >= 2**63 is refused with onError the same way (here: {demand}).",
        needs=("range",),
    )
    async def _initial(ctx: Context) -> None:
        peer = await open_with(ctx, subscribe(ctx.name("range", n=3), 1, demand))
        view = await peer.failed(1)
        check(not view.elements, "elements were sent on a refused subscription")
        await peer.send(subscribe(ctx.name("range", n=1), 2, 1))
        await peer.completed(2)

    _ = _initial


for _name, _demand in (("2_63", 2**63), ("2_64_minus_1", 2**64 - 1)):
    _register_initial(_name, _demand)


@case(
    "dm.initial_unbounded",
    S61,
    "Sums saturate at 2**63 - 1 (Java's Long.MAX_VALUE), which means unbounded (here: initialDemand "
    "2**63 - 1).",
    needs=("range",),
)
async def _initial_unbounded(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=300), 1, UNBOUNDED))
    view = await peer.completed(1)
    check(view.elements == range_elements(300), "wrong elements with unbounded demand")


@case(
    "dm.saturating_sum",
    S61,
    "Once outstanding demand reaches it, it stays there and elements no longer decrement it (here: "
    "three requests that sum past 2**63 - 1).",
    needs=("range",),
)
async def _saturating_sum(ctx: Context) -> None:
    peer = await open_with(
        ctx,
        subscribe(ctx.name("range", n=50), 1, 0),
        Request(subscriber=1, demand=UNBOUNDED),
        Request(subscriber=1, demand=UNBOUNDED),
        Request(subscriber=1, demand=5),
    )
    view = await peer.completed(1)
    check(view.elements == range_elements(50), "wrong elements after saturating requests")


@case(
    "dm.saturating_initial_plus_request",
    S61,
    "A subscriber MAY send any demand up to 2**63 - 1 (here: initialDemand 2**63 - 1 plus "
    "request(2**63 - 1)).",
    needs=("range",),
)
async def _saturating_initial(ctx: Context) -> None:
    name = ctx.name("range", n=20)
    peer = await open_with(ctx, subscribe(name, 1, UNBOUNDED), Request(subscriber=1, demand=UNBOUNDED))
    await peer.completed(1)


@case("dm.one_at_a_time", S63, NOT_BEYOND + " (here: five request(1), one at a time)", needs=("infinite",))
async def _one_at_a_time(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=ctx.tag()), 1, 0))
    await peer.subscribed(1)
    for count in range(1, 6):
        await peer.send(Request(subscriber=1, demand=1))
        await peer.elements(1, count)
    await peer.quiet()
    view = peer.view(1)
    check(view.elements == range_elements(5), f"expected elements 0..4, got {len(view.elements)} elements")


@case("dm.many_small_requests", S63, NOT_BEYOND + " (here: 300 request(1) in one write)", needs=("infinite",))
async def _many_small(ctx: Context) -> None:
    sid = 1
    peer = await open_with(
        ctx,
        subscribe(ctx.name("infinite", tag=ctx.tag()), sid, 0),
        *(Request(subscriber=sid, demand=1) for _ in range(300)),
    )
    view = await peer.elements(sid, 300)
    await peer.quiet()
    check(view.elements == range_elements(300), f"expected exactly 300 elements, got {len(view.elements)}")


@case("dm.infinite_exact", S63, NOT_BEYOND + " (here: 5000 of an endless stream)", needs=("infinite",))
async def _infinite_exact(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=ctx.tag()), 1, 5000))
    view = await peer.elements(1, 5000)
    await peer.quiet()
    check(
        len(view.elements) == 5000 and view.open, f"expected exactly 5000 elements, got {len(view.elements)}"
    )


@case(
    "dm.packed_within_demand",
    S63,
    "A subscriber that receives an element (onNext, ... or an onNextPacked whose count exceeds the "
    "outstanding demand) beyond it treats this as a connection error (here: 100 of 10000 fixed-size "
    "elements).",
    needs=("fixed",),
)
async def _packed_within(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("fixed", n=10000, size=8), 1, 100))
    view = await peer.elements(1, 100)
    await peer.quiet()
    check(view.elements == range_elements(100), f"expected exactly 100 elements, got {len(view.elements)}")


@case(
    "dm.packed_uneven_requests",
    S63,
    "An onNextPacked ... consumes count demand (here: requests of 1, 2, ... 10 on a fixed-size stream).",
    needs=("fixed",),
)
async def _packed_uneven(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("fixed", n=10000, size=4), 1, 0))
    total = 0
    for n in range(1, 11):
        total += n
        await peer.send(Request(subscriber=1, demand=n))
        await peer.elements(1, total)
    await peer.quiet()
    view = peer.view(1)
    check(
        view.elements == range_elements(55, size=4), f"expected exactly 55 elements, got {len(view.elements)}"
    )


@case(
    "dm.packed_unbounded",
    S61,
    "An onNextPacked counts its count (here: 20000 fixed-size elements under unbounded demand).",
    needs=("fixed",),
)
async def _packed_unbounded(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("fixed", n=20000, size=8), 1, UNBOUNDED))
    view = await peer.completed(1)
    check(view.elements == range_elements(20000), "wrong fixed-size elements")


@case(
    "dm.request_after_complete_ignored",
    "PROTOCOL.md §5.4",
    "A publisher receiving request or cancel for an id that has no open subscription ignores it, because "
    "it may have crossed the publisher's own terminal signal.",
    needs=("range",),
)
async def _after_complete(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=1), 1, 5))
    await peer.completed(1)
    await peer.send(Request(subscriber=1, demand=5), Request(subscriber=1, demand=0))
    frames = await peer.quiet()
    check(not frames, f"the server answered a request for a finished subscription: {frames!r}")
    await peer.send(subscribe(ctx.name("range", n=1), 2, 1))
    await peer.completed(2)


@case(
    "dm.large_demand_varint",
    S61,
    "A subscriber MAY send any demand up to 2**63 - 1 (here: 2**62, a 9-byte varint).",
    needs=("range",),
)
async def _large_demand(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=10), 1, 0), Request(subscriber=1, demand=2**62))
    await peer.completed(1)


@case(
    "dm.split_element_takes_one",
    "PROTOCOL.md §8",
    "The first part of an element consumes one demand (§6.3 applies at that point) (here: demand 2 on "
    "five 200 kB elements).",
    needs=("large",),
)
async def _split_one(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("large", n=5, size=200_000), 1, 2))
    view = await peer.elements(1, 2)
    await peer.quiet()
    check(
        len(view.elements) == 2 and not view.parts,
        f"expected exactly 2 whole elements, got {len(view.elements)}",
    )
    check(view.elements == range_elements(2, size=200_000), "the joined elements are wrong")


@case(
    "dm.error_waits_for_demand",
    S63,
    NOT_BEYOND + " (here: a publisher that fails after 5 elements, with demand 2 then 10)",
    needs=("error",),
)
async def _error_demand(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("error", after=5), 1, 2))
    await peer.elements(1, 2)
    await peer.quiet()
    await peer.send(Request(subscriber=1, demand=10))
    view = await peer.failed(1)
    check(
        view.elements == range_elements(5), f"expected elements 0..4 before onError, got {len(view.elements)}"
    )
