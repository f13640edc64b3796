"""Writes the table of the characters Python's repr() prints as they are (str.isprintable(),
from the Unicode data of Python's unicodedata) into PythonRepr.java, between its
"python-printable" markers, so that Java quotes a refused URL exactly as the Python reference
does, whatever Unicode version the JDK knows. Run it with the reference's interpreter:

    .venv-test/bin/python java/scripts/python_printable.py

The table is the one js/scripts/python-printable.mjs writes into js/src/rsio-url.js (the same
runs, in base 36); PythonReprTest compares the quoting with that Python's for every code point.
"""

import sys
import unicodedata
from pathlib import Path

FILE = Path(__file__).resolve().parent.parent / "src/main/java/io/rstreams/net/PythonRepr.java"
BEGIN = "    // BEGIN python-printable"
END = "    // END python-printable"
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


def region() -> str:
    """The generated lines of PythonRepr.java, markers included."""
    text = ",".join(base36(n) for n in runs())
    lines, at = [], 0
    while at < len(text):
        end = min(at + 96, len(text))
        if end < len(text):
            end = text.rindex(",", at, end) + 1
        lines.append(text[at:end])
        at = end
    python, last = sys.version.split()[0], len(lines) - 1
    return "\n".join(
        [
            f"{BEGIN} (written by java/scripts/python_printable.py from Python {python}; do not edit)",
            "    /** The Unicode version of the Python whose str.isprintable() {@link #RUNS} holds. */",
            f'    static final String UNICODE = "{unicodedata.unidata_version}";',
            "",
            "    /**",
            "     * The lengths, in base 36, of the alternating runs of code points from 0 that Python's",
            "     * {@code repr()} escapes and prints as they are, first an escaped one.",
            "     */",
            '    private static final String RUNS = ""',
            *(f'            + "{line}"' + (";" if i == last else "") for i, line in enumerate(lines)),
            END,
        ]
    )


def main() -> None:
    source = FILE.read_text(encoding="utf-8")
    begin, end = source.find(BEGIN), source.find(END)
    if begin < 0 or end < begin:
        raise SystemExit(f"{FILE}: no {BEGIN.strip()} ... {END.strip()} region")
    FILE.write_text(source[:begin] + region() + source[end + len(END) :], encoding="utf-8")
    print(f"{FILE}: Unicode {unicodedata.unidata_version} (Python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
