"""The README's table of which base each building block uses, checked against the code."""

from __future__ import annotations

import asyncio
import concurrent.futures
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.api import Subscriber
from rstreams.flow._drain import DrainLoop, DrainSubscriber
from rstreams.flow._operator import OperatorFlow, OperatorSubscriber
from rstreams.flow._sinks import SinkSubscriber
from testkit.recording import RecordingSubscriber

README = Path(__file__).resolve().parents[2] / "README.md"
BASES: dict[str, type] = {
    "OperatorSubscriber": OperatorSubscriber,
    "DrainSubscriber": DrainSubscriber,
    "DrainLoop": DrainLoop,
    "SinkSubscriber": SinkSubscriber,
}


def _table() -> dict[str, str]:
    """``{building block: base}`` from the rows after ``<!-- bases -->``."""
    text = README.read_text().split("<!-- bases -->", 1)[1]
    rows: dict[str, str] = {}
    for line in text.splitlines()[3:]:
        if not line.startswith("|"):
            break
        names, base = line.split("|")[1:3]
        first_base = re.findall(r"`(\w+)`", base)[0]
        for name in re.findall(r"`(\w+)`", names):
            rows[name] = first_base
    return rows


def _inner(flow: rstreams.Flow[Any]) -> object:
    """The inner subscriber of the operator a Flow method wrapped (Flow only wraps it)."""
    operator = getattr(flow, "publisher", None)
    assert isinstance(operator, OperatorFlow), f"{type(flow).__name__} does not wrap an OperatorFlow"
    return operator.subscriber(RecordingSubscriber())


def _subscription(flow: rstreams.Publisher[Any]) -> object:
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    flow.subscribe(s)
    s.cancel()
    return s.subscription


class _Capture(rstreams.Flow[Any]):
    """Keeps the Subscriber that subscribes (the sink's), signalling nothing."""

    def __init__(self) -> None:
        self.subscriber: Subscriber[Any] | None = None

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        self.subscriber = subscriber


def _shared(flow: rstreams.Flow[Any]) -> object:
    """The processor a ``share()`` subscribes to its source for its first subscriber."""
    flow.subscribe(RecordingSubscriber())
    return flow.publisher._processor  # type: ignore[attr-defined]


def _sink(start: Callable[[rstreams.Flow[Any]], object]) -> object:
    capture = _Capture()
    start(capture)
    return capture.subscriber


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    event_loop = asyncio.new_event_loop()
    yield event_loop
    event_loop.close()


def _examples(loop: asyncio.AbstractEventLoop) -> dict[str, Callable[[], object]]:
    source = rstreams.range(0, 3)
    push: rstreams.PushSource[int] = rstreams.PushSource(overflow=rstreams.OverflowStrategy.DROP)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    pool.shutdown()
    return {
        "map": lambda: _inner(source.map(str)),
        "filter": lambda: _inner(source.filter(bool)),
        "take": lambda: _inner(source.take(1)),
        "skip": lambda: _inner(source.skip(1)),
        "buffer": lambda: _inner(source.buffer(2)),
        "concat_map": lambda: _inner(source.concat_map(rstreams.just)),
        "flat_map": lambda: _inner(source.flat_map(rstreams.just)),
        "merge": lambda: _inner(rstreams.merge(source, source)),
        "observe_on": lambda: _inner(source.observe_on(pool)),
        "scan": lambda: _inner(source.scan(max, 0)),
        "distinct": lambda: _inner(source.distinct()),
        "distinct_until_changed": lambda: _inner(source.distinct_until_changed()),
        "take_while": lambda: _inner(source.take_while(bool)),
        "skip_while": lambda: _inner(source.skip_while(bool)),
        "start_with": lambda: _inner(source.start_with(1)),
        "take_until": lambda: _inner(source.take_until(source)),
        "skip_until": lambda: _inner(source.skip_until(source)),
        "first": lambda: _inner(source.first()),
        "last": lambda: _inner(source.last()),
        "element_at": lambda: _inner(source.element_at(1)),
        "tap": lambda: _inner(source.tap(print)),
        "do_on_next": lambda: _inner(source.do_on_next(print)),
        "do_on_error": lambda: _inner(source.do_on_error(print)),
        "do_on_complete": lambda: _inner(source.do_on_complete(print)),
        "do_on_cancel": lambda: _inner(source.do_on_cancel(print)),
        "do_on_request": lambda: _inner(source.do_on_request(print)),
        "retry": lambda: _inner(source.retry(1)),
        "retry_when": lambda: _inner(source.retry_when(bool)),
        "on_error_resume": lambda: _inner(source.on_error_resume(lambda e: source)),
        "on_error_return": lambda: _inner(source.on_error_return(0)),
        "concat": lambda: _inner(rstreams.concat(source, source)),
        "concat_with": lambda: _inner(source.concat_with(source)),
        "zip": lambda: _inner(rstreams.zip(source, source)),
        "zip_with": lambda: _inner(source.zip_with(source)),
        "combine_latest": lambda: _inner(rstreams.combine_latest(source, source)),
        "combine_latest_with": lambda: _inner(source.combine_latest_with(source)),
        "race": lambda: _inner(rstreams.race(source, source)),
        "amb": lambda: _inner(rstreams.amb(source, source)),
        "race_with": lambda: _inner(source.race_with(source)),
        "switch_map": lambda: _inner(source.switch_map(rstreams.just)),
        "with_latest_from": lambda: _inner(source.with_latest_from(source)),
        "debounce": lambda: _inner(source.debounce(1, loop=loop)),
        "throttle_first": lambda: _inner(source.throttle_first(1, loop=loop)),
        "throttle_latest": lambda: _inner(source.throttle_latest(1, loop=loop)),
        "sample": lambda: _inner(source.sample(1, loop=loop)),
        "delay": lambda: _inner(source.delay(1, loop=loop)),
        "timeout": lambda: _inner(source.timeout(1, loop=loop)),
        "buffer_time": lambda: _inner(source.buffer_time(1, loop=loop)),
        "limit_rate": lambda: _inner(source.limit_rate(4)),
        "on_backpressure_buffer": lambda: _inner(source.on_backpressure_buffer(4)),
        "on_backpressure_drop": lambda: _inner(source.on_backpressure_drop()),
        "on_backpressure_latest": lambda: _inner(source.on_backpressure_latest()),
        "subscribe_on": lambda: _inner(source.subscribe_on(pool)),
        "publish_on": lambda: _inner(source.publish_on(pool)),
        "share": lambda: _shared(source.share()),
        "ref_count": lambda: _shared(source.ref_count()),
        "replay": lambda: _shared(source.replay(2)),
        "group_by": lambda: _inner(source.group_by(str)),
        "window": lambda: _inner(source.window(2)),
        "window_time": lambda: _inner(source.window_time(1, loop=loop)),
        "from_iterable": lambda: _subscription(rstreams.from_iterable([1])),
        "range": lambda: _subscription(source),
        "just": lambda: _subscription(rstreams.just(1)),
        "empty": lambda: _subscription(rstreams.empty()),
        "error": lambda: _subscription(rstreams.error(ValueError())),
        "from_push": lambda: _subscription(
            rstreams.from_push(lambda _: None, overflow=rstreams.OverflowStrategy.DROP)
        ),
        "PushSource": lambda: _subscription(push),
        "interval": lambda: _subscription(rstreams.interval(1, loop=loop)),
        "timer": lambda: _subscription(rstreams.timer(1, loop=loop)),
        "from_observable": lambda: _subscription(rstreams.from_observable(_observable())),
        "MulticastProcessor": lambda: rstreams.MulticastProcessor(),
        "collect": lambda: _sink(lambda f: f.collect()),
        "reduce": lambda: _sink(lambda f: f.reduce(max, 0)),
        "count": lambda: _sink(lambda f: f.count()),
        "for_each": lambda: _sink(lambda f: f.for_each(print)),
    }


def _observable() -> Any:
    import reactivex

    return reactivex.of(1, 2)


def test_every_building_block_uses_the_base_the_readme_names(loop: asyncio.AbstractEventLoop) -> None:
    """One row per building block; each object is an instance of the base in its row."""
    table = _table()
    examples = _examples(loop)
    assert set(table) == set(examples)
    wrong = {
        name: type(example()).__name__
        for name, example in examples.items()
        if not isinstance(example(), BASES[table[name]])
    }
    assert wrong == {}


# Flow methods that are sinks or adapters: the README lists them beside the sources, not as operators
NOT_OPERATORS = {"subscribe", "pipe", "collect", "reduce", "count", "for_each", "iter_async", "iter_blocking"}
NOT_OPERATORS |= {"to_observable"}


def _operator_table() -> set[str]:
    """Every name a row of the table after ``<!-- operators -->`` starts with (``name(`` or ``name``)."""
    text = README.read_text().split("<!-- operators -->", 1)[1]
    names: set[str] = set()
    for line in text.splitlines()[3:]:
        if not line.startswith("|"):
            break
        first = line.split("|")[1]
        names |= set(re.findall(r"`(\w+)\(", first)) | set(re.findall(r"`(\w+)`", first))
    return names


def test_the_readme_operator_table_lists_exactly_the_operators() -> None:
    """Each Flow operator has a row; each name in the table is a Flow method or an rstreams function."""
    table = _operator_table()
    methods = {name for name in dir(rstreams.Flow) if not name.startswith("_")}
    assert methods - NOT_OPERATORS - table == set()
    assert {name for name in table - methods if not callable(getattr(rstreams, name, None))} == set()
