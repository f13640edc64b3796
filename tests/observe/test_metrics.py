"""server.metrics(): what a real server counts under real streams, on a clock the test moves."""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.net import RemoteStreamError, connect, serve
from rstreams.observe import ServerMetrics, goodbye_reason, stream_error_reason
from testkit.observe import Clock, Opened, Waiter, use_clock

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

SIZE = 8


def numbers(params: dict[str, str]) -> Any:
    return rstreams.range(int(params["n"])).map(lambda i: i.to_bytes(SIZE, "big"))


async def test_off_by_default_and_metrics_says_how_to_turn_it_on() -> None:
    async with await serve("tcp://127.0.0.1:0", {"n": rstreams.just(b"x")}) as server:
        with pytest.raises(RuntimeError, match=r"metrics=True"):
            server.metrics()
        async with await connect(server.url) as conn:
            assert await conn.request("n") == b"x"
            [served] = server.connections
            assert served._pump.outbox.observer is None  # nothing counts: the hook is None


async def test_a_stream_withheld_demand_then_served() -> None:
    """Stalled-on-demand time runs exactly while the subscriber grants nothing more."""
    clock = Clock()
    opened = Opened(numbers)
    async with await serve("tcp://127.0.0.1:0", {"numbers/{n}": opened}, metrics=True) as server:
        use_clock(server, clock)
        async with await connect(server.url) as conn:
            waiter = Waiter(initial=0)
            conn.publisher("numbers/5").subscribe(waiter)
            await opened.wait(1)
            row = server.metrics()["publishers"]["numbers/{n}"]
            assert (row["subscriptions_open"], row["demand_outstanding"], row["elements_sent"]) == (1, 0, 0)
            clock.now += 2.5
            row = server.metrics()["publishers"]["numbers/{n}"]
            assert row["stalled_demand_seconds"] == 2.5
            [stream] = server.metrics()["streams"]
            assert (stream["publisher"], stream["pattern"]) == ("numbers/5", "numbers/{n}")
            assert stream["demand"] == 0

            waiter.request(2)
            await waiter.wait(2)
            row = server.metrics()["publishers"]["numbers/{n}"]
            assert (row["elements_sent"], row["bytes_sent"], row["requests"], row["demand_granted"]) == (
                2,
                2 * SIZE,
                1,
                2,
            )
            clock.now += 1.5  # the two elements used the grant up: stalled on demand again
            assert server.metrics()["publishers"]["numbers/{n}"]["stalled_demand_seconds"] == 4.0

            waiter.request(10)
            await waiter.wait(5, done=True)
            assert waiter.completed
            clock.now += 7.0  # an ended stream stalls no more
            row = server.metrics()["publishers"]["numbers/{n}"]
            assert row["stalled_demand_seconds"] == 4.0
            assert (row["subscriptions_open"], row["subscriptions_total"], row["completed"]) == (0, 1, 1)
            assert (row["elements_sent"], row["requests"], row["demand_granted"]) == (5, 2, 12)
            assert server.metrics()["streams"] == []
            snapshot = server.metrics()
            assert (snapshot["connections_open"], snapshot["connections_total"]) == (1, 1)
            assert snapshot["bytes_sent"] > 5 * SIZE and snapshot["bytes_received"] > 0


async def test_errors_refusals_and_cancels_by_reason() -> None:
    def broken(params: dict[str, str]) -> Any:
        return rstreams.error(ValueError("no good"))

    offer = {"numbers/{n}": numbers, "broken": broken}
    async with await serve("tcp://127.0.0.1:0", offer, metrics=True) as server:
        async with await connect(server.url) as conn:
            with pytest.raises(RemoteStreamError, match="no publisher named"):
                await conn.request("users/42")
            with pytest.raises(RemoteStreamError, match="no good"):
                await conn.request("broken")
            waiter = Waiter(initial=1)
            conn.publisher("numbers/1000").subscribe(waiter)
            await waiter.wait(1)
            assert waiter.subscription is not None
            waiter.subscription.cancel()
            assert await conn.request("numbers/1") == (0).to_bytes(SIZE, "big")  # after the cancel's ack
        publishers = server.metrics()["publishers"]
        assert publishers["(unknown)"]["errors"] == {"unknown publisher": 1}
        assert publishers["broken"]["errors"] == {"publisher error": 1}
        assert (publishers["numbers/{n}"]["cancelled"], publishers["numbers/{n}"]["completed"]) == (1, 1)
        assert publishers["numbers/{n}"]["subscriptions_total"] == 2


async def test_names_asked_again_count_under_their_pattern_and_a_closed_connection_ends_its_streams() -> None:
    """A connection looks a name's pattern up once: the labels stay right when names come
    again; a stream cut off by its connection's end still counts as a subscription."""
    opened = Opened(lambda params: rstreams.interval(3600.0).map(lambda i: b"tick"))  # silent for an hour
    offer = {"numbers/{n}": numbers, "n": rstreams.just(b"x"), "quiet": opened}
    async with await serve("tcp://127.0.0.1:0", offer, metrics=True) as server:
        async with await connect(server.url) as conn:
            for name in ("numbers/2", "n", "numbers/2", "numbers/3", "n?x=1", "n"):
                if name.startswith("numbers/"):
                    waiter = Waiter(initial=100)
                    conn.publisher(name).subscribe(waiter)
                    await waiter.wait(done=True)
                else:
                    assert await conn.request(name) == b"x"
            conn.publisher("quiet").subscribe(Waiter(initial=1))
            await opened.wait(1)
            assert server.metrics()["publishers"]["quiet"]["subscriptions_open"] == 1
            [served] = server.connections
        await served.wait_closed()
        publishers = server.metrics()["publishers"]
    numbered = publishers["numbers/{n}"]
    assert (numbered["subscriptions_total"], numbered["completed"], numbered["elements_sent"]) == (3, 3, 7)
    assert (publishers["n"]["subscriptions_total"], publishers["n"]["completed"]) == (3, 3)
    quiet = publishers["quiet"]
    assert (quiet["subscriptions_total"], quiet["subscriptions_open"], quiet["completed"]) == (1, 0, 0)
    assert (quiet["cancelled"], quiet["errors"]) == (0, {})  # ended by the connection's end


async def test_connections_and_goodbyes() -> None:
    async with await serve("tcp://127.0.0.1:0", {"n": rstreams.just(b"x")}, metrics=True) as server:
        for _ in range(3):
            async with await connect(server.url) as conn:
                await conn.request("n")
                [served] = server.connections
            await served.wait_closed()
        snapshot = server.metrics()
        assert (snapshot["connections_open"], snapshot["connections_total"]) == (0, 3)
        assert snapshot["goodbyes"] == [{"direction": "received", "reason": "normal", "count": 3}]
        assert snapshot["elements_received"] == 0  # the server subscribed to nothing


async def test_a_closed_connections_bytes_stay_in_the_totals() -> None:
    """Byte counts are read from the connection when scraped, and once more when it closes."""
    async with await serve("tcp://127.0.0.1:0", {"n": rstreams.just(b"x")}, metrics=True) as server:
        async with await connect(server.url) as conn:
            await conn.request("n")
            [served] = server.connections
            open_ = server.metrics()
            assert open_["bytes_sent"] > 0 and open_["bytes_received"] > 0
        await served.wait_closed()
        closed = server.metrics()
        assert closed["connections_open"] == 0
        assert closed["bytes_sent"] >= open_["bytes_sent"]
        assert closed["bytes_received"] > open_["bytes_received"]  # the client's goodbye came since
        async with await connect(server.url) as conn:
            await conn.request("n")
            [served] = server.connections
            both = server.metrics()  # one connection closed, one open
        assert both["bytes_sent"] >= closed["bytes_sent"] + open_["bytes_sent"]
        assert both["bytes_received"] >= closed["bytes_received"] + open_["bytes_received"]


async def test_auth_failures_are_counted_without_the_secret() -> None:
    secret = "s3cret-CANARY-7731"

    def authenticate(credentials: Any) -> Any:
        return "alice" if getattr(credentials, "token", None) == secret else None

    async with await serve(
        "tcp://127.0.0.1:0",
        {"n": rstreams.just(b"x")},
        authenticate=authenticate,
        authorize=lambda who, name: name != "n",
        metrics=True,
    ) as server:
        conn = await connect(server.url, auth="wrong-" + secret)
        await conn.wait_closed()
        async with await connect(server.url, auth=secret) as good:
            with pytest.raises(RemoteStreamError, match="unauthorized"):
                await good.request("n")
        snapshot = server.metrics()
    assert snapshot["auth_failures"] == {"connection": 1, "subscription": 1}
    assert {"direction": "sent", "reason": "authentication failed", "count": 1} in snapshot["goodbyes"]
    assert secret not in repr(snapshot)


async def test_reasons_are_bounded_labels() -> None:
    assert goodbye_reason("") == "normal"
    assert goodbye_reason("idle timeout: nothing received for 60 s (PROTOCOL.md §14.2)") == "idle timeout"
    assert goodbye_reason("too many connections: this server accepts at most 3") == "too many connections"
    assert goodbye_reason("user 4711 asked to leave") == "other"
    assert stream_error_reason("no publisher named 'x'") == "unknown publisher"
    assert stream_error_reason("unauthorized: subscribe to 'x' ...") == "unauthorized"
    assert stream_error_reason("ValueError: 4711") == "publisher error"


async def test_stalled_on_the_socket_while_the_transport_is_full() -> None:
    """A stream with demand waits for the socket between pause_writing and resume_writing;
    one without demand is stalled on demand instead, never on both."""
    clock = Clock()
    metrics = ServerMetrics(clock)
    conn = metrics.connection()
    metrics.opened(conn)
    flowing = conn.stream_opened("a", "a", 1, initial_demand=100)
    starved = conn.stream_opened("b", "b", 2, initial_demand=0)
    conn.socket_paused()
    clock.now += 3.0
    flowing.sent(10, 80)  # elements the publisher had produced still go out; demand is left
    clock.now += 1.0
    conn.socket_resumed()
    clock.now += 5.0
    assert flowing.stalled(clock.now) == (0.0, 4.0)
    assert starved.stalled(clock.now) == (9.0, 0.0)
    snapshot = metrics.snapshot()
    assert snapshot["stalled_socket_seconds"] == 4.0
    assert snapshot["publishers"]["a"]["demand_outstanding"] == 90
    conn.closed()
    after = metrics.snapshot()
    assert after["connections_open"] == 0
    assert after["publishers"]["a"]["stalled_socket_seconds"] == 4.0
    assert after["publishers"]["b"]["stalled_demand_seconds"] == 9.0


async def test_a_channels_input_elements_are_counted_per_pattern() -> None:
    """Elements a client sends on a channel's input (PROTOCOL.md §21): on the stream while it is
    open, in its pattern's totals after."""

    def echo(source: Any, params: dict[str, str]) -> Any:
        return rstreams.from_publisher(source)

    async with (
        await serve("tcp://127.0.0.1:0", {}, channels={"echo/{k}": echo}, metrics=True) as server,
        await connect(server.url) as conn,
    ):
        waiter = Waiter(initial=3)
        conn.channel("echo/1", rstreams.from_iterable([b"a", b"b", b"c", b"d", b"e"])).subscribe(waiter)
        await waiter.wait(3)
        [stream] = server.metrics()["streams"]
        assert stream["input_elements_received"] >= 3 and stream["elements_sent"] == 3
        waiter.request(2)
        await waiter.wait(5, done=True)
        assert waiter.items == [b"a", b"b", b"c", b"d", b"e"]
        row = server.metrics()["publishers"]["echo/{k}"]
        assert (row["input_elements_received"], row["elements_sent"]) == (5, 5)
        assert server.metrics()["publishers"]["echo/{k}"]["subscriptions_open"] == 0
        assert set(server.metrics()["publishers"]) == {"echo/{k}"}  # the channel's pattern, not (unknown)
