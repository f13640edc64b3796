package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.TestSubscriber;
import io.rstreams.testing.TlsFixture;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLSocket;
import org.testng.annotations.Test;

/** The WebSocket server checks the handshake's Origin header (cross-site WebSocket hijacking, docs/security.md). */
public class OriginTest {

    private static RsioServer server(String where, String... origins) throws Exception {
        RsioServer.Builder b = RsioServer.builder()
                .route("counter", Codec.INT64, r -> Counters.range(0, r.longParam("to", 3)));
        if (origins.length > 0) {
            b.origins(origins);
        }
        if (where.startsWith("wss")) {
            b.tls(TlsFixture.get().server);
        }
        return b.bind(where);
    }

    /** The server's HTTP answer (status line, headers and body up to end of input or 4 KiB) to a WebSocket upgrade with {@code origin} (null: none). */
    private static String handshake(RsioServer server, String origin) throws Exception {
        try (Socket socket = server.url().startsWith("wss")
                ? TlsFixture.get().client.getSocketFactory().createSocket("127.0.0.1", server.port())
                : new Socket("127.0.0.1", server.port())) {
            socket.setSoTimeout(20_000);
            if (socket instanceof SSLSocket tls) {
                tls.startHandshake();
            }
            String request = "GET /rsio HTTP/1.1\r\nHost: 127.0.0.1:" + server.port() + "\r\n"
                    + "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: " + WebSocketBridge.SUBPROTOCOL + "\r\n"
                    + (origin == null ? "" : "Origin: " + origin + "\r\n") + "\r\n";
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            byte[] buffer = new byte[4096];
            // a 101 keeps the connection open: read until the end of its headers; a 403 closes it after its body
            for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
                answer.write(buffer, 0, n);
                String sofar = answer.toString(StandardCharsets.UTF_8);
                if (sofar.startsWith("HTTP/1.1 101 ") && sofar.contains("\r\n\r\n")) {
                    break;
                }
            }
            return answer.toString(StandardCharsets.UTF_8);
        }
    }

    private static void assertServes(RsioServer server) throws Exception {
        try (RsioClient client = RsioClient.builder().tls(TlsFixture.get().client).build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter?to=3", Codec.INT64).subscribe(sub);
            sub.request(Long.MAX_VALUE);
            assertEquals(sub.take(3).get(2), Long.valueOf(2));
        }
    }

    @Test(timeOut = 60_000)
    public void anotherOriginGets403AndTheServerKeepsServing() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio")) {
            String answer = handshake(server, "https://evil.example");
            assertTrue(answer.startsWith("HTTP/1.1 403 "), answer);
            assertTrue(answer.toLowerCase().contains("content-type: text/plain; charset=utf-8"), answer);
            assertTrue(answer.endsWith("\r\n\r\na page at origin https://evil.example may not connect to this RS.io server"
                    + " (only its own origin may); to allow it, build the RsioServer with origins(\"https://evil.example\")\n"), answer);
            // the same host on another port or scheme is another origin
            assertTrue(handshake(server, "http://127.0.0.1:" + (server.port() == 65535 ? 1 : server.port() + 1))
                    .startsWith("HTTP/1.1 403 "));
            assertTrue(handshake(server, "https://127.0.0.1:" + server.port()).startsWith("HTTP/1.1 403 "));
            assertServes(server);
        }
    }

    @Test(timeOut = 60_000)
    public void ownOriginByEveryLoopbackNameAndNoOriginAreAccepted() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio")) {
            for (String host : new String[] {"127.0.0.1", "localhost", "[::1]"}) {
                String answer = handshake(server, "http://" + host + ":" + server.port());
                assertTrue(answer.startsWith("HTTP/1.1 101 "), host + ": " + answer);
            }
            assertTrue(handshake(server, null).startsWith("HTTP/1.1 101 "));
            assertServes(server);
        }
    }

    @Test(timeOut = 60_000)
    public void wssOwnOriginIsHttps() throws Exception {
        try (RsioServer server = server("wss://127.0.0.1:0/rsio")) {
            assertTrue(handshake(server, "https://localhost:" + server.port()).startsWith("HTTP/1.1 101 "));
            assertTrue(handshake(server, "http://localhost:" + server.port()).startsWith("HTTP/1.1 403 "));
            assertServes(server);
        }
    }

    @Test(timeOut = 60_000)
    public void originsAllowsTheNamedPagesOnly() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio", "HTTPS://App.Example:443/", "http://localhost:5173")) {
            assertTrue(handshake(server, "https://app.example").startsWith("HTTP/1.1 101 "));
            assertTrue(handshake(server, "http://localhost:5173").startsWith("HTTP/1.1 101 "));
            assertTrue(handshake(server, "https://app.example:8443").startsWith("HTTP/1.1 403 "));
            assertTrue(handshake(server, "http://127.0.0.1:" + server.port()).startsWith("HTTP/1.1 101 "));
        }
    }

    @Test(timeOut = 60_000)
    public void starAllowsEveryPage() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio", "https://app.example", "*")) {
            for (String origin : new String[] {"https://evil.example", "null", "http://localhost:1"}) {
                assertTrue(handshake(server, origin).startsWith("HTTP/1.1 101 "), origin);
            }
        }
    }

    @Test(timeOut = 60_000)
    public void malformedOriginsAreRefusedByTheBuilder() {
        for (String bad : new String[] {"app.example", "ftp://app.example", "https://app.example/page", "https://user@app.example",
                "https://app.example?x", "https://app.example#top", "https://", "https://app example"}) {
            IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().origins(bad));
            assertTrue(e.getMessage().startsWith("origins: origin \"" + bad + "\": "), e.getMessage());
        }
        expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().origins("https://ok.example", null));
    }
}
