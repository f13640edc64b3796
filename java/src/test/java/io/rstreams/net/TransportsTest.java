package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertNull;
import static org.testng.Assert.expectThrows;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.testing.TlsFixture;
import io.rstreams.wire.Connection;
import io.rstreams.wire.Event;
import io.rstreams.wire.Limits;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.DataProvider;
import org.testng.annotations.Test;

/** The same streams over every transport this binding speaks: TCP, TLS, WebSocket, WebSocket over TLS and Unix sockets. */
public class TransportsTest {

    @DataProvider(name = "urls")
    public Object[][] urls() throws IOException {
        return new Object[][] {{"tcp://127.0.0.1:0"}, {"tls://127.0.0.1:0"}, {"ws://127.0.0.1:0/rsio"}, {"wss://127.0.0.1:0/rsio"},
            {"unix://" + Files.createTempDirectory("rsio").resolve("rsio.sock")}};
    }

    private static RsioServer server(String where) throws Exception {
        RsioServer.Builder b = RsioServer.builder()
                .route("counter", Codec.INT64, r -> Counters.range(0, r.longParam("to", Long.MAX_VALUE)))
                .route("big", r -> Counters.repeat(JavaServerTest.bigElement(), r.longParam("n", 2)));
        if (where.startsWith("tls") || where.startsWith("wss")) {
            b.tls(TlsFixture.get().server);
        }
        return b.bind(where);
    }

    @Test(dataProvider = "urls", timeOut = 60_000)
    public void javaClientToJavaServer(String where) throws Exception {
        try (RsioServer server = server(where);
             RsioClient client = RsioClient.builder().tls(TlsFixture.get().client).build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter?to=500", Codec.INT64).subscribe(sub);
            sub.request(Long.MAX_VALUE);
            assertEquals(sub.take(500).get(499), Long.valueOf(499));
            assertNull(sub.awaitTerminal());
            TestSubscriber<byte[]> big = new TestSubscriber<>();
            conn.publisher("big?n=2").subscribe(big);
            big.request(2);
            for (byte[] b : big.take(2)) {
                assertTrue(Arrays.equals(b, JavaServerTest.bigElement()));
            }
        }
    }

    @Test(timeOut = 60_000)
    public void untrustedCertificateFailsTheConnect() throws Exception {
        try (RsioServer server = server("tls://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build()) { // the JVM's trust store: not our test CA
            ExecutionException e = expectThrows(ExecutionException.class, () -> client.connect(server.url()).get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("handshake failed"), e.getCause().getMessage());
        }
    }

    @Test(timeOut = 30_000)
    public void aUnixSocketServerKeepsItsPathAndRemovesTheFileOnClose() throws Exception {
        Path socket = Files.createTempDirectory("rsio").resolve("rsio.sock");
        try (RsioServer server = server("unix://" + socket)) {
            assertEquals(server.url(), "unix://" + socket);
            assertEquals(server.port(), 0);
            assertTrue(Files.exists(socket), "the socket file is there while the server listens");
        }
        assertTrue(!Files.exists(socket), "the socket file is removed on close");
    }

    @DataProvider(name = "halfClosing")
    public Object[][] halfClosing() throws IOException {
        return new Object[][] {{"tcp://127.0.0.1:0"}, {"unix://" + Files.createTempDirectory("rsio").resolve("rsio.sock")}};
    }

    /**
     * A peer that stops reading a stream, then says goodbye and closes its sending side (a
     * half-close, PROTOCOL.md §9.1) still reads everything the server had queued, and the
     * server's goodbye after it: the server writes what it queued, then closes. (On Unix sockets
     * the epoll transport sees the end of input as such, see {@code Transport}; over Netty's NIO
     * this passes too when the output drains before the end of input is read, as it does here.)
     */
    @Test(dataProvider = "halfClosing", timeOut = 30_000)
    public void aPeerThatHalfClosesGetsTheQueuedOutputAndTheGoodbye(String where) throws Exception {
        try (RsioServer server = server(where)) {
            boolean unix = where.startsWith("unix");
            Connection peer = new Connection(Connection.Side.CLIENT, Limits.DEFAULT, Set.of());
            peer.subscribe("big?n=100", 100); // 100 x 300,000 bytes: more than the socket buffers hold
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            try (SocketChannel socket = unix ? SocketChannel.open(StandardProtocolFamily.UNIX) : SocketChannel.open()) {
                socket.connect(unix ? UnixDomainSocketAddress.of(where.substring("unix://".length()))
                        : new InetSocketAddress("127.0.0.1", server.port()));
                socket.write(ByteBuffer.wrap(peer.dataToSend()));
                ByteBuffer buf = ByteBuffer.allocate(64 * 1024);
                while (got.size() < 1024 && socket.read(buf.clear()) >= 0) { // the stream flows
                    got.write(buf.array(), 0, buf.position());
                }
                Thread.sleep(300); // not reading: the server's output backs up behind the socket buffers
                peer.goodbye("leaving");
                socket.write(ByteBuffer.wrap(peer.dataToSend()));
                socket.shutdownOutput();
                while (socket.read(buf.clear()) >= 0) {
                    got.write(buf.array(), 0, buf.position());
                }
            }
            byte[] answer = got.toByteArray();
            peer.receiveData(answer, 0, answer.length);
            Event.Closed closed = peer.events().stream().filter(e -> e instanceof Event.Closed)
                    .map(e -> (Event.Closed) e).findFirst().orElse(null);
            assertTrue(closed != null && closed.error() == null,
                    "the server's goodbye arrives after what it had queued; got " + answer.length + " bytes, " + closed);
            assertEquals(peer.state(), Connection.State.CLOSED);
        }
    }

    @Test(timeOut = 60_000)
    public void pythonClientToJavaServerOverAUnixSocket() throws Exception {
        Path socket = Files.createTempDirectory("rsio").resolve("rsio.sock");
        try (RsioServer server = server("unix://" + socket)) {
            PythonRstreams.Result result = PythonRstreams.run(50, "-m", "rstreams.cli", "subscribe", server.url(), "counter?to=4",
                    "--codec", "int64");
            assertEquals(result.status(), 0, result.output());
            assertEquals(result.output().strip().lines().toList(), List.of("0", "1", "2", "3"), result.output());
        }
    }

    /** wss:// between bindings: a Python client trusting the fixture's certificate reads the Java server's stream. */
    @Test(timeOut = 60_000)
    public void pythonClientToJavaServerOverWss() throws Exception {
        try (RsioServer server = server("wss://127.0.0.1:0/rsio")) {
            assertTrue(server.url().startsWith("wss://127.0.0.1:") && server.url().endsWith("/rsio"), server.url());
            PythonRstreams.Result result = PythonRstreams.run(50, "-m", "rstreams.cli", "subscribe", server.url(), "counter?to=4",
                    "--codec", "int64", "--cafile", TlsFixture.get().pem.toString());
            assertEquals(result.status(), 0, result.output());
            assertEquals(result.output().strip().lines().toList(), List.of("0", "1", "2", "3"), result.output());
        }
    }

    /** wss:// between bindings: the Java client reads a Python server's stream, trusting the fixture's certificate. */
    @Test(timeOut = 60_000)
    public void javaClientToPythonServerOverWss() throws Exception {
        TlsFixture tls = TlsFixture.get();
        try (PythonRstreams python = PythonRstreams.serveAt("wss://127.0.0.1:0/rsio", "--tls-cert", tls.pem.toString(),
                    "--tls-key", tls.key.toString());
             RsioClient client = RsioClient.builder().tls(tls.client).build();
             RsioConnection conn = client.connect(python.url()).get(20, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?from=7&to=10", Codec.UTF8).subscribe(sub);
            sub.request(10);
            assertEquals(sub.take(3), List.of("7", "8", "9"));
            assertNull(sub.awaitTerminal());
        }
    }

    /** A wss:// client that does not trust the server's certificate fails its connect, as over tls://. */
    @Test(timeOut = 60_000)
    public void untrustedCertificateFailsTheConnectOverWss() throws Exception {
        try (RsioServer server = server("wss://127.0.0.1:0/rsio");
             RsioClient client = RsioClient.builder().build()) { // the JVM's trust store: not our test CA
            ExecutionException e = expectThrows(ExecutionException.class, () -> client.connect(server.url()).get(20, TimeUnit.SECONDS));
            assertTrue(e.getCause().getMessage().contains("handshake failed"), e.getCause().getMessage());
        }
    }

    @Test(timeOut = 10_000)
    public void badUrlsAreRefusedWithTheRule() throws Exception {
        IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().bind("udp://127.0.0.1:0"));
        assertTrue(e.getMessage().contains("tcp://") && e.getMessage().contains("unix:///path"), e.getMessage());
        IllegalArgumentException relative = expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().bind("unix://rsio.sock"));
        assertTrue(relative.getMessage().contains("absolute socket path"), relative.getMessage());
        IllegalArgumentException noCert = expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().bind("tls://127.0.0.1:0"));
        assertTrue(noCert.getMessage().contains("tls(SSLContext)"), noCert.getMessage());
    }

    @Test(timeOut = 60_000)
    public void javaClientToPythonServerOverWebSocket() throws Exception {
        try (PythonRstreams python = PythonRstreams.serveAt("ws://127.0.0.1:0/rsio");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(python.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<String> sub = new TestSubscriber<>();
            conn.publisher("counter?from=7&to=10", Codec.UTF8).subscribe(sub);
            sub.request(10);
            assertEquals(sub.take(3), List.of("7", "8", "9"));
            assertNull(sub.awaitTerminal());
        }
    }
}
