"""The watchdog of a running case: a case's thread blocked inside the implementation fails fast.

Theory of operation:

* A case runs in a worker thread (:meth:`~rstreams.tck._registry.Verification._run_body`).
  The thread that started it waits in steps of a fifth of the blocking limit and, at each
  step, asks :meth:`Watchdog.check` about the worker. The check samples three things: the
  worker's innermost Python frame and the instruction it is at, the CPU time the worker
  used and the time it waited for a CPU (Linux ``/proc``; elsewhere the other two decide
  alone: a thread a loaded machine leaves runnable but unscheduled is starved, not blocked),
  and the time of the last signal any of the case's subscribers saw.
* The worker is *blocked inside the implementation* when the code it is in is not the
  TCK's (its innermost frame, once the standard library's frames are set aside, belongs to
  the implementation under test), the method the TCK called is one of the interfaces'
  (``subscribe``, ``request``, ``cancel``, a signal: :data:`WATCHED`; a factory slow to
  build a server is not a deadlock), and none of the three samples moved for the limit: the
  case's default timeout, at least :data:`MIN_BLOCKED`. A correct implementation answers a
  call in far less; one blocked that long with nothing moving is deadlocked (or waits for
  something that will never come), and the case fails at once with :class:`CaseBlocked`
  instead of overrunning ``case_timeout``.
* The implementation's own threads are sampled the same way (a delivery thread, an
  executor's worker): any thread but the TCK's own (named :data:`TCK_THREADS`...) that is
  inside a call into the implementation it entered after the case began. The watchdog is
  built before the worker starts and notes the call each thread is inside then: a thread
  stuck since an earlier case (the same entry frame) is not this case's. One that sits
  blocked inside a call of the interfaces for the limit fails the case like the worker. The
  failure also shows (up to two) other threads of the implementation's that sat still inside it
  from one sample to the next: one that waits for a lock the blocked thread holds may have
  reached it a sample or more later, when a loaded machine scheduled it late.
  Most cases wait for a signal for the default timeout and fail by themselves before that:
  when a case failed so (:meth:`Watchdog.explain`), a thread of the implementation's that sat
  blocked inside such a call from one sample to the next (a step apart at least) is the
  likely cause, and its message takes the failure's place, the failure after it.
* The call is recognised through decorators (:func:`_call`): a frame whose locals hold the
  function the next frame runs is a wrapper, whatever its name (``functools.wraps`` keeps
  ``wrapper`` as the code's name); one that holds a single method of the interfaces it has
  not called yet (a ``synchronized`` wrapper waiting for its lock) stands for that method.
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
  - a signal on a thread of the implementation's own, with no call of the TCK's around it (a
    Subscriber handed the signal to its executor): rule 2.1, the Subscriber signals no more
    demand. The message names the thread, and says when it is not a daemon thread (Python
    waits for it at exit, so the process cannot exit while it stays blocked).

  Then the implementation's frames, outermost first; each stretch of the TCK's frames
  between them is folded into one line.
"""

from __future__ import annotations

import functools
import gc
import inspect
import linecache
import os
import reprlib
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from types import FrameType, FunctionType
from typing import TYPE_CHECKING, Final, Literal

from rstreams.tck._env import RUNAWAY_LIMIT
from rstreams.tck._failures import CaseHung

if TYPE_CHECKING:
    from rstreams.tck._env import TestEnvironment

__all__ = [
    "MIN_BLOCKED",
    "TCK_THREADS",
    "CaseBlocked",
    "Watchdog",
    "blocked_message",
    "current_frames",
    "frames_of",
]

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
    """A case's thread, or one of the implementation's, sat blocked inside the implementation under
    test; ``explains`` is the failure of the case's own it was found to cause, if any."""

    def __init__(
        self, message: str = "", *, rule: str | None = None, explains: BaseException | None = None
    ) -> None:
        super().__init__(message, rule=rule)
        self.explains = explains


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


def current_frames() -> dict[int, FrameType]:
    """``sys._current_frames()`` with the cyclic collector paused. On CPython before 3.12 the call
    holds the runtime's lock of thread states while it makes frame objects; a collection that
    starts then and frees a ``threading.local`` takes that lock again, and the calling thread
    deadlocks for good (CPython gh-106883: a TCK run hung so, in the watchdog)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return sys._current_frames()
    finally:
        if enabled:
            gc.enable()


def _ticks(native_id: int | None) -> tuple[int, ...] | None:
    """The nanoseconds the thread ran and waited to run, from Linux ``/proc`` (schedstat), or its
    CPU ticks (user + system) where the kernel keeps no schedstat; None where unknown.

    The time it waited to run moves while a loaded machine leaves it runnable but unscheduled:
    such a thread is starved, not blocked."""
    try:
        with open(f"/proc/self/task/{native_id}/schedstat", encoding="ascii") as schedstat:
            return tuple(int(field) for field in schedstat.read().split()[:2])
    except (OSError, ValueError):
        pass
    try:
        with open(f"/proc/self/task/{native_id}/stat", encoding="ascii") as stat:
            fields = stat.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12]),)
    except (OSError, ValueError, IndexError):
        return None


TCK_THREADS: Final = "rstreams-tck-"
"""The prefix of the TCK's own threads' names (cases' workers, the cancels of abandoned cases):
the watchdog watches only the current case's worker among them."""


@dataclass(frozen=True, slots=True)
class _Blocked:
    """A watched thread that sat still inside the implementation for ``seconds``."""

    ident: int
    thread: threading.Thread | None
    top: FrameType
    run: list[FrameType]
    seconds: float


class Watchdog:
    """Watches one case's threads; :meth:`check` returns the failure once one is blocked.

    Built before the worker starts: the calls other threads are inside at that moment
    (threads left stuck by earlier cases, a shared pool busy with an earlier stream) are not
    this case's, and are never watched. No frame is held from one check to the next.
    """

    def __init__(self, worker: threading.Thread, env: TestEnvironment) -> None:
        self.worker = worker
        self.env = env
        self.limit = max(env.default_timeout, MIN_BLOCKED)
        self.step = self.limit / 5
        self._samples: dict[int, tuple[tuple[object, ...], float]] = {}
        self._busy: tuple[int, float] | None = None
        self._before = {ident: _key(_entry(frame)) for ident, frame in current_frames().items()}

    def check(self) -> CaseBlocked | None:
        """Sample the watched threads; a :class:`CaseBlocked` once one of them sat blocked inside
        a call of the interfaces into the implementation for :attr:`limit`, else None (nothing is
        raised here: the runner raises it)."""
        busy = self._busy_after_failure(current_frames().get(self.worker.ident or -1))
        if busy is not None:
            return busy
        return self._blocked(self.limit)

    def explain(self, failure: BaseException) -> CaseBlocked | None:
        """After the case failed by itself (a wait of the TCK's ran out): a :class:`CaseBlocked`
        when one of the implementation's other threads sat blocked inside a call of the interfaces
        from one sample to the next, at least :attr:`step` apart, which is then the likely cause,
        with ``failure`` after it; else None. A wait for a signal ends after the default timeout,
        before :meth:`check` could see a thread blocked that long (on a loaded machine the first
        sample that finds it blocked may come late)."""
        blocked = self._blocked(self.step)
        if blocked is None:
            return None
        text = str(failure) if isinstance(failure, AssertionError) else f"{type(failure).__name__}: {failure}"
        return CaseBlocked(f"{blocked}\n  then: {text}", explains=failure)

    def _blocked(self, limit: float) -> CaseBlocked | None:
        """Sample every thread; the failure for the one blocked inside a call of the interfaces
        for ``limit`` (the worker first), with (up to two) others that sat still inside the
        implementation from one sample to the next, at least :attr:`step` apart (an executor's
        thread waiting for a lock the blocked one holds: on a loaded machine it may reach that lock
        a sample or more after the blocked one); else None."""
        now, signal = time.monotonic(), self.env.latest_signal()
        threads = {t.ident: t for t in threading.enumerate()}
        blocked: list[_Blocked] = []
        for ident, top in current_frames().items():
            thread = threads.get(ident)
            run = self._watched_run(ident, top, thread)
            if not run:
                self._samples.pop(ident, None)
                continue
            sample = (id(top), top.f_lasti, _ticks(thread.native_id if thread else None), signal)
            held = self._samples.get(ident)
            if held is None or held[0] != sample:
                self._samples[ident] = (sample, now)
            elif now - held[1] >= min(limit, self.step):
                blocked.append(_Blocked(ident, thread, top, run, now - held[1]))
        failing = sorted(
            (b for b in blocked if b.seconds >= limit and _call(b.run)[0] in WATCHED),
            key=lambda b: b.ident != self.worker.ident,
        )
        if not failing:
            return None
        lead = failing[0]
        helper = None if lead.ident == self.worker.ident else (lead.thread, lead.ident)
        others = "".join(_meanwhile(b) for b in [b for b in blocked if b is not lead][:2])
        return CaseBlocked(blocked_message(frames_of(lead.top), lead.seconds, helper=helper) + others)

    def _watched_run(self, ident: int, top: FrameType, thread: threading.Thread | None) -> list[FrameType]:
        """The implementation's frames of the call ``ident`` is inside, if the thread is watched:
        the worker inside a call of the interfaces; any other thread but the TCK's own inside a
        call it entered since the case began (whose entry frame is not the one it had then)."""
        if ident == threading.get_ident():
            return []
        run = _innermost_run(top)
        if not run:
            return []
        if ident == self.worker.ident:
            return run if _call(run)[0] in WATCHED else []
        if (thread is not None and thread.name.startswith(TCK_THREADS)) or _key(run[0]) == self._before.get(
            ident
        ):
            return []
        return run

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
        first = next(frames for kind, frames in _runs(stack) if kind == "impl")
        method, called = _call([f for f in first if _kind(f) == "impl"])
        call = f"{method}({_argument(called, method)})"
        return CaseBlocked(
            f"the implementation under test did not return from {call} for"
            f" {(now - self._busy[1]) * 1000:.0f} ms after the failure above was recorded (a stream that"
            " swallows the StreamAbandoned the TCK raises from on_next keeps going); its thread is left"
            " running until the TCK ends it with SystemExit from on_next, once the case is over and"
            f" StreamAbandoned was swallowed {RUNAWAY_LIMIT} times more."
            f" The implementation's stack, outermost first:{_stack_text(_runs(stack))}"
        )


def _innermost_run(frame: FrameType | None) -> list[FrameType]:
    """The implementation's frames of the call into it that ``frame`` (the innermost) is inside,
    outermost first: up to the TCK's frame that made the call, or the thread's start. Standard
    library frames are left out; [] when ``frame`` is in the TCK's own code."""
    run: list[FrameType] = []
    while frame is not None:
        kind = _kind(frame)
        if kind == "tck":
            break
        if kind == "impl":
            run.append(frame)
        frame = frame.f_back
    run.reverse()
    return run


def _entry(frame: FrameType | None) -> FrameType | None:
    """The first frame of the call into the implementation ``frame`` is inside, or None."""
    run = _innermost_run(frame)
    return run[0] if run else None


def _key(frame: FrameType | None) -> tuple[int, object] | None:
    """What tells a call's entry frame from another's without holding it: a frame kept alive keeps
    its locals alive after the call returned, to be finalised later on the TCK's thread."""
    return None if frame is None else (id(frame), frame.f_code)


def _call(run: list[FrameType]) -> tuple[str, FrameType]:
    """The method of the interfaces a call into the implementation entered, and its frame, seen
    through decorators: a frame whose locals (a closure's cells, a decorator object's attributes)
    hold the function the next frame runs is a wrapper (``functools.wraps`` style, whatever its
    name), and one that holds a single method of the interfaces it has not called yet (a lock
    taken before the call) stands for that method. Else the first frame's own name."""
    for i, frame in enumerate(run):
        name = frame.f_code.co_name
        if name in WATCHED:
            return name, frame
        wrapped = _wrapped(frame)
        inner = run[i + 1] if i + 1 < len(run) else None
        if inner is not None and any(fn.__code__ is inner.f_code for fn in wrapped):
            continue
        named = {fn.__name__ for fn in wrapped if fn.__name__ in WATCHED}
        if len(named) == 1:
            return named.pop(), frame
        break
    return run[0].f_code.co_name, run[0]


def _wrapped(frame: FrameType) -> list[FunctionType]:
    """The functions ``frame``'s locals hold (bound methods' functions too), and those a
    ``__call__``'s ``self`` holds: what a decorator's wrapper calls."""
    try:
        values = list(frame.f_locals.values())
        owner = frame.f_locals.get("self") if frame.f_code.co_name == "__call__" else None
        values.extend(getattr(owner, "__dict__", {}).values())
    except Exception:  # a frame's locals are read from another thread: never fail the check
        return []
    functions = (getattr(value, "__func__", value) for value in values)
    return [fn for fn in functions if isinstance(fn, FunctionType)]


_REPR: Final = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 40


def _argument(frame: FrameType, method: str = "") -> str:
    """The call's first argument after ``self``, shortened (``0`` for ``on_next(0)``); '' if none.
    A wrapper's ``*args`` count too (the first skipped when it is the object with ``method``)."""
    code = frame.f_code
    first = 1 if code.co_argcount and code.co_varnames[0] in ("self", "cls") else 0
    if code.co_argcount > first:
        value = frame.f_locals.get(code.co_varnames[first])
    elif code.co_flags & inspect.CO_VARARGS:
        args = frame.f_locals.get(code.co_varnames[code.co_argcount + code.co_kwonlyargcount], ())
        if not isinstance(args, tuple):
            return ""
        skip = 1 if not code.co_argcount and args and callable(getattr(args[0], method or "-", None)) else 0
        if len(args) <= skip:
            return ""
        value = args[skip]
    else:
        return ""
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


def _cause(
    method: str,
    call: str,
    stuck: str,
    between: list[FrameType],
    outer: str | None,
    *,
    own_thread: bool = False,
) -> str:
    """The rule and what broke it, from the method blocked in and the calls around it."""
    names = {f.f_code.co_name: f for f in between}
    signal = next((name for name in names if name in SIGNALS), None)
    if method in SIGNALS:
        request = names.get("request")
        if outer is None and own_thread:
            return (
                f"rule 2.1: the Subscriber is {stuck}, on a thread of its own where it handed the signal"
                " (rule 2.2 allows that): a signal whose processing never ends lets it signal no more demand"
            )
        if request is None or outer is None:
            return f"rule 2.2: the Subscriber is {stuck}; processing a signal must not block the Publisher"
        return (
            f"rule 2.2: the Subscriber is {stuck}: the TCK delivered {call} from inside the Subscriber's own"
            f" request({request.f_locals.get('n', 'n')}), on its stack (rules 3.3 and 3.10 allow that"
            f" recursion), called from its {outer}(); a Subscriber that holds a lock around"
            f" request() and takes it again in {method} deadlocks exactly so"
        )
    if method in _NESTED and signal is not None and outer is not None:
        return _NESTED[method].format(stuck=stuck, signal=signal, outer=outer)
    if method in _PLAIN:
        return _PLAIN[method].format(stuck=stuck)
    return f"the implementation under test is {stuck}"


def _thread_name(thread: threading.Thread | None, ident: int) -> str:
    return repr(thread.name) if thread is not None else f"#{ident}"


def blocked_message(
    stack: list[_Frame], seconds: float, *, helper: tuple[threading.Thread | None, int] | None = None
) -> str:
    """The failure for a thread blocked at the innermost frame of ``stack`` for ``seconds``: the
    case's worker, or ``helper`` (the thread and its ident), a thread of the implementation's."""
    runs = _runs(stack)
    method, called = _call([f for f in runs[-1][1] if _kind(f) == "impl"])
    call = f"{method}({_argument(called, method)})"
    between = runs[-2][1] if len(runs) >= 3 else []  # the TCK's frames, when an outer call exists
    outer = _call([f for f in runs[-3][1] if _kind(f) == "impl"])[0] if len(runs) >= 3 else None
    stuck = (
        f"blocked inside {call} for {seconds * 1000:.0f} ms, with no signal, no CPU time and no step"
        " of its own meanwhile"
    )
    if helper is None:
        where = "The case's thread is left behind (a daemon thread: it cannot be interrupted)."
    else:
        thread, ident = helper
        where = (
            f"It is blocked on the implementation's own thread {_thread_name(thread, ident)}, not the"
            " case's; the TCK cannot interrupt it and leaves it behind"
        )
        if thread is not None and not thread.daemon:
            where += (
                ", and as it is not a daemon thread, Python waits for it at exit: the process cannot"
                " exit while it stays blocked"
            )
        where += "."
    cause = _cause(method, call, stuck, between, outer, own_thread=helper is not None)
    return f"{cause}. {where} The implementation's stack, outermost first:{_stack_text(runs)}"


def _meanwhile(blocked: _Blocked) -> str:
    """A line and the stack of another thread of the implementation's that sat still meanwhile."""
    return (
        f"\nMeanwhile the implementation's thread {_thread_name(blocked.thread, blocked.ident)} sat still for"
        f" {blocked.seconds * 1000:.0f} ms inside its {_call(blocked.run)[0]}(), outermost first:"
        f"{_stack_text(_runs(frames_of(blocked.top)))}"
    )
