"""A Python RS.io server with message handlers (PROTOCOL.md §20), for the Java client's interop.

    python messages_server.py URL

Handles ``to-python/{kind}``: prints ``got KIND BODY`` and answers, on every open connection,
with a message to the client's handler ``from-python/KIND?x=X`` (X: the message's ``x``
parameter, ``-`` without one) whose body is the received body upper-cased. Handles ``count``
by counting, slowly (each holds its credit for a moment, so a sender must wait for credit,
§20.3): the subscription ``counted`` gives the count so far as UTF-8 text. Prints
``serving counter on URL`` once it listens. MessagesInteropTest starts it.
"""

from __future__ import annotations

import asyncio
import sys

from rstreams import from_iterable
from rstreams.net import UTF8, Connection, Message, serve, with_codec


async def main(url: str) -> None:
    connections: set[Connection] = set()
    counted = 0

    async def to_python(message: Message) -> None:
        kind = message.params["kind"]
        print(f"got {kind} {message.payload.decode()}", flush=True)
        name = f"from-python/{kind}?x={message.params.get('x', '-')}"
        for conn in list(connections):
            await conn.send(name, message.payload.upper())

    async def count(message: Message) -> None:
        nonlocal counted
        await asyncio.sleep(0.001)
        counted += 1

    def counted_now(params: dict[str, str]) -> object:
        return from_iterable([str(counted)])

    server = await serve(
        url,
        {"counted": with_codec(counted_now, UTF8)},
        handlers={"to-python/{kind}": to_python, "count": count},
        on_connection=connections.add,
    )
    print(f"serving counted on {server.url}", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
