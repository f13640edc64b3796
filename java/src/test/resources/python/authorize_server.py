"""A Python RS.io server that checks tokens and authorizes each subscribe (PROTOCOL.md §15.4).

    python authorize_server.py URL TOKEN ROOT

Accepts the tokens TOKEN and ROOT (the principal is the token); serves the built-in ``counter``
to both, and ``vault`` (a counter too) to ROOT only. Prints ``serving counter on URL`` once it
listens, and one line ``asked PRINCIPAL NAME`` for each subscribe it authorizes. The Java tests
start it (SubscribeCredentialsTest): their per-subscribe credentials are checked here instead
of the connection's.
"""

from __future__ import annotations

import asyncio
import sys

from rstreams._cli_publishers import builtin_publishers
from rstreams.net import Credentials, Token, serve


async def main(url: str, token: str, root: str) -> None:
    def authenticate(credentials: Credentials) -> str | None:
        if isinstance(credentials, Token) and credentials.token in (token, root):
            return credentials.token
        return None

    def authorize(principal: str | None, name: str) -> bool:
        print(f"asked {'root' if principal == root else 'token'} {name}", flush=True)
        return not name.startswith("vault") or principal == root

    publishers = builtin_publishers("utf8")
    publishers["vault"] = publishers["counter"]
    server = await serve(url, publishers, authenticate=authenticate, authorize=authorize)
    print(f"serving counter on {server.url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
