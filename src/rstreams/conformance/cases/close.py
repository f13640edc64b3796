"""Closing: goodbye and its answer, goodbye ends everything, end of input (PROTOCOL.md §9).

The monitor fails any case in which the server sends something after its goodbye.
"""

from __future__ import annotations

from rstreams.conformance._case import Context, case, check
from rstreams.conformance.cases._helpers import (
    DRAFT,
    UNBOUNDED,
    expect_violation,
    open_with,
    still_serving,
    subscribe,
)
from rstreams.wire import ClientHello, Goodbye, OnSubscribe

S91 = "PROTOCOL.md §9.1"
S92 = "PROTOCOL.md §9.2"
S93 = "PROTOCOL.md §9.3"
ANSWER = (
    "An endpoint that receives a goodbye answers with a goodbye (any reason), sends nothing after it, and "
    "closes the transport after writing it."
)
RELEASE = "When the underlying transport is closed, both sides should release all related resources."


@case("cl.goodbye_answered", S91, ANSWER)
async def _answered(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.hello()
    await peer.send(Goodbye(reason="bye"))
    await peer.goodbye_then_close()


@case("cl.goodbye_empty_reason", S91, ANSWER + " (here: an empty reason)")
async def _empty(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.send(Goodbye(reason=""))
    await peer.goodbye_then_close()


@case(
    "cl.goodbye_with_hello",
    DRAFT,
    "The orderly way of closing a connection is to send a goodbye message, wait for acknowledgement and then "
    "close the underlying connection (here: hello and goodbye in one write).",
)
async def _with_hello(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    await peer.send(ClientHello(), Goodbye(reason="short visit"))
    await peer.goodbye_then_close()
    check(peer.monitor.server_hello is not None, "no serverHello before the goodbye")


@case(
    "cl.goodbye_ends_subscriptions",
    DRAFT,
    "Sending goodbye implicitly closes all open streams, equivalently to receiving cancel or onError "
    "messages (here: three open subscriptions; nothing may follow the answer).",
    needs=("never",),
)
async def _ends_all(ctx: Context) -> None:
    name = ctx.name("never")
    peer = await open_with(ctx, *(subscribe(name, sid, 10) for sid in (1, 2, 3)))
    for sid in (1, 2, 3):
        await peer.subscribed(sid)
    await peer.send(Goodbye(reason="done"))
    await peer.goodbye_then_close()


@case("cl.goodbye_while_flowing", S91, ANSWER + " (here: while an endless stream flows)", needs=("infinite",))
async def _while_flowing(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=ctx.tag(), size=1024), 1, UNBOUNDED))
    await peer.elements(1, 100)
    await peer.send(Goodbye(reason="enough"))
    await peer.goodbye_then_close()


@case(
    "cl.goodbye_mid_split_element",
    S91,
    ANSWER + " (here: while an 8 MiB element is being sent in parts)",
    needs=("large",),
)
async def _mid_split(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("large", n=1, size=8 << 20), 1, 1))
    view = peer.view(1)
    await peer.until(lambda: bool(view.parts) or not view.open, "the first part")
    await peer.send(Goodbye(reason="no thanks"))
    await peer.goodbye_then_close()


@case(
    "cl.double_goodbye",
    S92,
    "In version 0 a goodbye and its answer are the same message: neither sends a second goodbye (here: "
    "the client sends two goodbyes; exactly one answer).",
)
async def _double(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.send(Goodbye(reason="one"), Goodbye(reason="two"))
    await peer.goodbye_then_close()
    count = sum(isinstance(f, Goodbye) for f in peer.received)
    check(count == 1, f"the server sent {count} goodbyes")


@case(
    "cl.frames_after_goodbye_discarded",
    S91,
    "Sending goodbye ends every subscription in both directions at once ... the sender then sends nothing "
    "more (here: a subscribe after our goodbye, in the same write, must not be served).",
    needs=("range",),
)
async def _after_goodbye(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.send(Goodbye(reason="bye"), subscribe(ctx.name("range", n=3), 1, 3))
    await peer.goodbye_then_close()
    check(not any(isinstance(f, OnSubscribe) for f in peer.received), "a subscribe after goodbye was served")


@case(
    "cl.eof_without_goodbye",
    S93,
    "The transport ending without a goodbye is an abrupt close: every subscription fails with a connection "
    "error (the server closes and keeps serving others).",
    needs=("never",),
)
async def _eof(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("never"), 1, 1))
    await peer.subscribed(1)
    await peer.write_eof()
    await peer.closed()
    await still_serving(ctx)


@case(
    "cl.eof_after_hello",
    S93,
    "The transport ending without a goodbye is an abrupt close (here: right after the hello).",
)
async def _eof_hello(ctx: Context) -> None:
    peer = await ctx.open()
    await peer.write_eof()
    await peer.closed()
    await still_serving(ctx)


@case(
    "cl.abort_before_hello",
    S93,
    "The transport ending without a goodbye is an abrupt close (here: a connection reset before any byte).",
)
async def _abort_early(ctx: Context) -> None:
    peer = await ctx.open(hello=False)
    peer.abort()
    await still_serving(ctx)


def _register_release(name: str, how: str) -> None:
    @case(
        f"cl.{name}_releases_publisher",
        DRAFT,
        f"{RELEASE} (here: {how}; checked with conformance/stats)",
        needs=("infinite", "stats"),
    )
    async def _release(ctx: Context) -> None:
        tag = ctx.tag()
        peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=tag, size=1024), 1, UNBOUNDED))
        await peer.elements(1, 10)
        if name == "goodbye":
            await peer.send(Goodbye(reason="bye"))
            await peer.goodbye_then_close()
        elif name == "eof":
            await peer.write_eof()
            await peer.closed()
        else:
            peer.abort()
        for _ in range(50):
            stats = await ctx.stats(tag)
            if stats["cancelled"] == stats["subscribed"] == 1:
                return
        check(False, f"the local publisher was not cancelled: {stats}")

    _ = _release


for _name, _how in (("goodbye", "goodbye"), ("eof", "end of input"), ("abort", "a connection reset")):
    _register_release(_name, _how)


@case(
    "cl.error_goodbye_has_reason",
    "PROTOCOL.md §10",
    "Errors are ... per-connection (goodbye whose reason names the broken rule and its section here ...).",
)
async def _reason(ctx: Context) -> None:
    bye = await expect_violation(ctx, b"\x0e")
    check(bye is not None and len(bye.reason) > 3, f"the goodbye does not say what was wrong: {bye!r}")


@case(
    "cl.reset_while_flowing",
    S93,
    "The transport ending without a goodbye is an abrupt close (here: a reset while an endless stream "
    "flows; the server keeps serving others).",
    needs=("infinite",),
)
async def _reset(ctx: Context) -> None:
    peer = await open_with(ctx, subscribe(ctx.name("infinite", tag=ctx.tag(), size=1024), 1, UNBOUNDED))
    await peer.elements(1, 1000)
    peer.abort()
    await still_serving(ctx)
