package io.rstreams.conformance;

import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.testing.Json;
import io.netty.util.internal.logging.InternalLoggerFactory;
import io.netty.util.internal.logging.JdkLoggerFactory;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;

/**
 * The Java client under fuzz/fuzz_polyglot_client.py: {@code java ... FuzzClientMain} reads one
 * URL a line from stdin, once it has printed {@code ready}. For each, an {@link RsioClient} (no pings, serving {@code up} to the
 * server, the small limits of fuzz_net's server) subscribes to {@code numbers} with demand 1 and
 * to {@code stream} with demand 4 at a time, waits for both streams to end and for the connection
 * to close, and prints one JSON line: each stream's outcome ({@code ok}, or the error's class and
 * message) and why the connection ended. A stream that never ends is a hang the driver sees as a
 * missing line; an exception that reaches the end of a connection's pipeline is written to stderr,
 * where the driver counts it as a failure.
 */
public final class FuzzClientMain {
    private FuzzClientMain() {}

    public static void main(String[] args) throws Exception {
        InternalLoggerFactory.setDefaultFactory(JdkLoggerFactory.INSTANCE); // (no SLF4J notice on stderr)
        FuzzProcesses.reportErrorsOnTheIoThreads();
        try (RsioClient client = RsioClient.builder()
                .keepalive(null)
                .limits(FuzzProcesses.LIMITS)
                .serve("up", r -> new IndexedSource(i -> new byte[] {'u', 'p'}, 1, -1, null, false))
                .build()) {
            System.out.println("ready");
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (!line.isBlank()) {
                    System.out.println(converse(client, line.trim()));
                    System.out.flush();
                }
            }
        }
        System.exit(0);
    }

    private static String converse(RsioClient client, String url) throws InterruptedException {
        RsioConnection conn;
        try {
            conn = client.connect(url).get();
        } catch (ExecutionException e) {
            return "{\"connect\": " + describe(e.getCause()) + "}";
        }
        Outcome numbers = new Outcome(1);
        Outcome stream = new Outcome(4);
        conn.publisher("numbers").subscribe(numbers);
        conn.publisher("stream").subscribe(stream);
        List<String> calls = new ArrayList<>();
        for (Outcome outcome : List.of(numbers, stream)) {
            try {
                outcome.done.get();
                calls.add("{\"ok\": true}");
            } catch (ExecutionException e) {
                calls.add(describe(e.getCause()));
            }
        }
        String closed;
        try {
            conn.onClose().get();
            closed = "null";
        } catch (ExecutionException e) {
            closed = describe(e.getCause());
        }
        return "{\"calls\": " + calls + ", \"closed\": " + closed + "}";
    }

    private static String describe(Throwable error) {
        return "{\"name\": " + Json.quote(error.getClass().getSimpleName()) + ", \"message\": "
                + Json.quote(String.valueOf(error.getMessage())) + "}";
    }

    /** Requests {@code window} elements at a time until the stream ends; {@code done} says how. */
    private static final class Outcome implements Flow.Subscriber<byte[]> {
        final CompletableFuture<Void> done = new CompletableFuture<>();
        private final long window;
        private Flow.Subscription subscription;
        private long left;

        Outcome(long window) {
            this.window = window;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            left = window;
            s.request(window);
        }

        @Override
        public void onNext(byte[] element) {
            if (--left == 0) {
                left = window;
                subscription.request(window);
            }
        }

        @Override
        public void onError(Throwable error) {
            done.completeExceptionally(error);
        }

        @Override
        public void onComplete() {
            done.complete(null);
        }
    }
}
