"""Fuzz the Java and JavaScript clients: any bytes, in any reads, from a server, to a real
client process.

fuzz_client.py's inputs and raw server, turned to the clients of the other bindings: one client
process (``FuzzClientMain`` of java/'s tests, or ``fuzz/polyglot_client.mjs`` in Node) is sent
one URL a line once it says ``ready``; for each, it connects, subscribes to ``numbers`` (demand
1) and ``stream`` (demand 4 at a time), the JavaScript one also sends a message, and it prints
one JSON line once every call has ended and the connection has closed. The raw server, on a loopback TCP port,
writes the input's reads (byte 0 bit 0 prepends a serverHello listing every extension; local
actions pause a moment, as the client is another process), reads what the client writes, ends
its output and waits for the client to close. Invariants, for each input:

* the client writes well-formed RS.io, at most one goodbye, and a goodbye of its own for a
  violation names its PROTOCOL.md section;
* it closes its side within ``WAIT`` of our end of input (a peer's end of input ends the
  connection, §9.3), and its line comes within ``WAIT`` of our close: every call ended;
* each call ended with its value or one of the binding's stream errors (``ALLOWED``), never
  another exception;
* the process stays alive and writes nothing to stderr (where the Java client's Netty logs an
  exception that reached the end of its pipeline; an unhandled rejection ends the Node one).

A client that died or hung is started again, so a campaign goes on past it.

Run::

    .venv/bin/python fuzz/fuzz_polyglot_client.py {java,js} --pure 100000 [SEED [SECONDS]]
    .venv/bin/python fuzz/fuzz_polyglot_client.py {java,js} --replay HEX
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import functools
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_client
import fuzz_connection as wire_harness  # (this directory, put on the path above)
import fuzz_net
import fuzz_polyglot

from testkit.bound import WAIT, Bound, within  # (tests/, put on the path by fuzz_net)

HERE = Path(__file__).resolve().parent
ACT_PAUSE = 0.002
"""At an input's local action the raw server waits this long (the client answers what came)."""
ALLOWED = {
    "java": {"RemoteStreamException", "ConnectionClosedException"},
    "js": {
        "RemoteStreamError",
        "ConnectionClosedError",
        "ProtocolError",
        "MessageCreditError",
        "ExtensionNotOfferedError",
    },
}
"""The errors a call may end with on bad input, by the name of their class (the JavaScript
ProtocolError's message names its section: checked)."""
NOT_ELEMENT = "completed without an element"
"""How the JavaScript request() says an answer had no element (a RangeError, like Python's LookupError)."""


def allowed(mode: str, name: str, message: str) -> bool:
    """Whether a call of ``mode``'s client may end with this error on bad input."""
    if mode == "js" and name == "RangeError":
        return NOT_ELEMENT in message
    return name in ALLOWED[mode]


def unavailable(mode: str) -> str | None:
    """Why ``mode``'s client cannot run here (None: it can)."""
    return fuzz_polyglot.unavailable(mode)


def client_command(mode: str) -> list[str]:
    """The command that starts ``mode``'s client (Maven compiles java/ once per process)."""
    return list(_command(mode))


@functools.cache
def _command(mode: str) -> tuple[str, ...]:
    if mode == "java":
        return ("java", "-cp", fuzz_polyglot.java_classpath(), "io.rstreams.conformance.FuzzClientMain")
    return ("node", str(HERE / "polyglot_client.mjs"))


class ClientTarget(fuzz_polyglot.ChildProcess):
    """One client process of ``mode``, fed a URL per input; its failures per input."""

    def __init__(self, mode: str, command: list[str]) -> None:
        super().__init__(command, "client", stdin=True)
        self.mode = mode
        self.failures: list[tuple[str, str]] = []
        self.outcomes: collections.Counter[str] = collections.Counter()
        """How the calls ended, by error and message (numbers left out): a campaign's reach."""

    async def start(self) -> None:
        """Start the client and wait for its ``ready`` line."""
        await self.spawn(b"ready\n")

    @contextlib.asynccontextmanager
    async def running(self) -> Any:
        await self.start()
        try:
            yield self
        finally:
            await self.stop()

    async def recover(self) -> None:
        """After a failed input: a dead or hung client is started again."""
        if self.process.returncode is not None or self.hung:
            await self.restart()

    def _record(self, what: str, detail: object) -> None:
        self.failures.append((what, str(detail)))

    async def run(self, data: bytes) -> list[tuple[str, str]]:
        """One input: a raw server for it, the client's line for it, the checks."""
        self.failures = []
        self.hung = False
        head, _, chunks = wire_harness.parse_input(data) if data else (0, 0, [])
        if head & 1:
            chunks.insert(0, fuzz_client.HELLO)
        connected = asyncio.Event()
        served: list[asyncio.Task[None]] = []

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            if connected.is_set():
                self._record("invariant", "the client connected twice")
                writer.close()
                return
            connected.set()
            served.append(asyncio.current_task())  # type: ignore[arg-type]  # (a connection handler's task)
            await self.converse(reader, writer, chunks)

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        try:
            port = server.sockets[0].getsockname()[1]
            assert self.process.stdin is not None and self.process.stdout is not None
            self.process.stdin.write(f"tcp://127.0.0.1:{port}\n".encode())
            await self.process.stdin.drain()
            line_read = asyncio.ensure_future(self.process.stdout.readline())
            try:
                awaited = self.awaited()
                await within(connected.wait(), WAIT, awaited)
                await within(asyncio.shield(served[0]), WAIT * 3, awaited)
                line = await within(line_read, WAIT, awaited)
            except TimeoutError:
                line_read.cancel()
                self.hung = True
                self._record("hang", "the client's calls did not end within their bound after our close")
            else:
                self.check_line(line)
        finally:
            for task in served:
                task.cancel()
            server.close()
            await server.wait_closed()
        await asyncio.sleep(0.01)  # (what the client logs about this input reaches stderr)
        if self.process.stdout.at_eof():  # (it exits: wait for its status)
            with contextlib.suppress(TimeoutError):
                await within(self.process.wait(), WAIT, self.awaited())
        if logged := self.logged():
            self._record("the client logged", logged[-2000:])
        if self.process.returncode is not None:
            self._record("crash", f"the client exited with status {self.process.returncode}")
        return self.failures

    async def converse(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, chunks: list[wire_harness.Chunk]
    ) -> None:
        """Write ``chunks`` one turn apart, end our output, wait for the client's end, close."""
        peer = fuzz_net._Peer(reader)
        peer.answering = fuzz_net._says_goodbye(chunks)
        peer.go.set()
        reading = asyncio.create_task(peer.read_all())
        try:
            for chunk in chunks:
                if reading.done():
                    break
                if chunk == wire_harness.ACT:
                    await asyncio.sleep(ACT_PAUSE)
                    continue
                if chunk == wire_harness.EOF:
                    break
                assert isinstance(chunk, bytes)
                writer.write(chunk)
                await within(writer.drain(), WAIT, self.awaited())
                await asyncio.sleep(0)
            if not reading.done():
                writer.write_eof()
            with contextlib.suppress(TimeoutError):
                async with Bound(WAIT, self.awaited()):
                    await asyncio.wait({reading})
            if not reading.done():
                self._record(
                    "hang", "the client did not close within its bound after our end of input (§9.3)"
                )
        except TimeoutError:
            self._record("hang", "the client did not read its input")
        except OSError:
            pass  # the client closed first
        finally:
            writer.close()
            reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reading
        try:
            peer.cut = True  # (we may stop reading inside a frame)
            peer.check()
        except AssertionError as error:
            self._record("invariant", str(error).replace("the server", "the client"))

    def check_line(self, line: bytes) -> None:
        if not line:
            self._record("crash", "the client's output ended")
            return
        report = json.loads(line)
        calls = report.get("calls", [])
        if "connect" in report:
            self._record("invariant", f"connect failed: {report['connect']}")
        for outcome in calls:
            if outcome.get("ok"):
                continue
            name, message = outcome["name"], outcome["message"]
            self.outcomes[re.sub(r"\d+", "N", f"{name}: {message}")[:120]] += 1
            if not allowed(self.mode, name, message):
                self._record("crash", f"a call ended with {name}: {message}")
            elif name == "ProtocolError" and "PROTOCOL.md §" not in message:
                self._record("unhelpful error", f"{name}: {message} names no section")
        for reported in report.get("reported", []):
            if reported["name"] not in ALLOWED[self.mode] and "PROTOCOL.md §" not in reported["message"]:
                self._record("reported", f"{reported['name']}: {reported['message']}")


async def campaign(mode: str, runs: int, seed: int, seconds: float | None) -> tuple[int, int]:
    """``runs`` inputs (or as many as ``seconds`` allow) against one client process of ``mode``."""
    command = await asyncio.to_thread(client_command, mode)
    target = ClientTarget(mode, command)
    ran, failed = await fuzz_polyglot.campaign_on(target, runs, seed, seconds, fuzz_client._seeds())
    print(f"how calls ended: {len(target.outcomes)} ways, the most frequent:")
    for way, count in target.outcomes.most_common(25):
        print(f"{count:8} {way}")
    return ran, failed


async def replay(mode: str, *inputs: bytes) -> list[tuple[str, str]]:
    """``inputs``, one after the other, against one fresh client of ``mode``: their failures."""
    command = await asyncio.to_thread(client_command, mode)
    return await fuzz_polyglot.replay_on(ClientTarget(mode, command), inputs)


def main() -> None:
    """``MODE --pure N [SEED [SECONDS]]``: a campaign; ``MODE --replay HEX``: one input."""
    fuzz_polyglot.command_line("fuzz_polyglot_client.py", ("java", "js"), campaign, replay)


if __name__ == "__main__":
    main()
