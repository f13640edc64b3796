package io.rstreams.conformance;

import io.rstreams.net.FixedSizePublisher;
import io.rstreams.net.RsioServer;
import java.time.Duration;
import java.util.concurrent.Flow;

/**
 * The Java server under fuzz/fuzz_polyglot.py: {@code java ... FuzzServerMain [url [--resume]]} serves the
 * names fuzz/fuzz_net.py's inputs use ({@code numbers}: the bytes 0, 1, 2; {@code big}: one
 * 100 000-byte element, split into parts; {@code packed}: 8-byte elements sent packed) and the
 * conformance publishers, with the small limits of fuzz_net's server, subscribes to each client's
 * {@code up} (so it receives elements too), prints {@code serving on URL} and runs until killed.
 * With {@code --resume} it keeps sessions (§16) for 0.5 s after their transport breaks. A clientHello
 * must come within 5 s (its handshake timeout), as with the JavaScript server.
 */
public final class FuzzServerMain {
    private FuzzServerMain() {}

    public static void main(String[] args) throws Exception {
        FuzzProcesses.reportErrorsOnTheIoThreads();
        try (RsioServer server = new ConformancePublishers().addTo(RsioServer.builder())
                .route("numbers", r -> new IndexedSource(i -> new byte[] {(byte) i}, 3, -1, null, false))
                .route("big", r -> new IndexedSource(i -> new byte[100_000], 1, -1, null, false))
                .route("packed", r -> FixedSizePublisher.of(
                        new IndexedSource(i -> ConformancePublishers.elementBytes(i, 8), 100, -1, null, false), 8))
                .limits(FuzzProcesses.LIMITS)
                .resume(args.length > 1 && args[1].equals("--resume"))
                .sessionTimeout(Duration.ofMillis(500))
                .handshakeTimeout(Duration.ofSeconds(5))
                .onConnection(conn -> conn.publisher("up").subscribe(new Drain()))
                .bind(args.length > 0 ? args[0] : "tcp://127.0.0.1:0")) {
            System.out.println("serving on " + server.url());
            System.out.flush();
            server.awaitClose();
        }
    }

    /** Takes the client's elements one at a time, forever. */
    private static final class Drain implements Flow.Subscriber<byte[]> {
        private Flow.Subscription subscription;

        @Override
        public void onSubscribe(Flow.Subscription s) {
            subscription = s;
            s.request(4);
        }

        @Override
        public void onNext(byte[] element) {
            subscription.request(1);
        }

        @Override
        public void onError(Throwable error) {}

        @Override
        public void onComplete() {}
    }
}
