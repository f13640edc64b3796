"""RS.io addresses: ``tcp://host:port``, ``tls://host:port``, ``unix:///path``, ``ws://``, ``wss://``.

:func:`parse_url` checks a URL once, where the user passed it, and returns an
:class:`Endpoint`; everything below works with the Endpoint. Bad URLs raise
:class:`ValueError` naming the URL and showing a correct one (local misuse, raised at
once).
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
        ValueError: unknown scheme, missing host or port, port out of range, or a
            ``unix`` URL without an absolute path.
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
