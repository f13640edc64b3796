"""/metrics: scraped over HTTP from a real server under a real stream."""

from __future__ import annotations

import errno
import re
import socket
import sys
import urllib.error
import urllib.request
from typing import Any

import pytest

import rstreams
from rstreams.errors import MissingExtraError
from rstreams.net import connect, serve
from rstreams.observe import MetricsExpositionError
from rstreams.observe._prometheus import parse_address
from testkit.observe import Clock, Opened, Waiter, scrape, use_clock

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

pytest.importorskip("prometheus_client")


def numbers(params: dict[str, str]) -> Any:
    return rstreams.range(int(params["n"])).map(lambda i: i.to_bytes(8, "big"))


async def test_scrape_moves_with_the_stream() -> None:
    clock = Clock()
    opened = Opened(numbers)
    server = await serve("tcp://127.0.0.1:0", {"numbers/{n}": opened}, metrics="127.0.0.1:0")
    async with server:
        use_clock(server, clock)
        url = server.metrics_url
        assert url is not None and url.startswith("http://127.0.0.1:") and url.endswith("/metrics")
        label = (("publisher", "numbers/{n}"),)
        async with await connect(server.url) as conn:
            waiter = Waiter(initial=0)
            conn.publisher("numbers/4").subscribe(waiter)
            await opened.wait(1)
            first = await scrape(url)
            assert first["rstreams_connections_open", ()] == 1
            assert first["rstreams_subscriptions_open", label] == 1
            assert first["rstreams_stalled_demand_seconds_total", label] == 0
            clock.now += 3.0  # the subscriber withholds demand meanwhile
            second = await scrape(url)
            assert second["rstreams_stalled_demand_seconds_total", label] == 3.0
            assert second["rstreams_demand_outstanding", label] == 0
            waiter.request(4)
            await waiter.wait(4, done=True)
            third = await scrape(url)
            assert third["rstreams_elements_sent_total", label] == 4
            assert third["rstreams_element_bytes_sent_total", label] == 32
            assert third["rstreams_subscriptions_ended_total", (("outcome", "completed"), *label)] == 1
            assert third["rstreams_bytes_sent_total", ()] > first["rstreams_bytes_sent_total", ()]
    assert server.metrics_url == url  # closed with the server: the port no longer answers
    with pytest.raises(urllib.error.URLError, match="refused"):
        await scrape(url)


async def test_unbounded_demand_is_shown_as_infinite() -> None:
    opened = Opened(lambda params: rstreams.interval(3600.0).map(lambda i: b"tick"))  # silent for an hour
    server = await serve("tcp://127.0.0.1:0", {"s": opened}, metrics="127.0.0.1:0")
    async with server, await connect(server.url) as conn:
        waiter = Waiter(initial=rstreams.UNBOUNDED)
        conn.publisher("s").subscribe(waiter)
        await opened.wait(1)
        samples = await scrape(str(server.metrics_url))
    assert samples["rstreams_demand_outstanding", (("publisher", "s"),)] == float("inf")
    assert samples["rstreams_demand_granted_total", (("publisher", "s"),)] == 0  # not counted


async def test_bad_addresses_are_refused_by_name() -> None:
    for bad in ("9464", "host:", ":9464", "host:99999", "host:http"):
        with pytest.raises(ValueError, match="metrics must be 'host:port'"):
            parse_address(bad)
    assert parse_address("[::1]:9464") == ("::1", 9464)
    with pytest.raises(ValueError, match="metrics must be 'host:port'"):
        await serve("tcp://127.0.0.1:0", {}, metrics="nowhere")


async def test_metrics_without_prometheus_client_is_a_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """``metrics='host:port'`` without prometheus_client: MissingExtraError (an ImportError, as for
    the other extras) quoting the install command; the server is closed again."""
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import fails: not installed
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'rstreams[metrics]'")) as caught:
        await serve("tcp://127.0.0.1:0", {}, metrics="127.0.0.1:0")
    assert issubclass(MissingExtraError, ImportError) and caught.value.name == "prometheus_client"


async def test_a_taken_metrics_port_raises_its_own_error_and_closes_the_server() -> None:
    """``metrics=`` at a taken port: MetricsExpositionError (an OSError too) with the address,
    and the serving port, bound first, is released again."""
    with socket.socket() as taken, socket.socket() as serving:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        serving.bind(("127.0.0.1", 0))
        port = serving.getsockname()[1]
        serving.close()  # a free port to serve on, so the test can see it released afterwards
        metrics_port = taken.getsockname()[1]
        with pytest.raises(MetricsExpositionError) as caught:
            await serve(f"tcp://127.0.0.1:{port}", {}, metrics=f"127.0.0.1:{metrics_port}")
    bad = caught.value
    assert issubclass(MetricsExpositionError, OSError)  # so `except OSError` clauses still catch it
    assert issubclass(MetricsExpositionError, rstreams.ReactiveStreamsError)
    assert (bad.host, bad.port, bad.errno) == ("127.0.0.1", metrics_port, errno.EADDRINUSE)
    assert isinstance(bad.__cause__, OSError)
    server = await serve(f"tcp://127.0.0.1:{port}", {})  # the serving port is free again
    await server.aclose()


async def test_a_taken_serving_port_is_a_plain_oserror_even_with_metrics() -> None:
    """The serving address is bound first: taken, it fails as before, not as the exposition."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        try:
            await serve(f"tcp://127.0.0.1:{taken.getsockname()[1]}", {}, metrics="127.0.0.1:0")
        except OSError as bad:
            failure = bad
        else:
            pytest.fail("serving on a taken port succeeded")
    assert not isinstance(failure, MetricsExpositionError)
    assert failure.errno == errno.EADDRINUSE
