"""A resuming client fails its session at once on an answer to its resume that breaks §16
(PROTOCOL.md §16.2, §16.6): a malformed or unexpected answer is the server's protocol violation,
and the same server would give it again, so another attempt would only repeat it until the
attempts were used up (8 of them and about 7 s of backoff by default). The client closes that
transport without a word and makes no other attempt; the session's error names the fault in the
words the Java and JavaScript clients use too (their GoodbyeTextsTest and goodbye-texts.test.mjs
compare theirs with rstreams', byte for byte, for every fault). Against a server played by hand
over TCP.
"""

from __future__ import annotations

import asyncio

import pytest

from rstreams.errors import ConnectionBrokenError
from rstreams.net import Resume, connect
from rstreams.wire import ClientHello, ServerHello, encode
from rstreams.wire._resume import RESUME_ACK, RESUME_TOKEN, RESUMED, encode_message
from testkit.bound import within
from testkit.resume import Collector

pytestmark = [pytest.mark.asyncio, pytest.mark.timeout(60)]

HELLO = encode(ServerHello(extensions=(3,)))
QUICK = Resume(attempts=4, backoff=0.01, max_backoff=0.01, attempt_timeout=2.0)
"""Attempts that would follow one another at once: a client that tried again would be seen to."""

ANSWERS = {
    "a byte after the resumed position": (
        HELLO + encode_message(RESUMED, b"\x00\x00"),
        "resumed: 1 byte(s) after the position (PROTOCOL.md §16.2)",
    ),
    "a resumeAck in place of the answer": (
        HELLO + encode_message(RESUME_ACK, b"\x00"),
        "expected resumed or resumeRefused, got type 0x8c (PROTOCOL.md §16.3)",
    ),
    "a clientHello in place of the serverHello": (
        encode(ClientHello()),
        "expected a hello of type 0x02, got type 0x01 (PROTOCOL.md §16.3)",
    ),
    "a resumed payload above 256 bytes": (
        HELLO + b"\x8a\x81\x02",
        "message 0x8a announces a 257-byte payload; at most 256 in the resume exchange (PROTOCOL.md §16.7)",
    ),
}


class Server:
    """Plays the server: the first transport gets its hello and the token, then breaks once the
    client spoke; every later one gets ``answer`` to its resume, and what the client sent on it,
    to its end, is kept."""

    def __init__(self, answer: bytes) -> None:
        self.answer = answer
        self.accepted = 0
        self.resumes: list[bytes] = []
        self.answered = asyncio.Event()  # a transport that got the answer has ended

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        if self.accepted == 1:
            writer.write(HELLO + encode_message(RESUME_TOKEN, bytes(range(16))))
            await reader.read(1)  # the client's hello: it is up; then the transport breaks
            writer.transport.abort()
            return
        resume = await reader.read(1 << 16)
        writer.write(self.answer)
        self.resumes.append(resume + await reader.read())  # until the client closes
        writer.close()
        self.answered.set()


@pytest.mark.parametrize("what", ANSWERS)
async def test_a_malformed_answer_to_resume_fails_the_session_at_once(what: str) -> None:
    answer, reason = ANSWERS[what]
    played = Server(answer)
    server = await asyncio.start_server(played.serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        client = await connect(f"tcp://127.0.0.1:{port}", resume=QUICK)
        received = Collector(pattern=False)
        client.publisher("x").subscribe(received)
        await received.finished()
        await within(client.wait_closed())
        await within(played.answered.wait())
    error = received.error
    assert isinstance(error, ConnectionBrokenError)
    assert str(error.__cause__) == f"the session could not be resumed: {reason}"
    assert played.accepted == 2  # the first transport and one attempt, no other
    (sent,) = played.resumes
    assert sent[0] == 0x89 and sent[1] == len(sent) - 2  # the resume, then nothing: no goodbye
