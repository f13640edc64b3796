"""A Python RS.io server for the Java client's channels (PROTOCOL.md §21), for its interop.

    python channels_server.py URL [--without-channels] [--auth]

Serves the channel ``upper`` (each input element upper-cased) and the publisher ``counter``
(``0``, ``1``, ``2`` as UTF-8 text). With ``--without-channels`` its hellos list neither
extension channels (id 8) nor input-parts (id 9). With ``--auth`` it accepts the tokens
``writer`` and ``reader`` (the principal is the token), authorizes only ``writer``'s subscribes
(§15.4), and prints ``asked PRINCIPAL NAME KEY=VALUE,...`` (the subscribe's metadata, §18) for
each subscribe it is asked about. Prints ``serving counter on URL`` once it listens.
ChannelClientTest and ChannelAuthTest start it.
"""

from __future__ import annotations

import asyncio
import sys

import rstreams
from rstreams.api import Publisher
from rstreams.net import Credentials, Token, serve, subscribe_metadata
from rstreams.wire import ConnectionConfig


def authenticate(credentials: Credentials) -> str | None:
    if isinstance(credentials, Token) and credentials.token in ("writer", "reader"):
        return credentials.token
    return None


def authorize(principal: str | None, name: str) -> bool:
    metadata = subscribe_metadata()
    pairs = ",".join(f"{key}={metadata.text(key)}" for key in sorted(metadata))
    print(f"asked {principal} {name} {pairs}", flush=True)
    return principal == "writer"


async def main(url: str, without: bool, auth: bool) -> None:
    def upper(requests: Publisher[bytes], params: dict[str, str]) -> Publisher[bytes]:
        return rstreams.from_publisher(requests).map(bytes.upper)

    config = ConnectionConfig(disabled_extensions=frozenset({8, 9})) if without else None
    server = await serve(
        url,
        {"counter": rstreams.from_iterable([b"0", b"1", b"2"])},
        channels={"upper": upper},
        config=config,
        authenticate=authenticate if auth else None,
        authorize=authorize if auth else None,
    )
    async with server:
        print(f"serving counter on {server.url}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], "--without-channels" in sys.argv[2:], "--auth" in sys.argv[2:]))
