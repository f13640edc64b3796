#!/usr/bin/env bash
# Sets everything up in .venv-demo (its own virtual environment) and runs the main job:
# `rstreams demo` — an RS.io server with simulated sensors, a local Spark pipeline that reads
# them through the rstreams data source and writes per-sensor window averages back through the
# rstreams sink, and a live view of the results. Extra arguments go to `rstreams demo`
# (e.g. --seconds 60, --sensors 16, --master spark://host:7077).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v java >/dev/null 2>&1 && [ -z "${JAVA_HOME:-}" ]; then
  echo "Spark needs Java 17 or newer and none was found." >&2
  echo "  Debian/Ubuntu: sudo apt-get install openjdk-17-jre-headless" >&2
  echo "  macOS:         brew install openjdk@17" >&2
  echo "  or set JAVA_HOME to an existing Java 17+ installation." >&2
  exit 2
fi
source scripts/_setup.sh
setup_venv .venv-demo "-" spark websockets
echo "== rstreams demo (Spark starts in ~20-40 s; the first micro-batch takes longest)"
exec "$VENV/bin/rstreams" demo "$@"
