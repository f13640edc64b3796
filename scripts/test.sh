#!/usr/bin/env bash
# Sets everything up in .venv-test (its own virtual environment) and runs the whole test suite.
# Usage: bash scripts/test.sh [extra pytest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
# Spark needs a Java 17+ runtime: as root with apt-get, the JDK the Java binding's block below
# installs anyway comes first; otherwise say what to install.
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ] \
    && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "== installing a JDK for Spark and the Java binding (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless >/dev/null 2>&1; } \
    || echo "   could not install a JDK"
fi
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "The Spark tests need Java 17 or newer and none was found." >&2
  echo "  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless" >&2
  echo "  macOS:         brew install openjdk@17" >&2
  echo "  or set JAVA_HOME to an existing Java 17+ installation." >&2
  exit 2
fi
# The browser test (tests/web/test_browser.py) drives Debian's chromium: install it when absent and
# apt-get is usable (as root); otherwise that test skips, saying why.
if ! command -v chromium >/dev/null 2>&1 && ! command -v chromium-browser >/dev/null 2>&1; then
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "== installing chromium for the browser test (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if ! { apt-get install -y -q chromium >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null 2>&1 && apt-get install -y -q chromium >/dev/null 2>&1; }; }; then
      echo "   could not install chromium: tests/web/test_browser.py will skip"
    fi
  else
    echo "== no chromium (sudo apt-get install chromium): tests/web/test_browser.py will skip"
  fi
fi
source scripts/_setup.sh
setup_venv .venv-test "test" websockets spark spark-connect
# Spark: the pytest run below uses the newest PySpark the spark extra allows; the oldest it declares
# gets a virtual environment of its own, installed here in the background while the lint, Node and
# Maven steps run, and the tests of the streaming reader at the end, whose API is what changes
# between versions (RSTREAMS_SPARK_OLDEST=0 skips this).
oldest_pid=""
js_pid=""
stop_background() {  # a step that fails ends the background ones too
  local pid
  for pid in $oldest_pid $js_pid; do pkill -TERM -P "$pid" 2>/dev/null || true; kill "$pid" 2>/dev/null || true; done
}
trap stop_background EXIT
await_background() {  # PID LOG WHAT: wait for a background step, show its output, stop if it failed
  local status=0
  wait "$1" || status=$?
  cat "$2"
  rm -f "$2"
  if [ "$status" != 0 ]; then
    echo "$3 failed (exit $status)" >&2
    exit "$status"
  fi
}
if [ "${RSTREAMS_SPARK_OLDEST:-1}" != 0 ]; then
  oldest_log=$(mktemp)
  oldest=$(sed -n 's/.*"pyspark>=\([0-9.]*\).*/\1/p' pyproject.toml | head -1)
  echo "== installing the oldest declared PySpark ($oldest) into .venv-spark-oldest, in the background"
  (
    constraints=$(mktemp)
    echo "pyspark==$oldest" > "$constraints"
    PIP_CONSTRAINT=$constraints setup_venv .venv-spark-oldest "test" spark
    rm -f "$constraints"
  ) > "$oldest_log" 2>&1 &
  oldest_pid=$!
fi
echo "== lint: ruff check and ruff format --check (src, tests, benchmarks, examples, fuzz, scripts, the Java tests' Python), mypy --strict (src, tests and fuzz: pyproject.toml)"
"$VENV/bin/ruff" check src tests benchmarks examples fuzz scripts java/src/test/resources/python
"$VENV/bin/ruff" format --check src tests benchmarks examples fuzz scripts java/src/test/resources/python
"$VENV/bin/mypy"
# --- the JavaScript package (js/): npm ci from the committed lockfile, tsc, npm test -----------
# Its Node tests start `rstreams serve` with this checkout's venv (RSTREAMS_PYTHON); pytest's
# tests/web/test_js_client.py then skips its own run of them (RSTREAMS_NPM_TESTED=1).
if ! command -v npm >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "== installing Node.js for the JavaScript package (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q nodejs npm >/dev/null 2>&1; } \
    || echo "   could not install Node.js"
fi
if command -v npm >/dev/null 2>&1; then
  echo "== js: npm ci, npm run typecheck (tsc --noEmit), npm test (node $(node --version))"
  python_for_js="$(pwd)/$VENV/bin/python"
  # npm ci first (the Java tests run Node against js/node_modules); tsc and npm test then run in
  # the background beside Maven, their output shown once Maven is done.
  (cd js && npm ci --no-audit --no-fund --loglevel=error)
  js_log=$(mktemp)
  (cd js && npm run --silent typecheck && RSTREAMS_PYTHON="$python_for_js" npm test --silent) \
    > "$js_log" 2>&1 &
  js_pid=$!
  export RSTREAMS_NPM_TESTED=1
else
  echo "== js: no npm (Node.js 20+): the JavaScript package is not tested"
  if [ "${CI:-}" = true ]; then exit 1; fi
fi
# --- end of the JavaScript package's block ----------------------------------------------------
# --- the Java binding (java/): mvn test (JDK 17+, Maven; dependencies from Maven Central) ----
# Its interop tests start `rstreams serve` and `python -m rstreams.conformance` from this venv
# (-Drstreams.python.venv); with CI=true they fail instead of skipping when it is missing.
if { ! command -v mvn >/dev/null 2>&1 || ! command -v javac >/dev/null 2>&1; } \
    && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "== installing a JDK and Maven for the Java binding (apt-get)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless maven >/dev/null 2>&1 \
    || { apt-get update -q >/dev/null 2>&1 \
         && DEBIAN_FRONTEND=noninteractive apt-get install -y -q openjdk-17-jdk-headless maven >/dev/null 2>&1; } \
    || echo "   could not install a JDK and Maven"
fi
if command -v mvn >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
  echo "== java: mvn test (reactive-streams-tck-flow, conformance suite, Python interop)"
  mvn -B -ntp -f java/pom.xml test -Drstreams.python.venv="$(pwd)/$VENV"
else
  echo "== java: no javac/mvn (JDK 17+ and Maven): the Java binding is not tested"
  if [ "${CI:-}" = true ]; then exit 1; fi
fi
# --- end of the Java binding's block -------------------------------------------------------------
if [ -n "$js_pid" ]; then
  echo "== js: npm run typecheck and npm test (run beside Maven)"
  await_background "$js_pid" "$js_log" "the JavaScript package's typecheck or tests"
  js_pid=""
fi
# pytest on two worker processes per core, at most 8 (pytest-xdist; tests/conftest.py keeps the
# Spark tests on one worker and the Maven-built ones on one): most tests spend their time waiting
# (for windows in which nothing may happen, timers, child processes), so one worker per core
# leaves the cores idle most of the run; arguments given to this script come after, so `-n 0`
# runs everything in this process.
cores=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)
workers=$(( 2 * cores > 8 ? 8 : 2 * cores ))
echo "== tests (pytest on $workers workers)"
"$VENV/bin/python" -X dev -m pytest -n "$workers" --dist loadgroup "$@"
if [ -n "$oldest_pid" ]; then
  echo "== Spark tests on the oldest declared PySpark ($oldest)"
  await_background "$oldest_pid" "$oldest_log" "installing .venv-spark-oldest"
  oldest_pid=""
  VENV=.venv-spark-oldest
  "$VENV/bin/python" -c 'import pyspark; print("   pyspark", pyspark.__version__)'
  "$VENV/bin/python" -X dev -m pytest tests/spark/test_reader.py tests/spark/test_source.py
fi
