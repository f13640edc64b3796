"""The browser origins a WebSocket server accepts (``serve(origins=...)``), without websockets.

A browser lets any page open a WebSocket to any address, loopback included, and names the page
in the handshake's ``Origin`` header (RFC 6454's serialization: ``scheme://host[:port]``, the
default port left out); a server that does not check it serves every page the user has open
(cross-site WebSocket hijacking). :func:`own_origins` are a server's own, :func:`check_origins`
checks and normalizes the ones an application adds; :mod:`rstreams.net._websocket` hands the
result to websockets' ``origins=`` check.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable

__all__ = ["ALL_ORIGINS", "check_origins", "origins_allowed", "own_origins"]

ALL_ORIGINS = "*"
"""Among ``origins=``: every browser page may connect (no ``Origin`` check at all)."""

_LOOPBACK = ("localhost", "127.0.0.1", "::1")
_WILDCARD = ("", "0.0.0.0", "::")
_DEFAULT_PORT = {"http": 80, "https": 443}


def _origin(scheme: str, host: str, port: int) -> str:
    """A serialized origin as browsers send it (RFC 6454): brackets for IPv6, no default port."""
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}" if port == _DEFAULT_PORT[scheme] else f"{scheme}://{host}:{port}"


def own_origins(host: str, port: int, *, secure: bool) -> list[str]:
    """The origins of pages served at ``host:port`` itself (``https`` when ``secure``): the host
    as given, and for a loopback or wildcard host (``127.0.0.1``, ``0.0.0.0``, ...) every
    loopback name (``localhost``, ``127.0.0.1``, ``[::1]``), by which a browser on this machine
    may have opened the page."""
    scheme = "https" if secure else "http"
    host = host.removeprefix("[").removesuffix("]")
    hosts = [host.lower()]
    if host.lower() in _LOOPBACK or host in _WILDCARD:
        hosts += [name for name in _LOOPBACK if name != host.lower()]
    return [_origin(scheme, name, port) for name in hosts if name]


def _check_origin(origin: object) -> str:
    if not isinstance(origin, str):
        raise TypeError(f"an origin is a str such as 'https://app.example:8443', got {origin!r}")
    if origin == ALL_ORIGINS:
        return origin
    parts = urllib.parse.urlsplit(origin)
    scheme = parts.scheme.lower()
    problem, host, port = None, parts.hostname or "", None
    if scheme not in _DEFAULT_PORT or not host:
        problem = "it needs http:// or https:// and a host"
    elif parts.username is not None or parts.password is not None:
        problem = "an origin has no user name or password"
    elif parts.path not in ("", "/") or parts.query or parts.fragment or origin.endswith(("?", "#")):
        problem = "an origin has no path, query or fragment"
    else:
        try:
            port = parts.port
        except ValueError as bad:
            problem = str(bad)
    if problem is not None:
        raise ValueError(
            f"origin {origin!r}: {problem} (an origin is SCHEME://HOST[:PORT], e.g. "
            f"'https://app.example:8443', as a page's address begins; {ALL_ORIGINS!r}: every one)"
        )
    return _origin(scheme, host, _DEFAULT_PORT[scheme] if port is None else port)


def check_origins(origins: Iterable[str] | None) -> tuple[str, ...] | None:
    """``origins=`` as :func:`rstreams.serve` takes it, checked and in the form browsers send
    (lower case, no default port): the pages, besides the server's own, that may connect.
    ``None`` when it holds :data:`ALL_ORIGINS` (every page may connect).

    Raises:
        TypeError: not an iterable of str (a lone str is refused: it would be its letters).
        ValueError: one is not ``http(s)://host[:port]`` or ``*``.
    """
    if origins is None:
        return ()
    if isinstance(origins, str | bytes) or not isinstance(origins, Iterable):
        raise TypeError(f"origins must be a list of origins such as ['https://app.example'], got {origins!r}")
    checked = tuple(_check_origin(origin) for origin in origins)
    return None if ALL_ORIGINS in checked else checked


def origins_allowed(more: tuple[str, ...] | None) -> list[str | None] | None:
    """What websockets' ``origins=`` is given: no ``Origin`` header (``None``) and ``more`` (from
    :func:`check_origins`); ``None`` (no check) when ``more`` is. The server's own origins
    (:func:`own_origins`) join the list once its port is known."""
    return None if more is None else [None, *dict.fromkeys(more)]
