package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import org.testng.annotations.AfterClass;
import org.testng.annotations.BeforeClass;
import org.testng.annotations.Test;

/**
 * Extension error-codes (PROTOCOL.md §19) between the Java binding and real Python processes, both
 * ways: a Python client ({@code rstreams.connect}) reads the codes the Java server sends with its
 * refusals, its publishers' failures and its goodbyes; the Java client reads those of a Python
 * server ({@code rstreams serve}). Also the Java pair, in one process.
 */
public class ErrorCodesInteropTest {
    private static final String TOKEN = "error-codes-token";

    /** What the Python client does against the Java servers: one line per case, "case class code". */
    private static final String PYTHON_CLIENT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "async def case(label, url, name, **options):",
            "    conn = await rstreams.connect(url, keepalive=None, **options)",
            "    try:",
            "        await conn.request(name)",
            "        print(label, 'no-error', None, flush=True)",
            "    except Exception as error:",
            "        print(label, type(error).__name__, getattr(error, 'code', None), flush=True)",
            "    finally:",
            "        await conn.aclose()",
            "async def main(url, idle_url):",
            "    for name in ('nope', 'unavailable', 'broken', 'factory'):",
            "        await case(name, url, name, auth='" + TOKEN + "')",
            "    await case('wrong-token', url, 'nope', auth='not-the-token')",
            "    await case('idle', idle_url, 'silent')",
            "asyncio.run(main(sys.argv[1], sys.argv[2]))");

    /** A Python offer whose publisher fails with a code of the registry. */
    private static final String PYTHON_OFFER = String.join("\n",
            "import rstreams",
            "from rstreams.net import Unavailable",
            "PUBLISHERS = {'unavailable': rstreams.error(Unavailable('overloaded'))}");

    private RsioServer server;
    private RsioServer idle;
    private RsioClient client;

    @BeforeClass(timeOut = 30_000)
    public void start() throws Exception {
        server = RsioServer.builder()
                .token(TOKEN)
                .route("unavailable", r -> failing(new RemoteStreamException("overloaded", ErrorCode.UNAVAILABLE)))
                .route("broken", r -> failing(new IllegalStateException("boom")))
                .route("factory", r -> {
                    throw new IllegalStateException("the factory failed");
                })
                .bind("tcp://127.0.0.1:0");
        idle = RsioServer.builder()
                .keepalive(null)
                .idleTimeout(Duration.ofMillis(300))
                .route("silent", r -> s -> s.onSubscribe(new Flow.Subscription() {
                    @Override
                    public void request(long n) {}

                    @Override
                    public void cancel() {}
                }))
                .bind("tcp://127.0.0.1:0");
        client = RsioClient.builder().build();
    }

    @AfterClass(alwaysRun = true)
    public void stop() {
        if (client != null) {
            client.close();
        }
        for (RsioServer s : new RsioServer[] {server, idle}) {
            if (s != null) {
                s.close();
            }
        }
    }

    /** A publisher that fails its subscriber at once with {@code error}. */
    static Flow.Publisher<byte[]> failing(RuntimeException error) {
        return s -> {
            s.onSubscribe(new Flow.Subscription() {
                @Override
                public void request(long n) {}

                @Override
                public void cancel() {}
            });
            s.onError(error);
        };
    }

    private static Throwable terminal(RsioConnection conn, String name) throws Exception {
        TestSubscriber<byte[]> sub = new TestSubscriber<>();
        conn.publisher(name).subscribe(sub);
        sub.request(1);
        return sub.awaitTerminal();
    }

    @Test(timeOut = 60_000)
    public void aPythonClientReadsTheJavaServersCodes() throws Exception {
        PythonRstreams.Result run = PythonRstreams.run(50, "-c", PYTHON_CLIENT, server.url(), idle.url());
        assertEquals(run.status(), 0, run.output());
        Map<String, String> seen = new LinkedHashMap<>();
        for (String line : run.output().split("\n")) {
            String[] words = line.trim().split(" ");
            if (words.length == 3) {
                seen.put(words[0], words[1] + " " + words[2]);
            }
        }
        assertEquals(seen.get("nope"), "UnknownPublisher 2", run.output()); // §19.2, a name nothing serves
        assertEquals(seen.get("unavailable"), "Unavailable 8", run.output()); // a publisher's own code
        assertEquals(seen.get("broken"), "RemoteStreamError 1", run.output()); // any other failure: application
        assertEquals(seen.get("factory"), "InternalError 9", run.output()); // a factory that threw
        assertTrue(seen.get("wrong-token").endsWith(" 3"), run.output()); // goodbye "authentication failed"
        assertTrue(seen.get("idle").endsWith(" 11"), run.output()); // goodbye "idle timeout ..."
    }

    @Test(timeOut = 90_000)
    public void theJavaClientReadsAPythonServersCodes() throws Exception {
        Path offer = Files.createTempFile("error-codes-offer", ".py");
        Files.writeString(offer, PYTHON_OFFER);
        try (PythonRstreams python = PythonRstreams.serve("--publishers", offer.toString());
                PythonRstreams guarded = PythonRstreams.serve("--token", TOKEN)) {
            try (RsioConnection conn = client.connect(python.url()).get(10, TimeUnit.SECONDS)) {
                RemoteStreamException unknown = (RemoteStreamException) terminal(conn, "nope");
                assertEquals(unknown.errorCode(), ErrorCode.UNKNOWN_PUBLISHER, unknown.getMessage());
                assertEquals(unknown.code().getAsLong(), 2);
                RemoteStreamException unavailable = (RemoteStreamException) terminal(conn, "unavailable");
                assertEquals(unavailable.errorCode(), ErrorCode.UNAVAILABLE, unavailable.getMessage());
                assertTrue(unavailable.getMessage().endsWith("overloaded"), unavailable.getMessage());
            }
            RsioClient wrong = RsioClient.builder().token("not-the-token").build();
            try {
                Throwable closed;
                try (RsioConnection conn = wrong.connect(guarded.url()).get(10, TimeUnit.SECONDS)) {
                    closed = terminal(conn, "counter");
                } catch (ExecutionException e) {
                    closed = e.getCause();
                }
                assertTrue(closed instanceof ConnectionClosedException, String.valueOf(closed));
                assertEquals(((ConnectionClosedException) closed).errorCode(), ErrorCode.UNAUTHENTICATED, closed.getMessage());
            } finally {
                wrong.close();
            }
        } finally {
            Files.deleteIfExists(offer);
        }
    }

    @Test(timeOut = 30_000)
    public void theJavaPairAgreesOnTheCodes() throws Exception {
        RsioClient authed = RsioClient.builder().token(TOKEN).build();
        try (RsioConnection conn = authed.connect(server.url()).get(10, TimeUnit.SECONDS)) {
            assertEquals(((RemoteStreamException) terminal(conn, "nope")).errorCode(), ErrorCode.UNKNOWN_PUBLISHER);
            RemoteStreamException unavailable = (RemoteStreamException) terminal(conn, "unavailable");
            assertEquals(unavailable.errorCode(), ErrorCode.UNAVAILABLE);
            assertEquals(unavailable.publisher(), "unavailable");
            assertEquals(((RemoteStreamException) terminal(conn, "broken")).errorCode(), ErrorCode.APPLICATION);
            assertEquals(((RemoteStreamException) terminal(conn, "factory")).errorCode(), ErrorCode.INTERNAL);
        } finally {
            authed.close();
        }
        RsioClient quiet = RsioClient.builder().keepalive(null).build();
        try (RsioConnection conn = quiet.connect(idle.url()).get(10, TimeUnit.SECONDS)) {
            Throwable closed = terminal(conn, "silent");
            assertTrue(closed instanceof ConnectionClosedException, String.valueOf(closed));
            assertEquals(((ConnectionClosedException) closed).errorCode(), ErrorCode.TIMEOUT, closed.getMessage());
        } finally {
            quiet.close();
        }
    }
}
