"""The declared PySpark range: an older PySpark fails at import with what to install."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from testkit import patience

pytestmark = pytest.mark.timeout(60)


def test_pyspark_before_4_2_fails_at_import_with_what_to_install(tmp_path: Path) -> None:
    """PySpark 4.1 has no pyspark.sql.streaming.datasource: the import says which version is needed."""
    fake = tmp_path / "pyspark"
    fake.mkdir()
    (fake / "__init__.py").write_text('__version__ = "4.1.4"\n')
    paths = [str(tmp_path), *sys.path]
    done = patience.run(
        [sys.executable, "-c", "import rstreams.spark"],
        50,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(paths)},
        check=False,
    )
    assert done.returncode == 1
    assert "needs PySpark 4.2 or newer, found 4.1.4" in done.stderr
    assert "pip install 'pyspark>=4.2'" in done.stderr
