"""Order and state: ids, cancel and its acknowledgement, id reuse, terminal signals (PROTOCOL.md §5).

The monitor fails any case in which onNext comes before onSubscribe, anything comes after
a terminal signal, or a signal names an id the driver never subscribed.
"""

from __future__ import annotations

from rstreams.conformance._case import Context, case, check
from rstreams.conformance.cases._helpers import (
    DRAFT,
    UNBOUNDED,
    expect_violation,
    open_with,
    range_elements,
    subscribe,
)
from rstreams.wire import (
    Cancel,
    OnComplete,
    OnError,
    OnNext,
    OnSubscribe,
    Request,
    encode,
)

S52 = "PROTOCOL.md §5.2"
S53 = "PROTOCOL.md §5.3"
S54 = "PROTOCOL.md §5.4"
S55 = "PROTOCOL.md §5.5"
IGNORED = (
    "A publisher receiving request or cancel for an id that has no open subscription ignores it, because it "
    "may have crossed the publisher's own terminal signal."
)
ACK = (
    "A publisher that receives cancel for an open subscription stops it and answers with onComplete for "
    "that id; that onComplete is the acknowledgement, after which the publisher sends nothing more for "
    "the id."
)
REUSE = "After the terminal signal the id MAY be reused at once."
NOT_OURS = (
    "onSubscribe/onNext*/onComplete/onError for an id we do not have open ... is a connection error "
    "(goodbye §5.2)"
)


@case(
    "st.unknown_publisher",
    S55,
    "A name that matches nothing is refused with onError (the text SHOULD say the name is unknown).",
)
async def _unknown_publisher(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe("conformance/does-not-exist", 1, 1))
    view = await peer.failed(1)
    check(not view.subscribed, "onSubscribe was sent for an unknown publisher")
    text = (view.error or "").lower()
    check(
        any(word in text for word in ("unknown", "no publisher", "not found", "no such")),
        f"the refusal does not say the name is unknown: {view.error!r}",
    )


@case(
    "st.refusal_keeps_connection",
    "PROTOCOL.md §10",
    "Application errors (a publisher's failure) are onError with the error's text; they never close the "
    "connection (here: after a refused subscribe, the same id is subscribed again).",
    needs=("range",),
)
async def _refusal_keeps(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe("conformance/does-not-exist", 1, 1))
    await peer.failed(1)
    await peer.send(subscribe(ctx.name("range", n=2), 1, 2))
    await peer.completed(1)


@case("st.request_unknown_id", S54, IGNORED + " (here: a request for an id never used)", needs=("range",))
async def _request_unknown(ctx: Context) -> None:
    peer = await open_with(ctx, Request(subscriber=77, demand=5))
    check(not await peer.quiet(), "the server answered a request for an unknown id")
    await peer.send(subscribe(ctx.name("range", n=1), 1, 1))
    await peer.completed(1)


@case("st.cancel_unknown_id", S54, IGNORED + " (here: a cancel for an id never used)", needs=("range",))
async def _cancel_unknown(ctx: Context) -> None:
    peer = await open_with(ctx, Cancel(subscriber=77))
    check(not await peer.quiet(), "the server answered a cancel for an unknown id")
    await peer.send(subscribe(ctx.name("range", n=1), 1, 1))
    await peer.completed(1)


@case(
    "st.request_does_not_carry_over",
    S54,
    IGNORED + " (here: request(5) for id 5, then subscribe id 5 with initialDemand 0: no elements)",
    needs=("range",),
)
async def _no_carry(ctx: Context) -> None:
    peer = await open_with(ctx, Request(subscriber=5, demand=5), subscribe(ctx.name("range", n=5), 5, 0))
    await peer.subscribed(5)
    await peer.quiet()
    check(not peer.view(5).elements, "a request sent before the subscribe was counted")


@case("st.cancel_acknowledged", S54, ACK, needs=("never",))
async def _cancel_ack(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("never"), 1, 5))
    await peer.subscribed(1)
    await peer.send(Cancel(subscriber=1))
    view = await peer.completed(1)
    check(isinstance(view.terminal, OnComplete), "cancel was not acknowledged with onComplete")


@case("st.cancel_twice_one_ack", S54, ACK + " (here: cancel sent three times)", needs=("never",))
async def _cancel_thrice(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("never"), 1, 5))
    await peer.subscribed(1)
    await peer.send(Cancel(subscriber=1), Cancel(subscriber=1), Cancel(subscriber=1))
    await peer.completed(1)
    await peer.quiet()  # a second onComplete would be a monitor violation


@case(
    "st.cancel_after_complete_silent",
    S54,
    "If the publisher had already sent onComplete or onError (the signals crossed), it sends nothing.",
    needs=("range",),
)
async def _cancel_after_complete(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=1), 1, 5))
    await peer.completed(1)
    await peer.send(Cancel(subscriber=1))
    check(not await peer.quiet(), "the server answered a cancel for a completed subscription")


@case(
    "st.cancel_with_subscribe",
    S54,
    "Every subscription ends with exactly one onComplete or onError on the wire (here: cancel in the "
    "same write as the subscribe).",
    needs=("range",),
)
async def _cancel_with_subscribe(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=100), 1, 0), Cancel(subscriber=1))
    await peer.terminal(1)
    await peer.quiet()


@case(
    "st.cancel_stops_flow",
    S54,
    ACK + " (here: an endless stream under unbounded demand)",
    needs=("infinite",),
)
async def _cancel_stops(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=ctx.tag(), size=1024), 1, UNBOUNDED))
    await peer.elements(1, 100)
    await peer.send(Cancel(subscriber=1))
    view = await peer.completed(1)
    count = len(view.elements)
    await peer.quiet()
    check(view.elements == range_elements(count, size=1024), "elements before the acknowledgement are wrong")


@case(
    "st.cancel_releases_publisher",
    DRAFT,
    "When ... cancel: the publisher's local stream is cancelled (here: checked with conformance/stats).",
    needs=("infinite", "stats"),
)
async def _cancel_releases(ctx: Context) -> None:
    tag = ctx.tag()
    peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=tag), 1, 10))
    await peer.elements(1, 10)
    await peer.send(Cancel(subscriber=1))
    await peer.completed(1)
    stats = await ctx.stats(tag)
    check(stats["cancelled"] == 1, f"the local publisher was not cancelled: {stats}")


@case(
    "st.request_after_cancel_tolerated",
    S54,
    IGNORED + " (here: request after the cancel was acknowledged)",
    needs=("never", "range"),
)
async def _request_after_cancel(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("never"), 1, 0), Cancel(subscriber=1))
    await peer.completed(1)
    await peer.send(Request(subscriber=1, demand=5), Cancel(subscriber=1))
    check(not await peer.quiet(), "the server answered signals for a cancelled subscription")
    await peer.send(subscribe(ctx.name("range", n=1), 2, 1))
    await peer.completed(2)


def _register_reuse(name: str, first: str, how: str) -> None:
    @case(f"st.id_reuse_after_{name}", S53, f"{REUSE} (here: after {how})", needs=(first, "range"))
    async def _reuse(ctx: Context) -> None:
        params: dict[str, object] = {"n": 2} if first == "range" else {}
        peer = await open_with(ctx, subscribe(ctx.name(first, **params), 3, 2))
        if first == "never":
            await peer.subscribed(3)
            await peer.send(Cancel(subscriber=3))
        await peer.terminal(3)
        await peer.send(subscribe(ctx.name("range", n=4), 3, 4))
        view = await peer.completed(3)
        check(view.elements == range_elements(4), "the reused id got wrong elements")

    _ = _reuse


for _name, _first, _how in (
    ("complete", "range", "onComplete"),
    ("error", "error", "onError"),
    ("cancel_ack", "never", "the acknowledgement of a cancel"),
):
    _register_reuse(_name, _first, _how)


@case(
    "st.id_reuse_while_open",
    S53,
    "A publisher that receives a subscribe for an id that is still open on its side treats this as a "
    "connection error.",
    needs=("never",),
)
async def _reuse_open(ctx: Context) -> None:
    await expect_violation(ctx, subscribe(ctx.name("never"), 1, 0), subscribe(ctx.name("never"), 1, 0))


@case(
    "st.id_reuse_while_open_later",
    S53,
    "A publisher that receives a subscribe for an id that is still open on its side treats this as a "
    "connection error (here: the second subscribe comes after the onSubscribe).",
    needs=("never",),
)
async def _reuse_open_later(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("never"), 1, 0))
    await peer.subscribed(1)
    await peer.send(subscribe(ctx.name("never"), 1, 0))
    bye = await peer.goodbye_then_close()
    check(bye is not None and bye.reason, "the goodbye gives no reason")


@case(
    "st.ids_independent",
    "PROTOCOL.md §1",
    "Any number of subscriptions multiplexed by subscriber id (here: ten, each with its own length).",
    needs=("range",),
)
async def _independent(ctx: Context) -> None:
    peer = await open_with(ctx, *(subscribe(ctx.name("range", n=sid), sid, 100) for sid in range(1, 11)))
    for sid in range(1, 11):
        view = await peer.completed(sid)
        check(view.elements == range_elements(sid), f"subscriber {sid} got wrong elements")


@case(
    "st.interleaved_requests",
    "PROTOCOL.md §1",
    "The ordering and demand rules of the Reactive Streams specification apply to every subscription "
    "(here: two streams advanced in turns).",
    needs=("range",),
)
async def _interleaved(ctx: Context) -> None:
    name = ctx.name("range", n=6)
    peer = await open_with(ctx, subscribe(name, 1, 0), subscribe(name, 2, 0))
    for step in range(1, 7):
        await peer.send(
            Request(subscriber=1 + step % 2, demand=1), Request(subscriber=2 - step % 2, demand=1)
        )
        await peer.elements(1, step)
        await peer.elements(2, step)
    for sid in (1, 2):
        view = await peer.completed(sid)
        check(view.elements == range_elements(6), f"subscriber {sid} got wrong elements")


@case(
    "st.error_after_elements",
    "PROTOCOL.md §1",
    "At most the requested number of onNext elements, and at most one onComplete or onError (here: three "
    "elements then a failure).",
    needs=("error",),
)
async def _error_after(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("error", after=3), 1, 10))
    view = await peer.failed(1)
    check(view.elements == range_elements(3), f"expected 3 elements before onError, got {len(view.elements)}")
    await peer.quiet()


@case(
    "st.error_immediately",
    S52,
    "onComplete and onError are allowed straight after subscribe.",
    needs=("error",),
)
async def _error_now(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("error"), 1, 10))
    view = await peer.failed(1)
    check(not view.elements, "elements before an immediate failure")


@case(
    "st.complete_without_demand",
    S52,
    "onComplete and onError are allowed straight after subscribe (here: an empty stream, demand 0).",
    needs=("range",),
)
async def _complete_no_demand(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=0), 1, 0))
    await peer.completed(1)


@case(
    "st.one_terminal",
    "PROTOCOL.md §1",
    "The publisher answers with onSubscribe, at most the requested number of onNext elements, and at most "
    "one onComplete or onError.",
    needs=("range",),
)
async def _one_terminal(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=3), 1, 10))
    view = await peer.completed(1)
    await peer.quiet()
    check(
        isinstance(view.frames[0], OnSubscribe), f"the first signal was {view.frames[0]!r}, not onSubscribe"
    )


@case(
    "st.elements_in_order",
    DRAFT,
    "The semantics for ordering and asynchronous delivery are the same as in the Reactive Streams "
    "specification (here: 1000 elements in order).",
    needs=("range",),
)
async def _in_order(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("range", n=1000), 1, 1000))
    view = await peer.completed(1)
    check(view.elements == range_elements(1000), "elements out of order or wrong")


def _register_foreign(name: str, data: bytes, label: str) -> None:
    @case(f"st.client_{name}_unknown", "PROTOCOL.md §10", f"{NOT_OURS} (here: the client sends {label})")
    async def _foreign(ctx: Context) -> None:
        await expect_violation(ctx, data)

    _ = _foreign


for _name, _frame, _label in (
    ("on_subscribe", OnSubscribe(subscriber=4), "onSubscribe"),
    ("on_next", OnNext(subscriber=4, element=b"abc"), "onNext"),
    ("on_complete", OnComplete(subscriber=4), "onComplete"),
    ("on_error", OnError(subscriber=4, error="x"), "onError"),
):
    _register_foreign(_name, encode(_frame), _label + " for an id the server never subscribed")


@case(
    "st.name_percent_encoded",
    S55,
    "The query is key=value pairs separated by &, percent-encoded as in RFC 3986 (here: n%3D... decoded "
    "as the value of n).",
    needs=("range",),
)
async def _percent(ctx: Context) -> None:
    base = ctx.name("range")
    peer = await open_with(ctx, subscribe(base + "?n=%33", 1, 10))
    view = await peer.completed(1)
    check(view.elements == range_elements(3), f"n=%33 was not decoded as 3: {len(view.elements)} elements")
