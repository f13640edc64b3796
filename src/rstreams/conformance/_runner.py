"""Running the cases: probing the endpoint, deadlines, the terminal table, JUnit XML, ``main``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import difflib
import errno
import fnmatch
import os
import secrets
import socket
import ssl
import sys
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import NoReturn, TextIO

from rstreams.conformance._case import AREAS, CASES, Case, CaseFailure, CitedCase, Context, Options, Skip
from rstreams.net._closing import NOT_RSIO_HINT, SILENT_HINT
from rstreams.wire import Subscribe

__all__ = [
    "KINDS",
    "CaseResult",
    "Outcome",
    "catalogue_markdown",
    "main",
    "probe",
    "run",
    "select",
    "write_junit",
]

KINDS: dict[str, str] = {
    "range": "range?n=0",
    "fixed": "fixed?n=0",
    "large": "large?n=0&size=16",
    "error": "error?after=0",
    "never": "never",
    "infinite": "infinite?tag=probe",
    "stats": "stats?tag=probe",
    "echo": "echo?name=conformance-probe",
}
"""The conformance publishers, with the cheap name the probe subscribes to."""


class Outcome(Enum):
    """What became of a case."""

    PASS = "pass"
    FAIL = "fail"
    SKIP = "skip"


@dataclass(frozen=True, slots=True)
class CaseResult:
    """A case's outcome, why (for fail and skip), and how long it took."""

    case: CitedCase
    outcome: Outcome
    message: str = ""
    seconds: float = 0.0


def select(pattern: str | None, cases: Iterable[Case] = CASES) -> list[Case]:
    """Cases whose id contains ``pattern`` (or matches it as a glob when it has ``*?[``)."""
    chosen = list(cases)
    if not pattern:
        return chosen
    if any(ch in pattern for ch in "*?["):
        return [c for c in chosen if fnmatch.fnmatchcase(c.id, pattern)]
    return [c for c in chosen if pattern in c.id]


async def probe(url: str, options: Options) -> frozenset[str]:
    """Which conformance publishers the endpoint offers: subscribe to each with demand 0.

    onSubscribe means offered; onError without onSubscribe means not offered.

    Raises:
        OSError: the endpoint cannot be reached. CaseFailure: it did not answer the probe.
    """
    ctx = Context(url, options, frozenset(KINDS))
    peer = None
    try:
        peer = await ctx.open()
        kinds = list(KINDS)
        names = {kind: options.prefix + KINDS[kind] for kind in kinds}
        names["echo"] += f"&peer={peer.raw.local_address}"  # the server then subscribes to us: refused
        await peer.send(
            *(Subscribe(publisher=names[kind], subscriber=index + 1) for index, kind in enumerate(kinds))
        )
        found: set[str] = set()
        for index, kind in enumerate(kinds):
            view = await peer.subscribed(index + 1)
            if view.subscribed:
                found.add(kind)
        return frozenset(found)
    except (OSError, CaseFailure) as error:
        if (
            isinstance(error, CaseFailure)
            and str(error).startswith("timed out")
            and peer is not None
            and peer.monitor.server_hello is None
        ):  # connected, and not a byte of RS.io back: a client's handshake timeout says the same
            said = f"the endpoint did not say hello within {options.timeout:g} s (--timeout S)"
            raise CaseFailure(f"{said}; {SILENT_HINT}") from error
        secure = url.startswith(("tls:", "wss:"))
        if (
            isinstance(error, CaseFailure)
            and str(error).startswith("the connection ended")
            and not secure
            and peer is not None
            and peer.monitor.server_hello is None
        ):  # closed without a byte of RS.io: the URL's scheme, as subscribe says (not --publisher)
            said = "the endpoint closed the connection before its hello"
            raise CaseFailure(f"{said}; {NOT_RSIO_HINT}") from error
        if (
            secure
            and options.certfile is None
            and not isinstance(error, ssl.SSLError)  # our side refused the endpoint: says why already
            and not _unreachable(error)  # nothing there to ask for a certificate
            and (peer is None or peer.monitor.server_hello is None)
        ):
            hint = "the endpoint closed before its hello: does it require a client certificate (--certfile)?"
            raise CaseFailure(f"{error}; {hint}") from error
        raise
    finally:
        ctx.close()


async def run_case(case: Case, url: str, options: Options, available: frozenset[str]) -> CaseResult:
    """Run one case with its deadline; never raises for what the endpoint does."""
    missing = [kind for kind in case.needs if kind not in available]
    if missing:
        return CaseResult(case, Outcome.SKIP, "the endpoint does not offer " + ", ".join(missing))
    ctx = Context(url, options, available)
    start = time.monotonic()
    deadline = case.timeout or options.case_timeout
    if case.idle_waits and options.idle_timeout is not None:  # waits the endpoint's idle timeout out
        deadline += case.idle_waits * options.idle_timeout + options.timeout
    outcome, message = Outcome.PASS, ""
    scope = asyncio.timeout(deadline)
    try:
        async with scope:
            await case.fn(ctx)
    except Skip as skip:
        outcome, message = Outcome.SKIP, str(skip)
    except CaseFailure as failure:
        outcome, message = Outcome.FAIL, str(failure)
    except TimeoutError:
        outcome = Outcome.FAIL
        message = (
            f"the case did not finish within {deadline:g} s (a hang)"
            if scope.expired()
            else f"a connection timed out (after --timeout {options.timeout:g} s)"
        )
    except OSError as error:
        outcome, message = Outcome.FAIL, f"connection error: {type(error).__name__}: {error}"
    except Exception as error:  # a case must report, not crash the run
        outcome, message = Outcome.FAIL, f"unexpected {type(error).__name__}: {error}"
    finally:
        ctx.close()
    if outcome is not Outcome.SKIP:
        violations = [v for peer in ctx.peers for v in peer.monitor.violations]
        if violations:
            outcome = Outcome.FAIL
            message = "; ".join(filter(None, [message, *violations]))
    return CaseResult(case, outcome, message, time.monotonic() - start)


async def run(
    url: str,
    options: Options | None = None,
    *,
    cases: Sequence[Case] | None = None,
    available: frozenset[str] | None = None,
) -> list[CaseResult]:
    """Run ``cases`` (default: all) against ``url``; results in the order of the cases.

    ``available`` names the conformance publishers the endpoint offers (default: probed).

    Raises:
        OSError: the endpoint cannot be reached at all (the probe failed to connect).
    """
    return await _run(url, options or Options(), CASES if cases is None else cases, available, _Progress())


@dataclass(slots=True)
class _Progress:
    """How far a run got, for the summary of one that was interrupted: the results so far (in the
    order the cases finished), the cases running now, whether the probe was done."""

    finished: list[CaseResult] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    probed: bool = False


async def _run(
    url: str, options: Options, cases: Sequence[Case], available: frozenset[str] | None, progress: _Progress
) -> list[CaseResult]:
    """:func:`run`, keeping ``progress`` up to date."""
    if available is None:
        available = await probe(url, options)
    progress.probed = True
    limit = asyncio.Semaphore(max(1, options.jobs))

    async def one(case: Case) -> CaseResult:
        async with limit:
            progress.running.append(case.id)
            result = await run_case(case, url, options, available)
            progress.running.remove(case.id)
            progress.finished.append(result)
            return result

    return list(await asyncio.gather(*(one(c) for c in cases)))


# -- reporting ---------------------------------------------------------------------------------
_MARK = {Outcome.PASS: "PASS", Outcome.FAIL: "FAIL", Outcome.SKIP: "skip"}


def report(
    results: Sequence[CaseResult], url: str, out: TextIO, *, verbose: bool = False, interrupted: str = ""
) -> None:
    """Print one line per case (failures with their reason) and a table per area; ``interrupted``
    says, for a run stopped before its end, how far it got and where it stopped (the table then
    counts the cases that finished)."""
    out.write(f"RS.io conformance against {url}: {interrupted or f'{len(results)} cases'}\n\n")
    width = max((len(r.case.id) for r in results), default=10)
    for r in results:
        if r.outcome is Outcome.PASS and not verbose:
            continue
        out.write(f"{_MARK[r.outcome]}  {r.case.id:<{width}}  {r.seconds:5.2f}s  {r.case.cite}\n")
        if r.outcome is Outcome.FAIL:
            out.write(f"      rule: {r.case.text}\n      why:  {r.message}\n")
        elif r.outcome is Outcome.SKIP:
            out.write(f"      {r.message}\n")
    column = max(len(title) for title in AREAS.values())  # the longest area's title fits
    out.write(f"\n{'area':<{column}} {'pass':>5} {'fail':>5} {'skip':>5}\n")
    totals = dict.fromkeys(Outcome, 0)
    for area, title in AREAS.items():
        counts = dict.fromkeys(Outcome, 0)
        for r in results:
            if r.case.area == area:
                counts[r.outcome] += 1
        if sum(counts.values()):
            passed, failed, skipped = counts[Outcome.PASS], counts[Outcome.FAIL], counts[Outcome.SKIP]
            out.write(f"{title:<{column}} {passed:>5} {failed:>5} {skipped:>5}\n")
        for key, value in counts.items():
            totals[key] += value
    out.write(
        f"{'total':<{column}} {totals[Outcome.PASS]:>5} {totals[Outcome.FAIL]:>5} {totals[Outcome.SKIP]:>5}\n"
    )


def write_junit(
    results: Sequence[CaseResult],
    path: str,
    *,
    suite: str = "rstreams.conformance",
    interrupted: Sequence[Case] = (),
    stopped: str = "",
) -> None:
    """Write JUnit XML: one testcase per case, its citation as a property and in failures.

    For a run stopped before its end, ``interrupted`` are the cases that were running: each is a
    testcase with an ``error`` (type ``Interrupted``), so that a CI shows it as not finished rather
    than as passed or skipped; ``stopped`` (how far the run got) becomes the suite's ``interrupted``
    property. The file is written whole or not at all: into a temporary file beside ``path``,
    renamed over it at the end, so an interrupt while writing leaves the old file (or none).
    """
    root = ET.Element("testsuites")
    failures = sum(r.outcome is Outcome.FAIL for r in results)
    skipped = sum(r.outcome is Outcome.SKIP for r in results)
    element = ET.SubElement(
        root,
        "testsuite",
        name=suite,
        tests=str(len(results) + len(interrupted)),
        failures=str(failures),
        errors=str(len(interrupted)),
        skipped=str(skipped),
        time=f"{sum(r.seconds for r in results):.3f}",
    )
    if stopped:
        ET.SubElement(ET.SubElement(element, "properties"), "property", name="interrupted", value=stopped)
    for r in results:
        testcase = ET.SubElement(
            element,
            "testcase",
            classname=f"conformance.{r.case.area}",
            name=r.case.id,
            time=f"{r.seconds:.3f}",
        )
        properties = ET.SubElement(testcase, "properties")
        ET.SubElement(properties, "property", name="cite", value=r.case.cite)
        ET.SubElement(properties, "property", name="rule", value=r.case.text)
        if r.outcome is Outcome.FAIL:
            failure = ET.SubElement(testcase, "failure", message=r.message, type="ConformanceFailure")
            failure.text = f"{r.case.cite}: {r.case.text}\n{r.message}"
        elif r.outcome is Outcome.SKIP:
            ET.SubElement(testcase, "skipped", message=r.message)
    for c in interrupted:
        testcase = ET.SubElement(element, "testcase", classname=f"conformance.{c.area}", name=c.id, time="0")
        properties = ET.SubElement(testcase, "properties")
        ET.SubElement(properties, "property", name="cite", value=c.cite)
        ET.SubElement(properties, "property", name="rule", value=c.text)
        error = ET.SubElement(testcase, "error", message=_UNFINISHED, type="Interrupted")
        error.text = f"{c.cite}: {c.text}\n{_UNFINISHED}"
    ET.indent(root)
    _write_whole(ET.ElementTree(root), path)


_UNFINISHED = "interrupted by Ctrl-C before this case finished: no outcome"


def _write_whole(tree: ET.ElementTree[ET.Element], path: str) -> None:
    """Write ``tree`` to ``path`` as XML atomically: a new temporary file in the same directory (so
    the rename stays on one file system; made with the mode ``open()`` gives, the umask applied),
    flushed to disk, then renamed over ``path``. On any error or interrupt before the rename, the
    temporary file is removed and ``path`` is as it was."""
    directory, name = os.path.split(os.path.abspath(path))
    temporary = os.path.join(directory, f".{name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(handle, "wb") as file:
            tree.write(file, encoding="utf-8", xml_declaration=True)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def catalogue_markdown(cases: Sequence[Case] = CASES) -> str:
    """The catalogue as Markdown: cases per area, then every case with its citation and rule.

    docs/conformance.md holds this between ``<!-- generated:conformance-cases -->`` markers
    (``python -m rstreams.conformance URL --list --markdown`` prints it; a test compares).
    """
    lines = [f"{len(cases)} cases.", "", "| area | cases |", "|---|---|"]
    for area, title in AREAS.items():
        count = sum(c.area == area for c in cases)
        if count:
            lines.append(f"| `{area}` {title} | {count} |")
    lines += ["", "| case | citation | rule |", "|---|---|---|"]
    for c in cases:
        rule = c.text.replace("|", "\\|")
        lines.append(f"| `{c.id}` | {c.cite} | {rule} |")
    return "\n".join(lines) + "\n"


# -- command line ------------------------------------------------------------------------------
class UsageParser(argparse.ArgumentParser):
    """argparse's parser with a usage error in one line, exit 2, as the other ``rstreams`` commands
    say it: ``rstreams conformance: unrecognized arguments: --x (see rstreams conformance --help)``;
    both suites' command lines use it."""

    def error(self, message: str) -> NoReturn:
        unknown = message.partition("unrecognized arguments: ")[2].split()
        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        for extra in (arg for arg in unknown if arg.startswith("--")):
            near = difflib.get_close_matches(extra.partition("=")[0], known, n=1)
            if near:
                message += f"; did you mean {near[0]}?"
                break
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser(prog: str = "python -m rstreams.conformance") -> argparse.ArgumentParser:
    parser = UsageParser(
        prog=prog,
        description="Run the RS.io conformance suite against an endpoint (docs/conformance.md).",
    )
    parser.add_argument(
        "url",
        nargs="?",
        help="tcp://host:port, tls://host:port, unix:///path, ws://host:port/path or wss://host:port/path "
        "(not needed with --list)",
    )
    parser.add_argument("--junit", metavar="FILE", help="write JUnit XML to FILE")
    parser.add_argument(
        "-k", metavar="PATTERN", dest="pattern", help="run cases whose id contains PATTERN (or glob)"
    )
    parser.add_argument(
        "--publisher",
        metavar="NAME",
        action="append",
        choices=sorted(KINDS),
        help="the endpoint offers this conformance publisher (repeat; default: probe the endpoint)",
    )
    parser.add_argument(
        "--prefix",
        metavar="PREFIX",
        default=Options.prefix,
        help="where the conformance publishers live (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        default=Options.timeout,
        help="seconds per wait (default: %(default)s)",
    )
    parser.add_argument(
        "--quiet",
        type=float,
        metavar="S",
        default=Options.quiet,
        help="seconds to watch for unwanted frames (default: %(default)s)",
    )
    parser.add_argument(
        "--case-timeout",
        type=float,
        metavar="S",
        default=Options.case_timeout,
        help="seconds per case; the idle cases get their wait for --idle-timeout on top "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--jobs", type=int, metavar="N", default=Options.jobs, help="cases run at once (default: %(default)s)"
    )
    parser.add_argument(
        "--max-subscriptions",
        type=int,
        metavar="N",
        default=Options.max_subscriptions,
        help="the endpoint's limit of subscriptions per connection (default: %(default)s)",
    )
    parser.add_argument(
        "--max-element-size",
        type=int,
        metavar="BYTES",
        default=Options.max_element_size,
        help="the endpoint's largest element in bytes, PROTOCOL.md §11 (default: %(default)s)",
    )
    tls = parser.add_argument_group("TLS (tls://, wss://)")
    tls.add_argument("--cafile", metavar="PEM", help="CA certificates that verify the endpoint")
    tls.add_argument("--certfile", metavar="PEM", help="client certificate for mutual TLS")
    tls.add_argument("--keyfile", metavar="PEM", help="the client certificate's key (default: in --certfile)")
    tls.add_argument(
        "--insecure",
        action="store_true",
        help="INSECURE: do not verify the endpoint's certificate or name (self-signed test endpoints only)",
    )
    tls.add_argument(
        "--server-name", metavar="NAME", help="name the certificate must carry (default: URL host)"
    )
    parser.add_argument(
        "--idle-timeout",
        type=float,
        metavar="S",
        help="the endpoint's idle timeout (§14.2), to check that it closes idle connections",
    )
    parser.add_argument(
        "--token",
        metavar="TOKEN",
        help="a token the endpoint accepts (extension auth, §15; default: $RSIO_CONFORMANCE_TOKEN)",
        default=os.environ.get("RSIO_CONFORMANCE_TOKEN"),
    )
    parser.add_argument("--list", action="store_true", help="list the cases and their rules, run nothing")
    parser.add_argument(
        "--markdown", action="store_true", help="with --list: as docs/conformance.md's tables"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="also list the cases that passed")
    return parser


def _bad_numbers(args: argparse.Namespace) -> str | None:
    """The first numeric option out of its range, as a message naming it; ``None`` if all fit."""
    positive = {
        "--timeout": args.timeout,
        "--case-timeout": args.case_timeout,
        "--jobs": args.jobs,
        "--max-subscriptions": args.max_subscriptions,
        "--max-element-size": args.max_element_size,
        "--idle-timeout": 1 if args.idle_timeout is None else args.idle_timeout,
    }
    for option, value in positive.items():
        if not value > 0:  # NaN too
            return f"{option} needs a number > 0, got {value}"
    if not args.quiet >= 0:
        return f"--quiet needs a number of seconds >= 0, got {args.quiet}"
    return None


_UNREACHABLE = frozenset({errno.ECONNREFUSED, errno.ENOENT, errno.EHOSTUNREACH, errno.ENETUNREACH})
"""The ``errno`` of a connection that never reached an endpoint: refused (nothing listens at that
port), no such Unix socket, no route to the host or its network."""


def _unreachable(error: BaseException) -> bool:
    """Whether connecting failed before any endpoint answered (so no TLS handshake was made): the
    host's name did not resolve, or the socket's connect failed with an ``errno`` of
    :data:`_UNREACHABLE`."""
    return isinstance(error, socket.gaierror) or (isinstance(error, OSError) and error.errno in _UNREACHABLE)


def _hint(error: BaseException) -> str:
    """What to check when the suite could not start against the URL, as `` (...)``; ``""`` when
    the error says it already (a URL the driver does not speak, a missing extra)."""
    if isinstance(error, socket.gaierror):
        return " (the URL's host: this machine finds no address for that name)"
    if isinstance(error, ConnectionRefusedError) and error.errno == errno.ECONNREFUSED:
        return " (connection refused: nothing listens at that host and port; check the URL)"
    if isinstance(error, ssl.SSLError) and error.reason == "WRONG_VERSION_NUMBER":  # TLS to a plain port
        return " (the URL: the endpoint does not speak TLS there; tcp:// or ws:// for one served without it)"
    if isinstance(error, ssl.SSLError):
        return (
            " (tls:// and wss://: --cafile PEM verifies the endpoint, --server-name NAME the name it carries)"
        )
    if isinstance(error, OSError):
        return " (the URL: is an RS.io endpoint listening there? --timeout S: how long each wait lasts)"
    if isinstance(error, CaseFailure) and error.__cause__ is None:
        return (
            " (the probe found no RS.io answer; --publisher NAME names what the endpoint offers, skipping it)"
        )
    return ""


def junit_problem(path: str | None) -> str | None:
    """``--junit PATH`` named, when its directory is missing (found before a run, not after it,
    as a traceback); both suites' command lines ask."""
    if path and not os.path.isdir(os.path.dirname(path) or "."):
        return f"--junit {path}: no directory {os.path.dirname(path)!r} to write it in"
    return None


def main(argv: Sequence[str] | None = None, *, prog: str = "python -m rstreams.conformance") -> int:
    """The command line; returns 0 if no case failed, 1 if one did, 2 if the endpoint is
    unreachable or an option is wrong (named on standard error), 130 on Ctrl-C (after the summary
    of the cases that finished)."""
    parser = _parser(prog)
    args = parser.parse_args(argv)
    if args.url is None and not args.list:  # only a run needs an endpoint
        parser.error("the following arguments are required: url (only --list runs without one)")
    cases = select(args.pattern)
    if not cases:
        sys.stderr.write(f"{prog}: no case matches -k {args.pattern!r} (--list shows every case)\n")
        return 2
    problem = _bad_numbers(args) or junit_problem(args.junit)
    if problem is not None:
        sys.stderr.write(f"{prog}: {problem}\n")
        return 2
    if args.list and args.markdown:
        sys.stdout.write(catalogue_markdown(cases))
        return 0
    if args.list:
        for c in cases:
            sys.stdout.write(f"{c.id:<40} {c.cite:<22} {c.text}\n")
        return 0
    options = Options(
        timeout=args.timeout,
        quiet=args.quiet,
        case_timeout=args.case_timeout,
        prefix=args.prefix,
        jobs=args.jobs,
        max_subscriptions=args.max_subscriptions,
        max_element_size=args.max_element_size,
        cafile=args.cafile,
        certfile=args.certfile,
        keyfile=args.keyfile,
        insecure=args.insecure,
        server_name=args.server_name,
        idle_timeout=args.idle_timeout,
        token=args.token,
    )
    if options.uses_tls and not args.url.startswith(("tls://", "wss://")):
        sys.stderr.write(f"{prog}: TLS options need a tls:// or wss:// URL, not {args.url}\n")
        return 2
    if options.insecure:
        sys.stderr.write("warning: --insecure: the endpoint's certificate is NOT verified\n")
    available = frozenset(args.publisher) if args.publisher else None
    label = args.url + (" [--insecure: its certificate was NOT verified]" if options.insecure else "")
    progress = _Progress()
    try:
        results = asyncio.run(_run(args.url, options, cases, available, progress))
    except (OSError, ValueError, CaseFailure, ImportError) as error:
        sys.stderr.write(f"{prog}: cannot run the suite against {args.url}: {error}{_hint(error)}\n")
        return 2
    except KeyboardInterrupt:  # Ctrl-C: what finished so far, and where it stopped; exit 130 as a shell does
        try:
            _report_interrupted(progress, cases, label, args, prog)
        except KeyboardInterrupt:
            _second_ctrl_c(args.junit, prog)
        return 130
    report(results, label, sys.stdout, verbose=args.verbose)
    failed = any(r.outcome is Outcome.FAIL for r in results)
    if args.junit:
        try:
            write_junit(results, args.junit)
        except OSError as error:
            sys.stderr.write(f"{prog}: cannot write --junit {args.junit}: {error}\n")
            return 1 if failed else 2
        except KeyboardInterrupt:
            _second_ctrl_c(args.junit, prog)
            return 130
    return 1 if failed else 0


def _report_interrupted(
    progress: _Progress, cases: Sequence[Case], label: str, args: argparse.Namespace, prog: str
) -> None:
    """After Ctrl-C: the summary of the cases that finished (in case order), its first line saying
    how far the run got and where it stopped; with ``--junit``, the file for those cases and the
    running ones as interrupted (see :func:`write_junit`)."""
    order = {c.id: index for index, c in enumerate(cases)}
    finished = sorted(progress.finished, key=lambda r: order[r.case.id])
    running = sorted((c for c in cases if c.id in progress.running), key=lambda c: order[c.id])
    where = (
        "while probing the endpoint"
        if not progress.probed
        else f"during {', '.join(c.id for c in running)}"
        if running
        else "between cases"
    )
    stopped = f"{len(finished)} of {len(cases)} cases, interrupted by Ctrl-C {where}"
    report(finished, label, sys.stdout, verbose=args.verbose, interrupted=stopped)
    sys.stdout.flush()
    if args.junit:
        try:
            write_junit(finished, args.junit, interrupted=running, stopped=stopped)
        except OSError as error:
            sys.stderr.write(f"{prog}: cannot write --junit {args.junit}: {error}\n")


def _second_ctrl_c(junit: str | None, prog: str) -> None:
    """Say that a Ctrl-C came while the command was reporting, and what became of ``--junit``."""
    kept = f"; --junit {junit} is as it was or complete" if junit else ""
    sys.stderr.write(f"{prog}: Ctrl-C again: stopped{kept}\n")
