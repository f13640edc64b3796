"""The worker groups of tests/conftest.py (scripts/test.sh runs pytest -n 2 --dist loadgroup)
name real paths, and every test file that builds java/ with Maven or starts Spark is in its group."""

from __future__ import annotations

from pathlib import Path

import pytest

from testkit.groups import GROUPS, xdist_group

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted(
    path.relative_to(ROOT).as_posix()
    for path in (ROOT / "tests").rglob("*.py")
    if path.parent.name != "testkit" and path.name != "test_groups.py"
)


@pytest.mark.parametrize("prefix", sorted(GROUPS))
def test_every_group_names_a_path_that_exists(prefix: str) -> None:
    assert (ROOT / prefix).exists(), f"tests/testkit/groups.py's GROUPS names {prefix}, which is gone"


def test_groups_are_read_from_node_ids() -> None:
    assert xdist_group("tests/spark/test_sink.py::test_x[a]") == "spark"
    assert xdist_group("tests/interop/test_matrix.py::test_cell[java-python-tcp]") == "java"
    assert xdist_group("tests/wire/test_varint.py::test_x") is None
    assert xdist_group("tests/sparkle/test_x.py::test_x") is None


@pytest.mark.parametrize(
    ("needle", "group"),
    [
        ('"mvn"', "java"),  # runs Maven on java/
        ('"fuzz_polyglot"', "java"),  # loads fuzz/fuzz_polyglot.py, which runs Maven on java/
        ("testkit.spark", "spark"),
        ("getOrCreate", "spark"),
        ('"rstreams.cli", "demo"', "spark"),
    ],
)
def test_every_file_that_needs_a_group_has_it(needle: str, group: str) -> None:
    users = [path for path in SOURCES if needle in (ROOT / path).read_text(encoding="utf-8")]
    assert users, f"no file in tests/ mentions {needle}: this check would be vacuous"
    assert [path for path in users if xdist_group(f"{path}::test") != group] == []


def test_the_scheduler_still_groups_by_our_scope() -> None:
    """tests/conftest.py's scheduler overrides pytest-xdist's ``_split_scope`` (pinned below 3.9 in
    pyproject.toml): should a version rename it, the groups would be silently ignored."""
    scheduler = pytest.importorskip("xdist.scheduler")
    assert callable(getattr(scheduler.LoadGroupScheduling, "_split_scope", None))
