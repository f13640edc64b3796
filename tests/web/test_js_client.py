"""The JavaScript package (js/) from the Python suite.

* The live page's modules in ``src/rstreams/web/static/`` are byte-identical copies of the
  package's browser modules (``npm run sync`` in js/ makes them): checked here without Node.
* ``npm test`` (Node's test runner, js/test/) against real ``rstreams serve`` processes run by
  this interpreter: it needs Node 20+ and ``npm ci`` in js/, and skips, saying which, without
  them. scripts/test.sh runs ``npm ci``, ``npm run typecheck`` and ``npm test`` itself and then
  sets ``RSTREAMS_NPM_TESTED=1``, so the suite does not run twice.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
JS = ROOT / "js"
STATIC = ROOT / "src" / "rstreams" / "web" / "static"
BROWSER_MODULES = ("rsio.js", "rsio-wire.js", "rsio-publish.js", "rsio-resume.js")
NODE = shutil.which("node")


@pytest.mark.timeout(10)
def test_static_modules_are_copies_of_the_package() -> None:
    """The page serves exactly the package's browser modules: no hand-kept twin."""
    for name in BROWSER_MODULES:
        assert (STATIC / name).read_bytes() == (JS / "src" / name).read_bytes(), (
            f"src/rstreams/web/static/{name} differs from js/src/{name}: run `npm run sync` in js/"
        )


@pytest.mark.timeout(10)
def test_the_sync_script_names_the_same_modules() -> None:
    """js/scripts/sync-static.mjs copies the modules this test compares."""
    script = (JS / "scripts" / "sync-static.mjs").read_text()
    listed = re.search(r"BROWSER_MODULES = \[([^\]]*)\]", script)
    assert listed is not None
    assert tuple(re.findall(r'"([^"]+)"', listed.group(1))) == BROWSER_MODULES


def summary(output: str) -> dict[str, int]:
    return {
        key: int(value) for key, value in re.findall(r"^# (tests|pass|fail|skipped) (\d+)$", output, re.M)
    }


@pytest.mark.timeout(300)
def test_npm_test_against_python_servers() -> None:
    """Every Node test passes, none skipped: codec vectors, serving, auth, keepalive, end to end."""
    if os.environ.get("RSTREAMS_NPM_TESTED") == "1":
        pytest.skip("scripts/test.sh ran npm test in js/ already")
    if NODE is None:
        pytest.skip("node is not installed (Node 20+ runs the JavaScript package's tests)")
    if not (JS / "node_modules" / "ws").is_dir():
        pytest.skip("js/node_modules is missing: run `npm ci` in js/ (scripts/test.sh does)")
    tests = sorted(str(path.relative_to(JS)) for path in (JS / "test").glob("*.test.mjs"))
    done = subprocess.run(
        [NODE, "--test", "--test-timeout=60000", *tests],
        cwd=JS,
        env={**os.environ, "RSTREAMS_PYTHON": sys.executable},
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    counts = summary(done.stdout)
    assert done.returncode == 0 and counts.get("fail") == 0, done.stdout[-6000:] + done.stderr[-2000:]
    assert counts["skipped"] == 0 and counts["pass"] >= 150, counts
