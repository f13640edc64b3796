"""The worker groups of ``pytest -n 2 --dist loadgroup`` (tests/conftest.py says why each)."""

from __future__ import annotations

GROUPS: dict[str, str | None] = {
    # the shared SparkSession of tests/spark/conftest.py: one JVM, on one worker
    "tests/spark/": "spark",
    # Spark in a process of its own (a Spark Connect server, `rstreams demo`), not the session's
    "tests/spark/test_connect.py": "spark-apart",
    "tests/spark/test_demo.py::test_a_signal_stops_the_demo_cleanly": "spark-apart",
    "tests/spark/test_cli.py": "spark-apart",
    "tests/test_examples.py::test_the_spark_stream_example_publishes_every_square": "spark-apart",
    # no JVM at all (decoding, options, the reader against a replay server): on any worker
    "tests/spark/test_codecs.py": None,
    "tests/spark/test_demo_view.py": None,
    "tests/spark/test_many_logs.py": None,
    "tests/spark/test_options.py": None,
    "tests/spark/test_reader.py": None,
    "tests/spark/test_requires.py": None,
    "tests/spark/test_sensor_tck.py": None,
    "tests/interop/test_matrix.py": "java",
    "tests/interop/test_hostile_bindings.py": "java",
    "tests/conformance/test_fuzz_polyglot_quick.py": "java",
    "tests/conformance/test_fuzz_polyglot_client_quick.py": "java",
    "tests/conformance/test_hostile_polyglot.py": "java",
    "tests/conformance/test_hostile_polyglot_client.py": "java",
}
"""Node id prefixes and their groups; the longest prefix of a node id decides (None: no group)."""


def xdist_group(nodeid: str) -> str | None:
    """The group of the test ``nodeid`` (None: it may run on any worker, beside anything)."""
    prefixes = [prefix for prefix in GROUPS if nodeid.startswith(prefix)]
    return GROUPS[max(prefixes, key=len)] if prefixes else None
