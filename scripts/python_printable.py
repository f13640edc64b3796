"""Writes the table of the characters Python's repr() prints as they are (str.isprintable(), from
the Unicode data of Python's unicodedata) into the two bindings' sources, between their
"python-printable" markers: java/src/main/java/io/rstreams/net/PythonRepr.java and
js/src/rsio-url.js. Both then quote a refused URL exactly as the Python reference does, whatever
Unicode version the JDK or the JavaScript runtime knows (PROTOCOL.md §1.1). Run it with the
reference's interpreter (Python 3.11, Unicode 14.0):

    .venv-test/bin/python scripts/python_printable.py          # writes both tables
    .venv-test/bin/python scripts/python_printable.py --check  # exit 1 if either differs

Java's PythonReprTest and js/test/python-repr.test.mjs compare the quoting with that Python's
repr() for every code point.
"""

import argparse
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NAME = "scripts/python_printable.py"
DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz"


def runs() -> list[int]:
    """Alternating run lengths from code point 0: not printable, printable, not printable, ..."""
    out, current, length = [], False, 0
    for code in range(0x110000):
        printable = chr(code).isprintable()
        if printable != current:
            out.append(length)
            current, length = printable, 0
        length += 1
    out.append(length)
    return out


def base36(n: int) -> str:
    text = ""
    while True:
        n, digit = divmod(n, 36)
        text = DIGITS[digit] + text
        if n == 0:
            return text


def chunks(text: str, width: int) -> list[str]:
    """`text` (comma-separated) cut after a comma into pieces of at most `width` characters."""
    lines, at = [], 0
    while at < len(text):
        end = min(at + width, len(text))
        if end < len(text):
            end = text.rindex(",", at, end) + 1
        lines.append(text[at:end])
        at = end
    return lines


def java(table: str, unicode: str, python: str) -> list[str]:
    lines = chunks(table, 96)
    return [
        f"    // BEGIN python-printable (written by {NAME} from Python {python}; do not edit)",
        "    /** The Unicode version of the Python whose str.isprintable() {@link #RUNS} holds. */",
        f'    static final String UNICODE = "{unicode}";',
        "",
        "    /**",
        "     * The lengths, in base 36, of the alternating runs of code points from 0 that Python's",
        "     * {@code repr()} escapes and prints as they are, first an escaped one.",
        "     */",
        '    private static final String RUNS = ""',
        *(f'            + "{line}"' + (";" if i == len(lines) - 1 else "") for i, line in enumerate(lines)),
        "    // END python-printable",
    ]


def javascript(table: str, unicode: str, python: str) -> list[str]:
    lines = chunks(table, 100)
    return [
        f"// BEGIN python-printable (written by {NAME} from Python {python}; do not edit)",
        "// The lengths, in base 36, of the alternating runs of code points from 0 that Python's repr()",
        f"// escapes and prints as they are (str.isprintable(), Unicode {unicode}), first an escaped one.",
        f'export const PRINTABLE_UNICODE = "{unicode}";',
        'const PRINTABLE_RUNS = ""',
        *(f'  + "{line}"' + (";" if i == len(lines) - 1 else "") for i, line in enumerate(lines)),
        "// END python-printable",
    ]


@dataclass
class Target:
    path: str  # from the repository's root
    begin: str  # the first and last generated lines start so
    end: str
    region: list[str]

    def split(self) -> tuple[str, str, str]:
        """The file's text before the region, the region (markers included), after it."""
        source = (ROOT / self.path).read_text(encoding="utf-8")
        begin = source.find(self.begin)
        end = source.find(self.end, begin + 1) if begin >= 0 else -1
        if begin < 0 or end < 0:
            raise SystemExit(f"{self.path}: no {self.begin.strip()} ... {self.end.strip()} region")
        end += len(self.end)
        return source[:begin], source[begin:end], source[end:]


def targets() -> list[Target]:
    table = ",".join(base36(n) for n in runs())
    unicode, python = unicodedata.unidata_version, "{}.{}".format(*sys.version_info)
    return [
        Target(
            "java/src/main/java/io/rstreams/net/PythonRepr.java",
            "    // BEGIN python-printable",
            "    // END python-printable",
            java(table, unicode, python),
        ),
        Target(
            "js/src/rsio-url.js",
            "// BEGIN python-printable",
            "// END python-printable",
            javascript(table, unicode, python),
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a table differs")
    check = parser.parse_args().check
    about = f"Unicode {unicodedata.unidata_version} (Python {sys.version.split()[0]})"
    stale = []
    for target in targets():
        before, region, after = target.split()
        wanted = "\n".join(target.region)
        if region == wanted:
            print(f"{target.path}: up to date, {about}")
        elif check:
            stale.append(target.path)
            print(f"{target.path}: differs from the table of {about}", file=sys.stderr)
        else:
            (ROOT / target.path).write_text(before + wanted + after, encoding="utf-8")
            print(f"{target.path}: written, {about}")
    if stale:
        print(f"write them anew with Python 3.11: python {NAME}", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
