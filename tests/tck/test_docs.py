"""docs/tck.md's case table is generated from the registry and must not drift."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(60)
def test_tck_doc_table_matches_the_registry() -> None:
    """`python docs/make_tck_docs.py --check` passes: every case is listed as registered."""
    result = subprocess.run(
        [sys.executable, str(ROOT / "docs" / "make_tck_docs.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
