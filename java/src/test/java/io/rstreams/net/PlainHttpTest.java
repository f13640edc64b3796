package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import org.testng.annotations.Test;

/**
 * Plain HTTP at a WebSocket server (PROTOCOL.md §1): a GET that asks for no upgrade to WebSocket,
 * as {@code curl http://host:port/rsio} or a browser's address bar sends, is answered 426 Upgrade
 * Required with {@code Upgrade: websocket} and a plain-text body naming the path, rsio.v0 and §1;
 * at another path, 404 as a handshake there is. So is a request that is not a GET asking for an
 * upgrade to WebSocket: a POST, with or without the WebSocket headers, and a GET asking for another
 * upgrade ({@code Upgrade: h2c}). Python's server answers the same. A HEAD gets the status and
 * headers without the body.
 */
public class PlainHttpTest {
    private static final String NOT_UPGRADED = "RS.io is served at /rsio over WebSocket with the subprotocol rsio.v0 "
            + "(PROTOCOL.md §1); this request is not a GET asking for an upgrade to WebSocket\n";

    /** Each is a request's extra header lines; none asks for an upgrade to WebSocket. */
    private static final String[][] NOT_ASKING = {
        {}, {"Upgrade: websocket"}, {"Connection: Upgrade"}, {"Origin: https://elsewhere.example"},
        {"Sec-WebSocket-Protocol: chat"},
    };

    private static final String WEBSOCKET_HEADERS = "Connection: Upgrade\r\nUpgrade: websocket\r\n"
            + "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Protocol: rsio.v0\r\n";

    /** Requests at /rsio that are not a GET asking for an upgrade to WebSocket: request line and headers. */
    private static final String[] NOT_A_WEBSOCKET_GET = {
        "POST /rsio HTTP/1.1\r\nContent-Length: 0\r\n",
        "POST /rsio HTTP/1.1\r\nContent-Length: 0\r\n" + WEBSOCKET_HEADERS,
        "GET /rsio HTTP/1.1\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n",
    };

    /** The whole answer (the server closes after a refusal) to a GET of {@code path} with {@code lines}. */
    private static String answer(int port, String path, String... lines) throws Exception {
        return exchange(port, "GET " + path + " HTTP/1.1\r\n", lines);
    }

    /** The whole answer (the server closes after a refusal) to {@code head} with {@code lines}. */
    private static String exchange(int port, String head, String[] lines) throws Exception {
        StringBuilder request = new StringBuilder(head + "Host: 127.0.0.1:" + port + "\r\n");
        for (String line : lines) {
            request.append(line).append("\r\n");
        }
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(20_000);
            socket.getOutputStream().write(request.append("\r\n").toString().getBytes(StandardCharsets.US_ASCII));
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream got = new ByteArrayOutputStream();
            in.transferTo(got);
            return got.toString(StandardCharsets.UTF_8);
        }
    }

    private static void check(int port) throws Exception {
        for (String head : NOT_A_WEBSOCKET_GET) {
            String answer = exchange(port, head, new String[0]);
            assertTrue(answer.startsWith("HTTP/1.1 426 "), head + answer);
            assertTrue(answer.toLowerCase(Locale.ROOT).contains("\r\nupgrade: websocket\r\n"), answer);
            assertTrue(answer.endsWith("\r\n\r\n" + NOT_UPGRADED), answer);
        }
        for (String[] lines : NOT_ASKING) {
            for (String path : new String[] {"/rsio", "/rsio?x=1"}) {
                String answer = answer(port, path, lines);
                String lower = answer.toLowerCase(Locale.ROOT);
                assertTrue(answer.startsWith("HTTP/1.1 426 "), answer);
                assertTrue(lower.contains("\r\nupgrade: websocket\r\n"), answer);
                assertTrue(lower.contains("\r\ncontent-type: text/plain; charset=utf-8\r\n"), answer);
                assertTrue(answer.endsWith("\r\n\r\n" + NOT_UPGRADED), answer);
            }
        }
        for (String path : new String[] {"/", "/other", "/rsio/more"}) {
            String answer = answer(port, path);
            assertTrue(answer.startsWith("HTTP/1.1 404 "), answer);
            assertTrue(answer.endsWith("\r\n\r\nRS.io is served at /rsio\n"), answer);
        }
        HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpResponse<String> response = client.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/rsio")).timeout(Duration.ofSeconds(20)).build(),
                HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        assertEquals(response.statusCode(), 426);
        assertEquals(response.headers().firstValue("upgrade").orElse(""), "websocket");
        assertEquals(response.body(), NOT_UPGRADED);
    }

    @Test(timeOut = 60_000)
    public void aGetAskingForNoUpgradeIsAnswered426NamingRsioV0() throws Exception {
        try (RsioServer server = RsioServer.builder().route("counter", Codec.INT64, r -> Counters.range(0, 3))
                .bind("ws://127.0.0.1:0/rsio")) {
            check(server.port());
            // a HEAD gets the GET's status and headers, Content-Length included, and no body (RFC 9110 §9.3.2)
            int length = NOT_UPGRADED.getBytes(StandardCharsets.UTF_8).length;
            for (String path : new String[] {"/rsio", "/other"}) {
                String answer = exchange(server.port(), "HEAD " + path + " HTTP/1.1\r\n", new String[0]);
                String lower = answer.toLowerCase(Locale.ROOT);
                assertTrue(answer.startsWith(path.equals("/rsio") ? "HTTP/1.1 426 " : "HTTP/1.1 404 "), answer);
                assertTrue(lower.contains("\r\ncontent-length: " + (path.equals("/rsio") ? length : 25) + "\r\n"), answer);
                assertTrue(answer.endsWith("\r\n\r\n"), "a body after the headers: " + answer);
            }
        }
    }

    @Test(timeOut = 120_000)
    public void pythonsServerAnswersTheSame() throws Exception {
        try (PythonRstreams python = PythonRstreams.serveAt("ws://127.0.0.1:0/rsio")) {
            String url = python.url();
            check(Integer.parseInt(url.substring(url.lastIndexOf(':') + 1, url.indexOf('/', url.lastIndexOf(':')))));
        }
    }
}
