"""``python -m rstreams``: the ``rstreams`` command (:func:`rstreams.cli.main`)."""

import sys

from rstreams.cli import main

sys.exit(main())
