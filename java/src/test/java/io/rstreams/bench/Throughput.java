package io.rstreams.bench;

import io.rstreams.net.Codec;
import io.rstreams.net.Counters;
import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.net.RsioServer;
import io.rstreams.testing.PythonRstreams;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

/**
 * A first throughput probe of the Java binding (not a test): elements per second through one
 * stream with a window of demand, Java client to Java server and Java client to a Python
 * {@code rstreams serve}. Run after {@code mvn test-compile}:
 * {@code java -cp target/classes:target/test-classes:$(cat cp.txt) io.rstreams.bench.Throughput [venv]}.
 */
public final class Throughput {
    private Throughput() {}

    /** Requests {@code window} at first and tops it up by half a window once half was used. */
    static final class Windowed<T> implements Flow.Subscriber<T> {
        final long window;
        final long total;
        final CompletableFuture<Long> done = new CompletableFuture<>();
        Flow.Subscription s;
        long received;
        long sinceTopUp;

        Windowed(long window, long total) {
            this.window = window;
            this.total = total;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            this.s = s;
            s.request(window);
        }

        @Override
        public void onNext(T item) {
            received++;
            if (received == total) {
                s.cancel();
                done.complete(received);
                return;
            }
            if (++sinceTopUp == window / 2) {
                sinceTopUp = 0;
                s.request(window / 2);
            }
        }

        @Override
        public void onError(Throwable t) {
            done.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            done.complete(received);
        }
    }

    static <T> double run(RsioConnection conn, String name, Codec<T> codec, long window, long total) throws Exception {
        Windowed<T> sub = new Windowed<>(window, total);
        long t0 = System.nanoTime();
        conn.publisher(name, codec).subscribe(sub);
        long n = sub.done.get(120, TimeUnit.SECONDS);
        return n / ((System.nanoTime() - t0) / 1e9);
    }

    public static void main(String[] args) throws Exception {
        byte[] big = new byte[64 * 1024];
        try (RsioServer server = RsioServer.builder()
                .route("counter", Codec.INT64, r -> Counters.range(0, Long.MAX_VALUE))
                .route("big", r -> Counters.repeat(big, Long.MAX_VALUE))
                .bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            for (int round = 0; round < 3; round++) {
                double small = run(conn, "counter", Codec.INT64, 256, 2_000_000);
                double small4k = run(conn, "counter", Codec.INT64, 4096, 4_000_000);
                double large = run(conn, "big", Codec.BYTES, 256, 20_000);
                System.out.printf("java->java  round %d: 8-byte window 256: %.0f el/s; window 4096: %.0f el/s; 64 KiB window 256: %.0f el/s (%.2f GB/s)%n",
                        round, small, small4k, large, large * big.length / 1e9);
            }
        }
        if (args.length > 0) {
            System.setProperty("rstreams.python.venv", args[0]);
            try (PythonRstreams python = PythonRstreams.serve("--codec", "int64");
                 RsioClient client = RsioClient.builder().build();
                 RsioConnection conn = client.connect(python.url()).get(10, TimeUnit.SECONDS)) {
                for (int round = 0; round < 3; round++) {
                    double small = run(conn, "counter", Codec.INT64, 256, 1_000_000);
                    System.out.printf("java->python round %d: 8-byte int64 window 256: %.0f el/s%n", round, small);
                }
            }
        }
    }
}
