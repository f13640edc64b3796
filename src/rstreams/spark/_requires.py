"""What :mod:`rstreams.spark` needs, checked on import with what to install when it is missing."""

from __future__ import annotations

__all__ = ["MIN_PYSPARK"]

import sys

from rstreams.errors import MissingExtraError

try:
    import pyarrow as _pyarrow  # noqa: F401
    import pyspark as _pyspark
except ModuleNotFoundError as _missing:
    if (_missing.name or "").partition(".")[0] not in ("pyarrow", "pyspark"):
        raise  # a broken installation, not a missing extra
    raise MissingExtraError(
        f"rstreams.spark needs PySpark and pyarrow ({_missing.name} is missing in {sys.executable}): "
        "pip install 'rstreams[spark]'; Spark's Python workers run PYSPARK_PYTHON (python3 on the "
        "PATH when unset), which must be an interpreter that has them",
        name=_missing.name,
    ) from _missing

MIN_PYSPARK = (4, 2)
"""The oldest PySpark whose Python data sources have admission control (ReadLimit, 4.2.0)."""

if tuple(int(part) for part in _pyspark.__version__.split(".")[:2]) < MIN_PYSPARK:
    raise MissingExtraError(
        f"rstreams.spark needs PySpark 4.2 or newer, found {_pyspark.__version__}: the streaming "
        "source bounds micro-batches with pyspark.sql.streaming.datasource (ReadLimit, added in "
        "4.2.0); pip install 'pyspark>=4.2'",
        name="pyspark",
    )
