package io.rstreams.conformance;

import io.rstreams.wire.Limits;
import java.io.IOException;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.regex.Pattern;

/** What {@link FuzzServerMain} and {@link FuzzClientMain}, the processes under fuzz/, share. */
final class FuzzProcesses {
    /** fuzz/fuzz_net.py's server's small limits. */
    static final Limits LIMITS = new Limits(256 << 10, 64 << 10, 1024, 64, 8, 512 << 10, 64, 64 << 10);

    private static final Logger IO_LOG = Logger.getLogger("io.rstreams.net"); // (held: configured below)
    private static final Logger MESSAGES_LOG = Logger.getLogger("io.rstreams.net.messages"); // (held too)

    private static final Pattern DROPPED = Pattern.compile("message to '.*' dropped: ", Pattern.DOTALL);

    private FuzzProcesses() {}

    /**
     * An exception that reaches the end of a connection's pipeline is logged at DEBUG ("transport
     * error on ...") and the transport closed: written to stderr here (where the driver sees it),
     * unless it is the transport's own (an I/O error such as a reset by the peer).
     */
    static void reportErrorsOnTheIoThreads() {
        // A message dropped as PROTOCOL.md §20.4 says (no such handler, a malformed name, refused)
        // is logged by design, not a fault: left out of what the driver counts, as the JavaScript
        // processes leave it out (fuzz/polyglot_server.mjs).
        MESSAGES_LOG.setFilter(record -> !DROPPED.matcher(String.valueOf(record.getMessage())).lookingAt());
        IO_LOG.setLevel(Level.FINE);
        IO_LOG.addHandler(new Handler() {
            @Override
            public void publish(LogRecord record) {
                Throwable thrown = record.getThrown();
                if (thrown != null && !(thrown instanceof IOException)) {
                    System.err.println(record.getMessage());
                    thrown.printStackTrace();
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        });
    }
}
