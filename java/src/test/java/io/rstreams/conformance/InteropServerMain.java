package io.rstreams.conformance;

import io.rstreams.net.Codec;
import io.rstreams.net.FixedSizePublisher;
import io.rstreams.net.RsioServer;

/**
 * The Java server of the interop matrix (tests/interop): {@code java ... InteropServerMain URL [TOKEN]}
 * serves the conformance publishers and {@code counter?from=A&to=B} (the integers A..B-1 as
 * {@link Codec#INT64}, sent packed), requiring TOKEN when given, and prints {@code serving on URL}
 * once it listens; it runs until killed.
 */
public final class InteropServerMain {
    private InteropServerMain() {}

    public static void main(String[] args) throws Exception {
        RsioServer.Builder builder = new ConformancePublishers().addTo(RsioServer.builder())
                .route("counter", r -> {
                    long from = r.longParam("from", 0);
                    long to = r.longParam("to", from + 10);
                    return FixedSizePublisher.of(new IndexedSource(i -> Codec.INT64.encode(from + i), Math.max(0, to - from), -1, null, false), 8);
                });
        if (args.length > 1) {
            builder.token(args[1]);
        }
        try (RsioServer server = builder.bind(args[0])) {
            System.out.println("serving on " + server.url());
            System.out.flush();
            server.awaitClose();
        }
    }
}
