package io.rstreams.conformance;

import io.rstreams.net.RsioServer;

/** Runs the Java server with the conformance publishers until killed: {@code java ... ConformanceServerMain [url]}. */
public final class ConformanceServerMain {
    private ConformanceServerMain() {}

    public static void main(String[] args) throws Exception {
        try (RsioServer server = new ConformancePublishers().addTo(RsioServer.builder())
                .bind(args.length > 0 ? args[0] : "tcp://127.0.0.1:0")) {
            System.out.println("serving on " + server.url());
            server.awaitClose();
        }
    }
}
