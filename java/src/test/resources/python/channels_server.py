"""A Python RS.io server for the Java client's channels (PROTOCOL.md §21), for its interop.

    python channels_server.py URL [--without-channels]

Serves the channel ``upper`` (each input element upper-cased) and the publisher ``counter``
(``0``, ``1``, ``2`` as UTF-8 text). With ``--without-channels`` its hellos list neither
extension channels (id 8) nor input-parts (id 9). Prints ``serving counter on URL`` once it
listens. ChannelClientTest starts it.
"""

from __future__ import annotations

import asyncio
import sys

import rstreams
from rstreams.net import serve
from rstreams.wire import ConnectionConfig


async def main(url: str, without: bool) -> None:
    def upper(requests: object, params: dict[str, str]) -> object:
        return rstreams.from_publisher(requests).map(bytes.upper)  # type: ignore[arg-type]

    config = ConnectionConfig(disabled_extensions=frozenset({8, 9})) if without else None
    server = await serve(
        url,
        {"counter": rstreams.from_iterable([b"0", b"1", b"2"])},
        channels={"upper": upper},
        config=config,
    )
    async with server:
        print(f"serving counter on {server.url}", flush=True)
        await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], "--without-channels" in sys.argv[2:]))
