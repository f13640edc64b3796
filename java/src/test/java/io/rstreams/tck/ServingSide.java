package io.rstreams.tck;

import io.rstreams.net.RsioClient;
import io.rstreams.net.RsioConnection;
import io.rstreams.net.RsioServer;
import java.util.concurrent.Flow;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The Java server's serving-side subscriber, taken out for the TCK: the route {@code tck/capture}
 * hands the subscriber the server puts on a local publisher (the pump to the wire) to the test
 * instead of subscribing it, and a Java client on the other end of a TCP connection plays the
 * remote subscriber whose demand that subscriber relays.
 */
final class ServingSide implements AutoCloseable {
    private final LinkedBlockingQueue<Flow.Subscriber<? super byte[]>> captured = new LinkedBlockingQueue<>();
    private final RsioServer server;
    private final RsioClient client;
    private final RsioConnection conn;

    ServingSide() throws Exception {
        server = RsioServer.builder().route("tck/capture", r -> captured::add).bind("tcp://127.0.0.1:0");
        client = RsioClient.builder().build();
        conn = client.connect(server.url()).get(10, TimeUnit.SECONDS);
    }

    /**
     * A remote subscription whose client side is {@code remote} (a {@link io.rstreams.testing.Holding},
     * whose requests the server's subscriber relays); returns the server's subscriber for it.
     */
    Flow.Subscriber<? super byte[]> open(Flow.Subscriber<byte[]> remote) {
        conn.publisher("tck/capture").subscribe(remote);
        try {
            Flow.Subscriber<? super byte[]> s = captured.poll(10, TimeUnit.SECONDS);
            if (s == null) {
                throw new IllegalStateException("the server did not subscribe within 10 s");
            }
            return s;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        conn.close();
        client.close();
        server.close();
    }
}
