# Shared by scripts/*.sh: create a virtual environment and install rstreams with a dependency group.
# setup_venv DIR GROUP [EXTRA...]  -> sets VENV=DIR (GROUP "-" installs no dependency group)
setup_venv() {
  local dir=$1 group=$2; shift 2
  local python=${PYTHON:-python3}
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    echo "rstreams needs Python 3.11 or newer; set PYTHON=/path/to/python3.11" >&2
    exit 1
  fi
  if [ ! -x "$dir/bin/python" ]; then
    echo "== creating $dir"
    "$python" -m venv "$dir"
  fi
  VENV=$dir
  "$VENV/bin/python" -m pip install -q --upgrade "pip>=25.1" 2>&1 | grep -v '^WARNING: Location' || true
  local extras=""
  if [ $# -gt 0 ]; then extras="[$(IFS=,; echo "$*")]"; fi
  local group_args=()
  if [ "$group" != "-" ]; then group_args=(--group "$group"); fi
  echo "== installing rstreams$extras ${group_args[*]:-} into $dir"
  "$VENV/bin/python" -m pip install -q -e ".$extras" "${group_args[@]}" 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/python" -c 'import rstreams' || { echo "installing rstreams failed" >&2; exit 1; }
}
