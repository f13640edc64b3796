package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.TestSubscriber;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.testng.annotations.Test;

/**
 * Input backpressure (PROTOCOL.md §6.3): a peer that writes and does not read what it is
 * answered is no longer read once the unsent replies pass Endpoint.LOW_WATER, and is read again
 * once it reads them; other connections of the same I/O thread are served meanwhile.
 */
public class InputBackpressureTest {
    private static final long PINGS = 16 * 1_000_000L; // bytes of pings (1.6 million), written 1 MB at a time; as many pong bytes

    private static byte[] pings(int count) {
        byte[] pings = new byte[10 * count];
        for (int k = 0; k < pings.length; k += 10) {
            pings[k] = (byte) 0x80; // ping, 8-byte payload
            pings[k + 1] = 8;
        }
        return pings;
    }

    /** Waits until reading from the lazy peer is paused (a state, whatever the time it takes). */
    private static void awaitPaused(Endpoint endpoint, Thread writer) throws InterruptedException {
        while (!endpoint.readingPaused()) {
            assertTrue(writer.isAlive() || endpoint.readingPaused(),
                    "every ping was written and read, and reading never paused (read " + endpoint.bytesRead() + ")");
            Thread.sleep(5);
        }
    }

    @Test(timeOut = 60_000)
    public void aPeerThatDoesNotReadIsNotReadUntilItDoesAndOthersAreServedMeanwhile() throws Exception {
        CompletableFuture<RsioConnection> accepted = new CompletableFuture<>();
        try (RsioServer server = RsioServer.builder() // one I/O thread: the lazy peer and the client share it
                        .route("counter", Codec.INT64, r -> Counters.range(0, r.longParam("to", 3)))
                        .keepalive(null) // no pings of its own among the pongs
                        .onConnection(c -> accepted.complete(c))
                        .bind("tcp://127.0.0.1:0");
                RsioClient client = RsioClient.builder().build();
                Socket socket = new Socket()) {
            socket.setReceiveBufferSize(4096);
            socket.connect(new InetSocketAddress("127.0.0.1", server.port()));
            socket.setSoTimeout(20_000);
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x01, 0x01}); // clientHello offering keepalive
            AtomicLong written = new AtomicLong();
            Thread writer = new Thread(() -> {
                byte[] chunk = pings(100_000);
                try {
                    while (written.get() < PINGS) {
                        out.write(chunk);
                        written.addAndGet(chunk.length);
                    }
                } catch (IOException e) {
                    // the test ends with the socket closed
                }
            });
            writer.setDaemon(true);
            writer.start();
            Endpoint endpoint = accepted.get(10, TimeUnit.SECONDS).endpoint();
            awaitPaused(endpoint, writer);
            // Paused: what it read is bounded by LOW_WATER plus the socket buffers, not by what was sent.
            long readAtPause = endpoint.bytesRead();
            assertTrue(readAtPause < PINGS / 2, "read " + readAtPause + " bytes of " + PINGS + " before pausing");

            // a well-behaved client on the same I/O thread is served in full meanwhile
            try (RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
                TestSubscriber<Long> sub = new TestSubscriber<>();
                conn.publisher("counter?to=100000", Codec.INT64).subscribe(sub);
                sub.request(Long.MAX_VALUE);
                assertNull(sub.awaitTerminal());
                assertEquals(sub.all().size(), 100_000);
            }
            // The socket may have taken more pongs meanwhile (reading resumes once the channel is
            // writable), but the lazy peer is still not read past the same bound.
            awaitPaused(endpoint, writer);
            long readBeforeReading = endpoint.bytesRead();
            assertTrue(readBeforeReading < PINGS / 2, "read " + readBeforeReading + " bytes of " + PINGS + " unanswered");
            System.err.printf("input backpressure: read %d bytes at the first pause, %d before the peer read; %d pauses%n",
                    readAtPause, readBeforeReading, endpoint.readPauses());

            // once the peer reads, it is read again and every ping is answered
            InputStream in = socket.getInputStream();
            byte[] buffer = new byte[1 << 16];
            byte[] hello = in.readNBytes(3); // serverHello: type, version, extension count, then one byte per id here
            assertEquals(hello[0], (byte) 0x02);
            in.readNBytes(hello[2]);
            long pongs = 0;
            while (pongs < PINGS) {
                int n = in.read(buffer);
                assertTrue(n > 0, "the server closed after " + pongs + " bytes of pongs");
                pongs += n;
            }
            writer.join(20_000);
            assertEquals(written.get(), PINGS);
            assertEquals(pongs, PINGS);
            assertEquals(endpoint.bytesRead(), PINGS + 4);
            assertTrue(endpoint.readPauses() >= 1);
            assertTrue(accepted.get().isOpen(), "the lazy peer was said goodbye");
        }
    }

    @Test(timeOut = 30_000)
    public void aPeerThatLeavesItsRepliesUnreadIsSaidGoodbyeAfterTheUnreadTimeout() throws Exception {
        CompletableFuture<RsioConnection> accepted = new CompletableFuture<>();
        try (RsioServer server = RsioServer.builder()
                        .unreadTimeout(java.time.Duration.ofMillis(500))
                        .onConnection(c -> accepted.complete(c))
                        .bind("tcp://127.0.0.1:0");
                Socket socket = new Socket()) {
            socket.setReceiveBufferSize(4096);
            socket.connect(new InetSocketAddress("127.0.0.1", server.port()));
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x01, 0x01}); // clientHello offering keepalive
            Thread writer = new Thread(() -> {
                byte[] chunk = pings(100_000);
                try {
                    for (int k = 0; k < 64; k++) {
                        out.write(chunk);
                    }
                } catch (IOException e) {
                    // closed by the server
                }
            });
            writer.setDaemon(true);
            writer.start();
            RsioConnection conn = accepted.get(10, TimeUnit.SECONDS);
            conn.onClose().get(20, TimeUnit.SECONDS);
            String why = String.valueOf(conn.endpoint().closedError());
            assertTrue(why.contains("replies left unread for 0.5 s (unreadTimeout"), why);
            assertTrue(conn.endpoint().bytesRead() < 64_000_000L, "read all " + conn.endpoint().bytesRead() + " bytes");
        }
    }
}
