package io.rstreams.tck;

import org.reactivestreams.tck.TestEnvironment;

/** The TCK's timeouts for a path that crosses a loopback socket (and, for the Python server, another process). */
final class TckEnvironment {
    /**
     * How long to wait for a signal that must come: only a failing test waits it out (a signal
     * that comes ends the wait), so it is long enough for a Python server on a loaded two-core
     * machine (2 s was missed once there, rule 3.9's onError for request(0)).
     */
    static final long TIMEOUT_MILLIS = 10_000;
    /** How long to watch for a signal that must not come. */
    static final long NO_SIGNALS_MILLIS = 200;
    /** How long a cancelled subscriber may stay referenced (rule 3.13). */
    static final long GC_TIMEOUT_MILLIS = 2_000;
    /**
     * How often a wait for an error looks again: the TCK's default is the whole
     * {@link #TIMEOUT_MILLIS}, so each expected error (rule 3.9's) took 2 s however soon it came.
     */
    static final long POLL_MILLIS = 10;

    private TckEnvironment() {}

    static TestEnvironment create() {
        return new TestEnvironment(TIMEOUT_MILLIS, NO_SIGNALS_MILLIS, POLL_MILLIS);
    }
}
