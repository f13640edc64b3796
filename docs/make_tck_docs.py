"""Generate docs/tck.md's case table and its "stricter than the JVM TCK" list from the code.

Both come from the TCK itself (the registry of cases, and ``rstreams.tck._stricter``);
never edit them by hand.

    python docs/make_tck_docs.py          # rewrite the generated part of docs/tck.md
    python docs/make_tck_docs.py --check  # exit 1 if docs/tck.md is out of date (a test runs this)
"""

from __future__ import annotations

import sys
from pathlib import Path

from rstreams.tck import (
    IdentityProcessorVerification,
    PublisherVerification,
    SubscriberBlackboxVerification,
    SubscriberWhiteboxVerification,
)
from rstreams.tck._stricter import STRICTER
from rstreams.tck._subscriber_names import IPV_OWN_CASES

DOC = Path(__file__).with_name("tck.md")
BEGIN = "<!-- BEGIN GENERATED: python docs/make_tck_docs.py -->"
END = "<!-- END GENERATED -->"
BEGIN_STRICTER = "<!-- BEGIN GENERATED STRICTER: python docs/make_tck_docs.py -->"
END_STRICTER = "<!-- END GENERATED STRICTER -->"


def _stricter_rows() -> list[str]:
    lines = ["| # | rule | where | what this port checks | why |", "|---:|---|---|---|---|"]
    for number, entry in enumerate(STRICTER, 1):
        where = "every case" if not entry.cases else ", ".join(f"`{case}`" for case in entry.cases)
        if entry.verification != "all":
            where = f"{entry.verification}: {where}"
        else:
            where = f"all verifications: {where}"
        lines.append(f"| {number} | {entry.rule} | {where} | {entry.what} | {entry.why} |")
    return lines


def _rows() -> list[str]:
    own_ipv = {jvm_name for jvm_name, _, _ in IPV_OWN_CASES}
    classes = [
        ("PublisherVerification", PublisherVerification, None),
        ("SubscriberWhiteboxVerification", SubscriberWhiteboxVerification, None),
        ("SubscriberBlackboxVerification", SubscriberBlackboxVerification, None),
        ("IdentityProcessorVerification", IdentityProcessorVerification, own_ipv),
    ]
    lines = [
        "| # | JVM class | JVM test | Python test | rule | category |",
        "|---:|---|---|---|---|---|",
    ]
    number = 0
    for class_name, cls, only in classes:
        for case in cls.tck_cases:
            if only is not None and case.jvm_name not in only:
                continue  # the processor's delegated cases are the publisher/whitebox rows above
            number += 1
            rule = case.rule.lstrip("0").replace(".0", ".") if case.rule else "-"
            lines.append(
                f"| {number} | {class_name} | `{case.jvm_name}` | `{case.name}` | {rule} | {case.category} |"
            )
    counts = {name: len(cls.tck_cases) for name, cls, _ in classes}
    lines.append("")
    lines.append(
        f"{number} distinct tests. Cases a run executes: PublisherVerification "
        f"{counts['PublisherVerification']}, SubscriberWhiteboxVerification "
        f"{counts['SubscriberWhiteboxVerification']}, SubscriberBlackboxVerification "
        f"{counts['SubscriberBlackboxVerification']}, IdentityProcessorVerification "
        f"{counts['IdentityProcessorVerification']} (its own 3 plus every publisher and whitebox case, "
        "run with the processor as the publisher and as the subscriber)."
    )
    return lines


def _replace(current: str, begin: str, end: str, lines: list[str]) -> str:
    head, found, rest = current.partition(begin)
    if not found:
        raise SystemExit(f"docs/tck.md lacks the marker {begin}")
    _, _, tail = rest.partition(end)
    return f"{head}{begin}\n" + "\n".join(lines) + f"\n{end}{tail}"


def render(current: str) -> str:
    with_cases = _replace(current, BEGIN, END, _rows())
    return _replace(with_cases, BEGIN_STRICTER, END_STRICTER, _stricter_rows())


def main(argv: list[str]) -> int:
    asked = argv in (["-h"], ["--help"])
    if asked or set(argv) - {"--check"}:  # a typo must not rewrite the file
        print(f"usage: python docs/make_tck_docs.py [--check]\n\n{__doc__}", file=sys.stderr)
        return 0 if asked else 2
    current = DOC.read_text(encoding="utf-8")
    wanted = render(current)
    if "--check" in argv:
        if current != wanted:
            print("docs/tck.md is out of date: run python docs/make_tck_docs.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
