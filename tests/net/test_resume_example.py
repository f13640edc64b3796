"""examples/rsio_resume.py runs and exits 0 (its own asserts check the stream and the count)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testkit import patience

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rsio_resume.py"


@pytest.mark.timeout(90)
def test_rsio_resume_example_runs() -> None:
    result = patience.run([sys.executable, str(EXAMPLE)], 60, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "20000 elements over 3 links (2 cut), 2 resumption(s)" in result.stdout
    assert "all checks passed" in result.stdout
