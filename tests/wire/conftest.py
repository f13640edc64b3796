from __future__ import annotations

import sys
from pathlib import Path

# tests/wire/wiresupport.py is imported as `wiresupport` by the test modules here
sys.path.insert(0, str(Path(__file__).parent))
