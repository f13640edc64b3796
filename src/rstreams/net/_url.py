"""RS.io addresses: ``tcp://host:port``, ``tls://host:port``, ``unix:///path``, ``ws://``, ``wss://``.

:func:`parse_url` checks a URL once, where the user passed it, and returns an
:class:`Endpoint`; everything below works with the Endpoint. Bad URLs raise
:class:`ValueError` naming the URL and showing a correct one (local misuse, raised at
once). A part the scheme has no use for (a user before the host, a path after a
``tcp``/``tls`` port, a query outside ``ws``/``wss``, a fragment) is refused by name
rather than dropped: ``tcp://host:5000?tls=1`` does not quietly mean ``tcp://host:5000``.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from typing import Literal

__all__ = ["SCHEMES", "Endpoint", "parse_url"]

Scheme = Literal["tcp", "tls", "unix", "ws", "wss"]
SCHEMES: tuple[Scheme, ...] = ("tcp", "tls", "unix", "ws", "wss")

_SCHEME_NAMES: dict[str, Scheme] = {name: name for name in SCHEMES}
_DEFAULT_PORTS = {"ws": 80, "wss": 443}  # RFC 6455 section 3
_FORMS: dict[str, str] = {
    "tcp": "tcp://host:port",
    "tls": "tls://host:port",
    "unix": "unix:///path",
    "ws": "ws://host:port/path?query",
    "wss": "wss://host:port/path?query",
}


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """Where to listen or connect: the parsed form of an RS.io URL."""

    scheme: Scheme
    host: str = ""
    """Host name or address without brackets (``::1``, not ``[::1]``); empty for unix."""
    port: int = 0
    path: str = ""
    """The socket path for ``unix``; the HTTP request path (with query) for ``ws``/``wss``."""

    @property
    def secure(self) -> bool:
        """Whether the transport is TLS (``tls`` or ``wss``)."""
        return self.scheme in ("tls", "wss")

    def with_port(self, port: int) -> Endpoint:
        """The same endpoint with another port (the real one after binding port 0)."""
        return dataclasses.replace(self, port=port)

    @property
    def url(self) -> str:
        """The endpoint as a URL again, e.g. ``tcp://127.0.0.1:5000`` or ``tcp://[::1]:5000``."""
        if self.scheme == "unix":
            return f"unix://{self.path}"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path if self.scheme in ('ws', 'wss') else ''}"


def parse_url(url: str) -> Endpoint:
    """Parse and check an RS.io URL.

    Raises:
        TypeError: ``url`` is not a string.
        ValueError: unknown scheme, missing host or port, port out of range, a
            ``unix`` URL without an absolute path, or a part the scheme does not take (a
            user, a ``tcp``/``tls`` path, a query outside ``ws``/``wss``, a fragment).
    """
    if not isinstance(url, str):
        raise TypeError(f"an RS.io URL is a str such as 'tcp://127.0.0.1:5000', got {url!r}")
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _SCHEME_NAMES:
        raise ValueError(
            f"unsupported URL scheme {parts.scheme!r} in {url!r}; use one of "
            "tcp://host:port, tls://host:port, unix:///path, ws://host:port/path, wss://host:port/path"
        )
    _refuse_extra_parts(url, scheme, parts)
    if scheme == "unix":
        path = parts.netloc + parts.path if parts.netloc else parts.path
        if not path.startswith("/"):
            raise ValueError(
                f"a unix URL needs an absolute socket path, like 'unix:///tmp/rs.sock', got {url!r}"
            )
        return Endpoint(scheme="unix", path=path)
    host = parts.hostname or ""
    if not host:
        raise ValueError(f"{url!r} has no host; write it like '{scheme}://127.0.0.1:5000'")
    try:
        port = parts.port
    except ValueError as error:
        raise ValueError(f"{url!r} has an invalid port: {error}") from None
    if port is None:
        port = _DEFAULT_PORTS.get(scheme)
        if port is None:
            raise ValueError(
                f"{url!r} has no port; write it like '{scheme}://{host}:5000' (0 = any free port)"
            )
    path = ""
    if scheme in ("ws", "wss"):
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
    return Endpoint(scheme=_SCHEME_NAMES[scheme], host=host, port=port, path=path)


def _refuse_extra_parts(url: str, scheme: str, parts: urllib.parse.SplitResult) -> None:
    """Refuse a part of ``url`` that its scheme does not use, naming it and the scheme's form.

    ``tcp``/``tls`` are ``host:port`` only; ``unix`` is a socket path only; ``ws``/``wss``
    add a path and a query (sent in the HTTP request), but no user (RFC 6455 section 3 has
    none) and no fragment (RFC 6455 section 3: not used; a ``#`` in a path is ``%23``). A user
    part is shown as ``***``: it may hold a password.
    """
    _, at, host_port = parts.netloc.rpartition("@")
    shown = url.replace(parts.netloc, "***@" + host_port, 1) if at else url
    form = _FORMS[scheme]
    extra = ""
    if at:
        extra = "a user before the host (the part ending in '@')"
    elif scheme in ("tcp", "tls") and parts.path:
        extra = f"a path ({parts.path!r})"
    elif scheme in ("tcp", "tls", "unix") and "?" in url.partition("#")[0]:  # after '#': the fragment's
        extra = f"a query ({'?' + parts.query!r})"
    elif "#" in url:
        extra = f"a fragment ({'#' + parts.fragment!r})"
    if extra:
        hint = ""
        if not at and scheme in ("ws", "wss"):
            hint = " (a '#' in the path is written %23)"
        elif not at and scheme == "unix":
            hint = " (a socket path with '?' or '#' in it cannot be written as a unix URL)"
        raise ValueError(
            f"{shown!r} has {extra}, which a {scheme}:// URL does not take: write it as {form}{hint}"
        )
