"""The scenarios: who runs against whom, with what sizes, and which ratios the tables show.

A scenario is made by a factory ``(quick) -> ScenarioDef``; ``quick`` shrinks every size so
that all scenarios together run in well under a minute (a smoke test, not a measurement).
Contestant names say the implementation first: ``rstreams-...``, ``rsocket-py-...``,
``ceiling-...`` (plain asyncio framing), ``rs-floor-...`` (the ceiling plus the least a
Reactive Streams round trip must signal, no rstreams code), then the variant.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

__all__ = ["SCENARIOS", "Contestant", "ScenarioDef"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Contestant:
    name: str
    label: str
    env: str  # "rs": rstreams' venv; "peers": benchmarks/.peers-venv
    script: str
    args: list[str]
    needs: str = ""  # a module that must import in its venv (e.g. uvloop), else skipped


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScenarioDef:
    name: str
    title: str
    description: str
    metric: str  # key in each run's JSON
    unit: str
    contestants: list[Contestant]
    higher_is_better: bool = True
    ratios: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    extras: list[tuple[str, str, str]] = dataclasses.field(default_factory=list)  # key, header, unit
    repeats: int | None = None  # overrides --repeats (e.g. one long memory run)
    warmup: int | None = None
    timeout: float = 600.0
    plot: str = "bar"  # bar | latency | memory | scale | hostile
    pin: bool = True  # False: contestants run unpinned (Spark's local[2] needs both CPUs)
    # a script (and args) run first with rstreams' interpreter: a non-zero exit skips the whole
    # scenario, its last stderr line saying why (e.g. pyspark or Java 17+ missing)
    check: list[str] = dataclasses.field(default_factory=list)
    # (a, b, at_least): the paired ratio a / b of `metric` should be >= at_least; b == "": the
    # median of a's `metric` itself should be >= at_least
    targets: list[tuple[str, str, float]] = dataclasses.field(default_factory=list)


def _rs(name: str, label: str, script: str, *args: str, needs: str = "") -> Contestant:
    return Contestant(name=name, label=label, env="rs", script=script, args=list(args), needs=needs)


def _peer(name: str, label: str, script: str, *args: str) -> Contestant:
    return Contestant(name=name, label=label, env="peers", script=script, args=list(args))


def inprocess(quick: bool) -> ScenarioDef:
    n = "10000" if quick else "1000000"
    return ScenarioDef(
        name="inprocess",
        title="In-process pipeline: range(N) -> map(x + 1) -> filter(even) -> sum",
        description=(
            f"N = {int(n):,} input elements; throughput is N / wall time of one run in a fresh "
            "process after a warm-up run of N/10. rstreams in its venv, the peers in the peers venv."
        ),
        metric="rate",
        unit="el/s",
        contestants=[
            _rs(
                "rstreams-fused",
                "default chain: rstreams.range(...).map(...).filter(...)",
                "inprocess.py",
                "--one",
                "rstreams_fused",
                "--n",
                n,
            ),
            _rs(
                "rstreams-unfused",
                "the same operators behind a Publisher that is not a Flow",
                "inprocess.py",
                "--one",
                "rstreams_unfused",
                "--n",
                n,
            ),
            _rs(
                "rstreams-async-for",
                "async for, window 256",
                "inprocess.py",
                "--one",
                "rstreams_async_for",
                "--n",
                n,
            ),
            _peer(
                "gen-plain",
                "generator expressions, no library",
                "inproc_peers.py",
                "--one",
                "gen_plain",
                "--n",
                n,
            ),
            _peer(
                "reactivex",
                "from_iterable + ops.map/filter/sum",
                "inproc_peers.py",
                "--one",
                "reactivex",
                "--n",
                n,
            ),
            _peer(
                "aiostream",
                "stream.iterate | pipe.map/filter/reduce",
                "inproc_peers.py",
                "--one",
                "aiostream",
                "--n",
                n,
            ),
        ],
        ratios=[
            ("rstreams-fused", "reactivex"),
            ("rstreams-unfused", "reactivex"),
            ("rstreams-async-for", "aiostream"),
            ("gen-plain", "rstreams-fused"),
        ],
    )


def operators(quick: bool) -> ScenarioDef:
    n = "2000" if quick else "200000"
    rows = [
        ("scan", "scan(add) -> last"),
        ("distinct", "distinct(x % 64) -> sum"),
        ("buffer", "buffer(16) -> len -> sum"),
    ]
    rows += [("zip", "zip(range, range) -> sum"), ("combine_latest", "combine_latest(range, range) -> count")]
    rows.append(("group_by", "group_by(x % 16) -> merged -> sum"))
    contestants = []
    for op, label in rows:
        contestants.append(_rs(f"rstreams-{op}", label, "inproc_ops.py", "--one", f"rs_{op}", "--n", n))
        contestants.append(_peer(f"reactivex-{op}", label, "inproc_ops.py", "--one", f"rx_{op}", "--n", n))
    return ScenarioDef(
        name="operators",
        title="In-process operators: scan, distinct, buffer(count), zip, combine_latest, group_by",
        description=(
            f"N = {int(n):,} per source; throughput is input elements / wall time of one run in a "
            "fresh process after a warm-up of N/10 (benchmarks/inproc_ops.py). rstreams keeps "
            "backpressure (bounded prefetch per source or group); reactivex has none."
        ),
        metric="rate",
        unit="el/s",
        contestants=contestants,
        ratios=[(f"rstreams-{op}", f"reactivex-{op}") for op, _ in rows],
    )


def _net(quick: bool, small: int, large: int) -> str:
    return str(large if not quick else small)


def stream_small(quick: bool) -> ScenarioDef:
    n = _net(quick, 2_000, 200_000)
    n_rsocket = _net(quick, 2_000, 50_000)
    n_packed = _net(quick, 20_000, 2_000_000)
    n_batched = _net(quick, 200_000, 20_000_000)
    common = ["client", "--mode", "stream", "--size", "8"]
    return ScenarioDef(
        name="stream-small",
        title="Stream of small elements: 8-byte elements over loopback TCP",
        description=(
            f"{int(n):,} elements (rsocket-py: {int(n_rsocket):,}, it is slow; the rate is per element) "
            "from a server process on CPU0 to a client on CPU1. Window 256: the client's "
            "Subscriber requests 256, then 128 every 128 elements (never more than 256 "
            "outstanding), like the notes' rsocket-py runs. One warm-up stream of N/10 on the "
            "same connection before the measured one."
        ),
        metric="rate",
        unit="el/s",
        contestants=[
            _rs(
                "rstreams-w256",
                "RS.io, window 256",
                "net_rstreams.py",
                *common,
                "--count",
                n,
                "--window",
                "256",
            ),
            _rs(
                "rstreams-w256-uvloop",
                "RS.io, window 256, uvloop",
                "net_rstreams.py",
                *common,
                "--count",
                n,
                "--window",
                "256",
                "--uvloop",
                needs="uvloop",
            ),
            _rs(
                "rstreams-w256-metrics",
                "RS.io, window 256, the server counting (metrics=True)",
                "net_rstreams.py",
                *common,
                "--count",
                n,
                "--window",
                "256",
                "--metrics",
            ),
            _rs(
                "rstreams-w4096",
                "RS.io, window 4096",
                "net_rstreams.py",
                *common,
                "--count",
                n,
                "--window",
                "4096",
            ),
            _rs(
                "rstreams-packed-w4096",
                "RS.io, fixed_size(8): onNextPacked, window 4096",
                "net_rstreams.py",
                *common,
                "--count",
                n,
                "--window",
                "4096",
                "--packed",
            ),
            _rs(
                "rstreams-async-for-w256",
                "RS.io, async for over iter_async(window=256)",
                "net_rstreams.py",
                *common,
                "--count",
                n,
                "--window",
                "256",
                "--async-for",
            ),
            _rs(
                "rstreams-packed-unbounded",
                f"RS.io, fixed_size(8), request(2**63-1), {int(n_packed):,} elements",
                "net_rstreams.py",
                *common,
                "--count",
                n_packed,
                "--window",
                "0",
                "--packed",
            ),
            _rs(
                "rstreams-batched-unbounded",
                f"RS.io, INT64 lists both ends (batched=True), request(2**63-1), {int(n_batched):,} elements",
                "net_rstreams.py",
                *common,
                "--count",
                n_batched,
                "--window",
                "0",
                "--batched",
            ),
            _peer(
                "rsocket-py-w256",
                "request_stream, sync publisher, window 256",
                "net_rsocket.py",
                *common,
                "--count",
                n_rsocket,
                "--window",
                "256",
            ),
            _peer(
                "ceiling-perwrite-w256",
                "plain asyncio, one write() per frame, window 256",
                "net_ceiling.py",
                *common,
                "--count",
                n,
                "--window",
                "256",
                "--style",
                "perwrite",
            ),
            _peer(
                "ceiling-batched-w256",
                "plain asyncio, one write per grant, window 256",
                "net_ceiling.py",
                *common,
                "--count",
                n,
                "--window",
                "256",
                "--style",
                "batched",
            ),
            _peer(
                "ceiling-batched-w4096",
                "plain asyncio, one write per grant, window 4096",
                "net_ceiling.py",
                *common,
                "--count",
                n,
                "--window",
                "4096",
                "--style",
                "batched",
            ),
        ],
        ratios=[
            ("rstreams-w256", "rsocket-py-w256"),
            ("rstreams-w256-uvloop", "rsocket-py-w256"),
            ("rstreams-w256", "ceiling-perwrite-w256"),
            ("rstreams-w256", "ceiling-batched-w256"),
            ("rstreams-w4096", "ceiling-batched-w4096"),
            ("rstreams-packed-w4096", "rstreams-w4096"),
            ("rstreams-async-for-w256", "rstreams-w256"),
            ("rstreams-batched-unbounded", "rstreams-packed-unbounded"),
            ("rstreams-w256-metrics", "rstreams-w256"),
        ],
        targets=[
            ("rstreams-w256", "", 1e6),
            ("rstreams-w256-metrics", "rstreams-w256", 0.97),
            ("rstreams-w256", "rsocket-py-w256", 35.0),
            ("rstreams-batched-unbounded", "", 15e6),
        ],
        extras=[("mbps", "MB/s", "MB/s")],
    )


def stream_large(quick: bool) -> ScenarioDef:
    n = _net(quick, 50, 2_000)
    common = ["client", "--mode", "stream", "--size", "65536", "--count", n, "--window", "256"]
    return ScenarioDef(
        name="stream-large",
        title="Stream of large elements: 64 KiB elements over loopback TCP",
        description=(
            f"{int(n):,} x 64 KiB, window 256 (replenished at 128), server on CPU0, client on CPU1. "
            "MB/s = payload bytes / 1e6 per second."
        ),
        metric="mbps",
        unit="MB/s",
        contestants=[
            _rs(
                "rstreams",
                "RS.io (elements split into parts above the core's threshold)",
                "net_rstreams.py",
                *common,
            ),
            _rs("rstreams-uvloop", "RS.io, uvloop", "net_rstreams.py", *common, "--uvloop", needs="uvloop"),
            _peer("rsocket-py", "request_stream, sync publisher, 256 KiB reads", "net_rsocket.py", *common),
            _peer(
                "ceiling",
                "plain asyncio, BufferedProtocol receiver",
                "net_ceiling.py",
                *common,
                "--style",
                "batched",
            ),
        ],
        ratios=[("rstreams", "rsocket-py"), ("rstreams-uvloop", "rsocket-py"), ("rstreams", "ceiling")],
        targets=[("rstreams", "", 2500.0), ("rstreams-uvloop", "", 2500.0)],
    )


def request_response(quick: bool) -> ScenarioDef:
    n = _net(quick, 100, 5_000)
    common = ["client", "--mode", "rr", "--count", n]
    return ScenarioDef(
        name="request-response",
        title="Sequential request/response over loopback TCP",
        description=(
            f"{int(n):,} sequential round trips of 8 bytes after 200 warm-up ones. rstreams: "
            "`await conn.request(name)` (subscribe with demand 1, one onNext, onComplete), with "
            "the defaults (keepalive on both ends, the server's idle timeout: one loop timer armed "
            "on each side); rstreams-no-timers: the same with both off, as the ceiling has no "
            "timer (an armed timer costs asyncio's loop work on every turn); rsocket-py: "
            "`request_response` (echo); ceiling: an 8-byte framed echo; rs-floor: the ceiling's "
            "transport plus only the signals a Reactive Streams request must make (subscribe, "
            "onSubscribe, request(1), one frame with stream id, route and demand; on the server a "
            "Publisher by name, subscribe, onSubscribe, request, onNext, onComplete in one frame; "
            "onNext and onComplete delivered by stream id), no rstreams code: a lower bound."
        ),
        metric="rate",
        unit="rt/s",
        contestants=[
            _rs("rstreams", "conn.request()", "net_rstreams.py", *common),
            _rs(
                "rstreams-metrics",
                "conn.request(), the server counting",
                "net_rstreams.py",
                *common,
                "--metrics",
            ),
            _rs(
                "rstreams-uvloop",
                "conn.request(), uvloop",
                "net_rstreams.py",
                *common,
                "--uvloop",
                needs="uvloop",
            ),
            _rs(
                "rstreams-no-timers",
                "conn.request(), keepalive and idle timeout off (no loop timer, like the ceiling)",
                "net_rstreams.py",
                *common,
                "--no-timers",
            ),
            _peer("rsocket-py", "request_response", "net_rsocket.py", *common),
            _peer("ceiling", "plain asyncio ping-pong", "net_ceiling.py", *common),
            _peer("ceiling-uvloop", "plain asyncio ping-pong, uvloop", "net_ceiling.py", *common, "--uvloop"),
            _peer("rs-floor", "Reactive Streams floor: the ceiling + the signals", "net_floor.py", *common),
        ],
        ratios=[
            ("rstreams", "rsocket-py"),
            ("rstreams-uvloop", "rsocket-py"),
            ("rstreams", "ceiling"),
            ("rstreams-no-timers", "ceiling"),
            ("rs-floor", "ceiling"),
            ("rstreams-no-timers", "rs-floor"),
            ("rstreams-uvloop", "ceiling-uvloop"),
            ("rstreams-metrics", "rstreams"),
        ],
        targets=[
            ("rstreams", "", 20_000.0),
            ("rstreams-uvloop", "", 20_000.0),
            ("rstreams-metrics", "rstreams", 0.97),
        ],
        extras=[("p50_us", "p50", "µs"), ("p99_us", "p99", "µs")],
    )


def request_response_metadata(quick: bool) -> ScenarioDef:
    n = _net(quick, 100, 5_000)
    common = ["client", "--mode", "rr", "--count", n]
    return ScenarioDef(
        name="request-response-metadata",
        title="Request/response with ~100 bytes of subscribe metadata (PROTOCOL.md §18)",
        description=(
            f"{int(n):,} sequential round trips of 8 bytes after 200 warm-up ones, as in "
            "request-response; `metadata`: every `conn.request(name, metadata=...)` carries a W3C "
            "traceparent and a padding entry, about 100 bytes encoded, which the server decodes "
            "for its factory; `metadata-fresh`: the same with a new trace id in every request's "
            "traceparent (a new dict each time, as a traced client sends: nothing a cache could "
            "remember). Target: at most 10% slower than without, in the same run."
        ),
        metric="rate",
        unit="rt/s",
        contestants=[
            _rs("rstreams", "conn.request()", "net_rstreams.py", *common),
            _rs("metadata", "conn.request(metadata=~100 B)", "net_rstreams.py", *common, "--metadata", "100"),
            _rs(
                "metadata-fresh",
                "conn.request(metadata=~100 B), a new traceparent each time",
                "net_rstreams.py",
                *common,
                "--metadata",
                "100",
                "--fresh-traceparent",
            ),
        ],
        ratios=[("metadata", "rstreams"), ("metadata-fresh", "rstreams")],
        targets=[],
        extras=[("p50_us", "p50", "µs"), ("p99_us", "p99", "µs")],
    )


def latency(quick: bool) -> ScenarioDef:
    n = _net(quick, 100, 5_000)
    return ScenarioDef(
        name="latency",
        title="Latency of one element over loopback TCP",
        description=(
            f"{int(n):,} samples after 200 warm-up ones. rstreams-stream: on an open stream, "
            "`request(1)` and wait for the `on_next` (keepalive and idle timeout at their "
            "defaults; rstreams-stream-no-timers: both off, no loop timer armed, as in the "
            "ceiling); rstreams-request: `conn.request()`; the ceiling: a framed 8-byte "
            "ping-pong; rsocket-py: `request_response`; rs-floor-stream: the ceiling's transport "
            "plus only what an open Reactive Streams stream must do per element (request(1) "
            "written, the server's Subscription.request -> onNext written, onNext delivered by "
            "stream id), no rstreams code: a lower bound; rs-floor-request: its round trip as in "
            "request-response. Lower is better."
        ),
        metric="p50_us",
        unit="µs",
        higher_is_better=False,
        contestants=[
            _rs(
                "rstreams-stream",
                "request(1) -> on_next on an open stream",
                "net_rstreams.py",
                "client",
                "--mode",
                "latency",
                "--count",
                n,
            ),
            _rs(
                "rstreams-stream-uvloop",
                "same, uvloop",
                "net_rstreams.py",
                "client",
                "--mode",
                "latency",
                "--count",
                n,
                "--uvloop",
                needs="uvloop",
            ),
            _rs(
                "rstreams-stream-no-timers",
                "same, keepalive and idle timeout off (no loop timer, like the ceiling)",
                "net_rstreams.py",
                "client",
                "--mode",
                "latency",
                "--count",
                n,
                "--no-timers",
            ),
            _rs(
                "rstreams-request",
                "conn.request() round trip",
                "net_rstreams.py",
                "client",
                "--mode",
                "rr",
                "--count",
                n,
            ),
            _peer(
                "rsocket-py",
                "request_response round trip",
                "net_rsocket.py",
                "client",
                "--mode",
                "rr",
                "--count",
                n,
            ),
            _peer(
                "ceiling", "plain asyncio ping-pong", "net_ceiling.py", "client", "--mode", "rr", "--count", n
            ),
            _peer(
                "ceiling-uvloop",
                "plain asyncio ping-pong, uvloop",
                "net_ceiling.py",
                "client",
                "--mode",
                "rr",
                "--count",
                n,
                "--uvloop",
            ),
            _peer(
                "rs-floor-stream",
                "Reactive Streams floor: request(1) -> on_next on an open stream",
                "net_floor.py",
                "client",
                "--mode",
                "latency",
                "--count",
                n,
            ),
            _peer(
                "rs-floor-request",
                "Reactive Streams floor: a request's round trip",
                "net_floor.py",
                "client",
                "--mode",
                "rr",
                "--count",
                n,
            ),
        ],
        ratios=[
            ("rstreams-stream", "ceiling"),
            ("rstreams-stream-no-timers", "ceiling"),
            ("rs-floor-stream", "ceiling"),
            ("rstreams-stream-no-timers", "rs-floor-stream"),
            ("rstreams-stream-uvloop", "ceiling-uvloop"),
            ("rstreams-request", "rsocket-py"),
        ],
        extras=[("p90_us", "p90", "µs"), ("p99_us", "p99", "µs")],
        plot="latency",
    )


def memory(quick: bool) -> ScenarioDef:
    duration = "1" if quick else "60"
    common = ["client", "--mode", "memory", "--size", "1024", "--duration", duration]
    return ScenarioDef(
        name="memory-slow-consumer",
        title="Memory under a slow consumer that requested everything",
        description=(
            "1 KiB elements. First an unthrottled run (up to 5 s) measures how fast this pair "
            "moves them; then the client requests 2**63-1 (rsocket-py: 2**31-1, its maximum) "
            f"and reads at a tenth of that rate for {duration} s while the server's RSS is "
            "sampled every 0.25 s from /proc/<pid>/status (VmRSS). Growth = peak RSS minus RSS "
            "just before subscribing. Target for rstreams: <= 32 MiB. rsocket-py serves with "
            "its StreamFromGenerator, capped at 400,000 elements (~430 MB) so that it cannot "
            "exhaust the machine. Lower is better."
        ),
        metric="growth_mib",
        unit="MiB",
        higher_is_better=False,
        contestants=[
            _rs("rstreams", "RS.io, demand 2**63-1", "net_rstreams.py", *common, "--count", str(10**12)),
            _peer(
                "rsocket-py",
                "request_stream(n=2**31-1), StreamFromGenerator",
                "net_rsocket.py",
                *common,
                "--count",
                "400000",
            ),
        ],
        extras=[
            ("peak_mib", "peak RSS", "MiB"),
            ("slowdown", "production / reading", "x"),
            ("received", "received", "el"),
        ],
        repeats=1,
        warmup=0,
        timeout=400.0,
        plot="memory",
    )


def scale(quick: bool) -> ScenarioDef:
    count = _net(quick, 2_000, 200_000)
    count_rsocket = _net(quick, 2_000, 50_000)
    subs = ["1", "10"] if quick else ["1", "100", "10000"]
    conns = ["1", "10"] if quick else ["1", "100", "1000"]
    contestants = [
        _rs(
            f"rstreams-subs-{k}",
            f"{int(k):,} subscriptions on one connection",
            "net_rstreams.py",
            "client",
            "--mode",
            "subs",
            "--fanout",
            k,
            "--count",
            count,
        )
        for k in subs
    ] + [
        _rs(
            f"rstreams-conns-{k}",
            f"{int(k):,} connections",
            "net_rstreams.py",
            "client",
            "--mode",
            "conns",
            "--fanout",
            k,
            "--count",
            count,
        )
        for k in conns
    ]
    contestants += [
        _peer(
            f"rsocket-py-{mode}-{k}",
            f"{int(k):,} {what}",
            "net_rsocket.py",
            "client",
            "--mode",
            mode,
            "--fanout",
            k,
            "--count",
            count_rsocket,
        )
        for mode, what, ks in (
            ("subs", "idle request-streams on one connection", subs),
            ("conns", "connections", conns),
        )
        for k in ks
    ]
    return ScenarioDef(
        name="scale",
        title="Scale: many subscriptions on one connection, many connections",
        description=(
            "subs-K: K idle subscriptions (subscribed, nothing requested) on one connection; "
            "RSS per subscription on the server and on the client (target <= 2 KiB on the "
            f"server); then `el/s` = one {int(count):,} x 8 B stream, window 256, beside the K idle "
            f"ones (target: <= 20% loss at 10,000); `parallel` = K streams at once sharing {int(count):,} "
            "elements. rsocket-py's idle ones are request-streams asking for 1 element (its "
            "REQUEST_STREAM must carry demand) of a server Publisher that never emits; its stream "
            f"beside them and its K streams share {int(count_rsocket):,} elements. conns-K: K "
            "connections from one client process; RSS per connection on the server; "
            f"`el/s` = {int(count):,} elements shared among one stream per connection, all "
            f"at once (rsocket-py: {int(count_rsocket):,} elements, window 256, its own connections). "
            "RSS is read from /proc (4 KiB pages: per-item figures at K = 1 are noise)."
        ),
        metric="rate",
        unit="el/s",
        contestants=contestants,
        ratios=[
            (f"rstreams-subs-{subs[-1]}", "rstreams-subs-1"),
            (f"rstreams-conns-{conns[-1]}", "rstreams-conns-1"),
            (f"rsocket-py-subs-{subs[-1]}", "rsocket-py-subs-1"),
            (f"rsocket-py-conns-{conns[-1]}", "rsocket-py-conns-1"),
            *((f"rstreams-subs-{k}", f"rsocket-py-subs-{k}") for k in subs),
            *((f"rstreams-conns-{k}", f"rsocket-py-conns-{k}") for k in conns),
        ],
        extras=[
            ("parallel_rate", "parallel", "el/s"),
            ("server_b_per_sub", "server B/sub", "B"),
            ("client_b_per_sub", "client B/sub", "B"),
            ("server_b_per_conn", "server B/conn", "B"),
        ],
        warmup=0,
        plot="scale",
    )


def hostile(quick: bool) -> ScenarioDef:
    duration = "0.5" if quick else "5"
    peers = "2" if quick else "8"
    budget = str(256 * 1024 if quick else 4 << 20)
    attacks = {
        "alone": "no attack",
        "slow-hellos": f"{int(peers) * 125:,} connections, one byte of a hello each",
        "garbage": f"{peers} connections in a loop: hello, 16 KiB of random bytes, goodbye",
        "subscribe-flood": f"{peers} peers flood subscribes for an unknown name, never read",
        "unbounded-demand": f"{peers} peers request 2**63-1 of 1 KiB elements, never read",
        "churn": f"{max(1, int(peers) // 2)} loops: connect, subscribe, request, cancel, goodbye or reset",
    }
    common = ["client", "--duration", duration, "--peers", peers, "--budget", budget]
    return ScenarioDef(
        name="hostile",
        title="Hostile peers: a legitimate stream beside each attack, and the server's memory",
        description=(
            f"A server with every limit at its default (CPU0); a legitimate client (CPU1) streams "
            f"8 B elements with a window of 256 for {duration} s, alone or while an attacker process "
            "(CPU1, beside the client) runs one attack on the same server. `el/s` is the "
            "legitimate stream's rate; `alone` is the reference, and the ratios pair each attack "
            "with the `alone` run of the same round; five rounds, as one round of a connection-loop "
            "attack can be several times slower than the others. RSS growth = peak RSS of the server "
            "minus its RSS just before the attack, sampled every 0.1 s from /proc/<pid>/status. The "
            "server's and the client's CPU seconds per second, and the TCP segments the system "
            "retransmitted and the packets its input queues dropped over the measurement, tell a round "
            "where the server was busy from one where the client shared its CPU with the attacker, or "
            "the loopback dropped packets (each drop stalls a connection for a 200 ms retransmission "
            "timeout; the per-round figures are in the JSON). Issue 18's target: >= 0.5x beside every "
            "attack (one peer cannot take another's throughput below half)."
        ),
        metric="rate",
        unit="el/s",
        contestants=[
            _rs(f"rstreams-{name}", label, "net_hostile.py", *common, "--attack", name)
            for name, label in attacks.items()
        ],
        ratios=[(f"rstreams-{name}", "rstreams-alone") for name in attacks if name != "alone"],
        targets=[(f"rstreams-{name}", "rstreams-alone", 0.5) for name in attacks if name != "alone"],
        extras=[
            ("growth_mib", "server RSS growth", "MiB"),
            ("server_cpu", "server CPU", "s/s"),
            ("client_cpu", "client CPU", "s/s"),
            ("retransmits", "TCP retransmits", "el"),
            ("kernel_drops", "kernel drops", "el"),
            ("peak_mib", "peak RSS", "MiB"),
            ("attack_mib", "attack sent", "MiB"),
            ("connections", "attack connections", "el"),
        ],
        repeats=None if quick else 5,
        warmup=0,  # each process warms its connection up before the attack
        timeout=180.0,
        plot="hostile",
    )


def loop(quick: bool) -> ScenarioDef:
    n = _net(quick, 2_000, 200_000)
    common = ["client", "--mode", "stream", "--size", "8", "--count", n, "--window", "256"]
    return ScenarioDef(
        name="loop",
        title="Event loop: uvloop vs asyncio's default loop (stream-small, window 256)",
        description=f"{int(n):,} x 8 B, window 256, both processes on the named loop.",
        metric="rate",
        unit="el/s",
        contestants=[
            _rs("rstreams-asyncio", "RS.io, default loop", "net_rstreams.py", *common),
            _rs("rstreams-uvloop", "RS.io, uvloop", "net_rstreams.py", *common, "--uvloop", needs="uvloop"),
            _peer("ceiling-asyncio", "plain asyncio, batched, default loop", "net_ceiling.py", *common),
            _peer("ceiling-uvloop", "plain asyncio, batched, uvloop", "net_ceiling.py", *common, "--uvloop"),
        ],
        ratios=[("rstreams-uvloop", "rstreams-asyncio"), ("ceiling-uvloop", "ceiling-asyncio")],
    )


def spark(quick: bool) -> ScenarioDef:
    rows = "131072" if quick else "6000000"
    batch = "65536" if quick else "1000000"
    warm = ["--warmup-rows", "0"] if quick else []
    big = ["--rows", rows, "--batch-rows", batch, *warm]

    def one(name: str, label: str, *args: str) -> Contestant:
        return _rs(name, label, "spark_sources.py", "--one", name, *args, needs="pyspark")

    return ScenarioDef(
        name="spark",
        title="Spark Structured Streaming: rows/s from a source into the noop sink (local[2])",
        description=(
            f"Each contestant is a fresh process with its own Spark session (local[2], not pinned: "
            f"Spark uses both CPUs), a warm-up query of the same source{'' if not quick else ' (skipped)'}, "
            f"then one measured query of {int(rows):,} rows in micro-batches of about {int(batch):,} rows. "
            "`rows/s` is "
            "steady: rows over the summed `triggerExecution` time, the first batch excluded "
            "(../shared/notes/spark-python-datasource.md); e2e = rows / wall time from `start()` "
            "until every row was reported (query start and first batch included). rstreams: the "
            "`rstreams` data source reading a replay log that a `ReplayServer` in the driver "
            "process serves over loopback TCP; arrow elements are Arrow IPC batches of 64 Ki rows, "
            'json and msgpack elements one row `{"value": N}` each, decoded in bulk. '
            "python-inprocess: a Python data source yielding the same Arrow batches from memory, "
            "no network (the ceiling for a Python source). rate-micro-batch: Spark's JVM source. "
            "Targets: rstreams-arrow >= 70% of python-inprocess and >= 2 M rows/s steady (issue 7); "
            "rstreams-json and rstreams-msgpack >= 1 M rows/s and >= 0.5x rstreams-arrow, "
            "rstreams-sink-arrow (Spark's rate source into the rstreams sink, codec arrow, Spark's Arrow "
            "writer; beside it JSON, one element per row, through the same writer) >= 1 M rows/s "
            "(issue 19). rstreams-servers-1 "
            "and -3: Arrow elements served by one replay server process, or by three holding a third "
            "each, read by one query over the three URLs (issue 19: the ratio shows what spreading "
            "costs or gains on this machine; `offsets` is the driver's median latestOffset time per "
            "batch, `read` Spark's addBatch, where executors read)."
        ),
        metric="steady_rows_per_s",
        unit="rows/s",
        contestants=[
            one("rstreams-arrow", "RS.io replay log over TCP, Arrow IPC elements", *big),
            one("python-inprocess", "in-process Python source, Arrow batches (ceiling)", *big),
            one("rate-micro-batch", "Spark's JVM rate-micro-batch source", *big),
            one("rstreams-json", "RS.io replay log over TCP, one JSON row per element", *big),
            one("rstreams-msgpack", "RS.io replay log over TCP, one msgpack row per element", *big),
            one("rstreams-sink-json", "rate source into the rstreams sink, JSON rows", *big),
            one("rstreams-sink-arrow", "rate source into the rstreams sink, Arrow writer", *big),
            one("rstreams-servers-1", "one replay server process, Arrow IPC elements", *big),
            one("rstreams-servers-3", "three replay server processes, one query", *big),
        ],
        ratios=[
            ("rstreams-arrow", "python-inprocess"),
            ("rstreams-arrow", "rate-micro-batch"),
            ("python-inprocess", "rate-micro-batch"),
            ("rstreams-json", "rstreams-arrow"),
            ("rstreams-msgpack", "rstreams-arrow"),
            ("rstreams-sink-arrow", "rstreams-sink-json"),
            ("rstreams-servers-3", "rstreams-servers-1"),
        ],
        targets=[
            ("rstreams-arrow", "python-inprocess", 0.70),
            ("rstreams-arrow", "", 2e6),
            ("rstreams-json", "rstreams-arrow", 0.5),
            ("rstreams-json", "", 1e6),
            ("rstreams-msgpack", "rstreams-arrow", 0.5),
            ("rstreams-msgpack", "", 1e6),
            ("rstreams-sink-arrow", "", 1e6),
        ],
        extras=[
            ("e2e_rows_per_s", "e2e", "rows/s"),
            ("median_batch_ms", "median batch", "ms"),
            ("latest_offset_ms", "offsets", "ms"),
            ("add_batch_ms", "read", "ms"),
            ("rows_per_batch", "rows/batch", "el"),
            ("session_s", "session start", "s"),
        ],
        warmup=0,  # each process runs its own warm-up query; a round costs ~4 Spark starts
        timeout=600.0,
        pin=False,
        check=["spark_sources.py", "--check"],
    )


def jvm(quick: bool) -> ScenarioDef:
    java_small = _net(quick, 20_000, 2_000_000)
    python_small = _net(quick, 2_000, 200_000)
    java_large = _net(quick, 200, 20_000)
    python_large = _net(quick, 50, 2_000)

    def java(name: str, label: str, *args: str) -> Contestant:
        return _rs(name, label, "net_jvm.py", "client", *args)

    def small(count: str) -> list[str]:
        return ["--size", "8", "--count", count, "--window", "256"]

    def large(count: str) -> list[str]:
        return ["--size", "65536", "--count", count, "--window", "256"]

    return ScenarioDef(
        name="jvm",
        title="JVM: rstreams-java beside rsocket-java (8 B and 64 KiB elements over loopback TCP)",
        description=(
            "One stream per run, server process on CPU0, client on CPU1, window 256 (replenished by "
            "128 every 128 elements), a warm-up stream of N/10 on the same connection first. "
            f"8 B: {int(java_small):,} elements between JVMs, {int(python_small):,} with a Python "
            f"server; 64 KiB: {int(java_large):,} and {int(python_large):,}. rstreams-java: the Java "
            "binding (java/) at both ends, or its client against rstreams' Python server; "
            "rsocket-java 1.1.5 (Maven Central) request-stream over TCP, default settings (both libraries on "
            "Netty's epoll transport here), a server "
            "Flux.range(...).map(...) of one shared payload; rstreams-py: the Python client and "
            "server for reference. The JVM side is java/bench (benchmarks/net_jvm.py builds it with "
            "Maven when missing or stale). Targets (issue 16): rstreams-java >= 1x rsocket-java at "
            "the same size and window."
        ),
        metric="rate",
        unit="el/s",
        contestants=[
            java("rstreams-java-w256", "Java client and server, 8 B", *small(java_small)),
            java(
                "rsocket-java-w256",
                "rsocket-java client and server, 8 B",
                "--impl",
                "rsocket",
                *small(java_small),
            ),
            java(
                "rstreams-java-python-w256",
                "Java client, Python server, 8 B",
                "--server",
                "python",
                *small(python_small),
            ),
            _rs(
                "rstreams-py-w256",
                "Python client and server, 8 B",
                "net_rstreams.py",
                "client",
                "--mode",
                "stream",
                *small(python_small),
            ),
            java("rstreams-java-64k", "Java client and server, 64 KiB", *large(java_large)),
            java(
                "rsocket-java-64k",
                "rsocket-java client and server, 64 KiB",
                "--impl",
                "rsocket",
                *large(java_large),
            ),
            java(
                "rstreams-java-python-64k",
                "Java client, Python server, 64 KiB",
                "--server",
                "python",
                *large(python_large),
            ),
            _rs(
                "rstreams-py-64k",
                "Python client and server, 64 KiB",
                "net_rstreams.py",
                "client",
                "--mode",
                "stream",
                *large(python_large),
            ),
        ],
        ratios=[
            ("rstreams-java-w256", "rsocket-java-w256"),
            ("rstreams-java-64k", "rsocket-java-64k"),
            ("rstreams-java-python-w256", "rstreams-py-w256"),
            ("rstreams-java-python-64k", "rstreams-py-64k"),
        ],
        targets=[
            ("rstreams-java-w256", "rsocket-java-w256", 1.0),
            ("rstreams-java-64k", "rsocket-java-64k", 1.0),
        ],
        extras=[("mbps", "MB/s", "MB/s")],
        timeout=300.0,
        check=["net_jvm.py", "--check"],
    )


def jvm_memory(quick: bool) -> ScenarioDef:
    duration = "2" if quick else "60"
    common = ["client", "--mode", "memory", "--size", "1024", "--duration", duration]
    return ScenarioDef(
        name="jvm-memory",
        title="JVM: the server's memory under a slow consumer that requested everything",
        description=(
            "1 KiB elements between two JVMs. First an unthrottled stream (up to 5 s, at most "
            "300,000 elements) measures how fast the pair moves them; then the client requests "
            f"Long.MAX_VALUE and reads at a tenth of that rate for {duration} s (sleeping on its I/O "
            "thread, so the socket is read no faster) while the server JVM's RSS is sampled every "
            "0.25 s from /proc/<pid>/status. Growth = peak RSS minus RSS just before subscribing; "
            "heap = the server's heap in use after a full GC, asked just before the slow stream "
            "and at 90% of it (what a server holds for its slow reader is live then). Both servers "
            "run with -Xmx1g; rsocket-java's stream is capped at 400,000 elements (~430 MB) so that "
            "it cannot exhaust the machine. Lower is better."
        ),
        metric="growth_mib",
        unit="MiB",
        higher_is_better=False,
        contestants=[
            _rs(
                "rstreams-java",
                "rstreams-java, demand Long.MAX_VALUE",
                "net_jvm.py",
                *common,
                "--count",
                str(10**12),
            ),
            _rs(
                "rsocket-java",
                "rsocket-java request-stream, demand Long.MAX_VALUE",
                "net_jvm.py",
                *common,
                "--impl",
                "rsocket",
                "--count",
                "400000",
            ),
        ],
        extras=[
            ("peak_mib", "peak RSS", "MiB"),
            ("heap_growth_mib", "live heap growth", "MiB"),
            ("slowdown", "production / reading", "x"),
            ("received", "received", "el"),
        ],
        repeats=1,
        warmup=0,
        timeout=400.0,
        plot="memory",
        check=["net_jvm.py", "--check"],
    )


SCENARIOS: dict[str, Callable[[bool], ScenarioDef]] = {
    "inprocess": inprocess,
    "operators": operators,
    "stream-small": stream_small,
    "stream-large": stream_large,
    "request-response": request_response,
    "request-response-metadata": request_response_metadata,
    "latency": latency,
    "memory-slow-consumer": memory,
    "scale": scale,
    "hostile": hostile,
    "loop": loop,
    "spark": spark,
    "jvm": jvm,
    "jvm-memory": jvm_memory,
}
