"""A replay server per test (no Spark: these tests run without the ``spark`` extra)."""

from __future__ import annotations

from replay_support import serve as serve  # the fixture, shared with tests/spark
