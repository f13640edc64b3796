package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.Test;

/**
 * The Java server's authorize hook (PROTOCOL.md §15.4) over TCP: a refused subscribe ends with
 * onError code 4 and rstreams' own text, the connection goes on; a Python client reads it as
 * {@code rstreams.net.Unauthorized}, and the hook is asked about the credentials of a subscribe
 * that carries its own ({@code conn.publisher(name, auth=...)}), as Python's and JavaScript's
 * servers ask with their principal.
 */
public class AuthorizeInteropTest {
    private static final String TOKEN = "authorize-token";
    private static final String ROOT = "authorize-root";

    private static RsioServer.Builder guarded(Map<String, String> asked) {
        return RsioServer.builder()
                .authenticate(c -> TOKEN.equals(c.token()) || ROOT.equals(c.token()))
                .authorize((c, name) -> {
                    asked.put(name, c.token());
                    return !name.startsWith("vault") || ROOT.equals(c.token());
                })
                .route("vault", Codec.INT64, r -> Counters.range(0, 2))
                .route("news", Codec.INT64, r -> Counters.range(0, 2));
    }

    @Test(timeOut = 30_000)
    public void aRefusedSubscribeEndsWithCodeFourAndTheConnectionGoesOn() throws Exception {
        Map<String, String> asked = new ConcurrentHashMap<>();
        try (RsioServer server = guarded(asked).bind("tcp://127.0.0.1:0");
             RsioClient client = RsioClient.builder().token(TOKEN).build();
             RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            TestSubscriber<Long> vault = new TestSubscriber<>();
            conn.publisher("vault?key=x", Codec.INT64).subscribe(vault);
            vault.request(5);
            Throwable refused = vault.awaitTerminal();
            assertTrue(refused instanceof RemoteStreamException, String.valueOf(refused));
            assertEquals(((RemoteStreamException) refused).errorCode(), ErrorCode.UNAUTHORIZED);
            assertEquals(refused.getMessage(), "unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)");
            TestSubscriber<Long> news = new TestSubscriber<>();
            conn.publisher("news", Codec.INT64).subscribe(news);
            news.request(5);
            assertEquals(news.take(2), List.of(0L, 1L));
            assertEquals(news.awaitTerminal(), null);
            assertEquals(asked, Map.of("vault?key=x", TOKEN, "news", TOKEN));
        }
    }

    /** What the Python client sees: one line per case, "case class code text". */
    private static final String PYTHON_CLIENT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "async def main(url):",
            "    conn = await rstreams.connect(url, keepalive=None, auth='" + TOKEN + "')",
            "    try:",
            "        for label, publisher in (('plain', conn.publisher('vault')),",
            "                                 ('own', conn.publisher('vault/own', auth='" + ROOT + "')),",
            "                                 ('news', conn.publisher('news'))):",
            "            try:",
            "                async for _ in publisher:",
            "                    pass",
            "                print(label, 'no-error', flush=True)",
            "            except Exception as error:",
            "                print(label, type(error).__name__, getattr(error, 'code', None), getattr(error, 'message', error), flush=True)",
            "    finally:",
            "        await conn.aclose()",
            "asyncio.run(main(sys.argv[1]))");

    @Test(timeOut = 60_000)
    public void aPythonClientReadsTheRefusalAsUnauthorized() throws Exception {
        Map<String, String> asked = new ConcurrentHashMap<>();
        try (RsioServer server = guarded(asked).route("vault/own", Codec.INT64, r -> Counters.range(0, 1)).bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result run = PythonRstreams.run(50, "-c", PYTHON_CLIENT, server.url());
            assertEquals(run.status(), 0, run.output());
            List<String> lines = run.output().lines().filter(l -> l.matches("(plain|own|news) .*")).toList();
            assertEquals(lines, List.of(
                    "plain Unauthorized 4 unauthorized: subscribe to 'vault' is not allowed for this principal (PROTOCOL.md §15.4)",
                    "own no-error",
                    "news no-error"), run.output());
            assertEquals(asked, Map.of("vault", TOKEN, "vault/own", ROOT, "news", TOKEN), "the subscribe's own credentials, else the connection's");
        }
    }
}
