package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;
import static org.testng.Assert.expectThrows;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * A Java server whose authentication is optional (PROTOCOL.md §15.2, {@code authRequired(false)},
 * as rstreams' {@code serve(auth_required=False)}): a client without credentials is served
 * unauthenticated and the authorize hook, asked with null credentials, decides each subscribe; a
 * client with credentials is checked as on a server that requires them.
 */
public class OptionalAuthTest {
    private static final String TOKEN = "optional-token";
    private static final String ANONYMOUS = "(none)";

    private static RsioServer.Builder optional(Map<String, String> asked) {
        return RsioServer.builder()
                .token(TOKEN)
                .authRequired(false)
                .authorize((c, name) -> {
                    asked.put(name, c == null ? ANONYMOUS : c.token());
                    return !name.startsWith("vault") || c != null;
                })
                .route("vault", Codec.INT64, r -> Counters.range(0, 2))
                .route("news", Codec.INT64, r -> Counters.range(0, 2));
    }

    private static Throwable run(RsioConnection conn, String name, List<Long> expected) throws Exception {
        TestSubscriber<Long> sub = new TestSubscriber<>();
        conn.publisher(name, Codec.INT64).subscribe(sub);
        sub.request(5);
        Throwable end = sub.awaitTerminal();
        if (end == null) {
            assertEquals(sub.all(), expected, name);
        }
        return end;
    }

    @Test(timeOut = 30_000)
    public void aClientWithoutCredentialsIsServedAndAuthorizedWithoutAPrincipal() throws Exception {
        Map<String, String> asked = new ConcurrentHashMap<>();
        try (RsioServer server = optional(asked).bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            assertEquals(run(conn, "news", List.of(0L, 1L)), null);
            Throwable refused = run(conn, "vault?key=x", List.of());
            assertTrue(refused instanceof RemoteStreamException, String.valueOf(refused));
            assertEquals(((RemoteStreamException) refused).errorCode(), ErrorCode.UNAUTHORIZED);
            assertEquals(refused.getMessage(), "unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)");
            assertEquals(run(conn, "news", List.of(0L, 1L)), null, "the connection goes on");
            assertEquals(asked, Map.of("news", ANONYMOUS, "vault?key=x", ANONYMOUS));
        }
    }

    @Test(timeOut = 30_000)
    public void aClientWithCredentialsMustStillHaveThemAccepted() throws Exception {
        Map<String, String> asked = new ConcurrentHashMap<>();
        try (RsioServer server = optional(asked).bind("tcp://127.0.0.1:0");
             RsioClient good = RsioClient.builder().token(TOKEN).build();
             RsioClient bad = RsioClient.builder().token("guess").build();
             RsioConnection withToken = good.connect(server.url()).get(10, TimeUnit.SECONDS);
             RsioConnection withWrongToken = bad.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            assertEquals(run(withToken, "vault", List.of(0L, 1L)), null);
            assertEquals(asked, Map.of("vault", TOKEN));
            Throwable refused = run(withWrongToken, "news", List.of());
            assertTrue(refused instanceof ConnectionClosedException && refused.getMessage().contains("authentication failed"),
                    String.valueOf(refused));
            assertTrue(!refused.getMessage().contains("guess"), "no secret in messages");
        }
    }

    @Test(timeOut = 30_000)
    public void withoutAnAuthorizeHookEveryUnauthenticatedSubscribeGoesOn() throws Exception {
        try (RsioServer server = RsioServer.builder().token(TOKEN).authRequired(false)
                     .route("vault", Codec.INT64, r -> Counters.range(0, 3)).bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            assertEquals(run(conn, "vault", List.of(0L, 1L, 2L)), null);
        }
    }

    @Test(timeOut = 30_000)
    public void aMessageOfAClientWithoutCredentialsIsAuthorizedWithoutAPrincipal() throws Exception {
        Map<String, String> asked = new ConcurrentHashMap<>();
        BlockingQueue<Message> got = new LinkedBlockingQueue<>();
        try (RsioServer server = optional(asked).handler("{what}", got::add).bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            conn.send("vault", "x").toCompletableFuture().get(10, TimeUnit.SECONDS);
            conn.send("news", "y").toCompletableFuture().get(10, TimeUnit.SECONDS);
            Message news = got.poll(10, TimeUnit.SECONDS);
            assertTrue(news != null && news.name().equals("news"), String.valueOf(news));
            assertTrue(got.isEmpty(), "the refused message (handled before news, §20.3) reached its handler: " + got);
            assertEquals(asked, Map.of("vault", ANONYMOUS, "news", ANONYMOUS), "messages are handled in order (§20.3)");
        }
    }

    @Test(timeOut = 30_000)
    public void authorizeAloneServesEveryClientWithoutAPrincipal() throws Exception {
        // as rstreams' serve(authorize=...) without authenticate: auth is not offered (§15.2)
        Map<String, String> asked = new ConcurrentHashMap<>();
        BlockingQueue<Message> got = new LinkedBlockingQueue<>();
        try (RsioServer server = RsioServer.builder()
                     .authorize((c, name) -> {
                         asked.put(name, c == null ? ANONYMOUS : c.token());
                         return !name.startsWith("vault");
                     })
                     .route("vault", Codec.INT64, r -> Counters.range(0, 2))
                     .route("news", Codec.INT64, r -> Counters.range(0, 2))
                     .handler("{what}", got::add)
                     .bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().build();
             RsioClient insisting = RsioClient.builder().token(TOKEN).build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            assertEquals(run(conn, "news", List.of(0L, 1L)), null);
            Throwable refused = run(conn, "vault", List.of());
            assertTrue(refused instanceof RemoteStreamException, String.valueOf(refused));
            assertEquals(((RemoteStreamException) refused).errorCode(), ErrorCode.UNAUTHORIZED);
            assertEquals(refused.getMessage(), "unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)");
            conn.send("vault", "x").toCompletableFuture().get(10, TimeUnit.SECONDS);
            conn.send("news", "y").toCompletableFuture().get(10, TimeUnit.SECONDS);
            Message news = got.poll(10, TimeUnit.SECONDS);
            assertTrue(news != null && news.name().equals("news") && got.isEmpty(), news + " " + got);
            assertEquals(asked, Map.of("news", ANONYMOUS, "vault", ANONYMOUS));
            // a client with credentials finds no auth in the server's hello and gives up (§15.2)
            Throwable gaveUp = expectThrows(Exception.class, () -> {
                try (RsioConnection withToken = insisting.connect(server.url()).get(10, TimeUnit.SECONDS)) {
                    Throwable end = run(withToken, "news", List.of());
                    if (end != null) {
                        throw new IllegalStateException(end);
                    }
                }
            });
            assertTrue(String.valueOf(gaveUp).contains("does not offer extension auth (id 2)"), String.valueOf(gaveUp));
        }
    }

    @Test(timeOut = 10_000)
    public void authRequiredFalseWithoutAnAuthenticateIsRefusedAtBind() {
        IllegalStateException e = expectThrows(IllegalStateException.class,
                () -> RsioServer.builder().authRequired(false).bind("tcp://127.0.0.1:0"));
        assertTrue(e.getMessage().contains("authRequired(false)") && e.getMessage().contains("§15.2"), e.getMessage());
    }

    /** One line per case: "case class code text", or "case ok N" with the number of elements. */
    private static final String PYTHON_CLIENT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "async def main(url):",
            "    for label, auth in (('anonymous', None), ('token', '" + TOKEN + "')):",
            "        conn = await rstreams.connect(url, keepalive=None, auth=auth)",
            "        try:",
            "            for name in ('news', 'vault'):",
            "                try:",
            "                    got = [x async for x in conn.publisher(name)]",
            "                    print(label, name, 'ok', len(got), flush=True)",
            "                except Exception as error:",
            "                    print(label, name, type(error).__name__, getattr(error, 'code', None), getattr(error, 'message', error), flush=True)",
            "        finally:",
            "            await conn.aclose()",
            "asyncio.run(main(sys.argv[1]))");

    @Test(timeOut = 60_000)
    public void aPythonClientIsServedWithAndWithoutCredentials() throws Exception {
        Map<String, String> asked = new ConcurrentHashMap<>();
        try (RsioServer server = optional(asked).bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result run = PythonRstreams.run(50, "-c", PYTHON_CLIENT, server.url());
            assertEquals(run.status(), 0, run.output());
            List<String> lines = run.output().lines().filter(l -> l.matches("(anonymous|token) .*")).toList();
            assertEquals(lines, List.of(
                    "anonymous news ok 2",
                    "anonymous vault Unauthorized 4 unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)",
                    "token news ok 2",
                    "token vault ok 2"), run.output());
        }
    }
}
