package io.rstreams.net;

import static org.testng.Assert.assertEquals;
import static org.testng.Assert.assertTrue;

import io.rstreams.testing.Closing;
import io.rstreams.testing.PythonRstreams;
import io.rstreams.testing.RawSockets;
import io.rstreams.testing.TestSubscriber;
import io.rstreams.wire.ErrorCode;
import io.rstreams.wire.Frame;
import io.rstreams.wire.FrameParser;
import io.rstreams.wire.FrameType;
import io.rstreams.wire.FrameWriter;
import io.rstreams.wire.Limits;
import java.io.ByteArrayOutputStream;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
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
 * server ({@code rstreams serve}). Also the Java pair, in one process; and both Java builders'
 * {@code errorCodes(false)}, which withholds the extension: no qualifier goes out, none comes in.
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

    /** What the Python client does against the Java servers without error-codes: "case class code", then "active BOOL". */
    private static final String PYTHON_CLIENT_WITHOUT = String.join("\n",
            "import asyncio, sys",
            "import rstreams",
            "async def case(label, url, name):",
            "    conn = await rstreams.connect(url, keepalive=None)",
            "    try:",
            "        await conn.request(name)",
            "        print(label, 'no-error', None, flush=True)",
            "    except Exception as error:",
            "        print(label, type(error).__name__, getattr(error, 'code', None), flush=True)",
            "    finally:",
            "        if label == 'nope':",
            "            print('active', 6 in conn.extensions, flush=True)",
            "        await conn.aclose()",
            "async def main(url, idle_url):",
            "    for name in ('nope', 'broken'):",
            "        await case(name, url, name)",
            "    await case('idle', idle_url, 'silent')",
            "asyncio.run(main(sys.argv[1], sys.argv[2]))");

    private RsioServer server;
    private RsioServer idle;
    private RsioServer without;
    private RsioServer idleWithout;
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
                .route("silent", r -> failing(null))
                .bind("tcp://127.0.0.1:0");
        without = RsioServer.builder()
                .errorCodes(false)
                .route("broken", r -> failing(new IllegalStateException("boom")))
                .bind("tcp://127.0.0.1:0");
        idleWithout = RsioServer.builder()
                .errorCodes(false)
                .keepalive(null)
                .idleTimeout(Duration.ofMillis(300))
                .route("silent", r -> failing(null))
                .route("broken", r -> failing(new IllegalStateException("boom")))
                .bind("tcp://127.0.0.1:0");
        client = RsioClient.builder().build();
    }

    @AfterClass(alwaysRun = true)
    public void stop() throws Exception {
        Closing.all(client, server, idle, without, idleWithout);
    }

    /** A publisher that fails its subscriber at once with {@code error} (null: never signals past onSubscribe). */
    static Flow.Publisher<byte[]> failing(RuntimeException error) {
        Flow.Publisher<byte[]> silent = Counters.silent();
        return s -> {
            silent.subscribe(s);
            if (error != null) {
                s.onError(error);
            }
        };
    }

    /**
     * The Python client's lines "case rest...", by case (the first word); lines of fewer than
     * two words are left out.
     */
    private static Map<String, String> byCase(String output) {
        Map<String, String> seen = new LinkedHashMap<>();
        for (String line : output.split("\n")) {
            String[] words = line.trim().split(" ");
            if (words.length >= 2) {
                seen.put(words[0], line.trim().substring(words[0].length() + 1));
            }
        }
        return seen;
    }

    /** How a subscription of {@code wrong}'s (refused credentials) to {@code url}'s counter ends: the goodbye's error. */
    private static Throwable refused(RsioClient wrong, String url) throws Exception {
        try (RsioConnection conn = wrong.connect(url).get(10, TimeUnit.SECONDS)) {
            return terminal(conn, "counter");
        } catch (ExecutionException e) {
            return e.getCause();
        }
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
        Map<String, String> seen = byCase(run.output());
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
                Throwable closed = refused(wrong, guarded.url());
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
            RemoteStreamException broken = (RemoteStreamException) terminal(conn, "broken");
            assertEquals(broken.errorCode(), ErrorCode.APPLICATION);
            assertEquals(broken.getMessage(), "IllegalStateException: boom", "rstreams' form: the class's simple name, then the message");
            assertEquals(unavailable.getMessage(), "RemoteStreamException: overloaded");
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

    @Test(timeOut = 60_000)
    public void aPythonClientGetsNoCodesFromAJavaServerWithoutErrorCodes() throws Exception {
        PythonRstreams.Result run = PythonRstreams.run(50, "-c", PYTHON_CLIENT_WITHOUT, without.url(), idleWithout.url());
        assertEquals(run.status(), 0, run.output());
        Map<String, String> seen = byCase(run.output());
        assertEquals(seen.get("active"), "False", run.output()); // the Python client offers id 6; the server does not
        assertEquals(seen.get("nope"), "RemoteStreamError None", run.output()); // no errorCode before the onError
        assertEquals(seen.get("broken"), "RemoteStreamError None", run.output());
        assertTrue(seen.get("idle").endsWith(" None"), run.output()); // no goodbyeCode before "idle timeout ..."
    }

    @Test(timeOut = 30_000)
    public void aJavaServerWithoutErrorCodesWritesNoQualifiers() throws Exception {
        // a raw client that offers error-codes: the server's hello does not list it, and neither the
        // refusal, nor the publisher's failure, nor the idle timeout's goodbye has a qualifier (§19.1)
        try (Socket raw = RawSockets.connect(idleWithout.port())) {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            for (Frame f : List.of(
                    new Frame.Hello(false, 0, List.of(FrameType.ERROR_CODES)),
                    new Frame.Subscribe("nope", 1, 1),
                    new Frame.Subscribe("broken", 2, 1))) {
                out.writeBytes(FrameWriter.encode(f, 0));
            }
            raw.getOutputStream().write(out.toByteArray());
            List<Frame> frames = RawSockets.readToTheEnd(raw);
            assertTrue(frames.get(0) instanceof Frame.Hello h
                    && !h.extensions().contains(FrameType.ERROR_CODES), frames.toString());
            assertEquals(frames.stream().filter(f -> f instanceof Frame.OnError).count(), 2L, frames.toString());
            assertTrue(frames.stream().noneMatch(f -> f instanceof Frame.Extension), frames.toString());
            assertTrue(RawSockets.lastGoodbye(frames).startsWith("idle timeout"), frames.toString());
        }
    }

    @Test(timeOut = 90_000)
    public void aJavaClientWithoutErrorCodesGetsNoCodesFromAPythonServer() throws Exception {
        RsioClient plain = RsioClient.builder().errorCodes(false).build();
        try (PythonRstreams python = PythonRstreams.serve();
                PythonRstreams guarded = PythonRstreams.serve("--token", TOKEN)) {
            try (RsioConnection conn = plain.connect(python.url()).get(10, TimeUnit.SECONDS)) {
                RemoteStreamException unknown = (RemoteStreamException) terminal(conn, "nope");
                assertTrue(unknown.code().isEmpty(), unknown.getMessage()); // the Python server sent no errorCode
                assertTrue(!conn.activeExtensions().contains(FrameType.ERROR_CODES), conn.activeExtensions().toString());
            }
            RsioClient wrong = RsioClient.builder().errorCodes(false).token("not-the-token").build();
            try {
                Throwable closed = refused(wrong, guarded.url());
                assertTrue(closed instanceof ConnectionClosedException, String.valueOf(closed));
                assertTrue(((ConnectionClosedException) closed).code().isEmpty(), closed.getMessage()); // no goodbyeCode
            } finally {
                wrong.close();
            }
        } finally {
            plain.close();
        }
    }

    @Test(timeOut = 30_000)
    public void aJavaClientWithoutErrorCodesDoesNotOfferIt() throws Exception {
        for (boolean on : new boolean[] {true, false}) {
            RsioClient c = RsioClient.builder().errorCodes(on).build();
            try (ServerSocket listener = RawSockets.listen()) {
                c.connect("tcp://127.0.0.1:" + listener.getLocalPort());
                try (Socket peer = RawSockets.accept(listener)) {
                    FrameParser parser = new FrameParser(Limits.DEFAULT);
                    byte[] buffer = new byte[256];
                    List<Frame> frames = new ArrayList<>();
                    while (frames.isEmpty()) {
                        int n = peer.getInputStream().read(buffer);
                        assertTrue(n >= 0, "the client closed before its hello");
                        parser.feed(buffer, 0, n);
                        frames.addAll(parser.parseAll());
                    }
                    Frame.Hello hello = (Frame.Hello) frames.get(0);
                    assertEquals(hello.extensions().contains(FrameType.ERROR_CODES), on, hello.toString());
                }
            } finally {
                c.close();
            }
        }
    }
}
