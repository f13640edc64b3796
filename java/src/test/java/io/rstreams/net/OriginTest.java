package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.rstreams.testing.CuttingProxy;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.testing.TlsFixture;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;
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

    private static String upgrade(int port, String origin) {
        List<String> lines = new ArrayList<>(List.of("Sec-WebSocket-Protocol: " + WebSocketBridge.SUBPROTOCOL));
        if (origin != null) {
            lines.add("Origin: " + origin);
        }
        return RawSockets.upgradeRequest(port, "/rsio", lines);
    }

    /** The server's HTTP answer (a 101's status line and headers; a refusal's all, body included) to a WebSocket upgrade with {@code origin} (null: none). */
    private static String handshake(RsioServer server, String origin) throws Exception {
        return RawSockets.httpAnswer(server.port(), server.url().startsWith("wss"), upgrade(server.port(), origin));
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
    public void aJavaClientBehindAProxyOnAnotherPortIsServed() throws Exception {
        // it sends no Origin, as rstreams' Python client: one made from its URL named the proxy's
        // port, another origin to the server, which refused it (403)
        try (RsioServer server = server("ws://127.0.0.1:0/rsio");
             CuttingProxy proxy = new CuttingProxy("127.0.0.1", server.port());
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect("ws://127.0.0.1:" + proxy.port() + "/rsio").get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter?to=3", Codec.INT64).subscribe(sub);
            sub.request(Long.MAX_VALUE);
            assertEquals(sub.take(3), List.of(0L, 1L, 2L));
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

    /** A server's WebSocket pipeline in memory, its endpoint replaced by a handler counting channelActive. */
    private static final class Embedded {
        final EmbeddedChannel channel = new EmbeddedChannel();
        int actives;

        Embedded(String... origins) {
            Pipelines.server(channel.pipeline(), RsioUrl.parse("ws://127.0.0.1:9000/rsio"), null, OriginCheck.check(List.of(origins)),
                    new ChannelInboundHandlerAdapter() {
                        @Override
                        public void channelActive(ChannelHandlerContext ctx) {
                            actives++;
                        }
                    });
        }

        /** What the server wrote in answer to an upgrade with {@code origin}. */
        String answer(String origin) {
            channel.writeInbound(Unpooled.copiedBuffer(upgrade(9000, origin), StandardCharsets.US_ASCII));
            channel.runPendingTasks();
            StringBuilder out = new StringBuilder();
            for (Object msg = channel.readOutbound(); msg != null; msg = channel.readOutbound()) {
                ByteBuf buf = (ByteBuf) msg;
                out.append(buf.toString(StandardCharsets.UTF_8));
                buf.release();
            }
            return out.toString();
        }
    }

    @Test(timeOut = 60_000)
    public void theCheckLeavesThePipelineOnceTheHandshakeIsComplete() {
        Embedded server = new Embedded("https://app.example");
        assertTrue(server.channel.pipeline().get(HandshakeCheck.class) != null);
        String answer = server.answer("https://app.example");
        assertTrue(answer.startsWith("HTTP/1.1 101 "), answer);
        assertEquals(server.channel.pipeline().get(HandshakeCheck.class), null);
        assertEquals(server.actives, 1);
        server.channel.finishAndReleaseAll();

        Embedded refusing = new Embedded("https://app.example");
        answer = refusing.answer("https://evil.example");
        assertTrue(answer.startsWith("HTTP/1.1 403 "), answer);
        assertEquals(refusing.actives, 0);
        assertTrue(!refusing.channel.isOpen());
        refusing.channel.finishAndReleaseAll();
    }

    @Test(timeOut = 60_000)
    public void eachRefusalIsLoggedWithTheOriginAndHowToAllowIt() throws Exception {
        List<LogRecord> records = LoggedRecords.during("https://evil.example", () -> {
            Embedded server = new Embedded();
            assertTrue(server.answer("https://evil.example").startsWith("HTTP/1.1 403 "));
            server.channel.finishAndReleaseAll();
            Embedded accepting = new Embedded();
            assertTrue(accepting.answer("http://localhost:9000").startsWith("HTTP/1.1 101 "));
            accepting.channel.finishAndReleaseAll();
        });
        assertEquals(records.size(), 1, records.toString());
        assertEquals(records.get(0).getLevel(), Level.INFO);
        assertEquals(records.get(0).getMessage(), "refused a WebSocket handshake from a page at origin https://evil.example (HTTP 403);"
                + " to allow it, build the RsioServer with origins(\"https://evil.example\")");
    }
}
