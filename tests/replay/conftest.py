"""A replay server per test (no Spark: these tests run without the ``spark`` extra)."""

from __future__ import annotations

from testkit.replay import serve as serve  # the fixture, shared with tests/spark
