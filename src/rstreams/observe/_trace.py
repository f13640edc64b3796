"""Spans for subscriptions, parented by the W3C ``traceparent`` a subscribe carries (PROTOCOL.md §18).

Theory of operation. When the application has installed an OpenTelemetry SDK
``TracerProvider`` (checked without importing OpenTelemetry: only if the application already
did), each subscription gets one span on each side — ``rstreams subscribe`` on the client,
``rstreams serve`` on the server — whose parent is the ``traceparent`` entry of the
subscribe's metadata when it has one (so one trace follows a subscription across the
connection), else the caller's current span. A span records the events of the subscription:
``first element`` (once), ``cancel``, and ends with its outcome (``completed``, ``cancelled``,
``error`` with the reason as an error status, ``closed``). Without an SDK nothing is made.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["SubscriptionSpan", "traceparent_of", "tracer", "with_traceparent"]


def tracer() -> Any:
    """The ``rstreams`` tracer of the application's SDK ``TracerProvider``, or ``None``."""
    api = sys.modules.get("opentelemetry.trace")
    if api is None:
        return None
    provider = api.get_tracer_provider()
    if not type(provider).__module__.startswith("opentelemetry.sdk"):
        return None
    return provider.get_tracer("rstreams")


def _entries(metadata: bytes | None) -> dict[str, bytes]:
    """Encoded subscribe metadata (§18.1: the count and the entries) as a dict."""
    if not metadata:
        return {}
    from rstreams.wire._metadata import decode_metadata
    from rstreams.wire._varint import encode_varint

    try:
        return decode_metadata(encode_varint(0) + metadata, max_bytes=1 << 20, max_entries=1 << 10)[1]
    except Exception:  # ours, checked when encoded: cannot happen; then no trace context is read
        return {}


def traceparent_of(metadata: bytes | None) -> str | None:
    """The ``traceparent`` entry of encoded subscribe metadata, or ``None``."""
    value = _entries(metadata).get("traceparent")
    return None if value is None else value.decode("ascii", "replace")


def with_traceparent(metadata: bytes | None, traceparent: str) -> bytes | None:
    """``metadata`` (encoded) with a ``traceparent`` entry added (unchanged if ``traceparent`` is empty)."""
    if not traceparent:
        return metadata
    from rstreams.wire._metadata import encode_entries

    return encode_entries({**_entries(metadata), "traceparent": traceparent.encode("ascii")})


class SubscriptionSpan:
    """One side's span of one subscription."""

    __slots__ = ("_first", "_span")

    def __init__(
        self, tracer: Any, name: str, *, server: bool, traceparent: str | None, attributes: dict[str, Any]
    ) -> None:
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        context = None
        if traceparent:
            context = TraceContextTextMapPropagator().extract({"traceparent": traceparent})
        kind = trace.SpanKind.SERVER if server else trace.SpanKind.CLIENT
        self._span = tracer.start_span(name, context=context, kind=kind, attributes=attributes)
        self._first = False

    def traceparent(self) -> str:
        """This span as a ``traceparent`` value (what a client sends in the subscribe's metadata)."""
        from opentelemetry import trace
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        carrier: dict[str, str] = {}
        TraceContextTextMapPropagator().inject(carrier, trace.set_span_in_context(self._span))
        return carrier.get("traceparent", "")

    def element(self) -> None:
        """Elements flowed: the first time, an event."""
        if not self._first:
            self._first = True
            self._span.add_event("first element")

    def end(self, outcome: str, reason: str = "") -> None:
        """The subscription ended: ``completed``, ``cancelled``, ``error`` (``reason``) or ``closed``."""
        from opentelemetry.trace import Status, StatusCode

        span = self._span
        span.set_attribute("rstreams.outcome", outcome)
        if outcome == "cancelled":
            span.add_event("cancel")
        elif outcome in ("error", "closed"):
            span.set_status(Status(StatusCode.ERROR, reason or outcome))
        span.end()
