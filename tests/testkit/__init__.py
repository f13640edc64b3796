"""The test suite's shared code, one importable package (pytest's ``pythonpath`` puts tests/ first).

Test modules import from here, never from each other, and nothing edits ``sys.path``
(tests/test_testkit.py checks both). Outside pytest, ``PYTHONPATH=src:tests`` does the same.

========================  ============================================================
``testkit.recording``     ``RecordingSubscriber`` and ``WAIT``, the bound of every wait (own time)
``testkit.bound``         ``within``/``Bound``: a wait bounded by the loop's own time, not the load;
                          ``OwnTimeLoop``: a loop whose every timer runs on that time
``testkit.patience``      blocking waits (threads, futures, child processes) bounded the same way
``testkit.publishers``    publishers the operator tests drive by hand or from a thread
``testkit.clock``         a virtual clock for the time-based building blocks
``testkit.shapes``        one stream from three upstream shapes; the TCK environment for them
``testkit.wire``          the wire tests' connected pair, three-way feeding, strategies
``testkit.net``           memory transports, a recording handler, a virtual-time loop
``testkit.resume``        the resumption tests' batching collector
``testkit.names``         the ``names`` vectors (PROTOCOL.md §5.5), their offer, a message handler
``testkit.chaos``         a TCP proxy that cuts and stalls connections on purpose
``testkit.hostile``       a server process, raw-socket flooders, a legitimate client
``testkit.rawws``         WebSocket bytes by hand: a client's masked message, a server's 101
``testkit.tls``           a CA made on the spot, and the certificates it signs
``testkit.replay``        the ``serve`` fixture (ReplayServers stopped after each test)
``testkit.spark``         records, readers, bounded waits on Spark query progress
``testkit.web``           a publisher recording the demand it is given
``testkit.chromium``      headless Chromium over the DevTools protocol
``testkit.scripts``       examples/, fuzz/ and docs/'s scripts loaded as modules
``testkit.snippets``      the documents' code blocks, found and run as written
``testkit.observe``       a clock the test moves, a subscriber that waits on events
``testkit.imports``       a package's import graph and a cycle finder (structure tests)
``testkit.groups``        the tests that pytest -n N runs on one worker (tests/conftest.py)
``testkit.broken_publishers``, ``testkit.broken_subscribers``: the TCK's own test subjects
========================  ============================================================
"""
