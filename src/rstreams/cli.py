"""The ``rstreams`` command.

* ``rstreams demo``: simulated sensors -> RS.io -> Spark -> RS.io -> live terminal view
  (needs the ``spark`` extra and Java 17+; the only command that imports :mod:`rstreams.spark`).
* ``rstreams serve URL NAME``: serve the lines of standard input as a replay log ``NAME``
  (``NAME?from=A&to=B``, ``NAME?latest``, ``NAME?commit=N``: what the Spark source reads),
  reading a line only when the log has room; ``--sink RESULTS`` adds a log Spark can write to;
  ``--web [HOST:PORT]`` also serves the live page (charts of the log's JSON lines, or of a sink's
  with ``--web-publisher``) and RS.io over WebSocket for it (needs the ``websockets`` extra).
* ``rstreams subscribe URL NAME``: print the elements of a remote publisher.
* ``rstreams publish URL NAME``: publish standard input's lines on a server's sink log
  ``NAME`` (staged, then published as one batch, like the Spark sink does).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
from collections.abc import Sequence

__all__ = ["main"]


def _demo(args: argparse.Namespace) -> int:
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

    figures = run_demo(
        seconds=args.seconds,
        sensors=args.sensors,
        rate=args.rate,
        batch=args.batch,
        window=args.window,
        master=args.master,
        out=args.out,
        web=None if args.no_web else args.web,
    )
    median = figures["median_batch_s"]
    rate = figures["rows_per_s"]
    print(
        f"\n{figures['rows']:,} rows in {figures['batches']} micro-batches: {rate:,.0f} rows/s "
        f"into Spark (steady {figures['steady_rows_per_s']:,.0f} rows/s), median micro-batch "
        f"{(median or 0) * 1000:.0f} ms; sensors waited {figures['waited_s']:.1f} s for demand"
    )
    return 0


def _subscribe(args: argparse.Namespace) -> int:
    from rstreams.net import connect

    async def run() -> None:
        conn = await connect(args.url)
        try:
            count = 0
            async for element in conn.publisher(args.name):
                sys.stdout.write(element.decode(errors="replace") + "\n")
                count += 1
                if args.limit and count >= args.limit:
                    break
        finally:
            await conn.aclose()

    try:
        asyncio.run(run())
    except KeyboardInterrupt:
        return 130
    return 0


def _serve(args: argparse.Namespace) -> int:
    from rstreams.replay import ReplayLog, ReplayServer
    from rstreams.replay._lines import LineSource

    log = ReplayLog(args.name, capacity=args.capacity, path=args.path).feed(LineSource(sys.stdin.buffer))
    sinks = {name: ReplayLog(name, capacity=args.capacity, evict=True) for name in args.sink}
    server = ReplayServer({args.name: log}, sinks=sinks, url=args.url).start()
    print(f"serving {args.name!r} (lines of standard input) on {server.url}", flush=True)
    page = None
    try:
        if args.web is not None:
            from rstreams.web import page_for_logs

            page = page_for_logs(
                args.web, {args.name: log, **sinks}, publisher=args.web_publisher or args.name
            )
            print(f"live page: {page.url} (charts {page.publisher!r}; RS.io on {page.ws_url})", flush=True)
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    except OSError as error:  # the page's address is taken
        print(f"rstreams serve: cannot serve the live page on {args.web}: {error}", file=sys.stderr)
        return 2
    finally:
        if page is not None:
            page.stop()
        server.stop()
        log.close()
    return 0


def _publish(args: argparse.Namespace) -> int:
    import uuid

    from rstreams.replay import request_json, upload

    token = uuid.uuid4().hex
    lines = (line.rstrip(b"\r\n") for line in sys.stdin.buffer)
    count = upload(args.url, args.name, token, lines)
    answer = request_json(args.url, f"{args.name}?publish=0&writer=cli-{token}&tokens={token}")
    print(f"published {answer['count']} of {count} lines on {args.name!r}", file=sys.stderr)
    return 0


def _conformance(args: argparse.Namespace) -> int:
    from rstreams.conformance import main as conformance_main

    return conformance_main(args.rest)


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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="rstreams", description="Reactive Streams for Python")
    commands = parser.add_subparsers(dest="command", required=True)
    demo = commands.add_parser("demo", help="sensors -> RS.io -> Spark -> RS.io, with a live view")
    demo.add_argument("--seconds", type=float, default=30.0, help="how long to run once started (30)")
    demo.add_argument("--sensors", type=int, default=8, help="simulated sensors (8)")
    demo.add_argument("--rate", type=float, default=0.0, help="readings/s; 0 = as fast as Spark takes (0)")
    demo.add_argument("--batch", type=int, default=50_000, help="maxRecordsPerBatch (50000)")
    demo.add_argument("--window", type=int, default=2, help="window length in seconds (2)")
    demo.add_argument("--master", default="local[2]", help="Spark master (local[2]; or spark://host:7077)")
    demo.add_argument("--out", default=None, help="directory for the checkpoint and Parquet (a temp dir)")
    demo.add_argument(
        "--web",
        default="127.0.0.1:8000",
        metavar="HOST:PORT",
        help="the live page's address (127.0.0.1:8000)",
    )
    demo.add_argument("--no-web", action="store_true", help="no live page, only the terminal view")
    demo.set_defaults(run=_demo)
    serve = commands.add_parser("serve", help="serve standard input's lines as a replay log")
    serve.add_argument("url", help="where to listen, e.g. tcp://127.0.0.1:9000 (port 0: any)")
    serve.add_argument("name", help="the log's publisher name")
    serve.add_argument("--capacity", type=int, default=100_000, help="elements held (100000)")
    serve.add_argument("--path", default=None, help="keep the log in this directory (survives restarts)")
    serve.add_argument("--sink", action="append", default=[], help="also offer a sink log with this name")
    serve.add_argument(
        "--web",
        nargs="?",
        const="127.0.0.1:8000",
        default=None,
        metavar="HOST:PORT",
        help="also serve the live page (default address 127.0.0.1:8000; port 0: any)",
    )
    serve.add_argument("--web-publisher", default=None, help="the log the page charts (the served log)")
    serve.set_defaults(run=_serve)
    subscribe = commands.add_parser("subscribe", help="print a remote publisher's elements")
    subscribe.add_argument("url", help="tcp://host:port")
    subscribe.add_argument("name", help="publisher name, e.g. results or sensors?from=0&to=10")
    subscribe.add_argument("--limit", type=int, default=0, help="stop after this many elements")
    subscribe.set_defaults(run=_subscribe)
    publish = commands.add_parser("publish", help="publish standard input's lines on a server's sink log")
    publish.add_argument("url", help="tcp://host:port of a server with sink logs (rstreams serve --sink)")
    publish.add_argument("name", help="the sink log's name")
    publish.set_defaults(run=_publish)
    conformance = commands.add_parser(
        "conformance",
        help="run the RS.io conformance suite against an endpoint (see --help after the URL)",
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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``rstreams`` command; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in _PASS_THROUGH:  # their own parsers take every argument after the name
        return _PASS_THROUGH[argv[0]](argparse.Namespace(rest=argv[1:]))
    args = _parser().parse_args(argv)
    status: int = args.run(args)
    return status


_PASS_THROUGH = {"conformance": _conformance, "bench": _bench}


if __name__ == "__main__":
    sys.exit(main())
