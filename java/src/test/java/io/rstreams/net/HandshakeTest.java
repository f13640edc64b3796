package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.testing.TlsFixture;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The WebSocket server answers at the HTTP handshake, before any WebSocket frame (PROTOCOL.md §1,
 * {@link HandshakeCheck}): 404 at a path it does not serve, 400 naming rsio.v0 and §1 to a
 * handshake that does not offer it, 101 selecting rsio.v0 when it is offered, alone or among
 * others; in the words of rstreams' Python and JavaScript servers. Raw HTTP over a socket.
 */
public class HandshakeTest {
    private static final String MISSING = "RS.io needs the WebSocket subprotocol rsio.v0 (PROTOCOL.md §1); the handshake offered ";

    private static RsioServer server(String where) throws Exception {
        RsioServer.Builder b = RsioServer.builder().route("counter", Codec.INT64, r -> Counters.range(0, 3));
        if (where.startsWith("wss")) {
            b.tls(TlsFixture.get().server);
        }
        return b.bind(where);
    }

    /**
     * The server's answer to an upgrade at {@code path} with one Sec-WebSocket-Protocol header per
     * offer and {@code more} header lines: a 101's status line and headers, a refusal's all to the end.
     */
    private static String answer(RsioServer server, String path, String[] offers, String... more) throws Exception {
        List<String> lines = new ArrayList<>();
        for (String offer : offers) {
            lines.add("Sec-WebSocket-Protocol: " + offer);
        }
        lines.addAll(List.of(more));
        return RawSockets.httpAnswer(server.port(), server.url().startsWith("wss"), RawSockets.upgradeRequest(server.port(), path, lines));
    }

    private static void assertRefused(String answer, String status, String body) {
        assertTrue(answer.startsWith("HTTP/1.1 " + status + "\r\n"), answer);
        assertTrue(answer.toLowerCase(Locale.ROOT).contains("\r\ncontent-type: text/plain; charset=utf-8\r\n"), answer);
        assertTrue(answer.endsWith("\r\n\r\n" + body), answer); // and nothing after: no WebSocket frame
    }

    private static void assertSelected(String answer) {
        assertTrue(answer.startsWith("HTTP/1.1 101 "), answer);
        assertTrue(answer.toLowerCase(Locale.ROOT).contains("\r\nsec-websocket-protocol: rsio.v0\r\n"), answer);
    }

    @Test(timeOut = 60_000)
    public void withoutRsioV0TheHandshakeGets400NamingItAndWhatWasOffered() throws Exception {
        for (String where : new String[] {"ws://127.0.0.1:0/rsio", "wss://127.0.0.1:0/rsio"}) {
            try (RsioServer server = server(where)) {
                assertRefused(answer(server, "/rsio", new String[0]), "400 Bad Request", MISSING + "none\n");
                assertRefused(answer(server, "/rsio", new String[] {"chat, superchat"}), "400 Bad Request",
                        MISSING + "chat, superchat\n");
                assertRefused(answer(server, "/rsio", new String[] {"chat", "v2"}), "400 Bad Request", MISSING + "chat, v2\n");
            }
        }
    }

    @Test(timeOut = 60_000)
    public void anotherPathGets404SayingWhereRsioIsServed() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio")) {
            for (String path : new String[] {"/", "/other", "/rsio/more", "/rsiox"}) {
                assertRefused(answer(server, path, new String[] {"rsio.v0"}), "404 Not Found", "RS.io is served at /rsio\n");
            }
        }
    }

    @Test(timeOut = 60_000)
    public void rsioV0AloneOrAmongOthersIsSelected() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio")) {
            assertSelected(answer(server, "/rsio", new String[] {"rsio.v0"}));
            assertSelected(answer(server, "/rsio", new String[] {"chat, rsio.v0"}));
            assertSelected(answer(server, "/rsio", new String[] {"chat", "rsio.v0"}));
            assertSelected(answer(server, "/rsio?x=1", new String[] {"rsio.v0, chat"}));
        }
    }

    @Test(timeOut = 60_000)
    public void aPageFromAnotherOriginGets403BeforeTheSubprotocolIsLookedAt() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio")) {
            assertTrue(answer(server, "/rsio", new String[] {"x"}, "Origin: https://evil.example").startsWith("HTTP/1.1 403 "));
            assertRefused(answer(server, "/rsio", new String[] {"x"}, "Origin: http://127.0.0.1:" + server.port()),
                    "400 Bad Request", MISSING + "x\n");
        }
    }

    @Test(timeOut = 60_000)
    public void theServerKeepsServingAfterRefusals() throws Exception {
        try (RsioServer server = server("ws://127.0.0.1:0/rsio");
             RsioClient client = RsioClient.builder().build()) {
            assertRefused(answer(server, "/rsio", new String[0]), "400 Bad Request", MISSING + "none\n");
            try (RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
                TestSubscriber<Long> sub = new TestSubscriber<>();
                conn.publisher("counter", Codec.INT64).subscribe(sub);
                sub.request(Long.MAX_VALUE);
                assertEquals(sub.take(3).get(2), Long.valueOf(2));
            }
        }
    }
}
