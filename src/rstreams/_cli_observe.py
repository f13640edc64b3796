"""``rstreams ping URL`` and ``rstreams top URL``: a server's health and its streams, live.

Both read the publishers every server offers about itself (:mod:`rstreams.observe._builtin`)
over RS.io, so they work wherever a client could subscribe (TLS, tokens, WebSocket).

* ``ping`` times ``request("rstreams/health")`` round trips and prints the answer; exit
  status 0 when the server says ok, 1 when it answers otherwise (it refused, said not ok, or
  answered with something else than the health object: :func:`read_health`),
  2 when it cannot be reached in ``--timeout`` seconds.
* ``top`` subscribes to ``rstreams/stats?interval=S`` and redraws a table per snapshot: each
  open stream's publisher, subscriber (``connection/id``), demand outstanding, rate, and the
  share of the last interval it was stalled waiting for demand and waiting for the socket
  (:mod:`rstreams.observe._table`). Streams of the server's own publishers (this stats
  stream among them) are counted, not listed. Under them, when the server counts Spark's
  progress, each Spark query's last micro-batch and lag.
  ``q`` (on a terminal) or Ctrl-C quits, restoring the terminal.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import signal
import socket
import ssl
import sys
import time
import urllib.parse
from collections.abc import Coroutine, Iterator
from typing import Any, TextIO

from rstreams._cli_common import fail, missing_extra, no_hello_hint
from rstreams.errors import (
    AuthenticationError,
    AuthNotOfferedError,
    AuthRefusedError,
    AuthRequiredError,
    ConnectionBrokenError,
    HandshakeTimeoutError,
    ProtocolError,
    ReactiveStreamsError,
    TLSRefusedError,
)
from rstreams.net import JSON, RAW, Connection, RemoteStreamError, connect
from rstreams.net._transport import CERTIFICATE_ALERTS, EndedBeforeHelloError, TLSNoResponseError
from rstreams.observe._builtin import HEALTH, MIN_INTERVAL
from rstreams.observe._table import (
    BUILTIN_PREFIX,
    HEADER,
    SPARK_HEADER,
    Screen,
    own_streams,
    spark_rows,
    stream_rows,
    table,
)

__all__ = [
    "TLS_OPTIONS",
    "access_hint",
    "add_commands",
    "add_tls_options",
    "client_tls",
    "connection_ended",
    "render",
]


CLOSE_TIMEOUT = 1.0
"""Seconds these commands wait for the server's goodbye when they leave (a live server answers at
once; one that said hello and then hung would hold Ctrl-C or a --timeout for the library's 5 s;
one that never said hello is not waited for at all)."""


def access_hint(error: object, certfile: str | None = None, *, server_name: bool = False) -> str:
    """The option to change when the server turned the client away in its handshake, as
    `` (--cafile ...)``; ``""`` for any other failure. ``certfile``: the ``--certfile``
    presented, if any (a server that refuses it does not trust it); ``server_name``: whether the
    command takes ``--server-name``."""
    if missing_extra(error):
        return missing_extra(error)
    tls = _tls_error(error)
    if isinstance(tls, ssl.SSLCertVerificationError) and tls.verify_code in _NAME_MISMATCH:
        other = ", or give it with --server-name NAME" if server_name else ""
        return f" (connect by a host name the server's certificate carries{other})"
    if isinstance(tls, ssl.SSLCertVerificationError):
        return " (--cafile PEM: the CA that signed the server's certificate, when not a system CA)"
    if tls is not None and tls.reason == "WRONG_VERSION_NUMBER":  # TLS towards a server without it
        return " (the URL: the server does not speak TLS there; tcp:// or ws:// for one served without it)"
    if _refuses_certificate(error):
        # a reset inside the handshake is also what a server that speaks no TLS there may do
        plain = _reset_in_handshake(error)
        url = "; or the URL: tcp:// or ws:// for a server that speaks no TLS there" if plain else ""
        if certfile is None:
            return (
                f" (--certfile PEM, --keyfile PEM: a client certificate, when the server requires one{url})"
            )
        return f" (--certfile {certfile}: a client certificate the server trusts, when it requires one{url})"
    auth = next((e for e in _causes(error) if isinstance(e, AuthenticationError)), None)
    if isinstance(auth, AuthNotOfferedError):  # our token, towards a server without auth
        return " (--token: this server takes none; leave it out, and $RSTREAMS_TOKEN unset)"
    if isinstance(auth, AuthRequiredError):
        return " (--token: this server asks for one)"
    if isinstance(auth, AuthRefusedError):
        return " (--token: the server refused this one)"
    handshake = _websocket_handshake(error)
    if handshake is not None:
        return handshake
    while isinstance(error, BaseException):  # the error or its cause: nothing at that port or path
        if isinstance(error, ConnectionRefusedError | FileNotFoundError):
            return " (the URL: is a server listening there?)"
        if isinstance(error, socket.gaierror):
            return " (the URL's host: this machine finds no address for that name)"
        error = error.__cause__
    return ""


def connection_ended(
    url: str, error: BaseException, certfile: str | None = None, *, server_name: bool = False
) -> str:
    """What every command (subscribe, ping, top, publish) says of its connection to ``url`` that
    ended with ``error``, in one wording. A handshake timeout's own message, which names the URL,
    the seconds and what an endpoint silent that long may be
    (:class:`~rstreams.errors.HandshakeTimeoutError`); else ``connection to URL ended: WHY`` and
    the option to change (:func:`access_hint`). WHY is the error's cause, the lower layer's words,
    unless the error says more than its cause: a protocol violation keeps ``the peer broke the
    protocol:`` (its cause is the violation itself), an end before the server's hello its hint."""
    if isinstance(error, HandshakeTimeoutError):
        return str(error)
    cause = error.__cause__
    says_more = isinstance(error, TLSRefusedError | EndedBeforeHelloError) or isinstance(cause, ProtocolError)
    why = error if says_more or cause is None else cause
    return f"connection to {url} ended: {why}{access_hint(error, certfile, server_name=server_name)}"


async def _unreached(args: argparse.Namespace, context: ssl.SSLContext | None, error: BaseException) -> str:
    """What ping and top say when connecting to ``args.url`` failed with ``error``: ``cannot reach
    URL: WHY`` and the option to change, or, for a connection that ended or timed out before the
    server's hello, :func:`wss_instead`'s line when it applies."""
    if isinstance(error, ConnectionBrokenError | TimeoutError):
        instead = await wss_instead(args.url, context)
        if instead:
            return instead
    return f"cannot reach {args.url}: {_unreachable(error)}{access_hint(error, args.certfile)}"


def _unreachable(error: BaseException) -> str:
    """Why connecting failed, said once: the cause of a ``could not connect to URL: CAUSE`` (the
    command's own message names the URL already), else the error itself."""
    cause = error.__cause__
    if cause is not None and str(error).endswith(f": {cause}"):
        return str(cause) or type(cause).__name__
    return str(error) or type(error).__name__


def _websocket_handshake(error: object) -> str | None:
    """The hint for a ``ws://``/``wss://`` handshake that a server answered, by the type of the
    ``websockets`` error among the causes (the module is loaded only once a WebSocket was tried):
    ``""``, as the library's message says it all (an HTTP status and the path; for an answer that
    is not HTTP, the ``wss://`` or ``tcp://`` URL to use instead), and a hint of ours would
    repeat or contradict it; ``None`` when no handshake was answered."""
    exceptions = sys.modules.get("websockets.exceptions")
    if exceptions is None:
        return None
    if any(isinstance(cause, exceptions.InvalidHandshake) for cause in _causes(error)):
        return ""
    return None


_NAME_MISMATCH = frozenset({62, 64})
"""The verify codes (``ssl.SSLCertVerificationError.verify_code``) of a server certificate that
does not carry the name connected to: OpenSSL's ``X509_V_ERR_HOSTNAME_MISMATCH`` and
``X509_V_ERR_IP_ADDRESS_MISMATCH``."""


def _causes(error: object) -> Iterator[BaseException]:
    """``error`` and what caused it: its ``__cause__`` chain, through a replay client's
    :class:`~rstreams.replay.ServerUnavailableError`'s ``last`` failure."""
    from rstreams.replay import ServerUnavailableError  # here: ping and top do not load replay/

    while isinstance(error, BaseException):
        yield error
        error = error.last if isinstance(error, ServerUnavailableError) else error.__cause__


def _tls_error(error: object) -> ssl.SSLError | None:
    """The first ``ssl.SSLError`` among ``error`` and its causes (:func:`_causes`), if any."""
    return next((e for e in _causes(error) if isinstance(e, ssl.SSLError)), None)


def _refuses_certificate(error: object) -> bool:
    """Whether ``error`` is a server's refusal of the client's certificate, or of its lack of one,
    by its type, along its ``__cause__`` chain (and a replay client's
    :class:`~rstreams.replay.ServerUnavailableError`'s ``last`` failure): the session ended in or
    just after the TLS handshake (:class:`~rstreams.errors.TLSRefusedError`, or the replay
    client's :class:`~rstreams.replay.CertificateRefusedError`), a ``wss://`` handshake got no
    HTTP response over TLS (:class:`~rstreams.net._transport.TLSNoResponseError`), or a
    certificate alert refused it (an ``ssl.SSLError`` whose reason is one of
    :data:`~rstreams.net._transport.CERTIFICATE_ALERTS`)."""
    from rstreams.replay import CertificateRefusedError  # here: ping and top do not load replay/

    refusals = TLSRefusedError | CertificateRefusedError | TLSNoResponseError
    return any(
        isinstance(e, refusals) or (isinstance(e, ssl.SSLError) and e.reason in CERTIFICATE_ALERTS)
        for e in _causes(error)
    )


def _reset_in_handshake(error: object) -> bool:
    """Whether the server reset the connection inside the TLS handshake (a
    :class:`~rstreams.errors.TLSRefusedError` caused by a ``ConnectionResetError``): a TLS 1.2
    asyncio server refusing a client certificate does that, and so does a server that speaks no
    TLS at that address (a WebSocket server reached with ``wss://``, say)."""
    return any(
        isinstance(e, TLSRefusedError) and isinstance(e.__cause__, ConnectionResetError)
        for e in _causes(error)
    )


HTTPS_HINT = (
    "the server answers HTTP over TLS there, as a WebSocket server does: its URL is "
    "wss://host:port/path (PROTOCOL.md §1.1)"
)
"""What a command says of a ``tls://`` server that ended or stayed silent before its hello and
answers an HTTP request over TLS (:func:`answers_https`)."""


async def answers_https(url: str, context: ssl.SSLContext | None, seconds: float = 2.0) -> bool:
    """Whether the server of the ``tls://`` ``url`` answers an HTTP request over TLS (a ``wss://``
    server reached with ``tls://``: it waits for the WebSocket handshake's request, then closes,
    which looks like a refused client certificate), within ``seconds``; ``False`` for another
    scheme or on any failure. ``context``: the command's (its client certificate too)."""
    from rstreams.net import parse_url

    endpoint = parse_url(url)
    if endpoint.scheme != "tls":
        return False
    try:
        async with asyncio.timeout(seconds):
            reader, writer = await asyncio.open_connection(
                endpoint.host, endpoint.port, ssl=context or ssl.create_default_context()
            )
            try:
                writer.write(f"GET / HTTP/1.1\r\nHost: {endpoint.host}\r\n\r\n".encode("ascii", "replace"))
                first = await reader.readexactly(5)
            finally:
                writer.close()
                with contextlib.suppress(OSError, ssl.SSLError):
                    await writer.wait_closed()
    except (OSError, ssl.SSLError, TimeoutError, asyncio.IncompleteReadError, ValueError):
        return False
    return first == b"HTTP/"


async def wss_instead(url: str, context: ssl.SSLContext | None, conn: Connection | None = None) -> str:
    """What a client command (subscribe, ping, top) says instead of its failure when the server of
    the ``tls://`` ``url`` ended, or stayed silent, before its hello and answers an HTTP request
    over TLS (:func:`answers_https`): ``URL said no hello;`` and :data:`HTTPS_HINT`, which names
    ``wss://``. ``""`` otherwise, and at once when ``conn``, the command's connection if it was
    made, had its hello."""
    if conn is not None and conn.hello_received:
        return ""
    if not await answers_https(url, context):
        return ""
    return f"{url} said no hello; {HTTPS_HINT}"


def _offered_hint(message: str, name: str) -> str:
    """What a server without ``name`` is (``ping`` and ``top`` read publishers of rstreams' own)."""
    if f"no publisher named '{name}" in message:  # top's name carries ?interval=S
        return f" ({name} is offered by rstreams' Python servers, not by the Java and JavaScript ones)"
    return ""


def run_command(main: Coroutine[Any, Any, int]) -> int:
    """``asyncio.run(main)`` for a client command (ping, top, subscribe): Ctrl-C exits 130, SIGTERM
    143 (``main`` cancelled, so that its connection says goodbye, as after Ctrl-C; a command may
    handle SIGTERM itself, as top does) and a closed standard output (``| head``) 0, without a
    traceback."""
    terminated: list[int] = []

    async def until_terminated() -> int:
        task = asyncio.current_task()
        assert task is not None

        def terminate() -> None:
            terminated.append(signal.SIGTERM)
            task.cancel()

        with contextlib.suppress(NotImplementedError):  # no signal handlers on Windows' loops
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, terminate)
        return await main

    try:
        return asyncio.run(until_terminated())
    except KeyboardInterrupt:
        return 130
    except asyncio.CancelledError:
        if not terminated:
            raise
        return 128 + signal.SIGTERM
    except BrokenPipeError:  # the reader has had enough; say nothing more on the closed pipe
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def add_tls_options(parser: argparse.ArgumentParser) -> None:
    """``--cafile``, ``--certfile`` and ``--keyfile`` of the client commands (subscribe, ping, top,
    publish)."""
    parser.add_argument("--cafile", metavar="PEM", help="trust these CA certificates for tls:// and wss://")
    parser.add_argument(
        "--certfile",
        metavar="PEM",
        help="present this client certificate (chain) to a server that requires one (mutual TLS)",
    )
    parser.add_argument("--keyfile", metavar="PEM", help="its private key, when not in --certfile")


TLS_OPTIONS = {"cafile": "--cafile", "certfile": "--certfile", "keyfile": "--keyfile"}
"""The options of :func:`add_tls_options` by the :class:`rstreams.replay.Access` field they set."""


def client_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The client's TLS context from :func:`add_tls_options`' options (``None`` without them:
    ``connect``'s default, the system's CAs).

    Raises:
        ValueError: a file does not load, a key without its certificate, or an option on a URL
            without TLS; one line naming the option and its file.
    """
    if all(getattr(args, name) is None for name in TLS_OPTIONS):
        return None  # without importing the replay package (its server, log store, lzma...)
    from rstreams.replay import Access  # the same checks and messages as rstreams publish

    access = Access(cafile=args.cafile, certfile=args.certfile, keyfile=args.keyfile)
    return access.ssl_context(args.url, names=TLS_OPTIONS)


async def _connect(args: argparse.Namespace, context: ssl.SSLContext | None) -> Connection:
    async with asyncio.timeout(args.timeout):
        return await connect(args.url, ssl=context, auth=args.token)


class HealthAnswerError(ReactiveStreamsError, ValueError):
    """A server's ``rstreams/health`` answer is not the health object rstreams' servers send
    (docs/observability.md): a user's publisher of that name replaced it (``serve --publishers``)."""


def read_health(payload: bytes) -> dict[str, Any]:
    """The ``rstreams/health`` answer ``payload`` as the object servers send: JSON, an object, a
    boolean ``ok`` in it.

    Raises:
        HealthAnswerError: one of these is not so; its text says which.
    """
    try:
        health = json.loads(payload)
    except (ValueError, UnicodeDecodeError):
        shown = payload[:40] + (b"..." if len(payload) > 40 else b"")
        raise HealthAnswerError(f"{HEALTH} answered {shown!r}, not JSON") from None
    if not isinstance(health, dict):
        raise HealthAnswerError(f"{HEALTH} answered a JSON {type(health).__name__}, not an object")
    if not isinstance(health.get("ok"), bool):
        raise HealthAnswerError(f'{HEALTH} answered an object without the boolean field "ok"')
    return health


def _not_health(url: str, bad: HealthAnswerError) -> str:
    """What ping and top say of a server whose ``rstreams/health`` is not the server's own."""
    return f"{url}: {bad} (a publisher of the user's replaced the server's own, as serve --publishers can)"


# -- ping -----------------------------------------------------------------------------------------
def _ping(args: argparse.Namespace) -> int:
    if args.count < 1:
        return fail("ping", f"--count needs an integer >= 1, got {args.count}")
    if not args.timeout > 0:
        return fail("ping", f"--timeout needs a number of seconds > 0, got {args.timeout:g}")
    try:
        context = client_tls(args)
    except ValueError as bad:
        return fail("ping", str(bad))

    async def run() -> int:
        try:
            conn = await _connect(args, context)
        except HandshakeTimeoutError as opening:
            return fail("ping", await wss_instead(args.url, context) or connection_ended(args.url, opening))
        except (OSError, ssl.SSLError, ValueError, TimeoutError, ImportError, ReactiveStreamsError) as bad:
            return fail("ping", await _unreached(args, context, bad))
        try:
            for _ in range(args.count):
                start = time.perf_counter()
                async with asyncio.timeout(args.timeout):
                    health = read_health(await conn.request(HEALTH, codec=RAW))
                millis = (time.perf_counter() - start) * 1000
                print(
                    f"{args.url}: {'ok' if health.get('ok') else 'NOT OK'} in {millis:.2f} ms, "
                    f"rstreams {health.get('version', '?')}, up {health.get('uptime_seconds', 0):.0f} s, "
                    f"{health.get('connections', '?')} connection(s)",
                    flush=True,
                )
                if not health.get("ok"):
                    return 1
        except HealthAnswerError as bad:
            return fail("ping", _not_health(args.url, bad), 1)
        except RemoteStreamError as refused:
            hint = _offered_hint(refused.message, "rstreams/health")
            return fail(
                "ping", f"{args.url} answered rstreams/health with an error: {refused.message}{hint}", 1
            )
        except TimeoutError:
            said = f"{args.url} did not answer within {args.timeout:g} s (--timeout){no_hello_hint(conn)}"
            return fail("ping", await wss_instead(args.url, context, conn) or said)
        except ReactiveStreamsError as broken:
            said = connection_ended(args.url, broken, args.certfile)
            return fail("ping", await wss_instead(args.url, context, conn) or said)
        finally:
            await conn.aclose(timeout=CLOSE_TIMEOUT)
        return 0

    return run_command(run())


# -- top ------------------------------------------------------------------------------------------
def render(url: str, previous: dict[str, Any] | None, snapshot: dict[str, Any]) -> str:
    """One screen of ``rstreams top``: the user's streams (the server's own, such as this stats
    stream, are counted in the title line, not listed)."""
    rows = stream_rows(previous, snapshot)
    own = own_streams(snapshot)
    hidden = f" (+{own} of {BUILTIN_PREFIX}*, not listed)" if own else ""
    lines = [
        f"rstreams top {url}   rstreams {snapshot.get('version', '?')}, "
        f"up {snapshot['uptime_seconds']:.0f} s, {snapshot['connections_open']} connection(s), "
        f"{len(rows)} stream(s){hidden}   q: quit",
        "",
        *table(HEADER, rows),
    ]
    queries = spark_rows(snapshot)
    if queries:
        lines += ["", *table(SPARK_HEADER, queries)]
    return "\n".join(lines) + "\n"


@contextlib.contextmanager
def _keys(stdin: TextIO, loop: asyncio.AbstractEventLoop, quit_: asyncio.Event) -> Iterator[None]:
    """On a terminal: keys arrive one by one (cbreak), ``q`` quits; the terminal is restored after."""
    if not stdin.isatty():
        yield
        return
    import termios
    import tty

    fd = stdin.fileno()
    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)

    def key() -> None:
        data = os.read(fd, 64)
        if not data or b"q" in data or b"Q" in data:
            quit_.set()

    loop.add_reader(fd, key)
    try:
        yield
    finally:
        loop.remove_reader(fd)
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


NO_METRICS = (
    "this server counts nothing, so it has no rstreams/stats to show: start it with "
    "rstreams serve URL --metrics on (or --metrics HOST:PORT), or serve(..., metrics=True)"
)
"""What ``top`` says of a server that was started without metrics (:func:`_counts_nothing`)."""


async def _counts_nothing(conn: Connection, seconds: float) -> bool:
    """Whether the server says it counts nothing: its ``rstreams/health`` answer's ``metrics`` is
    false (it was started without metrics; its ``rstreams/stats`` then fails with code 1, the
    publisher's own error, as PROTOCOL.md §19.2 has it). ``False`` when it does not say so: it
    refuses ``rstreams/health`` too, or does not answer within ``seconds``.

    Raises:
        HealthAnswerError: the answer is not the health object (:func:`read_health`).
    """
    try:
        async with asyncio.timeout(seconds):
            health = read_health(await conn.request(HEALTH, codec=RAW))
    except HealthAnswerError:
        raise  # said as such by top
    except (TimeoutError, ReactiveStreamsError):
        return False
    return health.get("metrics") is False


def _top(args: argparse.Namespace) -> int:
    if not MIN_INTERVAL <= args.interval < math.inf:  # what the server refuses, said before connecting
        seconds = f"a finite number of seconds >= {MIN_INTERVAL:g} (each snapshot walks every open stream)"
        return fail("top", f"--interval needs {seconds}, got {args.interval:g}")
    if not args.timeout > 0:
        return fail("top", f"--timeout needs a number of seconds > 0, got {args.timeout:g}")
    try:
        context = client_tls(args)
    except ValueError as bad:
        return fail("top", str(bad))

    async def run() -> int:
        loop = asyncio.get_running_loop()
        quit_ = asyncio.Event()
        with contextlib.suppress(NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, quit_.set)
            loop.add_signal_handler(signal.SIGTERM, quit_.set)
        try:
            conn = await _connect(args, context)
        except HandshakeTimeoutError as opening:
            return fail("top", await wss_instead(args.url, context) or connection_ended(args.url, opening))
        except (OSError, ssl.SSLError, ValueError, TimeoutError, ImportError, ReactiveStreamsError) as bad:
            return fail("top", await _unreached(args, context, bad))
        # percent-encoded (PROTOCOL.md §5.5): 1e+09's "+" would otherwise arrive as a space
        interval = urllib.parse.quote(f"{args.interval:g}", safe="")
        stats = conn.publisher(f"rstreams/stats?interval={interval}", codec=JSON)
        screen = Screen(sys.stdout)

        async def show() -> bool:
            """Redraw each snapshot until the stream ends; ``True`` when it failed at once because
            the server counts nothing (:func:`_counts_nothing`), else what failed it is raised."""
            previous = None
            snapshots = aiter(stats)
            while True:
                try:
                    async with asyncio.timeout(args.interval + args.timeout):  # a silent server
                        snapshot = await anext(snapshots)
                except StopAsyncIteration:
                    return False
                except RemoteStreamError:
                    if previous is None and await _counts_nothing(conn, args.timeout):
                        return True
                    raise
                screen.show(render(args.url, previous, snapshot))
                previous = snapshot

        with _keys(sys.stdin, loop, quit_):
            showing = asyncio.ensure_future(show())
            quitting = asyncio.ensure_future(quit_.wait())
            try:
                await asyncio.wait([showing, quitting], return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (showing, quitting):
                    task.cancel()
                await asyncio.gather(showing, quitting, return_exceptions=True)
                await conn.aclose(timeout=CLOSE_TIMEOUT)
        if showing.cancelled():
            return 0
        error = showing.exception()
        if error is None and showing.result():
            return fail("top", f"{args.url}: {NO_METRICS}", 1)
        if isinstance(error, HealthAnswerError):
            return fail("top", _not_health(args.url, error), 1)
        if isinstance(error, RemoteStreamError):
            return fail(
                "top", f"{args.url}: {error.message}{_offered_hint(error.message, 'rstreams/stats')}", 1
            )
        if isinstance(error, TimeoutError):
            silent = f"{args.interval + args.timeout:g} s (--interval + --timeout){no_hello_hint(conn)}"
            return fail(
                "top",
                await wss_instead(args.url, context, conn) or f"{args.url} sent no snapshot for {silent}",
            )
        if isinstance(error, BrokenPipeError):
            raise error
        if error is not None:
            said = connection_ended(args.url, error, args.certfile)
            return fail("top", await wss_instead(args.url, context, conn) or said)
        return 0

    return run_command(run())


# -- the parser -----------------------------------------------------------------------------------
def _client_options(parser: argparse.ArgumentParser, timeout: float) -> None:
    parser.add_argument("url", help="the server: tcp://host:port, tls://, unix://, ws://, wss://")
    parser.add_argument(
        "--token",
        default=os.environ.get("RSTREAMS_TOKEN"),
        help="present this token (default: $RSTREAMS_TOKEN); only to servers that ask for one",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=timeout,
        metavar="S",
        help=f"give up on a server silent for S seconds ({timeout:g})",
    )
    add_tls_options(parser)


def add_commands(commands: Any) -> None:
    """Add ``ping`` and ``top`` to the ``rstreams`` command's subparsers."""
    ping = commands.add_parser(
        "ping",
        help="a server's health and round-trip time (exit 0: ok)",
        description="Time rstreams/health round trips and print the server's answer. Exit status: 0 "
        "when the server says ok, 1 when it says not ok, refuses rstreams/health (the Java and "
        "JavaScript servers have none) or answers it with something else than the health object, 2 "
        "when it cannot be reached within --timeout, refuses the "
        "token or the TLS handshake fails.",
    )
    _client_options(ping, 5.0)
    ping.add_argument("--count", type=int, default=1, metavar="N", help="round trips (1)")
    ping.set_defaults(run=_ping)
    top = commands.add_parser(
        "top",
        help="a live table of a server's streams: demand, rate, where they wait",
        description="Redraw a table of the server's streams from rstreams/stats every --interval "
        "seconds (q or Ctrl-C quits; not on a terminal, the tables follow one another). Exit status: "
        "0 when quit, 1 when the server counts nothing (served without --metrics) or refuses "
        "rstreams/stats, 2 when it cannot be reached or falls silent, refuses the token or the TLS "
        "handshake fails.",
    )
    _client_options(top, 10.0)
    top.add_argument(
        "--interval", type=float, default=1.0, metavar="S", help="refresh every S seconds (1; at least 0.1)"
    )
    top.set_defaults(run=_top)
