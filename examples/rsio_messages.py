"""Fire-and-forget messages both ways (PROTOCOL.md §20): ``python examples/rsio_messages.py``.

* The server offers handlers by name or ``{field}`` pattern, like publishers. A handler gets
  a :class:`~rstreams.net.Message` (name, params, payload); it may be a coroutine function,
  and then the message's *credit* is held until it returns.
* ``await conn.send(name, payload)`` returns once the message is on its way. The receiver
  grants a fixed number of messages in flight (``max_messages_in_flight``, here 4): a
  sender ahead of a slow handler waits instead of filling a queue, or, with
  ``wait=False``, gets ``MessageCreditError`` at once.
* The client may offer handlers too: the server sends it a message back.

It exits 0 when every check holds.
"""

from __future__ import annotations

import asyncio

from rstreams.net import Connection, Message, MessageCreditError, connect, serve
from rstreams.wire import ConnectionConfig


async def main() -> None:
    clicks: list[str] = []
    busy = asyncio.Event()

    def on_click(message: Message) -> None:  # sync: its credit comes back as soon as it returns
        clicks.append(f"{message.params['kind']}:{message.payload.decode()}")

    async def on_slow(message: Message) -> None:  # async: holds its credit until done
        await busy.wait()

    replies: asyncio.Queue[bytes] = asyncio.Queue()
    connections: asyncio.Queue[Connection] = asyncio.Queue()
    server = await serve(
        "tcp://127.0.0.1:0",
        {},
        handlers={"events/{kind}": on_click, "slow": on_slow},
        config=ConnectionConfig(max_messages_in_flight=4),
        on_connection=connections.put_nowait,
    )
    client_handlers = {"notify": lambda message: replies.put_nowait(message.payload)}
    async with server, await connect(server.url, handlers=client_handlers) as conn:
        for n in range(3):
            await conn.send("events/click", str(n).encode())
        await conn.send("events/key", b"q")

        for _ in range(4):  # the whole credit, held by the slow handler
            await conn.send("slow", b"")
        try:
            await conn.send("slow", b"", wait=False)
            raise AssertionError("a fifth message found credit")
        except MessageCreditError as error:
            print("out of credit:", str(error).split(":")[0])
        waiting = asyncio.ensure_future(conn.send("slow", b""))  # waits for a credit
        await asyncio.sleep(0.05)
        assert not waiting.done()
        busy.set()  # the handlers finish, their credit comes back, the waiting send goes out
        await asyncio.wait_for(waiting, 5)

        server_side = await connections.get()
        await server_side.send("notify", b"thanks")
        print("the client received:", (await asyncio.wait_for(replies.get(), 5)).decode())
    assert clicks == ["click:0", "click:1", "click:2", "key:q"], clicks
    print("the server handled:", ", ".join(clicks))


if __name__ == "__main__":
    asyncio.run(main())
