package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.RawSockets;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.Test;

/**
 * After an error goodbye the server reads and discards the peer's input for the linger time
 * (§10), so that the peer reads the goodbye; a peer that floods meanwhile is cut off once
 * {@link Endpoint#LINGER_BYTES} are discarded, as rstreams' LINGER_BYTES. Before, the I/O thread
 * read and dropped all it could for the whole 2 s: about 200 MB from one peer on loopback
 * (tests/conformance/test_hostile_polyglot.py found it). A linger that ends with our output
 * still unsent (the peer has not read even the goodbye) resets the transport, as rstreams aborts
 * its transport, so the peer does not see a clean end of input after a part of our output cut
 * anywhere (a truncated frame, §9.3, or an end without goodbye).
 */
public class LingerTest {
    private static final long FLOOD = 512L << 20; // what the peer tries to write after its violation

    @Test(timeOut = 60_000)
    public void aPeerFloodingAfterItsErrorIsCutOffOnceTheLingerBytesAreDiscarded() throws Exception {
        try (RsioServer server = RsioServer.builder().bind("tcp://127.0.0.1:0");
             Socket socket = RawSockets.connect(server.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x00, 0x0E}); // a clientHello, then an unknown type byte (§3)
            AtomicLong written = new AtomicLong();
            Thread flood = new Thread(() -> {
                byte[] chunk = new byte[1 << 20];
                try {
                    while (written.get() < FLOOD) {
                        out.write(chunk);
                        written.addAndGet(chunk.length);
                    }
                } catch (IOException reset) {
                    // the server closed
                }
            });
            flood.start();
            List<Frame> frames = RawSockets.readToTheEnd(socket);
            flood.join();
            assertEquals(RawSockets.lastGoodbye(frames), "unknown message type 0x0e (PROTOCOL.md §3)");
            // LINGER_BYTES discarded, plus what the kernel's buffers of both ends held
            assertTrue(written.get() < 64L << 20, "the server took " + written.get() + " bytes after its goodbye");
        }
    }

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
