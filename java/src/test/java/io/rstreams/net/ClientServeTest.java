package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.expectThrows;

import java.util.concurrent.Flow;
import java.util.function.Function;
import org.testng.annotations.Test;

/**
 * A client's {@code serve} (bidirectional, PROTOCOL.md §1) refuses a null pattern, codec or
 * factory when it is called, with the words of the server's {@code route}, instead of failing
 * later at a peer's subscribe.
 */
public class ClientServeTest {
    private static final Function<PublisherRequest, Flow.Publisher<byte[]>> RAW = r -> null;
    private static final Function<PublisherRequest, Flow.Publisher<String>> TEXT = r -> null;

    /** The message of the NullPointerException {@code call} throws. */
    private static String refusal(Runnable call) {
        return expectThrows(NullPointerException.class, call::run).getMessage();
    }

    @Test(timeOut = 10_000)
    public void serveRefusesNullsAsRouteDoes() {
        RsioClient.Builder client = RsioClient.builder();
        RsioServer.Builder server = RsioServer.builder();
        assertEquals(refusal(() -> client.serve(null, RAW)), "pattern");
        assertEquals(refusal(() -> client.serve("a", null)), "factory");
        assertEquals(refusal(() -> client.serve(null, Codec.UTF8, TEXT)), "pattern");
        assertEquals(refusal(() -> client.serve("a", null, TEXT)), "codec");
        assertEquals(refusal(() -> client.serve("a", Codec.UTF8, null)), "factory");
        assertEquals(refusal(() -> client.serve(null, RAW)), refusal(() -> server.route(null, RAW)));
        assertEquals(refusal(() -> client.serve("a", null)), refusal(() -> server.route("a", null)));
        assertEquals(refusal(() -> client.serve(null, Codec.UTF8, TEXT)), refusal(() -> server.route(null, Codec.UTF8, TEXT)));
        assertEquals(refusal(() -> client.serve("a", null, TEXT)), refusal(() -> server.route("a", null, TEXT)));
        assertEquals(refusal(() -> client.serve("a", Codec.UTF8, null)), refusal(() -> server.route("a", Codec.UTF8, null)));
    }
}
