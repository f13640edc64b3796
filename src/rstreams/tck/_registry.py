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
  - ``optional``: a failure becomes a :class:`SkipTest` whose message says clearly that
    the optional rule FAILED ("optional failure means SKIP, never FAIL"), except
    :class:`HardFailure`, which a case raises when the JVM TCK fails it anyway;
  - ``stochastic``: like required (the case itself decides whether to skip);
  - ``untested``: always :class:`SkipTest` ("Not verified by this TCK.").

* :func:`run_cases` runs every case of an instance and returns a :class:`Report`; it needs
  no pytest. Each case gets a fresh environment (``create_env()``) and its leftover
  subscriptions are cancelled afterwards.

Nothing here imports pytest: a skip is :class:`SkipTest`, a subclass of
:class:`unittest.SkipTest`, which pytest and unittest both report as a skip.
"""

from __future__ import annotations

import threading
import time
import unittest
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Final, Literal, TypeVar

from rstreams.errors import ReactiveStreamsError
from rstreams.tck._jvm_names import snake

if TYPE_CHECKING:
    from rstreams.tck._env import TestEnvironment

__all__ = [
    "CaseHung",
    "CaseInfo",
    "CaseResult",
    "Category",
    "HardFailure",
    "Report",
    "SkipTest",
    "TCKFailure",
    "Verification",
    "run_cases",
    "tck_test",
]

Category = Literal["required", "optional", "stochastic", "untested"]
Outcome = Literal["passed", "failed", "skipped"]
_CATEGORIES: Final = ("required", "optional", "stochastic", "untested")

F = TypeVar("F", bound=Callable[..., Any])

NOT_VERIFIED: Final = "Not verified by this TCK."


class SkipTest(ReactiveStreamsError, unittest.SkipTest):
    """A TCK case does not apply (untested rule, missing capability, optional failure)."""


class TCKFailure(ReactiveStreamsError, AssertionError):
    """A TCK case failed: the implementation under test broke the rule the message names."""


class HardFailure(TCKFailure):
    """A failure that fails even an optional case (the JVM TCK's ``optional_spec104`` does)."""


class CaseHung(HardFailure):
    """A case ran past ``case_timeout``: the implementation under test blocked."""


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
    """All case results of one verification run; ``ok`` when nothing failed."""

    results: tuple[CaseResult, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def passed(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome == "passed"]

    @property
    def failed(self) -> list[CaseResult]:
        return [r for r in self.results if r.outcome == "failed"]

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
            lines.append(f"{r.outcome.upper():<8} {r.rule or '-':<5} {r.category:<10} {r.name}")
            if r.message and r.outcome != "passed":
                first = r.message.strip().splitlines()[0] if r.message.strip() else ""
                lines.append(f"{'':<25} {first[:200]}")
        lines.append(
            f"{len(self.passed)} passed, {len(self.failed)} failed, {len(self.skipped)} skipped"
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


def _alias(info: CaseInfo) -> Callable[[Verification], None]:
    def test(self: Verification) -> None:
        self.run_tck_case(info.name)

    test.__name__ = test.__qualname__ = f"test_{info.name}"
    rule = f"rule {float(info.rule):g}" if info.rule else "set-up check"
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
    case_timeout: ClassVar[float | None] = 120.0
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
    def tck_case(self, name: str) -> CaseInfo:
        """The :class:`CaseInfo` called ``name`` (Python or JVM spelling)."""
        for info in self.tck_cases:
            if name in (info.name, info.jvm_name):
                return info
        raise KeyError(f"{type(self).__name__} has no TCK case {name!r}")

    def run_tck_case(self, name: str) -> None:
        """Run one case with its category's meaning; raises :class:`SkipTest` or a failure.

        A failure's message is extended with the other errors recorded during the case,
        which often tell the cause (an ``on_next`` before ``on_subscribe``, say).
        """
        info = self.tck_case(name)
        self._tck_env = None
        env = self.env
        env.clear_async_errors()
        hung = False
        try:
            if info.category == "untested":
                raise SkipTest(self.not_verified_message)
            try:
                self._run_body(getattr(self, info.name))
            except unittest.SkipTest:
                raise
            except Exception as exc:
                hung = isinstance(exc, CaseHung)
                failure = _with_recorded_errors(exc, env.async_errors)
                if info.category == "optional" and not isinstance(exc, HardFailure):
                    raise SkipTest(
                        f"OPTIONAL rule {info.rule} FAILED (reported as a skip: optional rules never fail the"
                        f" run); this optional requirement is NOT implemented: {_describe(failure)}"
                    ) from exc
                if failure is exc:
                    raise
                raise failure from exc
        finally:
            self._tck_env = None
            if not hung:  # after a hang, cancelling could block this thread too
                env.close()

    def _run_body(self, body: Callable[[], None]) -> None:
        """Run ``body`` in a worker thread, waiting at most :attr:`case_timeout` seconds.

        A publisher that deadlocks inside ``subscribe``/``request``/``cancel`` must not hang
        the whole run: after the limit the case fails and the stuck (daemon) thread is
        abandoned.
        """
        limit = self.case_timeout
        if limit is None:
            body()
            return
        raised: list[BaseException] = []
        done = threading.Event()

        def work() -> None:
            try:
                body()
            except BaseException as exc:  # handed to the waiting thread, which re-raises it
                raised.append(exc)
            finally:
                done.set()

        threading.Thread(target=work, name=f"rstreams-tck-{body.__name__[:48]}", daemon=True).start()
        if not done.wait(limit):
            raise CaseHung(
                f"the case did not finish within {limit:g} s (case_timeout): the implementation under test"
                " probably blocks, e.g. a deadlock in subscribe(), request() or cancel()"
            )
        if raised:
            raise raised.pop()


def _with_recorded_errors(exc: Exception, recorded: list[BaseException]) -> Exception:
    """``exc``, or a failure of the same kind whose message also lists the other recorded errors."""
    others = [e for e in recorded if e is not exc and str(e) not in str(exc)]
    if not others:
        return exc
    lines = "".join(f"\n  also recorded: {_describe(e)}" for e in others[:5])
    kind = type(exc) if isinstance(exc, TCKFailure) else TCKFailure
    return kind(f"{_describe(exc)}{lines}")


def _describe(exc: BaseException) -> str:
    text = str(exc)
    return text if isinstance(exc, AssertionError) and text else f"{type(exc).__name__}: {text}"


def run_cases(verification: Verification, names: Iterable[str] | None = None) -> Report:
    """Run the cases of ``verification`` (all, or those in ``names``) and report each one.

    Needs no pytest. Each case gets a fresh environment; a :class:`SkipTest` is a skip,
    any other exception a failure with its message.
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
    return Report(tuple(results))
