package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The client's handshake timeout (PROTOCOL.md §4.1, as rstreams' handshake_timeout of connect):
 * a server that accepts the transport but never sends its serverHello is said goodbye, and the
 * client's subscriptions fail naming the timeout, instead of waiting for good.
 */
public class ClientHandshakeTimeoutTest {
    @Test(timeOut = 30_000)
    public void aSilentServerIsSaidGoodbyeAndTheSubscriptionsFail() throws Exception {
        try (ServerSocket silent = RawSockets.listen();
             RsioClient client = RsioClient.builder().handshakeTimeout(Duration.ofMillis(300)).build()) {
            RsioConnection conn = client.connect("tcp://127.0.0.1:" + silent.getLocalPort()).get(10, TimeUnit.SECONDS);
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(1);
            try (Socket accepted = RawSockets.accept(silent)) {
                Throwable error = sub.awaitTerminal();
                assertTrue(error instanceof ConnectionClosedException, String.valueOf(error));
                assertEquals(error.getMessage(), "handshake timeout (no serverHello within 0.3 s): "
                        + "the server did not say hello (RsioClient.Builder.handshakeTimeout)");
                String reason = RawSockets.lastGoodbye(RawSockets.readToTheEnd(accepted));
                assertEquals(reason, "handshake timeout (no serverHello within 0.3 s)");
            }
        }
    }

    @Test
    public void aTimeoutOfZeroIsRefusedNamingTheOption() {
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class,
                () -> RsioClient.builder().handshakeTimeout(Duration.ZERO));
        assertTrue(e.getMessage().startsWith("handshakeTimeout must be > 0"), e.getMessage());
    }
}
