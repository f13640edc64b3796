"""The same numbers through OpenTelemetry's metrics SDK, when the application configured one."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import rstreams
from rstreams.net import connect, serve
from rstreams.observe._otel import bridge, sdk_configured
from testkit.observe import Opened, Waiter

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

sdk = pytest.importorskip("opentelemetry.sdk.metrics")
export = pytest.importorskip("opentelemetry.sdk.metrics.export")


def points(reader: Any) -> dict[tuple[str, tuple[tuple[str, Any], ...]], float]:
    data = reader.get_metrics_data()
    found = {}
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "rstreams"
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found[metric.name, tuple(sorted(point.attributes.items()))] = point.value
    return found


async def test_instruments_observe_the_running_server() -> None:
    reader = export.InMemoryMetricReader()
    provider = sdk.MeterProvider(metric_readers=[reader])
    opened = Opened(lambda params: rstreams.range(3).map(lambda i: b"e"))
    async with await serve("tcp://127.0.0.1:0", {"three": opened}, metrics=True) as server:
        assert server._metrics is not None
        bridge(server._metrics, asyncio.get_running_loop(), provider, fresh=0.0)
        async with await connect(server.url) as conn:
            waiter = Waiter(initial=0)
            conn.publisher("three").subscribe(waiter)
            await opened.wait(1)
            first = await asyncio.to_thread(points, reader)  # the SDK's thread, not the loop's
            assert first["rstreams_subscriptions_open", (("publisher", "three"),)] == 1
            assert first["rstreams_connections_open", ()] == 1
            waiter.request(3)
            await waiter.wait(3, done=True)
            second = await asyncio.to_thread(points, reader)
            assert second["rstreams_elements_sent", (("publisher", "three"),)] == 3
            assert second["rstreams_subscriptions_open", (("publisher", "three"),)] == 0
            assert points(reader)["rstreams_connections", ()] == 1  # on the loop's own thread too


async def test_only_an_installed_sdk_counts_as_configured() -> None:
    from opentelemetry import metrics

    assert sdk_configured() == type(metrics.get_meter_provider()).__module__.startswith("opentelemetry.sdk")
