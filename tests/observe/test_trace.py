"""Spans for subscriptions: parented by a W3C traceparent, with the subscription's events."""

from __future__ import annotations

from typing import Any

import pytest

import rstreams
from rstreams.net import Metadata, RemoteStreamError, connect, serve
from rstreams.observe import ServerMetrics
from rstreams.observe._trace import tracer
from testkit.observe import Opened, Waiter

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(30)]

sdk = pytest.importorskip("opentelemetry.sdk.trace")
memory = pytest.importorskip("opentelemetry.sdk.trace.export.in_memory_span_exporter")
export = pytest.importorskip("opentelemetry.sdk.trace.export")

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{PARENT}-01"


def recording() -> tuple[Any, Any]:
    """A tracer of a provider of our own (the global one stays as the application left it)."""
    exporter = memory.InMemorySpanExporter()
    provider = sdk.TracerProvider()
    provider.add_span_processor(export.SimpleSpanProcessor(exporter))
    return provider.get_tracer("rstreams"), exporter


async def test_a_traceparent_becomes_the_spans_parent() -> None:
    spans, exporter = recording()
    metrics = ServerMetrics()
    metrics.tracer = spans
    conn = metrics.connection()
    metrics.opened(conn)
    stream = conn.stream_opened(
        "sensors/{id}", "sensors/7", 1, 10, Metadata({"traceparent": TRACEPARENT.encode()})
    )
    stream.sent(3, 24)
    stream.sent(2, 16)
    stream.ended("completed")
    [span] = exporter.get_finished_spans()
    assert span.name == "rstreams serve sensors/{id}"
    assert format(span.context.trace_id, "032x") == TRACE
    assert span.parent is not None and format(span.parent.span_id, "016x") == PARENT
    assert [event.name for event in span.events] == ["first element"]  # once, however many turns
    assert span.attributes["rstreams.publisher"] == "sensors/7"
    assert span.attributes["rstreams.outcome"] == "completed"
    assert span.kind.name == "SERVER"


async def test_cancel_and_error_show_in_the_span() -> None:
    spans, exporter = recording()
    opened = Opened(lambda params: rstreams.range(10**9).map(lambda i: b"x"))

    def broken(params: dict[str, str]) -> Any:
        return rstreams.error(ValueError("sensor offline"))

    async with await serve("tcp://127.0.0.1:0", {"s": opened, "broken": broken}, metrics=True) as server:
        assert server._metrics is not None
        server._metrics.tracer = spans
        async with await connect(server.url) as conn:
            waiter = Waiter(initial=5)
            conn.publisher("s").subscribe(waiter)
            await waiter.wait(5)
            assert waiter.subscription is not None
            waiter.subscription.cancel()
            with pytest.raises(RemoteStreamError):
                await conn.request("broken")
    by_name = {span.name: span for span in exporter.get_finished_spans()}
    cancelled, failed = by_name["rstreams serve s"], by_name["rstreams serve broken"]
    assert [e.name for e in cancelled.events] == ["first element", "cancel"]
    assert cancelled.parent is None  # no traceparent: a root span
    assert failed.status.status_code.name == "ERROR"
    assert "sensor offline" in (failed.status.description or "")


async def test_no_sdk_no_tracer() -> None:
    from opentelemetry import trace

    configured = type(trace.get_tracer_provider()).__module__.startswith("opentelemetry.sdk")
    assert (tracer() is not None) == configured


async def test_a_traceparent_in_subscribe_metadata_parents_both_sides(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """One trace across the connection: the client's and the server's span of the subscription
    are both children of the traceparent the subscribe carried (PROTOCOL.md §18)."""
    import logging

    spans, exporter = recording()
    caplog.set_level(logging.INFO, logger="rstreams.streams")  # so the client connection is observed
    offer = {"sensors/{id}": lambda params: rstreams.just(b"x", b"y")}
    server = await serve("tcp://127.0.0.1:0", offer, metrics=True)
    async with server, await connect(server.url) as conn:
        assert server._metrics is not None
        server._metrics.tracer = spans
        observer = conn._pump.outbox.observer
        assert observer is not None
        observer.server.tracer = spans
        try:
            traced = conn.publisher("sensors/7?token=hidden", metadata={"traceparent": TRACEPARENT})
            assert [x async for x in traced] == [b"x", b"y"]
            assert await conn.request("sensors/8") == b"x"  # no traceparent given
        finally:
            observer.server.tracer = None
    by_kind = {
        (span.kind.name, span.attributes["rstreams.publisher"]): span
        for span in exporter.get_finished_spans()
    }
    client, served = by_kind["CLIENT", "sensors/7"], by_kind["SERVER", "sensors/7"]
    for span in (client, served):
        assert format(span.context.trace_id, "032x") == TRACE
        assert span.parent is not None and format(span.parent.span_id, "016x") == PARENT
        assert [e.name for e in span.events] == ["first element"]
        assert span.attributes["rstreams.outcome"] == "completed"
    assert client.name == "rstreams subscribe" and served.name == "rstreams serve sensors/{id}"
    # without one, the client's span is a root and sends its own traceparent: the server's is its child
    root, child = by_kind["CLIENT", "sensors/8"], by_kind["SERVER", "sensors/8"]
    assert root.parent is None
    assert child.parent is not None and child.parent.span_id == root.context.span_id
    assert child.context.trace_id == root.context.trace_id


@pytest.mark.parametrize("call", ["request", "publisher"])
@pytest.mark.parametrize("metadata", [True, False])
async def test_a_subscribe_made_before_the_servers_hello_carries_the_traceparent(
    caplog: pytest.LogCaptureFixture, metadata: bool, call: str
) -> None:
    """Whether the server takes subscribe metadata is said in its hello (§4.4): while tracing, a
    subscribe made before it waits for it, so that the span's traceparent can go along (§18);
    a server without the extension gets the subscribe alone, and its span is a root."""
    import logging

    from rstreams.wire import ConnectionConfig, ConnectionState

    spans, exporter = recording()
    caplog.set_level(logging.INFO, logger="rstreams.streams")  # so the client connection is observed
    config = None if metadata else ConnectionConfig(disabled_extensions=frozenset({5}))
    server = await serve(
        "tcp://127.0.0.1:0", {"n": lambda params: rstreams.just(b"x")}, metrics=True, config=config
    )
    async with server:
        assert server._metrics is not None
        server._metrics.tracer = spans
        async with await connect(server.url) as conn:
            observer = conn._pump.outbox.observer
            assert observer is not None
            observer.server.tracer = spans
            try:
                assert conn._pump.outbox.core.state is ConnectionState.AWAITING_HELLO
                if call == "request":
                    assert await conn.request("n") == b"x"
                else:
                    assert [x async for x in conn.publisher("n")] == [b"x"]
            finally:
                observer.server.tracer = None
    by_kind = {span.kind.name: span for span in exporter.get_finished_spans()}
    client, served = by_kind["CLIENT"], by_kind["SERVER"]
    if metadata:
        assert served.parent is not None and served.parent.span_id == client.context.span_id
        assert served.context.trace_id == client.context.trace_id
    else:
        assert served.parent is None
