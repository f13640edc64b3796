"""A pipe whose other end exits before its hello: the error says where to look (the process),
not which URL scheme to try, as a tcp:// or unix:// client's does."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import pytest

from rstreams.net import connect_pipe
from rstreams.net._closing import NOT_RSIO_HINT, PIPE_ENDED_HINT
from rstreams.net._transport import EndedBeforeHelloError
from testkit import patience
from testkit.bound import within

pytestmark = pytest.mark.timeout(60)


def test_a_child_that_exits_before_its_hello_is_named_as_a_process() -> None:
    async def main(child: subprocess.Popen[bytes]) -> BaseException:
        assert child.stdout is not None and child.stdin is not None
        conn = await connect_pipe(child.stdout, child.stdin, handshake_timeout=None)
        with pytest.raises(EndedBeforeHelloError) as ended:
            await within(conn.request("anything"))
        await within(conn.aclose())
        return ended.value

    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.exit(3)"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        message = str(asyncio.run(main(child)))
    finally:
        patience.stop_child(child)
    assert message.endswith(f"before its hello; {PIPE_ENDED_HINT}"), message
    assert NOT_RSIO_HINT not in message and "tcp://" not in message
    assert child.returncode == 3
