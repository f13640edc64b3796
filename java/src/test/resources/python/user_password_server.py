"""A Python RS.io server that requires a user name and password (credentials kind 2, PROTOCOL.md §15.1).

    python user_password_server.py URL USER PASSWORD

Serves the built-in publishers of ``rstreams serve`` (``counter`` ...) to clients presenting
exactly USER and PASSWORD; prints ``serving counter on URL`` once it listens. The Java tests
start it (PythonServerTest): ``rstreams serve`` itself takes only a token.
"""

from __future__ import annotations

import asyncio
import hmac
import sys

from rstreams._cli_publishers import builtin_publishers
from rstreams.net import Credentials, UserPassword, serve


async def main(url: str, user: str, password: str) -> None:
    def authenticate(credentials: Credentials) -> str | None:
        if (
            isinstance(credentials, UserPassword)
            and credentials.user == user
            and hmac.compare_digest(credentials.password.encode(), password.encode())
        ):
            return user
        return None

    server = await serve(url, builtin_publishers("utf8"), authenticate=authenticate)
    print(f"serving counter on {server.url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
