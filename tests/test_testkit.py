"""The suite's shared code lives in one package, tests/testkit, and nothing edits ``sys.path``.

pytest's ``pythonpath`` option (pyproject.toml) puts tests/ on the path once; test modules
import ``testkit.<module>`` and never each other, so a shared module cannot hide beside the
tests that use it under a name of its own, and no conftest or test inserts a directory into
``sys.path`` to reach one.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import testkit

pytestmark = pytest.mark.timeout(120)  # (the parse of every module: ~5 s of CPU with -X dev, and load)

TESTS = Path(__file__).resolve().parent
KIT = TESTS / "testkit"

RETIRED = {
    "support", "support_tls", "replay_support", "netsupport", "wiresupport", "sparksupport",
    "hostile_support", "resumesupport", "chaos_proxy", "cdp", "websupport", "operator_support",
    "clock_support", "tck",
}  # fmt: skip
"""The names the shared modules had before tests/testkit (``tck`` was the package of the TCK's
broken publishers and subscribers): importing one again is a regression."""

PATH_EDITS = {"insert", "append", "extend", "remove", "pop", "clear", "__setitem__", "__iadd__"}


@functools.cache
def sources() -> tuple[tuple[Path, ast.Module], ...]:
    """Every module under tests/, parsed once for the checks that read them all."""
    return tuple(
        (path, ast.parse(path.read_text(encoding="utf-8"), str(path))) for path in sorted(TESTS.rglob("*.py"))
    )


def where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(TESTS.parent)}:{getattr(node, 'lineno', 0)}"


def is_sys_path(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "path" and ast.unparse(node.value) == "sys"


def path_edits(tree: ast.Module) -> Iterator[ast.AST]:
    """``sys.path.insert(...)`` and the like, ``sys.path = ...``, ``sys.path[i] = ...``, ``+=``,
    ``site.addsitedir(...)`` and pytest's ``syspath_prepend``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            edits_sys_path = node.func.attr in PATH_EDITS and is_sys_path(node.func.value)
            if edits_sys_path or node.func.attr in {"addsitedir", "syspath_prepend"}:
                yield node
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if is_sys_path(target) or (isinstance(target, ast.Subscript) and is_sys_path(target.value)):
                    yield node


def imported(tree: ast.Module) -> Iterator[tuple[ast.AST, str, int]]:
    """(node, top-level module name, relative level) of every import."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name.split(".")[0], 0
        elif isinstance(node, ast.ImportFrom):
            yield node, (node.module or "").split(".")[0], node.level


def test_nothing_in_the_tests_edits_sys_path() -> None:
    found = [where(path, node) for path, tree in sources() for node in path_edits(tree)]
    assert found == [], "import shared test code from tests/testkit instead of editing sys.path"


def test_the_check_finds_every_kind_of_path_edit() -> None:
    """The AST check is not vacuous: each way of editing the path is caught, reading it is not."""
    edits = [
        "sys.path.insert(0, 'x')", "sys.path.append('x')", "sys.path.extend(['x'])", "sys.path = ['x']",
        "sys.path[0:0] = ['x']", "sys.path += ['x']", "site.addsitedir('x')",
        "monkeypatch.syspath_prepend('x')",
    ]  # fmt: skip
    for line in edits:
        assert len(list(path_edits(ast.parse(line)))) == 1, line
    reads = ["paths = [*sys.path]", "monkeypatch.setattr(sys, 'path', list(sys.path))", "os.path.insert"]
    for line in reads:
        assert list(path_edits(ast.parse(line))) == [], line


def test_test_modules_import_shared_code_only_from_testkit() -> None:
    """No retired helper name comes back, and no module under tests/ imports another one outside testkit."""
    local = {path.stem for path in TESTS.rglob("*.py") if KIT not in path.parents} | {
        path.name for path in TESTS.iterdir() if path.is_dir() and path != KIT
    }
    wrong = []
    for path, tree in sources():
        for node, name, level in imported(tree):
            inside_kit = KIT in path.parents
            if name in RETIRED or name in local or (level and not inside_kit):
                wrong.append(f"{where(path, node)} imports {'.' * level}{name}")
    assert wrong == []


def test_no_module_under_tests_has_a_retired_helper_name() -> None:
    named = sorted(str(p.relative_to(TESTS)) for p in TESTS.rglob("*.py") if p.stem in RETIRED)
    assert named == []


def test_no_doc_or_script_names_a_retired_helper() -> None:
    """Docs and the other languages' tests that reach into tests/ use testkit's names too."""
    root = TESTS.parent
    texts = [root / "README.md", *(root / "docs").rglob("*.md"), *(root / "scripts").glob("*")]
    js = [p for p in (root / "js").rglob("*") if "node_modules" not in p.parts]
    texts += [p for p in js if p.suffix in {".mjs", ".py"}]
    names = "|".join(sorted(RETIRED - {"tck"}))
    retired = re.compile(rf"\b(?:from|import) (?:{names})\b|\btests/(?:\w+/)?(?:{names})\.py\b")
    found = [
        f"{path.relative_to(root)}: {match.group()}"
        for path in texts
        if path.is_file()
        for match in retired.finditer(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert found == []


def test_testkit_is_this_checkout_and_lists_its_modules() -> None:
    """pytest's ``pythonpath`` found tests/testkit, and the package's docstring names every module."""
    assert Path(testkit.__file__).resolve() == KIT / "__init__.py"
    doc = testkit.__doc__ or ""
    modules = sorted(path.stem for path in KIT.glob("*.py") if path.stem != "__init__")
    assert [name for name in modules if f"``testkit.{name}``" not in doc] == []
