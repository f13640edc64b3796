"""The peers' virtual environment: made and filled by the harness itself, never by rstreams.

``benchmarks/.peers-venv`` (gitignored) holds the libraries rstreams is compared with
(rsocket-py 0.4.20, reactivex, aiostream, uvloop) and matplotlib for the plots. It is
created on first use with the interpreter running the harness and checked on every run;
nothing here touches the rstreams environment.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

__all__ = ["PEERS", "PEERS_VENV", "ensure_peers_venv", "peers_python"]

HERE = Path(__file__).resolve().parent
PEERS_VENV = HERE / ".peers-venv"
PEERS = ["rsocket==0.4.20", "reactivex", "aiostream", "uvloop", "matplotlib"]
_IMPORTS = "import rsocket, reactivex, aiostream, uvloop, matplotlib"


def peers_python() -> Path:
    return PEERS_VENV / "bin" / "python"


def _ready() -> bool:
    python = peers_python()
    if not python.exists():
        return False
    done = subprocess.run([str(python), "-c", _IMPORTS], capture_output=True, timeout=120)
    return done.returncode == 0


def ensure_peers_venv(say: object = print) -> Path:
    """Create and fill the peers' venv if needed; returns its python. Raises on failure."""
    if _ready():
        return peers_python()
    if not peers_python().exists():
        say(f"creating {PEERS_VENV} (the peers live here, not in rstreams' environment)")  # type: ignore[operator]
        venv.EnvBuilder(with_pip=True, clear=True).create(PEERS_VENV)
    say(f"installing into the peers venv: {' '.join(PEERS)}")  # type: ignore[operator]
    subprocess.run(
        [str(peers_python()), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *PEERS],
        check=True,
        timeout=900,
    )
    if not _ready():
        raise RuntimeError(f"the peers venv at {PEERS_VENV} cannot import: {_IMPORTS}")
    return peers_python()


if __name__ == "__main__":
    print(ensure_peers_venv())
    sys.exit(0)
