"""Fuzz the Java and the JavaScript servers: fuzz_net.py's inputs, over TCP, into a real process.

``MODE`` is ``java`` (``RsioServer``, run as ``io.rstreams.conformance.FuzzServerMain`` from
java/'s test classes, built by Maven here) or ``js`` (``listen()`` of @rstreams/rsio, run as
``node fuzz/polyglot_server.mjs``; js/node_modules from ``npm ci``). Each serves the names
fuzz_net's inputs use (``numbers``, ``big``, ``packed``; the JavaScript one also the message
handler ``log`` and the channel ``echo``) with fuzz_net's small limits, and subscribes to each
client's ``up``.

The input layout and the raw client are fuzz_net.py's (imported, not copied): byte 0 bit 0
prepends a clientHello listing every extension, bit 1 makes a lazy peer; each input's reads go
to a fresh TCP connection one loop turn apart, then the raw client ends its output. The
invariants are those fuzz_net can check from outside the server's process:

* the server writes well-formed RS.io, and a goodbye for a protocol error names its PROTOCOL.md
  section (fuzz_net's ``_Peer.check``);
* the connection ends within ``WAIT`` seconds of our end of input (a close, or a goodbye that
  waits for ours), and the server's output ends within ``WAIT`` of our close;
* the server process stays alive and writes nothing to stderr (where the Java server's Netty
  logs an exception that reached the end of its pipeline, and where the JavaScript server
  writes every error reported to its ``onerror``);
* a second, well-behaved client (the Python ``rstreams.connect``) completes a request/response
  after every ``LEGIT_EVERY`` inputs (against the JavaScript server it also sends a message and
  runs a channel whose input goes in parts), and after every failed input.

A server that died is started again, so a campaign goes on past it.

Run::

    .venv/bin/python fuzz/fuzz_polyglot.py {java,js} --pure 100000 [SEED [SECONDS]]
    .venv/bin/python fuzz/fuzz_polyglot.py {java,js} --replay HEX
"""

from __future__ import annotations

import abc
import asyncio
import collections
import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine, Iterable
from pathlib import Path
from typing import IO, Any, Protocol

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz_connection as wire_harness  # (this directory, put on the path above)
import fuzz_deployed
import fuzz_net
from fuzz_net import Reader, Target, Writer

import rstreams
from rstreams.errors import set_unhandled_error_hook
from rstreams.net import connect
from rstreams.wire import Goodbye, Request, Subscribe, encode
from testkit import patience  # (tests/, put on the path by fuzz_net)
from testkit.bound import WAIT, within

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
STARTUP = 120.0
"""Seconds a server (and Maven, for the Java one's classpath) may take to start."""
LEGIT_EVERY = 5
"""The well-behaved client's request/response runs after every this many inputs."""


def unavailable(mode: str) -> str | None:
    """Why ``mode``'s server cannot run here (None: it can)."""
    if mode.startswith("java"):
        if shutil.which("mvn") is None or shutil.which("java") is None:
            return "no mvn/java (JDK 17+ and Maven): the Java server needs them"
        return None
    if shutil.which("node") is None:
        return "no node (Node.js 20+): the JavaScript server needs it"
    if not (ROOT / "js" / "node_modules" / "ws").is_dir():
        return "js/node_modules is missing: run `npm ci` in js/"
    return None


def java_classpath() -> str:
    """java/'s test classes, classes and test-scope dependencies (compiled by Maven first)."""
    java = ROOT / "java"
    out = java / "target" / "fuzz-classpath.txt"
    patience.run(
        [
            "mvn", "-B", "-ntp", "-q", "-f", str(java / "pom.xml"), "test-compile",
            "dependency:build-classpath", f"-Dmdep.outputFile={out}", "-Dmdep.includeScope=test",
        ],
        STARTUP * 2,
        check=True,
        capture_output=True,
    )  # fmt: skip
    deps = out.read_text(encoding="utf-8").strip()
    return os.pathsep.join([str(java / "target" / "test-classes"), str(java / "target" / "classes"), deps])


def server_command(mode: str) -> list[str]:
    """The command that starts ``mode``'s server on a free TCP port of 127.0.0.1."""
    resume = ["--resume"] if mode.endswith("-resume") else []
    if mode.startswith("java"):
        main = "io.rstreams.conformance.FuzzServerMain"
        return ["java", "-cp", java_classpath(), main, "tcp://127.0.0.1:0", *resume]
    return ["node", str(HERE / "polyglot_server.mjs"), "tcp://127.0.0.1:0", *resume]


class Driven(Protocol):
    """What :func:`replay_on` drives: :class:`PolyglotTarget`, or fuzz_polyglot_client.py's
    ClientTarget."""

    role: str
    restarts: int

    def running(self) -> contextlib.AbstractAsyncContextManager[object]: ...

    async def run(self, data: bytes) -> list[tuple[str, str]]: ...

    async def recover(self) -> None: ...


class ChildProcess(abc.ABC):
    """A server or client of another binding, run as a process from the checkout: started, its
    first line of output awaited (bounded by ``STARTUP``), its stderr kept in a file that
    :meth:`logged` reads on from where it last stopped, and ended (terminated, or its stdin
    closed if it reads one; killed if it is not gone within ``WAIT``). Every wait on it is
    bounded by its own time and this loop's (``testkit.bound.Bound`` over :meth:`awaited`)."""

    def __init__(self, command: list[str], role: str, *, stdin: bool = False) -> None:
        self.command = command
        self.role = role
        """What the process is, in messages: ``server`` or ``client``."""
        self.stdin = stdin
        self.restarts = 0

    def awaited(self) -> tuple[int, ...]:
        """The process, whose threads' waits for a CPU a bound on it does not count."""
        return (self.process.pid,)

    async def spawn(self, ready: bytes) -> bytes:
        """Start the process; its first line, which must start with ``ready``."""
        self.stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115 (closed in stop())
        self.seen = 0
        self.process = await asyncio.create_subprocess_exec(
            *self.command,
            stdin=subprocess.PIPE if self.stdin else None,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=ROOT,
        )
        assert self.process.stdout is not None
        line = await within(self.process.stdout.readline(), STARTUP, self.awaited())
        if not line.startswith(ready):
            logged = self.logged()
            await self.stop()
            raise RuntimeError(f"{self.command[0]} {self.role} did not start: {line!r}, {logged!r}")
        self.logged()  # (what it wrote while starting is not a failure)
        return line

    @abc.abstractmethod
    async def start(self) -> None:
        """Start the process (with :meth:`spawn`) and read what its first line says."""

    async def stop(self) -> None:
        """End the process (if it still runs) and close its stderr file."""
        if self.process.returncode is None:
            if self.process.stdin is not None:
                self.process.stdin.close()
            else:
                self.process.terminate()
            try:
                await within(self.process.wait(), WAIT, self.awaited())
            except TimeoutError:
                self.process.kill()
                await self.process.wait()
        self.stderr.close()

    async def restart(self) -> None:
        """Kill the process (dead or hung) and start it again."""
        self.restarts += 1
        if self.process.returncode is None:
            self.process.kill()
            await self.process.wait()
        self.stderr.close()
        await self.start()

    def logged(self) -> str:
        """What the process wrote to stderr since the last call."""
        self.stderr.seek(self.seen)
        text = self.stderr.read()
        self.seen += len(text)
        return text.decode(errors="replace")


class PolyglotTarget(Target, ChildProcess):
    """A server of another language, run as a process; fuzz_net's raw client and checks."""

    act_pause = 0.002
    """At an input's local action the raw client waits this long: the server, in another
    process, answers what came so far before the next reads (e.g. onSubscribe before a request)."""

    def __init__(self, mode: str, command: list[str], every: int = LEGIT_EVERY) -> None:
        Target.__init__(self)
        ChildProcess.__init__(self, command, "server")
        self.mode = mode
        self.every = every
        self.inputs = 0
        self.reasons: collections.Counter[str] = collections.Counter()
        """The server's goodbyes, by reason (numbers left out)."""

    # -- the process -----------------------------------------------------------------------
    def awaited(self) -> tuple[int, ...]:
        return ChildProcess.awaited(self)  # (not Target's: the server is that process)

    async def start(self) -> None:
        """Start the server and wait for its ``serving on URL`` line."""
        line = await self.spawn(b"serving on ")
        self.url = line.decode().strip().rsplit(" ", 1)[1]
        self.host, _, port = self.url.removeprefix("tcp://").rpartition(":")
        self.port = int(port)
        assert self.process.stdout is not None
        self.stdout = asyncio.create_task(self.process.stdout.read())  # (drained until it ends)

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[PolyglotTarget]:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _, context: self._record("loop exception", context))
        previous = set_unhandled_error_hook(lambda error, where: self._record(f"unhandled in {where}", error))
        await self.start()
        try:
            self.legit = await self.connect_legit()
            yield self
        finally:
            with contextlib.suppress(Exception):
                await within(self.legit.aclose(), WAIT, self.awaited())
            await self.stop()
            set_unhandled_error_hook(previous)

    async def recover(self) -> None:
        """After a failed input: a dead server is started again, a closed legit client reconnected."""
        if self.process.returncode is not None:
            await self.restart()
            self.legit = await self.connect_legit()
        elif self.legit.closed:
            self.legit = await self.connect_legit()

    # -- fuzz_net's Target, from outside the server's process ---------------------------------
    async def connect_legit(self) -> rstreams.net.Connection:
        awaited = self.awaited()  # (connect's own handshake timer, wall time, off: the bound is ours)
        conn = await within(connect(self.url, handshake_timeout=None, **self.legit_options()), WAIT, awaited)
        await within(conn.request("numbers"), WAIT, awaited)
        return conn

    async def open_peer(self, head: int) -> tuple[Reader, Writer]:
        return await asyncio.open_connection(self.host, self.port)

    async def _run(self, data: bytes) -> None:
        head, self.byte1, chunks = wire_harness.parse_input(data) if data else (0, 0, [])
        self.inputs += 1
        try:
            await self.converse(head, self.prepare(head, chunks), 0)
        except AssertionError as error:  # (then the checks below still run)
            self._record("invariant", error)
        for goodbye in self.peer.goodbyes:  # (a campaign's reach: which rules its inputs broke)
            self.reasons[re.sub(r"\d+", "N", goodbye.reason)[:100]] += 1
        await asyncio.sleep(0.01)  # (what the server logs about this input reaches stderr)
        assert self.process.stdout is not None
        if self.stdout.done() or self.process.stdout.at_eof():  # its output ended: it is exiting
            with contextlib.suppress(TimeoutError):  # (its status comes a few loop turns later)
                await within(self.process.wait(), WAIT, self.awaited())
        if logged := self.logged():
            self._record("the server logged", logged[-2000:])
        assert self.process.returncode is None, f"the server exited with status {self.process.returncode}"
        if self.inputs % self.every == 0 or self.failures:
            await self._check_legit(self.inputs)

    async def _check_legit(self, salt: int) -> None:
        legit = self.legit
        assert not legit.closed, "the well-behaved client's connection closed"
        awaited = self.awaited()
        got = await fuzz_net.within(
            legit.request("numbers"), "the well-behaved client's request/response", WAIT, awaited
        )
        assert got == b"\x00", f"request/response answered {got!r}"
        if self.mode == "js" and salt % (self.every * 4) == 0:
            before = int(await within(legit.request("messages"), WAIT, awaited))
            await within(legit.send("log", b"still here"), WAIT, awaited)
            parts = [bytes(40_000), b"x"]  # larger than the split threshold: sent in parts
            out = await within(legit.channel("echo", rstreams.from_iterable(parts)).collect(), WAIT, awaited)
            assert out == [bytes(40_000), b"X"], "the channel's output"
            after = int(await within(legit.request("messages"), WAIT, awaited))
            assert after > before, "the message did not reach its handler"


def _seeds() -> list[bytes]:
    """fuzz_net's conversations, and core ones (the Java binding offers keepalive only): demand,
    cancels and reused ids on the server's publishers; the client's answers on ``up``, the
    server's subscription (elements, packed, split and interleaved, terminal signals)."""
    from rstreams.wire import (
        Cancel,
        ClientHello,
        OnComplete,
        OnError,
        OnNext,
        OnNextLastPart,
        OnNextPacked,
        OnNextPart,
        OnSubscribe,
    )
    from rstreams.wire.extensions import PING, PONG

    chunked, ext = fuzz_deployed.chunked, fuzz_deployed.ext
    core = encode(ClientHello(extensions=(1,)))
    up = 1  # (the server's one subscription: to the client's "up")
    return [
        *fuzz_net._seeds(),
        bytes((0, 0))
        + chunked(
            core,
            encode(Subscribe(publisher="numbers", subscriber=2, initial_demand=0)),
            encode(Request(subscriber=2, demand=3)),
            encode(Subscribe(publisher="packed", subscriber=3, initial_demand=5)),
            encode(Request(subscriber=3, demand=50)) + encode(Cancel(subscriber=3)),
            encode(Subscribe(publisher="packed", subscriber=3, initial_demand=1)),
            encode(Subscribe(publisher="big", subscriber=4, initial_demand=1)) + encode(Cancel(subscriber=4)),
            encode(Request(subscriber=4, demand=1)),
            encode(Goodbye(reason="bye")),
        ),
        bytes((0, 0))
        + chunked(
            core,
            encode(OnSubscribe(subscriber=up)),
            encode(OnNext(subscriber=up, element=b"a")) + encode(OnNext(subscriber=up, element=b"b")),
            encode(OnNextPart(subscriber=up, element_id=0, data=b"xx")),
            encode(OnNextLastPart(subscriber=up, element_id=0, data=b"yy")),
            encode(OnComplete(subscriber=up)),
        ),
        bytes((0, 0))
        + chunked(
            core,
            encode(OnSubscribe(subscriber=up, element_size=4)),
            encode(OnNextPacked(subscriber=up, count=2, elements=bytes(8))),
            ext(PING, bytes(8)) + ext(PONG, bytes(8)),
            encode(OnError(subscriber=up, error="boom")),
        ),
        bytes((0, 0))
        + chunked(
            core,
            encode(OnSubscribe(subscriber=up)),
            *(encode(OnNextPart(subscriber=up, element_id=k, data=bytes(20_000))) for k in range(3)),
            *(encode(OnNextLastPart(subscriber=up, element_id=k, data=b"z")) for k in (2, 0, 1)),
            encode(Request(subscriber=9, demand=1)) + encode(Cancel(subscriber=9)),
        ),
        bytes((1, 0))
        + chunked(
            encode(Subscribe(publisher="packed", subscriber=7, initial_demand=10)),
            encode(Request(subscriber=7, demand=200)),
        ),
    ]


class ResumeTarget(fuzz_deployed.ResumeTarget, PolyglotTarget):
    """fuzz_deployed's resume mode (a second transport that resumes the first's session, garbage
    resumes, resumes at the wrong time) against a server process that keeps sessions for 0.5 s."""


MODES: dict[str, tuple[type[PolyglotTarget], Callable[[], list[bytes]]]] = {
    "java": (PolyglotTarget, _seeds),
    "js": (PolyglotTarget, _seeds),
    "java-resume": (ResumeTarget, fuzz_deployed._resume_seeds),
    "js-resume": (ResumeTarget, fuzz_deployed._resume_seeds),
}
"""Each mode's target and seeds."""


async def campaign(mode: str, runs: int, seed: int, seconds: float | None) -> tuple[int, int]:
    """``runs`` inputs (or as many as ``seconds`` allow) against one server process of ``mode``."""
    command = await asyncio.to_thread(server_command, mode)
    kind, seeds = MODES[mode]
    target = kind(mode, command)
    ran, failed = await campaign_on(target, runs, seed, seconds, seeds())
    print(f"the server's goodbyes: {len(target.reasons)} reasons, the most frequent:")
    for reason, count in target.reasons.most_common(25):
        print(f"{count:8} {reason}")
    return ran, failed


async def replay(mode: str, *inputs: bytes) -> list[tuple[str, str]]:
    """``inputs``, one after the other, against one fresh server of ``mode``: their failures."""
    command = await asyncio.to_thread(server_command, mode)
    return await replay_on(MODES[mode][0](mode, command, every=1), inputs)


async def campaign_on(
    target: Driven, runs: int, seed: int, seconds: float | None, seeds: list[bytes]
) -> tuple[int, int]:
    """fuzz_net's loop of ``runs`` inputs (or as many as ``seconds`` allow) against ``target`` (a
    server's or, in fuzz_polyglot_client.py, a client's), started here: how many ran and failed."""
    async with target.running():
        ran, failed = await fuzz_net.pure_loop(runs, seed, seconds, seeds, target.run, target.recover)
    if target.restarts:
        print(f"the {target.role} was started again {target.restarts} times")
    return ran, failed


async def replay_on(target: Driven, inputs: Iterable[bytes]) -> list[tuple[str, str]]:
    """``inputs``, one after the other, against ``target`` (a server's or, in
    fuzz_polyglot_client.py, a client's), started here: their failures, each naming its input.
    After a failed input the target recovers (a dead process is started again)."""
    failures: list[tuple[str, str]] = []
    async with target.running():
        for data in inputs:
            found = await target.run(data)
            failures += [(what, f"{detail}, input {data.hex()}") for what, detail in found]
            if found:
                await target.recover()
    return failures


def command_line(
    script: str,
    modes: Iterable[str],
    campaign: Callable[[str, int, int, float | None], Coroutine[Any, Any, tuple[int, int]]],
    replay: Callable[[str, bytes], Coroutine[Any, Any, list[tuple[str, str]]]],
) -> None:
    """Both polyglot drivers' ``main``: ``MODE --pure N [SEED [SECONDS]]`` runs ``campaign``,
    ``MODE --replay HEX`` runs ``replay`` on one input (fuzz_net's command line, after the mode)."""
    logging.getLogger("rstreams").setLevel(logging.ERROR)
    modes = tuple(modes)
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        sys.exit(f"usage: {script} {{{','.join(modes)}}} --pure N [SEED [SECONDS]] | --replay HEX")
    mode = sys.argv.pop(1)
    if why := unavailable(mode):
        sys.exit(why)

    async def run_campaign(runs: int, seed: int, seconds: float | None) -> tuple[int, int]:
        return await campaign(mode, runs, seed, seconds)

    async def run_replay(data: bytes) -> list[tuple[str, str]]:
        return await replay(mode, data)

    fuzz_net.command_line(run_campaign, run_replay)


def main() -> None:
    """``MODE --pure N [SEED [SECONDS]]``: a campaign; ``MODE --replay HEX``: one input."""
    command_line("fuzz_polyglot.py", MODES, campaign, replay)


if __name__ == "__main__":
    main()
