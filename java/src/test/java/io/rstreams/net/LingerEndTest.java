package io.rstreams.net;

import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.RawSockets;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameWriter;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * How a bounded wait ends when the peer has not read what we wrote (PROTOCOL.md §9.1, §10):
 * the output still unsent is dropped, and over TCP the close is a reset, as rstreams aborts its
 * transport, so the peer does not see a clean end of input after a part of our output cut
 * anywhere (a truncated frame, §9.3, or an end without goodbye).
 */
public class LingerEndTest {
    @Test(timeOut = 60_000)
    public void aLingerEndingWithOutputUnsentResetsTheTransport() throws Exception {
        CompletableFuture<RsioConnection> accepted = new CompletableFuture<>();
        byte[] element = new byte[1000];
        try (RsioServer server = RsioServer.builder()
                .route("endless", r -> Counters.repeat(element, Long.MAX_VALUE))
                .keepalive(null)
                .idleTimeout(Duration.ofSeconds(1)) // its goodbye comes once its output is stuck behind what we do not read
                .onConnection(accepted::complete)
                .bind("tcp://127.0.0.1:0");
                Socket peer = new Socket()) {
            peer.setReceiveBufferSize(16 * 1024);
            peer.connect(new InetSocketAddress("127.0.0.1", server.port()));
            peer.setSoTimeout(RawSockets.READ_DEADLINE_MS);
            peer.getOutputStream().write(FrameWriter.encode(new Frame.Hello(false, 0, List.of()), 0));
            peer.getOutputStream().write(FrameWriter.encode(new Frame.Subscribe("endless", 1, 1L << 40), 0));
            // the idle timeout's goodbye queues behind the elements we leave unread; the linger (2 s) ends it
            accepted.get(20, TimeUnit.SECONDS).onClose().get(30, TimeUnit.SECONDS);
            InputStream in = peer.getInputStream();
            byte[] buffer = new byte[1 << 16];
            long[] read = {0};
            SocketException reset = expectThrows(SocketException.class, () -> {
                for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                    read[0] += n;
                }
            });
            assertTrue(read[0] > 0 && reset.getMessage().contains("reset"), read[0] + " bytes, then " + reset);
        }
    }
}
