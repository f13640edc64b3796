"""examples/rsio_auth.py runs and exits 0 (its own asserts check what it prints)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from testkit import patience

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "rsio_auth.py"


@pytest.mark.timeout(90)
def test_rsio_auth_example_runs() -> None:
    result = patience.run([sys.executable, str(EXAMPLE)], 60, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "all checks passed" in result.stdout
    assert "unauthorized: subscribe to 'admin/metrics'" in result.stdout
    assert "correct horse" not in result.stdout + result.stderr  # no secret is ever printed
