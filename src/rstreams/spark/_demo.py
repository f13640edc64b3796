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
``results`` log through the same source) and prints where the outputs are. SIGTERM or
Ctrl-C stops it the same way at any moment (``run_demo(signals=True)``, what the command
uses), sent to the demo's process group too: the JVM runs in a group of its own
(:func:`_context`); the JVM's output goes to ``spark.log`` beside them, not to the terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from rstreams import demand
from rstreams.api import Subscriber, Subscription
from rstreams.errors import ReactiveStreamsError
from rstreams.flow._flow import Flow
from rstreams.flow._threaded import ThreadedSubscription
from rstreams.replay import ReplayLog, ReplayServer
from rstreams.rules import check_subscriber
from rstreams.spark._demo_view import DemoView, Tick, window_lines

__all__ = ["DemoQueryError", "SensorSource", "run_demo"]

SCHEMA = "sensor string, ts timestamp, value double"
FIRST_BATCH_TIMEOUT = 180.0
"""Seconds to wait for the first micro-batch (cold Python workers on a slow machine)."""


class DemoQueryError(ReactiveStreamsError, RuntimeError):
    """The demo's Spark query failed (the message has Spark's reason), or finished no micro-batch
    within :data:`FIRST_BATCH_TIMEOUT` seconds of its start. :func:`run_demo` raises it once it
    has stopped the query, the session, the page and the server; Spark's log (``OUT/spark.log``
    when the demo started the session) has the rest."""


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


def _session(master: str, log: str, guard: _Signals, announce: Callable[[int], None]) -> Any:
    """A SparkSession on ``master`` whose JVM writes its output to the file ``log``.

    A signal while the session starts waits until it is up (``announce(signum)`` says so at
    once): interrupted while the JVM starts, PySpark would lose the process before it watches
    its standard input (which ends it with this one). A second signal ends the process at once.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark import SparkConf

    conf = (
        SparkConf()
        .setMaster(master)
        .setAppName("rstreams-demo")
        .set("spark.ui.enabled", "false")
        .set("spark.ui.showConsoleProgress", "false")
        .set("spark.sql.shuffle.partitions", "2")
        .set("spark.sql.session.timeZone", "UTC")
    )
    with guard.held(announce):
        spark = _start(conf, log)
        guard.install()  # again: the SparkContext put its own SIGINT handler in
    spark.sparkContext.setLogLevel("ERROR")
    from rstreams.spark import register

    register(spark)
    return spark


def _start(conf: Any, log: str) -> Any:
    """The SparkSession of ``conf`` on :func:`_context`'s context."""
    from pyspark.sql import SparkSession

    return SparkSession(_context(conf, log))


def _context(conf: Any, log: str) -> Any:
    """The SparkContext of ``conf``, its JVM started with the file ``log`` as standard error and
    in a process group (a session) of its own.

    Standard error: the JVM inherits the descriptor as it starts, so Spark's warnings and, when
    the demo is stopped, the JVM's reports of the work it aborts go to ``log`` rather than to
    the terminal (the Python workers' output too).

    Its own group: a signal sent to the demo's process group (``timeout(1)``, a service
    manager, a shell's Ctrl-C) reaches the demo alone, which stops the query and the session in
    order; in the demo's group the JVM ended at once, and every call the demo made to stop it
    failed (``ConnectionRefusedError``). The JVM still ends with the demo: PySpark's gateway
    exits when its standard input, a pipe from this process, closes. A JVM this process already
    runs (an earlier session's) is used again, as PySpark does.
    """
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway

    gateway = SparkContext._gateway
    if gateway is None:
        sys.stderr.flush()
        terminal = os.dup(2)
        try:
            with open(log, "ab") as file:
                os.dup2(file.fileno(), 2)
            gateway = launch_gateway(conf, popen_kwargs={"start_new_session": True})
        finally:
            os.dup2(terminal, 2)
            os.close(terminal)
    return SparkContext(conf=conf, gateway=gateway)


def _jvm_ended(spark: Any, wait: float) -> bool:
    """Whether the JVM this process started for Spark has exited, or exits within ``wait``
    seconds (one that got the signal too runs Spark's shutdown hooks first). ``False`` when
    this process started none (``PYSPARK_GATEWAY_PORT``) or Spark was not imported."""
    if spark is not None:
        gateway = getattr(spark.sparkContext, "_gateway", None)
    else:
        pyspark = sys.modules.get("pyspark")
        gateway = None if pyspark is None else pyspark.SparkContext._gateway
    process = getattr(gateway, "proc", None)
    if process is None:
        return False
    try:
        process.wait(wait)
    except subprocess.TimeoutExpired:
        return False
    return True


JVM_EXIT_WAIT = 10.0
"""Seconds a stopping demo waits, after a call into Spark failed, for a JVM that got the signal
too to exit (its shutdown hooks stop the session first) before it reports the failure instead."""


class _Stopped(BaseException):
    """Raised in the main thread by the first SIGTERM or SIGINT while the demo starts or runs.

    A ``BaseException``, as ``KeyboardInterrupt`` is: no ``except Exception`` on the way
    swallows it.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class _Signals:
    """SIGTERM and SIGINT while the demo runs (handled in the main thread only).

    The first one raises :class:`_Stopped` while the demo starts or runs (but see
    :meth:`held`); once it is stopping anyway, it is only noted (the stopping goes on,
    without saving if nothing was published). From the first one on, this process's standard
    error goes to :attr:`log` (when set) until :meth:`restore`: a JVM that got the signal too
    breaks the connections PySpark and Py4J hold, and they print what they lost (tracebacks),
    which is not news. A second signal ends the process at once, the JVM with it (its standard
    input closes), the demo starting or not.
    """

    def __init__(self) -> None:
        self.signum: int | None = None
        self.stopping = False
        self.log: str | None = None
        self._holding = False
        self._announce: Callable[[int], None] | None = None
        self._terminal: int | None = None  # standard error's descriptor, while it goes to the log
        self._previous: dict[int, Any] = {}

    def install(self) -> None:
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                previous = signal.signal(signum, self._handle)
                self._previous.setdefault(signum, previous)

    def restore(self) -> None:
        for signum, previous in self._previous.items():
            signal.signal(signum, previous)
        self._previous.clear()
        if self._terminal is not None:
            sys.stderr.flush()
            os.dup2(self._terminal, 2)
            os.close(self._terminal)
            self._terminal = None

    @contextlib.contextmanager
    def held(self, announce: Callable[[int], None]) -> Iterator[None]:
        """Inside, a signal is only noted, and ``announce(signum)`` called at once; raised as
        :class:`_Stopped` on the way out."""
        self._holding, self._announce = True, announce
        try:
            yield
        finally:
            self._holding, self._announce = False, None
        self.check()

    def check(self) -> None:
        """Raise :class:`_Stopped` if a signal was only noted (see :meth:`_handle`)."""
        if self.signum is not None and not (self.stopping or self._holding):
            raise _Stopped(self.signum)

    def _handle(self, signum: int, frame: Any) -> None:
        """Raise :class:`_Stopped`, unless held, stopping or inside a call into the JVM (an
        exception there would leave Py4J's connection mid-answer): the signal is then only
        noted, and raised by the next :meth:`check`, once the call has returned."""
        if self.signum is not None:
            said = f"rstreams demo: {signal.Signals(signum).name} again: stopped at once\n"
            os.write(2 if self._terminal is None else self._terminal, said.encode())
            os._exit(128 + self.signum)
        self.signum = signum
        self._quiet()
        if self._announce is not None:
            self._announce(signum)
        if not _in_py4j(frame):
            self.check()

    def _quiet(self) -> None:
        """Standard error to :attr:`log`, at the descriptor (what PySpark's threads print too)."""
        if self.log is None:
            return
        try:
            log = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        except OSError:
            return
        self._terminal = os.dup(2)
        os.dup2(log, 2)
        os.close(log)


def _in_py4j(frame: Any) -> bool:
    """Whether the interrupted ``frame`` runs in Py4J (a call into the JVM or its answer)."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("py4j"):
            return True
        frame = frame.f_back
    return False


def _first_line(error: BaseException) -> str:
    """An error's first line (a Py4J error's text goes on with the Java stack trace)."""
    lines = str(error).strip().splitlines()
    return lines[0] if lines else type(error).__name__


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
    signals: bool = False,
) -> dict[str, Any]:
    """Run the demo for ``seconds`` once the pipeline is up; returns the measured figures.

    ``spark``: an existing SparkSession to use (left running); by default one is started
    on ``master`` (its JVM's output going to ``OUT/spark.log``) and stopped at the end.
    ``web``: ``HOST:PORT`` (port 0: any) to serve the live page on while the demo runs; its
    address is printed (``live page: URL``).

    Stopping early: with ``signals`` (from the main thread), SIGTERM and SIGINT (Ctrl-C) stop
    the demo at any moment; without, Ctrl-C (``KeyboardInterrupt``) does. The query, the
    session, the page and the server are stopped, the windows published so far saved (or a
    line says nothing was), and the figures' ``stopped`` is the signal's number (``None``
    when the demo ran its course). A second signal ends the process at once. A signal while
    Spark starts is said at once, and acted on once it is up; a JVM that got the signal too
    (a service manager stops every process) has ended, which a line says, and nothing more is
    asked of it (nothing saved).

    Raises:
        DemoQueryError: the Spark query failed, or ran no micro-batch in time (everything
            stopped first, as above; nothing saved).
        MissingExtraError: ``web`` without the websockets extra (before anything starts).
    """

    jvm_ended = False  # the JVM got the signal too and has exited: nothing more to ask of Spark

    def say(text: str) -> None:
        print(text, file=stream, flush=True)

    def starting(signum: int) -> None:  # a signal while Spark starts: held until it is up
        name = signal.Signals(signum).name
        say(f"\n{name}: the demo stops once Spark has started (a second {name} or Ctrl-C: at once)")

    def spark_failed(doing: str, error: BaseException) -> None:
        """Say why a call into Spark failed while stopping, or, once, that the JVM has ended."""
        nonlocal jvm_ended
        if jvm_ended:
            return
        if guard.signum is not None and _jvm_ended(spark, JVM_EXIT_WAIT):
            jvm_ended = True
            name = signal.Signals(guard.signum).name
            say(f"(Spark's JVM has ended: the {name} reached it too, and its query and session with it)")
        else:
            say(f"({doing}: {_first_line(error)})")

    if web is not None:  # the live page's extra: checked before the server and Spark start
        try:
            import websockets  # noqa: F401
        except ModuleNotFoundError as missing:
            from rstreams.errors import MissingExtraError

            needs = "web= (the live page) needs the websockets extra: pip install 'rstreams[websockets]'"
            raise MissingExtraError(needs, name=missing.name) from missing

    out = out or tempfile.mkdtemp(prefix="rstreams-demo-")
    os.makedirs(out, exist_ok=True)
    guard = _Signals()
    own_session = spark is None
    server: ReplayServer | None = None
    page: Any = None
    progress: Any = None
    watcher: threading.Thread | None = None
    view = _LiveView()
    stop = threading.Event()
    figures: dict[str, Any] = {}
    source = SensorSource(sensors, rate)
    failed: Exception | None = None
    parquet: str | None = None
    try:
        try:
            if signals:
                guard.install()
            log = ReplayLog("sensors", capacity=max(4 * batch, 10_000)).feed(source)
            results = ReplayLog("results", capacity=100_000, evict=True)
            server = ReplayServer(
                {"sensors": log}, sinks={"results": results}, url="tcp://127.0.0.1:0", metrics=True
            ).start()
            names = f"publishers 'sensors' (replay log, {sensors} sensors) and 'results'"
            say(f"RS.io server on {server.url}: {names}")
            if web is not None:
                from rstreams.web import page_for_logs

                try:
                    page = page_for_logs(
                        web, {"sensors": log, "results": results}, publisher="results", title="rstreams demo"
                    )
                    charts = f"charts of 'results' per sensor; RS.io for it on {page.ws_url}"
                    say(f"live page: {page.url} ({charts})")
                except OSError as error:  # the address is taken: the demo runs on without its page
                    say(f"live page not started on {web}: {error} (choose another with --web HOST:PORT)")
            t0 = time.monotonic()
            say(f"starting Spark ({master}); the first start takes 20-40 s (JVM, Python workers)...")
            if spark is None:
                spark_log = os.path.join(out, "spark.log")
                open(spark_log, "ab").close()  # the log named on the terminal exists, whatever comes next
                say(f"(Spark's log: {spark_log})")
                guard.log = spark_log
                spark = _session(master, spark_log, guard, starting)
            else:
                from rstreams.spark import register

                register(spark)
            guard.check()
            progress, query = _start_query(spark, server, batch, window, out)
            guard.check()
            watcher = threading.Thread(target=_watch_results, args=(server.url, view, stop), daemon=True)
            watcher.start()
            say(f"pipeline started after {time.monotonic() - t0:.0f} s; running for {seconds:.0f} s")
            say(f"(from another terminal: rstreams top {server.url})\n")
            figures = _watch(query, server, source, view, seconds, stream, guard.check)
            guard.stopping = True
        except _Stopped:
            pass
        except KeyboardInterrupt:  # Ctrl-C without ``signals``
            guard.signum = signal.SIGINT
        except Exception as error:  # the demo is stopped as below, then the error raised again
            failed = error
        guard.stopping = True
        if guard.signum is not None:
            say(f"\n{signal.Signals(guard.signum).name}: stopping the demo")
            if failed is not None:  # a call into Spark that failed after the signal: stopped, not failed
                spark_failed("Spark", failed)
                failed = None
        if spark is not None and not jvm_ended:
            try:
                spark.sparkContext.setLogLevel("OFF")  # stopping aborts the running batch: expected, not news
                for active in spark.streams.active:  # the demo's query, even if its start was interrupted
                    if active.name == QUERY:
                        active.stop()
                if progress is not None:
                    spark.streams.removeListener(progress)
            except Exception as error:
                spark_failed("stopping the query", error)
        view.closing = True
        stop.set()
        if watcher is not None:
            watcher.join(10)
        if view.received:
            say("\nlatest windows:")
            for line in window_lines(view.snapshot()):
                say(line)
        parquet = None
        if (
            spark is not None
            and server is not None
            and failed is None
            and not jvm_ended
            and (guard.signum is None or view.received)
        ):
            parquet = os.path.join(out, "results.parquet")
            try:
                _save(spark, server.url, parquet)
            except Exception as error:
                spark_failed("results not saved", error)
                parquet = None
        if not jvm_ended:
            _stop_session(spark, own_session, spark_failed)
        if page is not None:
            page.stop()
        if server is not None:
            server.stop()
        if failed is not None:
            raise failed
        if parquet is not None:
            say(f"\nresults: {view.received} window updates published on 'results'; saved to {parquet}")
            say(f"checkpoint: {os.path.join(out, 'checkpoint')}")
        elif not view.received:
            say("\nno window was published on 'results' yet: nothing saved")
        elif jvm_ended:
            say("\nthe windows above were not saved: Spark's JVM has ended")
    finally:
        guard.restore()
    figures.update(results=view.received, parquet=parquet, stopped=guard.signum)
    return figures


QUERY = "rstreams-demo"
"""The streaming query's name."""


def _start_query(spark: Any, server: ReplayServer, batch: int, window: int, out: str) -> tuple[Any, Any]:
    """The demo's streaming query, started: (Spark's progress listener, the query)."""
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
        aggregates.writeStream.queryName(QUERY)
        .format("rstreams")
        .option("url", server.url)
        .option("publisher", "results")
        .option("checkpointLocation", os.path.join(out, "checkpoint"))
        .outputMode("append")
        .trigger(processingTime="0 seconds")
        .start()
    )
    return progress, query


def _save(spark: Any, url: str, parquet: str) -> None:
    """The ``results`` log to Parquet: a batch read through the same source."""
    saved = (
        spark.read.format("rstreams")
        .option("url", url)
        .option("publisher", "results")
        .option(
            "schema", "window struct<start: timestamp, end: timestamp>, sensor string, avg double, n bigint"
        )
    )
    saved.load().write.mode("overwrite").parquet(parquet)


def _stop_session(spark: Any, own_session: bool, failed: Callable[[str, BaseException], None]) -> None:
    """Stop the demo's own session (one whose start was interrupted too); a given one is
    left running, its log level back to errors."""
    try:
        if not own_session:
            spark.sparkContext.setLogLevel("ERROR")
        elif spark is not None:
            spark.stop()
        else:
            from pyspark import SparkContext

            context = SparkContext._active_spark_context
            if context is not None:
                context.stop()
    except ImportError:
        pass
    except Exception as error:
        failed("stopping Spark", error)


def _behind(progress: Any) -> int | None:
    """The source's lag in a query progress (``reportLatestOffset``): rows behind the log's end."""
    try:
        latest = progress["sources"][0]["latestOffset"]
        report = json.loads(latest) if isinstance(latest, str) else latest
        return int(report.get("rowsBehind", report["behind"]))
    except (TypeError, KeyError, IndexError, ValueError):
        return None


def _watch(
    query: Any,
    server: ReplayServer,
    source: SensorSource,
    view: _LiveView,
    seconds: float,
    stream: TextIO,
    check: Callable[[], None] = lambda: None,
) -> Any:
    """Show the demo's view (:mod:`rstreams.spark._demo_view`) until ``seconds`` have passed:
    every second on a terminal, every 2 s elsewhere; return the figures.

    The clock starts at the first finished micro-batch: the first one pays for starting
    Spark's Python workers (seconds on a small machine), which is not the pipeline's pace.
    """
    waited = time.monotonic()
    while query.isActive and not any(p["numInputRows"] for p in query.recentProgress):
        if time.monotonic() - waited > FIRST_BATCH_TIMEOUT:
            raise DemoQueryError(
                f"no micro-batch finished within {FIRST_BATCH_TIMEOUT:.0f} s of the query's start "
                "(FIRST_BATCH_TIMEOUT): Spark's Python workers did not start, or ran no batch"
            )
        check()
        time.sleep(0.2)
    first = time.monotonic() - waited
    print(f"first micro-batch done after {first:.0f} s (Python workers started)", file=stream, flush=True)
    screen = DemoView(stream, seconds=seconds)
    every = 1.0 if screen.screen.live else 2.0
    deadline = time.monotonic() + seconds
    seen = {p["batchId"] for p in query.recentProgress if p["numInputRows"]}  # the cold start
    batches: list[tuple[int, float]] = []  # (rows, seconds) of those finished since the clock started
    started = sampled = time.monotonic()
    waited_before = source.waiting  # the cold start's wait is not the pipeline's
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
        check()
        time.sleep(0.2)
    if query.exception() is not None:
        raise DemoQueryError(f"the Spark query failed: {query.exception()}")
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
        "waited_s": source.waiting - waited_before,
        "results": view.received,
    }
