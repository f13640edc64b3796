package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The server's handshake timeout (as rstreams' handshake_timeout): a peer that trickles its
 * clientHello a byte at a time (so the idle timeout never fires) or that never settles its
 * credentials is said goodbye naming the timeout and closed, while a client whose hello came in
 * time is served past the deadline. Before it, such a slow-loris peer was kept for good: the idle
 * clock only ran once the hellos were exchanged (tests/conformance/test_hostile_polyglot.py).
 */
public class HandshakeTimeoutTest {
    private static RsioServer server(RsioServer.Builder builder) throws InterruptedException {
        return builder.route("counter", Codec.INT64, r -> Counters.range(0, r.longParam("to", 3)))
                .handshakeTimeout(Duration.ofMillis(300))
                .bind("tcp://127.0.0.1:0");
    }

    @Test(timeOut = 30_000)
    public void aPeerTricklingItsHelloIsSaidGoodbyeAtTheHandshakeTimeout() throws Exception {
        try (RsioServer local = server(RsioServer.builder().idleTimeout(Duration.ofSeconds(60)));
             Socket socket = RawSockets.connect(local.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x3F}); // a clientHello listing 63 extension ids, to come
            Thread trickle = new Thread(() -> {
                try {
                    for (int k = 0; k < 60; k++) {
                        out.write(0x01); // one id every 100 ms: never idle, never a whole hello
                        Thread.sleep(100);
                    }
                } catch (IOException | InterruptedException closed) {
                    // the server closed
                }
            });
            trickle.setDaemon(true);
            trickle.start();
            String reason = RawSockets.lastGoodbye(RawSockets.readToTheEnd(socket));
            assertEquals(reason, "handshake timeout (no clientHello within 0.3 s)");
            assertTrue(trickle.isAlive(), "the whole trickle was read before the goodbye");
            trickle.interrupt();
        }
    }

    @Test(timeOut = 30_000)
    public void aPeerStuckInItsWebSocketHandshakeIsClosedAtTheHandshakeTimeout() throws Exception {
        // no RS.io goes out before the upgrade: the transport is closed, without a goodbye
        try (RsioServer local = RsioServer.builder().handshakeTimeout(Duration.ofMillis(300)).bind("ws://127.0.0.1:0/rsio");
             Socket socket = RawSockets.connect(local.port())) {
            socket.getOutputStream().write("GET /rsio HTTP/1.1\r\nHost: 127.0.0.1\r\n".getBytes(java.nio.charset.StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            int n;
            try {
                n = in.read(new byte[4096]);
            } catch (SocketException reset) {
                n = -1;
            }
            assertEquals(n, -1, "the server answered a request whose headers never ended");
        }
    }

    @Test(timeOut = 30_000)
    public void aPeerThatNeverAuthenticatesIsSaidGoodbyeNamingTheSection() throws Exception {
        try (RsioServer local = server(RsioServer.builder().token("secret"));
             Socket socket = RawSockets.connect(local.port())) {
            OutputStream out = socket.getOutputStream();
            out.write(new byte[] {0x01, 0x00, 0x02, 0x01, 0x02}); // clientHello listing keepalive and auth
            out.write(new byte[] {0x04, 0x07, 'c', 'o', 'u', 'n', 't', 'e', 'r', 0x01, 0x01}); // held until authenticated
            String reason = RawSockets.lastGoodbye(RawSockets.readToTheEnd(socket));
            assertEquals(reason, "authentication timeout (not settled within 0.3 s of the hello) (PROTOCOL.md §15.3)");
        }
    }

    @Test(timeOut = 30_000)
    public void aClientWhoseHelloCameInTimeIsServedPastTheDeadline() throws Exception {
        try (RsioServer local = server(RsioServer.builder());
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(local.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> first = new TestSubscriber<>();
            conn.publisher("counter?to=3", Codec.INT64).subscribe(first);
            first.request(3);
            assertNull(first.awaitTerminal());
            Thread.sleep(600); // twice the handshake timeout: a state the server must not act on
            TestSubscriber<Long> later = new TestSubscriber<>();
            conn.publisher("counter?to=5", Codec.INT64).subscribe(later);
            later.request(5);
            assertNull(later.awaitTerminal());
            assertEquals(later.all().size(), 5);
        }
    }

    @Test
    public void aTimeoutOfZeroIsRefusedNamingTheOption() {
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class,
                () -> RsioServer.builder().handshakeTimeout(Duration.ZERO));
        assertTrue(e.getMessage().startsWith("handshakeTimeout must be > 0"), e.getMessage());
    }
}
