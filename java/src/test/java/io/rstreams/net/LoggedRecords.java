package io.rstreams.net;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** What the binding's logger {@code io.rstreams.net} logs while a test's body runs. */
final class LoggedRecords {
    private LoggedRecords() {}

    /** A test's body, which may throw. */
    interface Body {
        void run() throws Exception;
    }

    /** The records whose message contains {@code containing}, logged while {@code body} ran. */
    static List<LogRecord> during(String containing, Body body) throws Exception {
        Logger log = Logger.getLogger("io.rstreams.net");
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getMessage().contains(containing)) {
                    records.add(record);
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        log.addHandler(capture);
        try {
            body.run();
        } finally {
            log.removeHandler(capture);
        }
        return records;
    }
}
