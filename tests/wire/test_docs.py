"""PROTOCOL.md and docs/protocol-vectors.json match the code (they are generated from it)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from rstreams.wire import _errors
from testkit import patience

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(120)  # (above its child's 60 s of own time)
def test_generated_blocks_and_vectors_are_current() -> None:
    """docs/make_protocol_docs.py --check finds nothing to regenerate."""
    out = patience.run(
        [sys.executable, str(ROOT / "docs" / "make_protocol_docs.py"), "--check"],
        60,
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_cited_sections_exist() -> None:
    """Every section an error cites in a goodbye reason is a heading of PROTOCOL.md."""
    text = (ROOT / "PROTOCOL.md").read_text()
    headings = set(re.findall(r"^##+ (\d+(?:\.\d+)?)\.? ", text, re.MULTILINE))
    cited = {
        cls.section for cls in vars(_errors).values() if isinstance(cls, type) and hasattr(cls, "section")
    }
    assert cited <= headings, cited - headings
