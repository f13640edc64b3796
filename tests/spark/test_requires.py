"""The declared PySpark range and extra: a missing or older PySpark (or a missing pyarrow) fails at
import with MissingExtraError saying what to install."""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import types
from pathlib import Path

import pytest

import rstreams
from rstreams.errors import MissingExtraError
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


def _import_requires() -> None:
    """Run spark/_requires.py as a fresh module (rstreams.spark itself stays as it is)."""
    path = Path(rstreams.__file__).parent / "spark" / "_requires.py"
    spec = importlib.util.spec_from_file_location("_requires_probe", path)
    assert spec is not None and spec.loader is not None
    spec.loader.exec_module(importlib.util.module_from_spec(spec))


@pytest.mark.parametrize("module", ["pyarrow", "pyspark"])
def test_a_missing_extra_is_a_missing_extra_error_quoting_the_install(
    module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # import fails with ModuleNotFoundError
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'rstreams[spark]'")) as raised:
        _import_requires()
    assert raised.value.name == module
    assert isinstance(raised.value.__cause__, ModuleNotFoundError)
    assert isinstance(raised.value, ImportError)  # except ImportError still catches it


def test_an_old_pyspark_is_a_missing_extra_error_in_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pyspark", types.SimpleNamespace(__version__="4.1.4"))
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'pyspark>=4.2'")) as raised:
        _import_requires()
    assert raised.value.name == "pyspark"
