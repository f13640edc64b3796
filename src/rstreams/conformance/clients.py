"""The client conformance suite: a scripted RS.io server that drives any client through cases.

::

    python -m rstreams.conformance.clients \
        --client "python -m rstreams.conformance.adapter {url} {publisher} {script}"
    python -m rstreams.conformance.clients --junit clients.xml \
        --client "node my-adapter.js {url} {publisher} {script}"

The server suite (:mod:`rstreams.conformance`) plays the client against a server; this one
plays the server against a client. For each case it listens on a fresh loopback port
(TCP, or WebSocket with ``--transport ws``), starts the client's *adapter* (the command,
with ``{url}``, ``{publisher}`` and ``{script}`` filled in; :mod:`rstreams.conformance.adapter`
documents the contract and is rstreams' own), and then acts the server's part byte by
byte: it reads the client's hello and subscribe, grants or withholds, sends elements
whole, packed or in parts, errors and goodbyes, or breaks the protocol on purpose. A case
passes when the client's frames obey PROTOCOL.md (a monitor checks every one: hello first,
ids, demand, nothing after goodbye) and the adapter reported what a correct client reports.
"""

from __future__ import annotations

import asyncio
import fnmatch
import sys
from collections.abc import Sequence
from typing import Any

from rstreams.conformance import _client_cases  # noqa: F401 - registers the cases
from rstreams.conformance._client_suite import CLIENT_CASES, ClientCase, Options, run_client_case, run_clients
from rstreams.conformance._own_time import OwnTimeLoop
from rstreams.conformance._runner import CaseResult, Outcome, UsageParser, junit_problem, write_junit

__all__ = ["CLIENT_CASES", "ClientCase", "Options", "main", "run_client_case", "run_clients"]


def _report(results: Sequence[CaseResult], out: Any) -> None:
    for r in results:
        mark = {Outcome.PASS: "PASS", Outcome.FAIL: "FAIL", Outcome.SKIP: "skip"}[r.outcome]
        out.write(f"{mark}  {r.case.id:<28} {r.seconds:5.2f}s  {r.case.cite}\n")
        if r.outcome is Outcome.FAIL:
            out.write(f"      rule: {r.case.text}\n      why:  {r.message}\n")
    passed = sum(r.outcome is Outcome.PASS for r in results)
    out.write(f"\n{passed} of {len(results)} client cases passed\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: run the client suite against an adapter command; exit 1 if a case failed,
    2 on a usage error (one line on standard error, as ``rstreams conformance``)."""
    parser = UsageParser(
        prog="python -m rstreams.conformance.clients",
        description="Drive an RS.io client through the client conformance cases (docs/conformance.md).",
    )
    parser.add_argument(
        "--client",
        help="the adapter command; {url}, {publisher} and {script} are filled in per case "
        "(not needed with --list)",
    )
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    parser.add_argument("-k", metavar="PATTERN", help="run the cases whose id matches this glob")
    parser.add_argument(
        "--transport",
        choices=("tcp", "ws"),
        default=Options.transport,
        help="what the scripted server listens on (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout", type=float, default=Options.timeout, help="seconds per wait (default: %(default)s)"
    )
    parser.add_argument(
        "--start-timeout",
        type=float,
        default=Options.start_timeout,
        help="seconds for the adapter to start and connect (default: %(default)s)",
    )
    parser.add_argument(
        "--case-timeout",
        type=float,
        default=Options.case_timeout,
        help="seconds per case from the adapter's connection (default: %(default)s)",
    )
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    args = parser.parse_args(argv)
    if args.list:
        for c in CLIENT_CASES:
            print(f"{c.id:<28} {c.cite:<18} {c.text}")
        return 0
    if args.client is None:  # (not required by argparse: --list runs nothing)
        parser.error("the following arguments are required: --client")
    missing = [p for p in ("{url}", "{publisher}", "{script}") if p not in args.client]
    if missing:  # every case fills in all three (docs/conformance.md, the adapter contract)
        parser.error(
            f"--client must contain {{url}}, {{publisher}} and {{script}}, filled in per case; "
            f"{' and '.join(missing)} missing"
        )
    if args.k is not None and not any(fnmatch.fnmatch(c.id, args.k) for c in CLIENT_CASES):
        parser.error(f"no case matches -k {args.k!r} (--list shows every case)")
    for option in ("timeout", "start_timeout", "case_timeout"):
        if not getattr(args, option) > 0:  # NaN too
            parser.error(f"--{option.replace('_', '-')} needs seconds > 0, got {getattr(args, option)}")
    problem = junit_problem(args.junit)
    if problem is not None:
        parser.error(problem)
    options = Options(
        timeout=args.timeout,
        start_timeout=args.start_timeout,
        case_timeout=args.case_timeout,
        transport=args.transport,
    )
    with asyncio.Runner(loop_factory=OwnTimeLoop) as runner:  # (deadlines of own time, not of load)
        results = runner.run(run_clients(args.client, options, pattern=args.k))
    _report(results, sys.stdout)
    if args.junit:
        write_junit(results, args.junit, suite="rstreams.conformance.clients")
    return 1 if any(r.outcome is Outcome.FAIL for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
