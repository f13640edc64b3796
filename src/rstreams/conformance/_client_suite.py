"""The client suite's machinery: the case registry, the scripted server, the adapter process.

:mod:`rstreams.conformance.clients` is the public face (command line and :func:`run_clients`)
and explains the suite; :mod:`rstreams.conformance._client_cases` holds the cases. Here:
:class:`Server` (one accepted connection, read and written by hand, every frame of the client
checked by a monitor), the adapter process (its command, output and exit), and the loop that
runs one case: listen, start the adapter, play the server's part, judge.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import json
import shlex
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from rstreams.conformance._runner import CaseResult, Outcome
from rstreams.conformance._transport import RawListener, RawTransport
from rstreams.demand import UNBOUNDED, add
from rstreams.errors import ReactiveStreamsError
from rstreams.wire import (
    Cancel,
    ClientHello,
    Frame,
    FrameParser,
    Goodbye,
    OnSubscribe,
    Request,
    ServerHello,
    Subscribe,
    encode,
)
from rstreams.wire.events import Answer, OnNextBatch

__all__ = [
    "CLIENT_CASES",
    "ClientCase",
    "ClientFailure",
    "ClientSkip",
    "Options",
    "Server",
    "client_case",
    "expect",
    "run_client_case",
    "run_clients",
]


F = TypeVar("F")


class ClientFailure(ReactiveStreamsError, AssertionError):
    """The client (or its adapter) did not do what the case's rule requires."""


class ClientSkip(ReactiveStreamsError):
    """The case does not apply to this client (it does not offer an optional extension)."""


def expect(condition: object, message: str) -> None:
    """Fail the case with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ClientFailure(message)


@dataclass(frozen=True, slots=True)
class ClientCase:
    """One client case: the adapter's ``script`` and the server's part (``fn``)."""

    id: str
    cite: str
    text: str
    script: str
    fn: Callable[[Server], Awaitable[None]]

    @property
    def area(self) -> str:
        """Every client case is in the ``client`` area."""
        return "client"


CLIENT_CASES: list[ClientCase] = []
"""Every client case, in registration order."""


def client_case(
    case_id: str, cite: str, text: str, script: str
) -> Callable[[Callable[[Server], Awaitable[None]]], Callable[[Server], Awaitable[None]]]:
    """Register the decorated coroutine function as the server's part of a client case."""
    if any(c.id == case_id for c in CLIENT_CASES):
        raise ValueError(f"duplicate client case id {case_id!r}")

    def register(fn: Callable[[Server], Awaitable[None]]) -> Callable[[Server], Awaitable[None]]:
        CLIENT_CASES.append(ClientCase(case_id, cite, text, script, fn))
        return fn

    return register


@dataclass(kw_only=True)
class _ClientMonitor:
    """Checks every frame the client sends; records violations with their section."""

    violations: list[str] = field(default_factory=list)
    hello: ClientHello | None = None
    goodbye: Goodbye | None = None
    open_ids: set[int] = field(default_factory=set)
    demand: dict[int, int] = field(default_factory=dict)

    def saw(self, frame: Frame) -> None:
        if self.goodbye is not None:
            self.violations.append(f"§9.1: the client sent {type(frame).__name__} after its goodbye")
            return
        if self.hello is None:
            if not isinstance(frame, ClientHello):
                self.violations.append(f"§4.1: the client's first message was {type(frame).__name__}")
            else:
                self.hello = frame
            return
        if isinstance(frame, ClientHello):
            self.violations.append("§4.1: the client sent a second clientHello")
        elif isinstance(frame, Goodbye):
            self.goodbye = frame
        elif isinstance(frame, Subscribe):
            if frame.subscriber in self.open_ids:
                self.violations.append(f"§5.3: subscribe reuses the open id {frame.subscriber}")
            self.open_ids.add(frame.subscriber)
            self.demand[frame.subscriber] = frame.initial_demand
        elif isinstance(frame, Request):
            if frame.subscriber not in self.demand:
                self.violations.append(f"§5.2: request for id {frame.subscriber}, never subscribed")
            elif not 0 < frame.demand < 2**63:
                self.violations.append(f"§6.2: request({frame.demand}) on id {frame.subscriber}")
            else:
                self.demand[frame.subscriber] = add(self.demand[frame.subscriber], frame.demand)
        elif isinstance(frame, Cancel) and frame.subscriber not in self.demand:
            self.violations.append(f"§5.2: cancel for id {frame.subscriber}, never subscribed")


class Server:
    """The server's side of one client case: one accepted connection, read and written by hand."""

    def __init__(self, link: RawTransport, adapter: _Adapter, *, timeout: float, quiet: float) -> None:
        self.link = link
        self.adapter = adapter
        self.timeout = timeout
        self.quiet = quiet
        self.monitor = _ClientMonitor()
        self.eof = False
        self._parser = FrameParser(max_element_size=1 << 24, max_string_length=1 << 16, max_extensions=256)
        self._pending: deque[Frame] = deque()

    # -- sending ---------------------------------------------------------------------------
    async def send(self, *items: Frame | bytes) -> None:
        """Frames and raw bytes, concatenated, in one write."""
        await self.link.write(b"".join(i if isinstance(i, bytes) else encode(i) for i in items))

    # -- reading ---------------------------------------------------------------------------
    async def frame(self, what: str = "a frame", timeout: float | None = None) -> Frame | None:  # noqa: ASYNC109
        """The client's next frame (``None`` at the end of its input); fails after the deadline."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (self.timeout if timeout is None else timeout)
        while not self._pending:
            if self.eof:
                return None
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise ClientFailure(f"timed out waiting for {what} from the client")
            try:
                data = await asyncio.wait_for(self.link.read(), remaining)
            except TimeoutError:
                raise ClientFailure(f"timed out waiting for {what} from the client") from None
            if not data:
                self.eof = True
                continue
            for frame in self._parser.feed(data):
                assert not isinstance(frame, OnNextBatch | Answer | tuple)  # a parser of its own: frames only
                self.monitor.saw(frame)
                self._pending.append(frame)
            if self._parser.error is not None:
                raise ClientFailure(f"the client sent malformed bytes: {self._parser.error}")
        return self._pending.popleft()

    async def expect(self, kind: type[F], what: str = "") -> F:
        """The next frame, which must be a ``kind``."""
        frame = await self.frame(what or kind.__name__)
        if not isinstance(frame, kind):
            raise ClientFailure(f"expected {what or kind.__name__}, got {_describe(frame)}")
        return frame

    async def handshake(self, extensions: tuple[int, ...] = ()) -> Subscribe:
        """Read the clientHello, answer with a serverHello, and return the client's subscribe."""
        hello = await self.expect(ClientHello, "the clientHello")
        expect(hello.version == 0, f"§4.2: the client's hello has version {hello.version}, expected 0")
        offered = tuple(x for x in extensions if x in hello.extensions)
        await self.send(ServerHello(extensions=offered))
        subscribe = await self.expect(Subscribe, "the subscribe")
        expect(
            subscribe.publisher == self.adapter.publisher,
            f"the client subscribed to {subscribe.publisher!r}, not {self.adapter.publisher!r}",
        )
        return subscribe

    async def open_stream(self, demand: int, *, element_size: int = 0) -> int:
        """Handshake, answer the subscribe with onSubscribe, and wait for ``demand``; the id."""
        subscriber = (await self.handshake()).subscriber
        await self.send(OnSubscribe(subscriber=subscriber, element_size=element_size))
        await self.demand_at_least(subscriber, demand)
        return subscriber

    async def demand_at_least(self, subscriber: int, n: int) -> int:
        """Read the client's frames until it has granted ``n`` in all; the total granted."""
        while self.monitor.demand.get(subscriber, 0) < n:
            frame = await self.frame(
                f"requests adding up to {n} (so far {self.monitor.demand.get(subscriber, 0)})"
            )
            expect(
                frame is not None,
                f"the client closed after granting {self.monitor.demand.get(subscriber, 0)} of {n}",
            )
            expect(not isinstance(frame, Cancel | Goodbye), f"expected requests, got {_describe(frame)}")
        return self.monitor.demand[subscriber]

    async def nothing_more(self, subscriber: int, granted: int) -> None:
        """Watch the quiet window: the client must not grant beyond ``granted`` on ``subscriber``."""
        with contextlib.suppress(ClientFailure):
            while True:
                frame = await self.frame("nothing", timeout=self.quiet)
                if frame is None:
                    return
        total = self.monitor.demand.get(subscriber, 0)
        expect(
            total <= granted or total == UNBOUNDED, f"the client granted {total}, the script only {granted}"
        )

    async def finish(self) -> _Adapter:
        """Let the adapter finish its script: answer its goodbye, see its input end, collect its output.

        Frames the client sends meanwhile are checked by the monitor; a goodbye is answered
        with a goodbye (§9.1). A goodbye the case already read (an error goodbye, or the answer
        to ours) ends our side at once, as a server does once it has read it: over WebSocket,
        which cannot half-close, the client waits for our close (§10), its 2 s linger otherwise.
        Returns the adapter, whose events the case then checks.
        """
        if self.monitor.goodbye is not None and not any(isinstance(f, Goodbye) for f in self._pending):
            await self.link.write_eof()  # what it still sent before our close is read and checked below
            while await self.frame("the end of the client's input") is not None:
                pass
        while not self.eof:
            frame = await self.frame("the client's goodbye or the end of its input")
            if isinstance(frame, Goodbye):
                await self.send(Goodbye())
                await self.link.write_eof()
                break
        else:  # its input ended without a goodbye: end ours, as a server does, so it need not linger
            await self.link.write_eof()
        await self.adapter.finish(self.timeout)
        return self.adapter

    async def closed_with_goodbye(self, what: str) -> Goodbye:
        """The client must answer with a goodbye (and then end its output)."""
        while True:
            frame = await self.frame(f"a goodbye ({what})")
            expect(frame is not None, f"the client closed without a goodbye ({what})")
            if isinstance(frame, Goodbye):
                return frame


def _describe(frame: Frame | None) -> str:
    return "the end of the client's input" if frame is None else repr(frame)[:200]


class _Adapter:
    """The client's adapter process: its command, output lines and exit."""

    def __init__(self, command: str, url: str, publisher: str, script: str) -> None:
        self.argv = [
            part.format(url=url, publisher=publisher, script=script) for part in shlex.split(command)
        ]
        self.publisher = publisher
        self.events: list[dict[str, Any]] = []
        self.process: asyncio.subprocess.Process | None = None
        self.stderr = b""

    async def start(self) -> asyncio.subprocess.Process:
        self.process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        return self.process

    async def finish(self, timeout: float) -> None:  # noqa: ASYNC109
        """Wait for the adapter to exit and collect its output; kill it past ``timeout``."""
        process = self.process
        assert process is not None
        try:
            out, self.stderr = await asyncio.wait_for(process.communicate(), timeout)
        except TimeoutError:
            process.kill()
            out, self.stderr = await process.communicate()
            self._parse(out)
            raise ClientFailure(
                f"the adapter did not exit within {timeout:g} s (a client that hangs); "
                f"it printed {self.summary()}"
            ) from None
        self._parse(out)
        expect(
            process.returncode == 0,
            f"the adapter exited with {process.returncode}: {self.stderr.decode()[-400:]}",
        )

    async def stop(self) -> None:
        """Kill the adapter if it still runs and reap it (its pipes closed, its output kept)."""
        process = self.process
        if process is None:
            return
        if process.returncode is None:
            process.kill()
        out, err = await process.communicate()  # reaps it and closes its pipes
        self.stderr = self.stderr or err
        if not self.events:
            self._parse(out)

    def _parse(self, out: bytes) -> None:
        for line in out.decode(errors="replace").splitlines():
            with contextlib.suppress(ValueError):
                event = json.loads(line)
                if isinstance(event, dict) and "event" in event:
                    self.events.append(event)

    def elements(self) -> list[bytes]:
        return [bytes.fromhex(e["hex"]) for e in self.events if e["event"] == "next"]

    def terminal(self) -> dict[str, Any] | None:
        ends = [e for e in self.events if e["event"] in ("complete", "error", "closed")]
        return ends[0] if ends else None

    def summary(self) -> str:
        shown = [e["event"] if e["event"] != "next" else f"next {e['hex'][:16]}" for e in self.events]
        return ", ".join(shown) or "nothing"


@dataclass(frozen=True, kw_only=True)
class Options:
    """How the client suite runs."""

    timeout: float = 5.0
    """Deadline of each wait for a frame from the client, in seconds."""
    quiet: float = 0.25
    """How long a case watches for frames that must not come."""
    start_timeout: float = 60.0
    """Deadline for the adapter to connect, its process start-up included (an interpreter or a
    JVM starting on a loaded machine may take seconds). Only an adapter that neither connects
    nor exits waits this long: the case goes on at its connection, and fails at its exit."""
    case_timeout: float = 20.0
    """Deadline of a whole case from the adapter's connection to its exit."""
    transport: str = "tcp"
    """``tcp`` or ``ws``: what the scripted server listens on."""


async def _connected(adapter: _Adapter, listener: RawListener, timeout: float) -> RawTransport:  # noqa: ASYNC109
    """Start the adapter; its connection, or a failure when it exits first or ``timeout`` passes.

    Both ends of the wait are events, so an adapter that starts slowly (a cold interpreter, a
    JVM, a loaded machine) is never judged by the deadline of a frame: that clock starts at
    its connection. ``timeout`` only ends an adapter that neither connects nor exits.
    """
    process = await adapter.start()
    accepted = asyncio.ensure_future(listener.accept())
    exited = asyncio.ensure_future(process.wait())
    try:
        await asyncio.wait((accepted, exited), timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        exited.cancel()
        if not accepted.done():
            accepted.cancel()
            await asyncio.wait(
                (accepted,)
            )  # a connection it took meanwhile is its result; else it stays queued
    link = listener.accept_nowait() if accepted.cancelled() else accepted.result()
    if link is not None:
        return link
    if process.returncode is not None:
        await adapter.stop()  # collects its output
        raise ClientFailure(
            f"the adapter exited with {process.returncode} before its connection was accepted: "
            f"{adapter.stderr.decode(errors='replace')[-400:].strip()}"
        )
    raise ClientFailure(f"the adapter did not connect within {timeout:g} s of its start")


async def run_client_case(case: ClientCase, command: str, options: Options) -> CaseResult:
    """Run one case against the client behind ``command``; never raises for what the client does."""
    start = time.monotonic()
    listener = RawListener()
    await listener.start(options.transport)
    publisher = f"conformance/client/{case.id}"
    adapter = _Adapter(command, listener.url, publisher, case.script)
    outcome, message = Outcome.PASS, ""
    server: Server | None = None
    link: RawTransport | None = None
    scope: asyncio.Timeout | None = None
    try:
        link = await _connected(adapter, listener, options.start_timeout)
        scope = asyncio.timeout(options.case_timeout)  # its deadline is fixed here, at the connection
        async with scope:
            server = Server(link, adapter, timeout=options.timeout, quiet=options.quiet)
            await case.fn(server)
    except ClientSkip as skip:
        outcome, message = Outcome.SKIP, str(skip)
    except ClientFailure as failure:
        outcome, message = Outcome.FAIL, str(failure)
    except TimeoutError:
        outcome = Outcome.FAIL
        message = (
            f"the case did not finish within {options.case_timeout:g} s of the adapter's connection"
            if scope is not None and scope.expired()
            else "a wait inside the case timed out"
        )
    except OSError as error:
        outcome, message = Outcome.FAIL, f"could not run the adapter: {type(error).__name__}: {error}"
    finally:
        await adapter.stop()
        if link is not None:
            link.abort()
        await listener.aclose()
    if server is not None and server.monitor.violations:
        outcome = Outcome.FAIL
        message = "; ".join(filter(None, [message, *server.monitor.violations]))
    if outcome is Outcome.FAIL:
        message += f" [adapter printed: {adapter.summary()}]"
    return CaseResult(case, outcome, message, time.monotonic() - start)


async def run_clients(
    command: str, options: Options | None = None, *, pattern: str | None = None
) -> list[CaseResult]:
    """Run the client cases (those matching the glob ``pattern``, default all), one at a time."""
    options = options or Options()
    chosen = [c for c in CLIENT_CASES if pattern is None or fnmatch.fnmatch(c.id, pattern)]
    return [await run_client_case(c, command, options) for c in chosen]
