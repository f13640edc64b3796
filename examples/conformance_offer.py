"""The conformance publishers (docs/conformance.md), for ``rstreams serve --publishers``, so that
``rstreams conformance`` can run its cases against the ``rstreams`` command's own server::

    rstreams serve tcp://127.0.0.1:7000 --publishers examples/conformance_offer.py --resume
    rstreams conformance tcp://127.0.0.1:7000 --idle-timeout 60

``PUBLISHERS`` is a callable ``(path, params)`` that finds ``conformance/range``, ``large``,
``echo`` and the rest; its ``on_connection`` (which ``rstreams serve`` passes on to
``rstreams.serve``) lets ``conformance/echo`` subscribe back on the connection it came on.
Without ``--resume`` the resumption cases skip; ``--idle-timeout 60`` is the server's default
idle timeout, which the keepalive cases then check.
"""

from __future__ import annotations

from rstreams.conformance import conformance_publishers

PUBLISHERS = conformance_publishers()
