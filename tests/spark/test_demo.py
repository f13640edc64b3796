"""`rstreams demo`'s pipeline, short, on the shared session: rows, windows back, Parquet."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from rstreams.spark._demo import run_demo

pytestmark = [pytest.mark.spark, pytest.mark.slow]


@pytest.mark.timeout(240)
def test_demo_pipeline_publishes_windows_and_saves_them(spark: Any, tmp_path: Path) -> None:
    """Sensors -> replay log -> Spark windowed averages -> rstreams sink -> live view and Parquet."""
    out = io.StringIO()
    figures = run_demo(seconds=6, batch=20_000, window=1, out=str(tmp_path), stream=out, spark=spark)
    text = out.getvalue()
    assert figures["rows"] > 0 and figures["batches"] > 0, text
    assert figures["results"] > 0, text  # window averages came back over RS.io
    assert "sensor-0" in text and "window" in text
    saved = spark.read.parquet(figures["parquet"]).collect()
    assert saved and {"sensor", "avg", "n"} <= set(saved[0].asDict())
