"""Blocking waits (a condition, an event, a future, a thread, a child process) bounded by the own
time of the processes that do the awaited work, not by the machine's load.

:mod:`testkit.bound` bounds a wait in an event loop by that loop's thread; a blocking wait awaits
other threads of this process, or another process. :class:`Patience` counts wall time less the
time the threads of those processes (this one always; a child and its descendants where the wait
is on a child) spent runnable but waiting for a CPU, summed over the threads (Linux's
``/proc/PID/task/TID/schedstat``, its second field). On an idle machine that is wall time: a hang
fails after its limit. On a loaded one the seconds that other processes' CPU took from the awaited
work do not count. Whatever the load, a wait ends after :data:`~testkit.bound.HARD` times its limit
in wall time (every test keeps its pytest timeout too). Where the system does not say, the bound
is wall time.

The sum over threads counts two starved threads twice, so under load a hang takes longer to be
reported (never past the hard bound); a thread that ended before the bound looked at it is not
counted, which only shortens a wait towards wall time.
"""

from __future__ import annotations

import concurrent.futures
import email.message
import os
import queue
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import IO, Any, AnyStr, Literal, Protocol, TypeVar, overload

from testkit.bound import HARD, LOOK, WAIT, Starved

__all__ = [
    "Patience",
    "call",
    "child_line",
    "communicate",
    "exception",
    "get",
    "join",
    "result",
    "run",
    "serving",
    "urlopen",
    "wait",
    "wait_child",
    "wait_for",
]

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

STEP = 0.05
"""The shortest wait between two looks at the bound: a bound nearly spent under load is looked at
this often, not in a busy loop."""

_clock = time.monotonic


class Patience:
    """The bound of one blocking wait: over once the awaited processes' own time since it began
    (wall time less the time their threads waited for a CPU) reaches ``limit`` seconds, or wall
    time reaches :data:`~testkit.bound.HARD` times ``limit``.

    ``children``: the processes (with their descendants) whose threads do the awaited work
    besides this process's own."""

    def __init__(self, limit: float = WAIT, children: Iterable[int] = ()) -> None:
        self.limit = limit
        self._start = _clock()
        self._starved = Starved((os.getpid(),), children)  # (read at the first look: most waits need none)

    def spent(self) -> tuple[float, float]:
        """Own seconds and wall seconds since the wait began."""
        delay = self._starved.read()
        wall = _clock() - self._start
        return max(wall - delay, 0.0), wall

    def left(self) -> float:
        """Seconds the wait may still take before it is looked at again; 0 or less: over."""
        own, wall = self.spent()
        return min(self.limit - own, HARD * self.limit - wall)

    def until(self, step: Callable[[float], bool]) -> bool:
        """Call ``step(seconds)`` (a blocking wait of at most ``seconds`` that says whether what it
        awaits came) until it says so (True) or the bound is over (False); each step lasts at most
        :data:`~testkit.bound.LOOK`, so that the bound sees the awaited processes' short-lived
        descendants while they live."""
        if step(0):
            return True
        while (left := self.left()) > 0:
            if step(min(max(left, min(STEP, self.limit)), LOOK)):
                return True
        return False

    def said(self) -> str:
        """How long the wait took, for a failure's message."""
        own, wall = self.spent()
        return f"{self.limit:g} s of own time ({own:.1f} s; {wall:.1f} s in all)"


# -- this process's threads ---------------------------------------------------------------------


def wait_for(condition: threading.Condition, predicate: Callable[[], T], limit: float = WAIT) -> T:
    """``condition.wait_for(predicate, limit)`` bounded by :class:`Patience`: the predicate's last
    value (falsy once the bound is over). Call it holding ``condition``, as ``wait_for``."""
    patience = Patience(limit)
    last: list[T] = []

    def step(seconds: float) -> bool:
        last[:] = [condition.wait_for(predicate, seconds)]
        return bool(last[0])

    patience.until(step)
    return last[0] if last else predicate()


def wait(event: threading.Event, limit: float = WAIT, children: Iterable[int] = ()) -> bool:
    """``event.wait(limit)`` bounded by :class:`Patience` (over ``children`` too, for an event
    that a child's doing sets): whether the event was set."""
    return Patience(limit, children).until(event.wait)


def _joined(thread: threading.Thread, seconds: float) -> bool:
    thread.join(seconds)
    return not thread.is_alive()


def join(thread: threading.Thread, limit: float = WAIT) -> None:
    """``thread.join(limit)`` bounded by :class:`Patience`; as ``join``, returns either way
    (``thread.is_alive()`` says which)."""
    Patience(limit).until(lambda seconds: _joined(thread, seconds))


class Settles(Protocol[T_co]):
    """What :func:`result` waits on: a ``concurrent.futures.Future`` or ``SinkResult``."""

    def result(self, timeout: float | None = ...) -> T_co: ...

    def exception(self, timeout: float | None = ...) -> BaseException | None: ...

    def done(self) -> bool: ...


def _settled(future: Settles[object], seconds: float) -> bool:
    """Whether ``future`` has its outcome after waiting ``seconds`` at most (``result`` waits, not
    ``exception``: a ``SinkResult`` refuses a blocking wait on a loop's thread at once)."""
    try:
        future.result(seconds)
    except TimeoutError:
        return future.done()  # (the outcome may be a TimeoutError)
    except BaseException:  # its error, cancelled, or a blocking wait refused: raised again below
        return True
    return True


def result(future: Settles[T], limit: float = WAIT) -> T:
    """``future.result(limit)`` bounded by :class:`Patience`: its value, or its error raised;
    ``TimeoutError`` once the bound is over."""
    patience = Patience(limit)
    if not patience.until(lambda seconds: _settled(future, seconds)):
        raise TimeoutError(f"no result after {patience.said()}")
    return future.result(0)


def exception(future: Settles[object], limit: float = WAIT) -> BaseException | None:
    """``future.exception(limit)`` bounded by :class:`Patience`."""
    patience = Patience(limit)
    if not patience.until(lambda seconds: _settled(future, seconds)):
        raise TimeoutError(f"no outcome after {patience.said()}")
    return future.exception(0)


def get(items: queue.Queue[T], limit: float = WAIT, children: Iterable[int] = ()) -> T:
    """``items.get(timeout=limit)`` bounded by :class:`Patience` (over ``children`` too, for a
    queue that a child's output fills); ``queue.Empty`` once the bound is over."""
    got: list[T] = []

    def step(seconds: float) -> bool:
        try:
            got.append(items.get(timeout=seconds))
        except queue.Empty:
            return False
        return True

    patience = Patience(limit, children)
    if not patience.until(step):
        raise queue.Empty(f"nothing after {patience.said()}")
    return got[0]


def call(function: Callable[[], T], limit: float = WAIT, children: Iterable[int] = ()) -> T:
    """``function()`` run in a daemon thread and awaited, bounded by :class:`Patience` (over
    ``children`` too, for a call that awaits a child): its value, or its error raised;
    ``TimeoutError`` once the bound is over. The thread is then left to end by itself:
    ``function`` must end on its own (a socket with a timeout of its own, as :func:`urlopen`)."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()

    def target() -> None:
        try:
            future.set_result(function())
        except BaseException as error:  # (given to the waiting thread, raised there)
            future.set_exception(error)

    threading.Thread(target=target, daemon=True).start()
    patience = Patience(limit, children)
    if not patience.until(lambda seconds: _settled(future, seconds)):
        raise TimeoutError(f"no result after {patience.said()}")
    return future.result(0)


def urlopen(
    request: str | urllib.request.Request, limit: float = WAIT, children: Iterable[int] = ()
) -> tuple[int, email.message.Message, bytes]:
    """``urllib.request.urlopen(request, timeout=limit)`` and its body read, bounded by
    :func:`call` (over ``children`` too, where a child serves the request): the status, the
    headers and the body, an HTTP error's as well (a 404 is an answer, not a failure).

    The socket's own timeout is :data:`~testkit.bound.HARD` times ``limit``, the hard bound: it
    only ends the thread of a request the bound gave up on."""

    def fetch() -> tuple[int, email.message.Message, bytes]:
        try:
            with urllib.request.urlopen(request, timeout=HARD * limit) as answer:
                return answer.status, answer.headers, answer.read()
        except urllib.error.HTTPError as error:
            with error:
                return error.code, error.headers, error.read()

    return call(fetch, limit, children)


# -- child processes ----------------------------------------------------------------------------


def stop_child(child: subprocess.Popen[AnyStr], limit: float = WAIT) -> None:
    """End ``child``: SIGTERM, then SIGKILL if it has not ended within ``limit`` (as
    :func:`wait_child` bounds it); then close its pipes."""
    if child.poll() is None:
        child.terminate()
        try:
            wait_child(child, limit)
        except subprocess.TimeoutExpired:
            child.kill()
            wait_child(child, limit)
    for stream in (child.stdin, child.stdout, child.stderr):
        if stream is not None:
            stream.close()


def wait_child(child: subprocess.Popen[AnyStr], limit: float = WAIT) -> int:
    """``child.wait(limit)`` bounded by :class:`Patience` over ``child`` and this process:
    its exit status, or ``subprocess.TimeoutExpired`` (the child left running)."""

    def step(seconds: float) -> bool:
        try:
            child.wait(seconds)
        except subprocess.TimeoutExpired:
            return False
        return True

    _until_exit(child, limit, step)
    return child.returncode


def communicate(
    child: subprocess.Popen[AnyStr], limit: float = WAIT, given: AnyStr | None = None
) -> tuple[Any, Any]:
    """``child.communicate(given, limit)`` bounded by :class:`Patience` over ``child`` and this
    process (stdout and stderr, ``None`` where not piped, as ``communicate``);
    ``subprocess.TimeoutExpired`` (the child left running) once the bound is over."""
    out: list[tuple[Any, Any]] = []
    pending = [given]

    def step(seconds: float) -> bool:
        if seconds == 0 and pending[0] is not None:
            return False  # (communicate given input and no time loses the input: not yet)
        sent, pending[:] = pending[0], [None]  # input goes once: communicate refuses it on a retry
        try:
            out.append(child.communicate(sent, seconds))
        except subprocess.TimeoutExpired:
            return False
        return True

    _until_exit(child, limit, step)
    return out[0]


@overload
def run(
    command: list[str],
    limit: float = ...,
    *,
    input: str | None = ...,
    capture_output: bool = ...,
    check: bool = ...,
    text: Literal[True],
    **popen: Any,
) -> subprocess.CompletedProcess[str]: ...


@overload
def run(
    command: list[str],
    limit: float = ...,
    *,
    input: bytes | None = ...,
    capture_output: bool = ...,
    check: bool = ...,
    text: Literal[False] = ...,
    **popen: Any,
) -> subprocess.CompletedProcess[bytes]: ...


def run(
    command: list[str],
    limit: float = WAIT,
    *,
    input: str | bytes | None = None,  # noqa: A002 (subprocess.run's name)
    capture_output: bool = False,
    check: bool = False,
    text: bool = False,
    **popen: Any,
) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run(command, timeout=limit, ...)`` bounded by :class:`Patience` over the child
    and this process: its ``CompletedProcess``; ``subprocess.TimeoutExpired`` (the child killed)
    once the bound is over, ``CalledProcessError`` for a failed child under ``check``."""
    if input is not None:
        popen["stdin"] = subprocess.PIPE
    if capture_output:
        popen["stdout"] = popen["stderr"] = subprocess.PIPE
    with subprocess.Popen(command, text=text, **popen) as child:
        try:
            out, err = communicate(child, limit, input)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
    done = subprocess.CompletedProcess(command, child.returncode, out, err)
    if check:
        done.check_returncode()
    return done


def _until_exit(child: subprocess.Popen[AnyStr], limit: float, step: Callable[[float], bool]) -> None:
    """Run ``step`` until it says the child is done, bounded by :class:`Patience` over ``child``
    and this process; ``subprocess.TimeoutExpired`` (the child left running) once it is over."""
    patience = Patience(limit, [child.pid])
    if not patience.until(step):
        expired = subprocess.TimeoutExpired(child.args, limit)
        expired.add_note(f"the child ran {patience.said()} without exiting")
        raise expired


def child_line(child: subprocess.Popen[AnyStr], what: str, limit: float = WAIT) -> AnyStr:
    """The first line ``child`` prints (unstripped), its sign that it is ready (``what``, in the
    errors); read in a daemon thread that ends with the line or with the child's stdout.

    A child that exits first fails at once naming its exit status (and what it wrote to stderr,
    if piped); one still silent once :class:`Patience` over it is over (a hang guard, not a
    start-up time to meet) is killed and fails with ``TimeoutError``."""
    assert child.stdout is not None, "child_line needs stdout=subprocess.PIPE"
    stdout: IO[AnyStr] = child.stdout
    out: list[AnyStr] = []
    reader = threading.Thread(target=lambda: out.append(stdout.readline()), daemon=True)
    reader.start()
    patience = Patience(limit, [child.pid])
    if not patience.until(lambda seconds: _joined(reader, seconds)):
        said = patience.said()
        child.kill()
        child.wait()
        raise TimeoutError(f"{child.args!r} printed no {what} after {said} (a hang guard)")
    if not out[0]:
        said = f"{child.args!r} exited with status {wait_child(child, limit)} before printing {what}"
        if child.stderr is not None:
            said += f"; its stderr: {communicate(child, limit)[1]!r}"
        raise RuntimeError(said)
    return out[0]


@contextmanager
def serving(*args: str, env: dict[str, str] | None = None) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """``rstreams serve ARGS`` in a process of its own (its output as text, stderr piped for
    :func:`child_line`'s report); the process and the URL its serving line gives. Continued
    (a test may have stopped it with SIGSTOP) and stopped at the end."""
    server = subprocess.Popen(
        [sys.executable, "-m", "rstreams.cli", "serve", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        yield server, child_line(server, "its serving line").strip().rsplit(" on ", 1)[1]
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGCONT)
        stop_child(server)
