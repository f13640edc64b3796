"""The documents' code blocks (README.md, docs/*.md), found and run as written: each in a child
process of its own, with the checkout's ``src`` first on its path."""

from __future__ import annotations

import os
import re
import sys
import textwrap

from testkit import patience
from testkit.scripts import ROOT

__all__ = ["fenced", "in_async_main", "run"]


def fenced(text: str) -> list[tuple[str, str]]:
    """The fenced code blocks of a Markdown text: (their language, "" for none; their content,
    dedented, as a block inside a list item is indented)."""
    blocks: list[tuple[str, str]] = []
    language: str | None = None
    lines: list[str] = []
    for line in text.splitlines():
        fence = re.fullmatch(r"\s*```(\w*)\s*", line)
        if language is None:
            if fence:
                language, lines = fence.group(1), []
        elif fence:
            blocks.append((language, textwrap.dedent("\n".join(lines))))
            language = None
        else:
            lines.append(line)
    return blocks


def run(code: str, limit: float = 60) -> str:
    """``python -c code``'s standard output; it must exit 0 within ``limit`` s of own time."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = patience.run([sys.executable, "-c", code], limit, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout


def in_async_main(setup: str, block: str, after: str) -> str:
    """A fragment that awaits at its top level, run inside ``async def main()``: ``setup`` at
    module level, then ``block`` and ``after`` in ``main``."""
    body = textwrap.indent(textwrap.dedent(block) + after, "    ")
    return f"import asyncio\nimport rstreams\n{setup}\nasync def main():\n{body}\nasyncio.run(main())\n"
