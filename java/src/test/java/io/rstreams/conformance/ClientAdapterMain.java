package io.rstreams.conformance;

import io.rstreams.net.RemoteStreamException;
import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.testing.Json;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;

/**
 * The Java client's adapter for the RS.io client conformance suite (docs/conformance.md, "Testing
 * a client"): {@code java -cp CLASSPATH io.rstreams.conformance.ClientAdapterMain URL PUBLISHER SCRIPT}.
 *
 * <p>It connects with {@link RsioClient} (the builder's defaults: keepalive on), subscribes to
 * PUBLISHER and runs SCRIPT's steps in order: {@code rN} request N, {@code wN} wait until N elements
 * arrived in all (or the stream ended), {@code c} cancel, {@code t} wait for the terminal signal,
 * {@code q} close the connection with a goodbye and exit. What its subscriber sees is printed as one
 * JSON object per line: {@code next} (hex), {@code complete}, {@code error} (the publisher's onError
 * text), {@code closed} (the connection failed or ended), and last {@code exit}. Status 0 once the
 * script ran, whatever the server did; 2 when the arguments are wrong. {@link ClientConformanceTest}
 * runs the suite through it.
 */
public final class ClientAdapterMain {
    private ClientAdapterMain() {}

    /** One step of a script: {@code kind} is r, w, c, t or q; {@code count} is N for r and w. */
    record Step(char kind, long count) {}

    /** {@code "r3 w3 c q"} as its steps; IllegalArgumentException names a bad step. */
    static List<Step> parseScript(String script) {
        List<Step> steps = new ArrayList<>();
        for (String step : script.trim().split("\\s+")) {
            if (step.isEmpty()) {
                continue;
            }
            char kind = step.charAt(0);
            String count = step.substring(1);
            if ((kind == 'r' || kind == 'w') && count.matches("[1-9][0-9]{0,18}")) {
                steps.add(new Step(kind, Long.parseLong(count)));
            } else if ((kind == 'c' || kind == 't' || kind == 'q') && count.isEmpty()) {
                steps.add(new Step(kind, 0));
            } else {
                throw new IllegalArgumentException("bad script step \"" + step + "\": use rN, wN, c, t or q");
            }
        }
        return steps;
    }

    public static void main(String[] args) throws InterruptedException {
        if (args.length != 3) {
            System.err.println("usage: java io.rstreams.conformance.ClientAdapterMain URL PUBLISHER SCRIPT");
            System.exit(2);
        }
        List<Step> steps;
        try {
            steps = parseScript(args[2]);
        } catch (IllegalArgumentException e) {
            System.err.println("ClientAdapterMain: " + e.getMessage());
            System.exit(2);
            return;
        }
        try (RsioClient client = RsioClient.builder().build()) {
            run(client, args[0], args[1], steps);
        }
        emit("exit");
        System.out.flush();
        System.exit(0);
    }

    private static void run(RsioClient client, String url, String publisher, List<Step> steps) throws InterruptedException {
        RsioConnection conn;
        try {
            conn = client.connect(url).get();
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            emit("closed", "message", "connect failed: " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
            return;
        }
        Recorder recorder = new Recorder();
        conn.publisher(publisher).subscribe(recorder);
        Flow.Subscription subscription = recorder.subscription();
        for (Step step : steps) {
            switch (step.kind()) {
                case 'r' -> subscription.request(step.count());
                case 'w' -> recorder.until(step.count());
                case 'c' -> subscription.cancel();
                case 't' -> recorder.until(Long.MAX_VALUE);
                default -> {
                    conn.close();
                    return;
                }
            }
        }
        conn.close();
    }

    /** The subscriber: prints every signal and lets the script wait for a count or the end. */
    private static final class Recorder implements Flow.Subscriber<byte[]> {
        private Flow.Subscription subscription;
        private long count;
        private boolean ended;

        synchronized Flow.Subscription subscription() throws InterruptedException {
            while (subscription == null) {
                wait();
            }
            return subscription;
        }

        /** Waits until {@code n} elements arrived in all, or the stream ended. */
        synchronized void until(long n) throws InterruptedException {
            while (!ended && count < n) {
                wait();
            }
        }

        @Override
        public synchronized void onSubscribe(Flow.Subscription s) {
            subscription = s;
            notifyAll();
        }

        @Override
        public synchronized void onNext(byte[] item) {
            count++;
            emit("next", "hex", HexFormat.of().formatHex(item));
            notifyAll();
        }

        @Override
        public synchronized void onError(Throwable error) {
            if (error instanceof RemoteStreamException) {
                emit("error", "message", String.valueOf(error.getMessage()));
            } else {
                emit("closed", "message", error.getClass().getSimpleName() + ": " + error.getMessage());
            }
            ended = true;
            notifyAll();
        }

        @Override
        public synchronized void onComplete() {
            emit("complete");
            ended = true;
            notifyAll();
        }
    }

    private static void emit(String event) {
        emit(event, null, null);
    }

    /** Prints {@code {"event": EVENT, FIELD: VALUE}} (without the field when it is null), one line. */
    private static synchronized void emit(String event, String field, String value) {
        StringBuilder out = new StringBuilder("{\"event\": ").append(Json.quote(event));
        if (field != null) {
            out.append(", ").append(Json.quote(field)).append(": ").append(Json.quote(value));
        }
        System.out.println(out.append('}'));
    }
}
