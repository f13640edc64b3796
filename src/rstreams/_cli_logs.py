"""``rstreams serve URL NAME`` and ``rstreams publish URL NAME``: the commands of replay logs.

* ``serve URL NAME`` serves the lines of standard input as the replay log ``NAME``
  (``NAME?from=A&to=B``, ``NAME?latest``, ``NAME?commit=N``: what the Spark source reads),
  reading a line only when the log has room; ``--sink RESULTS`` adds a log Spark can write to;
  ``--path DIR`` keeps the log in ``DIR`` and each sink log in ``DIR/sinks/RESULTS``, so a
  server restarted with the same ``--path`` keeps their contents and epochs;
  ``--web [HOST:PORT]`` also serves the live page (charts of the log's JSON lines, or of a sink's
  with ``--web-publisher``) and RS.io over WebSocket for it (needs the ``websockets`` extra).
* ``publish URL NAME`` publishes standard input's lines on a server's sink log ``NAME``
  (staged, then published as one batch, like the Spark sink does). Its upload names its owner
  (PROTOCOL.md §21.8): ``--writer W`` (default: one of its own, from the host, the process and
  the time), ``--batch B`` (default: a fresh one) and, with ``--writer``, a run of its own, so
  that a run of the same ``--writer`` after one killed before its publish drops what the killed
  one staged. An invocation whose upload another one's run dropped (two at once with one
  ``--writer``) uploads its lines again, naming no run, and says so.

:mod:`rstreams.cli` adds the log's options to ``serve`` (:func:`add_log_options`) and the
``publish`` command (:func:`add_publish`), and hands ``serve URL NAME`` to :func:`serve_log`.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import ipaddress
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterable, Iterator
from typing import Any, BinaryIO

from rstreams._cli_common import (
    browser_facing,
    cannot_serve,
    fail,
    missing_extra,
    server_names,
    server_tls,
    shown_name,
    shown_names,
    token_check,
)
from rstreams.errors import ReactiveStreamsError

__all__ = ["LOG_OPTIONS", "add_log_options", "add_publish", "publish", "serve_log"]

LOG_OPTIONS = (
    "capacity",
    "path",
    "sink",
    "web",
    "web_publisher",
    "input_from",
    "reader_timeout",
    "staging_ttl",
)
"""The options only ``serve URL NAME`` takes (that have no default to tell their use apart)."""


@contextlib.contextmanager
def _stopped_by_sigterm() -> Iterator[threading.Event]:
    """An event that SIGTERM sets while inside; wait on it until Ctrl-C (KeyboardInterrupt) or
    SIGTERM, after which the caller closes the server and the log as for Ctrl-C."""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():  # signals reach the main one
        yield stop
        return
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
    try:
        yield stop
    finally:
        signal.signal(signal.SIGTERM, previous)


def _own_stdin() -> BinaryIO:
    """Standard input as a reader of its own (a duplicate of the descriptor, buffered apart).

    The log's thread blocks in it, holding its buffer's lock, until a line comes; if that were
    ``sys.stdin.buffer``, the interpreter's exit (Ctrl-C, SIGTERM) would find the lock taken
    while it flushes the standard streams, and abort ("Fatal Python error: _enter_buffered_busy").
    """
    try:
        descriptor = sys.stdin.fileno()
    except (AttributeError, OSError, ValueError):  # replaced by an object without one (tests)
        return sys.stdin.buffer
    return open(os.dup(descriptor), "rb", closefd=True)


def serve_log(args: argparse.Namespace) -> int:
    """``rstreams serve URL NAME`` (the command has refused ``serve URL``'s options before)."""
    _, colon, port = (args.web or "").rpartition(":")
    if args.web is not None and (not colon or not port.isdigit() or int(port) > 65535):
        return fail(  # before anything listens (the page starts after the server)
            "serve",
            f"--web: the page's address is HOST:PORT (e.g. 127.0.0.1:8000; a port from 0 to 65535, "
            f"0: any), got {args.web!r}",
        )
    from rstreams.replay import LogDirectoryError, ReplayLog, ReplayServer
    from rstreams.replay._lines import LineSource
    from rstreams.replay._staging import check_ttl

    capacity = 100_000 if args.capacity is None else args.capacity
    timeouts = {"pending_timeout": args.pending_timeout, "reader_timeout": args.reader_timeout}
    problem = _log_names_problem(args)
    if problem is None and capacity < 1:
        problem = f"--capacity needs an integer >= 1, got {capacity}"
    for option, seconds in (
        ("--pending-timeout", args.pending_timeout),
        ("--reader-timeout", args.reader_timeout),
    ):
        if problem is None and seconds is not None and not 0 < seconds < float("inf"):
            problem = f"{option} needs a number of seconds > 0, got {seconds:g}"
            if seconds == float("inf"):  # (the log's own check would name its parameter)
                problem = f"{option} needs a finite number of seconds > 0, got inf" + (
                    " (without --reader-timeout a reader is never dropped)"
                    if option == "--reader-timeout"
                    else ""
                )
    ttl = args.staging_ttl
    if problem is None and ttl is not None:
        try:
            check_ttl(ttl)  # the server's own check (staging_ttl=), in the command's words
        except ValueError:
            problem = f"--staging-ttl needs a number of seconds >= 0 (0: never), got {ttl:g}"
    if problem is None and args.input_from is not None and args.input_from < 0:
        problem = f"--input-from needs a position >= 0 (0: the log's first element), got {args.input_from}"
    if problem is None and args.web_publisher is not None:
        if args.web is None:
            problem = "--web-publisher needs --web (it names the log the live page charts)"
        elif args.web_publisher not in (args.name, *args.sink):
            problem = f"--web-publisher names a log served (NAME or a --sink), not {args.web_publisher!r}"
    token = args.token if args.token is not None else os.environ.get("RSTREAMS_TOKEN")
    if problem is None and args.web is not None and (token is not None or args.tls_client_ca is not None):
        problem = _open_page_problem(args.web)
    if problem is not None:
        return fail("serve", problem)
    try:
        context = server_tls(args)
    except ValueError as bad:  # the TLS options
        return fail("serve", str(bad))
    try:
        log = ReplayLog(args.name, capacity=capacity, path=args.path, **timeouts)
    except LogDirectoryError as bad:  # --path holds another log
        return fail("serve", f"{bad} (--path)")
    except ValueError as bad:
        return fail("serve", f"{bad} (--pending-timeout, --reader-timeout)")
    except OSError as bad:  # --path is a file, or a directory that cannot be made
        return fail("serve", f"cannot keep the log in --path {args.path}: {bad}{_PATH_HINT}")
    sinks: dict[str, ReplayLog] = {}
    for name in args.sink:
        try:
            sinks[name] = ReplayLog(name, capacity=capacity, evict=True, path=_sink_path(args.path, name))
        except (OSError, LogDirectoryError) as bad:  # DIR/sinks/NAME: a file, not made, another log
            hint = _PATH_HINT if isinstance(bad, OSError) else ""
            for opened in (log, *sinks.values()):
                opened.close()
            return fail("serve", f"cannot keep sink log {name!r} in --path {args.path}: {bad}{hint}")
    try:
        log.feed(LineSource(_own_stdin()), position=args.input_from)
    except ValueError as bad:
        for opened in (log, *sinks.values()):
            opened.close()
        return fail("serve", f"{bad} (--input-from)")
    server = ReplayServer(
        {args.name: log},
        sinks=sinks,
        url=args.url,
        **({} if ttl is None else {"staging_ttl": ttl}),
        ssl=context,
        authenticate=None if token is None else token_check(token),
        metrics=True if args.metrics == "on" else (args.metrics or False),
        origins=args.origin if args.origin and browser_facing(args.url) else None,
    )
    with _stopped_by_sigterm() as stop:  # from before the announcement: its reader may stop us
        try:
            server.start()
        except (OSError, ValueError, ImportError) as bad:
            for opened in (log, *sinks.values()):
                opened.close()
            return fail("serve", cannot_serve(args.url, bad))
        page = None
        try:  # from the announcement on: a Ctrl-C that its reader sends at once stops cleanly
            if args.web is not None:  # before the announcement: nothing is announced that then fails
                from rstreams.web import page_for_logs

                page = page_for_logs(
                    args.web,
                    {args.name: log, **sinks},
                    publisher=args.web_publisher or args.name,
                    origins=args.origin or None,
                )
            sinks_said = "".join(f", sink log {name!r}" for name in args.sink)
            print(f"serving {args.name!r} (lines of standard input){sinks_said} on {server.url}", flush=True)
            if sys.stdin.isatty():  # not a pipe or a file: say what the silence waits for
                print(
                    f"rstreams serve: each line typed here is an element of {args.name!r}; Ctrl-D "
                    "ends the log (the server goes on), Ctrl-C stops the server",
                    file=sys.stderr,
                )
            if server.metrics_url is not None:
                print(f"metrics at {server.metrics_url}", flush=True)
            if page is not None:
                print(
                    f"live page: {page.url} (charts {page.publisher!r}; RS.io on {page.ws_url})", flush=True
                )
            stop.wait()
        except KeyboardInterrupt:
            pass
        except (OSError, ImportError) as error:  # the page's address is taken, or no websockets
            said = missing_extra(error)
            if isinstance(error, OSError) and error.errno == errno.EADDRINUSE:
                said = " (another server listens there: --web HOST:PORT, port 0: any free one)"
            return fail("serve", f"cannot serve the live page on {args.web}: {error}{said}")
        except ValueError as bad:  # not HOST:PORT, or --web-publisher names no log served
            return fail("serve", f"{bad} (--web, --web-publisher)")
        finally:
            if page is not None:
                page.stop()
            server.stop()
            for opened in (log, *sinks.values()):
                opened.close()
    return 0


_PATH_HINT = " (--path DIR: a directory this process can make, or one it can write in)"
"""What to change when ``--path`` cannot be made or opened (a file, a parent that cannot be made,
no permission)."""

_SINKS_DIRECTORY = "sinks"
"""With ``--path DIR``, each ``--sink NAME`` is kept in ``DIR/sinks/NAME`` (the log of standard
input is ``DIR`` itself: its files are ``state.json``, ``elements-P`` and ``batches.jsonl``)."""


def _sink_path(path: str | None, name: str) -> str | None:
    """Where ``--sink name`` is kept: ``DIR/sinks/name`` with ``--path DIR``, else memory (None)."""
    return None if path is None else os.path.join(path, _SINKS_DIRECTORY, name)


def _one_directory_name(name: str) -> bool:
    """Whether ``name`` names one entry of a directory (no separator or NUL, not ``.`` or ``..``)."""
    return name not in (".", "..") and not any(sign in name for sign in ("/", "\\", "\0"))


def _open_page_problem(web: str) -> str | None:
    """Why ``--web`` may not listen beyond this machine next to ``--token`` or ``--tls-client-ca``:
    the live page's server asks for neither, so it would serve the logs to whoever reaches it."""
    host = web.rpartition(":")[0].removeprefix("[").removesuffix("]") or "127.0.0.1"
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:  # a host name
        loopback = False
    if loopback:
        return None
    return (
        f"--web {web}: the live page's server asks for no token and no client certificate, so it "
        "would serve the logs that --token or --tls-client-ca guard to anyone who reaches it; "
        "give --web a loopback address (127.0.0.1:PORT)"
    )


def _log_names_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``serve URL NAME --sink S ...``'s log names, if anything: a name is read
    back as ``NAME?from=A&to=B``, so it cannot hold a ``?``, is none of the server's own
    (``rstreams/health``...: the server answers those before its logs), and each must be
    another log. With
    ``--path DIR`` each sink name is a directory of ``DIR/sinks``, and ``NAME`` may not be that of
    a sink log kept there (a restart that swapped the roles would serve one log as the other)."""
    from rstreams.replay._server import LOGS_NAME

    names = [args.name, *args.sink]
    own = sorted((*server_names(), LOGS_NAME))
    for option, name in [("NAME", args.name), *(("--sink", sink) for sink in args.sink)]:
        if not name or "?" in name:
            return (
                f"{option} {name!r}: a log's name is not empty and has no '?' "
                "(readers add ?from=A&to=B to it)"
            )
        if name in own:
            return (
                f"{option} {name!r} is a name the server answers itself ({', '.join(own)}): a client "
                "asking for it would get the server's answer, never the log's; give the log another name"
            )
    twice = next((name for name in names if names.count(name) > 1), None)
    if twice is not None:
        return f"log {twice!r} is named twice (NAME and each --sink name a different log)"
    if args.path is None:
        return None
    for sink in args.sink:  # each is a directory of its own: DIR/sinks/NAME
        if not _one_directory_name(sink):
            return (
                f"--sink {sink!r} with --path: a sink log is kept in DIR/{_SINKS_DIRECTORY}/NAME, so its "
                "name is one directory name (no '/', '\\' or NUL, not '.' or '..')"
            )
    folded = [sink.casefold() for sink in args.sink]
    clash = next((sink for sink, fold in zip(args.sink, folded, strict=True) if folded.count(fold) > 1), None)
    if clash is not None:
        return (
            f"--sink {clash!r} with --path: another --sink differs from it only in case, and both would "
            f"be kept in one directory DIR/{_SINKS_DIRECTORY}/NAME on a file system that ignores case"
        )
    kept = _sink_path(args.path, args.name)
    if _one_directory_name(args.name) and kept is not None and os.path.isdir(kept):
        return (
            f"NAME {args.name!r}: --path {args.path} keeps a sink log of that name ({kept}); NAME is "
            "the log of standard input, kept in DIR itself: serve that sink log with --sink, or give "
            "NAME another name"
        )
    return None


def publish(args: argparse.Namespace) -> int:
    """``rstreams publish URL NAME``: stage standard input's lines on the sink log, then publish them."""
    import uuid
    from urllib.parse import quote

    from rstreams._cli_observe import TLS_OPTIONS, access_hint, connection_ended
    from rstreams.net import parse_url
    from rstreams.replay import (
        Access,
        AccessDeniedError,
        RemoteLogError,
        ServerUnavailableError,
        request_json,
        upload,
    )

    if not args.timeout > 0:
        return fail("publish", f"--timeout needs a number of seconds > 0, got {args.timeout}")
    shown = shown_name(args.name)  # a name of thousands of characters is cut in what is said
    if not args.name or "?" in args.name:
        return fail(
            "publish",
            f"NAME {shown}: a sink log's name is not empty and has no '?' (publish adds its own query)",
        )
    access = Access(
        auth=args.token,
        cafile=args.cafile,
        server_name=args.server_name,
        certfile=args.certfile,
        keyfile=args.keyfile,
    )
    try:
        parse_url(args.url)
        access.ssl_context(args.url, names={**TLS_OPTIONS, "server_name": "--server-name"})
    except ValueError as bad:  # AccessError too
        return fail("publish", str(bad))
    problem = _owner_problem(args.writer, args.batch)
    if problem is not None:
        return fail("publish", problem)
    writer = args.writer if args.writer is not None else _own_writer()
    batch = args.batch if args.batch is not None else uuid.uuid4().int & (2**62 - 1)
    if sys.stdin.isatty():  # not a pipe or a file: say what the silence waits for
        print("rstreams publish: type the lines to publish, then Ctrl-D", file=sys.stderr)
    lines = _Read(sys.stdin.buffer)
    try:
        # A run lets a later invocation of the same --writer drop what this one left staged if it is
        # killed before its publish; a writer of its own is never named again, so it names none.
        run = uuid.uuid4().hex if args.writer is not None else None

        def stage_and_publish(token: str, rows: Iterable[bytes], run: str | None) -> tuple[int, Any]:
            count = upload(
                args.url,
                args.name,
                token,
                rows,
                args.timeout,
                access=access,
                writer=writer,
                batch=batch,
                run=run,
            )
            name = f"{args.name}?publish={batch}&writer={quote(writer, safe='')}&tokens={token}"
            return count, request_json(args.url, name, args.timeout, access=access)

        dropped = None  # why the server no longer had the first upload, when it was made again
        try:
            token = uuid.uuid4().hex
            try:
                count, answer = stage_and_publish(token, lines, run)
            except RemoteLogError as refused:
                dropped = _dropped_why(str(refused), token, args.writer)
                if dropped is None:
                    raise
                # None of the first token's rows can be published now (dropped, or refused as they
                # came): upload them all again, under a new token and naming no run, which the run of
                # another invocation of --writer does not drop.
                token = uuid.uuid4().hex
                try:
                    count, answer = stage_and_publish(token, lines.again(), None)
                except RemoteLogError as again:
                    if _dropped_why(str(again), token, args.writer) is None:
                        raise
                    return fail(
                        "publish",
                        f"{args.url} dropped this invocation's upload twice: {dropped}; then "
                        f"{shown_names(str(again), args.name)}; nothing of its {lines.count} lines was "
                        "published: publish them again"
                        + (" (one invocation per --writer at a time)" if args.writer is not None else ""),
                        1,
                    )
            published, before = answer["count"], answer["published"] is False
        except RemoteLogError as refused:  # not a sink log, no such name, a line too long
            said = f"{shown_names(str(refused), args.name)}{_refusal_hint(str(refused))}"
            return fail("publish", f"{args.url} refused {shown}: {said}", 1)
        except (TypeError, ValueError, KeyError) as odd:  # an answer, but not a sink log's (JSON, a count)
            said = f"{type(odd).__name__}: {odd}"
            return fail(
                "publish", f"{args.url} did not answer {shown} as a sink log does ({said}){_NOT_A_SINK}", 1
            )
        except AccessDeniedError as bad:
            hint = access_hint(bad, args.certfile, server_name=True)
            return fail("publish", f"{bad}{hint or ' (--token, --cafile, --certfile, --server-name)'}")
        except ServerUnavailableError as bad:
            hint = (
                access_hint(bad, args.certfile, server_name=True)
                or " (the URL: is a server listening there? --timeout S: how long to retry)"
            )
            return fail("publish", f"{bad}{hint}")
        except TimeoutError:
            silent = _silent_hint(args.url, access)
            return fail("publish", f"{args.url} did not answer within {args.timeout:g} s (--timeout){silent}")
        except ImportError as missing:  # ws:// or wss:// without the websockets extra
            return fail("publish", f"cannot connect to {args.url}: {missing}{missing_extra(missing)}")
        except (ReactiveStreamsError, OSError) as broken:  # a handshake timeout (not retried), say
            return fail("publish", connection_ended(args.url, broken, args.certfile, server_name=True))
        except KeyboardInterrupt:
            return fail("publish", "interrupted", 130)
        if before:  # --writer and --batch: a re-run of a batch published before
            print(
                f"batch {batch} of writer {shown_name(writer)} was published on {shown} before: nothing "
                f"appended ({count} lines uploaded, dropped)",
                file=sys.stderr,
            )
            return 0
        if dropped is not None:
            print(f"rstreams publish: {dropped}: uploaded its {count} lines again", file=sys.stderr)
        print(f"published {published} of {count} lines on {shown}", file=sys.stderr)
        return 0

    finally:
        lines.close()


class _Read:
    """Standard input's lines (without their line ends) as an iterator, each kept once read, so
    that an upload the server dropped can be made again (:meth:`again`). The lines are kept in a
    spooled temporary file: in memory up to :data:`_KEPT_IN_MEMORY` bytes, on disk past that, so
    that publishing a large input costs no more memory than streaming it did."""

    def __init__(self, source: Iterable[bytes]) -> None:
        self.count = 0
        self._source = iter(source)
        self._kept = tempfile.SpooledTemporaryFile(max_size=_KEPT_IN_MEMORY)  # noqa: SIM115 (close())

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        line = next(self._source).rstrip(b"\r\n")  # split at b"\n": none inside
        self._kept.write(line + b"\n")
        self.count += 1
        return line

    def close(self) -> None:
        self._kept.close()

    def again(self) -> Iterator[bytes]:
        """Every line from the first: those read so far, then the rest as they are read."""
        kept = self._kept
        end = kept.tell()  # every write is at the end
        kept.seek(0)
        while kept.tell() < end:
            yield kept.readline()[:-1]
        kept.seek(end)
        yield from self


_KEPT_IN_MEMORY = 16 * 2**20
"""Bytes of standard input's lines ``rstreams publish`` keeps in memory for an upload made
again; the rest go to a temporary file."""


def _dropped_why(message: str, token: str, writer: str | None) -> str | None:
    """Why the server no longer had ``publish``'s upload under ``token``, when its refusal
    ``message`` says it had dropped it (else ``None``): as its rows arrived, or before its publish.
    ``writer``: the ``--writer`` option, whose other invocations' runs drop it."""
    run = (
        "(each invocation is a new run of its --writer, and a writer's new run drops what its other "
        "runs staged)"
    )
    who = None if writer is None else f"another rstreams publish --writer {shown_name(writer)}"
    if f"upload '{token}' was discarded, published or began again while its rows arrived" in message:
        if who is None:
            return "the server dropped this invocation's upload as its lines arrived"
        return f"{who} started while this one uploaded, and dropped its upload {run}"
    if f"upload '{token}' is not staged here" in message:
        if who is None:
            return (
                "the server no longer held this invocation's upload at its publish (it restarted, or "
                "dropped the upload after its --staging-ttl)"
            )
        return f"{who} started after this one's upload and dropped it {run}, or the server restarted"
    return None


HELLO_PROBE_SECONDS = 1.0
"""How long ``publish`` waits for the hello of a server that did not answer within ``--timeout``
(:func:`_silent_hint`)."""


def _silent_hint(url: str, access: Any) -> str:
    """The hint the other commands give a server silent past their timeout when it has not even
    said hello (:func:`rstreams._cli_common.no_hello_hint`): publish's upload does not say whether
    the hello came, so one more connection asks, for :data:`HELLO_PROBE_SECONDS`; ``""`` when the
    server says hello then, or the probe fails otherwise."""
    import asyncio

    from rstreams.net import connect
    from rstreams.net._closing import SILENT_HINT

    async def hello_came() -> bool:
        conn = await connect(
            url, ssl=access.ssl_context(url), auth=access.auth, handshake_timeout=HELLO_PROBE_SECONDS
        )
        try:
            with contextlib.suppress(ReactiveStreamsError, TimeoutError):  # the hello is what counts
                async with asyncio.timeout(HELLO_PROBE_SECONDS):
                    await conn.request("rstreams/health")
            return conn.hello_received
        finally:
            await conn.aclose(timeout=HELLO_PROBE_SECONDS)

    try:
        came = asyncio.run(hello_came())
    except Exception:  # the probe could not connect: the line says no better then
        return ""
    return "" if came else f", not even its hello; {SILENT_HINT}"


def _owner_problem(writer: str | None, batch: int | None) -> str | None:
    """What is wrong with ``publish``'s ``--writer`` and ``--batch``, if anything."""
    if writer == "":
        return "--writer needs a name that is not empty"
    if batch is not None and not 0 <= batch < 2**63:
        return f"--batch needs an integer from 0 to 2**63 - 1, got {batch}"
    if batch is not None and writer is None:
        return (
            "--batch needs --writer (who publishes the batch: a batch is published once per writer), "
            "e.g. --writer nightly-export --batch 20261130"
        )
    return None


def _own_writer() -> str:
    """The writer of a ``publish`` without ``--writer``: this host, process and time."""
    import socket
    import time

    return f"cli-{socket.gethostname()}-{os.getpid()}-{time.time_ns()}"


_NOT_A_SINK = " (NAME: a sink log of that server, one it serves with --sink NAME)"


def _refusal_hint(message: str) -> str:
    """What to change when the server refused ``rstreams publish``'s upload with ``message``."""
    if "max_element_size" in message:
        return " (each line is one element, at most max_element_size bytes: PROTOCOL.md §11)"
    if "staging area full" in message:
        return " (all of standard input is staged before it is published: publish it in parts)"
    return _NOT_A_SINK


# -- the parser -----------------------------------------------------------------------------------
def add_log_options(serve: argparse.ArgumentParser) -> None:
    """Add the options of ``serve URL NAME`` (:data:`LOG_OPTIONS` and ``--pending-timeout``) to
    ``serve``, as a group of their own."""
    logged = serve.add_argument_group("a replay log of standard input (rstreams serve URL NAME)")
    logged.add_argument("--capacity", type=int, default=None, metavar="N", help="elements held (100000)")
    logged.add_argument(
        "--path",
        default=None,
        metavar="DIR",
        help="keep the log in this directory, and each --sink NAME in DIR/sinks/NAME (they survive "
        "restarts: contents, epoch, published batches)",
    )
    logged.add_argument(
        "--sink",
        action="append",
        default=[],
        metavar="NAME",
        help="also offer a sink log with this name (repeatable; rstreams publish uploads to it; "
        "in memory unless --path)",
    )
    logged.add_argument(
        "--input-from",
        type=int,
        default=None,
        metavar="P",
        help="standard input's first line is position P; lines the log already has are skipped "
        "(restart with --path and the same input: --input-from 0; default: the log's end)",
    )
    logged.add_argument(
        "--pending-timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="forget a pending reader (a Spark query before its first checkpoint) unheard for S s (120)",
    )
    logged.add_argument(
        "--reader-timeout",
        type=float,
        default=None,
        metavar="S",
        help="drop a reader unheard for S s while the log is full (default: never)",
    )
    logged.add_argument(
        "--staging-ttl",
        type=float,
        default=None,
        metavar="S",
        help="drop an upload staged on a --sink log that has had no activity for S s, left by a "
        "writer that never published it (21600, 6 hours; 0: never)",
    )
    logged.add_argument(
        "--web",
        nargs="?",
        const="127.0.0.1:8000",
        default=None,
        metavar="HOST:PORT",
        help="also serve the live page (default address 127.0.0.1:8000; port 0: any; a loopback "
        "address next to --token or --tls-client-ca)",
    )
    logged.add_argument(
        "--web-publisher",
        default=None,
        metavar="LOG",
        help="the log the page charts: NAME (the default) or one of the --sink logs",
    )


def add_publish(commands: Any) -> None:
    """Add ``publish`` to the ``rstreams`` command's subparsers."""
    from rstreams._cli_observe import add_tls_options

    command = commands.add_parser(
        "publish",
        help="publish standard input's lines on a server's sink log",
        description="Publish standard input's lines on the sink log NAME of the server at URL (one "
        "it serves with rstreams serve URL LOG --sink NAME): all of them are staged first, then "
        "published as one batch. The upload names its writer (--writer) and batch (--batch): a run "
        "of the same --writer drops what one killed before its publish left staged on the server (two "
        "at once both publish: the one whose upload the other dropped uploads it again), and with "
        "--batch too a batch is published once (a re-run after a publish appends nothing). "
        "Exit status: 0 when published (or published before), 1 when the server refuses NAME "
        "(not a sink log, a line past max_element_size, its staging area full) or drops the upload "
        "made again, 2 for a bad option "
        "or when the server cannot be reached within --timeout, refuses the token or the TLS handshake.",
    )
    command.add_argument(
        "url",
        help="tcp://host:port (or tls://, unix://, ws://, wss://) of a server with sink logs (serve --sink)",
    )
    command.add_argument("name", help="the sink log's name")
    command.add_argument(
        "--token",
        default=os.environ.get("RSTREAMS_TOKEN"),
        help="present this token (default: $RSTREAMS_TOKEN); only to servers that ask for one",
    )
    add_tls_options(command)
    command.add_argument(
        "--server-name", metavar="NAME", help="the name the server's certificate must carry (the URL's host)"
    )
    command.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="S",
        help="give up after S seconds, retries of a restarting server included (300)",
    )
    command.add_argument(
        "--writer",
        default=None,
        metavar="W",
        help="publish as writer W, the same at each run of one job: a run drops what an earlier run "
        "of W killed before its publish left staged (two runs at once both publish: the one whose "
        "upload the other dropped uploads again; default: a writer of its own, from the host, "
        "process and time)",
    )
    command.add_argument(
        "--batch",
        type=int,
        default=None,
        metavar="B",
        help="publish as batch B of --writer, once: a re-run of a batch published appends nothing "
        "(default: a fresh batch at each run)",
    )
    command.set_defaults(run=publish)
