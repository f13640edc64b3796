"""RS.io over pipes: a child process serves publishers on its stdin/stdout.

Run it with ``python examples/rsio_subprocess.py``: the parent starts itself again with
``--child``; the child serves ``fib?n=N`` over its standard streams, and the parent
subscribes through the pipes. Nothing but the two pipes is used.

Neither end sets a handshake timer (``handshake_timeout=None``; the default is 10 s of wall
time): the child's start (an interpreter and the package's imports) takes what a busy machine
gives it, and waiting on a pipe cannot hang on a process that is gone. A child that fails
exits, its stdout ends and the parent's connection fails at once; a parent that is gone ends
the child's stdin just as well.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterator

import rstreams
from rstreams.net import connect_pipe


def fibonacci(n: int) -> Iterator[bytes]:
    a, b = 0, 1
    for _ in range(n):
        yield str(a).encode()
        a, b = b, a + b


async def child() -> None:
    offer = {"fib": lambda params: rstreams.from_iterable(fibonacci(int(params["n"])))}
    conn = await connect_pipe(0, 1, server=True, publishers=offer, handshake_timeout=None)  # stdin, stdout
    await conn.wait_closed()  # until the parent says goodbye


async def parent() -> None:
    read_fd, child_stdout = os.pipe()
    child_stdin, write_fd = os.pipe()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--child", stdin=child_stdin, stdout=child_stdout
    )
    os.close(child_stdin)
    os.close(child_stdout)
    conn = await connect_pipe(read_fd, write_fd, handshake_timeout=None)  # bounded by the child (above)
    numbers = [int(x) for x in await conn.publisher("fib?n=30").collect()]
    print("from the child process:", numbers)
    await conn.aclose()
    print("child exited with", await proc.wait())


if __name__ == "__main__":
    asyncio.run(child() if "--child" in sys.argv else parent())
