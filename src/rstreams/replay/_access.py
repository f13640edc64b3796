"""``Access``: how a client reaches a replay server: TLS settings and credentials.

Spark's connector, ``rstreams publish`` and the replay client all describe a server the same
way: a URL plus an :class:`Access` (a CA file, the server's expected name, a client
certificate and key for mutual TLS, and a token or a user and password). It is a small,
frozen, picklable value, so a Spark partition can carry it to an executor. Its ``repr``
never shows the credentials, and nothing in this package puts them into a message.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field
from typing import Any

from rstreams._pem import ca_problem, pem_problem
from rstreams.errors import ReactiveStreamsError

__all__ = ["Access", "AccessError"]


class AccessError(ReactiveStreamsError, ValueError):
    """A TLS file could not be loaded, or settings that do not go together (named)."""


class _NamedContext(ssl.SSLContext):
    """A client context that checks the certificate against ``server_name`` instead of the URL's host."""

    server_name = ""

    def wrap_bio(self, incoming: Any, outgoing: Any, server_side: bool = False, server_hostname: Any = None,
                 session: Any = None) -> ssl.SSLObject:  # fmt: skip
        return super().wrap_bio(incoming, outgoing, server_side, self.server_name or server_hostname, session)


@dataclass(frozen=True)
class Access:
    """TLS settings and credentials for connecting to a replay server.

    Args:
        auth: a token (``str``) or ``(user, password)``; ``None``: none.
        cafile: trust the CA certificates in this PEM file (``tls://``, ``wss://``);
            ``None``: the system's.
        server_name: the name the server's certificate must carry (default: the URL's host).
        certfile: a client certificate chain (PEM) for mutual TLS; ``keyfile`` its key
            when it is not in the same file.
    """

    auth: str | tuple[str, str] | None = field(default=None, repr=False)
    cafile: str | None = None
    server_name: str | None = None
    certfile: str | None = None
    keyfile: str | None = None

    def __repr__(self) -> str:
        shown = [f"{k}={v!r}" for k, v in self._tls_fields() if v is not None]
        if self.auth is not None:
            shown.append("auth=<hidden>")
        return f"Access({', '.join(shown)})"

    def _tls_fields(self) -> list[tuple[str, str | None]]:
        return [
            ("cafile", self.cafile),
            ("server_name", self.server_name),
            ("certfile", self.certfile),
            ("keyfile", self.keyfile),
        ]

    @property
    def uses_tls(self) -> bool:
        return any(value is not None for _, value in self._tls_fields())

    def ssl_context(self, url: str, *, names: dict[str, str] | None = None) -> ssl.SSLContext | None:
        """The client TLS context for ``url`` (``None`` for ``tcp://``, ``ws://`` and ``unix://``).

        ``names`` maps each field to the name the user knows it by (an option, a flag) for
        the error messages.

        Raises:
            AccessError: a file does not load, or TLS settings for a URL without TLS.
        """
        said = names or {}
        secure = url.partition("://")[0] in ("tls", "wss")
        if not secure:
            if self.uses_tls:
                first = next(k for k, v in self._tls_fields() if v is not None)
                raise AccessError(f"{said.get(first, first)} is for tls:// and wss:// URLs, not {url}")
            return None
        if self.keyfile is not None and self.certfile is None:
            key, cert = said.get("keyfile", "keyfile"), said.get("certfile", "certfile")
            raise AccessError(f"{key} {self.keyfile} needs {cert} too")
        context = _NamedContext(ssl.PROTOCOL_TLS_CLIENT)
        context.server_name = self.server_name or ""
        cafile = said.get("cafile", "cafile")
        where = cafile + ("" if self.cafile is None else f" {self.cafile}")
        try:
            if self.cafile is None:
                context.load_default_certs(ssl.Purpose.SERVER_AUTH)
            else:
                context.load_verify_locations(cafile=self.cafile)
            if self.certfile is not None:
                where = f"{said.get('certfile', 'certfile')} {self.certfile}"
                if self.keyfile is not None:
                    where += f" / {said.get('keyfile', 'keyfile')} {self.keyfile}"
                context.load_cert_chain(self.certfile, self.keyfile)
        except (OSError, ssl.SSLError) as bad:  # the file's name: ssl's errors leave it out
            if isinstance(bad, ssl.SSLError) and self.cafile is not None and where.startswith(cafile):
                problem = ca_problem(self.cafile, cafile)  # ssl says only "no certificate or crl found"
                if problem is not None:
                    raise AccessError(f"{problem} ({type(bad).__name__}: {bad})") from None
            if isinstance(bad, ssl.SSLError) and self.certfile is not None and not where.startswith(cafile):
                cert, key = said.get("certfile", "certfile"), said.get("keyfile", "keyfile")
                problem = pem_problem(self.certfile, self.keyfile, cert, key)  # ssl says only "PEM lib"
                if problem is not None:
                    raise AccessError(f"{problem} ({type(bad).__name__}: {bad})") from None
            raise AccessError(f"cannot load {where} ({type(bad).__name__}: {bad})") from None
        return context
