"""The worker groups of tests/conftest.py (scripts/test.sh runs pytest -n 2 --dist loadgroup)
name real paths and tests, and every test file that builds java/ with Maven or starts Spark is in
its group."""

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


SPARK = {"spark", "spark-apart"}


@pytest.mark.parametrize("prefix", sorted(GROUPS))
def test_every_group_names_a_path_that_exists(prefix: str) -> None:
    path, _, test = prefix.partition("::")
    assert (ROOT / path).exists(), f"tests/testkit/groups.py's GROUPS names {path}, which is gone"
    assert not test or f"def {test}(" in (ROOT / path).read_text(encoding="utf-8"), (
        f"tests/testkit/groups.py's GROUPS names {prefix}, which is gone"
    )


def test_groups_are_read_from_node_ids() -> None:
    assert xdist_group("tests/spark/test_sink.py::test_x[a]") == "spark"
    assert xdist_group("tests/interop/test_matrix.py::test_cell[java-python-tcp]") == "java"
    assert xdist_group("tests/wire/test_varint.py::test_x") is None
    assert xdist_group("tests/sparkle/test_x.py::test_x") is None
    assert xdist_group("tests/spark/test_connect.py::test_x") == "spark-apart"
    assert xdist_group("tests/spark/test_codecs.py::test_x") is None  # the longest prefix decides
    assert (
        xdist_group("tests/spark/test_demo.py::test_demo_pipeline_publishes_windows_and_saves_them")
        == "spark"
    )
    assert xdist_group("tests/spark/test_demo.py::test_a_signal_stops_the_demo_cleanly[2-x]") == "spark-apart"


@pytest.mark.parametrize(
    ("needle", "groups"),
    [
        ('"mvn"', {"java"}),  # runs Maven on java/
        ('"fuzz_polyglot"', {"java"}),  # loads fuzz/fuzz_polyglot.py, which runs Maven on java/
        ("testkit.spark", SPARK),  # starts Spark, one way or the other
        ("getOrCreate", SPARK),
        ('"rstreams.cli", "demo"', SPARK),
        ("spark: Any", {"spark"}),  # takes the session fixture: its JVM is the spark group's
    ],
)
def test_every_file_that_needs_a_group_has_it(needle: str, groups: set[str]) -> None:
    users = [path for path in SOURCES if needle in (ROOT / path).read_text(encoding="utf-8")]
    assert users, f"no file in tests/ mentions {needle}: this check would be vacuous"
    assert [path for path in users if xdist_group(f"{path}::test") not in groups] == []


@pytest.mark.parametrize("prefix", sorted(p for p, group in GROUPS.items() if group == "spark-apart"))
def test_the_tests_apart_from_the_session_do_not_take_it(prefix: str) -> None:
    """A test of the spark-apart group that took the `spark` fixture would start a second session
    JVM on the other worker."""
    path, _, test = prefix.partition("::")
    source = (ROOT / path).read_text(encoding="utf-8")
    if test:
        source = source[source.index(f"def {test}(") :].split("\ndef ", 1)[0]
    assert "spark: Any" not in source, prefix


def test_the_scheduler_still_groups_by_our_scope() -> None:
    """tests/conftest.py's scheduler overrides pytest-xdist's ``_split_scope`` (pinned below 3.9 in
    pyproject.toml): should a version rename it, the groups would be silently ignored."""
    scheduler = pytest.importorskip("xdist.scheduler")
    assert callable(getattr(scheduler.LoadGroupScheduling, "_split_scope", None))
