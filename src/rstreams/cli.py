"""The ``rstreams`` command.

* ``rstreams demo``: simulated sensors -> RS.io -> Spark -> RS.io -> live terminal view
  (needs the ``spark`` extra and Java 17+; the only command that imports :mod:`rstreams.spark`).
* ``rstreams serve URL``: serve the built-in demo publishers ``counter`` and
  ``sensors/{id}`` (:mod:`rstreams._cli_publishers`), or with ``--publishers
  module:NAME`` (or ``file.py:NAME``) a user's mapping, as ``rstreams.serve`` takes it;
  ``--codec``, ``--resume``; both forms take ``--tls-cert``/``--tls-key`` (and
  ``--tls-client-ca``: mutual TLS) and ``--token``.
* ``rstreams serve URL NAME``: serve the lines of standard input as a replay log ``NAME``
  (``NAME?from=A&to=B``, ``NAME?latest``, ``NAME?commit=N``: what the Spark source reads),
  with ``--sink``, ``--web`` and the rest of its options (:mod:`rstreams._cli_logs`).
* ``rstreams subscribe URL NAME``: print a remote publisher's elements as they arrive, with
  a demand window (``--demand N``: never more than N outstanding), ``--count N`` and
  ``--timeout S`` (silence from the server); exit 1
  when the publisher fails (an unknown name), 2 when the server cannot be reached or ends
  the connection (a refused token, TLS).
* ``rstreams ping URL`` / ``rstreams top URL``: a server's health, and a live table of its
  streams (:mod:`rstreams._cli_observe`); ``rstreams serve URL [NAME] --metrics HOST:PORT|on``
  counts for them (and serves Prometheus' ``/metrics``).
* ``rstreams publish URL NAME``: publish standard input's lines on a server's sink log
  ``NAME`` (staged, then published as one batch, like the Spark sink does; :mod:`rstreams._cli_logs`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import ssl
import struct
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from rstreams._cli_common import (
    browser_facing,
    cannot_serve,
    fail,
    no_hello_hint,
    server_names,
    server_tls,
    shown_name,
    shown_names,
    token_check,
)
from rstreams.errors import ReactiveStreamsError

if TYPE_CHECKING:
    from rstreams.api import Subscription
    from rstreams.net import Connection

__all__ = ["main"]


_SPARK_MASTER = re.compile(
    r"local(\[(\d+|\*)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]|yarn|(spark|k8s|mesos)://\S+"
)
"""The master URLs Spark takes (its ``SparkContext`` ends its JVM on any other)."""


def _demo_problem(args: argparse.Namespace) -> str | None:
    """The first ``rstreams demo`` option out of range, named; checked before Spark starts."""
    if not args.seconds > 0:
        return f"--seconds needs a number > 0, got {args.seconds}"
    for option, count in (("--sensors", args.sensors), ("--batch", args.batch), ("--window", args.window)):
        if count < 1:
            return f"{option} needs an integer >= 1, got {count}"
    if not args.rate >= 0:
        return f"--rate needs readings/s >= 0 (0: as fast as Spark takes), got {args.rate}"
    if not _SPARK_MASTER.fullmatch(args.master):  # Spark would say only that its gateway exited
        return (
            f"--master needs a Spark master URL: local[N], local[*], spark://HOST:PORT, yarn or "
            f"k8s://HOST:PORT; got {args.master!r}"
        )
    host, colon, port = args.web.rpartition(":")
    if not args.no_web and (not colon or not host or not port.isdigit() or int(port) > 65535):
        return (
            f"--web needs HOST:PORT (e.g. 127.0.0.1:8000; a port from 0 to 65535, 0: any), got {args.web!r}"
        )
    if args.out is not None:  # made now, as the demo would make it, rather than after Java's check
        try:
            os.makedirs(args.out, exist_ok=True)
        except OSError as bad:
            return f"--out needs a directory it can make or write in, got {args.out!r}: {bad.strerror}"
    return None


def _importable(name: str) -> bool:
    """Whether the module ``name`` can be imported (found, not imported)."""
    import importlib.util

    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


_SPARK_EXTRA = ("pyspark", "pyarrow", "pandas", "msgpack")
"""The packages of the ``spark`` extra (pyproject.toml), which the demo's Spark job imports."""


def _demo_missing(no_web: bool) -> str | None:
    """Every extra ``rstreams demo`` needs and does not find, named at once with the one ``pip
    install`` that adds them all; ``None`` when none is missing."""
    needs, extras = [], []
    absent = [name for name in _SPARK_EXTRA if not _importable(name)]
    if absent:
        needs.append(f"the Spark job needs the spark extra ({', '.join(absent)} missing)")
        extras.append("spark")
    page = not no_web and not _importable("websockets")
    if page:
        needs.append("the live page needs the websockets extra")
        extras.append("websockets")
    if not needs:
        return None
    web = " (or --no-web)" if page else ""
    return f"{'; '.join(needs)}: pip install 'rstreams[{','.join(extras)}]'{web}"


def _demo(args: argparse.Namespace) -> int:
    problem = _demo_problem(args)
    if problem is not None:
        return fail("demo", problem)
    missing = _demo_missing(args.no_web)
    if missing is not None:  # before Spark starts, not after
        return fail("demo", missing)
    try:
        from rstreams.spark import JavaMissingError, check_java
    except ImportError as error:
        print(f"rstreams demo: {error}", file=sys.stderr)
        return 2
    try:
        version = check_java()
    except JavaMissingError as error:
        print(f"rstreams demo: {error}", file=sys.stderr)
        return 2
    print(f"Java {version} found")
    from rstreams.spark._demo import run_demo

    try:
        figures = run_demo(
            seconds=args.seconds,
            sensors=args.sensors,
            rate=args.rate,
            batch=args.batch,
            window=args.window,
            master=args.master,
            out=args.out,
            web=None if args.no_web else args.web,
            signals=True,
        )
    except Exception as failed:  # Spark's (the demo has stopped everything); the rest is in spark.log
        said = (str(failed).strip().splitlines() or [""])[0]
        return fail("demo", f"{type(failed).__name__}: {said} (Spark's log, if named above, has more)", 1)
    if figures["stopped"] is not None:  # SIGTERM or Ctrl-C: stopped cleanly, before its time
        return 128 + int(figures["stopped"])
    print(_demo_summary(figures, args.seconds))
    return 0


def _demo_summary(figures: dict[str, Any], seconds: float) -> str:
    """The demo's last line: its figures over the ``seconds`` after the first micro-batch."""
    if not figures["batches"]:
        return (
            f"\nno micro-batch finished in the {seconds:g} s after the first (--seconds): Spark took "
            f"longer on this machine; sensors waited {figures['waited_s']:.1f} s for demand meanwhile"
        )
    median = figures["median_batch_s"]
    rate = figures["rows_per_s"]
    return (
        f"\n{figures['rows']:,} rows in {figures['batches']} micro-batches: {rate:,.0f} rows/s "
        f"into Spark (steady {figures['steady_rows_per_s']:,.0f} rows/s), median micro-batch "
        f"{(median or 0) * 1000:.0f} ms; sensors waited {figures['waited_s']:.1f} s for demand"
    )


class _Inbox:
    """The subscriber of ``rstreams subscribe``: hands every signal to the printing loop,
    which does all the requesting (so demand follows what has been printed)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.signals: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._loop = loop
        self._thread = threading.get_ident()

    def _put(self, kind: str, value: Any) -> None:
        if threading.get_ident() == self._thread:
            self.signals.put_nowait((kind, value))
        else:
            self._loop.call_soon_threadsafe(self.signals.put_nowait, (kind, value))

    def on_subscribe(self, subscription: Subscription) -> None:
        self._put("subscribe", subscription)

    def on_next(self, item: bytes) -> None:
        self._put("next", item)

    def on_error(self, error: BaseException) -> None:
        self._put("error", error)

    def on_complete(self) -> None:
        self._put("complete", None)


def _formatter(codec: str) -> Callable[[bytes], str]:
    """How ``rstreams subscribe --codec`` prints one element's bytes (raises ValueError if it cannot)."""
    if codec == "utf8":
        return lambda data: bytes(data).decode(errors="replace")
    if codec == "raw":
        return lambda data: bytes(data).hex()
    if codec == "json":
        return lambda data: json.dumps(json.loads(bytes(data)), separators=(",", ":"), ensure_ascii=False)
    size, kind = {"int64": (8, "<q"), "float64": (8, "<d")}[codec]

    def number(data: bytes) -> str:
        if len(data) != size:
            raise ValueError(f"{len(data)} bytes where {codec} takes {size}")
        return repr(struct.unpack(kind, data)[0])

    return number


def _announced_codec(media_type: str | None) -> str:
    """The ``--codec`` that shows elements of the announced ``media_type`` (PROTOCOL.md §17):
    utf8 for text, none announced, or a type without a built-in way to show it."""
    from rstreams.net import FLOAT64, INT64, JSON
    from rstreams.net._codec import codec_for

    codec = None if media_type is None else codec_for(media_type)
    return {id(JSON): "json", id(INT64): "int64", id(FLOAT64): "float64"}.get(id(codec), "utf8")


async def _print_elements(conn: Connection, args: argparse.Namespace) -> None:
    """Subscribe to ``args.name`` and print each element as it arrives (its bytes, shown by ``--codec``).

    Demand is a window of ``args.demand``: that many are requested first, then more as
    elements are printed (every half window), so never more than ``args.demand`` are
    outstanding; with ``args.count`` nothing beyond the count is ever requested, and the
    subscription is cancelled once it is reached.
    """
    inbox = _Inbox(asyncio.get_running_loop())
    from rstreams.net import RAW  # imported late: the CLI starts without the network stack

    conn.publisher(args.name, codec=RAW).subscribe(inbox)
    codec = args.codec or "utf8"  # without --codec: by the announced content type (below)
    show = _formatter(codec)
    window, count = args.demand, args.count
    top_up = max(1, window // 2)
    subscription: Subscription | None = None
    requested = printed = unasked = 0
    while True:
        kind, value = await inbox.signals.get()
        if kind == "subscribe":
            subscription = value
            requested = window if not count else min(window, count)
            value.request(requested)
        elif kind == "next":
            assert subscription is not None
            if args.codec is None and printed == 0:  # the announcement came before the first element
                codec = _announced_codec(getattr(subscription, "content_type", None))
                show = _formatter(codec)
            try:
                line = show(value)
            except ValueError as bad:
                subscription.cancel()
                announced = getattr(subscription, "content_type", None)
                if args.codec is None:
                    raise _ElementError(
                        f"element {printed + 1} is not {codec} (announced {announced}): {bad} "
                        "(--codec raw shows any element as hex)"
                    ) from None
                instead = (
                    "leave --codec out to show them so" if announced else "another --codec, or raw for hex"
                )
                raise _ElementError(
                    f"element {printed + 1} is not {codec}: {bad} (--codec {codec}; the publisher "
                    f"announces {announced or 'no content type'}: {instead})"
                ) from None
            sys.stdout.write(line + "\n")
            sys.stdout.flush()
            printed += 1
            if count and printed >= count:
                subscription.cancel()
                return
            unasked += 1
            if unasked >= top_up:
                more = unasked if not count else min(unasked, count - requested)
                unasked = 0
                if more > 0:
                    requested += more
                    subscription.request(more)
        elif kind == "error":
            raise value
        else:
            return


def _channel_hint(message: str, name: str, url: str) -> str:
    """How to open ``name`` when the server refused the subscribe because ``name`` is a channel
    (PROTOCOL.md §21.3): no command of rstreams opens one, the Python API does; for any other
    unknown name, where the server lists the names it has, unless that list is the name refused
    (only rstreams' Python servers serve it)."""
    if "is a channel: open it as one" not in message:
        if message.startswith("no publisher named 'rstreams/publishers'"):  # a Java or JavaScript server
            return " (this server does not list its publishers: only rstreams' Python servers do)"
        if message.startswith("no publisher named "):  # where the names are, on an rstreams server
            # a replay log server's names are decided by a function: its listing says "more", its logs
            # are in rstreams/logs (docs/replay.md)
            return (
                f" (the names it offers: rstreams subscribe {url} rstreams/publishers; "
                "a replay log server's logs: rstreams/logs)"
            )
        return ""
    return (
        f" (rstreams subscribe opens no channels; in Python: conn.channel({shown_name(name)}, "
        "input_publisher), README.md, 'Channels: a stream in, a stream out')"
    )


def _keepalive(timeout: float) -> float:
    """Seconds of silence after which ``rstreams subscribe`` pings the server (PROTOCOL.md §14):
    within half its ``--timeout``, so that a live server's pong comes in time and a slow stream
    (``sensors/1?rate=0.1 --timeout 3``) is not taken for a silent server; the server's own
    pings (every 15 s by default) come too late for a timeout below 15 s."""
    from rstreams.net._keepalive import DEFAULT_KEEPALIVE

    return min(DEFAULT_KEEPALIVE, timeout / 2) if timeout > 0 else DEFAULT_KEEPALIVE


_IDLE_TIMEOUT = "idle timeout: nothing received for"
"""How the connection's goodbye for its idle timeout begins (rstreams.net._keepalive, PROTOCOL.md
§14.2): the error has no type of its own, and the timeout is ``rstreams subscribe --timeout``."""


class _ElementError(ReactiveStreamsError):
    """An element that ``--codec`` cannot show."""


def _subscribe(args: argparse.Namespace) -> int:
    from rstreams._cli_observe import (
        CLOSE_TIMEOUT,
        access_hint,
        client_tls,
        connection_ended,
        run_command,
        wss_instead,
    )
    from rstreams.errors import (
        ConnectionBrokenError,
        HandshakeTimeoutError,
        ReactiveStreamsError,
        ResourceClosedError,
    )
    from rstreams.net import RemoteStreamError, connect

    if args.demand < 1:
        return fail("subscribe", f"--demand needs an integer >= 1, got {args.demand}")
    if args.count < 0:
        return fail("subscribe", f"--count needs an integer >= 0 (0: no limit), got {args.count}")
    if not args.timeout >= 0:
        return fail("subscribe", f"--timeout needs a number of seconds >= 0 (0: never), got {args.timeout}")
    try:
        context = client_tls(args)
    except ValueError as bad:
        return fail("subscribe", str(bad))

    async def run() -> int:
        try:
            conn = await connect(
                args.url,
                ssl=context,
                auth=args.token,
                idle_timeout=args.timeout or None,
                keepalive=_keepalive(args.timeout),
            )
        except HandshakeTimeoutError as silent:  # a tls://, ws:// or wss:// opening that took that long
            return fail(
                "subscribe", await wss_instead(args.url, context) or connection_ended(args.url, silent)
            )
        except ConnectionBrokenError as broken:  # its cause alone, unless it says more than that
            instead = await wss_instead(args.url, context)  # a wss:// server, which closed before its hello
            if instead:
                return fail("subscribe", instead)
            cause = broken.__cause__
            why = cause if cause is not None and str(broken).endswith(f": {cause}") else broken
            return fail("subscribe", f"cannot connect to {args.url}: {why}{access_hint(why, args.certfile)}")
        except (OSError, ssl.SSLError, ValueError, TypeError, ImportError) as bad:
            return fail("subscribe", f"cannot connect to {args.url}: {bad}{access_hint(bad, args.certfile)}")
        try:
            await _print_elements(conn, args)
        except RemoteStreamError as failed:
            hint = _channel_hint(failed.message, args.name, args.url)
            said = f"{shown_names(failed.message, args.name)}{hint}"
            return fail("subscribe", f"publisher {shown_name(args.name)} on {args.url} failed: {said}", 1)
        except (ConnectionBrokenError, ResourceClosedError) as broken:
            # a refused token or TLS client certificate; our token towards a server without auth;
            # a protocol violation; a silent server (said as every command says them)
            instead = await wss_instead(args.url, context, conn)  # a wss:// server
            if instead:
                return fail("subscribe", instead)
            if _IDLE_TIMEOUT in str(broken):  # our own --timeout: the server sent nothing
                return fail(
                    "subscribe",
                    f"{args.url} sent nothing for {args.timeout:g} s (--timeout S; 0: wait for ever)"
                    f"{no_hello_hint(conn)}",
                )
            return fail("subscribe", connection_ended(args.url, broken, args.certfile))
        except _ElementError as bad:
            return fail("subscribe", str(bad), 1)
        except ReactiveStreamsError as failed:  # e.g. the server broke the protocol
            said = f"{type(failed).__name__}: {failed}"
            return fail("subscribe", f"{shown_name(args.name)} on {args.url} failed: {said}", 1)
        finally:
            await conn.aclose(timeout=CLOSE_TIMEOUT)
        return 0

    return run_command(run())  # `rstreams subscribe ... | head`: a closed pipe exits 0


_PUBLISHER_OPTIONS = ("publishers", "codec", "resume")
"""The options only ``serve URL`` takes (``serve URL NAME``'s: :data:`rstreams._cli_logs.LOG_OPTIONS`)."""


def _serve(args: argparse.Namespace) -> int:
    """``serve URL NAME``: the replay log of standard input; ``serve URL``: publishers."""
    from rstreams._cli_logs import LOG_OPTIONS, serve_log

    log = args.name is not None  # an empty NAME (`serve URL "$LOG"`, LOG unset) is a log's name, refused
    other = _PUBLISHER_OPTIONS if log else LOG_OPTIONS
    stray = [name for name in other if getattr(args, name) not in (None, False, [])]
    if stray and stray[0] == "web" and ":" not in args.web:  # `serve URL --web NAME`: NAME went to --web
        return fail(
            "serve",
            f"--web takes HOST:PORT, got {args.web!r}; for the live page of the log {args.web!r}: "
            f"rstreams serve URL {args.web} --web",
        )
    if stray:
        option = "--" + stray[0].replace("_", "-")
        if log:
            said = (
                f"{option} does not apply when serving a replay log (rstreams serve URL NAME); "
                f"it is for serving publishers: rstreams serve URL {option} ..."
            )
        else:
            said = (
                f"{option} does not apply when serving publishers (rstreams serve URL); "
                f"it is for a replay log: rstreams serve URL NAME {option} ..."
            )
        return fail("serve", said)
    if args.token == "" or (args.token is None and os.environ.get("RSTREAMS_TOKEN") == ""):
        given, unset = (
            ("--token ''", "leave out --token")
            if args.token == ""
            else ("$RSTREAMS_TOKEN is empty", "unset RSTREAMS_TOKEN")
        )
        return fail(  # `--token "$TOKEN"` with TOKEN unset, say: any client could present an empty one
            "serve",
            f"{given}: an empty token guards nothing (an unset shell variable?); give a token, or "
            f"{unset} for a server that asks for none",
        )
    if args.metrics not in (None, "on"):
        from rstreams.observe._prometheus import parse_address

        try:
            parse_address(args.metrics)
        except ValueError:
            return fail(
                "serve",
                f"--metrics needs HOST:PORT (e.g. 127.0.0.1:9464; a port from 0 to 65535, 0: any) or on, "
                f"got {args.metrics!r}",
            )
        if not _importable("prometheus_client"):
            return fail(
                "serve",
                "--metrics HOST:PORT serves /metrics with prometheus_client: pip install "
                "'rstreams[metrics]' (or --metrics on: counts for rstreams top, serves no /metrics)",
            )
    if args.origin:
        from rstreams.net._origins import check_origins

        try:
            check_origins(args.origin)
        except ValueError as bad:
            return fail("serve", f"--origin: {bad}")
        if not browser_facing(args.url) and args.web is None:
            return fail(
                "serve",
                f"--origin applies to ws:// and wss:// servers and the live page (--web), not to {args.url}",
            )
    return serve_log(args) if log else _serve_publishers(args)


def _serve_publishers(args: argparse.Namespace) -> int:
    from rstreams._cli_publishers import (
        CODECS,
        PublishersSpecError,
        builtin_channels,
        builtin_publishers,
        load_publishers,
    )
    from rstreams.net import parse_url, serve

    offer: Any
    channels: dict[str, Any] | None = None
    on_connection = None  # an offer's own, when it has one (the conformance publishers' echo)
    try:
        parse_url(args.url)  # so that serve()'s ValueError or TypeError can only be the offer's
    except ValueError as bad:
        return fail("serve", cannot_serve(args.url, bad))
    try:
        if args.publishers is not None:
            offer = load_publishers(args.publishers)
            names = list(offer) if isinstance(offer, Mapping) else [f"what {args.publishers} finds"]
            replaced = [name for name in server_names() if name in names]
            if replaced:  # the user's names win (rstreams.serve): said, not refused
                print(
                    f"rstreams serve: warning: --publishers {args.publishers} replaces the server's own "
                    f"{', '.join(replaced)} (rstreams ping and top read them)",
                    file=sys.stderr,
                )
            if callable(getattr(offer, "on_connection", None)):
                on_connection = offer.on_connection
            codec = CODECS[args.codec or "raw"]
        else:
            offer, channels = builtin_publishers(args.codec or "utf8"), builtin_channels()
            names, codec = [*offer, *(f"channel {name}" for name in channels)], None
        context = server_tls(args)
    except PublishersSpecError as bad:
        return fail("serve", f"--publishers {bad}")
    except ValueError as bad:  # the TLS options
        return fail("serve", str(bad))

    token = args.token if args.token is not None else os.environ.get("RSTREAMS_TOKEN")

    async def run() -> int:
        try:
            server = await serve(
                args.url,
                offer,
                codec=codec,
                ssl=context,
                authenticate=None if token is None else token_check(token),
                resume=True if args.resume else None,
                metrics=True if args.metrics == "on" else args.metrics,
                channels=channels,
                origins=args.origin or None,
                on_connection=on_connection,
            )
        except (ValueError, TypeError) as bad:
            if args.publishers is not None:  # a name or a target serve() refuses
                return fail("serve", f"--publishers {args.publishers!r}: {bad}")
            return fail("serve", cannot_serve(args.url, bad))
        except (OSError, ImportError) as bad:
            return fail("serve", cannot_serve(args.url, bad))
        stop = asyncio.Event()
        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows' loops
            # before the announcement: whoever reads it may stop the server at once
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        offered = ", ".join(names) or f"no publishers ({args.publishers} is an empty mapping)"
        print(f"serving {offered} on {server.url}", flush=True)
        if server.metrics_url is not None:
            print(f"metrics at {server.metrics_url}", flush=True)
        try:
            await stop.wait()
        finally:
            await server.aclose()
        return 0

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        return 0


def _conformance(args: argparse.Namespace) -> int:
    from rstreams.conformance import main as conformance_main

    return conformance_main(args.rest, prog="rstreams conformance")


def _bench(args: argparse.Namespace) -> int:
    import subprocess
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "run.py"
    if not script.exists():
        print(
            "rstreams bench runs the scripts in benchmarks/ of a source checkout "
            f"(looked for {script}); clone the repository and run it there",
            file=sys.stderr,
        )
        return 2
    return subprocess.call([sys.executable, str(script), *args.rest])


_SERVE_DESCRIPTION = """\
rstreams serve URL                  the built-in demo publishers:
    counter?from=0&to=10&rate=5     integers from..to-1 (from: 0, to: none = endless),
                                    rate/s (none or 0: as fast as asked)
    sensors/{id}?rate=10&count=100  JSON readings {"sensor","seq","ts","value"}, value a random
                                    walk (rate/s: 10, 0 = as fast as asked; count: none = endless)
    and the channel upper           each input element upper-cased (PROTOCOL.md §21)
rstreams serve URL --publishers my_module:PUBLISHERS   (or path/to/file.py:PUBLISHERS)
    the mapping of names or {field} patterns to Publishers or factories that
    rstreams.serve(url, publishers) takes
rstreams serve URL NAME             standard input's lines as the replay log NAME
    (NAME?from=A&to=B, NAME?latest, NAME?commit=N: what the Spark source reads)

Then: rstreams subscribe URL 'counter?to=5'   (Ctrl-C or SIGTERM stops the server)
"""


class _Parser(argparse.ArgumentParser):
    """argparse's parser (its subcommands' too), with a usage error in one line, exit 2, like the
    commands' own checks: ``rstreams subscribe: argument --demand: invalid int value: 'x' (...)``.

    A missing argument beside an option it does not know is told as that option, with the
    nearest it has (``rstreams --verison``: ``unrecognized arguments: --verison; did you mean
    --version?``), where argparse would say only that the argument is required."""

    _given: tuple[str, ...] = ()  # the arguments of the parse under way, for error()
    _parsing = False  # inside parse_known_intermixed_args, which calls parse_known_args twice

    def parse_known_args(  # type: ignore[override]  # argparse's stub spells two overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if not self._parsing:
            self._given = tuple(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        unknown = [
            given.partition("=")[0]
            for given in self._given
            if re.match(r"--?[A-Za-z]", given) and not self._knows(given.partition("=")[0])
        ]
        if unknown and message.startswith("the following arguments are required"):
            message = f"unrecognized arguments: {' '.join(unknown)}{self._nearest(unknown)}"
        elif message.startswith("argument command: invalid choice: "):
            message += self._command_hint()
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")

    def _command_hint(self) -> str:
        """For a first argument that is no command: the command it may be (``rstreams serv``,
        ``rstreams Subscribe``), or, for a URL, that the command comes first."""
        import difflib

        given = next((word for word in self._given if not word.startswith("-")), "")
        if "://" in given:
            return f"; the command comes first: rstreams subscribe {given} NAME (or serve, ping, top)"
        if given.lower() == "help":
            return "; a command's options: rstreams COMMAND --help"
        if given.lower() == "version":
            return "; did you mean --version?"
        commands = [
            name for action in self._actions for name in (action.choices or ()) if action.dest == "command"
        ]
        starting = [name for name in commands if name.startswith(given.lower())]  # sub, pub, ser
        near = starting if len(starting) == 1 else difflib.get_close_matches(given.lower(), commands, n=1)
        return f"; did you mean {near[0]}?" if near and given else ""

    def _knows(self, option: str) -> bool:
        """Whether ``option`` is one of this parser's, or a prefix argparse takes for one."""
        return any(flag.startswith(option) for flag in self._option_string_actions)

    def _nearest(self, extras: Sequence[str]) -> str:
        import difflib

        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        for extra in extras:
            option = extra.partition("=")[0]
            if option.startswith("--"):
                near = difflib.get_close_matches(option, known, n=1)
            elif len(option) == 2 and option[1].isalpha():  # -v: the one long option that starts so
                near = [flag for flag in known if flag[2:3] == option[1].lower()]
            else:
                near = []
            if len(near) == 1:
                return f"; did you mean {near[0]}?"
        return ""


class _CommandParser(_Parser):
    """A subcommand's parser: it refuses the arguments it does not know itself, naming the option
    it has that is nearest a mistyped one (``rstreams subscribe: unrecognized arguments: --demnd 2;
    did you mean --demand?``), where argparse would leave them to ``rstreams``' own parser.

    Its positional arguments may come after options (``rstreams serve URL --capacity 10 NAME``):
    argparse alone gives an optional positional its value at the first positional it sees, so
    NAME there would be an unrecognized argument. The passed-through commands (conformance,
    bench) take the rest as it is."""

    def parse_known_args(  # type: ignore[override]  # argparse's stub spells two overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        if self._parsing or any(a.nargs == argparse.REMAINDER for a in self._actions):
            return super().parse_known_args(args, namespace)
        self._given = tuple(args or ())
        self._parsing = True
        try:
            parsed, extras = self.parse_known_intermixed_args(args, namespace)
        finally:
            self._parsing = False
        if extras:
            self.error(f"unrecognized arguments: {' '.join(extras)}{self._nearest(extras)}")
        return parsed, extras


def _parser() -> argparse.ArgumentParser:
    from rstreams._cli_logs import add_log_options, add_publish
    from rstreams._cli_observe import add_commands, add_tls_options
    from rstreams.observe._builtin import version

    parser = _Parser(
        prog="rstreams",
        description="Reactive Streams for Python",
        epilog="Each command's options: rstreams COMMAND --help. A first try, in two terminals: "
        "rstreams serve tcp://127.0.0.1:9000, then rstreams subscribe tcp://127.0.0.1:9000 'counter?to=5'.",
    )
    parser.add_argument("--version", action="version", version=f"rstreams {version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    demo = commands.add_parser(
        "demo",
        help="sensors -> RS.io -> Spark -> RS.io, with a live view (the spark extra, Java 17+)",
        description="Simulated sensors served over RS.io, read by a Spark pipeline (local[2], or "
        "--master) that publishes per-sensor window averages back over RS.io, shown live in the "
        "terminal and, without --no-web, on a page. Exit status: 0 when it has run its --seconds "
        "(the results saved to Parquet in --out), 1 when Spark failed, 2 for a bad option or when "
        "an extra it needs (spark; websockets for the page) or Java 17+ is missing, 128 + the "
        "signal's number when SIGTERM or Ctrl-C stopped it (a second signal ends it at once).",
    )
    demo.add_argument("--seconds", type=float, default=30.0, help="how long to run once started (30)")
    demo.add_argument("--sensors", type=int, default=8, help="simulated sensors (8)")
    demo.add_argument("--rate", type=float, default=0.0, help="readings/s; 0 = as fast as Spark takes (0)")
    demo.add_argument("--batch", type=int, default=200_000, help="maxRecordsPerBatch (200000)")
    demo.add_argument("--window", type=int, default=2, help="window length in seconds (2)")
    demo.add_argument("--master", default="local[2]", help="Spark master (local[2]; or spark://host:7077)")
    demo.add_argument("--out", default=None, help="for the checkpoint, Parquet and spark.log (a temp dir)")
    demo.add_argument(
        "--web",
        default="127.0.0.1:8000",
        metavar="HOST:PORT",
        help="the live page's address (127.0.0.1:8000)",
    )
    demo.add_argument("--no-web", action="store_true", help="no live page, only the terminal view")
    demo.set_defaults(run=_demo)
    serve = commands.add_parser(
        "serve",
        help="serve the built-in demo publishers, a module's publishers, or standard input as a log",
        description=_SERVE_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    serve.add_argument(
        "url", help="where to listen: tcp://127.0.0.1:9000 (port 0: any), tls://, unix://, ws://, wss://"
    )
    serve.add_argument("name", nargs="?", help="serve standard input's lines as the replay log NAME")
    serve.add_argument("--tls-cert", metavar="PEM", help="certificate chain for tls:// and wss://")
    serve.add_argument("--tls-key", metavar="PEM", help="its private key (if not in --tls-cert)")
    serve.add_argument(
        "--tls-client-ca",
        metavar="PEM",
        help="mutual TLS: clients must present a certificate signed by this CA (or one of these CAs)",
    )
    serve.add_argument(
        "--token",
        help="accept only clients presenting this token (default: $RSTREAMS_TOKEN; none: no auth)",
    )
    serve.add_argument(
        "--metrics",
        metavar="HOST:PORT|on",
        help="count what streams do (rstreams top, rstreams/stats); HOST:PORT also serves /metrics",
    )
    serve.add_argument(
        "--origin",
        action="append",
        default=[],
        metavar="URL",
        help="ws://, wss:// (and --web): also accept browser pages from this origin, e.g. "
        "https://app.example:8443 (repeatable; '*': every page); by default only the server's own",
    )
    served = serve.add_argument_group("publishers (rstreams serve URL)")
    served.add_argument(
        "--publishers",
        metavar="MODULE:NAME",
        help="serve the mapping NAME of a module or of path/to/file.py (NAME defaults to PUBLISHERS; "
        "its on_connection, if it has one, gets each connection)",
    )
    served.add_argument(
        "--codec",
        choices=("utf8", "json", "int64", "float64", "raw"),
        help="how counter's numbers are encoded (utf8); with --publishers, the elements' codec (raw bytes)",
    )
    served.add_argument("--resume", action="store_true", help="keep sessions of clients whose link breaks")
    add_log_options(serve)
    serve.set_defaults(run=_serve)
    subscribe = commands.add_parser(
        "subscribe",
        help="print a remote publisher's elements as they arrive",
        description="Print the elements of publisher NAME at URL, one line each, as they arrive. "
        "Exit status: 0 when the stream completes or --count is reached, 1 when the publisher "
        "fails (its onError is printed, e.g. an unknown name), 2 when the server cannot be "
        "reached, ends the connection (refused token, TLS failure) or sends nothing for --timeout, "
        "130 when Ctrl-C stops it, 143 when SIGTERM does.",
    )
    subscribe.add_argument("url", help="tcp://host:port, tls://, unix://, ws:// or wss://")
    subscribe.add_argument(
        "name", help="publisher name with parameters, e.g. counter?to=10 or sensors/7?rate=2"
    )
    subscribe.add_argument(
        "--demand", type=int, default=64, metavar="N", help="at most N elements outstanding (64)"
    )
    subscribe.add_argument(
        "--count",
        "--limit",
        type=int,
        default=0,
        metavar="N",
        help="stop (cancel) after N elements (default 0: when the stream ends)",
    )
    subscribe.add_argument(
        "--codec",
        choices=("utf8", "json", "int64", "float64", "raw"),
        default=None,
        help="how to show each element: utf8 text, json, int64/float64 numbers, raw as hex "
        "(default: by the content type the publisher announces, else utf8)",
    )
    subscribe.add_argument(
        "--token",
        default=os.environ.get("RSTREAMS_TOKEN"),
        help="present this token (default: $RSTREAMS_TOKEN); only to servers that ask for one",
    )
    subscribe.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="give up after S seconds without hearing from the server (30; 0: never); "
        "after S/2 s of silence the command pings it, so a slow stream of a live server goes on",
    )
    add_tls_options(subscribe)
    subscribe.set_defaults(run=_subscribe)
    add_publish(commands)
    conformance = commands.add_parser(
        "conformance",
        help="run the RS.io conformance suite against an endpoint (docs/conformance.md)",
        add_help=False,
    )
    conformance.add_argument(
        "rest", nargs=argparse.REMAINDER, help="URL and options, as for -m rstreams.conformance"
    )
    conformance.set_defaults(run=_conformance)
    bench = commands.add_parser(
        "bench", help="run benchmarks/ side by side with the peers (source checkout)", add_help=False
    )
    bench.add_argument(
        "rest", nargs=argparse.REMAINDER, help="scenarios and options, as for benchmarks/run.py"
    )
    bench.set_defaults(run=_bench)
    add_commands(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rstreams`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] in _PASS_THROUGH:  # their own parsers take every argument after the name
            return _PASS_THROUGH[argv[0]](argparse.Namespace(rest=argv[1:]))
        parser = _parser()
        if not argv:  # a first try: what there is, rather than a missing argument's name
            parser.print_help(sys.stderr)
            return 2
        args = parser.parse_args(argv)
        refused = _url_with_a_user(args)
        if refused is not None:
            return fail(args.command, refused)
        status: int = args.run(args)
    except KeyboardInterrupt:  # Ctrl-C before a command's own handling (while importing, say)
        return 130
    return status


_PASS_THROUGH = {"conformance": _conformance, "bench": _bench}


def _url_with_a_user(args: argparse.Namespace) -> str | None:
    """``parse_url``'s refusal of a URL with a user part (``tcp://me:secret@host:port``), which
    shows that part as ``***``; checked first, because the commands' own messages quote the URL
    as written and the part may hold a password. ``None`` for any other URL."""
    import urllib.parse

    url = getattr(args, "url", None)
    if not isinstance(url, str):
        return None
    try:
        if "@" not in urllib.parse.urlsplit(url).netloc:
            return None
        from rstreams.net import parse_url

        parse_url(url)
    except ValueError as bad:
        return str(bad)
    return None


if __name__ == "__main__":
    sys.exit(main())
