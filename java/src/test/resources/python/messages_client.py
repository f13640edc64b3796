"""A Python RS.io client that sends messages to a Java server and handles its answers (PROTOCOL.md §20).

    python messages_client.py URL

Sends ``to-java/click?x=7`` with body ``hi``, waits for the server's message to its handler
``from-java/{kind}``, prints ``reply NAME BODY KIND`` and exits 0 (1 after 20 s without one).
Then sends 100 messages to ``count`` (more than the server's credit: each send waits for
credit, §20.3) and prints ``sent 100``. MessagesInteropTest runs it against the Java server.
"""

from __future__ import annotations

import asyncio
import sys

from rstreams.net import Message, connect


async def main(url: str) -> int:
    replies: asyncio.Queue[Message] = asyncio.Queue()
    conn = await connect(url, handlers={"from-java/{kind}": replies.put_nowait})
    async with conn:
        await conn.send("to-java/click?x=7", b"hi")
        try:
            reply = await asyncio.wait_for(replies.get(), 20)
        except TimeoutError:
            print("no reply within 20 s", flush=True)
            return 1
        print(f"reply {reply.name} {reply.payload.decode()} {reply.params['kind']}", flush=True)
        for i in range(100):
            await conn.send("count", str(i).encode())
        print("sent 100", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
