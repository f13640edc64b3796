"""The watchdog of a running case: a case's thread blocked inside the implementation fails fast.

Theory of operation:

* A case runs in a worker thread (:meth:`~rstreams.tck._registry.Verification._run_body`).
  The thread that started it waits in steps of a fifth of the blocking limit and, at each
  step, asks :meth:`Watchdog.check` about the worker. The check samples three things: the
  worker's innermost Python frame and the instruction it is at, the CPU time the worker
  used (Linux ``/proc``; elsewhere the other two decide alone), and the time of the last
  signal any of the case's subscribers saw.
* The worker is *blocked inside the implementation* when the code it is in is not the
  TCK's (its innermost frame, once the standard library's frames are set aside, belongs to
  the implementation under test), the method the TCK called is one of the interfaces'
  (``subscribe``, ``request``, ``cancel``, a signal: :data:`WATCHED`; a factory slow to
  build a server is not a deadlock), and none of the three samples moved for the limit: the
  case's default timeout, at least :data:`MIN_BLOCKED`. A correct implementation answers a
  call in far less; one blocked that long with nothing moving is deadlocked (or waits for
  something that will never come), and the case fails at once with :class:`CaseBlocked`
  instead of overrunning ``case_timeout``.
* Once the case recorded a failure, a worker that stays inside one call into the
  implementation for the limit (busy or not: a flood that swallows the ``StreamAbandoned``
  the TCK raises never returns) fails the case the same way, after that failure.
* Python cannot interrupt a thread stuck in a lock's ``acquire``: the stuck worker is a
  daemon thread and is left behind; the runner closes the case's subscribers and cancels
  them from another daemon thread (it never waits on the stuck one), and the run, or the
  pytest session, carries on and ends.
* The message names the rule from the stack. The method of the implementation the TCK
  called last is the signal being delivered; the TCK's frames between it and an outer call
  into the implementation tell whether it came from inside that call:

  - ``on_subscribe``/``on_next``/``on_error``/``on_complete`` (a Subscriber): rule 2.2, a
    Subscriber's processing of a signal must not block its Publisher. When the signal was
    delivered from inside the Subscriber's own ``request(n)``, on its stack (rules 3.3 and
    3.10 allow that recursion), the message says so: a lock held around ``request()`` and
    taken again in ``on_next`` deadlocks exactly there.
  - ``subscribe``: rule 1.9 (it must return normally, having called ``on_subscribe``).
  - ``request``: rule 3.2 when the call came from inside a signal the implementation was
    delivering (the Subscription must allow it), else rule 3.4.
  - ``cancel``: rule 3.5 (the message says so when it came from inside a signal, as above).

  Then the implementation's frames, outermost first; each stretch of the TCK's frames
  between them is folded into one line.
"""

from __future__ import annotations

import functools
import linecache
import os
import reprlib
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Final, Literal

from rstreams.tck._failures import CaseHung

if TYPE_CHECKING:
    from rstreams.tck._env import TestEnvironment

__all__ = ["MIN_BLOCKED", "CaseBlocked", "Watchdog", "blocked_message", "frames_of"]

MIN_BLOCKED: Final = 0.2
"""The shortest time, in seconds, a case's thread must sit blocked before the watchdog fails
the case, whatever the default timeout: a loaded machine may not schedule a thread for tens of
milliseconds, and that is not a deadlock."""

SIGNALS: Final = frozenset({"on_subscribe", "on_next", "on_error", "on_complete"})
WATCHED: Final = SIGNALS | {"subscribe", "request", "cancel"}
"""The methods of the interfaces: a thread blocked inside one of them is watched. One blocked in
anything else the TCK calls (a factory such as ``create_publisher``, which may take its time to
build a server) is left to ``case_timeout``."""

_TCK_DIR: Final = os.path.dirname(__file__)
_STDLIB: Final = tuple(
    os.path.join(os.path.realpath(sysconfig.get_paths()[key]), "") for key in ("stdlib", "platstdlib")
)
_SITE: Final = f"{os.sep}site-packages{os.sep}"
Kind = Literal["tck", "lib", "impl"]


class CaseBlocked(CaseHung):
    """A case's thread sat blocked inside the implementation under test for the default timeout."""


def _kind(frame: FrameType) -> Kind:
    return _kind_of_file(frame.f_code.co_filename)


@functools.lru_cache(maxsize=1024)
def _kind_of_file(filename: str) -> Kind:
    """Whose code ``filename`` is: the TCK's, the standard library's, or the implementation's."""
    if os.path.dirname(filename) == _TCK_DIR:
        return "tck"
    real = os.path.realpath(filename) if filename.startswith(os.sep) else filename
    if (real.startswith(_STDLIB) and _SITE not in real) or filename.startswith("<frozen "):
        return "lib"
    return "impl"


@dataclass(frozen=True, slots=True)
class _Frame:
    frame: FrameType
    kind: Kind


def frames_of(frame: FrameType | None) -> list[_Frame]:
    """The stack ending at ``frame``, outermost first; a standard-library frame (``threading``,
    ``queue``) counts as its caller's, so a wait the implementation started is the implementation's."""
    stack: list[FrameType] = []
    while frame is not None:
        stack.append(frame)
        frame = frame.f_back
    out: list[_Frame] = []
    caller: Kind = "tck"  # the thread's bootstrap frames (threading) count as the TCK's
    for f in reversed(stack):
        kind = _kind(f)
        caller = caller if kind == "lib" else kind
        out.append(_Frame(f, caller))
    return out


def _ticks(native_id: int | None) -> int | None:
    """The CPU ticks (user + system) the thread used, from Linux ``/proc``; None where unknown."""
    try:
        with open(f"/proc/self/task/{native_id}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, ValueError, IndexError):
        return None


class Watchdog:
    """Watches one case's worker thread; :meth:`check` returns the failure once it is blocked."""

    def __init__(self, worker: threading.Thread, env: TestEnvironment) -> None:
        self.worker = worker
        self.env = env
        self.limit = max(env.default_timeout, MIN_BLOCKED)
        self.step = self.limit / 5
        self._sample: tuple[object, ...] | None = None
        self._since = 0.0
        self._busy: tuple[int, float] | None = None

    def check(self) -> CaseBlocked | None:
        """Sample the worker; a :class:`CaseBlocked` once it sat blocked in the implementation for
        :attr:`limit`, else None (and nothing is raised here: the runner raises it)."""
        frame = sys._current_frames().get(self.worker.ident or -1)
        busy = self._busy_after_failure(frame)
        if busy is not None:
            return busy
        if _called_method(frame) not in WATCHED:
            self._sample = None
            return None
        assert frame is not None
        sample = (id(frame), frame.f_lasti, _ticks(self.worker.native_id), self.env.latest_signal())
        now = time.monotonic()
        if sample != self._sample:
            self._sample, self._since = sample, now
            return None
        if now - self._since < self.limit:
            return None
        return CaseBlocked(blocked_message(frames_of(frame), now - self._since))

    def _busy_after_failure(self, frame: FrameType | None) -> CaseBlocked | None:
        """Once a failure is recorded: the worker still inside the same outermost call into the
        implementation for :attr:`limit` (a flood that swallows the StreamAbandoned the TCK raises
        keeps it there, busy), as a failure; else None."""
        if frame is None or not self.env.has_failure:
            self._busy = None
            return None
        stack = frames_of(frame)
        entry = next((item.frame for item in stack if item.kind == "impl"), None)
        now = time.monotonic()
        if entry is None:
            self._busy = None
            return None
        if self._busy is None or self._busy[0] != id(entry):
            self._busy = (id(entry), now)
            return None
        if now - self._busy[1] < self.limit:
            return None
        call = f"{entry.f_code.co_name}({_argument(entry)})"
        return CaseBlocked(
            f"the implementation under test did not return from {call} for"
            f" {(now - self._busy[1]) * 1000:.0f} ms after the failure above was recorded (a stream that"
            " swallows the StreamAbandoned the TCK raises from on_next keeps going); its thread is left"
            f" running. The implementation's stack, outermost first:{_stack_text(_runs(stack))}"
        )


def _called_method(frame: FrameType | None) -> str | None:
    """The name of the implementation's method the TCK called last, when ``frame`` (the innermost)
    is in the implementation's code (or the standard library's, called from it); else None."""
    entry = None
    while frame is not None:
        kind = _kind(frame)
        if kind == "tck":
            break
        if kind == "impl":
            entry = frame
        frame = frame.f_back
    return None if entry is None else entry.f_code.co_name


_REPR: Final = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40


def _argument(frame: FrameType) -> str:
    """The call's first argument after ``self``, shortened (``0`` for ``on_next(0)``); '' if none."""
    code = frame.f_code
    first = 1 if code.co_argcount and code.co_varnames[0] in ("self", "cls") else 0
    if code.co_argcount <= first:
        return ""
    value = frame.f_locals.get(code.co_varnames[first])
    try:
        text = _REPR.repr(value)
    except Exception:  # a repr that raises must not hide the deadlock
        return type(value).__name__
    return type(value).__name__ if text.startswith("<") and " at 0x" in text else text


def _runs(stack: list[_Frame]) -> list[tuple[Kind, list[FrameType]]]:
    """``stack`` cut into stretches of one kind, outermost first."""
    runs: list[tuple[Kind, list[FrameType]]] = []
    for item in stack:
        if runs and runs[-1][0] == item.kind:
            runs[-1][1].append(item.frame)
        else:
            runs.append((item.kind, [item.frame]))
    return runs


def _line(frame: FrameType) -> str:
    code = frame.f_code
    source = linecache.getline(code.co_filename, frame.f_lineno).strip()
    where = f"{os.path.basename(code.co_filename)}:{frame.f_lineno} in {code.co_qualname}"
    return f"\n    {where}: {source}" if source else f"\n    {where}"


def _stack_text(runs: list[tuple[Kind, list[FrameType]]]) -> str:
    """The implementation's frames from its first call on, outermost first, the TCK's folded."""
    first = next(i for i, (kind, _) in enumerate(runs) if kind == "impl")
    lines: list[str] = []
    for kind, frames in runs[first:]:
        if kind == "impl":
            lines.extend(_line(f) for f in frames)
        else:
            names = list(dict.fromkeys(f.f_code.co_qualname for f in frames))
            path = names[0] if len(names) == 1 else f"{names[0]} -> ... -> {names[-1]}"
            lines.append(f"\n    (the TCK: {path})")
    return "".join(lines)


_PLAIN: Final = {
    "subscribe": "rule 1.9: the Publisher is {stuck}; subscribe() must call on_subscribe and return normally",
    "request": "rule 3.4: the Subscription is {stuck}; request() must return in a timely manner",
    "cancel": "rule 3.5: the Subscription is {stuck}; cancel() must return in a timely manner",
}
"""The cause for a call the TCK made directly (not from inside another call into the implementation)."""
_NESTED: Final = {
    "request": "rule 3.2: the Subscription is {stuck}: the TCK called it from inside {signal}, which the"
    " implementation was delivering from its {outer}(); the Subscription must allow that, and one that holds"
    " a lock while it signals and takes it again in request() deadlocks exactly so",
    "cancel": "rule 3.5: the Subscription is {stuck}: the TCK called it from inside {signal}, which the"
    " implementation was delivering from its {outer}(); cancel() must return in a timely manner, and a"
    " Subscription that holds a lock while it signals and takes it again in cancel() deadlocks exactly so",
}
"""The cause for a Subscription call the TCK made from inside a signal the implementation was delivering."""


def _cause(method: str, call: str, stuck: str, between: list[FrameType], outer: FrameType | None) -> str:
    """The rule and what broke it, from the method blocked in and the calls around it."""
    names = {f.f_code.co_name: f for f in between}
    signal = next((name for name in names if name in SIGNALS), None)
    if method in SIGNALS:
        request = names.get("request")
        if request is None or outer is None:
            return f"rule 2.2: the Subscriber is {stuck}; processing a signal must not block the Publisher"
        return (
            f"rule 2.2: the Subscriber is {stuck}: the TCK delivered {call} from inside the Subscriber's own"
            f" request({request.f_locals.get('n', 'n')}), on its stack (rules 3.3 and 3.10 allow that"
            f" recursion), called from its {outer.f_code.co_name}(); a Subscriber that holds a lock around"
            f" request() and takes it again in {method} deadlocks exactly so"
        )
    if method in _NESTED and signal is not None and outer is not None:
        return _NESTED[method].format(stuck=stuck, signal=signal, outer=outer.f_code.co_name)
    if method in _PLAIN:
        return _PLAIN[method].format(stuck=stuck)
    return f"the implementation under test is {stuck}"


def blocked_message(stack: list[_Frame], seconds: float) -> str:
    """The failure for a worker blocked at the innermost frame of ``stack`` for ``seconds``."""
    runs = _runs(stack)
    entry = runs[-1][1][0]  # the implementation's method the TCK called last
    call = f"{entry.f_code.co_name}({_argument(entry)})"
    between = runs[-2][1] if len(runs) >= 3 else []  # the TCK's frames, when an outer call exists
    outer = runs[-3][1][0] if len(runs) >= 3 else None
    stuck = (
        f"blocked inside {call} for {seconds * 1000:.0f} ms, with no signal, no CPU time and no step"
        " of its own meanwhile"
    )
    return (
        f"{_cause(entry.f_code.co_name, call, stuck, between, outer)}. The case's thread is left behind"
        " (a daemon thread: it cannot be interrupted). The implementation's stack, outermost first:"
        f"{_stack_text(runs)}"
    )
