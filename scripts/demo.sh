#!/usr/bin/env bash
# Sets everything up in .venv-demo (its own virtual environment) and runs the main job.
# Until `rstreams demo` (RS.io server + Spark pipeline) exists, this runs the most complete
# example there is: examples/pipeline.py, an in-process backpressured pipeline with live output.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/_setup.sh
setup_venv .venv-demo "test"
echo "== running examples/pipeline.py (the in-process pipeline; the Spark demo is not built yet)"
exec "$VENV/bin/python" examples/pipeline.py
