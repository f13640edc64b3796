"""The browser side of RS.io: a JavaScript client (``static/rsio.js``) and a live page.

* ``static/rsio.js`` (with ``static/rsio-*.js``): the browser modules of the JavaScript
  package in ``js/``, which the wheel carries there (a source checkout serves ``js/src``'s
  files, see :func:`static_file`); an ES module speaking RS.io over the browser's WebSocket,
  with Reactive Streams demand (docs/web.md has its API).
* :class:`LivePage`: serves the page (``static/index.html``, ``live.js``) over HTTP and
  the publishers it charts over ``ws://``; ``rstreams serve --web`` and ``rstreams demo``
  use it. Needs the ``websockets`` extra.
"""

from __future__ import annotations

from rstreams.web._http import STATIC_FILES as STATIC_FILES
from rstreams.web._http import StaticFileMissingError as StaticFileMissingError
from rstreams.web._http import UnknownStaticFileError as UnknownStaticFileError
from rstreams.web._http import static_file as static_file
from rstreams.web._page import LivePage as LivePage
from rstreams.web._page import PageNotRunningError as PageNotRunningError
from rstreams.web._page import page_for_logs as page_for_logs

__all__ = [
    "STATIC_FILES",
    "LivePage",
    "PageNotRunningError",
    "StaticFileMissingError",
    "UnknownStaticFileError",
    "page_for_logs",
    "static_file",
]

from rstreams._exports import claim as _claim

_claim(__name__, __all__, globals())
