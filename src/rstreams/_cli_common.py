"""What the ``rstreams`` commands share: the one-line failure, and the options of both forms of
``rstreams serve`` (``serve URL``: :mod:`rstreams.cli`; ``serve URL NAME``: :mod:`rstreams._cli_logs`).

The lowest of the command's modules: it imports none of them, so each can use it.
"""

from __future__ import annotations

import argparse
import errno
import hmac
import socket
import ssl
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from rstreams._pem import ca_problem, pem_problem
from rstreams.errors import MissingExtraError

if TYPE_CHECKING:
    from rstreams.net import Connection, Credentials

__all__ = [
    "cannot_serve",
    "fail",
    "missing_extra",
    "no_hello_hint",
    "server_names",
    "server_tls",
    "shown_name",
    "shown_names",
    "token_check",
]


def server_names() -> tuple[str, ...]:
    """The names of the publishers every server offers about itself (``rstreams ping`` and
    ``top`` read them)."""
    from rstreams.observe._builtin import HEALTH, PUBLISHERS, STATS

    return (HEALTH, PUBLISHERS, STATS)


def fail(command: str, message: str, status: int = 2) -> int:
    """Print ``rstreams COMMAND: MESSAGE`` on standard error; return the exit status (2: usage, access)."""
    print(f"rstreams {command}: {message}", file=sys.stderr)
    return status


def missing_extra(error: object) -> str:
    """What to install, as `` (... pip install ...)``, when ``error`` or its ``__cause__`` is the
    import of an optional dependency the commands use that is not installed; ``""`` otherwise."""
    while isinstance(error, BaseException):
        if isinstance(error, MissingExtraError):  # its message names the extra already
            return ""
        if isinstance(error, ImportError) and (error.name or "").partition(".")[0] == "websockets":
            return " (ws://, wss:// and --web need the websockets extra: pip install 'rstreams[websockets]')"
        error = error.__cause__
    return ""


def cannot_serve(url: str, bad: BaseException) -> str:
    """Why serving failed: the URL's address, or ``--metrics``' (its error type says which); an
    address in use says what to do about it."""
    from rstreams.observe import MetricsExpositionError

    if isinstance(bad, MetricsExpositionError):
        if bad.errno == errno.EADDRINUSE:
            return (
                f"{bad.strerror} (--metrics HOST:PORT: another server listens there; choose another "
                "port, port 0: any free one, or --metrics on to count without serving /metrics)"
            )
        return f"{bad.strerror} (--metrics)"
    said = f"cannot serve on {url}: {bad}"
    if missing_extra(bad):
        return f"{said}{missing_extra(bad)}"
    if isinstance(bad, socket.gaierror) or (isinstance(bad, OSError) and bad.errno == errno.EADDRNOTAVAIL):
        return f"{said} (the URL's host: a name or address of this machine; 0.0.0.0: every interface)"
    if url.startswith("unix://") and isinstance(bad, FileNotFoundError):
        return f"{said} (the socket's directory must exist)"
    if isinstance(bad, OSError) and bad.errno == errno.EADDRINUSE:
        if url.startswith("unix://"):
            return f"{said} (remove the file if no server listens on it, or choose another path)"
        return f"{said} (another server listens there: stop it, or choose another port; port 0: any free one)"
    return said


SHOWN_CHARACTERS = 60
"""How many characters of a long name a command's message shows (:func:`shown_name`)."""


def shown_name(name: str) -> str:
    """``name`` as a command's message shows it: quoted, and cut after :data:`SHOWN_CHARACTERS`
    characters with its length said, so that a name of thousands of characters (one past the
    server's max_name_length, say) does not fill the terminal."""
    if len(name) <= SHOWN_CHARACTERS:
        return repr(name)
    return f"{name[:SHOWN_CHARACTERS]!r}… ({len(name)} characters)"


def shown_names(message: str, name: str) -> str:
    """``message`` (a server's refusal, say) with ``name`` shown as :func:`shown_name` shows it
    wherever it quotes it as Python does (``repr(name)``: "no publisher named 'NAME'")."""
    return message.replace(repr(name), shown_name(name))


def no_hello_hint(conn: Connection) -> str:
    """Added to a command's line about a server silent past its timeout when the server has not
    even said hello, the first thing an RS.io server says (PROTOCOL.md §4.1): what an endpoint
    of another protocol that waits for a request does (an HTTP server); ``""`` once it has."""
    if conn.hello_received:
        return ""
    from rstreams.net._closing import SILENT_HINT

    return f", not even its hello; {SILENT_HINT}"


def browser_facing(url: str) -> bool:
    """Whether ``url`` is a WebSocket server's, which browser pages may use (``--origin``)."""
    return url.partition("://")[0].lower() in ("ws", "wss")


def server_tls(args: argparse.Namespace) -> ssl.SSLContext | None:
    """The server's TLS context from ``--tls-cert``/``--tls-key`` (and ``--tls-client-ca``: mutual
    TLS, as docs/security.md builds it); ValueError names a mismatch."""
    secure = args.url.partition("://")[0] in ("tls", "wss")
    if args.tls_client_ca is not None and not secure:
        raise ValueError(
            f"--tls-client-ca {args.tls_client_ca} is for tls:// and wss:// URLs, not {args.url}"
        )
    if args.tls_cert is None:
        if args.tls_key is not None:
            raise ValueError("--tls-key needs --tls-cert too")
        if secure:
            raise ValueError(
                f"serving {args.url} needs --tls-cert PEM (and --tls-key PEM if the key is apart)"
            )
        return None
    if not secure:
        raise ValueError(f"--tls-cert is for tls:// and wss:// URLs, not {args.url}")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    try:
        context.load_cert_chain(args.tls_cert, args.tls_key)
    except (OSError, ssl.SSLError) as bad:
        if isinstance(bad, ssl.SSLError):  # ssl says only "PEM lib" for a file without what it needs
            problem = pem_problem(args.tls_cert, args.tls_key, "--tls-cert", "--tls-key")
            if problem is not None:
                raise ValueError(f"{problem} ({type(bad).__name__}: {bad})") from None
        key = "" if args.tls_key is None else f" / --tls-key {args.tls_key}"
        raise ValueError(f"cannot load --tls-cert {args.tls_cert}{key}: {bad}") from None
    if args.tls_client_ca is not None:
        context.verify_mode = ssl.CERT_REQUIRED
        try:
            context.load_verify_locations(cafile=args.tls_client_ca)
        except (OSError, ssl.SSLError) as bad:
            if isinstance(bad, ssl.SSLError):  # ssl says only "no certificate or crl found"
                problem = ca_problem(args.tls_client_ca, "--tls-client-ca")
                if problem is not None:
                    raise ValueError(f"{problem} ({type(bad).__name__}: {bad})") from None
            raise ValueError(f"cannot load --tls-client-ca {args.tls_client_ca}: {bad}") from None
    return context


def token_check(token: str) -> Callable[[Credentials], str | None]:
    from rstreams.net import Token

    expected = token.encode()

    def authenticate(credentials: Credentials) -> str | None:
        if isinstance(credentials, Token) and hmac.compare_digest(credentials.token.encode(), expected):
            return "token"
        return None

    return authenticate
