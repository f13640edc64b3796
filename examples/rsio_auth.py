"""RS.io with authentication, authorization and keepalive (PROTOCOL.md §14, §15).

Run it with ``python examples/rsio_auth.py``; it exits 0 when every check holds.

* The server checks credentials with ``authenticate`` (a token, or a user and password)
  and decides per publisher name with ``authorize``. Its principal is whatever
  ``authenticate`` returns: here a small ``User`` record with roles.
* Clients present credentials with ``connect(url, auth=...)``; a subscription may carry
  its own with ``conn.publisher(name, auth=...)``.
* A refused connection ends with goodbye "authentication failed"; a refused subscription
  gets onError "unauthorized: ..." and the connection goes on. No secret is ever printed,
  logged or sent back.
* ``keepalive``/``idle_timeout`` keep idle connections alive, or end silent ones.

Everything stays on 127.0.0.1 over ``tcp://`` so the example runs anywhere. Credentials
must travel over ``tls://`` (or ``wss://``) on a real network: pass ``ssl=`` to ``serve``
and ``connect`` (docs/security.md).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
from collections.abc import Awaitable
from dataclasses import dataclass

import rstreams
from rstreams.errors import ConnectionBrokenError
from rstreams.net import Credentials, RemoteStreamError, Token, UserPassword, connect, serve


@dataclass(frozen=True)
class User:
    name: str
    roles: frozenset[str]


SALT = b"rsio-example"
PASSWORDS = {"ann": hashlib.sha256(SALT + b"correct horse").hexdigest()}  # store hashes, not passwords
TOKENS = {hashlib.sha256(b"reader-token-123").hexdigest(): User("reader", frozenset({"read"}))}
ROLES = {"ann": frozenset({"read", "admin"})}


def authenticate(credentials: Credentials) -> User | None:
    """The server's hook: a principal for good credentials, ``None`` to refuse."""
    if isinstance(credentials, Token):
        return TOKENS.get(hashlib.sha256(credentials.token.encode()).hexdigest())
    if isinstance(credentials, UserPassword):
        expected = PASSWORDS.get(credentials.user)
        given = hashlib.sha256(SALT + credentials.password.encode()).hexdigest()
        if expected is not None and hmac.compare_digest(expected, given):
            return User(credentials.user, ROLES[credentials.user])
    return None


def authorize(user: User | None, name: str) -> bool:
    """``admin/...`` needs the admin role; everything else needs read."""
    if user is None:
        return False
    needed = "admin" if name.startswith("admin/") else "read"
    return needed in user.roles


OFFER = {
    "news": rstreams.from_iterable([b"rstreams 1.0 released", b"RS.io speaks auth"]),
    "admin/metrics": lambda params: rstreams.just(b"connections=3"),
}


async def refusal(request: Awaitable[bytes]) -> str:
    """The text of the error ``request`` fails with (it must fail)."""
    try:
        await request
    except RemoteStreamError as refused:  # a subscription refused: the connection goes on
        return refused.message
    except ConnectionBrokenError as refused:  # the connection refused: it has ended
        return str(refused)
    raise AssertionError("the request should have been refused")


async def main() -> None:
    async with await serve(
        "tcp://127.0.0.1:0",
        OFFER,
        authenticate=authenticate,
        authorize=authorize,
        idle_timeout=60,
        keepalive=15,
    ) as server:
        print("serving on", server.url)

        async with await connect(server.url, auth="reader-token-123") as reader:
            news = await reader.publisher("news").collect()
            print("reader got", news)
            assert news == [b"rstreams 1.0 released", b"RS.io speaks auth"]
            why = await refusal(reader.request("admin/metrics"))
            print("reader refused:", why)
            assert why.startswith("unauthorized: subscribe to 'admin/metrics'")
            # the same connection, one subscription with the admin's credentials
            metrics = await reader.publisher("admin/metrics", auth=("ann", "correct horse")).collect()
            print("reader, with ann's credentials for one subscription:", metrics)
            assert metrics == [b"connections=3"]

        async with await connect(server.url, auth=("ann", "correct horse")) as admin:
            print("admin got", await admin.request("admin/metrics"))
            assert admin.authenticated

        async with await connect(server.url, auth=("ann", "wrong password")) as intruder:
            why = await refusal(intruder.request("news"))
            print("intruder refused:", why)
            assert "authentication failed" in why and "wrong password" not in why

        async with await connect(server.url) as anonymous:
            why = await refusal(anonymous.request("news"))
            print("anonymous refused:", why)
            assert "authentication required" in why
    print("all checks passed")


if __name__ == "__main__":
    asyncio.run(main())
