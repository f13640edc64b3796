"""Every operator of docs/operators.md under the same checks, from one table.

* PublisherVerification: every operator is verified in tests/flow; :data:`VERIFIED_IN`
  names the test module that does it, and this module verifies the rest (:data:`HERE`).
* Exact demand: ``request(N)`` of an ``N``-element stream gets the ``N`` elements and
  ``on_complete``, and so do ``N`` requests of one: no spare demand is needed to end.
* Re-entrant demand: a subscriber that asks for one more inside each ``on_next`` gets a
  long stream whole (rule 3.3: such a request only adds demand, nothing recurses), and so
  does one that asks for ``2**63 - 2`` more each time (rule 3.17: the demand owed
  saturates, no error); the TCK leaves that case out below ``2**31`` elements.
* Cancel, after an element or inside the first ``on_next``: reaches the upstream and every
  inner Publisher subscribed, once, lets go of the operator's timers, and nothing follows
  that ``on_next`` (rules 3.5, 3.13).
* After the stream's error, or the downstream's cancel, nothing more reaches the
  downstream, whatever the sides send late (rules 1.7, 1.8: cases the TCK leaves
  untested).
* Bounds: with a downstream that stopped asking, an operator whose section states a bound
  asks its upstream for no more than that; ``combine_latest`` and ``switch_map``, which
  consume past the downstream's demand by design, drop all but the newest and owe no
  more than their sections state.
* Held elements: an operator that asks for more than the demand is in the table of what an
  upstream error does to the elements it holds, or holds none it would deliver.
* Groups after a cancel: an outer subscriber that asked for exactly ``N`` groups and
  cancels leaves nothing held for the groups nobody subscribed to, and no upstream running
  for them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import gc
import operator
import re
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import rstreams
from rstreams.api import Publisher, Subscriber, Subscription
from rstreams.errors import set_unhandled_error_hook
from testkit.broken_subscribers import PassThrough
from testkit.clock import Stepped, VirtualLoop, clock_and_loop
from testkit.publishers import ManualPublisher
from testkit.recording import RecordingSubscriber

pytestmark = pytest.mark.timeout(120)

DOC = Path(__file__).resolve().parents[2] / "docs" / "operators.md"
TESTS = Path(__file__).resolve().parent
N = 5
LONG = 3000  # past Python's default recursion limit: one frame per element would overflow
Flow = rstreams.Flow
Loop = asyncio.AbstractEventLoop
Pool = concurrent.futures.Executor
Make = Callable[[int], Publisher[Any]]


def _documented() -> list[str]:
    return re.findall(r"^### `([a-z_]+)\(", DOC.read_text(encoding="utf-8"), re.M)


@pytest.fixture(scope="module")
def pool() -> Iterator[Pool]:
    with concurrent.futures.ThreadPoolExecutor(2) as executor:
        yield executor


class _Never(Publisher[int]):
    """Subscribes and never signals again (an ``other`` that never fires)."""

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        subscriber.on_subscribe(_Quiet())


class _Quiet(Subscription):
    def request(self, n: int) -> None:
        """Never sends anything."""

    def cancel(self) -> None:
        """Nothing to stop."""


class _FailsOnce(Publisher[int]):
    """The first subscription fails at once; later ones are ``range(n)``."""

    def __init__(self, n: int) -> None:
        self.n, self.failed = n, False

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        failed, self.failed = self.failed, True
        source = rstreams.range(0, self.n) if failed else rstreams.error(ConnectionError("not yet"))
        source.subscribe(subscriber)


class _Gate(Publisher[int], Subscription):
    """``range(n)`` that sends only what :meth:`allow` let through (see :class:`_Gated`)."""

    def __init__(self, n: int) -> None:
        self.n, self.next, self.credit = n, 0, 0
        self.subscriber: Subscriber[int] | None = None
        self.emitting = self.stopped = False

    def subscribe(self, subscriber: Subscriber[int]) -> None:
        self.subscriber = subscriber
        subscriber.on_subscribe(self)
        self.allow(0)  # an empty range completes at once

    def request(self, n: int) -> None:
        """The on_backpressure operators ask for everything; the gate keeps to :meth:`allow`."""

    def cancel(self) -> None:
        self.stopped = True

    def allow(self, n: int) -> None:
        """Let ``n`` more through; a call from inside ``on_next`` only adds (a trampoline)."""
        self.credit = min(self.credit + n, rstreams.UNBOUNDED)
        subscriber = self.subscriber
        if self.emitting or subscriber is None:
            return
        self.emitting = True
        try:
            while self.credit and self.next < self.n and not self.stopped:
                self.credit -= 1
                self.next += 1
                subscriber.on_next(self.next - 1)
            if self.next == self.n and not self.stopped:
                self.stopped = True
                subscriber.on_complete()
        finally:
            self.emitting = False


class _Gated(Publisher[Any]):
    """``build(gate)`` whose gate sends only what the subscriber asked for, after the operator
    has the demand: the on_backpressure operators ask their upstream for everything, and a
    source that sent it all at once would leave nothing for them to deliver but what they
    keep. So exactly ``n`` arrive, and what they hold or drop is their own doing."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.build: Callable[[Flow[int]], Flow[Any]] = lambda f: f

    def flow(self, build: Callable[[Flow[int]], Flow[Any]]) -> Flow[Any]:
        self.build = build
        return rstreams.from_publisher(self)

    def subscribe(self, subscriber: Subscriber[Any]) -> None:
        gate = _Gate(self.n)
        self.build(rstreams.from_publisher(gate)).subscribe(_Opener(subscriber, gate))


class _Opener(PassThrough):
    """Passes everything through; each ``request(n)`` goes to the operator, then opens the gate."""

    def __init__(self, downstream: Subscriber[Any], gate: _Gate) -> None:
        super().__init__(downstream)
        self.gate = gate

    def request(self, n: int) -> None:
        super().request(n)
        if n > 0:
            self.gate.allow(n)


def _failed() -> Flow[int]:
    return rstreams.error(KeyError("failed on purpose"))


def _groups(n: int) -> Publisher[Any]:
    """The Flow of groups itself: ``n`` groups of one, nobody subscribing to them."""
    return rstreams.range(0, n).group_by(lambda x: x, max_groups=1024, prefetch=1024)


def _stepped(build: Callable[[Flow[int], Loop], Flow[Any]], step: float = 1.0) -> Make:
    """``build(source, loop)`` over ``range(n)`` moving a virtual clock ``step`` after each element."""

    def make(n: int) -> Publisher[Any]:
        clock, loop = clock_and_loop()
        return build(rstreams.from_publisher(Stepped(n, clock, step)), loop)

    return make


def _sized(pool: Pool) -> dict[str, tuple[Make, int]]:
    """Each documented operator as a Publisher of exactly ``n`` elements, ``n`` up to the bound."""
    r = rstreams.range
    many = 2**62

    def element(pick: Callable[[Flow[int]], Flow[int]]) -> Make:
        return lambda n: pick(r(0, 3)) if n == 1 else r(0, 0)

    return {
        "map": (lambda n: r(0, n).map(lambda x: x + 1), many),
        # what is dropped comes first: a drop at the end is learnt only by pulling once more
        "filter": (lambda n: r(-n, n).filter(lambda x: x >= 0), many),
        "scan": (lambda n: r(0, n).scan(operator.add, 0), many),
        "buffer": (lambda n: r(0, 2 * n).buffer(2), many),
        "distinct": (lambda n: r(-min(n, 1), n).map(lambda x: max(x, 0)).distinct(), many),
        "distinct_until_changed": (
            lambda n: r(-min(n, 1), n).map(lambda x: max(x, 0)).distinct_until_changed(),
            many,
        ),
        "take": (lambda n: r(0, n + 3).take(n), many),
        "skip": (lambda n: r(0, n + 3).skip(3), many),
        "take_while": (lambda n: r(0, n).take_while(lambda x: x >= 0), many),
        "skip_while": (lambda n: r(-3, n).skip_while(lambda x: x < 0), many),
        "take_until": (lambda n: r(0, n).take_until(_Never()), many),
        "skip_until": (lambda n: r(0, n).skip_until(rstreams.just(0)), many),
        "start_with": (lambda n: r(0, n - 2).start_with(-1, -2), many),
        "first": (element(lambda f: f.first()), 1),
        "last": (element(lambda f: f.last()), 1),
        "element_at": (element(lambda f: f.element_at(1)), 1),
        "tap": (lambda n: r(0, n).tap(lambda _: None, on_complete=lambda: None), many),
        "do_on_next": (lambda n: r(0, n).do_on_next(lambda _: None), many),
        "do_on_error": (lambda n: r(0, n).do_on_error(lambda _: None), many),
        "do_on_complete": (lambda n: r(0, n).do_on_complete(lambda: None), many),
        "do_on_cancel": (lambda n: r(0, n).do_on_cancel(lambda: None), many),
        "do_on_request": (lambda n: r(0, n).do_on_request(lambda _: None), many),
        "retry": (lambda n: rstreams.from_publisher(_FailsOnce(n)).retry(1), many),
        "retry_when": (lambda n: rstreams.from_publisher(_FailsOnce(n)).retry_when(lambda e: True), many),
        "on_error_resume": (lambda n: _failed().on_error_resume(lambda e: r(0, n)), many),
        "on_error_return": (lambda n: r(0, n - 1).concat_with(_failed()).on_error_return(-1), many),
        "timeout": (lambda n: r(0, n).timeout(60, loop=clock_and_loop()[1]), many),
        "concat": (lambda n: rstreams.concat(r(0, n // 2), r(0, n - n // 2)), many),
        "concat_with": (lambda n: r(0, n // 2).concat_with(r(0, n - n // 2)), many),
        "merge": (lambda n: rstreams.merge(r(0, n // 2), r(0, n - n // 2)), many),
        "merge_with": (lambda n: r(0, n // 2).merge_with(r(0, n - n // 2)), many),
        "zip": (lambda n: rstreams.zip(r(0, n), r(0, n + 3)), many),
        "zip_with": (lambda n: r(0, n + 3).zip_with(r(0, n)), many),
        "combine_latest": (lambda n: rstreams.combine_latest(rstreams.just(0), r(0, n)), many),
        "combine_latest_with": (lambda n: rstreams.just(0).combine_latest_with(r(0, n)), many),
        "race": (lambda n: rstreams.race(r(0, n), _Never()), many),
        "amb": (lambda n: rstreams.amb(r(0, n), _Never()), many),
        "race_with": (lambda n: r(0, n).race_with(_Never()), many),
        "with_latest_from": (lambda n: r(0, n).with_latest_from(rstreams.just(0)), many),
        "concat_map": (lambda n: r(0, n).concat_map(rstreams.just), many),
        "flat_map": (lambda n: r(0, n).flat_map(rstreams.just), many),
        "switch_map": (lambda n: rstreams.just(0).switch_map(lambda _: r(0, n)), many),
        "group_by": (lambda n: r(0, n).group_by(lambda x: x % 3).flat_map(lambda g: g), many),
        "window": (lambda n: r(0, n).window(3).concat_map(lambda w: w), many),
        "window_time": (
            _stepped(lambda f, loop: f.window_time(1.0, loop=loop).concat_map(lambda w: w), 0.5),
            many,
        ),
        "buffer_time": (_stepped(lambda f, loop: f.buffer_time(60, max_size=1, loop=loop)), many),
        "debounce": (_stepped(lambda f, loop: f.debounce(1.0, loop=loop)), many),
        "throttle_first": (_stepped(lambda f, loop: f.throttle_first(0.5, loop=loop)), many),
        "throttle_latest": (_stepped(lambda f, loop: f.throttle_latest(1.0, loop=loop)), many),
        "sample": (_stepped(lambda f, loop: f.sample(1.0, loop=loop)), many),
        "delay": (_stepped(lambda f, loop: f.delay(0.5, loop=loop)), many),
        "limit_rate": (lambda n: r(0, n).limit_rate(4, low=2), many),
        "on_backpressure_buffer": (lambda n: _Gated(n).flow(lambda f: f.on_backpressure_buffer(4)), many),
        "on_backpressure_drop": (lambda n: _Gated(n).flow(lambda f: f.on_backpressure_drop()), many),
        "on_backpressure_latest": (lambda n: _Gated(n).flow(lambda f: f.on_backpressure_latest()), many),
        "observe_on": (lambda n: r(0, n).observe_on(pool, buffer_size=4), many),
        "publish_on": (lambda n: r(0, n).publish_on(pool, buffer_size=4), many),
        "subscribe_on": (lambda n: r(0, n).subscribe_on(pool), many),
        "share": (lambda n: r(0, n).share(buffer_size=4), many),
        "ref_count": (lambda n: r(0, n).ref_count(buffer_size=4), many),
        "replay": (lambda n: r(0, n).replay(2, buffer_size=4), many),
    }


VERIFIED_IN: dict[str, str] = {
    **dict.fromkeys(["map"], "test_map.py"),
    **dict.fromkeys(["filter"], "test_filter.py"),
    **dict.fromkeys(["buffer"], "test_buffer.py"),
    **dict.fromkeys(["take", "skip"], "test_take.py"),
    **dict.fromkeys(
        ["scan", "distinct", "distinct_until_changed", "take_while", "skip_while", "start_with"],
        "test_transform.py",
    ),
    **dict.fromkeys(["take_until", "skip_until", "with_latest_from"], "test_until.py"),
    **dict.fromkeys(["first", "last", "element_at"], "test_element.py"),
    **dict.fromkeys(["tap", "do_on_next", "do_on_complete", "do_on_cancel", "do_on_request"], "test_tap.py"),
    **dict.fromkeys(["retry", "retry_when", "on_error_resume", "on_error_return"], "test_recover.py"),
    **dict.fromkeys(
        ["timeout", "buffer_time", "debounce", "throttle_first", "throttle_latest", "sample", "delay"],
        "test_timeops.py",
    ),
    **dict.fromkeys(["concat", "zip", "combine_latest", "race", "switch_map"], "test_combine.py"),
    **dict.fromkeys(["merge", "flat_map"], "test_merge.py"),
    **dict.fromkeys(["concat_map"], "test_concat_map.py"),
    **dict.fromkeys(["window", "window_time"], "test_window.py"),
    **dict.fromkeys(["limit_rate", "on_backpressure_buffer", "subscribe_on"], "test_rate.py"),
    **dict.fromkeys(["observe_on"], "test_observe_on.py"),
    **dict.fromkeys(["share", "ref_count", "replay"], "test_share.py"),
}
"""Operator -> the test module whose PublisherVerification covers it."""

HERE = [
    "do_on_error",
    "concat_with",
    "merge_with",
    "zip_with",
    "combine_latest_with",
    "race_with",
    "amb",
    "group_by",
    "on_backpressure_drop",
    "on_backpressure_latest",
    "publish_on",
]
"""Operators this module runs the PublisherVerification on."""


def test_every_documented_operator_is_in_the_table_and_verified_once() -> None:
    """The table, VERIFIED_IN and HERE list exactly the operators docs/operators.md documents."""
    documented = _documented()
    assert sorted(_sized(concurrent.futures.ThreadPoolExecutor(1))) == sorted(documented)
    assert sorted([*VERIFIED_IN, *HERE]) == sorted(documented)


@pytest.mark.parametrize("name", sorted(VERIFIED_IN))
def test_the_module_named_runs_the_verification_on_the_operator(name: str) -> None:
    """A check that VERIFIED_IN is not stale: that module calls verify_publisher and names it."""
    text = (TESTS / VERIFIED_IN[name]).read_text(encoding="utf-8")
    assert "verify_publisher(" in text
    assert re.search(rf"""(\.|["'])({name})(\(|["'])""", text), f"{VERIFIED_IN[name]} never names {name}"


@pytest.mark.parametrize("name", HERE)
def test_passes_the_publisher_verification(name: str, pool: Pool) -> None:
    """Every required PublisherVerification case (rules 1.x-3.x)."""
    from rstreams.tck import verify_publisher

    make, bound = _sized(pool)[name]
    if name == "group_by":
        make = _groups
    failing: Callable[[Flow[int]], Publisher[Any]] = {
        "do_on_error": lambda f: f.do_on_error(lambda _: None),
        "concat_with": lambda f: f.concat_with(rstreams.range(0, 3)),
        "merge_with": lambda f: f.merge_with(rstreams.range(0, 3)),
        "zip_with": lambda f: f.zip_with(rstreams.range(0, 3)),
        "combine_latest_with": lambda f: rstreams.range(0, 3).combine_latest_with(f),
        "race_with": lambda f: f.race_with(_Never()),
        "amb": lambda f: rstreams.amb(f, _Never()),
        "group_by": lambda f: f.group_by(lambda x: x),
        "on_backpressure_drop": lambda f: f.on_backpressure_drop(),
        "on_backpressure_latest": lambda f: f.on_backpressure_latest(),
        "publish_on": lambda f: f.publish_on(pool),
    }[name]
    report = verify_publisher(
        make,
        create_failed_publisher=lambda: failing(rstreams.error(RuntimeError("failed"))),
        max_elements=min(bound, 1000),
    )
    assert report.ok, str(report)


@pytest.mark.parametrize("each", ["n", "1"], ids=["request-n", "n-requests-of-1"])
@pytest.mark.parametrize("name", _documented())
def test_requesting_exactly_n_of_n_completes_with_the_last(name: str, each: str, pool: Pool) -> None:
    """``request(N)``, or N requests of one, each once the previous element came: the N
    elements, then on_complete; no spare demand is needed to end."""
    make, bound = _sized(pool)[name]
    n = min(N, bound)
    step = n if each == "n" else 1
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    make(n).subscribe(s)
    s.await_subscribed()
    for taken in range(step, n + 1, step):
        s.request(step)
        s.await_items(taken)
    s.await_done()
    assert len(s.items) == n and s.completed, (s.items, s.signals[-1])


class _AsksAgain(RecordingSubscriber[Any]):
    """Asks for ``each`` elements at first, and for ``each`` more inside each on_next."""

    def __init__(self, each: int) -> None:
        super().__init__(initial=each)
        self.each = each

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        self.request(self.each)


@pytest.mark.parametrize("each", [1, rstreams.UNBOUNDED - 1], ids=["one-more", "past-unbounded"])
@pytest.mark.parametrize("name", _documented())
def test_a_request_inside_on_next_only_adds_demand(name: str, each: int, pool: Pool) -> None:
    """A long stream whose subscriber asks again inside each on_next: one more at a time,
    it neither recurses (RecursionError) nor stalls (rule 3.3); ``2**63 - 2`` more at a time,
    the demand owed passes ``2**63 - 1`` and stays there, no error (rule 3.17)."""
    make, bound = _sized(pool)[name]
    n = min(LONG, bound)
    s = _AsksAgain(each)
    make(n).subscribe(s)
    s.await_done()
    assert len(s.items) == n and s.completed, (len(s.items), s.error)


class _Inline(concurrent.futures.Executor):
    """An executor that runs each task at once, on the caller's thread."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> concurrent.futures.Future[Any]:
        future: concurrent.futures.Future[Any] = concurrent.futures.Future()
        future.set_result(fn(*args, **kwargs))
        return future


Manual = ManualPublisher[int]


def _cancellable(loop: Loop) -> dict[str, Callable[[Manual, Manual], Publisher[Any]]]:
    """Each documented operator over the upstream ``a``, with ``b`` as its other or inner
    Publisher where it has one; groups and windows are flattened, as they are consumed."""
    inline = _Inline()
    return {
        "map": lambda a, b: a.map(str),
        "filter": lambda a, b: a.filter(bool),
        "scan": lambda a, b: a.scan(operator.add, 0),
        "buffer": lambda a, b: a.buffer(3),
        "distinct": lambda a, b: a.distinct(),
        "distinct_until_changed": lambda a, b: a.distinct_until_changed(),
        "take": lambda a, b: a.take(10),
        "skip": lambda a, b: a.skip(1),
        "take_while": lambda a, b: a.take_while(lambda x: x < 10),
        "skip_while": lambda a, b: a.skip_while(lambda x: x < 10),
        "take_until": lambda a, b: a.take_until(b),
        "skip_until": lambda a, b: a.skip_until(b),
        "start_with": lambda a, b: a.start_with(-1),
        "first": lambda a, b: a.filter(lambda x: x > 10).first(),
        "last": lambda a, b: a.last(),
        "element_at": lambda a, b: a.element_at(5),
        "tap": lambda a, b: a.tap(lambda _: None),
        "do_on_next": lambda a, b: a.do_on_next(lambda _: None),
        "do_on_error": lambda a, b: a.do_on_error(lambda _: None),
        "do_on_complete": lambda a, b: a.do_on_complete(lambda: None),
        "do_on_cancel": lambda a, b: a.do_on_cancel(lambda: None),
        "do_on_request": lambda a, b: a.do_on_request(lambda _: None),
        "retry": lambda a, b: a.retry(1),
        "retry_when": lambda a, b: a.retry_when(lambda e: True, times=1),
        "on_error_resume": lambda a, b: a.on_error_resume(lambda e: b),
        "on_error_return": lambda a, b: a.on_error_return(-1),
        "timeout": lambda a, b: a.timeout(60, total=600, loop=loop),
        "concat": lambda a, b: rstreams.concat(a, b),
        "concat_with": lambda a, b: a.concat_with(b),
        "merge": lambda a, b: rstreams.merge(a, b),
        "merge_with": lambda a, b: a.merge_with(b),
        "zip": lambda a, b: rstreams.zip(a, b),
        "zip_with": lambda a, b: a.zip_with(b),
        "combine_latest": lambda a, b: rstreams.combine_latest(a, b),
        "combine_latest_with": lambda a, b: a.combine_latest_with(b),
        "race": lambda a, b: rstreams.race(a, b),
        "amb": lambda a, b: rstreams.amb(a, b),
        "race_with": lambda a, b: a.race_with(b),
        "with_latest_from": lambda a, b: a.with_latest_from(b),
        "concat_map": lambda a, b: a.concat_map(lambda _: b),
        "flat_map": lambda a, b: a.flat_map(lambda _: b),
        "switch_map": lambda a, b: a.switch_map(lambda _: b),
        "group_by": lambda a, b: a.group_by(lambda x: x % 2).flat_map(lambda g: g),
        "window": lambda a, b: a.window(3).concat_map(lambda w: w),
        "window_time": lambda a, b: a.window_time(1.0, loop=loop).concat_map(lambda w: w),
        "buffer_time": lambda a, b: a.buffer_time(1.0, loop=loop),
        "debounce": lambda a, b: a.debounce(1.0, loop=loop),
        "throttle_first": lambda a, b: a.throttle_first(1.0, loop=loop),
        "throttle_latest": lambda a, b: a.throttle_latest(1.0, loop=loop),
        "sample": lambda a, b: a.sample(1.0, loop=loop),
        "delay": lambda a, b: a.delay(1.0, loop=loop),
        "limit_rate": lambda a, b: a.limit_rate(4),
        "on_backpressure_buffer": lambda a, b: a.on_backpressure_buffer(4),
        "on_backpressure_drop": lambda a, b: a.on_backpressure_drop(),
        "on_backpressure_latest": lambda a, b: a.on_backpressure_latest(),
        "observe_on": lambda a, b: a.observe_on(inline),
        "publish_on": lambda a, b: a.publish_on(inline),
        "subscribe_on": lambda a, b: a.subscribe_on(inline),
        "share": lambda a, b: a.share(),
        "ref_count": lambda a, b: a.ref_count(),
        "replay": lambda a, b: a.replay(2),
    }


def test_the_cancel_table_lists_every_documented_operator() -> None:
    assert sorted(_cancellable(clock_and_loop()[1])) == sorted(_documented())


class _CancelsInOnNext(RecordingSubscriber[Any]):
    """Asks for 2, and cancels inside its first on_next."""

    def __init__(self) -> None:
        super().__init__(initial=2)

    def on_next(self, item: Any) -> None:
        super().on_next(item)
        self.cancel()


def _running(
    name: str, s: RecordingSubscriber[Any] | None = None
) -> tuple[VirtualLoop, Manual, Manual, RecordingSubscriber[Any]]:
    """``name`` over ``a`` (and ``b``) from :func:`_cancellable`, its subscriber ``s`` (one
    asking for 2 by default), after an element from each side that was asked for one."""
    clock, loop = clock_and_loop()
    a: Manual = ManualPublisher()
    b: Manual = ManualPublisher()
    s = s or RecordingSubscriber(initial=2)
    _cancellable(loop)[name](a, b).subscribe(s)
    for side in (a, b):
        if side.subscriber is not None and side.outstanding and not side.cancelled:
            side.emit(1)
    return clock, a, b, s


@pytest.mark.parametrize("where", ["after-on_next", "inside-on_next"])
@pytest.mark.parametrize("name", _documented())
def test_cancel_reaches_the_upstream_and_every_inner_once_and_stops_the_clock(name: str, where: str) -> None:
    """After an element from each side (where asked for), the downstream cancels, from its own
    code or inside its first on_next (the operator is delivering then, perhaps holding more):
    every Publisher subscribed is cancelled exactly once, nothing follows that on_next, and
    no timer is left on the loop."""
    inside = where == "inside-on_next"
    clock, a, b, s = _running(name, _CancelsInOnNext() if inside else None)
    if inside:
        clock.advance(2.0)  # a time operator delivers when its clock says
    if not (inside and s.items):  # (an operator that holds its first element: cancelled here)
        s.cancel()
    clock.advance(0)
    subscribed = [side for side in (a, b) if side.subscriber is not None]
    assert subscribed or inside  # (start_with's first element goes before its source is subscribed)
    assert [side.cancelled for side in subscribed] == [1] * len(subscribed)
    assert clock.pending == 0
    assert not inside or s.signals in (["on_subscribe"], ["on_subscribe", "on_next"]), s.signals


@pytest.mark.parametrize("ending", ["error", "cancel"])
@pytest.mark.parametrize("name", _documented())
def test_nothing_reaches_the_downstream_after_its_error_or_its_cancel(name: str, ending: str) -> None:
    """Rules 1.7 and 1.8: once the stream failed (the upstream failing, as often as a
    recovering operator resubscribes) or the downstream cancelled, the sides' late elements,
    errors and completions (rule 3.12 lets them come) and the clock signal nothing more."""
    clock, a, b, s = _running(name)
    if ending == "cancel":
        s.cancel()
    for _ in range(3):  # retry resubscribes a once; on_error_resume switches to b
        for side in (a, b):
            if not s.done and side.subscriber is not None:
                side.fail(RuntimeError(f"{ending}: failed on purpose"))
    assert s.done or ending == "cancel", s.signals
    seen = list(s.signals)
    previous = set_unhandled_error_hook(lambda error, where: None)  # late errors go there
    try:
        for side in (a, b):
            if side.subscriber is not None:
                side.emit(2, force=True)
                side.fail(RuntimeError("late"))
                side.complete()
        clock.advance(60)
    finally:
        set_unhandled_error_hook(previous)
    assert s.signals == seen and s.signals.count("on_error") + s.signals.count("on_complete") <= 1


HOLDS_NOTHING_TO_DELIVER = {
    "skip": "asks for the n it skips along with the first request, and drops them",
    "element_at": "asks for index + 1 and drops all but the one it sends, at once",
    "with_latest_from": "keeps the other side's latest, which goes out only with an element",
    "on_backpressure_drop": "drops every element nobody asked for",
}
"""Operators that ask their upstream for more than the downstream's demand, yet never hold
an element they would deliver later -> why."""


def _error_order_table() -> set[str]:
    """The operators the first column of docs/operators.md's table "Errors and what is
    already received" names."""
    text = DOC.read_text(encoding="utf-8").split("## Errors and what is already received")[1]
    rows = re.findall(r"^\| (`[^|]*)\|", text.split("\n## ")[0], re.M)
    return {name for row in rows for name in re.findall(r"`([a-z_]+)`", row)}


@pytest.mark.parametrize("name", _documented())
def test_an_operator_that_may_hold_elements_says_when_an_error_passes_them(name: str) -> None:
    """An operator that asks its upstream for more than a downstream demand of one may hold
    elements when an error comes: the table "Errors and what is already received" says
    whether they go out before it (tests/flow/test_error_order.py pins each row), unless it
    never holds one it would deliver (:data:`HOLDS_NOTHING_TO_DELIVER`)."""
    loop = clock_and_loop()[1]
    a: Manual = ManualPublisher()
    b: Manual = ManualPublisher()
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=1)
    _cancellable(loop)[name](a, b).subscribe(s)
    ahead = max(a.requested, b.requested) > 1
    s.cancel()
    if name in HOLDS_NOTHING_TO_DELIVER:
        assert ahead and name not in _error_order_table()
    elif ahead:
        assert name in _error_order_table(), f"{name} asks {a.requests}, {b.requests} for a demand of 1"


BOUNDED: dict[str, tuple[Callable[[Manual, Loop], Publisher[Any]], int]] = {
    "buffer": (lambda a, loop: a.buffer(4), 4),
    "merge": (lambda a, loop: rstreams.merge(a, prefetch=8), 8),
    "zip": (lambda a, loop: rstreams.zip(a, rstreams.range(0, 10**6), prefetch=8), 8),
    "flat_map": (lambda a, loop: a.flat_map(lambda x: rstreams.just(x, x), max_concurrency=4), 4),
    "concat_map": (lambda a, loop: a.concat_map(lambda x: rstreams.just(x, x), prefetch=2), 2),
    "group_by": (lambda a, loop: a.group_by(lambda x: x % 3, prefetch=8), 8),
    "window": (lambda a, loop: a.window(3, prefetch=8), 8),
    "window_time": (lambda a, loop: a.window_time(1.0, prefetch=8, loop=loop), 8),
    "buffer_time": (lambda a, loop: a.buffer_time(1.0, max_size=8, loop=loop), 8),
    "delay": (lambda a, loop: a.delay(1.0, max_pending=8, loop=loop), 8),
    "observe_on": (lambda a, loop: a.observe_on(_Inline(), buffer_size=8), 8),
    "publish_on": (lambda a, loop: a.publish_on(_Inline(), buffer_size=8), 8),
    "share": (lambda a, loop: a.share(buffer_size=8), 8),
    "replay": (lambda a, loop: a.replay(2, buffer_size=8), 8),
    "limit_rate": (lambda a, loop: a.limit_rate(8), 0),
}
"""Operator (with its bound set small) -> the most it may ask of its upstream beyond the
downstream's demand, as docs/operators.md states it."""


@pytest.mark.parametrize("name", list(BOUNDED))
def test_a_stalled_downstream_holds_no_more_than_the_documented_bound(name: str) -> None:
    """The downstream asks for one element and nothing more; the upstream sends everything
    it is asked for, at once: the operator asks for (and so holds) at most its bound."""
    loop = clock_and_loop()[1]
    build, bound = BOUNDED[name]
    a: Manual = ManualPublisher()
    s: RecordingSubscriber[Any] = RecordingSubscriber(initial=1)
    build(a, loop).subscribe(s)
    while a.outstanding and not a.cancelled and a.emitted <= bound + 1:
        a.emit(a.emitted)
    assert a.requested <= bound + 1, a.requests
    assert len(s.items) <= 1 and s.error is None
    s.cancel()


class _Held:
    """An element whose lifetime a test watches (``weakref.ref``)."""

    __slots__ = ("__weakref__", "n")

    def __init__(self, n: int) -> None:
        self.n = n


GROUPING: dict[str, Callable[[ManualPublisher[_Held], Loop], Publisher[Any]]] = {
    "group_by": lambda a, loop: a.group_by(lambda e: e.n % N),
    "window": lambda a, loop: a.window(2),
    "window_time": lambda a, loop: a.window_time(1.0, loop=loop),
}
"""Each Flow of groups, cutting ``2N - 1`` elements into ``N`` groups of two (the last,
of one, still open): keyed ``n % N``, windows of two, or two elements a period."""


@pytest.mark.parametrize("subscribed", [False, True], ids=["none-subscribed", "last-subscribed"])
@pytest.mark.parametrize("name", list(GROUPING))
def test_cancel_after_exactly_n_groups_lets_go_of_the_unsubscribed(name: str, subscribed: bool) -> None:
    """The outer subscriber asks for exactly N groups, gets them and cancels. A group nobody
    subscribed to takes no more elements: the operator lets go of it (a late subscriber gets
    what it held, then on_complete; its elements live as long as the group object does, not
    as long as the outer Subscription), and the upstream is cancelled once no subscribed
    group can take an element: at once when none was subscribed."""
    clock, loop = clock_and_loop()
    a: ManualPublisher[_Held] = ManualPublisher()
    outer: RecordingSubscriber[Any] = RecordingSubscriber(initial=N)
    GROUPING[name](a, loop).subscribe(outer)
    elements = [_Held(n) for n in range(2 * N - 1)]
    for element in elements:
        a.emit(element)
        if name == "window_time" and element.n % 2:
            clock.advance(1.0)
    alive = [weakref.ref(element) for element in elements]
    del elements, element
    assert len(outer.items) == N and not outer.done
    kept: RecordingSubscriber[_Held] = RecordingSubscriber(initial=10)
    if subscribed:
        outer.items[-1].subscribe(kept)
    outer.cancel()
    clock.advance(0)
    assert a.cancelled == (0 if subscribed else 1)
    if subscribed:
        a.emit(_Held(2 * N - 1))  # the open group's next element: its subscriber still gets it
        assert len(kept.items) == 2 and kept.items[-1].n == 2 * N - 1
        if not kept.done:  # (a window of two is cut by it and completes: nothing is left)
            kept.cancel()
        assert a.cancelled == 1
    late: RecordingSubscriber[_Held] = RecordingSubscriber(initial=10)
    outer.items[0].subscribe(late)
    assert len(late.items) == 2 and late.completed
    outer.items.clear()
    late.items.clear()
    gc.collect()
    held = [ref() for ref in alive]
    assert [e.n for e in held if e is not None and e not in kept.items] == []
    assert outer.signals == ["on_subscribe"] + ["on_next"] * N
    clock.advance(0)
    assert clock.pending == 0


class _Inners:
    """Inner Publishers that send nothing unless told (one new one a call), kept for the test."""

    def __init__(self) -> None:
        self.made: list[Manual] = []

    def __call__(self, _: object = None) -> Manual:
        inner: Manual = ManualPublisher()
        self.made.append(inner)
        return inner


Bounds = tuple[Callable[[Manual, _Inners], Publisher[Any]], Callable[[int], int], Callable[[int], int]]
PAST_DEMAND: dict[str, Bounds] = {
    "combine_latest": (
        lambda a, inners: rstreams.combine_latest(a, inners(), prefetch=8),
        lambda n: min(n, 8),
        lambda n: min(n, 8),
    ),
    "switch_map": (lambda a, inners: a.switch_map(inners, prefetch=8), lambda n: 8, lambda n: min(n, 256)),
}
"""Operator (its prefetch set small) -> what its upstream, and what each inner Publisher (the
other source, or the current inner), may owe at most with ``n`` tuples or elements owed
downstream, while it consumes past that demand by design (docs/operators.md):
combine_latest until every source has an element, switch_map always."""


@pytest.mark.parametrize("owed", [1, 300])
@pytest.mark.parametrize("name", list(PAST_DEMAND))
def test_consuming_past_demand_drops_all_but_the_newest_within_the_bound(name: str, owed: int) -> None:
    """Nothing is asked before the downstream asks. Then the upstream's elements are taken
    past the downstream's demand, each one replacing the one before (dropped), while the
    upstream never owes more than its bound and an inner Publisher never more than its own
    (nor than the demand owed). The silent side's first element then goes out with the
    newest upstream element, and only then is any demand used."""
    build, bound, inner_bound = PAST_DEMAND[name]
    a: Manual = ManualPublisher()
    inners = _Inners()
    s: RecordingSubscriber[Any] = RecordingSubscriber()
    build(a, inners).subscribe(s)
    assert a.requests == [] and all(inner.requests == [] for inner in inners.made)
    s.request(owed)
    while a.emitted < 1000:
        assert 0 < a.outstanding <= bound(owed), a.requests
        a.emit(a.emitted)
    assert s.items == [] and not s.done
    assert [inner.requested for inner in inners.made] == [inner_bound(owed)] * len(inners.made)
    assert [inner.cancelled for inner in inners.made] == [1] * (len(inners.made) - 1) + [0]
    inners.made[-1].emit(-1)
    assert s.items == [(999, -1) if name == "combine_latest" else -1]
