"""The worker groups of ``pytest -n 2 --dist loadgroup`` (tests/conftest.py says why each)."""

from __future__ import annotations

GROUPS = {
    "tests/spark/": "spark",
    "tests/interop/test_matrix.py": "java",
    "tests/conformance/test_fuzz_polyglot_quick.py": "java",
}


def xdist_group(nodeid: str) -> str | None:
    """The group of the test ``nodeid`` (None: it may run on any worker, beside anything)."""
    for prefix, group in GROUPS.items():
        if nodeid.startswith(prefix):
            return group
    return None
