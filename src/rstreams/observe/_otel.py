"""The server's numbers as OpenTelemetry observable instruments, when the application set up an SDK.

Theory of operation. ``serve(..., metrics=...)`` asks :func:`sdk_configured` whether the
application has installed an OpenTelemetry SDK ``MeterProvider`` (without importing
OpenTelemetry: only if the application already did). If so, :func:`bridge` registers one
observable instrument per metric family (:mod:`rstreams.observe._families`: the names and
meanings of docs/observability.md; counters as observable counters, the rest as gauges) on
the meter ``rstreams``. The SDK's reader calls them from its own thread; they share one
snapshot per collection, taken on the server's loop.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

from rstreams.observe._families import Family, families, snapshot_on_loop
from rstreams.observe._metrics import ServerMetrics

__all__ = ["COLLECT_TIMEOUT", "FRESH", "bridge", "sdk_configured"]

COLLECT_TIMEOUT = 5.0
"""Seconds a collection waits for the server's loop to take the snapshot."""

FRESH = 0.5
"""Seconds one snapshot serves the instruments (the SDK calls them one after another per collection)."""


def sdk_configured() -> bool:
    """Whether the application installed an OpenTelemetry SDK ``MeterProvider``."""
    api = sys.modules.get("opentelemetry.metrics")
    if api is None:
        return False
    provider = api.get_meter_provider()
    return type(provider).__module__.startswith("opentelemetry.sdk")


def bridge(
    metrics: ServerMetrics,
    loop: asyncio.AbstractEventLoop,
    meter_provider: Any = None,
    version: str = "",
    *,
    fresh: float = FRESH,
) -> list[Any]:
    """Register the instruments (on ``meter_provider``, default the global one); returns them.
    ``fresh``: seconds one snapshot answers the instruments (0: each takes its own)."""
    from opentelemetry import metrics as otel

    provider = meter_provider if meter_provider is not None else otel.get_meter_provider()
    meter = provider.get_meter("rstreams", version or None)
    cache: list[tuple[float, dict[str, Family]]] = []

    def current() -> dict[str, Family]:
        now = time.monotonic()
        if cache and now - cache[0][0] < fresh:
            return cache[0][1]
        snapshot = snapshot_on_loop(metrics, loop, COLLECT_TIMEOUT)
        found = {} if snapshot is None else {f.name: f for f in families(snapshot)}
        cache[:] = [(now, found)]
        return found

    def observer(name: str) -> Callable[[Any], Iterable[Any]]:
        def observe(options: Any) -> Iterable[Any]:
            family = current().get(name)
            if family is None:
                return []
            return [
                otel.Observation(value, dict(zip(family.labels, values, strict=True)))
                for values, value in family.samples
            ]

        return observe

    instruments = []
    for family in families(metrics.snapshot(streams=False)):
        create = (
            meter.create_observable_counter if family.kind == "counter" else meter.create_observable_gauge
        )
        instruments.append(create(family.name, callbacks=[observer(family.name)], description=family.doc))
    return instruments
