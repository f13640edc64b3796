package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertFalse;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import org.testng.annotations.Test;

/**
 * The Java server's authenticate hook that throws (PROTOCOL.md §15.3, §15.4), over TCP: the
 * credentials it was asked about are refused as rstreams' {@code serve(authenticate=...)} and
 * JavaScript's refuse them, with code 3; the exception is logged by its class only and never
 * reaches the peer. A Python client reads the connection's refusal as AuthRefusedError and a
 * subscribe's (its own credentials, {@code conn.publisher(name, auth=...)}) as
 * {@code rstreams.net.Unauthenticated}, its connection going on.
 */
public class AuthenticateThrowsInteropTest {
    private static final String TOKEN = "authenticate-token";
    private static final String SECRET = "thrown-s3cret";

    private static RsioServer.Builder guarded() {
        return RsioServer.builder()
                .authenticate(c -> {
                    if (TOKEN.equals(c.token())) {
                        return true;
                    }
                    throw new IllegalStateException("cannot check " + c.token());
                })
                .route("vault", Codec.INT64, r -> Counters.range(0, 2))
                .route("news", Codec.INT64, r -> Counters.range(0, 2));
    }

    @Test(timeOut = 30_000)
    public void aThrowingHookRefusesTheConnectionWithCodeThreeAndLogsTheClassOnly() throws Exception {
        List<LogRecord> records = LoggedRecords.during("authenticate hook", () -> {
            try (RsioServer server = guarded().bind("tcp://127.0.0.1:0");
                 RsioClient client = RsioClient.builder().token(SECRET).build();
                 RsioConnection conn = client.connect(server.url()).get(10, TimeUnit.SECONDS)) {
                TestSubscriber<Long> sub = new TestSubscriber<>();
                conn.publisher("news", Codec.INT64).subscribe(sub);
                sub.request(5);
                Throwable e = sub.awaitTerminal();
                assertTrue(e instanceof ConnectionClosedException, String.valueOf(e));
                assertEquals(e.getMessage(), "the peer said goodbye: authentication failed (PROTOCOL.md §15.3)");
                assertEquals(((ConnectionClosedException) e).errorCode(), ErrorCode.UNAUTHENTICATED);
                assertTrue(sub.all().isEmpty(), "the held subscribe is never served");
            }
        });
        assertEquals(records.size(), 1, records.toString());
        assertEquals(records.get(0).getLevel(), Level.SEVERE);
        assertEquals(records.get(0).getMessage(), "the authenticate hook threw java.lang.IllegalStateException; credentials refused");
        assertFalse(records.get(0).getMessage().contains(SECRET));
    }

    /** What the Python client sees: one line per case, "case class code text". */
    private static final String PYTHON_CLIENT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "async def attempt(label, publisher):",
            "    try:",
            "        async for _ in publisher:",
            "            pass",
            "        print(label, 'no-error', flush=True)",
            "    except Exception as error:",
            "        print(label, type(error).__name__, getattr(error, 'code', None), getattr(error, 'message', error), flush=True)",
            "async def main(url):",
            "    refused = await rstreams.connect(url, keepalive=None, auth='" + SECRET + "')",
            "    try:",
            "        await attempt('connection', refused.publisher('news'))",
            "    finally:",
            "        await refused.aclose()",
            "    conn = await rstreams.connect(url, keepalive=None, auth='" + TOKEN + "')",
            "    try:",
            "        await attempt('own', conn.publisher('vault?k=v', auth='" + SECRET + "'))",
            "        await attempt('news', conn.publisher('news'))",
            "    finally:",
            "        await conn.aclose()",
            "asyncio.run(main(sys.argv[1]))");

    @Test(timeOut = 60_000)
    public void aPythonClientReadsTheRefusalsAsPythonsServerSendsThem() throws Exception {
        try (RsioServer server = guarded().bind("tcp://127.0.0.1:0")) {
            PythonRstreams.Result run = PythonRstreams.run(50, "-c", PYTHON_CLIENT, server.url());
            assertEquals(run.status(), 0, run.output());
            List<String> lines = run.output().lines().filter(l -> l.matches("(connection|own|news) .*")).toList();
            assertEquals(lines, List.of(
                    "connection AuthRefusedError 3 the peer said goodbye: 'authentication failed (PROTOCOL.md §15.3)'",
                    "own Unauthenticated 3 unauthenticated: subscribe to 'vault' needs valid credentials (PROTOCOL.md §15.4)",
                    "news no-error"), run.output());
            assertFalse(run.output().contains(SECRET), run.output());
        }
    }
}
