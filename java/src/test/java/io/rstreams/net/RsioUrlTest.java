package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.netty.buffer.ByteBuf;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.embedded.EmbeddedChannel;
import io.rstreams.testing.Json;
import io.rstreams.testing.RepoPaths;
import io.rstreams.testing.TestSubscriber;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.math.BigInteger;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.testng.SkipException;
import org.testng.annotations.Test;

/**
 * tests/net/url_refusals.json (PROTOCOL.md §1.1): each accepted URL parses to the parts rstreams'
 * parse_url gives and is written back as it writes it; each refused URL is refused with its
 * words, byte for byte.
 */
public class RsioUrlTest {
    @SuppressWarnings("unchecked")
    private static Map<String, Object> cases() throws IOException {
        String text = Files.readString(RepoPaths.root().resolve("tests/net/url_refusals.json"), StandardCharsets.UTF_8);
        return (Map<String, Object>) Json.parse(text);
    }

    private static void needIpv6Loopback() {
        try (ServerSocket probe = new ServerSocket(0, 1, InetAddress.getByName("::1"))) {
            probe.getLocalPort();
        } catch (IOException e) {
            throw new SkipException("no IPv6 loopback (::1) here: " + e.getMessage());
        }
    }

    @Test(timeOut = 10_000)
    @SuppressWarnings("unchecked")
    public void aRefusedUrlReadsAsTheSharedTableSays() throws IOException {
        List<Object> refused = (List<Object>) cases().get("refused");
        assertTrue(!refused.isEmpty());
        for (Object each : refused) {
            Map<String, Object> c = (Map<String, Object>) each;
            String url = (String) c.get("url");
            IllegalArgumentException e = expectThrows(IllegalArgumentException.class, () -> RsioUrl.parse(url));
            assertEquals(e.getMessage(), c.get("message"), url);
        }
    }

    @Test(timeOut = 10_000)
    @SuppressWarnings("unchecked")
    public void anAcceptedUrlOfTheSharedTableParsesToItsParts() throws IOException {
        List<Object> accepted = (List<Object>) cases().get("accepted");
        assertTrue(!accepted.isEmpty());
        for (Object each : accepted) {
            Map<String, Object> c = (Map<String, Object>) each;
            String given = (String) c.get("url");
            RsioUrl url = RsioUrl.parse(given);
            assertEquals(List.of(url.scheme(), url.host(), BigInteger.valueOf(url.port()), url.path() + url.query(), url.toString()),
                    List.of(c.get("scheme"), c.get("host"), c.get("port"), c.get("path"), c.get("written")), given);
            assertEquals(RsioUrl.parse(url.toString()), url, given);
        }
    }

    @Test(timeOut = 10_000)
    public void aMissingUrlIsRefusedSayingAUrlIsNeeded() throws Exception {
        String words = "an RS.io URL is a String such as 'tcp://127.0.0.1:5000', got null (PROTOCOL.md §1.1)";
        assertEquals(expectThrows(IllegalArgumentException.class, () -> RsioUrl.parse(null)).getMessage(), words);
        RsioClient client = RsioClient.builder().build();
        try {
            assertEquals(expectThrows(IllegalArgumentException.class, () -> client.connect(null)).getMessage(), words);
        } finally {
            client.close();
        }
        assertEquals(expectThrows(IllegalArgumentException.class, () -> RsioServer.builder().bind(null)).getMessage(), words);
    }

    @Test(timeOut = 10_000)
    public void aWebSocketUrlKeepsItsQueryAfterItsPath() {
        RsioUrl url = RsioUrl.parse("ws://127.0.0.1:1/rsio?token=x");
        assertEquals(url.path(), "/rsio");
        assertEquals(url.query(), "?token=x");
        assertEquals(url.toString(), "ws://127.0.0.1:1/rsio?token=x");
        assertEquals(url.withPort(2).toString(), "ws://127.0.0.1:2/rsio?token=x");
    }

    @Test(timeOut = 60_000)
    public void anIpv6WebSocketServerPrintsItsHostInOnePairOfBracketsAndAJavaClientReachesIt() throws Exception {
        needIpv6Loopback();
        try (RsioServer server = RsioServer.builder()
                     .route("counter", Codec.INT64, r -> Counters.range(0, 2))
                     .bind("WS://[::1]:0/rsio");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            assertTrue(server.url().matches("ws://\\[::1\\]:[0-9]+/rsio"), server.url());
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter", Codec.INT64).subscribe(sub);
            sub.request(2);
            assertEquals(sub.take(2), List.of(0L, 1L));
        }
    }

    @Test(timeOut = 60_000)
    public void aJavaWebSocketClientSendsAnIpv6HostInOnePairOfBrackets() throws Exception {
        needIpv6Loopback();
        try (ServerSocket listener = new ServerSocket(0, 1, InetAddress.getByName("::1"));
             RsioClient client = RsioClient.builder().build()) {
            int port = listener.getLocalPort();
            CompletableFuture<RsioConnection> conn = client.connect("WS://[::1]:" + port + "/rsio");
            StringBuilder head = new StringBuilder();
            try (Socket socket = listener.accept()) {
                socket.setSoTimeout(10_000);
                BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.ISO_8859_1));
                for (String line = in.readLine(); line != null && !line.isEmpty(); line = in.readLine()) {
                    head.append(line).append('\n');
                }
                socket.getOutputStream().write("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                        .getBytes(StandardCharsets.ISO_8859_1));
            }
            expectThrows(ExecutionException.class, () -> conn.get(10, TimeUnit.SECONDS));
            // RFC 7230 section 5.4, as PROTOCOL.md §1.1 has an IPv6 host written again
            assertTrue(head.toString().toLowerCase(Locale.ROOT).contains("\nhost: [::1]:" + port + "\n"), head.toString());
        }
    }

    /** The head of the WebSocket handshake a Java client sends for {@code url}, its pipeline in memory. */
    private static String handshakeHead(String url) {
        EmbeddedChannel channel = new EmbeddedChannel();
        Pipelines.client(channel.pipeline(), RsioUrl.parse(url), null, null, new ChannelInboundHandlerAdapter());
        channel.pipeline().fireChannelActive();
        channel.runPendingTasks();
        StringBuilder head = new StringBuilder();
        for (Object msg = channel.readOutbound(); msg != null; msg = channel.readOutbound()) {
            head.append(((ByteBuf) msg).toString(StandardCharsets.ISO_8859_1));
            ((ByteBuf) msg).release();
        }
        channel.finishAndReleaseAll();
        return head.toString();
    }

    @Test(timeOut = 10_000)
    public void aJavaWebSocketClientsHostHeaderComesFromTheParsedUrlAndItSendsNoOrigin() {
        // java.net.URI gives a host with '_' no host at all: the header is the parsed URL's. No
        // Origin, as rstreams' Python client: one made from the URL would name a proxy's address
        // rather than the server's, and the server would refuse it (403, docs/security.md)
        String[][] cases = {
            {"ws://my_host:9000/rsio", "GET /rsio HTTP/1.1", "my_host:9000"},
            {"WS://Example.COM/rsio?token=x", "GET /rsio?token=x HTTP/1.1", "example.com"},
            {"ws://[::1]:80/", "GET / HTTP/1.1", "[::1]"},
            {"ws://[::1]:9000/rsio", "GET /rsio HTTP/1.1", "[::1]:9000"},
        };
        for (String[] c : cases) {
            String head = handshakeHead(c[0]);
            assertTrue(head.startsWith(c[1] + "\r\n"), c[0] + ": " + head);
            assertTrue(head.toLowerCase(Locale.ROOT).contains("\r\nhost: " + c[2] + "\r\n"), c[0] + ": " + head);
            assertTrue(!head.toLowerCase(Locale.ROOT).contains("origin:"), c[0] + ": " + head);
        }
    }

    @Test(timeOut = 60_000)
    public void aJavaClientSendsAWebSocketUrlsQueryAndItsServerAnswersAtThePath() throws Exception {
        try (RsioServer server = RsioServer.builder()
                     .route("counter", Codec.INT64, r -> Counters.range(0, r.longParam("to", Long.MAX_VALUE)))
                     .bind("ws://127.0.0.1:0/rsio");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url() + "?token=x").get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> sub = new TestSubscriber<>();
            conn.publisher("counter?to=3", Codec.INT64).subscribe(sub);
            sub.request(3);
            assertEquals(sub.take(3), List.of(0L, 1L, 2L));
        }
    }
}
