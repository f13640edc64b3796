"""RS.io addresses: ``tcp://host:port``, ``tls://host:port``, ``unix:///path``, ``ws://``, ``wss://``.

:func:`parse_url` checks a URL once, where the user passed it, and returns an
:class:`Endpoint`; everything below works with the Endpoint. The rules are PROTOCOL.md §1.1,
and the Java (``RsioUrl``) and JavaScript (``parseUrl``) bindings follow them to the letter:
tests/net/url_refusals.json holds the URLs each accepts, what they parse to, and the message
each refuses the others with. Bad URLs raise :class:`ValueError` naming the URL, its faulty
part and §1.1 (local misuse, raised at once); a user part is shown as ``***`` in every message
(it may hold a password). A part the scheme has no use for (a user, a ``tcp``/``tls`` path, a
query outside ``ws``/``wss``, a fragment) is refused by name rather than dropped:
``tcp://host:5000?tls=1`` does not quietly mean ``tcp://host:5000``.
"""

from __future__ import annotations

import dataclasses
import re
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
_SECTION = "(PROTOCOL.md §1.1)"
_ALL_FORMS = (
    "use one of tcp://host:port, tls://host:port, unix:///path, ws://host:port/path, "
    f"wss://host:port/path {_SECTION}"
)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*")  # RFC 3986 section 3.1
_HOST_NAME = re.compile(r"[A-Za-z0-9._-]+")
_IPV6 = re.compile(r"[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*")
_PORT = re.compile(r"[0-9]+")
# what a ws/wss path and query hold as written: RFC 3986's pchar, '/' and '?' ('%' starts an
# escape) but "'", which a WHATWG URL (the JavaScript binding's WebSockets, a browser's) sends
# as %27 in a query
_REQUEST_CHAR = re.compile(r"[A-Za-z0-9._~!$&()*+,;=:@/?-]")
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_HOST_RULE = (
    "a host is a name of ASCII letters, digits, '-', '.' and '_', an IPv4 address, or an IPv6 "
    "address in brackets ([::1])"
)


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Endpoint:
    """Where to listen or connect: the parsed form of an RS.io URL."""

    scheme: Scheme
    host: str = ""
    """Host name or address in lower case, without brackets (``::1``, not ``[::1]``); empty for unix."""
    port: int = 0
    path: str = ""
    """The socket path (percent-decoded) for ``unix``; the HTTP request path (with query, as
    written) for ``ws``/``wss``."""

    @property
    def secure(self) -> bool:
        """Whether the transport is TLS (``tls`` or ``wss``)."""
        return self.scheme in ("tls", "wss")

    def with_port(self, port: int) -> Endpoint:
        """The same endpoint with another port (the real one after binding port 0)."""
        return dataclasses.replace(self, port=port)

    @property
    def url(self) -> str:
        """The endpoint as a URL again, e.g. ``tcp://127.0.0.1:5000`` or ``tcp://[::1]:5000``;
        a unix socket path has its ``%``, ``?``, ``#`` and control characters percent-encoded."""
        if self.scheme == "unix":
            return "unix://" + "".join(
                f"%{ord(c):02X}" if c in "%?#" or ord(c) < 0x20 or ord(c) == 0x7F else c for c in self.path
            )
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}{self.path if self.scheme in ('ws', 'wss') else ''}"


@dataclasses.dataclass(frozen=True, slots=True)
class _Parts:
    """A URL split as RFC 3986 appendix B splits it; ``None`` for a part not there at all."""

    scheme: str
    authority: str | None
    path: str
    query: str | None
    fragment: str | None
    shown: str
    """The URL for messages, its user part (if any) written ``***``."""


def parse_url(url: str) -> Endpoint:
    """Parse and check an RS.io URL (PROTOCOL.md §1.1).

    Raises:
        TypeError: ``url`` is not a string.
        ValueError: a control character; no scheme or an unknown one; a part the scheme
            does not take (a user, a ``tcp``/``tls`` path, a query outside ``ws``/``wss``, a
            fragment); a ``unix`` URL without an absolute socket path or with a bad ``%``
            escape; a missing or invalid host; a missing (``tcp``/``tls``) or invalid port; a
            ``ws``/``wss`` path or query with a character to be percent-encoded.
    """
    if not isinstance(url, str):
        raise TypeError(f"an RS.io URL is a str such as 'tcp://127.0.0.1:5000', got {url!r}")
    parts = _split(url)
    shown = parts.shown
    for c in url:
        if ord(c) < 0x20 or ord(c) == 0x7F:
            raise ValueError(
                f"{shown!r} has a control character ({c!r}), which no part of a URL holds: "
                f"write it percent-encoded (%{ord(c):02X}) where the part takes escapes {_SECTION}"
            )
    if not parts.scheme:
        raise ValueError(f"no URL scheme in {shown!r}; {_ALL_FORMS}")
    scheme = parts.scheme.lower()
    if scheme not in _SCHEME_NAMES:
        raise ValueError(f"unsupported URL scheme {parts.scheme!r} in {shown!r}; {_ALL_FORMS}")
    _refuse_extra_parts(scheme, parts)
    if scheme == "unix":
        written = (parts.authority or "") + parts.path
        if not written.startswith("/"):
            raise ValueError(
                f"{shown!r} has no absolute socket path: write it as unix:///path, like "
                f"unix:///tmp/rs.sock {_SECTION}"
            )
        return Endpoint(scheme="unix", path=_decoded(shown, written))
    host, port_text = _host_port(shown, scheme, parts.authority or "")
    if not port_text:
        port = _DEFAULT_PORTS.get(scheme)
        if port is None:
            raise ValueError(
                f"{shown!r} has no port: write it as {scheme}://host:port, port 0 for any free one "
                f"when listening {_SECTION}"
            )
    elif not _PORT.fullmatch(port_text) or int(port_text) > 65535:
        raise ValueError(f"{shown!r} has an invalid port ({port_text!r}): a port is 0 to 65535 {_SECTION}")
    else:
        port = int(port_text)
    path = ""
    if scheme in ("ws", "wss"):
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")  # no empty '?': none is sent
        _check_request_target(shown, path)
        _refuse_dot_segments(shown, parts.path)
    return Endpoint(scheme=_SCHEME_NAMES[scheme], host=host, port=port, path=path)


def _split(url: str) -> _Parts:
    """``url``'s scheme (empty if none), authority, path, query and fragment (RFC 3986 appendix B:
    the authority runs to the first '/', '?' or '#', the fragment follows the first '#', the
    query the first '?' before it)."""
    colon = url.find(":")
    scheme = url[:colon] if colon > 0 and _SCHEME.fullmatch(url[:colon]) else ""
    at = len(scheme) + 1 if scheme else 0
    authority = None
    shown = url
    if url.startswith("//", at):
        end = len(url)
        for mark in "/?#":
            found = url.find(mark, at + 2)
            if 0 <= found < end:
                end = found
        authority = url[at + 2 : end]
        user_end = authority.rfind("@")
        if user_end >= 0:
            shown = f"{url[: at + 2]}***@{authority[user_end + 1 :]}{url[end:]}"
        at = end
    rest, hash_mark, fragment = url[at:].partition("#")
    path, question_mark, query = rest.partition("?")
    return _Parts(
        scheme,
        authority,
        path,
        query if question_mark else None,
        fragment if hash_mark else None,
        shown,
    )


def _refuse_extra_parts(scheme: str, parts: _Parts) -> None:
    """Refuse a part that ``scheme`` does not use, naming it and the scheme's form.

    ``tcp``/``tls`` are ``host:port`` only; ``unix`` is a socket path only; ``ws``/``wss``
    add a path and a query (sent in the HTTP request), but no user (RFC 6455 section 3 has
    none) and no fragment (RFC 6455 section 3: not used; a ``#`` in a path is ``%23``).
    """
    user = parts.authority is not None and "@" in parts.authority
    extra = ""
    if user:
        extra = "a user before the host (the part ending in '@')"
    elif scheme in ("tcp", "tls") and parts.path:
        extra = f"a path ({parts.path!r})"
    elif scheme in ("tcp", "tls", "unix") and parts.query is not None:
        extra = f"a query ({'?' + parts.query!r})"
    elif parts.fragment is not None:
        extra = f"a fragment ({'#' + parts.fragment!r})"
    if extra:
        hint = ""
        if not user and scheme in ("ws", "wss"):
            hint = ", a '#' in the path as %23"
        elif not user and scheme == "unix":
            hint = ", a '?' or '#' in the socket path as %3F or %23"
        raise ValueError(
            f"{parts.shown!r} has {extra}, which a {scheme}:// URL does not take: "
            f"write it as {_FORMS[scheme]}{hint} {_SECTION}"
        )


def _host_port(shown: str, scheme: str, authority: str) -> tuple[str, str]:
    """The host (lower case, no brackets) and the port as written (empty if none) of ``authority``."""
    if authority.startswith("["):
        close = authority.find("]")
        after = authority[close + 1 :] if close >= 0 else ""
        host = authority[1:close]
        if close < 0 or (after and not after.startswith(":")) or not _IPV6.fullmatch(host):
            raise ValueError(f"{shown!r} has an invalid host ({authority!r}): {_HOST_RULE} {_SECTION}")
        return host.lower(), after[1:]
    if authority.count(":") > 1:
        raise ValueError(f"{shown!r} has an invalid host ({authority!r}): {_HOST_RULE} {_SECTION}")
    host, _, port_text = authority.partition(":")
    if not host:
        raise ValueError(
            f"{shown!r} has no host: write it as {_FORMS[scheme]}, like {scheme}://127.0.0.1:5000 {_SECTION}"
        )
    if not _HOST_NAME.fullmatch(host):
        raise ValueError(f"{shown!r} has an invalid host ({host!r}): {_HOST_RULE} {_SECTION}")
    return host.lower(), port_text


def _decoded(shown: str, written: str) -> str:
    """A unix socket path with its ``%XX`` escapes decoded (UTF-8)."""
    pieces = written.split("%")
    data = bytearray(pieces[0].encode())
    for piece in pieces[1:]:
        if not _ESCAPE.match("%" + piece):
            raise ValueError(
                f"{shown!r} has a '%' not followed by two hex digits in its socket path: "
                f"write a '%' as %25 {_SECTION}"
            )
        data.append(int(piece[:2], 16))
        data += piece[2:].encode()
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise ValueError(
            f"{shown!r} has a socket path that is not UTF-8 once its %XX escapes are decoded {_SECTION}"
        ) from None


def _check_request_target(shown: str, target: str) -> None:
    """Refuse a character a ws/wss path or query must have percent-encoded (it is sent as written)."""
    for at, c in enumerate(target):
        if c == "%":
            if not _ESCAPE.match(target, at):
                raise ValueError(
                    f"{shown!r} has a '%' not followed by two hex digits in its path or query: "
                    f"write a '%' as %25 {_SECTION}"
                )
        elif not _REQUEST_CHAR.fullmatch(c):
            escaped = "".join(f"%{byte:02X}" for byte in c.encode())
            raise ValueError(
                f"{shown!r} has a character its path or query may not hold as written ({c!r}): "
                f"write it percent-encoded ({escaped}) {_SECTION}"
            )


def _refuse_dot_segments(shown: str, path: str) -> None:
    """Refuse a ``.`` or ``..`` segment (``%2e`` too) in a ws/wss path: a WHATWG URL removes it
    (RFC 3986 section 5.2.4), so the JavaScript binding would send another path than written."""
    for segment in path.split("/"):
        if segment.lower().replace("%2e", ".") in (".", ".."):
            raise ValueError(
                f"{shown!r} has a dot segment ({segment!r}) in its path, which a WebSocket client may "
                f"remove (RFC 3986 section 5.2.4): write the path without it {_SECTION}"
            )
