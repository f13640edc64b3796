#!/usr/bin/env bash
# Sets everything up in .venv-test (its own virtual environment) and runs the whole test suite.
# Usage: bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_setup.sh
setup_venv .venv-test "test" websockets spark
echo "== lint: ruff, mypy --strict"
"$VENV/bin/ruff" check src tests
"$VENV/bin/mypy"
echo "== tests"
"$VENV/bin/python" -X dev -m pytest "$@"
