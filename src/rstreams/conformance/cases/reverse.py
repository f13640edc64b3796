"""The server as subscriber: the endpoint subscribes to a publisher the driver plays (PROTOCOL.md §1).

Every case subscribes to ``conformance/echo?name=P&peer=...``, which makes the endpoint
subscribe, on the same connection, to the driver's publisher ``P`` and relay it back
(docs/conformance.md). The driver then answers the endpoint's subscribe by hand: with
onSubscribe and elements within the endpoint's demand, or with deliberate violations. The
monitor checks the endpoint's side as a subscriber in every case: no subscribe with an id
still open on the driver's side (§5.3), no request or cancel for an id it never used
(§5.2), no request(0) or request(>= 2**63) (§6.2).
"""

from __future__ import annotations

from rstreams.conformance._case import Context, case, check
from rstreams.conformance._monitor import ServedView
from rstreams.conformance._peer import Peer
from rstreams.conformance.cases._helpers import range_elements, still_serving, subscribe
from rstreams.wire import (
    Cancel,
    Goodbye,
    OnComplete,
    OnError,
    OnNext,
    OnNextLastPart,
    OnNextPacked,
    OnNextPart,
    OnSubscribe,
)

ECHO = ("echo",)
S1 = "PROTOCOL.md §1"
S52 = "PROTOCOL.md §5.2"
VIOLATION_52 = (
    "onSubscribe/onNext*/onComplete/onError for an id we do not have open, or in a ✗ state (e.g. onNext "
    "before onSubscribe, a second onSubscribe) is a connection error (goodbye §5.2)"
)


async def _relay(ctx: Context, demand: int = 0, sid: int = 1) -> tuple[Peer, ServedView]:
    """A connection on which the endpoint has subscribed to the driver's publisher through echo."""
    peer = await ctx.open()
    publisher = f"driver/{ctx.tag()}"
    peer.offer(publisher)
    await peer.send(subscribe(ctx.echo(peer, publisher), sid, demand))
    served = await peer.server_subscribe(publisher)
    return peer, served


async def _violation(ctx: Context, peer: Peer, what: str) -> None:
    """The endpoint, as subscriber, must answer the driver's violation with goodbye and close (§10)."""
    bye = await peer.goodbye_then_close()
    check(bye is None or bye.reason, f"the goodbye for {what} gives no reason (PROTOCOL.md §10)")
    await still_serving(ctx)


@case(
    "rv.server_subscribes",
    S1,
    "Apart from the hello each sends, the protocol is symmetric: either endpoint may publish and either may "
    "subscribe, over the same connection at the same time (here: the endpoint subscribes to the driver "
    "while serving it).",
    needs=ECHO,
)
async def _server_subscribes(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    check(served.publisher.startswith("driver/"), f"the endpoint subscribed to {served.publisher!r}")
    view = await peer.subscribed(1)
    check(view.subscribed, f"the echo subscription was refused: {view.error!r}")
    await peer.send(OnSubscribe(subscriber=served.sid), OnComplete(subscriber=served.sid))
    await peer.completed(1)


@case(
    "rv.ids_are_per_endpoint",
    "PROTOCOL.md §5.1",
    "Each endpoint's ids are its own namespace: the client's subscription 1 and the server's subscription 1 "
    "are unrelated (here: the driver serves the endpoint's id N while its own subscription N streams).",
    needs=(*ECHO, "range"),
)
async def _ids_per_endpoint(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    own = served.sid  # our echo subscription is 1: if the endpoint chose 1 too, the ids already overlap
    if own != 1:
        await peer.send(subscribe(ctx.name("range", n=3), own, 3))
    await peer.send(OnSubscribe(subscriber=served.sid))
    if own != 1:
        mine = await peer.completed(own)
        check(
            mine.elements == range_elements(3), "our subscription with the endpoint's id got other elements"
        )
    await peer.send(OnComplete(subscriber=served.sid))
    await peer.completed(1)


@case(
    "rv.complete_straight_after_subscribe",
    S52,
    "onComplete and onError are allowed straight after subscribe (here: the driver completes the endpoint's "
    "subscription without onSubscribe; the relay completes, the connection stays up).",
    needs=ECHO,
)
async def _complete_straight(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnComplete(subscriber=served.sid))
    view = await peer.completed(1)
    check(not view.elements, "elements were relayed from a publisher that sent none")
    await peer.quiet()
    check(peer.monitor.goodbye is None, "the endpoint said goodbye")


@case(
    "rv.refusal_is_not_fatal",
    S52,
    "onError is how a publisher refuses a subscription (unknown name, limits, authorization) (here: the "
    "driver refuses the endpoint's subscribe; the endpoint ends its relay with onError and keeps the "
    "connection).",
    needs=(*ECHO, "range"),
)
async def _refusal(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnError(subscriber=served.sid, error="driver: no publisher by that name"))
    await peer.failed(1)
    await peer.send(subscribe(ctx.name("range", n=2), 2, 2))
    view = await peer.completed(2)
    check(view.elements == range_elements(2), "the connection did not go on serving after the refusal")


@case(
    "rv.publisher_error_relayed",
    "PROTOCOL.md §10",
    "Application errors (a publisher's failure) are onError with the error's text; they never close the "
    "connection (here: the driver's publisher fails; the relay fails with that text).",
    needs=ECHO,
)
async def _publisher_error(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnSubscribe(subscriber=served.sid), OnError(subscriber=served.sid, error="driver-fail-7"))
    view = await peer.failed(1)
    check("driver-fail-7" in (view.error or ""), f"the relayed onError lost the text: {view.error!r}")
    check(peer.monitor.goodbye is None, "the endpoint said goodbye after an application error")


@case(
    "rv.requests_demand",
    "PROTOCOL.md §6.1",
    "Each subscription has an outstanding demand at both ends: initialDemand plus every request's demand, "
    "minus elements delivered (here: the endpoint relays a demand of 3; it must signal demand, and the "
    "driver's elements within it come back in order).",
    needs=ECHO,
)
async def _requests_demand(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=3)
    await peer.send(OnSubscribe(subscriber=served.sid))
    await peer.demand(served, 1)
    count = min(3, served.granted)
    await peer.send(*(OnNext(subscriber=served.sid, element=e) for e in range_elements(count)))
    view = await peer.elements(1, count)
    check(view.elements == range_elements(count), "the relayed elements differ from the driver's")


@case(
    "rv.packed_accepted",
    "PROTOCOL.md §7",
    "The publisher MAY then also send onNextPacked with count >= 1 elements as count x n raw bytes; it is "
    "equivalent to count onNext messages and consumes count demand (here: the driver publishes packed).",
    needs=ECHO,
)
async def _packed(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=3)
    await peer.send(OnSubscribe(subscriber=served.sid, element_size=8))
    await peer.demand(served, 3)
    elements = range_elements(3)
    await peer.send(OnNextPacked(subscriber=served.sid, count=3, elements=b"".join(elements)))
    view = await peer.elements(1, 3)
    check(view.elements == elements, "the packed elements were not relayed one by one, in order")


@case(
    "rv.split_accepted",
    "PROTOCOL.md §11",
    "Publishers SHOULD split elements above 64 KiB; receivers MUST accept split elements (here: the driver "
    "sends one 100,000-byte element in three parts).",
    needs=ECHO,
)
async def _split(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnSubscribe(subscriber=served.sid))
    await peer.demand(served, 1)
    (element,) = range_elements(1, 5, size=100_000)
    await peer.send(
        OnNextPart(subscriber=served.sid, element_id=0, data=element[:40_000]),
        OnNextPart(subscriber=served.sid, element_id=0, data=element[40_000:80_000]),
        OnNextLastPart(subscriber=served.sid, element_id=0, data=element[80_000:]),
    )
    view = await peer.elements(1, 1)
    check(view.elements == [element], "the split element was not joined as sent")


@case(
    "rv.beyond_demand_is_goodbye",
    "PROTOCOL.md §6.3",
    "A subscriber that receives an element (onNext, the first part of a split element, or an onNextPacked "
    "whose count exceeds the outstanding demand) beyond it treats this as a connection error.",
    needs=ECHO,
)
async def _beyond(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=0)
    await peer.send(OnSubscribe(subscriber=served.sid))
    await peer.quiet()  # a relay may prefetch: exceed whatever it asked for
    beyond = served.granted + 1
    await peer.send(*(OnNext(subscriber=served.sid, element=e) for e in range_elements(beyond)))
    await _violation(ctx, peer, "elements beyond demand")


@case(
    "rv.onnext_before_onsubscribe", S52, VIOLATION_52 + " (here: the driver sends onNext first).", needs=ECHO
)
async def _onnext_first(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnNext(subscriber=served.sid, element=b"early"))
    await _violation(ctx, peer, "onNext before onSubscribe")


@case("rv.second_onsubscribe", S52, VIOLATION_52 + " (here: the driver sends onSubscribe twice).", needs=ECHO)
async def _second_onsubscribe(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnSubscribe(subscriber=served.sid), OnSubscribe(subscriber=served.sid))
    await _violation(ctx, peer, "a second onSubscribe")


@case(
    "rv.onnext_after_complete",
    S52,
    VIOLATION_52 + " (here: the driver sends onNext after its onComplete).",
    needs=ECHO,
)
async def _after_complete(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnSubscribe(subscriber=served.sid), OnComplete(subscriber=served.sid))
    await peer.terminal(1)
    await peer.send(OnNext(subscriber=served.sid, element=b"late"))
    await _violation(ctx, peer, "onNext after onComplete")


@case(
    "rv.cancel_reaches_the_publisher",
    "PROTOCOL.md §5.4",
    "A publisher that receives cancel for an open subscription stops it and answers with onComplete for "
    "that id (here: the driver cancels the relay; the endpoint acknowledges and cancels its own "
    "subscription to the driver, which the driver then acknowledges).",
    needs=ECHO,
)
async def _cancel_propagates(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnSubscribe(subscriber=served.sid))
    await peer.subscribed(1)
    await peer.send(Cancel(subscriber=1))
    await peer.completed(1)
    await peer.server_cancel(served)
    await peer.send(OnComplete(subscriber=served.sid))
    check(not [f for f in await peer.quiet() if isinstance(f, Goodbye)], "the endpoint said goodbye")


@case(
    "rv.late_signals_after_cancel_dropped",
    S52,
    "Signals received in CANCELLED (onSubscribe, onNext*, which were in flight when the cancel was sent) "
    "are checked and then dropped quietly; they are not errors (here: the driver's onSubscribe arrives "
    "after the endpoint's cancel).",
    needs=(*ECHO, "range"),
)
async def _late_after_cancel(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.subscribed(1)
    await peer.send(Cancel(subscriber=1))
    await peer.server_cancel(served)
    await peer.send(OnSubscribe(subscriber=served.sid), OnComplete(subscriber=served.sid))
    await peer.send(subscribe(ctx.name("range", n=2), 2, 2))
    view = await peer.completed(2)
    check(view.elements == range_elements(2), "the connection was not usable after the late signals")


@case(
    "rv.id_held_until_acknowledged",
    "PROTOCOL.md §5.3",
    "An id is not free after sending cancel: the subscriber waits for the publisher's acknowledgement "
    "(here: the driver delays its acknowledgement; the endpoint's next subscribe must use another id).",
    needs=ECHO,
)
async def _id_held(ctx: Context) -> None:
    peer, first = await _relay(ctx, demand=1)
    await peer.send(OnSubscribe(subscriber=first.sid))
    await peer.subscribed(1)
    await peer.send(Cancel(subscriber=1))
    await peer.server_cancel(first)
    publisher = f"driver/{ctx.tag()}"
    peer.offer(publisher)
    await peer.send(subscribe(ctx.echo(peer, publisher), 2, 1))
    second = await peer.server_subscribe(publisher)  # the monitor fails a reuse of first.sid (§5.3)
    check(second.sid != first.sid, f"the endpoint reused id {first.sid} before its cancel was acknowledged")
    await peer.send(OnComplete(subscriber=first.sid), OnSubscribe(subscriber=second.sid))
    await peer.send(OnComplete(subscriber=second.sid))
    await peer.completed(2)


@case(
    "rv.goodbye_ends_both_directions",
    "PROTOCOL.md §9.1",
    "Sending goodbye ends every subscription in both directions at once, as if each had been cancelled and "
    "had failed; the sender then sends nothing more (here: the driver says goodbye while the endpoint "
    "subscribes to it; the endpoint answers with goodbye and sends nothing after it).",
    needs=ECHO,
)
async def _goodbye(ctx: Context) -> None:
    peer, served = await _relay(ctx, demand=1)
    await peer.send(OnSubscribe(subscriber=served.sid))
    await peer.send(Goodbye(reason="driver leaving"))
    await peer.goodbye()
    await peer.closed()
