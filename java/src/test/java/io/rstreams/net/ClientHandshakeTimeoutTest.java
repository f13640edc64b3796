package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.Limits;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
        try (ServerSocket silent = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             RsioClient client = RsioClient.builder().handshakeTimeout(Duration.ofMillis(300)).build()) {
            RsioConnection conn = client.connect("tcp://127.0.0.1:" + silent.getLocalPort()).get(10, TimeUnit.SECONDS);
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(1);
            try (Socket accepted = silent.accept()) {
                accepted.setSoTimeout(20_000);
                Throwable error = sub.awaitTerminal();
                assertTrue(error instanceof ConnectionClosedException, String.valueOf(error));
                assertEquals(error.getMessage(), "handshake timeout (no serverHello within 0.3 s): "
                        + "the server did not say hello (RsioClient.Builder.handshakeTimeout)");
                List<Frame> frames = readToTheEnd(accepted.getInputStream());
                Frame last = frames.get(frames.size() - 1);
                assertTrue(last instanceof Frame.Goodbye, "no goodbye came last: " + frames);
                assertEquals(((Frame.Goodbye) last).reason(), "handshake timeout (no serverHello within 0.3 s)");
            }
        }
    }

    private static List<Frame> readToTheEnd(InputStream in) throws Exception {
        FrameParser parser = new FrameParser(Limits.DEFAULT);
        List<Frame> frames = new ArrayList<>();
        byte[] buffer = new byte[4096];
        try {
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                parser.feed(buffer, 0, n);
                frames.addAll(parser.parseAll());
            }
        } catch (SocketException reset) {
            // the frames before it count
        }
        return frames;
    }

    @Test
    public void aTimeoutOfZeroIsRefusedNamingTheOption() {
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class,
                () -> RsioClient.builder().handshakeTimeout(Duration.ZERO));
        assertTrue(e.getMessage().startsWith("handshakeTimeout must be > 0"), e.getMessage());
    }
}
