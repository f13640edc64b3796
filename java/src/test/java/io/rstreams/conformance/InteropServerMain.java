package io.rstreams.conformance;

import io.rstreams.net.Codec;
import io.rstreams.net.FixedSizePublisher;
import io.rstreams.net.RsioServer;
import java.util.ArrayList;
import java.util.List;

/**
 * The Java server of the interop matrix (tests/interop): {@code java ... InteropServerMain TOKEN URL...}
 * serves the conformance publishers and {@code counter?from=A&to=B} (the integers A..B-1 as
 * {@link Codec#INT64}, sent packed) on every URL, requiring TOKEN (§15), prints {@code serving on URL}
 * for each once it listens, and runs until killed. Its WebSocket servers accept every page's Origin
 * ({@code origins("*")}): the browser driver's page comes from its own file server, on a port of its own.
 */
public final class InteropServerMain {
    private InteropServerMain() {}

    public static void main(String[] args) throws Exception {
        List<RsioServer> servers = new ArrayList<>();
        try {
            for (int k = 1; k < args.length; k++) {
                RsioServer server = new ConformancePublishers().addTo(RsioServer.builder())
                        .route("counter", r -> {
                            long from = r.longParam("from", 0);
                            long to = r.longParam("to", from + 10);
                            return FixedSizePublisher.of(new IndexedSource(
                                    i -> Codec.INT64.encode(from + i), Math.max(0, to - from), -1, null, false), 8);
                        })
                        .token(args[0])
                        .origins("*")
                        .bind(args[k]);
                servers.add(server);
                System.out.println("serving on " + server.url());
                System.out.flush();
            }
            for (RsioServer server : servers) {
                server.awaitClose();
            }
        } finally {
            servers.forEach(RsioServer::close);
        }
    }
}
