"""tests/observe/observesupport.py is imported as ``observesupport`` by the test modules here."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
