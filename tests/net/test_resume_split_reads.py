"""A resumed client reads the server's answer and what follows it however the reads cut them
(PROTOCOL.md §16.3).

After ``resume`` the client reads the server's hello, then ``resumed``, then the replay and
new frames, which belong to the session. Reads cut that anywhere: inside the hello, inside
``resumed``, right after it, inside the first replayed frame; several reads may come before
the client acts on the answer, and the transport may end right after it. Whatever the cuts,
the subscriber gets every element once, in order, and the session is resumed.

On a virtual clock, through memory transports: the client's ``connect_endpoint`` makes a
memory pair with a real resumable server (``ResumeRegistry``); the first transport is cut
after a few elements, and the server's side of the second one delivers what it wrote in the
reads the case asks for.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import rstreams
import rstreams.net._resume as resume_module
from rstreams.net import Connection
from rstreams.net._pump import Pump
from rstreams.net._resume import Resume, ResumeRegistry, connect_resumable, resume_config
from rstreams.net._url import parse_url
from rstreams.wire._resume import RESUMED, hello_end
from testkit.net import MemoryTransport, run_virtual, session_of
from testkit.resume import SIZE, Collector

pytestmark = pytest.mark.timeout(60)

N = 24  # elements served
CUT = 8  # the first transport is cut once the client has this many
RESUME = Resume(backoff=0.5, stall_timeout=None, session_timeout=60.0)

# How the server's side of the second transport delivers what it wrote (a list of reads, each
# delivered at once, or each on its own loop turn): at each offset of these (the offsets of
# the transport's stream), a read ends.
Cuts = Callable[[int], list[int]]


class CuttingTransport(MemoryTransport):
    """A memory transport that delivers its bytes in the reads ``cuts`` asks for: everything
    written so far is joined and cut at the stream offsets ``cuts(total)`` lists (``total``: the
    bytes written so far); ``turns``: each read on its own loop turn, else all in one."""

    def __init__(self, handler: Any, cuts: Cuts, *, turns: bool, ends_after: int | None = None) -> None:
        super().__init__(handler)
        self.cuts = cuts
        self.turns = turns
        self.ends_after = ends_after  # abort the transport once this many bytes were delivered
        self.delivered = 0
        self.written = bytearray()
        self.scheduled = False  # one delivery waits on the loop at a time (a socket's one read)

    def writelines(self, chunks: list[bytes]) -> bool:
        if self.closing:
            return False
        data = b"".join(chunks)
        self.written += data
        self.buffer.append(data)
        self.size += len(data)
        self._schedule()
        return True

    def _schedule(self) -> None:
        if not self.scheduled:
            self.scheduled = True
            self.loop.call_soon(self.deliver)

    def gone(self) -> bool:
        return self.peer is None or self.peer.lost

    def deliver(self) -> None:
        self.scheduled = False
        peer = self.peer
        if peer is None or peer.lost or not self.buffer or not peer.reading:
            return
        data = b"".join(self.buffer)
        start = self.delivered
        ends = [c - start for c in self.cuts(start + len(data)) if start < c < start + len(data)]
        ends.append(len(data))
        if self.ends_after is not None and start < self.ends_after < start + len(data):
            ends = sorted({*ends, self.ends_after - start})
        pieces = [data[a:b] for a, b in zip([0, *ends], ends, strict=False)]
        if self.turns:
            pieces = pieces[:1]
        piece_bytes = sum(map(len, pieces))
        self.buffer = [data[piece_bytes:]] if piece_bytes < len(data) else []
        self.size -= piece_bytes
        for piece in pieces:
            if self.gone():
                return
            self.delivered += len(piece)
            peer.handler.data_received(memoryview(piece))
            if self.ends_after is not None and self.delivered >= self.ends_after:
                self.abort()
                return
        if self.buffer:
            self._schedule()


class Run:
    """One resumable client and server over memory transports (see the module docstring)."""

    def __init__(self, cuts: Cuts, *, turns: bool, ends_after: int | None = None) -> None:
        self.cuts, self.turns, self.ends_after = cuts, turns, ends_after
        self.transports: list[MemoryTransport] = []  # the client's ends, one per connect

    async def connect_endpoint(self, endpoint: Any, link: Any, **_: Any) -> None:
        server_link = self.registry.make_link()
        if len(self.transports) == 1:  # the resume: the server's side cuts its reads
            self.server_end = CuttingTransport(
                server_link, self.cuts, turns=self.turns, ends_after=self.ends_after
            )
            server_end: MemoryTransport = self.server_end
        else:
            server_end = MemoryTransport(server_link)
        client_end = MemoryTransport(link)
        client_end.peer, server_end.peer = server_end, client_end
        self.transports.append(client_end)
        link.connection_made(client_end)
        server_link.connection_made(server_end)

    async def main(self) -> tuple[list[int], bool, int]:
        def count(params: Any) -> rstreams.Flow[bytes]:
            return rstreams.range(N).map(lambda i: i.to_bytes(8, "big") * (SIZE // 8))

        def driver() -> Pump:
            return Pump(client=False, offer={"count": count}, config=resume_config(None))

        self.registry = ResumeRegistry(RESUME, driver, high=1 << 20, handshake_timeout=None)
        pump = Pump(client=True, config=resume_config(None))
        conn = Connection(pump)
        await connect_resumable(
            parse_url("tcp://127.0.0.1:1"), pump, RESUME, ssl=None, high=1 << 20, low=1 << 18
        )
        received = Collector(batch=8)
        conn.publisher("count").subscribe(received)
        await received.wait_items(CUT)
        self.transports[0].abort()  # the server had sent more: it is replayed
        await received.finished(30.0)
        session = session_of(conn)
        resumes = session.resumes if session is not None else -1
        await conn.aclose()
        return received.items, received.completed, resumes


def run(cuts: Cuts, *, turns: bool, ends_after: int | None = None) -> tuple[Run, list[int], bool, int]:
    case = Run(cuts, turns=turns, ends_after=ends_after)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(resume_module, "connect_endpoint", case.connect_endpoint)
        items, completed, resumes = run_virtual(case.main)
    return case, items, completed, resumes


def cut_at(offset: int) -> Cuts:
    """Two reads, the first ending at ``offset``."""
    return lambda total: [offset]


ANSWER = 16  # the server's hello and resumed end at or before this offset (checked below): a cut
# at every offset up to twice it crosses both, and the first frames of the session after them


def test_the_resume_reply_is_as_long_as_the_cases_assume() -> None:
    case, items, completed, resumes = run(lambda total: [], turns=False)
    assert (items, completed, resumes) == (list(range(N)), True, 1)
    written = case.server_end.written
    hello = hello_end(written)
    assert hello is not None
    assert written[hello] == RESUMED
    assert hello + 4 <= ANSWER  # resumed: its type, its length and a position of one or two bytes
    assert len(written) > 2 * ANSWER + SIZE  # the replay and new frames follow


@pytest.mark.parametrize("turns", [False, True], ids=["one-turn", "own-turns"])
def test_two_reads_cut_at_every_offset_of_the_answer_and_after(turns: bool) -> None:
    for offset in range(1, 2 * ANSWER):
        _, items, completed, resumes = run(cut_at(offset), turns=turns)
        assert (items, completed, resumes) == (list(range(N)), True, 1), f"cut at {offset}"


@pytest.mark.parametrize("turns", [False, True], ids=["one-turn", "own-turns"])
def test_one_byte_a_read(turns: bool) -> None:
    _, items, completed, resumes = run(lambda total: list(range(1, total)), turns=turns)
    assert (items, completed, resumes) == (list(range(N)), True, 1)


def test_the_answer_and_what_follows_it_then_the_end_of_the_transport_in_one_turn() -> None:
    """The transport ends right after the answer and some replayed bytes, before the client acted
    on the answer: the session resumes again on a third transport, nothing lost or repeated."""
    case, items, completed, resumes = run(
        lambda total: list(range(1, total)), turns=False, ends_after=2 * ANSWER
    )
    assert (items, completed, resumes) == (list(range(N)), True, 1)
    assert len(case.transports) == 3
