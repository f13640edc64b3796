"""``python -m rstreams.conformance URL``: run the suite (see :func:`rstreams.conformance.main`)."""

from __future__ import annotations

import sys

from rstreams.conformance import main

sys.exit(main())
