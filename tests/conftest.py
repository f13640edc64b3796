from __future__ import annotations

# Hypothesis' per-example deadline (200 ms) is a wall-clock assertion: on a loaded machine it
# fails properties that are correct. The suite checks behaviour, never speed (benchmarks/ does).
from hypothesis import settings

settings.register_profile("rstreams", deadline=None)
settings.load_profile("rstreams")
