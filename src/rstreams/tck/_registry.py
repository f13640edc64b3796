"""Marking TCK cases, turning them into pytest tests, and running them without pytest.

Theory of operation:

* :func:`tck_test` marks a method of a verification class as one TCK case and attaches a
  :class:`CaseInfo` (rule, category, the JVM TCK's method name). The method's own name must
  be :func:`~rstreams.tck._jvm_names.snake` of the JVM name, so the two never drift.
* :class:`Verification` collects the marked methods of each subclass into ``tck_cases``
  and adds a ``test_<name>`` alias per case, which is what pytest collects when a user
  writes ``class TestMyPublisher(PublisherVerification)``. The alias runs the case through
  :meth:`Verification.run_tck_case`, which applies the category's meaning:

  - ``required``: any failure fails;
  - ``optional``: a failure of the case's own rule becomes a :class:`SkipTest` whose
    message says clearly that the optional rule FAILED ("optional failure means SKIP,
    never FAIL"). A failure that cites *another* rule (a required one: the optional
    case only tripped over it) is a :class:`RequiredRuleViolated`, reported with the
    outcome ``violated``; so is :class:`HardFailure`, which a case raises when the JVM
    TCK fails it anyway;
  - ``stochastic``: like required (the case itself decides whether to skip);
  - ``untested``: always :class:`SkipTest` ("Not verified by this TCK.").

* A failure names the rule that broke *first*: the failures a case records (on any
  thread) and the one it raises are put in the order they happened, and the earliest
  leads the message, the others follow as "then: ...".
* :func:`run_cases` runs every case of an instance and returns a :class:`Report`; it needs
  no pytest. Each case gets a fresh environment (``create_env()``; an environment that
  already served a case is replaced by a copy with the same timeouts) and its leftover
  subscriptions are closed and cancelled afterwards.
* Each case runs in a worker thread for at most ``case_timeout`` seconds. A case that
  overruns fails with what was observed (a runaway stream, no signal at all, or the call
  the case's thread is stuck in), and its subscribers are closed and cancelled without
  waiting for the stuck thread. Meanwhile :class:`~rstreams.tck._watchdog.Watchdog` looks
  at the worker, and at the implementation's own threads, every fifth of the default
  timeout: one blocked inside the implementation for the default timeout with nothing
  moving fails the case sooner, the same way; a case that fails by itself while one of the
  implementation's threads sits blocked fails with that thread's deadlock first.

Nothing here imports pytest: a skip is :class:`SkipTest`, a subclass of
:class:`unittest.SkipTest`, which pytest and unittest both report as a skip.
"""

from __future__ import annotations

import os
import re
import sys
import threading
import time
import unittest
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeVar

from rstreams.tck._failures import (
    CaseHung,
    HardFailure,
    RequiredRuleViolated,
    SkipTest,
    StreamAbandoned,
    TCKFailure,
    normalize_rule,
)
from rstreams.tck._jvm_names import snake
from rstreams.tck._watchdog import TCK_THREADS, CaseBlocked, Watchdog, current_frames

if TYPE_CHECKING:
    from rstreams.tck._env import LateBreaches, TestEnvironment

__all__ = [
    "DEFAULT_CASE_TIMEOUT",
    "CaseHung",
    "CaseInfo",
    "CaseResult",
    "Category",
    "HardFailure",
    "Report",
    "RequiredRuleViolated",
    "SkipTest",
    "StreamAbandoned",
    "TCKFailure",
    "Verification",
    "check_options",
    "normalize_rule",
    "run_cases",
    "tck_test",
    "untested",
    "whole",
]

Category = Literal["required", "optional", "stochastic", "untested"]
Outcome = Literal["passed", "failed", "violated", "skipped"]
_CATEGORIES: Final = ("required", "optional", "stochastic", "untested")

F = TypeVar("F", bound=Callable[..., Any])

NOT_VERIFIED: Final = "Not verified by this TCK."
DEFAULT_CASE_TIMEOUT: Final = 120.0
"""Seconds one case may run before it fails as overrun (``case_timeout``)."""


def whole(value: object) -> bool:
    """Whether ``value`` is an ``int`` and not a ``bool``."""
    return isinstance(value, int) and not isinstance(value, bool)


def check_options(
    who: str,
    *,
    case_timeout: object,
    max_elements: object,
    env: object,
    skip_stochastic: object,
    factories: dict[str, object],
    optional: dict[str, object] | None = None,
) -> None:
    """Validate what a ``verify_*`` function was given, before any case runs.

    A factory that is not callable is a ``TypeError`` naming it (``factories`` are required,
    ``optional`` may be ``None``); a bad option a ``ValueError`` naming it.
    """
    for name, factory in factories.items():
        if not callable(factory):
            raise TypeError(f"{who}({name}) needs a callable, got {factory!r}")
    for name, factory in (optional or {}).items():
        if factory is not None and not callable(factory):
            raise TypeError(f"{who}({name}=) needs a callable or None, got {factory!r}")
    from rstreams.tck._env import TestEnvironment

    if env is not None and not isinstance(env, TestEnvironment):
        raise ValueError(f"env must be a TestEnvironment or None, got {env!r}")
    if not isinstance(skip_stochastic, bool):
        raise ValueError(f"skip_stochastic must be True or False, got {skip_stochastic!r}")
    if case_timeout is not None and (
        isinstance(case_timeout, bool) or not isinstance(case_timeout, int | float) or not case_timeout > 0
    ):
        raise ValueError(f"case_timeout must be a positive number of seconds or None, got {case_timeout!r}")
    if not isinstance(max_elements, int) or isinstance(max_elements, bool) or max_elements < 0:
        raise ValueError(f"max_elements must be a whole number >= 0, got {max_elements!r}")


@dataclass(frozen=True, slots=True)
class CaseInfo:
    """One TCK case: its Python name, the JVM TCK's name, the rule and the category."""

    name: str
    jvm_name: str
    rule: str | None
    category: Category
    doc: str = ""


@dataclass(frozen=True, slots=True)
class CaseResult:
    """The outcome of running one case; ``message`` is empty when it passed."""

    name: str
    jvm_name: str
    rule: str | None
    category: Category
    outcome: Outcome
    message: str
    duration: float = 0.0


@dataclass(frozen=True)
class Report:
    """All case results of one verification run; ``ok`` when nothing failed.

    ``late`` is the run's log of breaches seen after their case ended, which
    :meth:`recheck` reads again.
    """

    results: tuple[CaseResult, ...] = field(default_factory=tuple)
    late: LateBreaches | None = field(default=None, compare=False, repr=False)

    def recheck(self) -> Report:
        """This report again, with every breach recorded since the run returned failing its case.

        The run's subscribers stay alive as long as the implementation under test holds
        them, and they keep checking what reaches them (an element beyond demand, a signal
        after a terminal one, a second ``on_subscribe``, overlapping calls on a probe
        Subscription): call this once the implementation has stopped (its threads joined,
        its loop closed), and nothing it signalled is missed. It never waits. A breach is
        reported once: by the first of a later case of the same verification class, the end
        of a run, ``teardown_class``, the end of a pytest session or this call to read it.
        """
        if self.late is None:
            return self
        results = _with_late_breaches(list(self.results), self.late.take(), "found by recheck()")
        return replace(self, results=tuple(results))

    @property
    def ok(self) -> bool:
        """True when no case failed and no optional case found a required rule violated."""
        return not self.failed and not self.violated

    @property
    def passed(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome == "passed"]

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome == "failed"]

    @property
    def violated(self) -> list[CaseResult]:
        """Optional cases that found a required rule broken (counted as failures by ``ok``)."""
        return [r for r in self.results if r.outcome == "violated"]

    @property
    def skipped(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome == "skipped"]

    def result(self, name: str) -> CaseResult:
        """The result of the case called ``name`` (Python or JVM spelling); KeyError if absent."""
        for r in self.results:
            if name in (r.name, r.jvm_name):
                return r
        raise KeyError(name)

    def __str__(self) -> str:
        lines = [f"{'outcome':<8} {'rule':<5} {'category':<10} case"]
        for r in self.results:
            lines.append(
                f"{r.outcome.upper():<8} {normalize_rule(r.rule) or '-':<5} {r.category:<10} {r.name}"
            )
            if r.message and r.outcome != "passed":
                first = r.message.strip().splitlines()[0] if r.message.strip() else ""
                lines.append(f"{'':<25} {first[:200]}")
        violated = f", {len(self.violated)} violated" if self.violated else ""
        lines.append(
            f"{len(self.passed)} passed, {len(self.failed)} failed{violated}, {len(self.skipped)} skipped"
            f" of {len(self.results)} cases"
        )
        return "\n".join(lines)


def tck_test(*, rule: str | None, category: Category, jvm: str) -> Callable[[F], F]:
    """Mark a verification method as the TCK case mirroring the JVM method ``jvm``.

    The method must be named ``snake(jvm)``; ``rule`` is written as in the JVM TCK's
    tables (``"1.09"``) or ``None``; ``category`` is one of required, optional,
    stochastic, untested and must match the name's prefix.
    """
    if category not in _CATEGORIES:
        raise ValueError(f"category must be one of {_CATEGORIES}, got {category!r}")
    if not jvm.startswith(category):
        raise ValueError(f"the JVM name {jvm!r} does not start with its category {category!r}")

    def mark(fn: F) -> F:
        expected = snake(jvm)
        if fn.__name__ != expected:
            raise ValueError(f"a TCK case mirroring {jvm!r} must be named {expected!r}, not {fn.__name__!r}")
        fn.__tck_case__ = CaseInfo(  # type: ignore[attr-defined]
            name=expected, jvm_name=jvm, rule=rule, category=category, doc=(fn.__doc__ or "").strip()
        )
        return fn

    return mark


_UNTESTED_NAME: Final = re.compile(r"untested_spec(\d)(\d\d)_")


def untested(jvm: str, doc: str) -> Callable[[Verification], None]:
    """The case mirroring the JVM's untested method ``jvm``: listed and documented, always skipped.

    The rule comes from the name (``untested_spec301_...`` is rule 3.01). Assign the result to
    the attribute named ``snake(jvm)``, in the JVM's order among the other cases.
    """
    match = _UNTESTED_NAME.match(jvm)
    if match is None:
        raise ValueError(f"an untested JVM case is named untested_specNNN_..., got {jvm!r}")

    def case(self: Verification) -> None:
        raise SkipTest(self.not_verified_message)

    case.__name__ = case.__qualname__ = snake(jvm)
    case.__doc__ = doc
    return tck_test(rule=f"{match[1]}.{match[2]}", category="untested", jvm=jvm)(case)


def _alias(info: CaseInfo) -> Callable[[Verification], None]:
    def test(self: Verification) -> None:
        self.run_tck_case(info.name)

    test.__name__ = test.__qualname__ = f"test_{info.name}"
    rule = f"rule {normalize_rule(info.rule)}" if info.rule else "set-up check"
    test.__doc__ = f"[{info.category}, {rule}] {info.doc.splitlines()[0] if info.doc else info.jvm_name}"
    return test


class Verification:
    """Base of the verification classes: a registry of cases plus the per-case runner.

    Subclasses have no constructor arguments (pytest instantiates test classes bare);
    configure them by overriding methods such as :meth:`create_env`. ``self.env`` is
    created lazily, once per case.
    """

    tck_cases: ClassVar[tuple[CaseInfo, ...]] = ()
    not_verified_message: ClassVar[str] = NOT_VERIFIED
    case_timeout: ClassVar[float | None] = DEFAULT_CASE_TIMEOUT
    """Seconds one case may run before it fails as hung; ``None`` runs it on the caller's thread."""
    _tck_env: TestEnvironment | None = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cases = {info.name: info for info in cls.tck_cases}
        for attr, value in list(vars(cls).items()):
            info = getattr(value, "__tck_case__", None)
            if isinstance(info, CaseInfo):
                if info.name != attr:
                    raise TypeError(f"{cls.__name__}.{attr} carries the TCK case {info.name!r}")
                cases[info.name] = info
                alias = f"test_{info.name}"
                if alias not in vars(cls):
                    setattr(cls, alias, _alias(info))
        cls.tck_cases = tuple(cases.values())
        if "pytest" in sys.modules:  # under pytest: report breaches after teardown_class at the session's end
            from rstreams.tck._pytest import install

            install(cls, _late_breaches)

    # -- configuration -----------------------------------------------------------
    def create_env(self) -> TestEnvironment:
        """The environment for one case; override to change timeouts. Called once per case."""
        from rstreams.tck._env import TestEnvironment

        return TestEnvironment()

    @property
    def env(self) -> TestEnvironment:
        """This case's environment, created on first use by :meth:`create_env`."""
        env = self._tck_env
        if env is None:
            env = self._tck_env = self.create_env()
        return env

    # -- running -----------------------------------------------------------------
    @classmethod
    def teardown_class(cls) -> None:
        """pytest calls this after the class's last case: a breach a stream committed after its
        case ended, that no later case reported, fails here (naming that case); never waits.
        One committed later still fails the end of the session (:mod:`rstreams.tck._pytest`)."""
        _raise_late(_late_breaches(cls))

    def tck_case(self, name: str) -> CaseInfo:
        """The :class:`CaseInfo` called ``name`` (Python or JVM spelling)."""
        for info in self.tck_cases:
            if name in (info.name, info.jvm_name):
                return info
        raise KeyError(f"{type(self).__name__} has no TCK case {name!r}")

    def run_tck_case(self, name: str) -> None:
        """Run one case with its category's meaning; raises :class:`SkipTest` or a failure.

        The failure's message leads with the rule that broke first and lists what else
        was recorded during the case, which often tells the cause.
        """
        info = self.tck_case(name)
        env = self._fresh_env()
        env.case, env.late = info.name, _late_breaches(type(self))
        hung = False
        try:
            if info.category == "untested":
                raise SkipTest(self.not_verified_message)
            try:
                self._run_body(getattr(self, info.name), env)
                _raise_late(env.late)
            except unittest.SkipTest:
                raise
            except Exception as exc:
                hung = isinstance(exc, CaseHung)
                failure = _first_broken(exc, env.async_errors)
                hard = isinstance(exc, HardFailure) or isinstance(failure, HardFailure)
                if info.category == "optional" and not hard:
                    own = normalize_rule(info.rule)
                    if failure.rule is not None and failure.rule != own:
                        raise RequiredRuleViolated(
                            f"REQUIRED rule {failure.rule} broken during the optional case for rule {own}:"
                            f" {_describe(failure)}",
                            rule=failure.rule,
                        ) from exc
                    raise SkipTest(
                        f"OPTIONAL rule {own} FAILED (reported as a skip: optional rules never fail the"
                        f" run); this optional requirement is NOT implemented: {_describe(failure)}"
                    ) from exc
                if failure is exc:
                    raise
                raise failure from exc
        finally:
            self._tck_env = None
            if hung:
                env.abandon()  # the stuck thread may hold locks a cancel() needs: do not wait on it
            else:
                env.close()

    def _fresh_env(self) -> TestEnvironment:
        """This case's environment: :meth:`create_env`'s, or a copy if it served a case already."""
        self._tck_env = None
        env = self.env
        if env.used:
            env = self._tck_env = env.fresh()
        env.used = True
        return env

    def _run_body(self, body: Callable[[], None], env: TestEnvironment) -> None:
        """Run ``body`` in a worker thread, waiting at most :attr:`case_timeout` seconds.

        A publisher that deadlocks inside ``subscribe``/``request``/``cancel``, or floods
        without end, must not hang the whole run: after the limit the case fails saying
        what was observed, and the stuck (daemon) thread is abandoned. A worker blocked
        inside the implementation fails the case as soon as the watchdog sees it.
        """
        limit = self.case_timeout
        if limit is None:
            _unwinding(body, env)
            return
        raised: list[BaseException] = []
        done = threading.Event()

        def work() -> None:
            try:
                _unwinding(body, env)
            except BaseException as exc:  # handed to the waiting thread, which re-raises it
                raised.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=work, name=f"{TCK_THREADS}{body.__name__[:48]}", daemon=True)
        watchdog = Watchdog(worker, env)  # before the start: it notes what the other threads are doing
        worker.start()
        deadline = time.monotonic() + limit
        while not done.wait(min(watchdog.step, max(deadline - time.monotonic(), 0.0))):
            if time.monotonic() >= deadline:
                raise CaseHung(
                    f"the case did not finish within {limit:g} s (case_timeout): {_observe(worker, env)}"
                )
            blocked = watchdog.check()
            if blocked is not None:
                raise blocked
        if raised:
            failure = raised.pop()
            blocked = watchdog.explain(failure) if isinstance(failure, TCKFailure) else None
            if blocked is not None:
                raise blocked from failure
            raise failure


_LATE: Final[weakref.WeakKeyDictionary[type, LateBreaches]] = weakref.WeakKeyDictionary()
_LATE_LOCK: Final = threading.Lock()


def _late_breaches(verification: type) -> LateBreaches:
    """The log of breaches seen after their case ended, one per verification class.

    Per class, because pytest makes a new instance for every case it runs.
    """
    from rstreams.tck._env import LateBreaches

    with _LATE_LOCK:
        log = _LATE.get(verification)
        if log is None:
            log = _LATE[verification] = LateBreaches()
        return log


def _raise_late(log: LateBreaches) -> None:
    """Fail the case running now with the breaches earlier cases' streams made after their end.

    Black-box waits are finite: a stream that breaks a rule only after its case stopped
    watching is caught by the TCK's closed subscribers and reported here, naming that case.
    """
    late = log.take()
    if late:
        lines = "".join(f"\n  then: {message} (case {case})" for case, message in late[1:5])
        case, message = late[0]
        raise TCKFailure(
            f"{message}, signalled to a subscriber of an earlier case after the case {case} had ended{lines}"
        )


def _unwinding(body: Callable[[], None], env: TestEnvironment) -> None:
    """``body()``; a :class:`StreamAbandoned` that unwound a runaway becomes its recorded failure."""
    try:
        body()
    except StreamAbandoned:
        failure = env.first_failure()
        raise (
            failure if failure is not None else TCKFailure("rule 3.12: a runaway stream was stopped")
        ) from None


def _first_broken(exc: Exception, recorded: list[BaseException]) -> TCKFailure:
    """One failure whose message leads with the earliest rule broken, then the rest in order.

    Failures raised on the case's thread come after everything recorded before them;
    errors that are not failures (an ``on_error`` the TCK received) are listed last.
    """
    failures = [e for e in recorded if isinstance(e, TCKFailure)]
    if isinstance(exc, CaseBlocked) and exc.explains is not None:  # the watchdog's cause takes its place
        failures = [exc if e is exc.explains else e for e in failures]
    if not any(e is exc for e in failures):
        failures.append(exc if isinstance(exc, TCKFailure) else _unexpected(exc))
    lead = failures[0]
    others: list[str] = []
    for error in failures[1:] + [e for e in recorded if not isinstance(e, TCKFailure)]:
        text = _describe(error)
        if text not in str(lead) and text not in others:
            others.append(text)
    if lead is exc and not others:
        return lead
    lines = "".join(f"\n  then: {text}" for text in others[:5])
    more = f"\n  ... and {len(others) - 5} more" if len(others) > 5 else ""
    return type(lead)(f"{_describe(lead)}{lines}{more}", rule=lead.rule)


def _unexpected(exc: BaseException) -> TCKFailure:
    """A failure for an exception that escaped the implementation under test, naming where."""
    return TCKFailure(f"the implementation under test raised {_describe(exc)}{_where(exc)}")


def _tck_file(filename: str) -> bool:
    return os.path.dirname(filename) == _TCK_DIR or filename == threading.__file__


_TCK_DIR: Final = os.path.dirname(__file__)


def _where(exc: BaseException) -> str:
    """`` in Cls.method (file.py:12)`` for the innermost traceback frame outside the TCK."""
    tb, frame = exc.__traceback__, None
    while tb is not None:
        if not _tck_file(tb.tb_frame.f_code.co_filename):
            frame = tb
        tb = tb.tb_next
    if frame is None:
        return ""
    code = frame.tb_frame.f_code
    return f" in {code.co_qualname} ({os.path.basename(code.co_filename)}:{frame.tb_lineno})"


def _observe(worker: threading.Thread, env: TestEnvironment) -> str:
    """What a case that overran showed: the streams' state, and where its thread is."""
    parts = [env.observation()]
    frame = current_frames().get(worker.ident or -1)
    inner = entry = None
    while frame is not None:  # innermost first; remember the outermost non-TCK frame of that run
        if _tck_file(frame.f_code.co_filename):
            if inner is not None:
                break
        else:
            inner = inner or frame
            entry = frame
        frame = frame.f_back
    if inner is None or entry is None:
        parts.append("the case's thread is waiting in the TCK")
    else:
        state = {True: "busy (using CPU)", False: "blocked", None: "stuck"}[_busy(worker)]
        where = f"{entry.f_code.co_qualname}()"
        if inner is not entry:
            where += f", now at {inner.f_code.co_qualname}"
        parts.append(
            f"the case's thread is {state} inside {where}"
            f" ({os.path.basename(inner.f_code.co_filename)}:{inner.f_lineno})"
        )
    return "; ".join(parts)


def _busy(thread: threading.Thread) -> bool | None:
    """Whether ``thread`` runs (uses CPU, or moves through its code) over 100 ms; None where unknown.

    CPU time comes from Linux ``/proc``; the position of its innermost frame is sampled too,
    because a thread that competes with other runaways for the GIL may get no CPU tick.
    """
    path = f"/proc/self/task/{thread.native_id}/stat"

    def ticks() -> int | None:
        try:
            with open(path, encoding="ascii") as stat:
                fields = stat.read().rpartition(")")[2].split()
            return int(fields[11]) + int(fields[12])  # utime + stime
        except (OSError, ValueError, IndexError):
            return None

    def position() -> tuple[object, int] | None:
        frame = current_frames().get(thread.ident or -1)
        return None if frame is None else (frame.f_code, frame.f_lasti)

    before, positions = ticks(), {position()}
    for _ in range(5):
        time.sleep(0.02)  # the case is over anyway; this only describes it
        positions.add(position())
    after = ticks()
    if len(positions) > 1 or (before is not None and after is not None and after > before):
        return True
    return False if before is not None else None


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return text if isinstance(exc, AssertionError) and text else f"{type(exc).__name__}: {text}"


def run_cases(verification: Verification, names: Iterable[str] | None = None) -> Report:
    """Run the cases of ``verification`` (all, or those in ``names``) and report each one.

    Needs no pytest. Each case gets a fresh environment; a :class:`SkipTest` is a skip,
    a :class:`RequiredRuleViolated` is ``violated``, any other exception a failure.
    """
    wanted = None if names is None else [verification.tck_case(n).name for n in names]
    results: list[CaseResult] = []
    for info in verification.tck_cases:
        if wanted is not None and info.name not in wanted:
            continue
        started = time.monotonic()
        outcome: Outcome = "passed"
        message = ""
        try:
            verification.run_tck_case(info.name)
        except unittest.SkipTest as exc:
            outcome, message = "skipped", str(exc)
        except RequiredRuleViolated as exc:
            outcome, message = "violated", _describe(exc)
        except Exception as exc:
            outcome, message = "failed", _describe(exc)
        results.append(
            CaseResult(
                name=info.name,
                jvm_name=info.jvm_name,
                rule=info.rule,
                category=info.category,
                outcome=outcome,
                message=message,
                duration=time.monotonic() - started,
            )
        )
    log = _late_breaches(type(verification))
    return Report(tuple(_with_late_breaches(results, log.take(), "found when the run ended")), late=log)


def _with_late_breaches(
    results: list[CaseResult], late: list[tuple[str, str]], found: str
) -> list[CaseResult]:
    """``results``, with each case whose stream broke a rule after the case ended failed.

    A breach after a case ended fails the next case (:func:`_raise_late`); the run's last
    case has no next, so what the log holds when the run ends fails the case it names (or,
    for a case of an earlier run, the last case, naming it). This reads the log once and
    never waits; a breach committed after ``run_cases`` returned is found by
    :meth:`Report.recheck`. ``found`` says when in the message.
    """
    if not late or not results:
        return results
    names = {result.name for result in results}
    out = list(results)
    for i, result in enumerate(out):
        mine = [message for case, message in late if case == result.name]
        if i == len(out) - 1:
            mine += [f"{message} (case {case})" for case, message in late if case not in names]
        if mine:
            was = f"{result.outcome}: {result.message}" if result.message else result.outcome
            then = "".join(f"\n  then: {message}" for message in mine[1:5])
            message = (
                f"{mine[0]}, signalled to a subscriber after its case had ended ({found}){then}"
                f"\n  the case itself: {was}"
            )
            out[i] = replace(result, outcome="failed", message=message)
    return out
