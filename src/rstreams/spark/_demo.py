"""``rstreams demo``: simulated IoT sensors -> RS.io -> Spark Structured Streaming -> RS.io -> terminal.

What runs, all on this machine:

1. An RS.io server (:class:`ReplayServer`) with two logs: ``sensors``, a replay log fed by
   simulated sensors that produce only when the log asks (backpressure), and
   ``results``, the sink log Spark writes to.
2. A Spark pipeline (local mode, or ``--master``): the ``rstreams`` source reads
   ``sensors``; per-sensor averages over event-time windows with a watermark; the
   ``rstreams`` sink publishes each window once it is final (append mode: Python sinks
   take no update mode in Spark 4.3).
3. A live view (:mod:`rstreams.spark._demo_view`): where the time goes — the share of time
   the sensors wait for demand against the share Spark spends in micro-batches, rows per
   micro-batch and the query's lag, the server's streams as ``rstreams top`` shows them
   (counted: the server runs with ``metrics=True``) — and, from an RS.io client subscribed
   to ``results``, the newest window per sensor. Redrawn in place on a terminal; plain
   lines every 2 s elsewhere.
4. With ``web="HOST:PORT"``, the live page (:class:`rstreams.web.LivePage`): a browser
   subscribes to ``results`` over RS.io on a WebSocket and draws a chart per sensor.

After ``--seconds`` it stops by itself, saves the results to Parquet (a batch read of the
``results`` log through the same source) and prints where the outputs are.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from typing import Any, TextIO

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.flow._flow import Flow
from rstreams.flow._threaded import ThreadedSubscription
from rstreams.replay import ReplayLog, ReplayServer
from rstreams.rules import check_subscriber
from rstreams.spark._demo_view import DemoView, Tick, window_lines

__all__ = ["SensorSource", "run_demo"]

SCHEMA = "sensor string, ts timestamp, value double"
FIRST_BATCH_TIMEOUT = 180.0
"""Seconds to wait for the first micro-batch (cold Python workers on a slow machine)."""


class SensorSource(Flow[bytes]):
    """Simulated sensors: JSON readings ``{"sensor", "ts", "value"}``, made only on demand.

    A producer thread per subscription makes readings while there is demand and waits
    otherwise; ``rate`` (readings/s, 0 = as fast as demanded) paces it. ``waiting`` is the
    time it spent blocked on demand: backpressure made visible.

    Event time: with a ``rate``, the wall clock. Unpaced, a simulated clock: each sensor
    samples ``hz`` times a second from the start, so event time advances with the data
    (windows close as fast as Spark gets through them) rather than with the wall clock.
    """

    def __init__(self, sensors: int = 8, rate: float = 0.0, hz: float = 1000.0) -> None:
        self.sensors = sensors
        self.rate = rate
        self.hz = hz
        self.produced = 0
        self.waiting = 0.0

    def subscribe(self, subscriber: Subscriber[bytes]) -> None:
        check_subscriber(subscriber)
        _SensorSubscription(self, subscriber).begin("rstreams-demo-sensors")


class _SensorSubscription(ThreadedSubscription[bytes]):
    def __init__(self, source: SensorSource, subscriber: Subscriber[bytes]) -> None:
        super().__init__(subscriber)
        self._source = source

    def run(self) -> None:
        import numpy as np

        source = self._source
        rng = np.random.default_rng(7)
        base = 18.0 + 4 * rng.random(source.sensors)
        started = time.monotonic()
        epoch = time.time()
        step = 1 / (source.hz * source.sensors)
        on_next = self.subscriber.on_next
        while True:
            waited = self.waited
            take = self.take(1024)
            source.waiting += self.waited - waited
            if not take:
                return
            # The readings of a whole take at once (numpy), then one JSON object each.
            count = np.arange(source.produced, source.produced + take)
            sensor = count % source.sensors
            now = np.full(take, time.time()) if source.rate > 0 else epoch + count * step
            value = base[sensor] + 2 * np.sin(now / 10 + sensor) + rng.normal(0, 0.3, take)
            readings = zip(sensor.tolist(), now.tolist(), value.round(3).tolist(), strict=True)
            for i, moment, reading in readings:
                on_next(b'{"sensor": "sensor-%d", "ts": %r, "value": %r}' % (i, moment, reading))
            source.produced += take
            if source.rate > 0:
                ahead = source.produced / source.rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)


class _LiveView(Subscriber[bytes]):
    """Keeps the newest window per sensor from the ``results`` stream."""

    def __init__(self) -> None:
        self.latest: dict[str, dict[str, Any]] = {}
        self.received = 0
        self.closing = False
        self._lock = threading.Lock()

    def on_subscribe(self, subscription: Subscription) -> None:
        subscription.request(demand.UNBOUNDED)

    def on_next(self, item: bytes) -> None:
        row = json.loads(item)
        with self._lock:
            self.received += 1
            old = self.latest.get(row["sensor"])
            if old is None or row["window"]["start"] >= old["window"]["start"]:
                self.latest[row["sensor"]] = row

    def on_error(self, error: BaseException) -> None:
        if not self.closing:  # closing the connection at the end ends the stream: not news
            print(f"  (results stream ended: {error})")

    def on_complete(self) -> None:
        pass

    def snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return [self.latest[k] for k in sorted(self.latest)]


def _watch_results(url: str, view: _LiveView, stop: threading.Event) -> None:
    async def main() -> None:
        from rstreams.net import RAW, connect

        conn = await connect(url)
        conn.publisher("results", codec=RAW).subscribe(view)
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)
        await conn.aclose()

    asyncio.run(main())


def _session(master: str) -> Any:
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    spark = (
        SparkSession.builder.master(master)
        .appName("rstreams-demo")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    from rstreams.spark import register

    register(spark)
    return spark


def run_demo(
    *,
    seconds: float = 30.0,
    sensors: int = 8,
    rate: float = 0.0,
    batch: int = 200_000,
    window: int = 2,
    master: str = "local[2]",
    out: str | None = None,
    stream: TextIO = sys.stdout,
    spark: Any = None,
    web: str | None = None,
) -> dict[str, Any]:
    """Run the demo for ``seconds`` once the pipeline is up; returns the measured figures.

    ``spark``: an existing SparkSession to use (left running); by default one is started
    on ``master`` and stopped at the end. ``web``: ``HOST:PORT`` (port 0: any) to serve
    the live page on while the demo runs; its address is printed (``live page: URL``).
    """

    def say(text: str) -> None:
        print(text, file=stream, flush=True)

    out = out or tempfile.mkdtemp(prefix="rstreams-demo-")
    source = SensorSource(sensors, rate)
    log = ReplayLog("sensors", capacity=max(4 * batch, 10_000)).feed(source)
    results = ReplayLog("results", capacity=100_000, evict=True)
    server = ReplayServer(
        {"sensors": log}, sinks={"results": results}, url="tcp://127.0.0.1:0", metrics=True
    ).start()
    say(f"RS.io server on {server.url}: publishers 'sensors' (replay log, {sensors} sensors) and 'results'")
    page = None
    if web is not None:
        from rstreams.web import page_for_logs

        try:
            page = page_for_logs(
                web, {"sensors": log, "results": results}, publisher="results", title="rstreams demo"
            )
            say(f"live page: {page.url} (charts of 'results' per sensor; RS.io for it on {page.ws_url})")
        except OSError as error:  # the address is taken: the demo runs on without its page
            say(f"live page not started on {web}: {error} (choose another with --web HOST:PORT)")
    say(f"starting Spark ({master}); the first start takes 20-40 s (JVM, Python workers)...")
    t0 = time.monotonic()
    own_session = spark is None
    if spark is None:
        spark = _session(master)
    else:
        from rstreams.spark import register

        register(spark)
    from pyspark.sql import functions as F

    from rstreams.spark._progress import watch_progress

    readings = (
        spark.readStream.format("rstreams")
        .option("url", server.url)
        .option("publisher", "sensors")
        .option("schema", SCHEMA)
        .option("maxRecordsPerBatch", batch)
        .load()
    )
    aggregates = (
        readings.withWatermark("ts", f"{window} seconds")
        .groupBy(F.window("ts", f"{window} seconds"), "sensor")
        .agg(F.round(F.avg("value"), 3).alias("avg"), F.count("*").alias("n"), F.max("value").alias("max"))
    )
    progress = watch_progress(spark, server)  # Spark's progress among the server's numbers
    query = (
        aggregates.writeStream.queryName("rstreams-demo")
        .format("rstreams")
        .option("url", server.url)
        .option("publisher", "results")
        .option("checkpointLocation", os.path.join(out, "checkpoint"))
        .outputMode("append")
        .trigger(processingTime="0 seconds")
        .start()
    )
    view = _LiveView()
    stop = threading.Event()
    watcher = threading.Thread(target=_watch_results, args=(server.url, view, stop), daemon=True)
    watcher.start()
    say(f"pipeline started after {time.monotonic() - t0:.0f} s; running for {seconds:.0f} s")
    say(f"(from another terminal: rstreams top {server.url})\n")
    figures: dict[str, Any] = _watch(query, server, source, view, seconds, stream)
    spark.sparkContext.setLogLevel("OFF")  # stopping aborts the running batch: expected, not news
    query.stop()
    spark.streams.removeListener(progress)
    view.closing = True
    stop.set()
    watcher.join(10)
    say("\nlatest windows:")
    for line in window_lines(view.snapshot()):
        say(line)
    parquet = os.path.join(out, "results.parquet")
    saved = (
        spark.read.format("rstreams")
        .option("url", server.url)
        .option("publisher", "results")
        .option(
            "schema", "window struct<start: timestamp, end: timestamp>, sensor string, avg double, n bigint"
        )
    )
    saved.load().write.mode("overwrite").parquet(parquet)
    if own_session:
        spark.stop()
    else:
        spark.sparkContext.setLogLevel("ERROR")
    if page is not None:
        page.stop()
    server.stop()
    say(f"\nresults: {view.received} window updates published on 'results'; saved to {parquet}")
    say(f"checkpoint: {os.path.join(out, 'checkpoint')}")
    figures.update(results=view.received, parquet=parquet)
    return figures


def _behind(progress: Any) -> int | None:
    """The source's lag in a query progress (``reportLatestOffset``): rows behind the log's end."""
    try:
        latest = progress["sources"][0]["latestOffset"]
        report = json.loads(latest) if isinstance(latest, str) else latest
        return int(report.get("rowsBehind", report["behind"]))
    except (TypeError, KeyError, IndexError, ValueError):
        return None


def _watch(
    query: Any, server: ReplayServer, source: SensorSource, view: _LiveView, seconds: float, stream: TextIO
) -> Any:
    """Show the demo's view (:mod:`rstreams.spark._demo_view`) until ``seconds`` have passed:
    every second on a terminal, every 2 s elsewhere; return the figures.

    The clock starts at the first finished micro-batch: the first one pays for starting
    Spark's Python workers (seconds on a small machine), which is not the pipeline's pace.
    """
    waited = time.monotonic()
    while query.isActive and not any(p["numInputRows"] for p in query.recentProgress):
        if time.monotonic() - waited > FIRST_BATCH_TIMEOUT:
            raise RuntimeError(f"no micro-batch finished within {FIRST_BATCH_TIMEOUT} s")
        time.sleep(0.2)
    first = time.monotonic() - waited
    print(f"first micro-batch done after {first:.0f} s (Python workers started)", file=stream, flush=True)
    screen = DemoView(stream, seconds=seconds)
    every = 1.0 if screen.screen.live else 2.0
    deadline = time.monotonic() + seconds
    seen = {p["batchId"] for p in query.recentProgress if p["numInputRows"]}  # the cold start
    batches: list[tuple[int, float]] = []  # (rows, seconds) of those finished since the clock started
    started = sampled = time.monotonic()
    busy = 0.0  # seconds the query was running a micro-batch, sampled each turn below

    def tick() -> Tick:
        return Tick(
            at=time.monotonic() - started,
            produced=source.produced,
            waited=source.waiting,
            busy=busy,
            rows=sum(rows for rows, _ in batches),
            batches=list(batches),
            behind=_behind(query.lastProgress),
            stats=server.metrics(),
            windows=view.snapshot(),
        )

    screen.start(tick())
    next_show = started + every
    while time.monotonic() < deadline and query.isActive:
        now = time.monotonic()
        if query.status.get("isTriggerActive"):
            busy += now - sampled
        sampled = now
        for progress in query.recentProgress:
            if progress["batchId"] not in seen and progress["numInputRows"]:
                seen.add(progress["batchId"])
                took = progress["durationMs"].get("triggerExecution", 0) / 1000
                batches.append((progress["numInputRows"], took))
        if now >= next_show:
            next_show += every
            screen.show(tick())
        time.sleep(0.2)
    if query.exception() is not None:
        raise RuntimeError(f"the Spark query failed: {query.exception()}")
    elapsed = time.monotonic() - started
    rows = sum(rows for rows, _ in batches)
    latencies = [took for _, took in batches]
    return {
        "rows": rows,
        "rows_per_s": rows / elapsed if elapsed else 0.0,
        "batches": len(latencies),
        "median_batch_s": statistics.median(latencies) if latencies else None,
        "steady_rows_per_s": rows / sum(latencies) if sum(latencies) else 0.0,
        "produced": source.produced,
        "waited_s": source.waiting,
        "results": view.received,
    }
