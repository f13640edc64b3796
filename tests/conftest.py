from __future__ import annotations

import sys
from pathlib import Path

# tests/support.py is imported as `support` by the test modules
sys.path.insert(0, str(Path(__file__).parent))
